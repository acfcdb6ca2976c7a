"""MEED's metrics: FU-M, FS-A / FU-A, max-sensitivity, mask similarity, randomised models."""

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression
from torch import nn

from sk_sointer.metrics import (
    approximator_accuracy,
    mask_similarity,
    max_sensitivity,
    posthoc_accuracy,
    randomized_model,
)


@pytest.fixture
def task():
    """A logistic model of feature 0 of four; masks that keep feature 0 alone."""
    rng = np.random.RandomState(0)
    X = rng.randn(600, 4)
    model = LogisticRegression().fit(X, X[:, 0] > 0)
    masks = np.zeros_like(X)
    masks[:, 0] = 1
    return X, model, masks


def test_unselected_features_are_the_complement(task):
    X, model, masks = task
    assert posthoc_accuracy(model, X, masks) > 0.98
    removed = posthoc_accuracy(model, X, masks, features="unselected")
    assert removed == posthoc_accuracy(model, X, 1 - masks)
    assert 0.3 < removed < 0.7  # the model sees only noise: its answer is a coin toss
    with pytest.raises(ValueError, match="features should be 'selected' or 'unselected'"):
        posthoc_accuracy(model, X, masks, features="kept")


def test_approximator_accuracy_learns_from_what_the_masks_keep(task):
    X, model, masks = task
    kwargs = dict(max_epochs=15, batch_size=64, random_state=0)
    kept = approximator_accuracy(model, X[:400], masks[:400], X[400:], masks[400:], **kwargs)
    removed = approximator_accuracy(model, X[:400], masks[:400], X[400:], masks[400:],
                                    features="unselected", **kwargs)
    assert kept > 0.95
    assert removed < 0.7


def test_approximator_accuracy_reads_an_encoding_the_model_cannot(task):
    # The mask's position encodes the class: the black box on the kept (noise) feature is
    # a coin toss, a network trained on the masked rows reads the answer off the pattern.
    X, model, _ = task
    positive = X[:, 0] > 0
    masks = np.zeros_like(X)
    masks[positive, 2] = 1
    masks[~positive, 3] = 1
    assert posthoc_accuracy(model, X, masks) < 0.7
    # Left-out features at 10, far from any kept value: the pattern is plain to see.
    score = approximator_accuracy(model, X[:400], masks[:400], X[400:], masks[400:],
                                  baseline=10.0, max_epochs=15, batch_size=64)
    assert score > 0.95


def test_max_sensitivity_is_the_largest_relative_change():
    X = np.ones((3, 2), dtype=np.float32)
    assert max_sensitivity(lambda rows: np.tile([1.0, 2.0], (len(rows), 1)), X) == 0.0
    # scores equal to the rows: ||delta|| / ||x|| with ||delta|| at most radius * sqrt(2)
    value = max_sensitivity(lambda rows: rows, X, radius=0.2, n_samples=200)
    assert 0.15 < value <= 0.2 + 1e-6


def test_mask_similarity_values():
    a = np.array([[1, 1, 0, 0], [1, 0, 1, 0]])
    b = np.array([[1, 0, 1, 0], [1, 0, 1, 0]])
    assert mask_similarity(a, a) == 1.0
    assert mask_similarity(a, b) == pytest.approx((0.5 + 1.0) / 2)
    assert mask_similarity(a, 1 - a, metric="pearson") == pytest.approx(-1.0)
    assert mask_similarity(a, b, metric="pearson") == pytest.approx((0.0 + 1.0) / 2)
    with pytest.raises(ValueError, match="same shape"):
        mask_similarity(a, b[:, :3])


def test_randomized_model_is_a_fresh_copy():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    before = [p.detach().clone() for p in model.parameters()]
    copy = randomized_model(model, random_state=1)
    assert all(torch.equal(p, q) for p, q in zip(before, model.parameters()))
    assert not any(torch.equal(p, q) for p, q in zip(model.parameters(), copy.parameters()))
    again = randomized_model(model, random_state=1)
    assert all(torch.equal(p, q) for p, q in zip(copy.parameters(), again.parameters()))
    with pytest.raises(TypeError, match="takes a torch module"):
        randomized_model(LogisticRegression())
