"""Property-based checks over shapes, dtypes, non-finite values, scales and parameters.

Every case either fits and returns valid masks with finite scores, or raises a ValueError
or TypeError with a message: never another exception type, never NaN scores.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sk_sointer import L2XExplainer, RealXExplainer

FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])


@st.composite
def problems(draw):
    n_samples = draw(st.integers(1, 30))
    n_features = draw(st.integers(1, 6))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    scale = draw(st.sampled_from([1.0, 1e-3, 1e3, 1e6, 1e30]))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.RandomState(seed)
    X = (rng.randn(n_samples, n_features) * scale).astype(dtype)
    # Most cases are valid, so that the valid path is exercised as much as the errors.
    spoil = draw(st.sampled_from([None] * 6 + [np.nan, np.inf, -np.inf]))
    if spoil is not None and X.size:
        X.flat[rng.randint(X.size)] = spoil
    kind = draw(st.sampled_from(["labels", "three_classes", "proba", "values", "column"] * 3
                                + ["one_class", "wrong_length"]))
    if kind == "labels":
        y = rng.randint(2, size=n_samples)
    elif kind == "three_classes":
        y = np.array(["a", "b", "c"])[rng.randint(3, size=n_samples)]
    elif kind == "proba":
        p = rng.rand(n_samples)
        y = np.c_[p, 1 - p]
    elif kind == "values":
        y = rng.randn(n_samples) * draw(st.sampled_from([1.0, 1e5, 1e20]))
    elif kind == "column":
        y = rng.randint(2, size=(n_samples, 1))
    elif kind == "one_class":
        y = np.zeros(n_samples, dtype=int)
    else:
        y = rng.randint(2, size=n_samples + 1)
    k = draw(st.one_of(st.none(), st.integers(1, 8), st.integers(1, 8), st.just(0)))
    batch_size = draw(st.sampled_from([2, 7, 64] * 3 + [1]))
    baseline = draw(st.sampled_from(["mean", "zero", 0.5] * 3 + ["median", np.ones(2)]))
    return X, y, k, batch_size, baseline


def _check_case(make, X, y, k, batch_size, baseline):
    params = {"k": k, "batch_size": batch_size, "baseline": baseline, "max_epochs": 1,
              "random_state": 0, "device": "cpu"}
    if make is RealXExplainer:
        params["max_epochs"], params["predictor_epochs"] = 2, 1
    elif k is None:
        params.pop("k")
    try:
        explainer = make(**params).fit(X, y)
    except (ValueError, TypeError) as exc:
        assert str(exc), "an error without a message"
        return
    scores = explainer.explain(X)
    masks = explainer.transform(X)
    assert np.isfinite(scores).all()
    assert masks.shape == X.shape and masks.dtype == X.dtype
    assert set(np.unique(masks)) <= {0.0, 1.0}
    if explainer.k is not None:
        np.testing.assert_array_equal(masks.sum(axis=1), min(explainer.k, X.shape[1]))


@pytest.mark.parametrize("make", [L2XExplainer, RealXExplainer], ids=["l2x", "realx"])
def test_any_input_gives_valid_masks_or_a_clear_error(make):
    @FUZZ
    @given(problems())
    def check(problem):
        _check_case(make, *problem)

    check()
