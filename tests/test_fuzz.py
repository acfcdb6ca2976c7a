"""Property-based checks over shapes, dtypes, non-finite values, scales and parameters.

Every case either fits and returns valid masks with finite scores, or raises a ValueError
or TypeError with a message: never another exception type, never NaN scores.
"""

import numpy as np
import pytest

pytest.importorskip("hypothesis")  # the test extra

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

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


# Issue 25: the surfaces an attacker or a hurried user reaches after fit
# ----------------------------------------------------------------------

FUZZ_SMALL = settings(max_examples=40, deadline=None, derandomize=True,
                      suppress_health_check=[HealthCheck.too_slow,
                                             HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def saved_l2x(tmp_path_factory):
    from sk_sointer import save

    rng = np.random.RandomState(0)
    X = rng.randn(60, 4).astype(np.float32)
    explainer = L2XExplainer(k=2, groups=[0, 0, 1, 2], max_epochs=1, random_state=0,
                             device="cpu").fit(X, (X[:, 0] > 0).astype(int))
    path = tmp_path_factory.mktemp("fuzz") / "l2x.safetensors"
    save(explainer, path)
    return X, explainer, path


def _paths(value, prefix=()):
    """Every place in a JSON document, as the keys and indices leading to it."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


NASTY = st.one_of(
    st.none(), st.booleans(), st.sampled_from([0, -1, 1, 2, 3, 10**9, 10**12, 2**63]),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=5),
    st.sampled_from([[], {}, [1, 2], {"tuple": [10**6, 10**6]}, {"dict": {}},
                     {"ndarray": ["a"], "dtype": "<U100000000", "shape": [1]},
                     {"ndarray": [1, 2], "dtype": "<f8", "shape": [3]},
                     {"factory": "MLP", "params": {"hidden_units": {"tuple": [10**5]}}},
                     {"random_state": {"keys": [1], "pos": 0}}]),
)


def _loads_or_refuses(path, X):
    """load either refuses the file with a message or gives an explainer that works."""
    from sk_sointer import load

    try:
        loaded = load(path)
    except (ValueError, OSError) as exc:
        assert str(exc), "an error without a message"
        return
    try:
        masks = loaded.transform(X)
    except (ValueError, TypeError) as exc:
        assert str(exc)
        return
    assert masks.shape == X.shape and set(np.unique(masks)) <= {0.0, 1.0}


def test_load_of_a_mutated_document_refuses_it_or_works(saved_l2x, tmp_path):
    import json

    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    X, _, path = saved_l2x
    with safe_open(str(path), framework="pt") as file:
        document = json.loads(file.metadata()["sk_sointer"])
    tensors = load_file(str(path))
    places = list(_paths(document))[1:]

    @FUZZ_SMALL
    @given(st.sampled_from(places), NASTY)
    def check(place, value):
        edited = json.loads(json.dumps(document))
        parent = edited
        for key in place[:-1]:
            parent = parent[key]
        parent[place[-1]] = value
        target = tmp_path / "mutated.safetensors"
        save_file(tensors, str(target), metadata={"sk_sointer": json.dumps(edited)})
        _loads_or_refuses(target, X)

    check()


def test_load_of_damaged_bytes_refuses_it(saved_l2x, tmp_path):
    X, _, path = saved_l2x
    original = path.read_bytes()

    @FUZZ_SMALL
    @given(st.integers(0, len(original) - 1), st.integers(1, 255), st.booleans())
    def check(position, xor, truncate):
        damaged = bytearray(original[:position] if truncate else original)
        if not truncate:
            damaged[position] ^= xor
        target = tmp_path / "damaged.safetensors"
        target.write_bytes(bytes(damaged))
        _loads_or_refuses(target, X)

    check()


def test_set_params_k_after_fit_gives_k_hot_masks_or_a_clear_error(saved_l2x):
    X, explainer, _ = saved_l2x

    @FUZZ_SMALL
    @given(st.one_of(st.none(), st.booleans(), st.integers(-3, 6), st.floats(-2, 6),
                     st.text(max_size=2), st.sampled_from([np.int64(2), np.float32(2)])))
    def check(k):
        explainer.set_params(k=k)
        try:
            masks = explainer.transform(X)
        except ValueError as exc:
            assert "'k' parameter of L2XExplainer" in str(exc)
            return
        finally:
            explainer.set_params(k=2)
        groups = masks[:, [0, 2, 3]]  # one feature of each of the three groups
        np.testing.assert_array_equal(groups.sum(axis=1), min(int(k), 3))

    check()


def test_cli_on_pandas_written_csv_explains_every_row(tmp_path):
    pd = pytest.importorskip("pandas")
    import joblib
    from sklearn.linear_model import LogisticRegression

    from sk_sointer.__main__ import main

    @settings(max_examples=6, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow])
    @given(st.integers(20, 60), st.integers(2, 6), st.booleans(), st.integers(0, 2**16))
    def check(n_rows, n_features, named, seed):
        rng = np.random.RandomState(seed)
        X = rng.randn(n_rows, n_features)
        columns = [f"f{i}" for i in range(n_features)] if named else None
        frame = pd.DataFrame(X, columns=columns)
        model = LogisticRegression().fit(frame if named else X, X[:, 0] > 0)
        joblib.dump(model, tmp_path / "model.joblib")
        frame.to_csv(tmp_path / "data.csv", index=False)
        out = tmp_path / "masks.csv"
        argv = ["explain", str(tmp_path / "model.joblib"), str(tmp_path / "data.csv"), "-k",
                "1", "--max-epochs", "1", "--out", str(out)]
        assert main(argv) == 0
        written = pd.read_csv(out)
        assert written.shape == (n_rows, n_features)
        assert list(written.columns) == [str(c) for c in frame.columns]
        np.testing.assert_array_equal(written.to_numpy().sum(axis=1), 1)

    check()
