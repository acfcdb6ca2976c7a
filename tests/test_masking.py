"""The masker: baselines in the data's units, standardisation, feature groups; and what it
buys the explainers (results independent of units, group-level selection)."""

import warnings

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sk_sointer import L2XExplainer, RealXExplainer
from sk_sointer._masking import Masker

torch.set_num_threads(1)


@pytest.fixture
def table():
    rng = np.random.RandomState(0)
    return (rng.randn(40, 3) * [1.0, 10.0, 0.1] + [5.0, -20.0, 0.0]).astype(np.float32)


# -- baselines ----------------------------------------------------------------------------


def test_baseline_mean_is_the_training_mean_and_standardises_to_zero(table):
    masker = Masker().fit(table)
    np.testing.assert_allclose(masker.baseline_, table.astype(np.float64).mean(0), rtol=1e-12)
    np.testing.assert_allclose(masker.scale_, table.astype(np.float64).std(0), rtol=1e-12)
    np.testing.assert_allclose(masker.baseline_scaled_, 0.0, atol=1e-6)
    assert masker.baseline_scaled_.dtype == np.float32


@pytest.mark.parametrize(
    "baseline, expected",
    [
        ("zero", [0.0, 0.0, 0.0]),
        (2.5, [2.5, 2.5, 2.5]),
        (np.float32(-1.0), [-1.0, -1.0, -1.0]),
        (np.array(4.0), [4.0, 4.0, 4.0]),
        ([1, 2, 3], [1.0, 2.0, 3.0]),
        (np.array([0.5, -0.5, 7.0]), [0.5, -0.5, 7.0]),
    ],
)
def test_baseline_resolves_in_the_data_units(table, baseline, expected):
    masker = Masker(baseline).fit(table)
    np.testing.assert_array_equal(masker.baseline_, expected)
    mean, std = table.astype(np.float64).mean(0), table.astype(np.float64).std(0)
    np.testing.assert_allclose(masker.baseline_scaled_, (np.array(expected) - mean) / std,
                               rtol=1e-5)


@pytest.mark.parametrize(
    "baseline, message",
    [
        ([1.0, 2.0], r"one value per feature, shape \(3,\); got shape \(2,\)"),
        (np.ones((3, 1)), r"one value per feature, shape \(3,\); got shape \(3, 1\)"),
        ([1.0, np.nan, 2.0], "NaN or infinity"),
        (np.inf, "NaN or infinity"),
        ("median", "should be 'mean', 'zero', a number or an array; got 'median'"),
        (None, "got None"),
        (True, "got True"),
        (["a", "b", "c"], "array of numbers"),
        (1e300, "too far from the data to be standardised in float32"),
    ],
)
def test_bad_baselines_are_named(table, baseline, message):
    with pytest.raises(ValueError, match=message):
        Masker(baseline).fit(table)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mask_raw_keeps_x_and_fills_the_baseline_in_x_dtype(dtype):
    X = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=dtype)
    masker = Masker([10.0, 20.0, 30.0]).fit(X)
    masks = np.array([[1, 0, 1], [0, 0, 1]])
    masked = masker.mask_raw(X, masks)
    assert masked.dtype == dtype
    np.testing.assert_array_equal(masked, [[1.0, 20.0, 3.0], [10.0, 20.0, 6.0]])
    # Mean baseline: the training mean, whatever rows are masked later.
    masked = Masker().fit(X).mask_raw(X[:1], [[0, 1, 0]])
    np.testing.assert_array_equal(masked, np.array([[2.5, 2.0, 4.5]], dtype=dtype))
    # Other rows in the baseline's place (SOInter's draws), in X's dtype.
    donors = np.array([[7.0, 8.0, 9.0], [-1.0, -2.0, -3.0]])
    masked = masker.mask_raw(X, masks, fill=donors)
    assert masked.dtype == dtype
    np.testing.assert_array_equal(masked, [[1.0, 8.0, 3.0], [-1.0, -2.0, 6.0]])


def test_mask_on_standardised_rows_matches_mask_raw(table):
    masker = Masker([1.0, 2.0, 3.0]).fit(table)
    masks = np.array([[1, 0, 1], [0, 1, 0]], dtype=np.float32)
    on_scaled = masker.mask(torch.as_tensor(masker.standardize(table[:2])), torch.as_tensor(masks))
    expected = masker.standardize(masker.mask_raw(table[:2], masks))
    np.testing.assert_allclose(on_scaled.numpy(), expected, rtol=1e-5, atol=1e-6)
    appended = masker.mask(torch.as_tensor(masker.standardize(table[:2])), torch.as_tensor(masks),
                           append_mask=True)
    assert appended.shape == (2, 6)
    np.testing.assert_array_equal(appended[:, 3:].numpy(), masks)


# -- standardisation ----------------------------------------------------------------------


def test_standardize_huge_but_finite_float64():
    rng = np.random.RandomState(0)
    X = rng.randn(100, 3) * 1e30 + 5e30
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        masker = Masker().fit(X)
        scaled = masker.standardize(X)
    assert scaled.dtype == np.float32
    np.testing.assert_allclose(scaled.mean(0), 0.0, atol=1e-5)
    np.testing.assert_allclose(scaled.std(0), 1.0, rtol=1e-5)
    # Float32 data near its largest value: statistics are taken in float64.
    X32 = (rng.randn(100, 2) * 1e37).astype(np.float32)
    np.testing.assert_allclose(Masker().fit(X32).standardize(X32).std(0), 1.0, rtol=1e-5)


def test_standardize_overflowing_float32_is_a_clear_error():
    X = np.random.RandomState(0).randn(50, 2)
    masker = Masker().fit(X)
    far = X[:3].copy()
    far[1, 0] = 1e300
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the error, not a RuntimeWarning and NaN or inf
        with pytest.raises(ValueError, match="overflow float32 once standardised"):
            masker.standardize(far)


def test_constant_features_get_scale_one():
    rng = np.random.RandomState(0)
    X = np.c_[np.full(1000, 0.1), np.zeros(1000), rng.randn(1000)]
    masker = Masker().fit(X)
    # The spread of a column of 0.1s is rounding error (~1e-15), not a scale.
    np.testing.assert_array_equal(masker.scale_[:2], 1.0)
    scaled = masker.standardize([[0.2, 1.0, 0.0]])
    np.testing.assert_allclose(scaled[0, :2], [0.1, 1.0], rtol=1e-5)


def test_standardised_rows_do_not_depend_on_units(table):
    masker, masker_1000 = Masker().fit(table), Masker().fit(table * 1000)
    np.testing.assert_allclose(masker.standardize(table), masker_1000.standardize(table * 1000),
                               atol=1e-5)
    zero, zero_1000 = Masker("zero").fit(table), Masker("zero").fit(table * 1000)
    np.testing.assert_allclose(zero.baseline_scaled_, zero_1000.baseline_scaled_, rtol=1e-5)


# -- groups -------------------------------------------------------------------------------


def test_groups_are_numbered_in_order_of_first_appearance():
    X = np.random.RandomState(0).randn(5, 6)
    masker = Masker(groups=[7, 3, 7, 0, 3, 9]).fit(X)
    np.testing.assert_array_equal(masker.groups_, [0, 1, 0, 2, 1, 3])
    assert masker.n_groups_ == 4
    masker = Masker(groups=["b", "a", "b", "c", "a", "c"]).fit(X)
    np.testing.assert_array_equal(masker.groups_, [0, 1, 0, 2, 1, 2])
    assert masker.n_groups_ == 3
    ungrouped = Masker().fit(X)
    assert ungrouped.groups_ is None and ungrouped.n_groups_ == 6


def test_expand_on_numpy_and_torch():
    masker = Masker(groups=["b", "a", "b", "c"]).fit(np.random.RandomState(0).randn(5, 4))
    group_masks = np.array([[1.0, 0.0, 0.0], [0.0, 0.5, 1.0]], dtype=np.float32)
    expected = [[1.0, 0.0, 1.0, 0.0], [0.0, 0.5, 0.0, 1.0]]
    np.testing.assert_array_equal(masker.expand(group_masks), expected)
    expanded = masker.expand(torch.as_tensor(group_masks))
    assert isinstance(expanded, torch.Tensor) and expanded.dtype == torch.float32
    np.testing.assert_array_equal(expanded.numpy(), expected)
    ungrouped = Masker().fit(np.zeros((2, 3)))
    assert ungrouped.expand(group_masks) is group_masks


@pytest.mark.parametrize(
    "groups, message",
    [
        ([0, 0, 1], r"one group id per feature, shape \(4,\); got shape \(3,\)"),
        ([[0, 0], [1, 1]], r"one group id per feature, shape \(4,\); got shape \(2, 2\)"),
        ([0.0, np.nan, 1.0, 1.0], "NaN or infinity"),
        ([None, 1, 1, 2], "one comparable type"),
    ],
)
def test_bad_groups_are_named(groups, message):
    with pytest.raises(ValueError, match=message):
        Masker(groups=groups).fit(np.zeros((3, 4)))


# -- explainers on digits with 2x2 patches ------------------------------------------------


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    X, y = X[:600], y[:600]
    model = LogisticRegression(max_iter=200).fit(X, y)
    rows, cols = np.divmod(np.arange(64), 8)
    patches = (rows // 2) * 4 + cols // 2  # 16 patches of 2x2 pixels
    return X, model, patches


@pytest.mark.parametrize(
    "make",
    [
        lambda groups: L2XExplainer(k=3, groups=groups, max_epochs=4, batch_size=100,
                                    random_state=0),
        lambda groups: RealXExplainer(k=3, groups=groups, max_epochs=4, predictor_epochs=2,
                                      batch_size=100, random_state=0),
    ],
    ids=["L2X", "RealX"],
)
def test_groups_on_digit_patches(digits, make):
    X, model, patches = digits
    expl = make(patches).fit(X, black_box=model)
    assert expl.masker_.n_groups_ == 16 and expl.net_.module_[-1].out_features == 16
    masks = expl.transform(X)
    scores = expl.explain(X)
    assert masks.shape == scores.shape == (600, 64)
    # Every group is kept or dropped whole: its pixels carry the same mask and score.
    for group in range(16):
        members = patches == group
        assert (masks[:, members] == masks[:, members][:, :1]).all()
        assert (scores[:, members] == scores[:, members][:, :1]).all()
    # Exactly k groups per row, so 4 * k pixels.
    group_masks = masks[:, [np.flatnonzero(patches == g)[0] for g in range(16)]]
    np.testing.assert_array_equal(group_masks.sum(axis=1), 3)
    np.testing.assert_array_equal(masks.sum(axis=1), 12)
    # The kept groups are the k best-scored ones.
    group_scores = scores[:, [np.flatnonzero(patches == g)[0] for g in range(16)]]
    kept_min = np.where(group_masks > 0, group_scores, np.inf).min(axis=1)
    dropped_max = np.where(group_masks > 0, -np.inf, group_scores).max(axis=1)
    assert (kept_min >= dropped_max).all()


def test_groups_are_checked_against_k_and_the_features(digits):
    X, model, patches = digits
    with pytest.warns(UserWarning, match=r"k=17 is greater than n_groups=16"):
        expl = L2XExplainer(k=17, groups=patches, max_epochs=1).fit(X, black_box=model)
    assert expl.k_ == 16 and (expl.transform(X[:5]) == 1).all()
    message = r"one group id per feature, shape \(64,\); got shape \(63,\)"
    with pytest.raises(ValueError, match=message):
        L2XExplainer(k=2, groups=patches[:-1], max_epochs=1).fit(X, black_box=model)


# -- explanations do not depend on units --------------------------------------------------


def _same_rows(masks, other):
    return np.mean((masks == other).all(axis=1))


EXPLAINERS = [
    lambda: L2XExplainer(k=2, max_epochs=10, batch_size=64, random_state=0),
    lambda: RealXExplainer(k=2, max_epochs=30, predictor_epochs=15, batch_size=64, random_state=0),
]


@pytest.mark.parametrize("make", EXPLAINERS, ids=["L2X", "RealX"])
def test_masks_do_not_depend_on_feature_units(make):
    rng = np.random.RandomState(0)
    X = rng.randn(400, 6)
    y = (2 * X[:, 0] - 3 * X[:, 3] > 0).astype(int)
    model = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    model_1000 = make_pipeline(StandardScaler(), LogisticRegression()).fit(X * 1000, y)
    masks = make().fit(X, black_box=model).transform(X)
    masks_1000 = make().fit(X * 1000, black_box=model_1000).transform(X * 1000)
    assert _same_rows(masks, masks_1000) >= 0.99
    # Not a trivial answer: the two relevant features are what was found.
    assert masks[:, [0, 3]].mean() > 0.9


# REAL-X's second pick on the table above is a near tie (two seeds agree on 27-31 % of its
# rows), which any rounding may break: the values in other units are other float32 values
# (about a third of the standardised targets differ by one unit in the last place), and a
# captured fit on CUDA draws its Bernoulli masks from another stream than an eager one. On
# that table the units moved 18 % of a captured fit's masks on an H200; on the CPU the same
# happens to an eager fit of 2 * x0 - x3 (17 %). With twice the epochs and no interaction
# the answer, x0 and x3, has a margin, and a units leak would still show.
_TARGET_UNITS = [
    (EXPLAINERS[0], lambda X: 2 * X[:, 0] - X[:, 3] + 0.5 * X[:, 1] * X[:, 2], [0]),
    (lambda: RealXExplainer(k=2, max_epochs=60, predictor_epochs=30, batch_size=64,
                            random_state=0),
     lambda X: 2 * X[:, 0] - 1.5 * X[:, 3], [0, 3]),
]


@pytest.mark.parametrize("make, target, relevant", _TARGET_UNITS, ids=["L2X", "RealX"])
def test_masks_do_not_depend_on_regression_target_units(make, target, relevant):
    rng = np.random.RandomState(0)
    X = rng.randn(400, 6).astype(np.float32)
    y = target(X)
    expl, expl_1e5 = make().fit(X, y), make().fit(X, y * 1e5)
    np.testing.assert_allclose(expl_1e5.output_spec_.scale, expl.output_spec_.scale * 1e5,
                               rtol=1e-5)
    masks = expl.transform(X)
    floor = 0.99
    if torch.device(expl.net_.device).type != "cpu":
        # A GPU's kernels need not sum in the same order twice: the units may move the
        # masks no more than fitting the same targets again does.
        floor = min(floor, _same_rows(masks, make().fit(X, y).transform(X)) - 0.02)
    assert _same_rows(masks, expl_1e5.transform(X)) >= floor
    # Not a trivial answer: the features that matter most are what was found.
    assert masks[:, relevant].mean() > 0.9
    assert expl.score(X, y) == pytest.approx(expl_1e5.score(X, y * 1e5), abs=1e-3)


@pytest.mark.parametrize("groups", [None, [0, 0, 1, 2, 2]])
def test_a_masker_rebuilt_from_its_state_masks_as_the_fitted_one(groups):
    rng = np.random.RandomState(0)
    X = (rng.rand(50, 5) * [1, 10, 100, 1000, 5]).astype(np.float32)
    fitted = Masker("mean", groups).fit(X)
    state = fitted.state_dict()
    assert ("groups_" in state) == (groups is not None)
    rebuilt = Masker.from_state(state, baseline="mean", groups=groups)
    masks = (rng.rand(50, 5) > 0.5).astype(np.float32)
    np.testing.assert_array_equal(rebuilt.mask_raw(X, masks), fitted.mask_raw(X, masks))
    np.testing.assert_array_equal(rebuilt.standardize(X), fitted.standardize(X))
    assert rebuilt.n_groups_ == fitted.n_groups_
    group_masks = np.eye(fitted.n_groups_, dtype=np.float32)
    np.testing.assert_array_equal(rebuilt.expand(group_masks), fitted.expand(group_masks))
