"""save and load: a fitted estimator written without pickle, rebuilt to give the same answers;
and pickling, which leaves out a black box that cannot be pickled, with a warning."""

import _pickle
import copy
import json
import os
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.multioutput import MultiOutputClassifier
from skorch.callbacks import EarlyStopping
from torch import nn

from sk_sointer import (MLP, EnergyMLP, EnergyNet, EvalXEvaluator, HardKumaExplainer, L2XExplainer,
                        MEEDExplainer, RealXExplainer, SOInterExplainer, load, save)

GROUPS = np.array([0, 0, 1, 1, 2, 2, 3, 3])
BASELINE = np.linspace(-0.5, 0.5, 8)
# Trained on the CPU, where the loaded networks run by default, so that outputs compare exactly.
FAST = {"max_epochs": 3, "batch_size": 64, "random_state": 0, "device": "cpu"}
REALX_FAST = {"max_epochs": 4, "predictor_epochs": 2, "batch_size": 64, "random_state": 0,
              "device": "cpu"}

# (estimator, task, fitted on): "outputs" passes the model's outputs as y, "model" the model.
CASES = {
    "l2x-groups-regression": (
        L2XExplainer(k=2, groups=GROUPS, baseline=BASELINE, **FAST), "regression", "outputs"),
    "l2x-classifier-model": (
        L2XExplainer(k=3, baseline="zero", **FAST), "classification", "model"),
    "realx-k-none-groups-regression": (
        RealXExplainer(k=None, groups=GROUPS, baseline=0.25, **REALX_FAST), "regression",
        "outputs"),
    "realx-k2-regressor-model": (
        RealXExplainer(k=2, baseline=BASELINE, **REALX_FAST), "regression", "model"),
    "realx-hardkuma-classifier-model": (
        RealXExplainer(k=None, relaxation="hardkuma", **REALX_FAST), "classification", "model"),
    "hardkuma-groups-regression": (
        HardKumaExplainer(selection_rate=0.3, groups=GROUPS, **REALX_FAST), "regression",
        "outputs"),
    "hardkuma-joint-transitions-classifier-model": (
        HardKumaExplainer(k=2, predictor_masks="joint", transition_rate=0.2, **FAST),
        "classification", "model"),
    "meed-classifier-model": (MEEDExplainer(k=2, **FAST), "classification", "model"),
    "meed-groups-regression": (MEEDExplainer(k=1, groups=GROUPS, **FAST), "regression", "outputs"),
    "sointer-multilabel-model": (
        SOInterExplainer(target=1, k=2, energy=EnergyNet(max_epochs=2,
                                                                 module=EnergyMLP(hidden_units=(16,))),
                         energy_masks=1, **FAST), "multilabel", "model"),
    "sointer-groups-draws-multilabel-model": (
        SOInterExplainer(target=0, k=1, groups=GROUPS, fill="draws", n_draws=2, append_mask=False,
                         energy_masks=1, **FAST), "multilabel", "model"),
    "evalx-regression": (EvalXEvaluator(baseline=BASELINE, **FAST), "regression", "outputs"),
    "evalx-classifier-model": (EvalXEvaluator(baseline="zero", **FAST), "classification", "model"),
}


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    X = rng.randn(300, 8).astype(np.float32)
    y_class = (X[:, 0] - X[:, 2] > 0).astype(int)
    y_real = X[:, 0] + 2 * X[:, 2] + 0.1 * rng.randn(300)
    labels = np.c_[y_class, X[:, 1] + X[:, 3] > 0]
    models = {
        "classification": LogisticRegression().fit(X, y_class),
        "regression": LinearRegression().fit(X, y_real),
        "multilabel": MultiOutputClassifier(LogisticRegression()).fit(X, labels),
    }
    outputs = {task: model.predict(X) for task, model in models.items()}
    masks = (rng.rand(300, 8) < 0.5).astype(np.float32)
    return X, outputs, models, masks


@pytest.fixture(scope="module")
def saved(data, tmp_path_factory):
    """Every case fitted once and saved: {case: (estimator, path, task, fitted on)}."""
    X, outputs, models, _ = data
    folder = tmp_path_factory.mktemp("saved")
    fitted = {}
    for case, (estimator, task, fitted_on) in CASES.items():
        estimator = copy.deepcopy(estimator)
        if fitted_on == "model":
            estimator.fit(X, black_box=models[task])
        else:
            estimator.fit(X, outputs[task])
        path = folder / f"{case}.safetensors"
        save(estimator, path)
        fitted[case] = (estimator, path, task, fitted_on)
    return fitted


def _rewrite(path, new_path, *, doc=None, tensors=None):
    """A copy of a saved file with its JSON document and tensors changed."""
    with safe_open(os.fspath(path), framework="pt") as file:
        metadata = file.metadata()
    document = json.loads(metadata["sk_sointer"])
    stored = load_file(os.fspath(path))
    if doc is not None:
        doc(document)
    if tensors is not None:
        tensors(stored)
    save_file(stored, os.fspath(new_path), metadata={"sk_sointer": json.dumps(document)})
    return new_path


def _comparable(value):
    """Parameters in a form ``==`` compares by value: factories (and other configuration
    objects) by their parameters."""
    if hasattr(value, "get_params") and not isinstance(value, type):
        return (type(value).__name__, _comparable(value.get_params()))
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.tolist())
    if isinstance(value, dict):
        return {key: _comparable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_comparable(item) for item in value)
    if isinstance(value, np.random.RandomState):
        kind, keys, *rest = value.get_state(legacy=True)
        return ("RandomState", kind, keys.tolist(), *rest)
    return value


# Round trips
# -----------


@pytest.mark.parametrize("case", CASES)
def test_loaded_estimator_gives_identical_answers(case, saved, data):
    X, outputs, _, masks = data
    original, path, task, _ = saved[case]
    loaded = load(path)
    assert type(loaded) is type(original)
    assert loaded.black_box_ is None
    y = outputs[task]
    np.testing.assert_array_equal(
        loaded.predict_masked(X, masks), original.predict_masked(X, masks)
    )
    if isinstance(original, EvalXEvaluator):
        assert loaded.score_masks(X, masks, y) == original.score_masks(X, masks, y)
        return
    np.testing.assert_array_equal(loaded.explain(X), original.explain(X))
    np.testing.assert_array_equal(loaded.transform(X), original.transform(X))
    np.testing.assert_array_equal(
        loaded.transform(X.astype(np.float64)), original.transform(X.astype(np.float64))
    )
    if original.black_box_ is None:
        assert loaded.score(X, y) == original.score(X, y)


@pytest.mark.parametrize("case", [case for case, spec in CASES.items() if spec[2] == "model"])
def test_black_box_given_to_load_scores_post_hoc_fidelity(case, saved, data):
    X, outputs, models, masks = data
    original, path, task, _ = saved[case]
    without = load(path)
    judged = copy.copy(original)
    judged.black_box_ = None
    if isinstance(original, EvalXEvaluator):
        with pytest.raises(ValueError, match="outputs only"):
            without.score_masks(X, masks)
        loaded = load(path, black_box=models[task])
        assert loaded.score_masks(X, masks) == original.score_masks(X, masks)
    elif isinstance(original, SOInterExplainer):  # it scores with the model only
        with pytest.raises(ValueError, match="has no black box"):
            without.score(X)
        loaded = load(path, black_box=models[task])
        assert loaded.score(X) == original.score(X)
    else:
        with pytest.raises(ValueError, match="outputs only"):
            without.score(X)
        # Without the model, the outputs given as y are scored with the method's own judge.
        assert without.score(X, outputs[task]) == judged.score(X, outputs[task])
        loaded = load(path, black_box=models[task])
        assert loaded.score(X) == original.score(X)
    assert loaded.black_box_.model is models[task]


@pytest.mark.parametrize("case", CASES)
def test_loaded_parameters_and_fitted_state_equal_the_saved(case, saved):
    original, path, _, _ = saved[case]
    loaded = load(path)
    shallow = original.get_params(deep=False)
    assert _comparable(loaded.get_params(deep=False)) == _comparable(shallow)
    assert _comparable(loaded.get_params(deep=True)) == _comparable(original.get_params(deep=True))
    assert loaded.n_features_in_ == original.n_features_in_
    assert getattr(loaded, "k_", "absent") == getattr(original, "k_", "absent")
    for name in ("mean_", "scale_", "baseline_", "baseline_scaled_", "groups_", "n_groups_"):
        expected, got = getattr(original.masker_, name), getattr(loaded.masker_, name)
        np.testing.assert_array_equal(got, expected)
        assert np.asarray(got).dtype == np.asarray(expected).dtype
    spec, loaded_spec = original.output_spec_, loaded.output_spec_
    assert loaded_spec == spec  # kinds, blocks and target
    np.testing.assert_array_equal(loaded_spec.center, spec.center)
    np.testing.assert_array_equal(loaded_spec.scale, spec.scale)
    assert (loaded_spec.classes is None) == (spec.classes is None)
    # Networks: the same modules, the same weights, on the CPU.
    for name in original.net_._modules:
        expected = getattr(original.net_, name + "_").state_dict()
        got = getattr(loaded.net_, name + "_").state_dict()
        assert list(got) == list(expected)
        for key in expected:
            assert torch.equal(got[key], expected[key].cpu())
            assert got[key].device.type == "cpu"


@pytest.mark.filterwarnings("error:X does not have valid feature names:UserWarning")
def test_names_labels_output_config_and_training_options_round_trip(tmp_path):
    pd = pytest.importorskip("pandas")
    rng = np.random.RandomState(3)
    X = pd.DataFrame(rng.randn(200, 4), columns=["age", "bmi", "bp", "s1"])
    y = np.where(X["age"] > 0, "yes", "no")
    random_state = np.random.RandomState(7)
    expl = L2XExplainer(k=2, max_epochs=2, batch_size=64, random_state=random_state,
                        device="cpu", optimizer=torch.optim.AdamW, train_split=0.2,
                        selector=MLP(hidden_units=(16,), activation="tanh", dropout=0.1))
    expl.fit(X, y).set_output(transform="pandas")
    save(expl, tmp_path / "named.safetensors")
    loaded = load(tmp_path / "named.safetensors")
    np.testing.assert_array_equal(loaded.feature_names_in_, expl.feature_names_in_)
    assert loaded.feature_names_in_.dtype == expl.feature_names_in_.dtype
    np.testing.assert_array_equal(loaded.output_spec_.classes[0], ["no", "yes"])
    assert loaded.output_spec_.classes[0].dtype == expl.output_spec_.classes[0].dtype
    masks = loaded.transform(X)
    assert list(masks.columns) == ["age", "bmi", "bp", "s1"]
    pd.testing.assert_frame_equal(masks, expl.transform(X))
    assert loaded.score(X, y) == expl.score(X, y)
    assert loaded.optimizer is torch.optim.AdamW
    assert loaded.train_split == 0.2
    assert _comparable(loaded.random_state) == _comparable(random_state)
    assert _comparable(loaded.get_params()) == _comparable(expl.get_params())


def test_load_runs_no_unpickler_and_warns_nothing(saved, data, monkeypatch):
    X = data[0]
    original, path, _, _ = saved["l2x-classifier-model"]

    def refuse(*args, **kwargs):
        raise AssertionError("load must not unpickle")

    for module in (pickle, _pickle):
        for name in ("load", "loads", "Unpickler"):
            monkeypatch.setattr(module, name, refuse)
    monkeypatch.setattr(torch, "load", refuse)
    monkeypatch.setattr(torch.serialization, "load", refuse)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = load(path)
        masks = loaded.transform(X)
    np.testing.assert_array_equal(masks, original.transform(X))


def test_load_leaves_the_callers_random_state_alone(saved):
    _, path, _, _ = saved["realx-k2-regressor-model"]
    state = torch.get_rng_state()
    load(path)
    assert torch.equal(torch.get_rng_state(), state)


def test_saved_device_parameter_is_kept_and_the_net_loads_on_the_requested_device(
    saved, data, tmp_path
):
    X = data[0]
    original, _, _, _ = saved["realx-k-none-groups-regression"]
    on_gpu = copy.copy(original)
    on_gpu.device = "cuda"  # as if trained on a GPU: the next fit would use one
    save(on_gpu, tmp_path / "gpu.safetensors")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = load(tmp_path / "gpu.safetensors")
    assert loaded.device == "cuda"
    assert loaded.net_.device == torch.device("cpu")
    assert {p.device.type for p in loaded.net_.predictor_.parameters()} == {"cpu"}
    np.testing.assert_array_equal(loaded.explain(X), original.explain(X))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_model_trained_on_cuda_loads_on_a_machine_without_it(data, tmp_path):
    X, outputs, _, _ = data
    expl = L2XExplainer(k=2, **{**FAST, "device": "cuda"}).fit(X, outputs["classification"])
    path = tmp_path / "cuda.safetensors"
    save(expl, path)
    scores, rows = str(tmp_path / "scores.npy"), str(tmp_path / "X.npy")
    np.save(rows, X)
    # Warnings become errors once the imports are done (what the installed packages warn
    # while importing is not the load's): loading must raise none.
    script = (
        "import warnings, numpy as np, torch\n"
        "from sk_sointer import load\n"
        "assert not torch.cuda.is_available()\n"
        "warnings.simplefilter('error')\n"
        f"e = load({str(path)!r})\n"
        f"np.save({scores!r}, e.explain(np.load({rows!r})))\n"
    )
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, "-c", script], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    np.testing.assert_allclose(np.load(scores), expl.explain(X), atol=1e-5)
    on_gpu = load(path, device="cuda")
    assert on_gpu.net_.module_[0].weight.device.type == "cuda"
    np.testing.assert_array_equal(on_gpu.explain(X), expl.explain(X))


@pytest.mark.parametrize("estimator", ["l2x", "sointer"])
def test_a_pickle_from_a_cuda_machine_unpickles_on_the_cpu_silently(estimator, data,
                                                                    monkeypatch):
    """skorch would warn twice (loading to the CPU, then resetting ``device``); the nets of
    the explainers and of the energy network move to the CPU without a word."""
    X, outputs, models, _ = data
    if estimator == "l2x":
        fitted = L2XExplainer(k=2, **FAST).fit(X, outputs["classification"])
        nets = [fitted.net_]
    else:
        fitted = SOInterExplainer(target=0, k=2, energy=EnergyNet(max_epochs=2),
                                  energy_masks=1, **FAST).fit(X, models["multilabel"])
        nets = [fitted.net_, fitted.energy_net_.net_]
    for net in nets:  # as if trained on a GPU: the device a CUDA fit records
        net.device = "cuda"
    blob = pickle.dumps(fitted)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = pickle.loads(blob)
    np.testing.assert_array_equal(loaded.transform(X), fitted.transform(X))
    assert loaded.net_.device == "cpu"


# The file
# --------


def test_file_holds_tensors_and_a_json_document(saved):
    original, path, _, _ = saved["l2x-groups-regression"]
    with safe_open(os.fspath(path), framework="pt") as file:
        document = json.loads(file.metadata()["sk_sointer"])
        names = set(file.keys())
    assert document["format_version"] == 1
    assert document["class"] == "L2XExplainer"
    assert document["params"]["selector"] == {
        "factory": "MLP",
        "params": {"activation": "relu", "batch_norm": False, "dropout": 0.0,
                   "hidden_units": {"tuple": [100, 100]}, "zero_output": True},
    }
    assert document["params"]["groups"]["ndarray"] == GROUPS.tolist()
    # The attributes every explainer has (a method may add its own, such as training records).
    shared = {"k_": 2, "n_features_in_": 8, "image_shape_": None, "row_shape_": None,
              "n_tokens_": None}
    assert {name: document["attributes"].get(name, "absent") for name in shared} == shared
    assert document["masker"] == {"n_groups_": 4}
    assert document["output_spec"] == {"kinds": ["real"], "blocks": [[0, 1]], "classes": None,
                                       "target": None}
    assert document["net"] == {"selector_in_features": 8, "input_shape": [8]}
    module_names = {f"net_.module_.{key}" for key in original.net_.module_.state_dict()}
    judge_names = {f"net_.approximator_.{key}" for key in original.net_.approximator_.state_dict()}
    assert names == module_names | judge_names | {
        "masker_.mean_", "masker_.scale_", "masker_.baseline_", "masker_.baseline_scaled_",
        "masker_.groups_", "output_spec_.center", "output_spec_.scale",
    }


# Errors
# ------


def test_save_refuses_a_custom_factory(data, tmp_path):
    X, outputs, _, _ = data

    def linear(in_features, out_features):
        return nn.Linear(in_features, out_features)

    expl = L2XExplainer(k=2, selector=linear, max_epochs=1).fit(X, outputs["classification"])
    with pytest.raises(ValueError, match="cannot store parameter 'selector'.*MLP"):
        save(expl, tmp_path / "custom.safetensors")

    class WiderMLP(MLP):
        pass

    expl = L2XExplainer(k=2, approximator=WiderMLP(), max_epochs=1)
    expl.fit(X, outputs["classification"])
    with pytest.raises(ValueError, match="parameter 'approximator'"):
        save(expl, tmp_path / "subclass.safetensors")
    assert not (tmp_path / "custom.safetensors").exists()


@pytest.mark.parametrize("name, value", [
    ("callbacks", [EarlyStopping()]),
    ("train_split", lambda dataset, y: (dataset, None)),
    ("optimizer", lambda params, lr: torch.optim.SGD(params, lr)),
])
def test_save_refuses_code_in_training_options(name, value, saved, tmp_path):
    expl = copy.copy(saved["l2x-classifier-model"][0]).set_params(**{name: value})
    with pytest.raises(ValueError, match=f"cannot store parameter '{name}'"):
        save(expl, tmp_path / "options.safetensors")


def test_save_refuses_unfitted_estimators_and_subclasses(saved, tmp_path):
    with pytest.raises(NotFittedError):
        save(L2XExplainer(), tmp_path / "unfitted.safetensors")

    class MyExplainer(L2XExplainer):
        pass

    fitted = saved["l2x-classifier-model"][0]
    subclassed = MyExplainer(**fitted.get_params(deep=False))
    vars(subclassed).update({k: v for k, v in vars(fitted).items() if k.endswith("_")})
    with pytest.raises(ValueError, match="package's own estimators.*MyExplainer"):
        save(subclassed, tmp_path / "subclass.safetensors")


def _set(key, value):
    return lambda document: document.__setitem__(key, value)


@pytest.mark.parametrize("edit, message", [
    (_set("format_version", 2), "format version 2.*upgrade sk_sointer"),
    (_set("format_version", "1"), "invalid format version '1'"),
    (_set("class", "BlackBox"), "class 'BlackBox' is not one that sk_sointer.load builds"),
    (_set("class", "os.system"), "class 'os.system' is not one"),
    (_set("class", "MLP"), "class 'MLP' is not one"),
    (lambda d: d["params"]["selector"].__setitem__("factory", "builtins.eval"),
     "network factory 'builtins.eval'"),
    (lambda d: d["params"].__setitem__("k", {"factory": "MLP", "params": {"bad": 1}}),
     "invalid parameters"),
    (lambda d: d["params"].__setitem__("steal", 1), r"unknown parameters \['steal'\]"),
    (lambda d: d["params"].__setitem__("k", -1), "'k' parameter"),
    (lambda d: d["params"].__setitem__("optimizer", {"optimizer": "os.system"}),
     "not a value sk_sointer.save writes"),
    (lambda d: d["attributes"].__setitem__("__class__", 1), "invalid fitted attribute name"),
    (lambda d: d["output_spec"].__setitem__("kinds", ["poisson"]), "output spec is invalid"),
])
def test_load_refuses_a_tampered_document(edit, message, saved, tmp_path):
    path = _rewrite(saved["l2x-groups-regression"][1], tmp_path / "tampered.safetensors", doc=edit)
    with pytest.raises(ValueError, match=message):
        load(path)


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.pop("net_.module_.0.weight"), r"lacks the tensors \['net_.module_.0.weight'\]"),
    (lambda t: t.pop("net_.approximator_.2.running_var"), "net_.approximator_.2.running_var"),
    (lambda t: t.pop("masker_.mean_"), "lacks the tensor 'masker_.mean_'"),
    (lambda t: t.__setitem__("net_.module_.9.weight", torch.zeros(2)),
     r"holds tensors \['net_.module_.9.weight'\]"),
    (lambda t: t.__setitem__("net_.module_.0.weight", torch.zeros(3, 3)),
     "'net_.module_.0.weight' of .* has shape \\(3, 3\\)"),
    (lambda t: t.__setitem__("masker_.scale_", torch.ones(3, dtype=torch.float64)),
     "'masker_.scale_' has shape \\(3,\\)"),
])
def test_load_refuses_missing_extra_or_misshapen_tensors(edit, message, saved, tmp_path):
    path = _rewrite(saved["l2x-groups-regression"][1], tmp_path / "tampered.safetensors",
                    tensors=edit)
    with pytest.raises(ValueError, match=message):
        load(path)


def test_load_refuses_files_from_elsewhere(tmp_path):
    save_file({"weight": torch.zeros(2, 2)}, tmp_path / "other.safetensors",
              metadata={"format": "pt"})
    with pytest.raises(ValueError, match="not written by sk_sointer.save"):
        load(tmp_path / "other.safetensors")
    (tmp_path / "model.pkl").write_bytes(pickle.dumps({"weights": [1, 2]}))
    with pytest.raises(ValueError, match="not a safetensors file"):
        load(tmp_path / "model.pkl")


def test_load_refuses_a_black_box_of_another_width(saved, tmp_path):
    _, path, _, _ = saved["l2x-classifier-model"]
    X = np.random.RandomState(0).randn(50, 3)
    other = LogisticRegression().fit(X, X[:, 0] > 0)
    with pytest.raises(ValueError, match="takes 3 features.*fitted on 8"):
        load(path, black_box=other)


# Untrusted files: sizes checked before anything is allocated (issue 25)
# ----------------------------------------------------------------------


def _nested(depth):
    value = 1
    for _ in range(depth):
        value = [value]
    return value


def _hidden_units(units):
    return lambda d: d["params"]["selector"]["params"].__setitem__(
        "hidden_units", {"tuple": units})


def _huge_classes(d):
    # 50 one-letter labels declared as strings of ten million characters: 2 GB as an array.
    d["output_spec"]["classes"] = {"tuple": [
        {"ndarray": ["a"] * 50, "dtype": "<U10000000", "shape": [50]}]}


# Each edit once made load allocate gigabytes (or fail in the allocator) before a check.
HUGE = {
    "hidden-units": (_hidden_units([40000, 40000]), "do not build|expects"),
    "string-dtype": (_huge_classes, r"declares arrays of 2,000,0\d\d,\d{3} bytes in"),
    "n-features": (lambda d: d["attributes"].__setitem__("n_features_in_", 10**12),
                   r"n_features_in_=1000000000000 does not match .* shape \(8,\)"),
    "n-groups": (lambda d: d["masker"].__setitem__("n_groups_", 10**9),
                 "n_groups_=1000000000 for n_features_in_=8"),
    "input-shape": (lambda d: d["net"].__setitem__("input_shape", [10**6, 10**6]),
                    "input shape"),
    "selector-width": (lambda d: d["net"].__setitem__("selector_in_features", 10**12),
                       "selector_in_features=1000000000000"),
}


@pytest.mark.parametrize("case", HUGE)
def test_load_refuses_sizes_that_disagree_with_the_tensors(case, saved, tmp_path):
    edit, message = HUGE[case]
    path = _rewrite(saved["l2x-classifier-model"][1], tmp_path / f"{case}.safetensors", doc=edit)
    with pytest.raises(ValueError, match=message):
        load(path)


def test_load_stays_within_a_small_multiple_of_the_file_under_a_memory_limit(saved, tmp_path):
    # In a process whose address space may grow by at most 128 MB once sk_sointer is
    # imported, the files above must be refused with load's own ValueError (not a
    # MemoryError or an allocator error; before the checks the first took 6.5 GB and the
    # second 2.4 GB), and the untouched file must load.
    source = saved["l2x-classifier-model"][1]
    paths = [str(_rewrite(source, tmp_path / f"{case}.safetensors", doc=HUGE[case][0]))
             for case in HUGE]
    script = (
        "import json, resource, sys\n"
        # The public names are imported on first use: import them before the limit.
        "import sk_sointer, sk_sointer._persist, torch\n"
        "torch.set_num_threads(1)\n"
        "size = int(open('/proc/self/statm').read().split()[0]) * resource.getpagesize()\n"
        "resource.setrlimit(resource.RLIMIT_AS, (size + 2**27, resource.RLIM_INFINITY))\n"
        "found = []\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n"
        "        sk_sointer.load(path)\n"
        "        found.append('loaded')\n"
        "    except BaseException as exc:\n"
        "        found.append(type(exc).__name__)\n"
        "print(json.dumps(found))\n"
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", script, *paths, str(source)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == ["ValueError"] * len(HUGE) + ["loaded"]


def _params(**values):
    return lambda d: d["params"].update(values)


def _attribute(name, value):
    return lambda d: d["attributes"].__setitem__(name, value)


@pytest.mark.parametrize("edit, message", [
    # Once a raw AttributeError, IndexError, RecursionError or torch error each.
    (_params(callbacks=["x"]), r"callbacks \['x'\]; sk_sointer.save writes none"),
    (_params(random_state={"random_state": {"keys": [1, 2], "pos": 0, "has_gauss": 0,
                                            "cached_gaussian": 0.0}}), "624 words"),
    (_params(tau=_nested(40)), "nested more than 32 levels"),
    (lambda d: d["masker"].__setitem__("n_groups_", -1), "n_groups_=-1"),
    (lambda d: d["masker"].__setitem__("n_groups_", 3), "n_groups_=3 without feature groups"),
    (lambda d: d["attributes"].pop("k_"), r"lacks the fitted attributes \['k_'\]"),
    (_attribute("k_", 0), "k_=0 should be None or an int"),
    (_attribute("k_", True), "k_=True should be None or an int"),
    (_attribute("row_shape_", {"tuple": [3, 3]}), r"row_shape_=\(3, 3\) does not hold"),
    (_attribute("n_tokens_", 5), "n_tokens_=5 does not match tokens=False"),
    (lambda d: d["output_spec"].__setitem__("blocks", [[1, 3]]), "column blocks"),
    (lambda d: d["output_spec"].__setitem__("target", 4), "invalid target 4"),
    (lambda d: d["output_spec"].__setitem__("classes", {"tuple": [
        {"ndarray": ["a", "b", "c"], "dtype": "<U1", "shape": [3]}]}),
     "classes that do not match"),
    # Found by the fuzz tests: names that are not strings once raised TypeError.
    (lambda d: d["params"]["selector"].__setitem__("factory", []), "not a value sk_sointer"),
    (_params(optimizer={"optimizer": [1]}), "not a value sk_sointer.save writes"),
    (lambda d: d.__setitem__("class", "SOInterExplainer"),
     r"gives SOInterExplainer unknown parameters \['approximator', 'tokens'\]"),
])
def test_load_refuses_damaged_documents_with_a_message(edit, message, saved, tmp_path):
    path = _rewrite(saved["l2x-classifier-model"][1], tmp_path / "damaged.safetensors", doc=edit)
    with pytest.raises(ValueError, match=message):
        load(path)


def test_load_refuses_json_nested_beyond_the_parser(saved, tmp_path):
    # Deeper than Python's recursion limit: json.loads itself once raised RecursionError.
    source = saved["l2x-classifier-model"][1]
    with safe_open(os.fspath(source), framework="pt") as file:
        text = file.metadata()["sk_sointer"]
    text = text.replace('"tau": ', '"tau": ' + "[" * 100_000 + "1" + "]" * 100_000 + ", \"x\": ", 1)
    save_file(load_file(os.fspath(source)), tmp_path / "deep.safetensors",
              metadata={"sk_sointer": text})
    with pytest.raises(ValueError, match="nested more than 32 levels"):
        load(tmp_path / "deep.safetensors")


def test_load_refuses_one_class_with_another_class_s_fitted_state(saved, tmp_path):
    # HardKuma's parameters with the fitted attributes of a REAL-X explainer.
    path = _rewrite(saved["hardkuma-groups-regression"][1], tmp_path / "mixed.safetensors",
                    doc=lambda d: d["attributes"].pop("selection_rate_"))
    with pytest.raises(ValueError, match=r"lacks the fitted attributes \['selection_rate_'\]"):
        load(path)


def test_load_refuses_non_finite_weights(saved, tmp_path):
    def poison(tensors):
        tensors["net_.module_.0.weight"][0, 0] = float("nan")

    path = _rewrite(saved["l2x-classifier-model"][1], tmp_path / "nan.safetensors",
                    tensors=poison)
    with pytest.raises(ValueError, match="'net_.module_.0.weight' of .* NaN or infinite"):
        load(path)
    path = _rewrite(saved["l2x-classifier-model"][1], tmp_path / "inf.safetensors",
                    tensors=lambda t: t["masker_.scale_"].__setitem__(0, float("inf")))
    with pytest.raises(ValueError, match="'masker_.scale_' holds NaN or infinite"):
        load(path)


def test_load_and_save_paths_get_clear_errors(saved, data, tmp_path):
    X = data[0]
    original, path, _, _ = saved["l2x-classifier-model"]
    with pytest.raises(IsADirectoryError, match="is not a file"):
        load(tmp_path)
    with pytest.raises(FileNotFoundError, match="No such file"):
        load(tmp_path / "absent.safetensors")
    # A bytes path is a path, as everywhere in Python's file APIs.
    loaded = load(os.fsencode(os.fspath(path)))
    np.testing.assert_array_equal(loaded.transform(X), original.transform(X))
    with pytest.raises(TypeError, match="path should be a str, bytes or os.PathLike; got int"):
        load(3)
    with pytest.raises(FileNotFoundError, match="the folder .*missing does not exist"):
        save(original, tmp_path / "missing" / "l2x.safetensors")


def test_a_sointer_energy_net_with_callbacks_is_refused_in_one_line(tmp_path):
    from sklearn.multioutput import MultiOutputClassifier

    from sk_sointer import EnergyNet, SOInterExplainer

    rng = np.random.RandomState(0)
    X = rng.randn(60, 4).astype(np.float32)
    labels = np.c_[X[:, 0] > 0, X[:, 1] > 0].astype(int)
    model = MultiOutputClassifier(LogisticRegression()).fit(X, labels)
    expl = SOInterExplainer(target=0, k=1, max_epochs=1,
                            energy=EnergyNet(max_epochs=1, callbacks=[EarlyStopping(monitor="train_loss")]),
                            energy_masks=1, random_state=0, device="cpu")
    expl.fit(X, black_box=model)
    with pytest.raises(ValueError) as info:
        save(expl, tmp_path / "sointer.safetensors")
    message = str(info.value)
    assert message.startswith("sk_sointer.save cannot store parameter 'energy' (EnergyNet's "
                              "'callbacks')")
    assert "\n" not in message
    assert not (tmp_path / "sointer.safetensors").exists()


def test_a_clustering_model_fitted_on_float64_is_given_back_to_load(tmp_path):
    """load asks the model about the baseline row as fit does, in float64: KMeans fitted on
    float64 refuses float32 rows ("Buffer dtype mismatch"), which load reported as a black
    box that does not answer."""
    from sklearn.cluster import KMeans

    rng = np.random.RandomState(0)
    X = rng.randn(120, 4)
    X[:60, 0] += 8.0
    kmeans = KMeans(2, n_init=3, random_state=0).fit(X)
    explainer = L2XExplainer(k=1, random_state=0, max_epochs=3).fit(X, kmeans)
    path = tmp_path / "kmeans.safetensors"
    save(explainer, path)
    loaded = load(path, black_box=kmeans)
    np.testing.assert_array_equal(loaded.transform(X), explainer.transform(X))
    assert loaded.score(X) == explainer.score(X)


# Pickling
# --------


def _unpicklable(model):
    return lambda rows: model.predict_proba(rows)  # noqa: E731 - lambdas do not pickle


def test_pickling_leaves_the_live_explainer_its_black_box(linear_rows):
    X, y, model = linear_rows
    expl = L2XExplainer(k=2, max_epochs=2, random_state=0).fit(X, black_box=_unpicklable(model))
    before = expl.score(X)
    with pytest.warns(UserWarning, match="cannot be pickled and is left out"):
        loaded = pickle.loads(pickle.dumps(expl))
    with pytest.warns(UserWarning, match="cannot be pickled"):
        copy.deepcopy(expl)
    assert expl.black_box_ is not None and expl.score(X) == before
    assert loaded.black_box_ is None
    np.testing.assert_array_equal(loaded.transform(X), expl.transform(X))


def test_evalx_with_an_unpicklable_black_box_pickles_with_a_warning(linear_rows):
    X, y, model = linear_rows
    evaluator = EvalXEvaluator(max_epochs=2, random_state=0).fit(X, black_box=_unpicklable(model))
    with pytest.warns(UserWarning, match="cannot be pickled and is left out"):
        loaded = pickle.loads(pickle.dumps(evaluator))
    assert evaluator.black_box_ is not None and loaded.black_box_ is None
    masks = np.ones_like(X)
    np.testing.assert_allclose(loaded.predict_masked(X, masks), evaluator.predict_masked(X, masks))
