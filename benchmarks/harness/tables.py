"""Real tables: our explainers against the best global subset, the per-row peers and a
per-row search, on tables that ship with installed packages and the models people fit them.

A *pair* is a table and a black box fitted on 70 % of its rows (split once, stratified for
one-output classification); a *cell* is a pair and a k. Every pair is explained with k = 3
and k ≈ 20 % of its features (one cell when they coincide), and once with the thresholded
selection (``k=None``) of the methods that have one (REAL-X, HardKuma).

Every mask set is judged on the same explained test rows, as ``score`` judges an
explainer's (:func:`fidelity`): the black box on the row with the left-out features at the
training mean (the masker of a fitted explainer) against the black box on the full row, by
class agreement (classification) or R² (regression), averaged over the outputs of a
multi-output model. The mask sets:

- ours, from the registry (:data:`.registry.METHODS`), at the defaults of the package
  unless the profile overrides them, fitted with ``random_state`` 0, 1, ...: the mean over
  seeds and the spread (max − min);
- **random**: k random features a row (the thresholded methods: as many as the method
  kept in that row), mean over ``profile.n_random`` draws;
- **global**: one k-subset for every row, chosen by greedy forward selection on the
  training rows by the same fidelity (one search to the largest k; the subset of a
  smaller k is its first features);
- **KernelSHAP** and **LIME**: the top-k of ``|attribution|`` of the explained output
  (:mod:`.peers`), one run per pair;
- **oracle**: per row, the greedy search of :func:`sk_sointer._search.greedy_subsets`
  (the model queried ``sum_{j<k} (d - j)`` times a row), the ceiling of a per-row search.

Each also gets EVAL-X's score (:class:`~sk_sointer.metrics.EvalXEvaluator`, one per pair,
trained on random masks of the training rows against the black box): eACC, or eR² for a
regressor. A gain in fidelity that EVAL-X does not confirm comes from off-distribution
artefacts of the baseline fill. Times: fit seconds, microseconds per row of ``transform``
(on ``profile.n_timing`` rows), milliseconds per row of the peers and the oracle.

:func:`add_gaps` adds each method's gap to the best global subset and to KernelSHAP, and
:func:`acceptance` counts the cells failing each check of the issue; :func:`render_rst`
draws the tables.
"""

import dataclasses
import textwrap
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch
from sklearn import datasets as sk_datasets
from sklearn.base import is_classifier
from sklearn.calibration import CalibratedClassifierCV
from sklearn.ensemble import (
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.multioutput import MultiOutputClassifier
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

from sk_sointer import ModelRefinement, as_black_box
from sk_sointer._outputs import output_agreement
from sk_sointer._search import greedy_subsets
from sk_sointer._utils import resolve_device
from sk_sointer.metrics import random_masks

from .data import EXPLAIN_SEED, TRAIN_SEED, fit_evaluator
from .ours import build_explainer, recorded_params
from .peers import topk_of_abs
from .registry import METHODS as REGISTRY
from .registry import available_methods
from .report import _grid_table
from .study import describe, short_traceback
from .timing import best_time

SPLIT_SEED = 0
OURS = ("l2x", "realx", "meed", "hardkuma")
THRESHOLDED = ("realx", "hardkuma")
PEERS = ("shap_kernel", "lime")
METHODS = (*OURS, *PEERS)  # what ``--methods`` picks from
RANDOM, GLOBAL, ORACLE = "random", "global", "oracle"
REFERENCE_LABELS = {RANDOM: "Random", GLOBAL: "Best global subset", ORACLE: "Per-row greedy"}

RECORD_FIELDS = (
    "profile", "table", "table_label", "black_box", "black_box_label", "task", "n_outputs",
    "n_features", "n_train", "n_test", "n_explain", "black_box_score", "black_box_fit_s",
    "k", "method", "method_label", "kind", "seeds", "params",
    "fidelity", "fidelity_seeds", "fidelity_spread",
    "eval_x", "eval_x_seeds", "eval_x_metric",
    "n_distinct_masks", "n_distinct_masks_seeds", "mean_selected", "empty_rate",
    "random_same_sizes", "gap_global", "gap_kernel_shap", "eval_x_gap_kernel_shap",
    "gap_random", "fit_s", "transform_us_per_row", "setup_s", "explain_ms_per_row",
    "queries_per_row", "evalx_fit_s", "evalx_error", "error", "traceback",
)


# Tables and black boxes
# ----------------------


@dataclass(frozen=True)
class Table:
    """A table that ships with an installed package: ``load()`` gives ``(X, y)``."""

    name: str
    label: str
    load: Callable


def _sklearn_table(loader, **params):
    def load():
        X, y = loader(return_X_y=True, **params)
        return np.asarray(X, dtype=np.float64), y
    return load


def _load_digits_two_labels():
    # Two labels of the digit: even, and at least 5 (a multi-output black box).
    X, digit = sk_datasets.load_digits(return_X_y=True)
    return X.astype(np.float64), np.column_stack([digit % 2 == 0, digit >= 5]).astype(np.int64)


def _river_table(name):
    def load():
        # The files ship inside the river package; nothing is downloaded.
        from river import datasets as river_datasets

        rows = list(getattr(river_datasets, name)())
        X = np.array([[float(value) for value in x.values()] for x, _ in rows])
        y = np.array([label for _, label in rows])
        return X, (y.astype(np.int64) if y.dtype == bool else y)
    return load


TABLES = {
    table.name: table
    for table in [
        Table("breast_cancer", "Breast cancer", _sklearn_table(sk_datasets.load_breast_cancer)),
        Table("wine", "Wine", _sklearn_table(sk_datasets.load_wine)),
        # In its own units (ages in years, blood pressure in mm Hg), not sklearn's scaling.
        Table("diabetes", "Diabetes (raw)", _sklearn_table(sk_datasets.load_diabetes,
                                                            scaled=False)),
        Table("digits", "Digits", _sklearn_table(sk_datasets.load_digits)),
        Table("digits_two_labels", "Digits: even, >= 5", _load_digits_two_labels),
        Table("phishing", "Phishing", _river_table("Phishing")),
        Table("image_segments", "Image segments", _river_table("ImageSegments")),
    ]
}


def _scaled(estimator):
    return make_pipeline(StandardScaler(), estimator)


@dataclass(frozen=True)
class Model:
    """A black box: ``make(random_state)`` gives the unfitted estimator."""

    label: str
    make: Callable


MODELS = {
    "rf": Model("Random forest", lambda seed: RandomForestClassifier(random_state=seed)),
    "hgb": Model("Hist. gradient boosting",
                 lambda seed: HistGradientBoostingClassifier(random_state=seed)),
    "gbr": Model("Gradient boosting", lambda seed: GradientBoostingRegressor(random_state=seed)),
    "lr": Model("Logistic regression (scaled)",
                lambda seed: _scaled(LogisticRegression(max_iter=5_000))),
    # SVC's probabilities by Platt scaling, as SVC(probability=True) (deprecated in
    # scikit-learn 1.9) gave them.
    "svc": Model("SVC (scaled)",
                 lambda seed: _scaled(CalibratedClassifierCV(SVC(), ensemble=False))),
    "mlp": Model("MLP (scaled)",
                 lambda seed: _scaled(MLPClassifier(max_iter=2_000, random_state=seed))),
    "knn": Model("KNN (scaled)", lambda seed: _scaled(KNeighborsClassifier())),
    "knn_regressor": Model("KNN (scaled)", lambda seed: _scaled(KNeighborsRegressor())),
    "rf_per_output": Model("Random forest per output",
                           lambda seed: MultiOutputClassifier(
                               RandomForestClassifier(random_state=seed))),
    "lr_per_output": Model("Logistic regression per output (scaled)",
                           lambda seed: _scaled(MultiOutputClassifier(
                               LogisticRegression(max_iter=5_000)))),
}

# Two black boxes a table, as a user would pick them; the last pair has two outputs.
FULL_PAIRS = (
    ("breast_cancer", "rf"), ("breast_cancer", "svc"), ("wine", "rf"), ("wine", "lr"),
    ("diabetes", "gbr"), ("diabetes", "knn_regressor"), ("digits", "mlp"),
    ("phishing", "hgb"), ("phishing", "knn"), ("image_segments", "hgb"),
    ("digits_two_labels", "rf_per_output"),
)


def ks_for(n_features):
    """k = 3 and k = 20 % of the features (rounded, at least 1), each once, ascending."""
    return sorted({min(3, n_features), max(1, round(0.2 * n_features))})


# Profiles
# --------


@dataclass(frozen=True)
class TablesProfile:
    """What a run covers and how much it spends.

    ``pairs`` are ``(table, black box)`` keys of :data:`TABLES` and :data:`MODELS`.
    ``n_explain`` test rows are explained (all of them when the table has fewer);
    ``max_train`` caps the training rows (``None``: the whole 70 %), ``global_rows`` the
    training rows the global search scores (``None``: all). ``explainer_params`` overrides
    parameters of our explainers (by registry ``params_key``) and of EVAL-X (``"evalx"``);
    the full profile leaves every default alone, so its numbers are those of the package
    as shipped. The peer fields are those :mod:`.peers` reads.
    """

    name: str
    pairs: tuple
    n_explain: int
    max_train: int = None
    seeds: int = 2
    n_random: int = 10
    global_rows: int = None
    n_timing: int = 10_000
    timing_repeats: int = 5
    explainer_params: dict = field(default_factory=dict)
    shap_nsamples: object = "auto"
    lime_num_samples: int = 5000

    def params_for(self, key):
        """The parameters this profile overrides for ``key`` (none: an empty dict)."""
        return dict(self.explainer_params.get(key, {}))


# Two epochs of the method's own objective and of the refinement against the model.
_FAST_EPOCHS = {"max_epochs": 2, "batch_size": 64, "refine": ModelRefinement(max_epochs=2)}

PROFILES = {
    "fast": TablesProfile(
        name="fast",
        # One pair of each kind: a classifier, a regressor, a two-output classifier.
        pairs=(("breast_cancer", "lr"), ("diabetes", "knn_regressor"),
               ("digits_two_labels", "lr_per_output")),
        n_explain=30, max_train=200, n_random=3, global_rows=100, n_timing=500,
        timing_repeats=1,
        explainer_params={"l2x": _FAST_EPOCHS, "meed": _FAST_EPOCHS, "hardkuma": _FAST_EPOCHS,
                          "realx": {**_FAST_EPOCHS, "predictor_epochs": 1},
                          "evalx": {"max_epochs": 2}},
        shap_nsamples=40, lime_num_samples=100,
    ),
    # Every pair, the whole tables, the defaults of the package and of the peers.
    "full": TablesProfile(name="full", pairs=FULL_PAIRS, n_explain=200),
}


# One pair's data
# ---------------


@dataclass(frozen=True)
class Cell:
    """One pair and one k (``None``: the method's own thresholded selection), as the
    registry's ``k_for`` and :func:`~.ours.build_explainer` read a data set."""

    table: str
    black_box: str
    k: int = None
    control_flow: bool = False  # no table here has REAL-X's control-flow feature


@dataclass
class Pair:
    """What every method of a pair shares; the peers read ``X_train``, ``X_explain`` and
    ``model``, EVAL-X's fit sets ``evaluator`` (or ``evaluator_error``)."""

    table: Table
    model_name: str
    X_train: np.ndarray
    X_test: np.ndarray
    X_explain: np.ndarray
    X_timing: np.ndarray
    model: object
    task: str
    n_outputs: int
    black_box_score: float
    black_box_fit_s: float
    evaluator: object = None
    evaluator_fit_s: float = None
    evaluator_error: str = None

    @property
    def n_features(self):
        return self.X_train.shape[1]

    @property
    def ks(self):
        return ks_for(self.n_features)


def prepare_pair(table_name, model_name, profile, device):
    """Load and split the table, fit the black box and the pair's EVAL-X evaluator."""
    table = TABLES[table_name]
    X, y = table.load()
    estimator = MODELS[model_name].make(TRAIN_SEED)
    stratify = y if is_classifier(estimator) and np.ndim(y) == 1 else None
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, random_state=SPLIT_SEED, stratify=stratify)
    if profile.max_train is not None:
        X_train, y_train = X_train[: profile.max_train], y_train[: profile.max_train]
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = estimator.fit(X_train, y_train)
    fit_s = time.perf_counter() - start
    # The package's own reading of the model's outputs: accuracy per output, or R².
    black_box = as_black_box(model)
    outputs = black_box.predict(X_test)
    spec = black_box.spec
    pair = Pair(
        table=table, model_name=model_name, X_train=X_train, X_test=X_test,
        X_explain=X_test[: profile.n_explain],
        X_timing=X_test[np.arange(profile.n_timing) % len(X_test)], model=model,
        task=spec.task, n_outputs=spec.n_outputs,
        black_box_score=output_agreement(spec.encode(y_test, len(X_test)), outputs, spec),
        black_box_fit_s=fit_s,
    )
    fit_evaluator(pair, profile, device)
    return pair


# Judging masks
# -------------


def fidelity(judge, X, masks):
    """What ``judge.score(X)`` measures, for any masks: the black box on
    ``masker_.mask_raw(X, masks)`` against the black box on ``X`` (class agreement or R²,
    mean over outputs), with the masker, output spec and black box of the fitted
    explainer ``judge``."""
    predict = judge.black_box_.predict
    masked = predict(judge.masker_.mask_raw(X, masks))
    return output_agreement(predict(X), masked, judge.output_spec_)


def eval_x(pair, masks):
    """EVAL-X's eACC (eR² for a regressor) of the masks, ``None`` without an evaluator."""
    if pair.evaluator is None:
        return None
    scores = pair.evaluator.score_masks(pair.X_explain, masks)
    return scores.get("eACC", scores.get("eR2"))


def eval_x_metric(pair):
    return "eR2" if pair.task == "regression" else "eACC"


def random_reference(judge, pair, sizes, profile):
    """Fidelity and EVAL-X of random masks with ``sizes`` features a row, mean over
    ``profile.n_random`` draws."""
    rng = np.random.RandomState(EXPLAIN_SEED)
    draws = [random_masks(len(sizes), pair.n_features, sizes, random_state=rng)
             for _ in range(profile.n_random)]
    judged = [eval_x(pair, masks) for masks in draws]
    return {
        "fidelity": float(np.mean([fidelity(judge, pair.X_explain, masks) for masks in draws])),
        "eval_x": None if judged[0] is None else float(np.mean(judged)),
        "mean_selected": float(np.mean(sizes)),
        "empty_rate": float(np.mean(np.asarray(sizes) == 0)),
    }


def global_order(judge, X, max_k):
    """Features in the order greedy forward selection adds them to one subset for all rows
    of ``X``, each the one whose addition gives the highest :func:`fidelity` (ties to the
    lower index)."""
    predict, spec = judge.black_box_.predict, judge.output_spec_
    n_rows, n_features = X.shape
    full = predict(X)
    chosen = np.zeros(n_features, dtype=bool)
    order = []
    for _ in range(max_k):
        # Every candidate subset on every row, in one query of the model.
        candidates = np.flatnonzero(~chosen)
        subsets = np.repeat(chosen[None], len(candidates), axis=0)
        subsets[np.arange(len(candidates)), candidates] = True
        masked = predict(judge.masker_.mask_raw(np.tile(X, (len(candidates), 1)),
                                                np.repeat(subsets, n_rows, axis=0)))
        scores = [output_agreement(full, block, spec)
                  for block in np.split(masked, len(candidates))]
        best = int(candidates[int(np.argmax(scores))])
        chosen[best] = True
        order.append(best)
    return order


def oracle_masks(judge, X, k):
    """Per row, the k features of the greedy search that queries the model itself."""
    groups = greedy_subsets(judge.black_box_.predict, X, judge.masker_, judge.output_spec_, k)
    return np.asarray(judge.masker_.expand(groups), dtype=np.float32)


def mask_fields(judge, pair, masks):
    """Fidelity, EVAL-X and the shape of one set of masks of the explained rows."""
    sizes = masks.sum(axis=1)
    return {
        "fidelity": fidelity(judge, pair.X_explain, masks),
        "eval_x": eval_x(pair, masks),
        "n_distinct_masks": len(np.unique(masks > 0, axis=0)),
        "mean_selected": float(np.mean(sizes)),
        "empty_rate": float(np.mean(sizes == 0)),
    }


# Records
# -------


def new_record(pair, profile, k, method, label, kind):
    record = dict.fromkeys(RECORD_FIELDS)
    record.update(
        profile=profile.name, table=pair.table.name, table_label=pair.table.label,
        black_box=pair.model_name, black_box_label=MODELS[pair.model_name].label,
        task=pair.task, n_outputs=pair.n_outputs, n_features=pair.n_features,
        n_train=len(pair.X_train), n_test=len(pair.X_test), n_explain=len(pair.X_explain),
        black_box_score=pair.black_box_score, black_box_fit_s=pair.black_box_fit_s,
        k=k, method=method, method_label=label, kind=kind, eval_x_metric=eval_x_metric(pair),
        evalx_fit_s=pair.evaluator_fit_s, evalx_error=pair.evaluator_error,
    )
    return record


def _failed(record, exc):
    record.update(error=describe(exc), traceback=short_traceback(exc))
    return record


def own_selection(spec):
    """The registry's ``k_for`` of a thresholded run: the method's own selection."""
    return None


def thresholded(method):
    """The registry entry ``method`` run with ``k=None``, as a method of its own."""
    return dataclasses.replace(method, name=f"{method.name}_thresholded",
                               label=f"{method.label} (k=None)", k_for=own_selection)


def summarize_seeds(runs):
    """Mean over seeds of every per-seed value; the per-seed fidelity, EVAL-X and distinct
    masks, and the spread of the fidelity (max − min)."""
    out = {key: None if runs[0][key] is None else float(np.mean([run[key] for run in runs]))
           for key in runs[0]}
    for key in ("fidelity", "eval_x", "n_distinct_masks"):
        out[f"{key}_seeds"] = [run[key] for run in runs]
    fidelities = out["fidelity_seeds"]
    out["fidelity_spread"] = float(max(fidelities) - min(fidelities))
    return out


def run_ours(method, pair, k, profile, device):
    """One of our methods on the pair at ``k``, fitted with every seed; its record and the
    seed-0 explainer (the judge of the pair's reference masks)."""
    cell = Cell(pair.table.name, pair.model_name, k)
    record = new_record(pair, profile, method.k_for(cell), method.name, method.label, "ours")
    seeds = [TRAIN_SEED + i for i in range(profile.seeds)]
    record["seeds"] = seeds
    runs, first = [], None
    try:
        for seed in seeds:
            explainer = build_explainer(method, cell, profile, device)
            explainer.set_params(random_state=seed)
            start = time.perf_counter()
            explainer.fit(pair.X_train, black_box=pair.model)
            fit_s = time.perf_counter() - start
            masks = explainer.transform(pair.X_explain)
            run = {**mask_fields(explainer, pair, masks), "fit_s": fit_s,
                   "fidelity": explainer.score(pair.X_explain)}
            if record["k"] is None:
                run["random_same_sizes"] = random_reference(
                    explainer, pair, masks.sum(axis=1).astype(int), profile)["fidelity"]
            runs.append(run)
            if first is None:
                first = explainer
        record.update(summarize_seeds(runs))
        record["params"] = {key: value for key, value in recorded_params(first).items()
                            if key != "random_state"}
        record["transform_us_per_row"] = 1e6 * best_time(
            lambda: first.transform(pair.X_timing), profile.timing_repeats, warmup=1
        ) / len(pair.X_timing)
    except Exception as exc:  # noqa: BLE001 - one failed method must not end the run
        _failed(record, exc)
    return record, first


def peer_attributions(name, pair, profile, device):
    """``(attributions, setup_s, explain_s)`` of a peer on the pair, or the exception."""
    try:
        with warnings.catch_warnings():
            # LIME's sparse regressions on rows a model answers alike; not ours to report.
            warnings.simplefilter("ignore", ConvergenceWarning)
            return REGISTRY[name].attribute(pair, profile, device)
    except Exception as exc:  # noqa: BLE001 - recorded in each of the peer's records
        return exc


def reference_records(pair, k, judge, order, attributions, profile):
    """The random, global, peer and oracle records of the pair at ``k``."""
    records = []

    def judged(method, label, kind, compute):
        record = new_record(pair, profile, k, method, label, kind)
        try:
            if judge is None:
                raise RuntimeError("no explainer of the pair was fitted, so no masker judges "
                                   "the masks (see the errors of our methods)")
            record.update(compute())
        except Exception as exc:  # noqa: BLE001 - one failed reference must not end the run
            _failed(record, exc)
        records.append(record)

    sizes = np.full(len(pair.X_explain), k)
    judged(RANDOM, REFERENCE_LABELS[RANDOM], "reference",
           lambda: random_reference(judge, pair, sizes, profile))

    def best_global():
        if isinstance(order, Exception):
            raise order
        masks = np.zeros(pair.X_explain.shape, dtype=np.float32)
        masks[:, order[:k]] = 1.0
        return {**mask_fields(judge, pair, masks), "params": {"features": order[:k]}}

    judged(GLOBAL, REFERENCE_LABELS[GLOBAL], "reference", best_global)

    for name, result in attributions.items():
        def peer(result=result):
            if isinstance(result, Exception):
                raise result
            values, setup_s, explain_s = result
            return {**mask_fields(judge, pair, topk_of_abs(values, k)), "setup_s": setup_s,
                    "explain_ms_per_row": 1000 * explain_s / len(pair.X_explain)}

        judged(name, REGISTRY[name].label, "peer", peer)

    def oracle():
        start = time.perf_counter()
        masks = oracle_masks(judge, pair.X_explain, k)
        explain_s = time.perf_counter() - start
        n_groups = judge.masker_.n_groups_
        return {**mask_fields(judge, pair, masks),
                "explain_ms_per_row": 1000 * explain_s / len(pair.X_explain),
                "queries_per_row": sum(n_groups - j for j in range(k))}

    judged(ORACLE, REFERENCE_LABELS[ORACLE], "reference", oracle)
    return records


def add_gaps(records):
    """Add to each of our records its gaps (fidelity points as fractions) to the best
    global subset and to KernelSHAP at the same k, EVAL-X's gap to KernelSHAP's, and for a
    thresholded run its gap to random masks of the same sizes."""
    by_key = {(r["table"], r["black_box"], r["k"], r["method"]): r for r in records}

    def gap(record, other, key="fidelity"):
        if other is None or other["error"] is not None or None in (record[key], other[key]):
            return None
        return record[key] - other[key]

    for r in records:
        if r["kind"] != "ours" or r["error"] is not None:
            continue
        if r["k"] is None:
            if r["random_same_sizes"] is not None:
                r["gap_random"] = r["fidelity"] - r["random_same_sizes"]
            continue
        cell = (r["table"], r["black_box"], r["k"])
        kernel_shap = by_key.get((*cell, "shap_kernel"))
        r["gap_global"] = gap(r, by_key.get((*cell, GLOBAL)))
        r["gap_kernel_shap"] = gap(r, kernel_shap)
        r["eval_x_gap_kernel_shap"] = gap(r, kernel_shap, "eval_x")
    return records


def run_pair(table_name, model_name, profile, methods, peer_names, device, log):
    """Every record of one pair: ours at each k, thresholded, then the references."""
    log(f"{table_name} / {model_name}: black box, EVAL-X")
    try:
        pair = prepare_pair(table_name, model_name, profile, device)
    except Exception as exc:  # noqa: BLE001 - every record of the pair carries the error
        record = dict.fromkeys(RECORD_FIELDS)
        record.update(profile=profile.name, table=table_name, black_box=model_name,
                      method="*", kind="pair")
        return [_failed(record, exc)]
    records, judge = [], None
    runs = [(REGISTRY[name], k) for k in pair.ks for name in methods]
    runs += [(thresholded(REGISTRY[name]), None) for name in methods if name in THRESHOLDED]
    for method, k in runs:
        log(f"{table_name} / {model_name} k={k}: {method.name}")
        record, explainer = run_ours(method, pair, k, profile, device)
        records.append(record)
        if judge is None:
            judge = explainer
    log(f"{table_name} / {model_name}: peers, global and per-row search")
    attributions = {name: peer_attributions(name, pair, profile, device) for name in peer_names}
    try:
        rows = pair.X_train[: profile.global_rows]
        order = global_order(judge, rows, max(pair.ks)) if judge is not None else None
    except Exception as exc:  # noqa: BLE001 - recorded in the global records
        order = exc
    for k in pair.ks:
        records += reference_records(pair, k, judge, order, attributions, profile)
    return add_gaps(records)


def run_benchmark(profile, *, methods=None, pairs=None, device="auto", threads=None,
                  on_record=None, log=None):
    """Run every pair of the profile (or ``pairs``) and return the records.

    Parameters
    ----------
    profile : TablesProfile or str
        A profile or a key of :data:`PROFILES`.
    methods : sequence of str, default=None
        Keys of :data:`METHODS`: our explainers (REAL-X and HardKuma also run thresholded)
        and the peers; all by default, the peers when their package is installed. The
        random, global and per-row references always run.
    pairs : sequence of (str, str), default=None
        ``(table, black box)`` keys; the profile's by default.
    device : {"auto", "cpu", "cuda"}, default="auto"
    threads : int, default=None
        torch and BLAS threads for the whole run; ``None``: torch's current number (which
        bench_tables.py sets from ``--threads``, 1 by default).
    on_record, log : callable, default=None
        Called with the records so far after each pair, and with one line of progress.
    """
    if isinstance(profile, str):
        profile = PROFILES[profile]
    log = log or (lambda line: None)
    device = resolve_device(device)
    names, skipped = available_methods(list(methods or METHODS))
    for name, reason in skipped.items():
        log(f"skipping {name}: {reason}")
    ours = [name for name in names if name in OURS]
    peer_names = [name for name in names if name in PEERS]
    records = []
    previous_threads = torch.get_num_threads()
    threads = threads or previous_threads
    torch.set_num_threads(threads)
    try:
        with threadpool_limits(limits=threads):
            for table_name, model_name in pairs or profile.pairs:
                records += run_pair(table_name, model_name, profile, ours, peer_names,
                                    device, log)
                if on_record is not None:
                    on_record(records)
    finally:
        torch.set_num_threads(previous_threads)
    return records


# Acceptance and report
# ---------------------

# The checks of the acceptance: name, what fails it, the records it applies to
# (ours with k set, or thresholded) and the test of a failing record.
CHECKS = (
    ("global", "fidelity below the best global subset − 1 point", False,
     lambda r: r["gap_global"] is not None and r["gap_global"] < -0.01),
    ("kernel_shap", "fidelity below KernelSHAP − 3 points", False,
     lambda r: r["gap_kernel_shap"] is not None and r["gap_kernel_shap"] < -0.03),
    ("eval_x", "EVAL-X below KernelSHAP's − 1 point", False,
     lambda r: r["eval_x_gap_kernel_shap"] is not None and r["eval_x_gap_kernel_shap"] < -0.01),
    ("seeds", "fidelity spread between seeds over 2 points", None,
     lambda r: r["fidelity_spread"] is not None and r["fidelity_spread"] > 0.02),
    ("empty", "over 1 % empty masks (k=None)", True,
     lambda r: r["empty_rate"] is not None and r["empty_rate"] > 0.01),
    ("random", "under 10 points above random masks of the same sizes (k=None)", True,
     lambda r: r["gap_random"] is not None and r["gap_random"] < 0.10),
)


def acceptance(records):
    """``{method: {check: (failing cells, cells)}}`` over our records without an error;
    a check applies to the runs with k set, the thresholded runs, or both (``None``)."""
    out = {}
    for r in records:
        if r["kind"] != "ours" or r["error"] is not None:
            continue
        counts = out.setdefault(r["method"], {})
        for name, _, on_thresholded, fails in CHECKS:
            if on_thresholded is not None and on_thresholded != (r["k"] is None):
                continue
            failing, cells = counts.get(name, (0, 0))
            counts[name] = (failing + bool(fails(r)), cells + 1)
    return out


_DASH = "–"


def _points(value, signed=False):
    if value is None:
        return _DASH
    return f"{100 * value:+.1f}" if signed else f"{100 * value:.1f}"


def _columns(records):
    """Reference, peer and our methods with k set, in table order, with their labels."""
    order = [RANDOM, GLOBAL, *PEERS, *OURS, ORACLE]
    present = {r["method"]: r["method_label"] for r in records}
    return [(name, present[name]) for name in order if name in present]


def _cells(records):
    """The (table, black box, k) of the records with k set, in run order."""
    return list(dict.fromkeys((r["table"], r["black_box"], r["k"]) for r in records
                              if r["k"] is not None))


def _cell_rows(records, columns, value):
    """One row a cell: its table, black box, k, then ``value(record)`` per column."""
    by_key = {(r["table"], r["black_box"], r["k"], r["method"]): r for r in records}
    labels = {(r["table"], r["black_box"]): (r["table_label"], r["black_box_label"])
              for r in records}
    rows, previous = [], None
    for table, black_box, k in _cells(records):
        table_label, model_label = labels[(table, black_box)]
        cells = []
        for name, _ in columns:
            record = by_key.get((table, black_box, k, name))
            cells.append(_DASH if record is None
                         else "failed" if record["error"] is not None else value(record))
        shown = (table_label if table != previous else "", model_label)
        rows.append([*shown, str(k), *cells])
        previous = table
    return rows


def _fidelity_cell(record):
    text = _points(record["fidelity"])
    if record["fidelity_spread"] is not None:
        text += f" ({100 * record['fidelity_spread']:.1f})"
    return text


def _mean_row(records, columns, key):
    means = []
    for name, _ in columns:
        values = [r[key] for r in records if r["method"] == name and r["k"] is not None
                  and r["error"] is None and r[key] is not None]
        means.append(_points(float(np.mean(values)), signed=key.startswith("gap"))
                     if values else _DASH)
    return ["Mean", "", "", *means]


def render_rst(records, machine, profile):
    """RST tables of a run: fidelity, gaps, EVAL-X, the thresholded runs, the acceptance
    counts and the costs."""
    if isinstance(profile, str):
        profile = PROFILES[profile]
    failed_pairs = [r for r in records if r["kind"] == "pair"]
    records = [r for r in records if r["kind"] != "pair"]
    threads = f"{machine['threads']} thread" + ("s" if machine["threads"] != 1 else "")
    hardware = machine["gpu"] or f"{machine['cpu']} CPU, {threads}"
    seeds = profile.seeds
    caption = (
        f"Profile ``{profile.name}``: tables split 70/30, the black box fitted on the 70 %, "
        f"up to {profile.n_explain} test rows explained; run on {machine['date'][:10]} on "
        f"{hardware}, torch {machine['torch']}. Our explainers at "
        + ("the package's defaults (only k and random_state set)" if not profile.explainer_params
           else "the profile's short training")
        + f", mean over {seeds} seeds (random_state 0-{seeds - 1}), the spread (max − min) in "
        "parentheses. Fidelity in points: the black box keeps its class with the left-out "
        "features at the training mean (R² of the masked against the full prediction for a "
        "regressor; mean over outputs for the two-label model). Random: k random features a "
        "row; best global subset: one subset for all rows, greedy forward selection on the "
        "training rows; KernelSHAP, LIME: top-k of |attribution|; per-row greedy: k features "
        "chosen one at a time by querying the model on the row (the ceiling of a search)."
    )
    lines = [*_wrap(caption), ""]
    columns = _columns(records)
    header = ["Table", "Black box", "k", *[label for _, label in columns]]
    lines += [*_grid_table("Fidelity (points)", header,
                           [*_cell_rows(records, columns, _fidelity_cell),
                            _mean_row(records, columns, "fidelity")]), ""]

    ours = [(name, label) for name, label in columns if name in OURS]
    lines += [*_grid_table(
        "Our fidelity minus the best global subset / minus KernelSHAP (points)",
        ["Table", "Black box", "k", *[label for _, label in ours]],
        [*_cell_rows(records, ours, lambda r: f"{_points(r['gap_global'], True)} / "
                                              f"{_points(r['gap_kernel_shap'], True)}"),
         ["Mean", "", "", *[f"{a} / {b}" for a, b in zip(
             _mean_row(records, ours, "gap_global")[3:],
             _mean_row(records, ours, "gap_kernel_shap")[3:])]]]), ""]

    metric = " / ".join(sorted({r["eval_x_metric"] for r in records if r["eval_x_metric"]}))
    lines += [*_grid_table(f"EVAL-X ({metric}, points) of every method's masks", header,
                           [*_cell_rows(records, columns, lambda r: _points(r["eval_x"])),
                            _mean_row(records, columns, "eval_x")]), ""]

    own = [r for r in records if r["kind"] == "ours" and r["k"] is None]
    if own:
        rows = []
        for r in own:
            cells = (["failed"] * 5 if r["error"] is not None else
                     [_fidelity_cell(r), _points(r["random_same_sizes"]),
                      _points(r["empty_rate"]), f"{r['mean_selected']:.1f}",
                      f"{r['n_distinct_masks']:.0f}"])
            rows.append([r["table_label"], r["black_box_label"], r["method_label"], *cells])
        lines += [*_grid_table(
            "The methods' own selection (k=None)",
            ["Table", "Black box", "Method", "Fidelity", "Random,\nsame sizes", "Empty %",
             "Features\na row", "Distinct\nmasks"], rows), ""]

    counts = acceptance(records)
    methods = [(r["method"], r["method_label"]) for r in records if r["kind"] == "ours"]
    methods = list(dict.fromkeys(methods))
    rows = []
    for name, text, _, _ in CHECKS:
        cells = [f"{counts[m][name][0]} / {counts[m][name][1]}"
                 if m in counts and name in counts[m] else _DASH for m, _ in methods]
        rows.append([text, *cells])
    lines += [*_grid_table("Acceptance: cells failing each check", ["Check",
                           *[label for _, label in methods]], rows), ""]

    lines += [*_grid_table("Cost and diversity", [
        "Table", "Black box", "k", *[label for _, label in columns]],
        _cell_rows(records, columns, _cost_cell)), ""]
    lines += _wrap(
        "Cost and diversity: distinct masks among the explained rows (ours: mean over seeds); "
        "ours: fit seconds and microseconds per row of transform (on "
        f"{profile.n_timing:,} rows); peers and the per-row search: milliseconds per row. "
        "Black box score on the test rows (accuracy, R²): "
        + "; ".join(sorted({f"{r['table_label']} / {r['black_box_label']} "
                            f"{_points(r['black_box_score'])}" for r in records})) + ".")
    for r in failed_pairs:
        lines += ["", f"{r['table']} / {r['black_box']} failed: {r['error']}"]
    return "\n".join(lines) + "\n"


def _cost_cell(record):
    distinct = record["n_distinct_masks"]
    parts = [f"{distinct:.0f} mask" + ("s" if distinct != 1 else "")] if distinct else []
    if record["fit_s"] is not None:
        parts.append(f"fit {record['fit_s']:.3g} s")
    if record["transform_us_per_row"] is not None:
        parts.append(f"{record['transform_us_per_row']:.3g} µs/row")
    if record["explain_ms_per_row"] is not None:
        parts.append(f"{record['explain_ms_per_row']:.3g} ms/row")
    return "\n".join(parts) or _DASH


def _wrap(text):
    return textwrap.wrap(text, width=92)
