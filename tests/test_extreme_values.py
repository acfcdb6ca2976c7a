"""Values at the edge of float32 and beyond: rows beyond float32's range fit once
standardised in float64 or are refused by name, huge regression targets are standardised
for training and reported back in their own units, and a selector whose weights are NaN is
refused rather than turned into masks."""

import numpy as np
import pytest
import torch

from sk_sointer import L2XExplainer, RealXExplainer

torch.set_num_threads(1)

FAST = {"max_epochs": 2, "batch_size": 32, "random_state": 0, "device": "cpu"}


def test_values_beyond_float32_work_or_give_a_clear_error():
    rng = np.random.RandomState(0)
    X = rng.randn(50, 3)
    X[0, 1] = 1e39  # finite in float64, infinite in float32
    y = (X[:, 0] > 0).astype(int)
    # Standardised in float64 first, the outlier fits in float32: fitting works.
    expl = L2XExplainer(k=1, max_epochs=1).fit(X, y)
    assert np.isfinite(expl.explain(X)).all()
    assert (expl.transform(X).sum(axis=1) == 1).all()
    # Fitted without it, the same row is beyond float32 once standardised.
    expl = L2XExplainer(k=1, max_epochs=1).fit(X[1:], y[1:])
    with pytest.raises(ValueError, match="overflow float32"):
        expl.transform(X[:2])
    X[0, 1] = np.finfo(np.float64).max
    X[1, 1] = -np.finfo(np.float64).max
    with pytest.raises(ValueError, match="too large to standardise"):
        L2XExplainer(k=1, max_epochs=1).fit(X, y)


def test_huge_regression_targets_are_standardised():
    rng = np.random.RandomState(0)
    X = rng.randn(300, 4).astype(np.float32)
    values = 1e20 * X[:, 1]
    expl = RealXExplainer(k=1, max_epochs=25, predictor_epochs=20, batch_size=50,
                          random_state=0)
    expl.fit(X, values)
    assert np.isfinite(expl.explain(X)).all()
    predicted = expl.predict_masked(X, np.ones_like(X))[:, 0]
    # Reported back in the target's own units.
    assert np.corrcoef(predicted, values)[0, 1] > 0.9 and np.abs(predicted).max() > 1e19


def test_nan_selector_weights_are_refused_not_turned_into_masks(rows):
    X, single, _ = rows
    explainer = L2XExplainer(k=2, **FAST).fit(X, black_box=single)
    with torch.no_grad():
        next(explainer.net_.module_.parameters())[0, 0] = float("nan")
    for method in (explainer.explain, explainer.transform):
        with pytest.raises(ValueError, match="gave NaN or infinite scores: its weights"):
            method(X)
