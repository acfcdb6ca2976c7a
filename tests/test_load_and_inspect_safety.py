"""Loading and inspecting a saved explainer safely: what a file may cost to load or
inspect, a black box or a device that does not fit the saved explainer, refused by ``load``
and by the command line, and what ``inspect`` prints: the ``k`` the loaded explainer uses,
whether the refinement was done, text escaped from the terminal, strict JSON."""

import json
import os
import tracemalloc

import numpy as np
import pytest
from safetensors.torch import safe_open, save_file
from sklearn.linear_model import LogisticRegression, Ridge

import sk_sointer
from sk_sointer._cli import main
from sk_sointer._cli._common import _InputError
from sk_sointer._cli.inspect import describe

N_ROWS = 100


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    X = rng.randn(N_ROWS, 5)
    return X, (X[:, 0] + X[:, 1] > 0).astype(int)


@pytest.fixture(scope="module")
def model(data):
    return LogisticRegression().fit(*data)


@pytest.fixture(scope="module")
def saved(tmp_path_factory, data, model):
    """An L2X explainer fitted to the model, then given k=3 after fit, saved."""
    X, _ = data
    explainer = sk_sointer.L2XExplainer(
        k=2, max_epochs=2, device="cpu", random_state=0,
        refine=sk_sointer.ModelRefinement(max_queries=2000, max_epochs=2),
    ).fit(X, black_box=model)
    explainer.set_params(k=3)
    path = tmp_path_factory.mktemp("saved") / "l2x.safetensors"
    sk_sointer.save(explainer, path)
    return str(path)


def rewrite(source, path, edit):
    """A copy of ``source`` whose JSON document ``edit(doc)`` has changed."""
    with safe_open(source, "pt") as file:
        doc = json.loads(file.metadata()["sk_sointer"])
        tensors = {name: file.get_tensor(name) for name in file.keys()}
    edit(doc)
    save_file(tensors, str(path), metadata={"sk_sointer": json.dumps(doc)})
    return str(path)


def inspect_surface(path):
    return describe(path)


def set_attribute(value):
    return lambda doc: doc["attributes"].__setitem__("extra_", value)


# Files of at most 5 MB, each of which would cost from 200 MB to gigabytes if decoded
# as written.
COSTLY = {
    # Two characters of JSON each, read as strings of 160 characters (640 bytes).
    "wide-dtype": set_attribute(
        {"ndarray": [0] * 1_500_000, "dtype": "<U160", "shape": [1_500_000]}),
    "empty-lists": set_attribute([[]] * 1_150_000),
    "empty-objects": set_attribute([{}] * 1_150_000),
    "layers": lambda doc: doc["params"]["selector"]["params"].__setitem__(
        "hidden_units", {"tuple": [1] * 1_000_000}),
    # Within the budget: decoded (and loaded), at a cost bounded by the text.
    "floats": set_attribute({"ndarray": [0.5] * 900_000, "dtype": "<f8", "shape": [900_000]}),
    "short-strings": set_attribute(
        {"ndarray": [f"{i % 100:02d}" for i in range(500_000)], "dtype": "<U2",
         "shape": [500_000]}),
}


@pytest.mark.parametrize("surface", [sk_sointer.load, inspect_surface],
                         ids=["load", "inspect"])
@pytest.mark.parametrize("case", sorted(COSTLY))
def test_load_and_inspect_stay_under_150_mb_on_files_of_5_mb(tmp_path, saved, surface, case):
    path = rewrite(saved, tmp_path / f"{case}.safetensors", COSTLY[case])
    assert os.path.getsize(path) <= 5_000_000
    sk_sointer.load(saved)  # the modules are imported before the measure
    tracemalloc.start()
    try:
        try:
            surface(path)
        except Exception as exc:  # noqa: BLE001 - refusing is allowed, in one line
            # describe's errors are the CLI's bad input (exit 2).
            assert isinstance(exc, (ValueError, _InputError)), exc
            assert "\n" not in str(exc)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 150e6, f"{peak / 1e6:.0f} MB"


@pytest.mark.parametrize("case, message", [
    ("wide-dtype", "declares arrays of 960,000,[0-9]{3} bytes"),
    ("empty-lists", "holds 1,150,0[0-9][0-9] JSON arrays and objects"),
    ("layers", "hidden_units of 1,000,000 items; .* at most 256 layers"),
])
def test_costly_files_are_refused_before_decoding(tmp_path, saved, case, message):
    path = rewrite(saved, tmp_path / f"{case}.safetensors", COSTLY[case])
    with pytest.raises(ValueError, match=message):
        sk_sointer.load(path)


@pytest.mark.parametrize("black_box, message", [
    (Ridge(), r"outputs \(1 output: real\) do not match .* \(1 output: categorical over 2"),
    (lambda X: np.full((len(X), 3), 1 / 3), r"\(1 output: categorical over 3 classes\)"),
    (lambda X: np.full((len(X), 1), np.nan), "does not answer a row of the L2XExplainer's "
                                             "baseline: .*NaN"),
], ids=["regressor", "three-classes", "nan"])
def test_load_refuses_a_black_box_whose_outputs_do_not_match(saved, data, black_box, message):
    if isinstance(black_box, Ridge):
        black_box = black_box.fit(*data)
    with pytest.raises(ValueError, match=message):
        sk_sointer.load(saved, black_box=black_box)


def test_load_accepts_the_models_own_outputs(saved, data, model):
    loaded = sk_sointer.load(saved, black_box=model)
    assert 0.5 < loaded.score(data[0]) <= 1


@pytest.mark.parametrize("device", ["meta", "xla", "cuda:9"])
def test_load_refuses_devices_it_cannot_load_on(saved, device):
    with pytest.raises(ValueError, match=f"device='{device}'|device={device!r}"):
        sk_sointer.load(saved, device=device)


def test_the_cli_refuses_a_mismatched_model_and_the_meta_device(capsys, tmp_path, saved,
                                                                 data):
    import joblib

    X, y = data
    model = tmp_path / "ridge.joblib"
    joblib.dump(Ridge().fit(X, y), model)
    rows = tmp_path / "rows.csv"
    np.savetxt(rows, X, delimiter=",")
    for extra, expected in (([], "do not match"), (["--device", "meta"], "device='meta'")):
        argv = ["explain", str(model), str(rows), "--explainer", saved,
                "--out", str(tmp_path / "m.csv"), *extra]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert expected in err and "Traceback" not in err


# -- inspect ------------------------------------------------------------------------------


def test_inspect_reports_the_k_the_loaded_explainer_uses(capsys, saved, data):
    assert sk_sointer.load(saved).transform(data[0]).sum(axis=1).tolist() == [3] * N_ROWS
    assert main(["inspect", saved]) == 0
    out = capsys.readouterr().out
    assert "Selection: k = 3" in out and "fitted with k = 2" in out
    assert main(["inspect", "--json", saved]) == 0
    assert json.loads(capsys.readouterr().out)["selection"] == {"k": 3, "fitted_k": 2}


def test_inspect_says_whether_the_refinement_was_done(capsys, tmp_path, saved, data, model):
    X, _ = data
    # Its thresholded selection (k=None) is refined too; without the model it cannot be.
    realx = sk_sointer.RealXExplainer(max_epochs=2, predictor_epochs=1, device="cpu",
                                      random_state=0).fit(X, model.predict_proba(X))
    assert realx.refine == "model" and realx.n_model_queries_ == 0
    path = tmp_path / "realx.safetensors"
    sk_sointer.save(realx, path)
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Refinement against the model: not done: the explainer was fitted without" in out
    assert main(["inspect", "--json", saved]) == 0
    refinement = json.loads(capsys.readouterr().out)["refinement"]
    assert refinement["done"] and 0 < refinement["n_model_queries"] <= 2000


ESCAPES = "\x1b]0;retitled\x07\x1b[2J\r\u202e"


@pytest.mark.parametrize("edit", [
    lambda doc: doc["attributes"].__setitem__(
        "feature_names_in_", {"ndarray": [ESCAPES, "b", "c", "d", "e"], "dtype": "O",
                              "shape": [5]}),
    lambda doc: doc.__setitem__("sk_sointer_version", ESCAPES),
    # an attribute that is not the estimator's is refused by its name, escaped
    lambda doc: doc["attributes"].__setitem__(ESCAPES + "_", 1),
    lambda doc: doc["output_spec"].__setitem__("kinds", [ESCAPES]),
], ids=["feature-name", "version", "key", "kind"])
def test_inspect_escapes_what_a_terminal_would_obey(capsys, tmp_path, saved, edit):
    path = rewrite(saved, tmp_path / "escapes.safetensors", edit)
    main(["inspect", path])
    printed = capsys.readouterr()
    for text in (printed.out, printed.err):
        assert not any(char in text for char in "\x1b\x07\r\u202e"), text
    assert "\\x1b" in printed.out + printed.err


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_inspect_json_is_strict_json(capsys, tmp_path, saved, value):
    path = rewrite(saved, tmp_path / "nan.safetensors",
                   lambda doc: doc["params"].__setitem__("lr", value))
    assert main(["inspect", "--json", path]) == 0
    out = capsys.readouterr().out

    def refuse(constant):
        raise AssertionError(f"bare {constant} in the JSON")

    summary = json.loads(out, parse_constant=refuse)
    assert summary["params"]["lr"] == {"nan": "NaN", "inf": "Infinity"}.get(
        str(value), "-Infinity")
