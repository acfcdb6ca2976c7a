"""Real tables: our explainers against references and per-row peers, on tables shipped with
installed packages and the black boxes people fit on them.

A pair is a table and a black box fitted on 70 % of its rows; its data sets are
``table/black_box/k=K`` (k = 3 and 20 % of the features) and ``k=None`` (the thresholded
selection of REAL-X and HardKuma). Every mask set is judged as ``score`` judges an
explainer's (:func:`fidelity`), by EVAL-X and by :func:`sk_sointer.metrics.evaluate`.

    python benchmarks/bench.py tables --profile full --update-doc
"""

import copy
import warnings
from collections import namedtuple
from functools import partial
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
from sk_sointer.metrics import break_even_rows, greedy_masks, output_agreement, random_masks

from ..harness import fastshap, peers, quality, study
from ..harness.data import EXPLAIN_SEED, TRAIN_SEED, fit_evaluator
from ..harness.ours import build_explainer, recorded_params
from ..harness.quality import (BREAK_EVEN, CURVE_ENTRIES, EVALUATION_METRICS, MASK_ENTRIES,
                               OUR_ENTRIES)
from ..harness.registry import METHODS as SHARED_METHODS, Method
from ..harness.study import Metric, Study, Table, percent, seeded
from ..harness.timing import best_time, elapsed
from ..harness.torch_net import TorchMLPClassifier

SPLIT_SEED = 0
# L2X also with its masks judged on 16 background rows (refinement, repair), not the mean.
OURS = ("l2x", "realx", "meed", "hardkuma", "l2x_background")
THRESHOLDED = ("realx", "hardkuma")
# The peers of every pair, then those of one kind of black box only.
PEERS = ("shap_kernel", "lime", "fastshap")
TREE_PEERS = ("shap_tree", "shap_tree_path")
TORCH_PEERS = ("integrated_gradients_mean",)
TREE_MODELS = ("rf", "hgb", "gbr", "rf_per_output")
TORCH_MODELS = ("torch_mlp",)
ALL_PEERS = (*PEERS, *TREE_PEERS, *TORCH_PEERS)
# The references (the best peer of each cell is derived from the records), ours checked
# against the model and repaired (repair="model"), ours at k=None.
RANDOM, GLOBAL, ORACLE, BEST_PEER = "random", "global", "oracle", "best_peer"
REPAIRED = tuple(f"{name}_repaired" for name in OURS)
OWN = tuple(f"{name}_thresholded" for name in THRESHOLDED)
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
    Method(RANDOM, "Random", "numpy", kind=RANDOM),
    Method(GLOBAL, "Best global subset", "sk_sointer", kind=GLOBAL),
    Method(ORACLE, "Per-row greedy", "sk_sointer", kind=ORACLE),
]}}
REGISTRY.update({method.name: method for method in [
    *(Method(f"{name}_repaired", f"{REGISTRY[name].label} + repair", "sk_sointer",
             kind="repaired") for name in OURS),
    *(Method(f"{name}_thresholded", f"{REGISTRY[name].label} (k=None)", "sk_sointer",
             estimator=REGISTRY[name].estimator, params_key=REGISTRY[name].params_key)
      for name in THRESHOLDED)]})
# The order they run in on a data set, which is the order of the tables' columns.
METHODS = (RANDOM, GLOBAL, *ALL_PEERS, *OURS, *REPAIRED, ORACLE)


# Tables, black boxes and profiles
# --------------------------------

Source = namedtuple("Source", "label load n_features")  # load() gives (X, y)


def _sklearn_table(loader, **params):
    return partial(loader, return_X_y=True, **params)  # X of float64


def _load_digits_two_labels():  # even, and at least 5: a multi-output black box
    X, digit = sk_datasets.load_digits(return_X_y=True)
    return X, np.column_stack([digit % 2 == 0, digit >= 5]).astype(np.int64)


def _river_table(name):
    def load():
        from river import datasets  # its files ship in the package

        rows = list(getattr(datasets, name)())
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
    # Platt scaling, as the deprecated SVC(probability=True) gave the probabilities.
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


# ``n_explain`` test rows explained (None: all), ``max_train`` and ``global_rows`` cap the
# training rows fitted on and searched by the global subset; the full profile changes no
# default of ours (``explainer_params``) or of the peers.
_FAST_EPOCHS = {"max_epochs": 2, "batch_size": 64, "refine": ModelRefinement(max_epochs=2)}
_DEFAULTS = {"max_train": None, "seeds": 2, "n_random": 10, "global_rows": None,
             "n_timing": 10_000, "timing_repeats": 5, "explainer_params": {},
             "shap_nsamples": "auto", "lime_num_samples": 5000,
             "eval_steps": 10, "n_perturbations": 5}
PROFILES = {
    # A classifier, a regressor, a two-output classifier.
    "fast": {**_DEFAULTS, "pairs": (("breast_cancer", "lr"), ("diabetes", "knn_regressor"),
                                    ("digits_two_labels", "lr_per_output")),
             "n_explain": 30, "max_train": 200, "n_random": 3, "global_rows": 100,
             "n_timing": 500, "timing_repeats": 1, "shap_nsamples": 40,
             "lime_num_samples": 100, "n_perturbations": 2,
             "explainer_params": {"l2x": _FAST_EPOCHS, "meed": _FAST_EPOCHS,
                                  "hardkuma": _FAST_EPOCHS,
                                  "realx": {**_FAST_EPOCHS, "predictor_epochs": 1},
                                  "evalx": {"max_epochs": 2}}},
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
    table, model, k = parse(dataset)
    return {"table": TABLES[table].label, "black_box": MODELS[model][0], "k": k}


def cases(dataset, methods, profile):
    """The references always; on ``k=None`` the thresholded methods only; the peers of one
    kind of black box on that kind only; a repaired run with its method."""
    context = _context(dataset)
    if context["k"] is None:
        return [(f"{name}_thresholded", context) for name in THRESHOLDED if name in methods]
    model = parse(dataset)[1]
    wanted = {RANDOM, GLOBAL, ORACLE, *methods,
              *(f"{name}_repaired" for name in OURS if name in methods)}
    wanted -= set() if model in TREE_MODELS else set(TREE_PEERS)
    wanted -= set() if model in TORCH_MODELS else set(TORCH_PEERS)
    return [(name, context) for name in METHODS if name in wanted]


# One pair and its masks
# ----------------------


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
    black_box = as_black_box(model)  # the package's reading of the outputs
    outputs, spec = black_box.predict(X_test), black_box.spec
    # Every mask set is judged with the masker (mean fill) and output spec of one of our
    # explainers fitted on these rows, which need no training to be built.
    judge = L2XExplainer(k=1, max_epochs=1, refine=None, random_state=TRAIN_SEED,
                         device=str(device)).fit(X_train, black_box=model)
    X_explain = X_test[: profile.n_explain]
    pair = SimpleNamespace(
        X_train=X_train, X_explain=X_explain, model=model, judge=judge, ks=ks_for(X.shape[1]),
        torch_model=getattr(model, "module_", None),
        X_timing=X_test[np.arange(profile.n_timing) % len(X_test)], cache={}, evaluator=None,
        evaluator_fit_s=None, evaluator_error=None)
    fit_evaluator(pair, profile, device)
    pair.values = {  # recorded with ``method=None``
        "n_features": X.shape[1], "n_outputs": spec.n_outputs, "n_train": len(X_train),
        "n_test": len(X_test), "n_explain": len(X_explain), "black_box_fit_s": fit_s,
        "black_box_score": output_agreement(spec.encode(y_test, len(X_test)), outputs, spec),
        "evalx_fit_s": pair.evaluator_fit_s, "evalx_error": pair.evaluator_error,
        "task": spec.task, "eval_x_metric": "eR2" if spec.task == "regression" else "eACC",
        "table": TABLES[table].label, "black_box": MODELS[model_name][0]}
    return pair


def fidelity(judge, X, masks):
    """What ``judge.score(X)`` measures, for any masks: the black box on the masked rows
    against the black box on ``X``, with the masker and output spec of ``judge``."""
    predict = judge.black_box_.predict
    return output_agreement(predict(X), predict(judge.masker_.mask_raw(X, masks)),
                            judge.output_spec_)


def judged(pair, profile, masks, entries=MASK_ENTRIES, scores=None):
    """The fidelity, EVAL-X's eACC (eR² for a regressor), the sizes and the evaluation
    ``entries`` (left-out features at the judge's baseline) of a mask set."""
    eval_x, sizes = None, masks.sum(axis=1)
    if pair.evaluator is not None:
        eval_x = pair.evaluator.score_masks(pair.X_explain, masks)
        eval_x = eval_x.get("eACC", eval_x.get("eR2"))
    return {"fidelity": fidelity(pair.judge, pair.X_explain, masks), "eval_x": eval_x,
            "n_distinct_masks": len(np.unique(masks > 0, axis=0)),
            "mean_selected": float(np.mean(sizes)), "empty_rate": float(np.mean(sizes == 0)),
            **(quality.evaluation(pair, profile, masks, entries, scores=scores,
                                  baseline=pair.judge.masker_.baseline_) if entries else {})}


def random_draws(pair, sizes, profile):
    """``profile.n_random`` draws of random masks with ``sizes`` features a row."""
    rng = np.random.RandomState(EXPLAIN_SEED)
    return [random_masks(len(sizes), pair.X_train.shape[1], sizes, random_state=rng)
            for _ in range(profile.n_random)]


def greedy_forward(n_subsets, n_features, k, scores):
    """Greedy forward selection of ``n_subsets`` subsets at once: ``k`` rounds, each adding to
    every subset the feature whose addition ``scores`` rates highest (ties to the lower
    index). ``scores(candidates)`` rates the boolean (subsets, features, features) candidates,
    a subset with each feature added, as (subsets, features). The features in the order
    added, (subsets, k)."""
    chosen, order = np.zeros((n_subsets, n_features), dtype=bool), []
    for _ in range(k):
        candidates = np.repeat(chosen, n_features, axis=0).reshape(
            n_subsets, n_features, n_features)
        candidates[:, np.arange(n_features), np.arange(n_features)] = True
        score = np.asarray(scores(candidates), dtype=np.float64)
        score[chosen] = -np.inf
        order.append(score.argmax(axis=1))
        chosen[np.arange(n_subsets), order[-1]] = True
    return np.stack(order, axis=1)


def global_order(judge, X, max_k):
    """The features of the best global subset in the order :func:`greedy_forward` adds them,
    each subset rated by its :func:`fidelity` on the rows ``X``."""
    predict, n_rows, n_features = judge.black_box_.predict, *X.shape
    full = predict(X)

    def scores(candidates):  # every candidate subset on every row, in one query of the model
        masked = predict(judge.masker_.mask_raw(np.tile(X, (n_features, 1)),
                                                np.repeat(candidates[0], n_rows, axis=0)))
        return [[output_agreement(full, block, judge.output_spec_)
                 for block in np.split(masked, n_features)]]
    return [int(j) for j in greedy_forward(1, n_features, max_k, scores)[0]]


def repaired(explainer, X):
    """A copy of the fitted explainer checks its masks of ``X`` against the model and
    repairs the failing rows (``repair="model"``): the repair and its seconds."""
    explainer = copy.deepcopy(explainer).set_params(repair="model")
    return elapsed(lambda: explainer.repair_masks(X))


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


# How each kind of method (``Method.kind``) is measured
# -----------------------------------------------------


def _random(pair, dataset, method, seed, profile, device, k):  # means over the draws
    runs = [judged(pair, profile, masks)
            for masks in random_draws(pair, np.full(len(pair.X_explain), k), profile)]
    return {**{name: None if runs[0][name] is None else float(np.mean([r[name] for r in runs]))
               for name in runs[0] if name != "n_distinct_masks"
               and all(name in run for run in runs)}, "queries_per_row": 0}


def _global(pair, dataset, method, seed, profile, device, k):
    order = _once(pair, GLOBAL, lambda: global_order(
        pair.judge, pair.X_train[: profile.global_rows], max(pair.ks)))
    masks = np.zeros(pair.X_explain.shape, dtype=np.float32)
    masks[:, order[:k]] = 1.0
    return {**judged(pair, profile, masks), "params": {"features": order[:k]},
            "queries_per_row": 0}


def _peer(pair, dataset, method, seed, profile, device, k):
    with warnings.catch_warnings():
        # LIME's sparse regressions on rows a model answers alike; not ours to report.
        warnings.simplefilter("ignore", ConvergenceWarning)
        values, setup_s, explain_s = _once(
            pair, method, lambda: REGISTRY[method].attribute(pair, profile, device))
    # Rows sent to the black box a row: KernelSHAP's coalitions (shap's "auto": 2 d + 2048)
    # times its 10 background rows, LIME's samples, IG's path steps, FastSHAP's one answer
    # for its normalisation; TreeSHAP reads the trees.
    nsamples = profile.shap_nsamples
    queries = {"shap_kernel": 10 * (2 * pair.X_train.shape[1] + 2048 if nsamples == "auto"
                                    else nsamples), "lime": profile.lime_num_samples,
               "integrated_gradients_mean": 50, "fastshap": 1}.get(method, 0)
    masks = peers.topk_of_abs(values, k)
    return {**judged(pair, profile, masks, (*MASK_ENTRIES, *CURVE_ENTRIES), np.abs(values)),
            "setup_s": setup_s, "explain_ms_per_row": 1000 * explain_s / len(pair.X_explain),
            "queries_per_row": queries}


def _oracle(pair, dataset, method, seed, profile, device, k):
    """Per row, the greedy search that queries the model itself."""
    masks, explain_s = elapsed(lambda: greedy_masks(pair.judge, pair.X_explain, k))
    return {**judged(pair, profile, masks),
            "explain_ms_per_row": 1000 * explain_s / len(pair.X_explain),
            # The full row's answer, then every candidate of each of the k rounds.
            "queries_per_row": 1 + sum(pair.judge.masker_.n_groups_ - j for j in range(k))}


def _repaired(pair, dataset, method, seed, profile, device, k):
    """The explainer of the same seed, every row checked and repaired."""
    own = method.removesuffix("_repaired")
    repair, explain_s = repaired(pair.cache[("explainer", dataset, own, seed)], pair.X_explain)
    return {**judged(pair, profile, repair.masks),
            "held_before": 1 - repair.n_failed / len(pair.X_explain),
            "repaired_share": repair.n_repaired / max(repair.n_failed, 1),
            "queries_per_row": repair.queries_per_row,
            "explain_ms_per_row": 1000 * explain_s / len(pair.X_explain)}


def _ours(pair, dataset, method, seed, profile, device, k):
    """Ours; k=None: the method's own thresholded selection."""
    explainer = build_explainer(REGISTRY[method], SimpleNamespace(k=k, control_flow=False),
                                profile, device).set_params(random_state=seed)
    fit_s = elapsed(lambda: explainer.fit(pair.X_train, black_box=pair.model))[1]
    masks = explainer.transform(pair.X_explain)
    pair.cache[("explainer", dataset, method, seed)] = explainer
    # Every fidelity is the share of all rows (score weighs each answer alike), read at the
    # mean; one with background rows is also read on them.
    run = {**judged(pair, profile, masks, entries=()), "fit_s": fit_s, "queries_per_row": 0,
           "params": recorded_params(explainer, seed=False)}
    if explainer.background_ is not None:
        check = explainer.check(pair.X_explain, masks)
        run["fidelity_background"] = output_agreement(
            check.outputs, check.masked_outputs, explainer.output_spec_)
    run.update(quality.evaluation(
        pair, profile, explainer,
        (*OUR_ENTRIES, "features_per_row_std") if k is None else OUR_ENTRIES))
    run.update(quality.seed_agreement(pair.cache, (dataset, method), seed, masks))
    if k is None:
        draws = random_draws(pair, masks.sum(axis=1).astype(int), profile)
        run["random_same_sizes"] = float(np.mean(
            [fidelity(pair.judge, pair.X_explain, draw) for draw in draws]))
    if seed == TRAIN_SEED:
        run["transform_us_per_row"] = 1e6 * best_time(
            lambda: explainer.transform(pair.X_timing), profile.timing_repeats, warmup=1
        ) / len(pair.X_timing)
    return run


MEASURES = {RANDOM: _random, GLOBAL: _global, "peer": _peer, ORACLE: _oracle,
            "repaired": _repaired, "ours": _ours}


def measure(pair, dataset, method, seed, profile, device, k, **labels):
    return MEASURES[REGISTRY[method].kind](pair, dataset, method, seed, profile, device, k)


# Gaps, acceptance and report
# ---------------------------

GAPS = ("gap_global", "gap_kernel_shap", "gap_best_peer", "eval_x_gap_kernel_shap",
        "gap_random", "half_distance", "gap_oracle", "eval_x_gap_unrepaired")
# The acceptance checks (each cell of ours must pass every one that applies to it): name,
# what fails it, the runs it applies to, the value it reads and its bound: a gap (and the
# half distance) fails below it, others above.
CHECKS = (
    ("global", "fidelity below the best global subset − 1 point", OURS, "gap_global", -0.01),
    ("best_peer", "fidelity below the best peer of the cell − 2 points", ("l2x", "meed"),
     "gap_best_peer", -0.02),
    ("dominated", "a peer over 1 point ahead on both fidelity and EVAL-X", OURS, "dominated",
     0),
    ("oracle", "repaired: fidelity below the per-row greedy search − 1 point", REPAIRED,
     "gap_oracle", -0.01),
    ("repaired_eval_x", "repaired: EVAL-X below the unrepaired masks'", REPAIRED,
     "eval_x_gap_unrepaired", -0.005),
    ("seeds", "fidelity spread between seeds over 2 points (cells of 300 explained rows or "
     "more)", (*OURS, *REPAIRED, *OWN), "fidelity_spread", 0.02),
    ("empty", "over 1 % empty masks (k=None)", OWN, "empty_rate", 0.01),
    ("half_distance", "REAL-X (k=None) closes under half the distance from random masks of "
     "the same sizes to 100 %", ("realx_thresholded",), "half_distance", 0.0),
    ("random", "HardKuma (k=None) below random masks of the same sizes",
     ("hardkuma_thresholded",), "gap_random", 0.0),
)
# The seed spread is judged on cells with at least this many explained rows.
SPREAD_ROWS = 300


def _difference(a, b):
    return None if None in (a, b) else a - b


def with_gaps(records):
    """The records in table order, the best peer of each cell with k set and, for each of
    our runs without an error (means over seeds), its :data:`GAPS`, ``dominated`` (a peer
    over a point ahead on fidelity and EVAL-X), the break-even rows against KernelSHAP, the
    repaired queries as a share of the search's, and one record a check of :data:`CHECKS`
    that applies to it, 1 if it fails."""
    summary = study.summarize(records)

    def mean(dataset, method, metric="fidelity"):
        entry = summary.get((dataset, method), {"error": True})
        return None if entry["error"] else entry.get(metric)

    def peer_scores(dataset):
        return [(mean(dataset, peer), peer, mean(dataset, peer, "eval_x"))
                for peer in ALL_PEERS if mean(dataset, peer) is not None]

    best = []
    for dataset in dict.fromkeys(dataset for dataset, _ in summary):
        if parse(dataset)[2] is not None and peer_scores(dataset):
            fid, peer, ex = max(peer_scores(dataset))
            best += study.records_of(STUDY, dataset, BEST_PEER, None, {
                "fidelity": fid, "eval_x": ex, "peer": peer}, **_context(dataset))
    rank = {name: i for i, name in enumerate(
        (None, RANDOM, GLOBAL, *ALL_PEERS, BEST_PEER, *OURS, *REPAIRED, ORACLE, *OWN))}
    first = {name: i for i, name in enumerate(dict.fromkeys(r["dataset"] for r in records))}
    records = sorted(records + best, key=lambda r: (
        first[r["dataset"]], rank.get(r["method"], len(rank))))
    derived = []
    for (dataset, method), entry in summary.items():
        if method not in (*OURS, *REPAIRED, *OWN) or entry["error"]:
            continue
        context, fid, ex = _context(dataset), entry["fidelity"], entry.get("eval_x")
        if method in REPAIRED:
            search = mean(dataset, ORACLE, "queries_per_row")
            values = {"gap_oracle": _difference(fid, mean(dataset, ORACLE)),
                      "eval_x_gap_unrepaired": _difference(ex, mean(
                          dataset, method.removesuffix("_repaired"), "eval_x")),
                      "oracle_query_share": entry["queries_per_row"] / max(search or 1, 1)}
        elif context["k"] is None:
            random = mean(dataset, method, "random_same_sizes")
            values = {"gap_random": _difference(fid, random)}
            values["half_distance"] = (None if random is None
                                       else values["gap_random"] - 0.5 * (1 - random))
        else:
            values = {"gap_global": _difference(fid, mean(dataset, GLOBAL)),
                      "gap_kernel_shap": _difference(fid, mean(dataset, "shap_kernel")),
                      "eval_x_gap_kernel_shap": _difference(
                          ex, mean(dataset, "shap_kernel", "eval_x"))}
            theirs = peer_scores(dataset)
            if theirs:
                values["gap_best_peer"] = fid - max(theirs)[0]
                values["dominated"] = int(any(
                    their_fid > fid + 0.01 and None not in (their_ex, ex)
                    and their_ex > ex + 0.01 for their_fid, _, their_ex in theirs))
            times = (entry.get("fit_s"), entry.get("transform_us_per_row"),
                     mean(dataset, "shap_kernel", "explain_ms_per_row"))
            values[BREAK_EVEN] = None if None in times else break_even_rows(*times)
        derived += study.records_of(STUDY, dataset, method, None, values, **context)
        values.update(empty_rate=entry["empty_rate"],
                      fidelity_spread=float(np.ptp(entry["fidelity_seeds"])))
        for name, text, methods, key, bound in CHECKS:
            if method not in methods or (
                    name == "seeds" and mean(dataset, None, "n_explain") < SPREAD_ROWS):
                continue  # a row is a point or more of fidelity there: no spread judged
            value = values.get(key)
            fails = value is not None and (value < bound if "gap" in key or key ==
                                           "half_distance" else value > bound)
            derived += study.records_of(STUDY, dataset, method, None,
                                        {"fails": int(fails)}, check=text, **context)
    return records + derived


def fields(records, machine, profile):
    return {"last_seed": profile.seeds - 1,
            "explained": "every test row explained" if profile.n_explain is None
            else f"up to {profile.n_explain} test rows explained",
            "training": "the profile's short training" if profile.explainer_params
            else "the package's defaults (only k and random_state set)"}


def _fidelity_cell(values):
    """The mean in points; over seeds, the spread (max − min) in parentheses."""
    spread = f" ({100 * float(np.ptp(values)):.1f})" if len(values) > 1 else ""
    return f"{100 * float(np.mean(values)):.1f}" + spread


_HEADERS = {"table": "Table", "black_box": "Black box"}
# The front page's table: ours with and without repair, the best peer, the references.
SUMMARY = (RANDOM, GLOBAL, BEST_PEER, "l2x", "meed", "l2x_repaired", "meed_repaired", ORACLE)
SUMMARY_TITLE = ("Fidelity (points): L2X and MEED, alone and repaired, against the best peer "
                 "of each cell")
EVALUATION_COLUMNS = ("fidelity_kept", "fidelity_removed", "road_kept", "road_removed",
                      "deletion_auc", "insertion_auc", "seed_agreement", "mask_change",
                      "features_per_row", "transform_us_per_row", "explain_ms_per_row",
                      BREAK_EVEN)


def _per_method(title, metric, mean_row=True, methods=None):
    """A table of one metric, a row a table, black box and k, a column a method."""
    return Table(title, (metric,), rows=("table", "black_box", "k"), columns="method",
                 where=lambda r: r["k"] is not None and (not methods or r["method"] in methods),
                 labels=_HEADERS, mean_row=mean_row)


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
        **EVALUATION_METRICS,
    },
    tables=(
        _per_method(SUMMARY_TITLE, "fidelity", methods=SUMMARY),
        _per_method("Fidelity (points)", "fidelity"),
        _per_method("Our fidelity minus the best global subset (points)", "gap_global"),
        _per_method("Our fidelity minus KernelSHAP (points)", "gap_kernel_shap"),
        _per_method("Our fidelity minus the best peer of the cell (points)", "gap_best_peer"),
        _per_method("EVAL-X (eACC / eR2, points) of every method's masks", "eval_x"),
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
        _per_method("Model queries a row (ours without repair: none)", "queries_per_row"),
        _per_method("Distinct masks among the explained rows (ours: mean over seeds)",
                    "n_distinct_masks", mean_row=False),
        _per_method("Fit seconds", "fit_s", mean_row=False),
        _per_method("Transform, microseconds a row (on {n_timing:,} rows)",
                    "transform_us_per_row", mean_row=False),
        _per_method("Milliseconds a row of the peers (one run for every k) and the per-row "
                    "search", "explain_ms_per_row", mean_row=False),
        Table("Acceptance: cells failing each check", ("fails",), rows=("check",),
              columns="method", where=lambda r: "check" in r, labels={"check": "Check"}),
        Table("Evaluation (points; mean over the data sets)", EVALUATION_COLUMNS,
              rows=("method",)),
        Table("The black boxes on the test rows (points)", ("black_box_score",),
              rows=("table", "black_box"), where={"method": None}, labels=_HEADERS),
    ),
    fields=fields,
    postprocess=with_gaps,
    labels={BEST_PEER: "Best peer", **{name: method.label for name, method in REGISTRY.items()}},
    readme=(".. tables-table-start", ".. tables-table-end"),
    readme_tables=(SUMMARY_TITLE, "Fidelity (points)",
                   "EVAL-X (eACC / eR2, points) of every method's masks",
                   "Acceptance: cells failing each check",
                   "Evaluation (points; mean over the data sets)"),
    spread=None,  # the means alone, but the fidelity's spread (_fidelity_cell)
)
