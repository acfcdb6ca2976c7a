"""HardKumaExplainer: the rate it is asked for, its masks, its constraint, its gates in REAL-X."""

import pickle

import numpy as np
import pytest
import torch
from sklearn.datasets import load_diabetes
from sklearn.ensemble import HistGradientBoostingRegressor

from sk_sointer import HardKumaExplainer, RealXExplainer, metrics
from sk_sointer.distributions import HardKumaraswamy, open_gate_probability
from sk_sointer._layout import RowLayout
from sk_sointer.explainers._hardkuma import RateConstraint

FAST = {"max_epochs": 30, "batch_size": 100, "random_state": 0, "device": "cpu"}


@pytest.fixture(scope="module")
def sign_rows():
    """Ten features in everyday units; the label is the sign of feature 0 (about 1,000)."""
    rng = np.random.RandomState(0)
    X = rng.randn(1500, 10).astype(np.float32)
    X[:, 0] = 1000 + 50 * X[:, 0]
    outputs = (X[:, 0] > 1000).astype(int)
    return X, outputs


@pytest.fixture(scope="module")
def pair_rows():
    """The label needs features 2 and 5 of ten (their sum's sign)."""
    rng = np.random.RandomState(1)
    X = rng.randn(1500, 10).astype(np.float32)
    outputs = (X[:, 2] + X[:, 5] > 0).astype(int)
    return X, outputs


@pytest.mark.parametrize("predictor_masks", ["random", "joint"])
def test_the_rate_asked_for_is_the_rate_achieved(sign_rows, predictor_masks):
    X, outputs = sign_rows
    explainer = HardKumaExplainer(selection_rate=0.1, predictor_masks=predictor_masks, **FAST)
    masks = explainer.fit(X, outputs).transform(X)
    assert explainer.selection_rate_ == 0.1
    assert masks.mean() == pytest.approx(0.1, abs=0.02)
    # and the gate it opens is the one feature the label depends on
    assert masks[:, 0].mean() > 0.95
    assert np.all(explainer.explain(X)[:, 0] > open_gate_probability())
    history = explainer.net_.history
    assert history[-1, "batches", -1, "selection_rate"] == pytest.approx(0.1, abs=0.02)


def test_two_features_at_rate_point_two(pair_rows):
    X, outputs = pair_rows
    explainer = HardKumaExplainer(selection_rate=0.2, **FAST).fit(X, outputs)
    masks = explainer.transform(X)
    assert masks.mean() == pytest.approx(0.2, abs=0.02)
    assert sorted(np.argsort(-masks.mean(axis=0))[:2].tolist()) == [2, 5]
    assert masks[:, [2, 5]].mean() > 0.9


def test_masks_are_the_test_time_gates_or_exactly_k(pair_rows):
    X, outputs = pair_rows
    explainer = HardKumaExplainer(k=2, **FAST).fit(X, outputs)
    assert explainer.selection_rate_ == pytest.approx(0.2)  # k / n_features
    masks = explainer.transform(X)
    np.testing.assert_array_equal(masks.sum(axis=1), 2)
    scores = explainer.explain(X)
    assert np.all((scores >= 0) & (scores <= 1))
    # k=None: the features whose deterministic test-time gate is non-zero, and in a row
    # where none is, the most open one.
    gates = explainer.set_params(k=None).transform(X)
    with torch.no_grad():
        logits = explainer.net_.module_(torch.as_tensor(explainer.masker_.standardize(X)))
        mode = HardKumaraswamy.from_logits(logits + explainer.net_.offset_).mode
    expected = (mode > 0).float().numpy()
    np.testing.assert_array_equal(expected, scores > open_gate_probability())
    empty = expected.sum(axis=1) == 0
    expected[empty, scores[empty].argmax(axis=1)] = 1.0
    np.testing.assert_array_equal(gates, expected)
    assert gates.sum(axis=1).min() >= 1


def test_parameter_errors(pair_rows):
    X, outputs = pair_rows
    with pytest.raises(ValueError, match="selection_rate"):
        HardKumaExplainer(selection_rate=1.0, **FAST).fit(X, outputs)
    with pytest.raises(ValueError, match="predictor_epochs should be < max_epochs"):
        HardKumaExplainer(predictor_epochs=30, **FAST).fit(X, outputs)


def test_rate_constraint_moves_its_multipliers_in_training_only():
    constraint = RateConstraint([0.3, 0.1], [True, False], lr=0.5, decay=0.0, init=1e-2,
                                rho=0.0)
    over = constraint.over.clone()
    constraint.eval()
    constraint(torch.tensor([0.6, 0.5]))
    torch.testing.assert_close(constraint.over, over)
    constraint.train()
    penalty = constraint(torch.tensor([0.6, 0.5]))  # both rates too high
    assert torch.all(constraint.over > over)
    assert float(constraint.under[1]) == 0.0  # one-sided: never pushes the rate up
    for _ in range(50):
        constraint(torch.tensor([0.1, 0.0]))  # both rates too low
    assert float(constraint.multipliers[0]) < 0  # the two-sided one now pushes up
    assert float(constraint.multipliers[1]) >= 0
    assert torch.isfinite(penalty)
    state = constraint.state_dict()
    assert {"over", "under", "average", "steps", "targets"} <= set(state)


def test_quadratic_term_pulls_from_both_sides_of_a_two_sided_constraint():
    constraint = RateConstraint([0.3], [True], lr=0.0, decay=0.0, init=1e-6, rho=10.0)
    rate = torch.tensor([0.5], requires_grad=True)
    constraint(rate).backward()
    assert float(rate.grad) == pytest.approx(10 * 0.2, rel=1e-3)
    one_sided = RateConstraint([0.3], [False], lr=0.0, decay=0.0, init=1e-6, rho=10.0)
    low = torch.tensor([0.1], requires_grad=True)
    one_sided(low).backward()
    assert abs(float(low.grad)) < 1e-5  # below an upper bound: no pull


def test_neighbour_pairs_of_sequences_images_and_patches():
    pairs = RowLayout(4).neighbour_pairs(4)
    np.testing.assert_array_equal(pairs, [[0, 1], [1, 2], [2, 3]])
    # a 2 x 3 image, one group per pixel
    pairs = RowLayout(6, image_shape=(1, 2, 3)).neighbour_pairs(6)
    assert len(pairs) == 2 * 2 + 3  # two per row, three vertical
    assert {(0, 1), (1, 2), (0, 3), (2, 5)} <= set(map(tuple, pairs.tolist()))
    pairs = RowLayout(64, image_shape=(1, 8, 8), patch_size=4).neighbour_pairs(4)  # 2 x 2 patches
    assert sorted(map(tuple, pairs.tolist())) == [(0, 1), (0, 2), (1, 3), (2, 3)]


def test_transition_constraint_prefers_contiguous_selections():
    # The label needs features 1, 2 and 3; features 6 and 8 are copies of 1 and 3, so
    # {6, 2, 8} explains as well as {1, 2, 3}. Only the transition constraint prefers the
    # block (two changes among nine neighbouring pairs) to the scattered copies (six).
    rng = np.random.RandomState(2)
    X = rng.randn(1500, 10).astype(np.float32)
    X[:, 6], X[:, 8] = X[:, 1], X[:, 3]
    outputs = (X[:, 1:4].sum(axis=1) > 0).astype(int)
    changes = {}
    for transition_rate in (None, 0.25):
        explainer = HardKumaExplainer(selection_rate=0.3, transition_rate=transition_rate,
                                      **{**FAST, "max_epochs": 60})
        masks = explainer.fit(X, outputs).transform(X)
        assert masks.mean() == pytest.approx(0.3, abs=0.03)
        changes[transition_rate] = np.abs(np.diff(masks, axis=1)).sum(axis=1).mean()
    assert changes[0.25] < 2.5 < changes[None] - 1


def test_hardkuma_explainer_pickles_with_its_multipliers(pair_rows):
    X, outputs = pair_rows
    explainer = HardKumaExplainer(selection_rate=0.2, **{**FAST, "max_epochs": 4})
    explainer.fit(X, outputs)
    clone = pickle.loads(pickle.dumps(explainer))
    np.testing.assert_array_equal(clone.transform(X), explainer.transform(X))
    torch.testing.assert_close(clone.net_.constraint_.over, explainer.net_.constraint_.over)


def test_real_table_fidelity_beats_random_masks():
    # Diabetes progression in its own (scaled) units, a boosted-trees regressor.
    X, y = load_diabetes(return_X_y=True)
    X = X.astype(np.float32)
    model = HistGradientBoostingRegressor(random_state=0).fit(X, y)
    # 442 rows: smaller batches and more epochs give the rate constraint its ~900 steps.
    explainer = HardKumaExplainer(selection_rate=0.3, **{**FAST, "max_epochs": 200,
                                                         "batch_size": 50})
    explainer.fit(X, black_box=model)
    masks = explainer.transform(X)
    assert masks.mean() == pytest.approx(0.3, abs=0.03)
    ours = metrics.posthoc_accuracy(model, X, masks)
    rng = np.random.RandomState(0)
    random = (rng.rand(*masks.shape) < masks.mean()).astype(np.float32)
    assert ours > metrics.posthoc_accuracy(model, X, random) + 0.2


@pytest.fixture(scope="module")
def xor_rows():
    rng = np.random.RandomState(0)
    X = rng.randn(1000, 6).astype(np.float32)
    return X, (X[:, 0] * X[:, 1] > 0).astype(int)


def test_realx_trains_hardkuma_gates_through_the_same_distribution(xor_rows):
    X, outputs = xor_rows
    explainer = RealXExplainer(relaxation="hardkuma", max_epochs=60, predictor_epochs=40,
                               batch_size=100, random_state=0, device="cpu")
    masks = explainer.fit(X, outputs).transform(X)
    assert masks[:, :2].mean() > 0.95 and masks[:, 2:].mean() < 0.05
    scores = explainer.explain(X)
    assert explainer._threshold == open_gate_probability()
    np.testing.assert_array_equal(masks, scores > open_gate_probability())
    with torch.no_grad():
        logits = explainer.net_.module_(torch.as_tensor(explainer.masker_.standardize(X)))
    np.testing.assert_allclose(scores, HardKumaraswamy.from_logits(logits).prob_nonzero,
                               rtol=1e-6)
