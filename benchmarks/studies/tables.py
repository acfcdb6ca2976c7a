"""Real tables: our explainers against the best global subset, the per-row peers and a
per-row search, on tables that ship with installed packages and the models people fit them.

A *pair* is a table and a black box fitted on 70 % of its rows (split once, stratified for
one-output classification); its data sets are ``table/black_box/k=K`` for k = 3 and
k ≈ 20 % of its features (one data set when they coincide), which share the pair's
preparation, and ``table/black_box/k=None``: the thresholded selection (``k=None``) of the
methods that have one (REAL-X, HardKuma), as methods ``realx_thresholded`` and
``hardkuma_thresholded``.

Every mask set is judged on the same explained test rows, as ``score`` judges an
explainer's (:func:`fidelity`): the black box on the row with the left-out features at the
training mean (the masker of a fitted explainer) against the black box on the full row, by
class agreement (classification) or R² (regression), averaged over the outputs of a
multi-output model. The methods, in table order:

- **random**: k random features a row, mean over ``profile.n_random`` draws (for the
  thresholded methods: as many as the method kept in that row, ``random_same_sizes``);
- **global**: one k-subset for every row, chosen by greedy forward selection on the
  training rows by the same fidelity (one search to the pair's largest k; the subset of a
  smaller k is its first features);
- **KernelSHAP** and **LIME**: the top-k of ``|attribution|`` of the explained output
  (:mod:`..harness.peers`), one run per pair;
- ours, from the registry, at the defaults of the package unless the profile overrides
  them, fitted with ``random_state`` 0, 1, ... (one record a seed; the tables show the
  mean and, for the fidelity, the spread max − min);
- **oracle**: per row, the greedy search of :func:`sk_sointer._search.greedy_subsets`
  (the model queried ``sum_{j<k} (d - j)`` times a row), the ceiling of a per-row search.

Each also gets EVAL-X's score (:class:`~sk_sointer.metrics.EvalXEvaluator`, one per pair,
trained on random masks of the training rows against the black box): eACC, or eR² for a
regressor. Times: fit seconds, microseconds per row of ``transform`` (on
``profile.n_timing`` rows), milliseconds per row of the peers and the oracle.

Every run is also reported through :func:`sk_sointer.metrics.evaluate`, in one call
(:func:`evaluation`): the fidelity with the features kept (the fidelity above) and removed,
ROAD's kept and removed (the left-out features imputed from a Gaussian fitted on the
training rows), features a row and, where features are ranked (ours: ``explain``; the
peers: ``|attribution|``), the insertion and deletion AUCs; for ours the mask change under
noise and, from the second seed on, the mean mask cosine to the earlier seeds' masks of the
same rows (``seed_agreement``; the masks live in the pair's cache, not in the results).

Masks are judged by the masker and output spec of an L2X fitted for one epoch on the pair
(:func:`prepare`): those of every explainer fitted on the same rows. Before the tables are
drawn, :func:`with_gaps` adds each of our runs' gaps to the best global subset and to
KernelSHAP (to random masks of the same sizes for a thresholded run) and one record a check
of the issue's acceptance (:data:`CHECKS`) that the run passes or fails;
:func:`acceptance` counts them.
"""

import copy
import warnings
from collections import namedtuple
from types import SimpleNamespace

import numpy as np
from sklearn import datasets as sk_datasets
from sklearn.base import is_classifier
from sklearn.calibration import CalibratedClassifierCV
from sklearn.ensemble import GradientBoostingRegressor as GBR
from sklearn.ensemble import HistGradientBoostingClassifier as HGB
from sklearn.ensemble import RandomForestClassifier as RF
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.multioutput import MultiOutputClassifier
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from sk_sointer import L2XExplainer, ModelRefinement, as_black_box
from sk_sointer._outputs import output_agreement
from sk_sointer._search import greedy_subsets
from sk_sointer.metrics import break_even_rows, mask_similarity, random_masks

from ..harness import quality, report, study
from ..harness.data import EXPLAIN_SEED, TRAIN_SEED, fit_evaluator
from ..harness.ours import build_explainer, recorded_params
from ..harness.peers import topk_of_abs
from ..harness.quality import (BREAK_EVEN, CURVE_ENTRIES, EVALUATION_METRICS, MASK_ENTRIES,
                               OUR_ENTRIES)
from ..harness import fastshap, peers
from ..harness.registry import METHODS as SHARED_METHODS
from ..harness.registry import Method
from ..harness.study import Metric, Study, Table, percent, seeded
from ..harness.timing import best_time, elapsed
from ..harness.torch_net import TorchMLPClassifier

SPLIT_SEED = 0
# L2X also with its masks judged on 16 background rows (refinement, repair) not at the mean.
OURS = ("l2x", "realx", "meed", "hardkuma", "l2x_background")
THRESHOLDED = ("realx", "hardkuma")
# The per-row peers on every cell, then those for one kind of black box: TreeSHAP on tree
# ensembles, IntegratedGradients on torch networks.
PEERS = ("shap_kernel", "lime", "fastshap")
TREE_PEERS = ("shap_tree", "shap_tree_path")
TORCH_PEERS = ("integrated_gradients_mean",)
ALL_PEERS = (*PEERS, *TREE_PEERS, *TORCH_PEERS)
# The peers only this study runs, beside the registry's.
REGISTRY = {**SHARED_METHODS, **{method.name: method for method in [
    Method("shap_tree", "TreeSHAP (interventional, mean)", "shap",
           attribute=peers.shap_tree_interventional),
    Method("shap_tree_path", "TreeSHAP (path-dependent)", "shap",
           attribute=peers.shap_tree_path),
    Method("fastshap", "FastSHAP", "torch", attribute=fastshap.fastshap),
    Method("integrated_gradients_mean", "IG (captum, mean baseline)", "captum",
           attribute=peers.integrated_gradients_mean),
    Method("l2x_background", "L2X (background=16)", "sk_sointer",
           estimator=lambda **params: L2XExplainer(background=16, **params), params_key="l2x"),
]}}
RANDOM, GLOBAL, ORACLE = "random", "global", "oracle"
# Derived after the run: the peer of each cell with the highest fidelity.
BEST_PEER = "best_peer"
# Ours with every row checked against the model and the failing rows repaired (repair=).
REPAIRED = tuple(f"{name}_repaired" for name in OURS)
# The order they run in on a data set, which is the order of the tables' columns.
METHODS = (RANDOM, GLOBAL, *ALL_PEERS, *OURS, *REPAIRED, ORACLE)
OWN = tuple(f"{name}_thresholded" for name in THRESHOLDED)
TREE_MODELS = ("rf", "hgb", "gbr", "rf_per_output")
TORCH_MODELS = ("torch_mlp",)


# Tables and black boxes
# ----------------------


# A table that ships with an installed package: ``load()`` gives ``(X, y)``.
Source = namedtuple("Source", "label load n_features")


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
    "breast_cancer": Source("Breast cancer", _sklearn_table(sk_datasets.load_breast_cancer), 30),
    "wine": Source("Wine", _sklearn_table(sk_datasets.load_wine), 13),
    # In its own units (ages in years, blood pressure in mm Hg), not sklearn's scaling.
    "diabetes": Source("Diabetes (raw)",
                       _sklearn_table(sk_datasets.load_diabetes, scaled=False), 10),
    "digits": Source("Digits", _sklearn_table(sk_datasets.load_digits), 64),
    "digits_two_labels": Source("Digits: even, >= 5", _load_digits_two_labels, 64),
    "phishing": Source("Phishing", _river_table("Phishing"), 9),
    "image_segments": Source("Image segments", _river_table("ImageSegments"), 18),
}


def _scaled(estimator):
    return make_pipeline(StandardScaler(), estimator)


# A black box: its label and ``make(random_state)``, the unfitted estimator.
MODELS = {
    "rf": ("Random forest", lambda seed: RF(random_state=seed)),
    "hgb": ("Hist. gradient boosting", lambda seed: HGB(random_state=seed)),
    "gbr": ("Gradient boosting", lambda seed: GBR(random_state=seed)),
    "lr": ("Logistic regression (scaled)",
           lambda seed: _scaled(LogisticRegression(max_iter=5_000))),
    # SVC's probabilities by Platt scaling, as SVC(probability=True) (deprecated in
    # scikit-learn 1.9) gave them.
    "svc": ("SVC (scaled)", lambda seed: _scaled(CalibratedClassifierCV(SVC(), ensemble=False))),
    "mlp": ("MLP (scaled)",
            lambda seed: _scaled(MLPClassifier(max_iter=2_000, random_state=seed))),
    "knn": ("KNN (scaled)", lambda seed: _scaled(KNeighborsClassifier())),
    "knn_regressor": ("KNN (scaled)", lambda seed: _scaled(KNeighborsRegressor())),
    "rf_per_output": ("Random forest per output",
                      lambda seed: MultiOutputClassifier(RF(random_state=seed))),
    "lr_per_output": ("Logistic regression per output (scaled)", lambda seed: _scaled(
        MultiOutputClassifier(LogisticRegression(max_iter=5_000)))),
    "torch_mlp": ("Torch MLP", lambda seed: TorchMLPClassifier(random_state=seed)),
}

# Two black boxes a table, as a user would pick them; the last pair has two outputs.
FULL_PAIRS = (
    ("breast_cancer", "rf"), ("breast_cancer", "svc"), ("wine", "rf"), ("wine", "lr"),
    ("diabetes", "gbr"), ("diabetes", "knn_regressor"), ("digits", "mlp"),
    ("phishing", "hgb"), ("phishing", "knn"), ("image_segments", "hgb"),
    ("digits_two_labels", "rf_per_output"), ("breast_cancer", "torch_mlp"),
    ("phishing", "torch_mlp"),
)


def ks_for(n_features):
    """k = 3 and k = 20 % of the features (rounded, at least 1), each once, ascending."""
    return sorted({min(3, n_features), max(1, round(0.2 * n_features))})


# Profiles: ``pairs`` of TABLES and MODELS keys; ``n_explain`` test rows explained (all of
# them when the table has fewer); ``max_train`` caps the training rows (None: the whole
# 70 %), ``global_rows`` the training rows the global search scores (None: all);
# ``explainer_params`` overrides parameters of ours (by registry ``params_key``) and of
# EVAL-X (``"evalx"``): the full profile leaves every default alone.
# Two epochs of the method's own objective and of the refinement against the model.
_FAST_EPOCHS = {"max_epochs": 2, "batch_size": 64, "refine": ModelRefinement(max_epochs=2)}
_DEFAULTS = {"max_train": None, "seeds": 2, "n_random": 10, "global_rows": None,
             "n_timing": 10_000, "timing_repeats": 5, "explainer_params": {},
             "shap_nsamples": "auto", "lime_num_samples": 5000,
             # evaluate's insertion and deletion curves: steps; mask_change: noisy copies.
             "eval_steps": 10, "n_perturbations": 5}
PROFILES = {
    # One pair of each kind: a classifier, a regressor, a two-output classifier.
    "fast": {**_DEFAULTS, "pairs": (("breast_cancer", "lr"), ("diabetes", "knn_regressor"),
                                    ("digits_two_labels", "lr_per_output")),
             "n_explain": 30, "max_train": 200, "n_random": 3, "global_rows": 100,
             "n_timing": 500, "timing_repeats": 1, "shap_nsamples": 40,
             "lime_num_samples": 100, "n_perturbations": 2,
             "explainer_params": {"l2x": _FAST_EPOCHS, "meed": _FAST_EPOCHS,
                                  "hardkuma": _FAST_EPOCHS,
                                  "realx": {**_FAST_EPOCHS, "predictor_epochs": 1},
                                  "evalx": {"max_epochs": 2}}},
    # Every pair, the whole tables (every test row explained), the defaults of the package
    # and of the peers.
    "full": {**_DEFAULTS, "pairs": FULL_PAIRS, "n_explain": None},
}


def parse(dataset):
    """``(table, black box, k)`` of a data set's name."""
    table, model, k = dataset.split("/")
    return table, model, None if k == "k=None" else int(k[2:])


def datasets(profile):
    return [f"{table}/{model}/k={k}" for table, model in profile.pairs
            for k in [*ks_for(TABLES[table].n_features), None]]


def _context(dataset):
    """The labels of a data set's table and black box, and its k: every record's context."""
    table, model, k = parse(dataset)
    return {"table": TABLES[table].label, "black_box": MODELS[model][0], "k": k}


def cases(dataset, methods, profile):
    """The references always; on the ``k=None`` data set the thresholded methods only; the
    peers of one kind of black box on that kind only; a repaired run with its method."""
    context = _context(dataset)
    if context["k"] is None:
        return [(f"{name}_thresholded", context) for name in THRESHOLDED if name in methods]
    model = parse(dataset)[1]
    wanted = {RANDOM, GLOBAL, ORACLE, *methods,
              *(f"{name}_repaired" for name in OURS if name in methods)}
    wanted -= set() if model in TREE_MODELS else set(TREE_PEERS)
    wanted -= set() if model in TORCH_MODELS else set(TORCH_PEERS)
    return [(name, context) for name in METHODS if name in wanted]


# One pair's data
# ---------------


def prepare(pair_name, profile, device):
    """Load and split the table, fit the black box, the judge and the pair's EVAL-X."""
    table, model_name = pair_name.split("/")
    X, y = TABLES[table].load()
    estimator = MODELS[model_name][1](TRAIN_SEED)
    stratify = y if is_classifier(estimator) and np.ndim(y) == 1 else None
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, random_state=SPLIT_SEED, stratify=stratify)
    if profile.max_train is not None:
        X_train, y_train = X_train[: profile.max_train], y_train[: profile.max_train]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model, fit_s = elapsed(lambda: estimator.fit(X_train, y_train))
    # The package's own reading of the model's outputs: accuracy per output, or R².
    black_box = as_black_box(model)
    outputs = black_box.predict(X_test)
    spec = black_box.spec
    # The masker (mean fill) and output spec every mask set is judged with: those of any of
    # our explainers fitted on these rows, which need no training to be built.
    judge = L2XExplainer(k=1, max_epochs=1, refine=None, random_state=TRAIN_SEED,
                         device=str(device)).fit(X_train, black_box=model)
    X_explain = X_test[: profile.n_explain]
    pair = SimpleNamespace(
        X_train=X_train, X_explain=X_explain, model=model, judge=judge, ks=ks_for(X.shape[1]),
        torch_model=getattr(model, "module_", None),
        X_timing=X_test[np.arange(profile.n_timing) % len(X_test)], cache={}, evaluator=None,
        evaluator_fit_s=None, evaluator_error=None)
    fit_evaluator(pair, profile, device)
    # What the pair's data sets record of themselves (with ``method=None``).
    pair.values = {
        "n_features": X.shape[1], "n_outputs": spec.n_outputs, "n_train": len(X_train),
        "n_test": len(X_test), "n_explain": len(X_explain), "black_box_fit_s": fit_s,
        "black_box_score": output_agreement(spec.encode(y_test, len(X_test)), outputs, spec),
        "evalx_fit_s": pair.evaluator_fit_s, "evalx_error": pair.evaluator_error,
        "task": spec.task, "eval_x_metric": "eR2" if spec.task == "regression" else "eACC",
        "table": TABLES[table].label, "black_box": MODELS[model_name][0]}
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


def mask_fields(pair, masks):
    """Fidelity, EVAL-X and the shape of one set of masks of the explained rows."""
    sizes = masks.sum(axis=1)
    return {"fidelity": fidelity(pair.judge, pair.X_explain, masks),
            "eval_x": eval_x(pair, masks), "n_distinct_masks": len(np.unique(masks > 0, axis=0)),
            "mean_selected": float(np.mean(sizes)), "empty_rate": float(np.mean(sizes == 0))}


def random_reference(pair, sizes, profile, evaluated=False):
    """Fidelity and EVAL-X of random masks with ``sizes`` features a row, mean over
    ``profile.n_random`` draws; ``evaluated``: with the means of their :func:`evaluation`
    (masks only)."""
    rng = np.random.RandomState(EXPLAIN_SEED)
    draws = [random_masks(len(sizes), pair.X_train.shape[1], sizes, random_state=rng)
             for _ in range(profile.n_random)]
    judged = [eval_x(pair, masks) for masks in draws]
    reports = [evaluation(pair, profile, masks, MASK_ENTRIES)
               for masks in (draws if evaluated else [])]
    return {
        "fidelity": float(np.mean([fidelity(pair.judge, pair.X_explain, m) for m in draws])),
        "eval_x": None if judged[0] is None else float(np.mean(judged)),
        "mean_selected": float(np.mean(sizes)),
        "empty_rate": float(np.mean(np.asarray(sizes) == 0)),
        **{name: float(np.mean([r[name] for r in reports])) for name in MASK_ENTRIES
           if reports and all(name in r for r in reports)},
    }


EVALUATED = (*MASK_ENTRIES, *CURVE_ENTRIES, "mask_change", "features_per_row_std",
             "seed_agreement")


def evaluation(pair, profile, explanation, entries, scores=None):
    """:func:`harness.quality.evaluation` of the pair's explained rows; raw masks are judged
    at the baseline of the pair's judge."""
    return quality.evaluation(pair, profile, explanation, entries,
                              baseline=pair.judge.masker_.baseline_, scores=scores)


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


def _once(pair, key, compute):
    """``compute()`` the first time the pair needs it, its result (or failure) after."""
    if key not in pair.cache:
        try:
            pair.cache[key] = compute()
        except Exception as exc:  # noqa: BLE001 - every k of the pair fails alike
            pair.cache[key] = exc
    if isinstance(pair.cache[key], Exception):
        raise pair.cache[key]
    return pair.cache[key]


def measure(pair, dataset, method, seed, profile, device, k, **labels):
    n_rows = len(pair.X_explain)
    if method == RANDOM:
        return {**random_reference(pair, np.full(n_rows, k), profile, evaluated=True),
                "queries_per_row": 0}
    if method == GLOBAL:
        order = _once(pair, GLOBAL, lambda: global_order(
            pair.judge, pair.X_train[: profile.global_rows], max(pair.ks)))
        masks = np.zeros(pair.X_explain.shape, dtype=np.float32)
        masks[:, order[:k]] = 1.0
        return {**mask_fields(pair, masks), **evaluation(pair, profile, masks, MASK_ENTRIES),
                "params": {"features": order[:k]}, "queries_per_row": 0}
    if method in ALL_PEERS:
        with warnings.catch_warnings():
            # LIME's sparse regressions on rows a model answers alike; not ours to report.
            warnings.simplefilter("ignore", ConvergenceWarning)
            values, setup_s, explain_s = _once(
                pair, method, lambda: REGISTRY[method].attribute(pair, profile, device))
        masks = topk_of_abs(values, k)
        return {**mask_fields(pair, masks), "setup_s": setup_s,
                **evaluation(pair, profile, masks, (*MASK_ENTRIES, *CURVE_ENTRIES),
                             scores=np.abs(values)),
                "explain_ms_per_row": 1000 * explain_s / n_rows,
                "queries_per_row": peer_queries(method, pair, profile)}
    if method == ORACLE:
        # Per row, the k features of the greedy search that queries the model itself.
        judge = pair.judge
        groups, explain_s = elapsed(lambda: greedy_subsets(
            judge.black_box_.predict, pair.X_explain, judge.masker_, judge.output_spec_, k))
        masks = np.asarray(judge.masker_.expand(groups), dtype=np.float32)
        n_groups = judge.masker_.n_groups_
        return {**mask_fields(pair, masks), **evaluation(pair, profile, masks, MASK_ENTRIES),
                "explain_ms_per_row": 1000 * explain_s / n_rows,
                "queries_per_row": sum(n_groups - j for j in range(k))}
    if method in REPAIRED:
        return repaired(pair, dataset, method, seed, profile)
    # Ours; k=None: the method's own thresholded selection.
    spec = SimpleNamespace(k=k, control_flow=False)  # no table has REAL-X's control flow
    explainer = build_explainer(REGISTRY[method.removesuffix("_thresholded")], spec, profile,
                                device).set_params(random_state=seed)
    fit_s = elapsed(lambda: explainer.fit(pair.X_train, black_box=pair.model))[1]
    masks = explainer.transform(pair.X_explain)
    pair.cache[("explainer", dataset, method, seed)] = explainer  # for its repaired run
    # The fidelity at the mean, as every mask set's; an explainer with background rows
    # scores its masks on them, recorded beside it.
    own = "fidelity" if explainer.background_ is None else "fidelity_background"
    run = {**mask_fields(pair, masks), "fit_s": fit_s, own: explainer.score(pair.X_explain),
           "queries_per_row": 0,
           "params": {key: value for key, value in recorded_params(explainer).items()
                      if key != "random_state"}}
    run.update(evaluation(pair, profile, explainer,
                          (*OUR_ENTRIES, "features_per_row_std") if k is None else OUR_ENTRIES))
    # Seed agreement: the mean mask cosine to each earlier seed's masks of the same rows
    # (kept in the pair's cache while its data sets run; nothing stored in the results).
    earlier = pair.cache.setdefault(("masks", dataset, method), {})
    if earlier:
        run["seed_agreement"] = float(np.mean([mask_similarity(masks, other)
                                               for other in earlier.values()]))
    earlier[seed] = masks
    if k is None:
        run["random_same_sizes"] = random_reference(
            pair, masks.sum(axis=1).astype(int), profile)["fidelity"]
    if seed == TRAIN_SEED:  # the first seed's explainer
        run["transform_us_per_row"] = 1e6 * best_time(
            lambda: explainer.transform(pair.X_timing), profile.timing_repeats, warmup=1
        ) / len(pair.X_timing)
    return run


def peer_queries(method, pair, profile):
    """Rows a peer sends to the black box to explain one row: KernelSHAP's coalitions times
    its 10 background rows (shap's ``"auto"``: ``2 d + 2048``), LIME's samples,
    IntegratedGradients' path steps (forward and backward passes), FastSHAP's one answer
    for its normalisation (after 32 queries a training row at fit); TreeSHAP reads the
    trees and asks nothing."""
    n_features = pair.X_train.shape[1]
    if method == "shap_kernel":
        nsamples = profile.shap_nsamples
        return 10 * (2 * n_features + 2048 if nsamples == "auto" else nsamples)
    return {"lime": profile.lime_num_samples, "integrated_gradients_mean": 50,
            "fastshap": 1}.get(method, 0)


def repaired(pair, dataset, method, seed, profile):
    """The masks of ``method``'s explainer of the same seed (fitted by its own run) with
    ``repair="model"``: every explained row checked against the model, the failing ones
    searched further; the share of rows that held before the search, and the queries."""
    own = method.removesuffix("_repaired")
    explainer = copy.deepcopy(pair.cache[("explainer", dataset, own, seed)])
    explainer.set_params(repair="model")
    masks, explain_s = elapsed(lambda: explainer.transform(pair.X_explain))
    report = explainer.repair_report_
    n_rows = len(pair.X_explain)
    return {**mask_fields(pair, masks), **evaluation(pair, profile, masks, MASK_ENTRIES),
            "held_before": 1 - report.n_failed / n_rows,
            "repaired_share": report.n_repaired / max(report.n_failed, 1),
            "queries_per_row": report.queries_per_row,
            "explain_ms_per_row": 1000 * explain_s / n_rows}


# Gaps, acceptance and report
# ---------------------------

GAPS = ("gap_global", "gap_kernel_shap", "gap_best_peer", "eval_x_gap_kernel_shap",
        "dominated", "gap_random", "half_distance", "gap_oracle", "eval_x_gap_unrepaired",
        "oracle_query_share")
# Each gap of ours at a k: our metric, the other method and its metric.
_GAPS_AT_K = {"gap_global": ("fidelity", GLOBAL, "fidelity"),
              "gap_kernel_shap": ("fidelity", "shap_kernel", "fidelity"),
              "eval_x_gap_kernel_shap": ("eval_x", "shap_kernel", "eval_x")}


def _break_even(fit_s, us_per_row, peer_ms_per_row):
    """:func:`~sk_sointer.metrics.break_even_rows`, ``None`` when a time is missing."""
    if None in (fit_s, us_per_row, peer_ms_per_row):
        return None
    return break_even_rows(fit_s, us_per_row, peer_ms_per_row)


def _difference(a, b):
    return None if None in (a, b) else a - b


def with_gaps(records):
    """The records in table order (data sets, then :data:`METHODS`), and derived values of
    each of our runs without an error (fidelity points as fractions; means over seeds):

    - with k set: the gaps to the best global subset, to KernelSHAP and to the best peer of
      the cell, EVAL-X's gap to KernelSHAP's, whether a peer beats it by over a point on
      both fidelity and EVAL-X (``dominated``), and the rows from which it costs less than
      KernelSHAP (:data:`BREAK_EVEN`);
    - repaired: the gap to the per-row greedy search, EVAL-X's gap to the same explainer
      unrepaired, and its queries a row as a share of the search's;
    - thresholded (``k=None``): the gap to random masks of the same sizes, and that gap less
      half the distance from those masks to 100 % (``half_distance``).

    Then one record a check of :data:`CHECKS` that applies to the run, 1 if it fails."""
    order = (None, RANDOM, GLOBAL, *ALL_PEERS, BEST_PEER, *OURS, *REPAIRED, ORACLE, *OWN)
    rank = {name: i for i, name in enumerate(order)}
    first = {}
    for i, r in enumerate(records):
        first.setdefault(r["dataset"], i)
    records = [r for r in records if r["metric"] not in (*GAPS, BREAK_EVEN, "fails")
               and r["method"] != BEST_PEER]
    summary = study.summarize(records)
    records = sorted(records + _best_peers(summary),
                     key=lambda r: (first[r["dataset"]], rank.get(r["method"], len(rank))))
    derived = []

    def mean(dataset, method, metric):
        entry = summary.get((dataset, method), {})
        values = None if entry.get("error") else entry.get(metric + "_seeds")
        return None if values is None else float(np.mean(values))

    for (dataset, method), entry in summary.items():
        if method not in (*OURS, *REPAIRED, *OWN) or entry["error"]:
            continue
        context = _context(dataset)
        if method in REPAIRED:
            own = method.removesuffix("_repaired")
            values = {
                "gap_oracle": _difference(mean(dataset, method, "fidelity"),
                                          mean(dataset, ORACLE, "fidelity")),
                "eval_x_gap_unrepaired": _difference(mean(dataset, method, "eval_x"),
                                                     mean(dataset, own, "eval_x")),
                "oracle_query_share": (mean(dataset, method, "queries_per_row")
                                       / max(mean(dataset, ORACLE, "queries_per_row") or 1, 1))}
        elif context["k"] is None:
            random = mean(dataset, method, "random_same_sizes")
            gap = _difference(mean(dataset, method, "fidelity"), random)
            values = {"gap_random": gap, "half_distance":
                      None if gap is None else gap - 0.5 * (1 - random)}
        else:
            values = {name: _difference(mean(dataset, method, metric),
                                        mean(dataset, other, their_metric))
                      for name, (metric, other, their_metric) in _GAPS_AT_K.items()}
            ours = (mean(dataset, method, "fidelity"), mean(dataset, method, "eval_x"))
            theirs = [(mean(dataset, peer, "fidelity"), mean(dataset, peer, "eval_x"))
                      for peer in ALL_PEERS if mean(dataset, peer, "fidelity") is not None]
            if theirs:
                values["gap_best_peer"] = ours[0] - max(fid for fid, _ in theirs)
                values["dominated"] = int(any(
                    fid > ours[0] + 0.01 and None not in (ex, ours[1]) and ex > ours[1] + 0.01
                    for fid, ex in theirs))
            values[BREAK_EVEN] = _break_even(mean(dataset, method, "fit_s"),
                                             mean(dataset, method, "transform_us_per_row"),
                                             mean(dataset, "shap_kernel", "explain_ms_per_row"))
        derived += study.records_of(STUDY, dataset, method, None, values, **context)
        # The acceptance: one record a check that applies to the run, 1 if it fails.
        values.update(empty_rate=mean(dataset, method, "empty_rate"),
                      fidelity_spread=float(np.ptp(entry["fidelity_seeds"])))
        for _, text, applies, key, bound in CHECKS:
            if applies(method, context["k"]):
                value = values.get(key)
                fails = value is not None and (value < bound if "gap" in key or key ==
                                               "half_distance" else value > bound)
                derived += study.records_of(STUDY, dataset, method, None,
                                            {"fails": int(fails)}, check=text, **context)
    return records + derived


def _best_peers(summary):
    """Per data set with k set, a record of the peer with the highest fidelity (method
    :data:`BEST_PEER`, the peer named in its context): its fidelity and EVAL-X."""
    derived = []
    for dataset in dict.fromkeys(dataset for dataset, _ in summary):
        context = _context(dataset)
        peers = [(summary[(dataset, peer)]["fidelity"], peer) for peer in ALL_PEERS
                 if not summary.get((dataset, peer), {"error": True})["error"]]
        if context["k"] is None or not peers:
            continue
        peer = max(peers)[1]
        entry = summary[(dataset, peer)]
        derived += study.records_of(
            STUDY, dataset, BEST_PEER, None,
            {"fidelity": entry["fidelity"], "eval_x": entry.get("eval_x"), "peer": peer},
            **context)
    return derived


def _ours(method, k):
    return method in OURS and k is not None


# The checks of the acceptance: name, what fails it, the runs it applies to
# (``applies(method, k)``), the mean over seeds it reads and its bound: a gap (and the
# half distance) fails below it, the others above it.
CHECKS = (
    ("global", "fidelity below the best global subset − 1 point", _ours, "gap_global", -0.01),
    ("best_peer", "fidelity below the best peer of the cell − 2 points",
     lambda method, k: method in ("l2x", "meed") and k is not None, "gap_best_peer", -0.02),
    ("dominated", "a peer over 1 point ahead on both fidelity and EVAL-X", _ours,
     "dominated", 0),
    ("oracle", "repaired: fidelity below the per-row greedy search − 1 point",
     lambda method, k: method in REPAIRED, "gap_oracle", -0.01),
    ("repaired_eval_x", "repaired: EVAL-X below the unrepaired masks'",
     lambda method, k: method in REPAIRED, "eval_x_gap_unrepaired", -0.005),
    ("seeds", "fidelity spread between seeds over 2 points", lambda method, k: True,
     "fidelity_spread", 0.02),
    ("empty", "over 1 % empty masks (k=None)", lambda method, k: k is None, "empty_rate",
     0.01),
    ("half_distance", "REAL-X (k=None) closes under half the distance from random masks of "
     "the same sizes to 100 %", lambda method, k: method == "realx_thresholded",
     "half_distance", 0.0),
    ("random", "HardKuma (k=None) below random masks of the same sizes",
     lambda method, k: method == "hardkuma_thresholded", "gap_random", 0.0),
)


def acceptance(records):
    """``{method: {check: (failing runs, runs)}}`` over our runs without an error (a run:
    a data set and a method, its means over seeds)."""
    names, out = {text: name for name, text, *_ in CHECKS}, {}
    for r in with_gaps(records):
        if r["metric"] == "fails":
            counts = out.setdefault(r["method"], {})
            failing, runs = counts.get(names[r["check"]], (0, 0))
            counts[names[r["check"]]] = (failing + r["value"], runs + 1)
    return out


def caption(records, machine, profile):
    hardware = report.hardware(machine)
    return (
        f"Profile ``{profile.name}``: tables split 70/30, the black box fitted on the 70 %, "
        + ("every test row explained" if profile.n_explain is None
           else f"up to {profile.n_explain} test rows explained")
        + f"; run on {machine['date'][:10]} on "
        f"{hardware}, torch {machine['torch']}. Our explainers at "
        + ("the package's defaults (only k and random_state set)" if not profile.explainer_params
           else "the profile's short training")
        + f", mean over {profile.seeds} seeds (random_state 0-{profile.seeds - 1}), the "
        "spread (max − min) of the fidelity in parentheses. Fidelity in points: the black box "
        "keeps its class with the left-out features at the training mean (R² of the masked "
        "against the full prediction for a regressor; mean over outputs for the two-label "
        "model). Random: k random features a row; best global subset: one subset for all "
        "rows, greedy forward selection on the training rows; KernelSHAP, LIME: top-k of "
        "|attribution|; per-row greedy: k features chosen one at a time by querying the model "
        "on the row (the ceiling of a search). TreeSHAP on the tree ensembles (interventional "
        "with the training mean as the one background row, and path-dependent), captum's "
        "IntegratedGradients from the training mean on the torch networks, FastSHAP (the "
        "amortized Shapley peer, 32 paired subsets a training row, the efficiency "
        "normalisation) everywhere: top-k of |attribution|. \"+ repair\": the same fitted "
        "explainer with repair=\"model\" (every row checked against the model, the failing "
        "ones searched by swaps). L2X (background=16): L2X whose refinement and repair ask "
        "the model with the left-out features taken from 16 training rows in turn, the "
        "answers averaged; its fidelity is still read at the mean.")


def _fidelity_cell(values):
    """The mean in points; over seeds, the spread (max − min) in parentheses."""
    spread = f" ({100 * float(np.ptp(values)):.1f})" if len(values) > 1 else ""
    return f"{100 * float(np.mean(values)):.1f}" + spread


_HEADERS = {"table": "Table", "black_box": "Black box"}
# The front page's table: ours with and without repair, the best peer, the references.
SUMMARY = (RANDOM, GLOBAL, BEST_PEER, "l2x", "meed", "l2x_repaired", "meed_repaired", ORACLE)
SUMMARY_TITLE = ("Fidelity (points): L2X and MEED, alone and repaired, against the best peer "
                 "of each cell")


def _per_method(title, metric, mean_row=False):
    """A table of one metric, a row a table, black box and k, a column a method."""
    return Table(title, (metric,), rows=("table", "black_box", "k"), columns="method",
                 where=lambda r: r["k"] is not None, labels=_HEADERS, mean_row=mean_row)


# The evaluation table's columns: evaluate's entries, then the costs already recorded.
EVALUATION_COLUMNS = ("fidelity_kept", "fidelity_removed", "road_kept", "road_removed",
                      "deletion_auc", "insertion_auc", "seed_agreement", "mask_change",
                      "features_per_row", "transform_us_per_row", "explain_ms_per_row",
                      BREAK_EVEN)


STUDY = Study(
    name="tables",
    profiles=PROFILES,
    datasets=datasets,
    methods=METHODS,
    cases=cases,
    seeds=seeded(lambda method: method in (*OURS, *REPAIRED, *OWN)),
    prepare=prepare,
    share=lambda dataset: dataset.rsplit("/", 1)[0],
    dataset_values=lambda pair, dataset: pair.values,
    measure=measure,
    metrics={
        "fidelity": Metric("Fidelity", scale=100, fmt=".1f", cell=_fidelity_cell),
        "eval_x": percent("EVAL-X", ""),
        "random_same_sizes": percent("Random,\nsame sizes", ""),
        "empty_rate": percent("Empty %", ""),
        "mean_selected": Metric("Features\na row", fmt=".1f"),
        "n_distinct_masks": Metric("Distinct\nmasks", fmt=".0f"),
        **{name: percent(name, "", "+.1f") for name in GAPS},
        "dominated": Metric("Dominated", fmt=".0f"),
        "oracle_query_share": percent("Queries, % of\nthe search's", ""),
        "held_before": percent("Rows holding\nbefore repair", ""),
        "repaired_share": percent("Failing rows\nrepaired", ""),
        "queries_per_row": Metric("Queries\na row", fmt=",.1f"),
        "fit_s": Metric("Fit s"), "transform_us_per_row": Metric("µs / row"),
        "explain_ms_per_row": Metric("ms / row"),
        "fails": Metric("Failing", cell=lambda values: f"{int(sum(values))} / {len(values)}"),
        "black_box_score": percent("Black box score\n(accuracy, R²)", ""),
        **EVALUATION_METRICS,  # evaluate's entries (sk_sointer.metrics.evaluate)
    },
    tables=(
        Table(SUMMARY_TITLE, ("fidelity",), rows=("table", "black_box", "k"),
              columns="method", where=lambda r: r["k"] is not None and r["method"] in SUMMARY,
              labels=_HEADERS, mean_row=True),
        _per_method("Fidelity (points)", "fidelity", mean_row=True),
        _per_method("Our fidelity minus the best global subset (points)", "gap_global", True),
        _per_method("Our fidelity minus KernelSHAP (points)", "gap_kernel_shap", True),
        _per_method("Our fidelity minus the best peer of the cell (points)", "gap_best_peer",
                    True),
        _per_method("EVAL-X (eACC / eR2, points) of every method's masks", "eval_x", True),
        Table("The methods' own selection (k=None)",
              ("fidelity", "random_same_sizes", "empty_rate", "mean_selected",
               "n_distinct_masks"), rows=("table", "black_box", "method"),
              where=lambda r: r["k"] is None, labels=_HEADERS),
        Table("Check and repair: rows whose mask held before the repair, failing rows "
              "repaired, the repaired fidelity minus the per-row greedy search's, queries a "
              "row (also as a share of the search's)",
              ("held_before", "repaired_share", "gap_oracle", "queries_per_row",
               "oracle_query_share"), rows=("table", "black_box", "k", "method"),
              where=lambda r: r["method"] in REPAIRED, labels=_HEADERS),
        _per_method("Model queries a row (ours without repair: none)", "queries_per_row",
                    True),
        _per_method("Distinct masks among the explained rows (ours: mean over seeds)",
                    "n_distinct_masks"),
        _per_method("Fit seconds", "fit_s"),
        _per_method("Transform, microseconds a row (on {n_timing:,} rows)",
                    "transform_us_per_row"),
        _per_method("Milliseconds a row of the peers (one run for every k) and the per-row "
                    "search", "explain_ms_per_row"),
        Table("Acceptance: cells failing each check", ("fails",), rows=("check",),
              columns="method", where=lambda r: "check" in r, labels={"check": "Check"}),
        Table("Evaluation (points; mean over the data sets)", EVALUATION_COLUMNS,
              rows=("method",)),
        Table("The black boxes on the test rows (points)", ("black_box_score",),
              rows=("table", "black_box"), where={"method": None}, labels=_HEADERS),
    ),
    caption=caption,
    postprocess=with_gaps,
    labels={RANDOM: "Random", GLOBAL: "Best global subset", ORACLE: "Per-row greedy",
            BEST_PEER: "Best peer",
            **{name: REGISTRY[name].label
               for name in (*TREE_PEERS, *TORCH_PEERS, "fastshap", "l2x_background")},
            **{f"{name}_repaired": f"{REGISTRY[name].label} + repair" for name in OURS},
            **{f"{name}_thresholded": f"{REGISTRY[name].label} (k=None)"
               for name in THRESHOLDED}},
    readme=(".. tables-table-start", ".. tables-table-end"),
    readme_tables=(SUMMARY_TITLE, "Fidelity (points)",
                   "EVAL-X (eACC / eR2, points) of every method's masks",
                   "Acceptance: cells failing each check",
                   "Evaluation (points; mean over the data sets)"),
    spread=None,  # the means alone, but the fidelity's spread (_fidelity_cell)
)
