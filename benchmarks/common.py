"""Harness for the benchmarks: black boxes, explainers, per-row peers, metrics and reports.

For every synthetic data set the harness trains one black box (an sklearn MLP) on sampled
labels, then asks each method to explain the same held-out rows of that model:

- ours (``L2XExplainer``, ``RealXExplainer``) are fitted once on the training rows and the
  black box, then explain by a forward pass of their selector;
- the per-row peers (shap's KernelExplainer, LIME, captum's Saliency, IntegratedGradients and
  KernelShap on a torch copy of the MLP) explain each row from scratch; their mask is the
  top-k of ``|attribution|``.

Every mask is judged the same way: agreement with the ground truth (L2X's median rank,
INVASE's TPR / FDR, REAL-X's control-flow selection rate), post-hoc accuracy of the black box
on ``x * mask`` and, where ``sk_sointer.metrics.EvalXEvaluator`` exists, EVAL-X's eACC from
one evaluator per data set. Times are measured in the same run: fit seconds, explanation
milliseconds per row, and for our explainers the throughput of ``transform`` relative to a
bare forward pass of the selector network (the cost of the scikit-learn wrapper).

A failing method is recorded with an ``error`` field and the run goes on.
"""

import datetime
import importlib.metadata
import json
import math
import os
import platform
import textwrap
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import sklearn
import torch
from sklearn.neural_network import MLPClassifier
from sklearn.utils.validation import check_is_fitted
from threadpoolctl import threadpool_limits
from torch import nn

import sk_sointer
from sk_sointer import datasets, metrics

RESULTS_DIR = Path(__file__).resolve().parent / "results"

README_START = ".. results-table-start"
README_END = ".. results-table-end"

OURS = ("l2x", "realx")
PEERS = ("shap_kernel", "lime", "saliency", "integrated_gradients", "captum_kernel_shap")

METHOD_LABELS = {
    "l2x": "L2X",
    "realx": "REAL-X",
    "shap_kernel": "KernelSHAP (shap)",
    "lime": "LIME",
    "saliency": "Saliency (captum)",
    "integrated_gradients": "IG (captum)",
    "captum_kernel_shap": "KernelSHAP (captum)",
}

# The package each peer needs; a peer whose package is missing is skipped, not failed.
_PEER_PACKAGES = {
    "shap_kernel": "shap",
    "lime": "lime",
    "saliency": "captum",
    "integrated_gradients": "captum",
    "captum_kernel_shap": "captum",
}

# Seeds of the independent draws of every data set.
TRAIN_SEED, EXPLAIN_SEED, TIMING_SEED, BLACK_BOX_SEED = 0, 1, 2, 3


# Profiles and data sets
# ----------------------


@dataclass(frozen=True)
class Profile:
    """How much data and training a run uses.

    ``explainer_params`` overrides parameters of our explainers and of the EVAL-X evaluator,
    by method (``"l2x"``, ``"realx"``, ``"evalx"``); the full profile leaves every default
    alone, so its numbers are those of the package as shipped.

    ``n_black_box`` rows train the black box (``None``: the explainers' ``n_train`` rows).
    The ground-truth metrics judge explanations of the black box against the data's
    generator, so the full profile trains the black box on more rows than the explainers
    see: a black box fitted on 10,000 noisy labels blurs the switch of the control-flow
    sets, and any faithful explanation of it then keeps the other regime's features near
    the switch.
    """

    name: str
    n_train: int
    n_explain: int
    n_timing: int = 10_000
    n_black_box: int | None = None
    timing_repeats: int = 7
    explainer_params: dict = field(default_factory=dict)
    shap_nsamples: int = 200
    lime_num_samples: int = 5000
    captum_kernel_shap_samples: int = 200


PROFILES = {
    "fast": Profile(
        name="fast",
        n_train=2_000,
        n_explain=200,
        explainer_params={
            "l2x": {"max_epochs": 30, "batch_size": 200},
            "realx": {"max_epochs": 30, "predictor_epochs": 15},
            "evalx": {"max_epochs": 30},
        },
        lime_num_samples=500,
    ),
    "full": Profile(name="full", n_train=10_000, n_explain=1_000, n_black_box=50_000),
}


@dataclass(frozen=True)
class DatasetSpec:
    """A synthetic data set and the k its masks are judged with.

    ``base`` names the data set whose rows and black box are used (the encoding probe reuses
    XOR's); ``probe`` marks the encoding probe, which runs our explainers only.
    """

    name: str
    label: str
    make: object
    params: dict
    k: int
    control_flow: bool = False
    base: str = ""
    probe: bool = False

    @property
    def data_key(self):
        return self.base or self.name

    def draw(self, n_samples, seed, *, return_proba=False):
        return self.make(n_samples, random_state=seed, return_proba=return_proba, **self.params)


# k of the L2X paper's synthetic sets, and REAL-X's choice of k for L2X on S1-S3 (Table 1).
DATASETS = {
    spec.name: spec
    for spec in [
        DatasetSpec("xor", "XOR", datasets.make_xor, {}, 2),
        DatasetSpec("orange_skin", "Orange skin", datasets.make_orange_skin, {}, 4),
        DatasetSpec("additive_paper", "Additive (paper)", datasets.make_nonlinear_additive,
                    {"variant": "paper"}, 4),
        DatasetSpec("additive_code", "Additive (code)", datasets.make_nonlinear_additive,
                    {"variant": "code"}, 4),
        DatasetSpec("switch_paper", "Switch (paper)", datasets.make_switch,
                    {"variant": "paper"}, 5),
        DatasetSpec("switch_code", "Switch (code)", datasets.make_switch, {"variant": "code"}, 5),
        DatasetSpec("S1", "S1", datasets.make_control_flow, {"setting": "S1"}, 4,
                    control_flow=True),
        DatasetSpec("S2", "S2", datasets.make_control_flow, {"setting": "S2"}, 4,
                    control_flow=True),
        DatasetSpec("S3", "S3", datasets.make_control_flow, {"setting": "S3"}, 5,
                    control_flow=True),
        # REAL-X's Lemma 1: with k = 1 on XOR no single feature says anything about the
        # label, so a predictor that does better than chance reads the choice of feature.
        DatasetSpec("xor_probe", "XOR, k = 1 (encoding probe)", datasets.make_xor, {}, 1,
                    base="xor", probe=True),
    ]
}


# The black box and its torch copy
# --------------------------------


def fit_black_box(X, y, *, random_state=0):
    """The MLP every method explains, trained on sampled labels."""
    return MLPClassifier(
        hidden_layer_sizes=(200, 200, 200), early_stopping=True, random_state=random_state
    ).fit(X, y)


_ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "logistic": nn.Sigmoid, "identity": nn.Identity}


class _BinaryProba(nn.Module):
    """Both class probabilities from sklearn's single logistic output unit (class 1)."""

    def forward(self, logit):
        positive = torch.sigmoid(logit)
        return torch.cat([1 - positive, positive], dim=1)


def mlp_to_torch(model):
    """A ``torch.nn.Sequential`` computing ``model.predict_proba`` with the same weights.

    captum's gradient and sampling methods need a torch model; the copy returns the
    probabilities of every class (two columns for a binary problem), in float32.
    """
    check_is_fitted(model)
    if not isinstance(model, MLPClassifier):
        raise TypeError(f"mlp_to_torch needs a fitted MLPClassifier; got {type(model).__name__}.")
    layers = []
    n_layers = len(model.coefs_)
    for i, (weight, bias) in enumerate(zip(model.coefs_, model.intercepts_)):
        linear = nn.Linear(*weight.shape)
        with torch.no_grad():
            # sklearn computes X @ W, torch X @ W.T.
            linear.weight.copy_(torch.as_tensor(weight.T))
            linear.bias.copy_(torch.as_tensor(bias))
        layers.append(linear)
        if i < n_layers - 1:
            layers.append(_ACTIVATIONS[model.activation]())
    if model.out_activation_ == "softmax":
        layers.append(nn.Softmax(dim=1))
    elif model.out_activation_ == "logistic" and model.n_outputs_ == 1:
        layers.append(_BinaryProba())
    else:
        raise ValueError(
            f"mlp_to_torch supports binary and multiclass classifiers; got output activation "
            f"{model.out_activation_!r} with {model.n_outputs_} outputs (multilabel)."
        )
    return nn.Sequential(*layers).eval()


def check_torch_copy(model, net, X, *, atol=1e-5):
    """Raise when the torch copy's probabilities differ from ``predict_proba`` by > atol."""
    with torch.inference_mode():
        copied = net(torch.as_tensor(X, dtype=torch.float32)).numpy()
    gap = float(np.max(np.abs(copied - model.predict_proba(X))))
    if gap > atol:
        raise RuntimeError(f"The torch copy of the black box differs by {gap:.2e} > {atol}.")
    return gap


# Timing
# ------


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def best_time(func, repeats, *, warmup=2):
    """Smallest wall time of ``repeats`` calls after ``warmup`` untimed ones, in seconds."""
    return best_times([func], repeats, warmup=warmup)[0]


def best_times(funcs, repeats, *, warmup=2):
    """Smallest wall time of each function, timed in turn within every repeat.

    On a shared machine the load drifts during a run; taking turns exposes the functions
    being compared to the same drift, so their ratio is fairer than two separate series.
    """
    for _ in range(warmup):
        for func in funcs:
            func()
    best = [math.inf] * len(funcs)
    for _ in range(repeats):
        for i, func in enumerate(funcs):
            start = time.perf_counter()
            func()
            best[i] = min(best[i], time.perf_counter() - start)
    return best


def throughput_ratio(explainer, X, *, repeats=7):
    """Time of a bare selector forward pass over time of ``transform``, on the same rows.

    Both see float32 rows: the bare pass a tensor already on the selector's device under
    ``torch.inference_mode()``, ``transform`` the same rows as a numpy array, so the ratio
    measures what validation, device transfers and top-k/threshold cost on top of the
    network. 1.0 means the wrapper is free; values a little above 1 are timing noise.
    """
    module = explainer.net_.module_.eval()
    param = next(module.parameters(), None)
    device = param.device if param is not None else torch.device("cpu")
    X32 = np.ascontiguousarray(X, dtype=np.float32)
    X_t = torch.as_tensor(X32, device=device)

    def forward():
        with torch.inference_mode():
            module(X_t)
        _sync(device)

    forward_s, transform_s = best_times([forward, lambda: explainer.transform(X32)], repeats)
    return forward_s / transform_s, forward_s, transform_s


# Masks and metrics
# -----------------


def topk_of_abs(attributions, k):
    """k-hot masks of the largest ``|attribution|``; ties go to the lower index."""
    order = np.argsort(-np.abs(attributions), axis=1, kind="stable")[:, :k]
    masks = np.zeros(attributions.shape, dtype=np.float32)
    np.put_along_axis(masks, order, 1.0, axis=1)
    return masks


def posthoc_accuracy(model, X, masks):
    """L2X's post-hoc accuracy: the black box's class on ``x * mask`` equals its class on x.

    The package's own metric is used once it exists, so the two cannot drift apart.
    """
    package_metric = getattr(metrics, "posthoc_accuracy", None)
    if package_metric is not None:
        return float(package_metric(model, X, masks))
    return float(np.mean(model.predict(X * masks) == model.predict(X)))


def mask_quality(spec, data, masks, evaluator):
    """Ground-truth, post-hoc and EVAL-X metrics of one method's masks."""
    relevant = data.relevant_explain
    out = {
        "median_rank": metrics.median_rank(relevant, masks),
        "median_rank_optimum": float(np.mean((relevant.sum(axis=1) + 1) / 2)),
        "tpr": metrics.true_positive_rate(relevant, masks),
        "fdr": metrics.false_discovery_rate(relevant, masks),
        "mean_selected": float(np.mean((masks > 0).sum(axis=1))),
        "posthoc_acc": posthoc_accuracy(data.model, data.X_explain, masks),
    }
    if spec.control_flow:
        out["cfsr"] = metrics.control_flow_selection_rate(masks)
    if evaluator is not None:
        scores = evaluator.score_masks(data.X_explain, masks, y=data.y_explain)
        out.update(eacc=scores.get("eACC"), eauroc=scores.get("eAUROC"), enll=scores.get("eNLL"))
        # The same accuracy in expectation over the labels: the generator's probability of
        # EVAL-X's predicted class, which removes the noise of the sampled labels.
        predicted = evaluator.predict_masked(data.X_explain, masks)[:, 1] > 0.5
        out["eacc_expected"] = float(np.mean(
            np.where(predicted, data.proba_explain, 1 - data.proba_explain)
        ))
    return out


# Per data set: rows, black box, evaluator
# ----------------------------------------


@dataclass
class _Data:
    X_train: np.ndarray
    X_explain: np.ndarray
    y_explain: np.ndarray
    proba_explain: np.ndarray
    relevant_explain: np.ndarray
    X_timing: np.ndarray
    model: MLPClassifier
    torch_model: nn.Module
    black_box_fit_s: float
    black_box_acc: float
    evaluator: object = None
    evaluator_fit_s: float = None
    evaluator_error: str = None


def _prepare(spec, profile, device, needs_evaluator):
    X_train, y_train, _ = spec.draw(profile.n_train, TRAIN_SEED)
    X_explain, y_explain, relevant, proba_explain = spec.draw(
        profile.n_explain, EXPLAIN_SEED, return_proba=True
    )
    X_timing, _, _ = spec.draw(profile.n_timing, TIMING_SEED)
    if profile.n_black_box:
        X_black_box, y_black_box, _ = spec.draw(profile.n_black_box, BLACK_BOX_SEED)
    else:
        X_black_box, y_black_box = X_train, y_train
    start = time.perf_counter()
    model = fit_black_box(X_black_box, y_black_box, random_state=TRAIN_SEED)
    fit_s = time.perf_counter() - start
    torch_model = mlp_to_torch(model)
    check_torch_copy(model, torch_model, X_explain)
    data = _Data(
        X_train=X_train,
        X_explain=X_explain,
        y_explain=y_explain,
        proba_explain=proba_explain,
        relevant_explain=relevant,
        X_timing=X_timing,
        model=model,
        torch_model=torch_model.to(device),
        black_box_fit_s=fit_s,
        black_box_acc=float(np.mean(model.predict(X_explain) == y_explain)),
    )
    if needs_evaluator:
        _fit_evaluator(data, profile, device)
    return data


def _settable(estimator, params):
    """The subset of ``params`` that ``estimator`` accepts (its API is still settling)."""
    known = estimator.get_params()
    return {key: value for key, value in params.items() if key in known}


def _fit_evaluator(data, profile, device):
    evaluator_class = getattr(metrics, "EvalXEvaluator", None)
    if evaluator_class is None:
        return
    evaluator = evaluator_class()
    params = {"random_state": TRAIN_SEED, "device": device.type,
              **profile.explainer_params.get("evalx", {})}
    evaluator.set_params(**_settable(evaluator, params))
    try:
        start = time.perf_counter()
        evaluator.fit(data.X_train, black_box=data.model)
        data.evaluator_fit_s = time.perf_counter() - start
        data.evaluator = evaluator
    except Exception as exc:  # noqa: BLE001 - recorded; the methods still run without eACC
        data.evaluator_error = _describe(exc)


# Methods
# -------


def available_methods(methods=None):
    """The requested methods that can run here, and the skipped ones with the reason."""
    methods = list(methods or OURS + PEERS)
    runnable, skipped = [], {}
    for method in methods:
        if method == "realx" and not hasattr(sk_sointer, "RealXExplainer"):
            skipped[method] = "sk_sointer.RealXExplainer is not available"
            continue
        package = _PEER_PACKAGES.get(method)
        if package is not None:
            try:
                __import__(package)
            except ImportError as exc:
                skipped[method] = f"{package} is not importable ({exc})"
                continue
        runnable.append(method)
    return runnable, skipped


def method_k(method, spec):
    """The k a method's masks have on a data set; None for a thresholded selection.

    REAL-X keeps its own thresholded selection on S1-S3, as in REAL-X's Table 1; everywhere
    else every method is judged with the data set's k (for the peers: the top-k of
    ``|attribution|``; on S1-S3, the k of L2X in that table).
    """
    return None if method == "realx" and spec.control_flow else spec.k


def _our_explainer(method, spec, profile, device):
    params = {"random_state": TRAIN_SEED, "device": device.type,
              **profile.explainer_params.get(method, {})}
    explainer_class = sk_sointer.L2XExplainer if method == "l2x" else sk_sointer.RealXExplainer
    return explainer_class(k=method_k(method, spec), **params)


def _run_ours(method, spec, data, profile, device):
    explainer = _our_explainer(method, spec, profile, device)
    start = time.perf_counter()
    explainer.fit(data.X_train, black_box=data.model)
    fit_s = time.perf_counter() - start
    masks = explainer.transform(data.X_explain)
    explain_s = best_time(lambda: explainer.transform(data.X_explain), 3, warmup=0)
    ratio, forward_s, transform_s = throughput_ratio(
        explainer, data.X_timing, repeats=profile.timing_repeats
    )
    own = _own_predictor(explainer, data, masks)
    # The defaults are still being tuned, so every record keeps the values it ran with.
    params = {name: value for name, value in explainer.get_params(deep=False).items()
              if isinstance(value, (bool, int, float, str, type(None)))}
    return masks, {
        "params": params,
        "fit_s": fit_s,
        "explain_ms_per_row": 1000 * explain_s / len(data.X_explain),
        "explain_timing": "best of 3",
        "throughput_ratio": ratio,
        "forward_ms": 1000 * forward_s,
        "transform_ms": 1000 * transform_s,
        "n_timing": len(data.X_timing),
        **own,
    }


def _median_rank_with_seed(method, spec, data, profile, device, seed):
    explainer = _our_explainer(method, spec, profile, device).set_params(random_state=seed)
    explainer.fit(data.X_train, black_box=data.model)
    return metrics.median_rank(data.relevant_explain, explainer.transform(data.X_explain))


def _own_predictor(explainer, data, masks):
    """The method's own predictor on its own masks (L2X's approximator, REAL-X's predictor).

    Agreement is with the black box's class, which that predictor was trained to match;
    accuracy is with the true label, comparable with EVAL-X's eACC.
    """
    X_t = torch.as_tensor(np.asarray(data.X_explain, dtype=np.float32))
    predicted = explainer._predict_masked(X_t, torch.as_tensor(masks)).cpu().numpy()
    predicted_class = predicted.argmax(axis=1)
    return {
        "own_agreement": float(np.mean(predicted_class == data.model.predict(data.X_explain))),
        "own_acc": float(np.mean(predicted_class == data.y_explain)),
    }


def _run_peer(method, spec, data, profile, device):
    runner = {"shap_kernel": _run_shap, "lime": _run_lime}.get(method, _run_captum)
    attributions, setup_s, explain_s = runner(method, data, profile, device)
    return topk_of_abs(attributions, spec.k), {
        "fit_s": None,
        "setup_s": setup_s,
        "explain_ms_per_row": 1000 * explain_s / len(data.X_explain),
        "explain_timing": "single run",
    }


def _run_shap(method, data, profile, device):
    import shap

    start = time.perf_counter()
    background = shap.kmeans(data.X_train, 10)
    explainer = shap.KernelExplainer(lambda rows: data.model.predict_proba(rows)[:, 1],
                                     background)
    setup_s = time.perf_counter() - start
    np.random.seed(EXPLAIN_SEED)  # KernelExplainer samples coalitions from numpy's generator
    start = time.perf_counter()
    values = explainer.shap_values(data.X_explain, nsamples=profile.shap_nsamples, silent=True)
    explain_s = time.perf_counter() - start
    return np.asarray(values).reshape(data.X_explain.shape), setup_s, explain_s


def _run_lime(method, data, profile, device):
    from lime.lime_tabular import LimeTabularExplainer

    X = data.X_explain
    start = time.perf_counter()
    explainer = LimeTabularExplainer(data.X_train, mode="classification",
                                     random_state=EXPLAIN_SEED)
    setup_s = time.perf_counter() - start
    attributions = np.zeros(X.shape)
    start = time.perf_counter()
    for i, row in enumerate(X):
        explanation = explainer.explain_instance(
            row, data.model.predict_proba, num_features=X.shape[1], labels=(1,),
            num_samples=profile.lime_num_samples,
        )
        for j, weight in explanation.as_map()[1]:
            attributions[i, j] = weight
    explain_s = time.perf_counter() - start
    return attributions, setup_s, explain_s


def _run_captum(method, data, profile, device):
    from captum.attr import IntegratedGradients, KernelShap, Saliency

    net = data.torch_model
    X_t = torch.as_tensor(np.asarray(data.X_explain, dtype=np.float32), device=device)
    X_t.requires_grad_(method == "saliency")  # else Saliency warns that it had to set it
    torch.manual_seed(EXPLAIN_SEED)  # KernelShap samples coalitions from torch's generator
    start = time.perf_counter()
    if method == "saliency":
        attributions = Saliency(net).attribute(X_t, target=1, abs=True)
    elif method == "integrated_gradients":
        attributions = IntegratedGradients(net).attribute(X_t, target=1)
    else:
        kernel_shap = KernelShap(net)
        n_samples = profile.captum_kernel_shap_samples
        # One row at a time: captum fits one surrogate per row anyway, and warns on batches.
        attributions = torch.cat([
            kernel_shap.attribute(X_t[i : i + 1], target=1, n_samples=n_samples,
                                  perturbations_per_eval=n_samples)
            for i in range(X_t.shape[0])
        ])
    _sync(X_t.device)
    explain_s = time.perf_counter() - start
    return attributions.detach().cpu().numpy(), 0.0, explain_s


# The run
# -------

RECORD_FIELDS = (
    "profile", "dataset", "dataset_label", "method", "method_label", "k", "params",
    "n_features", "n_train", "n_black_box", "n_explain", "median_rank", "median_rank_optimum",
    "tpr", "fdr", "cfsr", "mean_selected", "posthoc_acc", "eacc", "eacc_expected", "eauroc",
    "enll", "own_agreement", "own_acc", "median_rank_seeds", "fit_s", "setup_s",
    "explain_ms_per_row", "explain_timing", "throughput_ratio", "forward_ms", "transform_ms",
    "n_timing", "black_box_acc", "black_box_fit_s", "evalx_fit_s", "evalx_error", "error",
    "traceback",
)


def _describe(exc):
    return f"{type(exc).__name__}: {exc}"


def _resolve_device(device):
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def run_benchmark(profile, *, dataset_names=None, methods=None, device="auto", threads=1,
                  seeds=1, on_record=None, log=None):
    """Run every (data set, method) pair and return one record (a dict) per pair.

    Parameters
    ----------
    profile : Profile or str
        A :class:`Profile` or a key of :data:`PROFILES`.
    dataset_names : list of str, default=None
        Keys of :data:`DATASETS`; all of them by default.
    methods : list of str, default=None
        Among :data:`OURS` and :data:`PEERS`; all that can run here by default. Peers do
        not run on the encoding probe.
    device : {"auto", "cpu", "cuda"}, default="auto"
        Where our explainers, the EVAL-X evaluator and the captum copy of the MLP run.
    threads : int, default=1
        torch and BLAS threads for the whole run.
    seeds : int, default=1
        Fit each of our explainers with this many seeds (0, 1, ...). Every metric comes
        from seed 0; the record also lists the median rank of every seed
        (``median_rank_seeds``), which shows how much one seed's number is a draw.
    on_record : callable, default=None
        Called with the list of records so far after each one, e.g. to save progress.
    log : callable, default=None
        Called with one line of progress text at a time.
    """
    if isinstance(profile, str):
        profile = PROFILES[profile]
    log = log or (lambda line: None)
    device = _resolve_device(device)
    methods, skipped = available_methods(methods)
    for method, reason in skipped.items():
        log(f"skipping {method}: {reason}")
    specs = [DATASETS[name] for name in (dataset_names or DATASETS)]
    evaluated = {spec.data_key for spec in specs if spec.control_flow or spec.probe}

    records, prepared = [], {}
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with threadpool_limits(limits=threads):
            for spec in specs:
                if spec.data_key not in prepared:
                    log(f"{spec.data_key}: black box")
                    prepared[spec.data_key] = _prepare_or_error(
                        DATASETS[spec.data_key], profile, device, spec.data_key in evaluated
                    )
                data, data_error = prepared[spec.data_key]
                for method in [m for m in methods if m in OURS or not spec.probe]:
                    log(f"{spec.name}: {method}")
                    records.append(
                        _run_one(spec, method, data, data_error, profile, device, seeds)
                    )
                    if on_record is not None:
                        on_record(records)
    finally:
        torch.set_num_threads(previous_threads)
    return records


def _prepare_or_error(spec, profile, device, needs_evaluator):
    """``(data, None)``, or ``(None, exception)``: every method of the set is then failed."""
    try:
        return _prepare(spec, profile, device, needs_evaluator), None
    except Exception as exc:  # noqa: BLE001 - recorded in each of the set's records
        return None, exc


def _run_one(spec, method, data, data_error, profile, device, seeds=1):
    record = dict.fromkeys(RECORD_FIELDS)
    record.update(profile=profile.name, dataset=spec.name, dataset_label=spec.label,
                  method=method, method_label=METHOD_LABELS[method], k=method_k(method, spec),
                  n_train=profile.n_train, n_explain=profile.n_explain,
                  n_black_box=profile.n_black_box or profile.n_train)
    if data_error is not None:
        record.update(error=f"data set: {_describe(data_error)}",
                      traceback=_short_traceback(data_error))
        return record
    record.update(n_features=data.X_explain.shape[1], black_box_acc=data.black_box_acc,
                  black_box_fit_s=data.black_box_fit_s, evalx_fit_s=data.evaluator_fit_s,
                  evalx_error=data.evaluator_error)
    try:
        runner = _run_ours if method in OURS else _run_peer
        masks, timing = runner(method, spec, data, profile, device)
        record.update(timing)
        record.update(mask_quality(spec, data, masks, data.evaluator))
        if method in OURS and seeds > 1:
            record["median_rank_seeds"] = [record["median_rank"]] + [
                _median_rank_with_seed(method, spec, data, profile, device, TRAIN_SEED + seed)
                for seed in range(1, seeds)
            ]
    except Exception as exc:  # noqa: BLE001 - one failed method must not end the run
        record.update(error=_describe(exc), traceback=_short_traceback(exc))
    return record


def _short_traceback(exc, lines=8):
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return "\n".join(text.rstrip().splitlines()[-lines:])


# Machine description and saving
# ------------------------------


def _cpu_name():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info(device="auto", threads=1):
    """Versions, hardware and date of a run, stored next to its records."""
    device = _resolve_device(device)
    info = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "scikit_learn": sklearn.__version__,
        "sk_sointer": sk_sointer.__version__,
        "threads": threads,
        "cpu": _cpu_name(),
        "cpu_count": os.cpu_count(),
        "device": device.type,
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        "has_evalx": hasattr(metrics, "EvalXEvaluator"),
    }
    for package in ("shap", "lime", "captum"):
        try:
            info[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            info[package] = None
    return info


def _jsonable(value):
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    return value


def save_results(path, records, machine, profile):
    """Write ``{"machine", "profile", "records"}`` as JSON, atomically (a crash keeps the
    previous complete file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"machine": machine, "profile": _profile_dict(profile), "records": records}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(_jsonable(payload), indent=1, allow_nan=False) + "\n",
                   encoding="utf-8")
    os.replace(tmp, path)


def load_records(path):
    """The records of a results file written by :func:`save_results`."""
    return json.loads(Path(path).read_text(encoding="utf-8"))["records"]


def merge_records(kept, new):
    """``kept`` records not redone in ``new``, then ``new``, in data set order."""
    redone = {(record["dataset"], record["method"]) for record in new}
    merged = [r for r in kept if (r["dataset"], r["method"]) not in redone] + list(new)
    order = {name: i for i, name in enumerate(DATASETS)}
    return sorted(merged, key=lambda record: order.get(record["dataset"], len(order)))


def _profile_dict(profile):
    return {key: getattr(profile, key) for key in profile.__dataclass_fields__}


# Reports
# -------

_DASH = "–"


def _pct(value):
    return _DASH if value is None else f"{100 * value:.1f}"


def _num(value, fmt):
    return _DASH if value is None else format(value, fmt)


def _method_cell(record):
    label = record["method_label"]
    if record["method"] in OURS:
        label += " (thresholded)" if record["k"] is None else f" (k = {record['k']})"
    return label


def _grid_table(title, header, rows):
    """An RST grid table under a ``table`` directive; a newline in a cell starts a new line."""
    split = [[cell.split("\n") for cell in row] for row in [header, *rows]]
    widths = [max(len(text) for cell in column for text in cell) for column in zip(*split)]

    def border(char):
        return "+" + "+".join(char * (width + 2) for width in widths) + "+"

    def lines(cells):
        height = max(len(cell) for cell in cells)
        padded = [cell + [""] * (height - len(cell)) for cell in cells]
        return ["|" + "|".join(f" {text:<{width}} " for text, width in zip(texts, widths)) + "|"
                for texts in zip(*padded)]

    body = [border("-"), *lines(split[0]), border("=")]
    for cells in split[1:]:
        body += [*lines(cells), border("-")]
    return [f".. table:: {title}", "", *("   " + text for text in body)]


# The cause is in the JSON record; a long message would widen the whole column.
_FAILED = "failed"


def render_rst(records, machine, profile):
    """RST text for the README: a caption, the main table and the encoding-probe table."""
    if isinstance(profile, str):
        profile = PROFILES[profile]
    main = [r for r in records if not DATASETS[r["dataset"]].probe]
    probe = [r for r in records if DATASETS[r["dataset"]].probe]
    threads = f"{machine['threads']} thread" + ("s" if machine["threads"] != 1 else "")
    hardware = machine["gpu"] or f"{machine['cpu']} CPU, {threads}"
    caption = (
        f"Profile ``{profile.name}``: black boxes (MLP 200-200-200) trained on "
        f"{profile.n_black_box or profile.n_train:,} rows, explainers and EVAL-X on "
        f"{profile.n_train:,}, {profile.n_explain:,} explained rows per data set; run on {machine['date'][:10]} "
        f"on {hardware}, torch {machine['torch']}. Median rank: lower is better, the optimum "
        "in parentheses. TPR, FDR, CFSR (control-flow selection rate) and eACC (EVAL-X "
        "accuracy against the sampled labels) in %; eACC (p): the same accuracy in "
        "expectation over the labels (the generator's probability of EVAL-X's class), "
        "free of label noise; eAUROC: EVAL-X's AUROC. Peers select the k largest absolute attributions, with the k of "
        "L2X; IG: integrated gradients. Explain: milliseconds per row. Throughput: time of a bare "
        f"forward pass of the selector over time of ``transform``, on {profile.n_timing:,} "
        "rows (1.0 = no overhead)."
    )
    lines = [*textwrap.wrap(caption, width=92), ""]
    header = ["Data set", "Method", "Median rank\n(optimum)", "TPR %", "FDR %", "CFSR %",
              "eACC %", "eACC (p)\n%", "eAUROC", "Fit s", "Explain\nms/row", "Throughput"]
    rows = []
    for i, r in enumerate(main):
        # The data set is named on the first of its rows only.
        dataset = r["dataset_label"] if i == 0 or main[i - 1]["dataset"] != r["dataset"] else ""
        if r["error"] is not None:
            rows.append([dataset, _method_cell(r), _FAILED, *[_DASH] * 9])
            continue
        rows.append([
            dataset,
            _method_cell(r),
            f"{r['median_rank']:.2f} ({r['median_rank_optimum']:.2f})",
            _pct(r["tpr"]),
            _pct(r["fdr"]),
            _pct(r["cfsr"]),
            _pct(r["eacc"]),
            _pct(r.get("eacc_expected")),
            _num(r["eauroc"], ".3f"),
            _num(r["fit_s"], ".3g"),
            _num(r["explain_ms_per_row"], ".3g"),
            _num(r["throughput_ratio"], ".2f"),
        ])
    lines += _grid_table("Synthetic data sets", header, rows)
    spread = [r for r in main if r.get("median_rank_seeds")]
    if spread:
        lines += ["", "Median rank over explainer seeds (the table shows seed 0):", ""]
        for r in spread:
            ranks = r["median_rank_seeds"]
            lines.append(
                f"- {r['method_label']} on {r['dataset_label']}: mean {np.mean(ranks):.2f} "
                f"over {len(ranks)} seeds ({', '.join(f'{rank:.2f}' for rank in ranks)})"
            )
    if probe:
        probe_caption = (
            "Encoding probe: XOR with k = 1. One feature alone says nothing about the XOR "
            "label, so an honest 1-feature explanation leaves an evaluator trained on random "
            "masks (EVAL-X) near 50 %; a method's own predictor that does better reads the "
            "label from *which* feature was chosen (REAL-X, Lemma 1)."
        )
        lines += ["", *textwrap.wrap(probe_caption, width=92), ""]
        header = ["Method", "Own predictor\nacc. %", "Own predictor\n= black box %", "eACC %",
                  "Post-hoc\nacc. %", "TPR %"]
        rows = []
        for r in probe:
            if r["error"] is not None:
                rows.append([_method_cell(r), _FAILED, *[_DASH] * 4])
                continue
            rows.append([_method_cell(r), _pct(r["own_acc"]), _pct(r["own_agreement"]),
                         _pct(r["eacc"]), _pct(r["posthoc_acc"]), _pct(r["tpr"])])
        lines += _grid_table("Encoding probe (XOR, k = 1)", header, rows)
    return "\n".join(lines) + "\n"


def replace_between_markers(text, block):
    """``text`` with the lines between README_START and README_END replaced by ``block``."""
    lines = text.splitlines(keepends=True)
    stripped = [line.rstrip("\r\n") for line in lines]
    try:
        start = stripped.index(README_START)
        end = stripped.index(README_END, start + 1)
    except ValueError:
        raise ValueError(
            f"The README needs a line {README_START!r} followed by a line {README_END!r}."
        ) from None
    return "".join(lines[: start + 1]) + "\n" + block.rstrip("\n") + "\n\n" + "".join(lines[end:])


def update_readme(path, block):
    path = Path(path)
    path.write_text(replace_between_markers(path.read_text(encoding="utf-8"), block),
                    encoding="utf-8")

