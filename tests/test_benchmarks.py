"""Smoke tests of the benchmark harness on the tiniest settings (our explainers; of the
peers, only captum's Saliency on a few rows).

Timings are only checked to be positive and finite: their values depend on the machine.
"""

import dataclasses
import json
import math
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier

from benchmarks import bench
from benchmarks.harness import data, ours, peers, quality, registry, report, study
from benchmarks.studies import structured, synthetic, tables
import sk_sointer
from sk_sointer import L2XExplainer, ModelRefinement, as_black_box, metrics

from .test_bench_tables import acceptance

try:
    import river  # noqa: F401  (only the bench and datasets extras install it)
    HAVE_RIVER = True
except ImportError:
    HAVE_RIVER = False

_SHORT_REFINEMENT = ModelRefinement(max_epochs=2, judge_epochs=2)
TINY = study.Profile(
    name="smoke",
    n_train=300,
    n_explain=100,
    n_timing=500,
    n_black_box=None,
    timing_repeats=2,
    seeds=1,
    shap_nsamples=200,
    lime_num_samples=5000,
    captum_kernel_shap_samples=200,
    eval_steps=5,
    n_perturbations=2,
    # Two epochs of training and of the refinement against the model (the refinement's
    # default budget is most of a smoke fit's time and no test here reads its quality).
    explainer_params={
        "l2x": {"max_epochs": 2, "batch_size": 64, "refine": _SHORT_REFINEMENT},
        "realx": {"max_epochs": 2, "predictor_epochs": 1, "batch_size": 64,
                  "refine": _SHORT_REFINEMENT},
        "meed": {"max_epochs": 2, "batch_size": 64, "refine": _SHORT_REFINEMENT},
        "hardkuma": {"max_epochs": 2, "batch_size": 64, "refine": _SHORT_REFINEMENT},
        "evalx": {"max_epochs": 2},
    },
)
# Fewer rows, one timing repeat.
SMALL = TINY.replace(n_train=200, n_explain=50, n_timing=100, timing_repeats=1)
CONTEXT = {"k", "params", "explain_timing", "evalx_error"}


def run_synthetic(profile, datasets, methods, **values):
    """The synthetic study's records of ``methods`` on ``datasets``, on the CPU."""
    return study.run(synthetic.STUDY, profile.replace(datasets=datasets, **values),
                     methods=methods, device="cpu")


def by_pair(records):
    return study.summarize(records)


@pytest.fixture(scope="module")
def s1_run():
    """Our explainers on S1, the set with every metric (CFSR and eACC)."""
    return run_synthetic(TINY, ["S1"], registry.method_names(amortized=True))


def _finite(value):
    return isinstance(value, float) and math.isfinite(value)


def test_records_hold_finite_metrics_in_range(s1_run):
    assert list(dict.fromkeys(r["method"] for r in s1_run if r["method"])) == [
        "l2x", "realx", "meed", "hardkuma", "meed_feedback"]
    assert not [r for r in s1_run if r["metric"] == "error"]
    for r in s1_run:
        assert set(study.RECORD_KEYS) <= set(r) <= {*study.RECORD_KEYS, *CONTEXT}
        assert (r["study"], r["dataset"], r["unit"]) == (
            "synthetic", "S1", synthetic.STUDY.unit(r["metric"]))
    summary = by_pair(s1_run)
    dataset = summary[("S1", None)]
    assert (dataset["n_train"], dataset["n_explain"]) == (300, 100)
    n_features = dataset["n_features"]
    assert _finite(dataset["black_box_acc"]) and 0.0 <= dataset["black_box_acc"] <= 1.0
    assert not any(r.get("evalx_error") for r in s1_run)
    for name in ["l2x", "realx", "meed", "hardkuma", "meed_feedback"]:
        record = summary[("S1", name)]
        # S1 rows have 3 or 5 relevant features, so the optimum lies between 2 and 3.
        assert 2.0 <= record["median_rank_optimum"] <= 3.0
        assert record["median_rank_optimum"] <= record["median_rank"] <= n_features
        for metric in ("tpr", "fdr", "cfsr", "posthoc_acc", "own_acc", "own_agreement"):
            assert _finite(record[metric]) and 0.0 <= record[metric] <= 1.0, metric
        assert 0.0 <= record["mean_selected"] <= n_features
        for metric in ("fit_s", "explain_ms_per_row", "throughput_ratio", "forward_ms",
                       "transform_ms"):
            assert _finite(record[metric]) and record[metric] > 0, metric
        for metric in ("eacc", "eacc_expected"):
            assert _finite(record[metric]) and 0.0 <= record[metric] <= 1.0, metric


def test_our_runs_report_through_evaluate_and_later_seeds_agree_with_the_first(s1_run):
    summary = by_pair(s1_run)
    for name in registry.method_names(amortized=True):
        record = summary[("S1", name)]
        for entry in set(quality.OUR_ENTRIES) - {"features_per_row"}:
            assert _finite(record[entry]) and 0.0 <= record[entry] <= 1.0, (name, entry)
        assert record["features_per_row"] == pytest.approx(record["mean_selected"])
    # REAL-X's thresholded masks also have a spread of sizes.
    assert _finite(summary[("S1", "realx")]["features_per_row_std"])
    records = run_synthetic(SMALL, ["xor"], ["l2x"], seeds=3)
    agreement = [r for r in records if r["metric"] == "seed_agreement"]
    assert [r["seed"] for r in agreement] == [1, 2]
    assert all(0.0 <= r["value"] <= 1.0 for r in agreement)
    assert len([r for r in records if r["metric"] == "median_rank"]) == 3


def test_break_even_rows_come_from_our_fit_and_kernel_shap_per_row_cost():
    records = [
        *study.records_of(synthetic.STUDY, "xor", "l2x", 0,
                          {"fit_s": 10.0, "explain_ms_per_row": 0.002}, k=2),
        *study.records_of(synthetic.STUDY, "xor", "shap_kernel", None,
                          {"explain_ms_per_row": 12.0}, k=2),
        *study.records_of(synthetic.STUDY, "S1", "l2x", 0, {"fit_s": 10.0}, k=4),
    ]
    derived = [r for r in synthetic.with_break_even(records)
               if r["metric"] == synthetic.BREAK_EVEN]
    # 10 s over (12 ms - 2 µs) a row; none on S1, which has no KernelSHAP run.
    assert [(r["dataset"], r["method"]) for r in derived] == [("xor", "l2x")]
    assert derived[0]["value"] == pytest.approx(10.0 / (12e-3 - 2e-6))
    # Postprocessing twice derives the same records once.
    assert synthetic.with_break_even(synthetic.with_break_even(records)) == \
        synthetic.with_break_even(records)
    text = _render(records)
    block = text.split(".. table:: Evaluation (points; mean over the data sets)\n")[1]
    assert "| L2X " in block and "| 833 " in block


def test_our_explainers_use_their_s_set_selection_rules(s1_run):
    k = {r["method"]: r["k"] for r in s1_run if r["method"]}
    assert k["l2x"] == 4 and by_pair(s1_run)[("S1", "l2x")]["mean_selected"] == 4.0
    assert k["realx"] is None  # thresholded, as in REAL-X's Table 1


def _machine():
    return report.machine_info("cpu")


def _render(records, profile=TINY):
    return report.render(synthetic.STUDY, records, _machine(), profile)


def test_rst_table_renders_one_row_per_record(s1_run):
    text = _render(s1_run)
    lines = text.splitlines()
    start = lines.index(".. table:: Synthetic data sets")
    table = []
    for line in lines[start + 2 :]:
        if not line.startswith(("   +", "   |")):
            break
        table.append(line)
    # A grid table's column separators line up in every line, borders and cells alike.
    columns = {tuple(i for i, char in enumerate(line) if char in "+|") for line in table}
    assert len(columns) == 1 and len(next(iter(columns))) == 14  # 13 columns
    header_end = next(i for i, line in enumerate(table) if line.startswith("   +="))
    methods = {r["method"] for r in s1_run if r["method"]}
    assert sum(line.startswith("   +-") for line in table[header_end:]) == len(methods)
    assert "L2X (k = 4)" in text and "``smoke``" in text


def test_readme_block_is_replaced_between_the_markers_only():
    text = ("Title\n=====\n\n.. results-table-start\n\nold table\n\n"
            ".. results-table-end\n\nAfter.\n")
    once = report.replace_between_markers(text, "new table\n")
    assert once == ("Title\n=====\n\n.. results-table-start\n\nnew table\n\n"
                    ".. results-table-end\n\nAfter.\n")
    assert report.replace_between_markers(once, "new table\n") == once
    with pytest.raises(ValueError, match="results-table-start"):
        report.replace_between_markers("no markers\n", "table")


def test_readme_has_the_results_markers():
    readme = bench.RESULTS_PAGE
    lines = readme.read_text(encoding="utf-8").splitlines()
    start, end = synthetic.STUDY.readme
    assert (start, end) == (report.README_START, report.README_END)
    assert lines.index(start) < lines.index(end)


class _BrokenL2X(L2XExplainer):
    def fit(self, X, y=None, *, black_box=None):
        raise RuntimeError("boom")


def test_a_failing_method_is_recorded_and_the_run_goes_on(monkeypatch):
    monkeypatch.setitem(registry.METHODS, "l2x",
                        dataclasses.replace(registry.METHODS["l2x"], estimator=_BrokenL2X))
    records = run_synthetic(SMALL, ["xor"], ["l2x", "realx"])
    [failed] = [r for r in records if r["metric"] == "error"]
    assert failed["method"] == "l2x"
    assert failed["error"] == "RuntimeError: boom" and "boom" in failed["traceback"]
    summary = by_pair(records)
    assert "median_rank" not in summary[("xor", "l2x")]
    assert summary[("xor", "realx")]["error"] is None
    assert _finite(summary[("xor", "realx")]["median_rank"])


class _StubEvaluator(BaseEstimator):
    """Stands in for EvalXEvaluator: records how the harness calls it."""

    calls = []

    def __init__(self, max_epochs=100, device="auto", random_state=None):
        self.max_epochs = max_epochs
        self.device = device
        self.random_state = random_state

    def fit(self, X, y=None, *, black_box=None):
        self.calls.append(("fit", X.shape, black_box is not None, self.max_epochs, self.device))
        return self

    def score_masks(self, X, masks, y=None):
        self.calls.append(("score_masks", masks.shape, y is not None))
        return {"eACC": 0.25, "eAUROC": 0.5, "eNLL": 0.75}

    def predict_masked(self, X, masks):
        # Class 1 in every row: the expected accuracy is then the mean of P(y = 1 | x).
        return np.tile([0.2, 0.8], (len(X), 1))


def test_one_evaluator_per_data_set_judges_every_method(monkeypatch):
    monkeypatch.setattr(metrics, "EvalXEvaluator", _StubEvaluator)
    monkeypatch.setattr(_StubEvaluator, "calls", [])
    records = run_synthetic(SMALL, ["xor", "xor_probe"], ["l2x"])
    # XOR and its probe share rows, black box and evaluator; the evaluator's parameters come
    # from the profile and the run's device.
    assert _StubEvaluator.calls[0] == ("fit", (200, 10), True, 2, "cpu")
    assert _StubEvaluator.calls[1:] == [("score_masks", (50, 10), True)] * 2
    summary = by_pair(records)
    for dataset in ("xor", "xor_probe"):
        record = summary[(dataset, "l2x")]
        assert record["error"] is None
        assert (record["eacc"], record["eauroc"], record["enll"]) == (0.25, 0.5, 0.75)
        assert summary[(dataset, None)]["evalx_fit_s"] >= 0
    assert not any(r.get("evalx_error") for r in records)
    _, _, _, proba = data.DATASETS["xor"].draw(50, data.EXPLAIN_SEED, return_proba=True)
    assert summary[("xor", "l2x")]["eacc_expected"] == pytest.approx(proba.mean())


def test_a_failing_data_set_fails_its_methods_only(monkeypatch):
    def prepare(spec, *args):
        if spec.name == "orange_skin":
            raise ValueError("no rows")
        return data.prepare(spec, *args)

    monkeypatch.setattr(synthetic, "prepare_data", prepare)
    records = run_synthetic(SMALL, ["orange_skin", "xor"], ["l2x"])
    summary = by_pair(records)
    assert [summary[(name, "l2x")]["error"] for name in ("orange_skin", "xor")] == [
        "data set: ValueError: no rows", None]


def test_results_are_saved_as_strict_json(s1_run, tmp_path):
    path = tmp_path / "results" / "synthetic_smoke.json"
    records = [*s1_run, {**s1_run[-1], "value": float("nan")}]
    report.save_results(path, records, _machine(), TINY, study="synthetic")
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert saved["study"] == "synthetic"
    assert saved["machine"]["torch"] == torch.__version__
    assert saved["profile"]["n_train"] == 300
    assert len(saved["records"]) == len(records) and saved["records"][-1]["value"] is None
    assert not list(path.parent.glob("*.tmp"))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("n_classes", [2, 3])
def test_mlp_to_torch_matches_predict_proba(n_classes):
    rng = np.random.RandomState(0)
    X = rng.randn(200, 5)
    y = np.digitize(X[:, 0] + X[:, 1] * X[:, 2], np.quantile(X[:, 0], [1 / 3, 2 / 3]))
    y = y if n_classes == 3 else (y > 0).astype(int)
    model = MLPClassifier((16, 8), max_iter=50, random_state=0).fit(X, y)
    net = data.mlp_to_torch(model)
    assert data.check_torch_copy(model, net, X) <= 1e-5
    with torch.inference_mode():
        proba = net(torch.as_tensor(X, dtype=torch.float32)).numpy()
    assert proba.shape == (200, n_classes)
    np.testing.assert_allclose(proba, model.predict_proba(X), atol=1e-5)


def test_peer_masks_are_top_k_of_absolute_attributions():
    attributions = np.array([[0.1, -0.9, 0.5, 0.5], [0.0, 0.0, 0.0, -0.2]])
    np.testing.assert_array_equal(peers.topk_of_abs(attributions, 2),
                                  [[0, 1, 1, 0], [1, 0, 0, 1]])


def test_merge_keeps_records_not_redone():
    kept = [{"dataset": "S1", "method": "l2x", "v": 1},
            {"dataset": "xor", "method": "lime", "v": 2}]
    new = [{"dataset": "S1", "method": "l2x", "v": 3}]
    merged = study.merge(kept, new, synthetic.STUDY.datasets(TINY))
    assert [(r["dataset"], r["method"], r["v"]) for r in merged] == [
        ("xor", "lime", 2), ("S1", "l2x", 3)
    ]


def test_structured_merge_replaces_redone_records_and_places_new_methods_by_task():
    def rec(d, target, method, v):
        return {"dataset": f"E1/{d}/y{target + 1}", "n_features": d, "target": target,
                "method": method, "v": v}

    kept = [rec(5, 0, "sointer", 1), rec(5, 0, "random", 2), rec(10, 0, "sointer", 3)]
    new = [rec(5, 0, "sointer", 4), rec(5, 0, "sointer_baseline", 5), rec(20, 1, "l2x", 6)]
    merged = study.merge(kept, new)
    assert [(r["n_features"], r["method"], r["v"]) for r in merged] == [
        (5, "sointer", 4), (5, "random", 2), (5, "sointer_baseline", 5), (10, "sointer", 3),
        (20, "l2x", 6),
    ]


def test_extra_seeds_record_each_seeds_median_rank():
    records = run_synthetic(TINY, ["orange_skin"], ["l2x"], seeds=3)
    ranks = {r["seed"]: r["value"] for r in records
             if r["method"] == "l2x" and r["metric"] == "median_rank"}
    assert sorted(ranks) == [0, 1, 2]
    # Seed 0 has every metric, the others their median rank only.
    assert {r["seed"] for r in records if r["metric"] == "tpr"} == {0}
    # Seed 1 is the explainer the harness builds, refitted with random_state=1.
    spec = data.DATASETS["orange_skin"]
    prepared = data.prepare(spec, TINY, torch.device("cpu"), False)
    explainer = ours.build_explainer(registry.METHODS["l2x"], spec, TINY, torch.device("cpu"))
    explainer.set_params(random_state=1).fit(prepared.X_train, black_box=prepared.model)
    assert ranks[1] == metrics.median_rank(prepared.relevant_explain,
                                           explainer.transform(prepared.X_explain))
    text = _render(records, TINY.replace(seeds=3))
    assert "Median rank over explainer seeds" in text and "over 3 seeds" in text
    assert f"{np.mean(list(ranks.values())):.2f} ± " in text


def test_the_registry_is_the_single_source_of_methods():
    # Every method but those that explain one output of a multi-output model (SOInter),
    # which only the structured study runs.
    names = registry.method_names()
    assert names == [name for name, method in registry.METHODS.items()
                     if not method.target_output]
    assert registry.method_names(target_output=True) == ["sointer", "sointer_baseline"]
    assert list(synthetic.STUDY.methods) == names
    assert bench.parse_args(["synthetic", "--methods", *names])[1].methods == names
    with pytest.raises(SystemExit):
        bench.parse_args(["synthetic", "--methods", "not_a_method"])
    assert set(registry.peer_packages()) <= set(_machine())
    # One rendered row per method, labelled from its registry entry; ours with their k.
    rows = [("xor", "l2x"), ("xor", "realx"), ("S1", "realx"),
            *[("xor", name) for name in registry.method_names(amortized=False)]]
    records = []
    for dataset, name in rows:
        [(_, context)] = synthetic.cases(dataset, [name], TINY)
        records += study.records_of(synthetic.STUDY, dataset, name, None,
                                    {"median_rank": 2.5, "median_rank_optimum": 1.5,
                                     "tpr": 0.5, "fdr": 0.5}, **context)
    text = _render(records)
    cells = [[cell.strip() for cell in line.split("|")[1:-1]] for line in text.splitlines()
             if line.startswith("   |") and "| 2.50 " in line]
    assert all(row[2:4] == ["2.50", "1.50"] for row in cells)
    peer_labels = [registry.METHODS[name].label for name in registry.method_names(amortized=False)]
    assert [row[1] for row in cells] == [
        "L2X (k = 2)", "REAL-X (k = 2)", "REAL-X (thresholded)", *peer_labels]
    assert len(set(peer_labels)) == len(peer_labels)


def test_a_registry_entry_is_all_a_new_method_needs(monkeypatch):
    def largest_inputs(prepared, profile, device):
        return prepared.X_explain, 0.0, 1e-3

    monkeypatch.setitem(registry.METHODS, "largest", registry.Method(
        "largest", "Largest |x|", "numpy", attribute=largest_inputs))
    records = run_synthetic(SMALL, ["xor"], ["largest"])
    record = by_pair(records)[("xor", "largest")]
    assert record["error"] is None
    assert ({r["k"] for r in records if r["method"]}, record["mean_selected"]) == ({2}, 2.0)
    X, _, relevant, _ = data.DATASETS["xor"].draw(50, data.EXPLAIN_SEED, return_proba=True)
    assert record["median_rank"] == metrics.median_rank(relevant, peers.topk_of_abs(X, 2))
    assert record["explain_ms_per_row"] == pytest.approx(1e-3 * 1000 / 50)
    assert "Largest |x|" in _render(records, SMALL)
    # evaluate's report of a peer: its masks at the training mean, the curves along |x|.
    prepared = synthetic.prepare("xor", SMALL.replace(datasets=["xor"]), torch.device("cpu"))
    masks = peers.topk_of_abs(X, 2)
    assert record["fidelity_kept"] == pytest.approx(metrics.posthoc_accuracy(
        prepared.model, X, masks, baseline=prepared.X_train.mean(axis=0)))
    curves = metrics.evaluate(masks, prepared.model, X, baseline=prepared.X_train.mean(axis=0),
                              scores=np.abs(X), entries=["deletion_auc"],
                              n_steps=SMALL.eval_steps)
    assert record["deletion_auc"] == pytest.approx(curves.deletion_auc)
    assert {"mask_change", "seed_agreement"}.isdisjoint(record)


def test_the_stored_records_render_the_readme_table():
    text = bench.main(["synthetic", "--render",
                       str(report.RESULTS_DIR / "synthetic_full.json")])
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in text.splitlines()
            if line.startswith("   |")]
    stored = json.loads((report.RESULTS_DIR / "synthetic_full.json").read_text())["records"]
    first = next(r for r in stored if r["method"] is not None)
    values = {}
    for r in stored:
        if (r["dataset"], r["method"]) == (first["dataset"], first["method"]):
            values.setdefault(r["metric"], []).append(r["value"])
    # The median rank is the mean over the seeds (with its spread when they differ).
    assert rows[2][:2] == [data.DATASETS[first["dataset"]].label, synthetic.method_cell(first)]
    assert rows[2][2].split(" ± ")[0] == f"{np.mean(values['median_rank']):.2f}"
    assert rows[2][3] == f"{np.mean(values['median_rank_optimum']):.2f}"


@pytest.fixture(scope="module")
def three_classes():
    """A small MLP on three classes whose labels are not column indices."""
    rng = np.random.RandomState(0)
    X = rng.randn(300, 5).astype(np.float32)
    y = np.array([10, 20, 30])[np.digitize(X[:, 0] + X[:, 1], [-0.5, 0.5])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = MLPClassifier((16,), max_iter=300, random_state=0).fit(X, y)
    assert set(model.predict(X)) == {10, 20, 30}
    return X, y, model


class _Judge:
    """Stands in for a fitted explainer: its judge returns the given probabilities."""

    def __init__(self, model, X, proba):
        self.black_box_ = as_black_box(model)
        self.black_box_.predict(X[:1])  # the adapter learns the output spec on a first call
        self.output_spec_ = self.black_box_.spec
        self._proba = proba

    def predict_masked(self, X, masks):
        return self._proba


def test_own_predictor_compares_classes_of_a_three_class_black_box(three_classes):
    X, y, model = three_classes
    proba = model.predict_proba(X)
    masks = np.ones_like(X)
    # A judge that reproduces the black box agrees everywhere and is as accurate as it is.
    own = ours.own_predictor(_Judge(model, X, proba), X, y, masks)
    assert own["own_agreement"] == 1.0
    assert own["own_acc"] == pytest.approx(np.mean(model.predict(X) == y))
    # Moving every row's probabilities one class on leaves no row with the black box's class.
    own = ours.own_predictor(_Judge(model, X, np.roll(proba, 1, axis=1)), X, y, masks)
    assert own["own_agreement"] == 0.0
    # The same through a fitted explainer's public predict_masked.
    explainer = L2XExplainer(k=2, max_epochs=2, batch_size=64, random_state=0)
    explainer.fit(X, black_box=model)
    masks = explainer.transform(X)
    own = ours.own_predictor(explainer, X, y, masks)
    judged = model.classes_[explainer.predict_masked(X, masks).argmax(axis=1)]
    assert own["own_agreement"] == pytest.approx(np.mean(judged == model.predict(X)))
    assert own["own_acc"] == pytest.approx(np.mean(judged == y))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_peers_explain_the_predicted_class(three_classes):
    X, y, model = three_classes
    np.testing.assert_array_equal(peers.explained_classes(model, X),
                                  model.predict_proba(X).argmax(axis=1))
    binary = MLPClassifier((4,), max_iter=20, random_state=0).fit(X, y > 10)
    np.testing.assert_array_equal(peers.explained_classes(binary, X), np.ones(len(X)))
    pytest.importorskip("captum")
    prepared = SimpleNamespace(X_explain=X[:20], model=model,
                               torch_model=data.mlp_to_torch(model))
    attributions, _, _ = peers.saliency(prepared, TINY, torch.device("cpu"))
    X_t = torch.as_tensor(X[:20]).requires_grad_(True)
    proba = prepared.torch_model(X_t)
    classes = torch.as_tensor(model.predict_proba(X[:20]).argmax(axis=1))
    proba.gather(1, classes[:, None]).sum().backward()
    np.testing.assert_allclose(attributions, X_t.grad.abs().numpy(), rtol=1e-5, atol=1e-7)


def test_mask_quality_without_two_classes(three_classes):
    X, y, model = three_classes
    masks = np.zeros_like(X)
    masks[:, :2] = 1.0
    relevant = np.zeros_like(X)
    relevant[:, :2] = 1.0
    prepared = SimpleNamespace(X_explain=X, y_explain=y, model=model, relevant_explain=relevant,
                               proba_explain=np.full((len(X), 3), 1 / 3))
    out = quality.mask_quality(data.DATASETS["xor"], prepared, masks, _StubEvaluator())
    # Post-hoc accuracy fills left-out features with zeros and compares classes.
    zero_filled = model.predict(X * masks)
    assert out["posthoc_acc"] == pytest.approx(np.mean(zero_filled == model.predict(X)))
    assert out["tpr"] == pytest.approx(1.0) and out["eacc"] == 0.25
    # No P(y = 1 | x) of a binary generator: no expected eACC.
    assert "eacc_expected" not in out
    assert quality.binary_proba(prepared) is None


# The structured-output benchmark (SOInter's E1 and E2, yeast)
# ------------------------------------------------------------


@pytest.fixture(scope="module")
def sointer_fast(tmp_path_factory):
    """The fast profile, in-process: SOInter (when this sk_sointer has it), L2X, captum's
    Saliency and the random reference, on E1, E2 and yeast."""
    out = tmp_path_factory.mktemp("sointer") / "sointer_fast.json"
    # Yeast comes from river (the bench and datasets extras); without it the run covers E1, E2.
    sets = ["E1", "E2", "yeast"] if HAVE_RIVER else ["E1", "E2"]
    bench.main(["structured", "--profile", "fast", "--device", "cpu", "--methods", "sointer",
                "l2x", "saliency", "--sets", *sets, "--out", str(out)])
    return json.loads(out.read_text(encoding="utf-8")), out.with_suffix(".rst")


@pytest.mark.parametrize("n_features", [5, 8, 10, 15, 20])
def test_shuffled_columns_keep_the_relevant_features_out_of_the_first_columns(n_features):
    columns = structured.shuffled_columns(n_features, 4)
    assert sorted(columns) == list(range(n_features))
    positions = np.argsort(columns)[:4]  # where x1..x4 land
    assert np.sum(positions < 4) == max(0, 8 - n_features)


@pytest.mark.slow  # a fast-profile run of the study
def test_sointer_fast_profile_records_every_task_and_method(sointer_fast):
    payload, _ = sointer_fast
    records = payload["records"]
    # SOInter when this sk_sointer has it, Saliency when captum (the bench extra) is installed.
    runnable = registry.available_methods(["sointer", "l2x", "saliency"])[0]
    ours = [name for name in runnable if name != "saliency"]
    methods = [*runnable, structured.RANDOM]
    fast = structured.PROFILES["fast"]
    expected = [(f"{dataset}/{label}", method)
                for dataset, labels in [("E1/5", ("y1", "y2")), ("E2/5", ("y3", "y4")),
                                        ("yeast", [f"Class{t + 1}" for t in fast["yeast_labels"]])
                                        ][:3 if HAVE_RIVER else 2]
                for label in labels for method in [None, *methods]]
    assert list(dict.fromkeys((r["dataset"], r["method"]) for r in records)) == expected
    assert not [r for r in records if r["metric"] == "error"]
    summary = study.summarize(records)
    for (dataset, method), r in summary.items():
        synthetic_set = not dataset.startswith("yeast")
        task = summary[(dataset, None)]
        assert task["n_features"] == (5 if synthetic_set else 103)
        if method is None:
            for name in ("black_box_acc", "black_box_rate", "label_rate", "posthoc_acc_empty"):
                assert _finite(r[name]) and 0.0 <= r[name] <= 1.0, name
            if synthetic_set:
                assert r["median_rank_optimum"] == 2.5
            continue
        [context] = {(c["k"], c["n_features"]) for c in records
                     if (c["dataset"], c["method"]) == (dataset, method)}
        assert context == ((4, 5) if synthetic_set else (10, None))
        seeds = [c["seed"] for c in records if (c["dataset"], c["method"]) == (dataset, method)
                 and c["metric"] == "posthoc_acc"]
        if method in ours or method == structured.RANDOM:
            assert seeds == ([0, 1] if synthetic_set else [0])
        else:
            assert seeds == [None]
        metric_names = ("exact_match", "tpr", "posthoc_acc") if synthetic_set else (
            "posthoc_acc",)
        for name in metric_names:
            assert _finite(r[name]) and 0.0 <= r[name] <= 1.0, name
            assert all(0.0 <= value <= 1.0 for value in r[f"{name}_seeds"])
            assert len(r[f"{name}_seeds"]) == len(seeds)
            assert r[name] == pytest.approx(np.mean(r[f"{name}_seeds"]))
        if synthetic_set:
            assert task["median_rank_optimum"] == 2.5 <= r["median_rank"] <= 5 - 1.5
        else:
            assert "exact_match" not in r and "median_rank" not in r
        if method in ours:
            assert _finite(r["fit_s"]) and r["fit_s"] > 0
        if method != structured.RANDOM:
            assert _finite(r["explain_ms_per_row"]) and r["explain_ms_per_row"] > 0
    # The black box learns the argmin of the energies well even from 3,000 rows.
    assert min(r["black_box_acc"] for (dataset, method), r in summary.items()
               if method is None and not dataset.startswith("yeast")) > 0.8


@pytest.mark.slow  # a fast-profile run of the study
def test_sointer_fast_profile_renders_its_tables(sointer_fast):
    payload, rst = sointer_fast
    text = rst.read_text(encoding="utf-8")
    titles = ["Exact-match accuracy %", "Median rank", "Post-hoc accuracy % on the target", "Time"]
    if HAVE_RIVER:
        titles.append("Yeast: post-hoc accuracy % on the target, k = 10")
    for title in titles:
        assert f".. table:: {title}" in text
    assert "L2X" in text and "Random k features" in text
    assert ("Saliency" in text) == ("saliency" in registry.available_methods(["saliency"])[0])
    assert ("Class1" in text) == HAVE_RIVER
    # Grid tables: the column separators line up in every line of a table.
    for block in text.split(".. table::")[1:]:
        table = [line for line in block.splitlines() if line.startswith(("   +", "   |"))]
        assert len({tuple(i for i, c in enumerate(line) if c in "+|") for line in table
                    if not line.startswith("   |") or "\n" not in line}) == 1


def test_one_label_view_is_a_binary_classifier_of_that_label():
    rng = np.random.RandomState(0)
    X = rng.randn(300, 4)
    Y = np.column_stack([X[:, 0] > 0, X[:, 1] + X[:, 0] > 0, X[:, 2] > 0.5]).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = MLPClassifier((16,), max_iter=300, random_state=0).fit(X, Y)
    view = structured.OneLabel(model, 1)
    proba = view.predict_proba(X)
    np.testing.assert_allclose(proba[:, 1], model.predict_proba(X)[:, 1])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(view.predict(X), model.predict(X)[:, 1])
    # The adapter sees one categorical output; the torch copy computes the same [1 - p, p].
    assert as_black_box(view).predict(X).shape == (300, 2)
    assert data.check_torch_copy(view, data.mlp_to_torch(model, label=1), X) <= 1e-5
    with pytest.raises(ValueError, match="label="):
        data.mlp_to_torch(model)
    # Post-hoc accuracy on the target: the label's side of 0.5 on masked rows, others at 0.
    task = SimpleNamespace(model=view, X_explain=X, relevant=None)
    masks = np.tile([1.0, 1.0, 0.0, 0.0], (300, 1))
    out = structured.mask_quality(task, masks)
    expected = np.mean(view.predict(X * masks) == view.predict(X))
    assert out == {"posthoc_acc": pytest.approx(expected)}


def test_exact_match_and_summary_over_seeds():
    relevant = np.zeros((4, 6), dtype=bool)
    relevant[:, :4] = True
    task = SimpleNamespace(model=None, X_explain=np.zeros((4, 6)), relevant=relevant, k=4)
    masks = relevant.astype(float)
    masks[0] = [1, 1, 1, 0, 1, 0]  # one row with a wrong feature
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(metrics, "posthoc_accuracy", lambda *args, **kwargs: 0.5)
        out = structured.mask_quality(task, masks)
    assert out["exact_match"] == 0.75 and out["tpr"] == pytest.approx(15 / 16)
    records = [*study.records_of(structured.STUDY, "E1/6/y1", "l2x", 0, {"exact_match": 0.75}),
               *study.records_of(structured.STUDY, "E1/6/y1", "l2x", 1, {"exact_match": 0.25})]
    summary = study.summarize(records)[("E1/6/y1", "l2x")]
    assert summary["exact_match"] == 0.5 and summary["exact_match_seeds"] == [0.75, 0.25]
    assert report._spread(summary["exact_match_seeds"], structured.STUDY.spread) == (
        pytest.approx(np.std([0.75, 0.25], ddof=1)))
    # One run: no spread in its cell.
    assert report._format_cell(structured.STUDY, records[:1], "exact_match") == "75.0"
    assert report._format_cell(structured.STUDY, records, "exact_match") == "50.0 ± 35.4"
    # Random masks: k features a row, seeded.
    random = structured.random_selection(task, 0)
    assert (random.sum(axis=1) == 4).all()
    np.testing.assert_array_equal(random, structured.random_selection(task, 0))


def test_the_sointer_entry_is_skipped_without_the_class(monkeypatch):
    monkeypatch.delattr(sk_sointer, "SOInterExplainer", raising=False)
    # The package imports its public names on first use: take the name out of that list too.
    monkeypatch.delitem(sk_sointer._PUBLIC, "SOInterExplainer")
    runnable, skipped = registry.available_methods(["sointer", "l2x"])
    assert runnable == ["l2x"] and "no SOInterExplainer" in skipped["sointer"]


# The real-tables benchmark
# -------------------------


@pytest.fixture(scope="module")
def tables_fast(tmp_path_factory):
    """The fast profile, in-process: a classifier, a regressor and a two-output classifier,
    every method of the study (the peers when shap and LIME are installed)."""
    out = tmp_path_factory.mktemp("tables") / "tables_fast.json"
    bench.main(["tables", "--profile", "fast", "--device", "cpu", "--out", str(out)])
    return json.loads(out.read_text(encoding="utf-8")), out.with_suffix(".rst")


@pytest.mark.slow  # a fast-profile run of the study
def test_tables_fast_profile_records_every_cell_and_method(tables_fast):
    payload, _ = tables_fast
    records = tables.with_gaps(payload["records"])
    fast = tables.STUDY.profile("fast")
    # The registry's peers where their package is installed; FastSHAP (torch) always. The
    # fast profile has no tree ensemble and no torch network, so no TreeSHAP and no IG.
    peer_names = [*registry.available_methods(["shap_kernel", "lime"])[0], "fastshap"]
    expected = set()
    for table, black_box in fast.pairs:
        n_features = tables.TABLES[table].load()[0].shape[1]
        for k in tables.ks_for(n_features):
            expected |= {(table, black_box, k, name) for name in
                         [*tables.OURS, *tables.REPAIRED, tables.RANDOM, tables.GLOBAL,
                          tables.ORACLE, tables.BEST_PEER, *peer_names]}
        expected |= {(table, black_box, None, f"{name}_thresholded")
                     for name in tables.THRESHOLDED}
    # One record a data set, method, seed and metric (and check); none of them an error.
    keys = [(r["dataset"], r["method"], r["seed"], r["metric"], r.get("check")) for r in records]
    assert len(keys) == len(set(keys))
    assert all(set(study.RECORD_KEYS) <= set(r) for r in records)
    assert not [r for r in records if r["metric"] == "error"]
    summary = study.summarize(records)
    assert {(*tables.parse(dataset), method) for dataset, method in summary
            if method is not None} == expected
    by_key = {(*tables.parse(dataset), method): values
              for (dataset, method), values in summary.items()}
    values_of = {dataset: values for (dataset, method), values in summary.items()
                 if method is None}
    context = {r["dataset"]: r for r in records if r["method"] is None}
    for (dataset, name), r in summary.items():
        if name is None:
            continue
        table, black_box, k = tables.parse(dataset)
        pair = values_of[dataset]
        if name == tables.BEST_PEER:  # the cell's best peer, derived: its own numbers
            best = max(by_key[(table, black_box, k, p)]["fidelity"] for p in peer_names)
            assert r["fidelity"] == pytest.approx(best)
            continue
        assert pair["n_explain"] == min(fast.n_explain, pair["n_test"]) and pair["n_train"] == 200
        regression = context[dataset]["task"] == "regression"
        assert (table == "diabetes") == regression
        assert pair["n_outputs"] == (2 if table == "digits_two_labels" else 1)
        assert context[dataset]["eval_x_metric"] == ("eR2" if regression else "eACC")
        assert _finite(r["fidelity"]) and r["fidelity"] <= 1.0
        assert _finite(r["eval_x"]) and r["eval_x"] <= 1.0
        if not regression:
            assert r["fidelity"] >= 0.0 and r["eval_x"] >= 0.0
        if k is not None:
            assert r["mean_selected"] == k and r["empty_rate"] == 0.0
        cell = (table, black_box, k)
        if name in tables.REPAIRED:
            # Checked and repaired: never below the same explainer, never above the rows.
            own = by_key[(table, black_box, k, name.removesuffix("_repaired"))]
            assert r["fidelity"] >= own["fidelity"] - 1e-9
            assert 0 <= r["held_before"] <= 1 and r["queries_per_row"] >= 2
            assert r["gap_oracle"] == pytest.approx(
                r["fidelity"] - by_key[(table, black_box, k, tables.ORACLE)]["fidelity"])
        if name in (*tables.OURS, *tables.OWN):
            seeds = [x["seed"] for x in records if x["dataset"] == dataset
                     and x["method"] == name and x["metric"] == "fidelity"]
            assert seeds == [0, 1] and len(r["fidelity_seeds"]) == 2
            assert r["fidelity"] == pytest.approx(np.mean(r["fidelity_seeds"]))
            assert all(1 <= n <= pair["n_explain"] for n in r["n_distinct_masks_seeds"])
            for metric in ("fit_s", "transform_us_per_row"):
                assert _finite(r[metric]) and r[metric] > 0, metric
            if k is None:
                assert 0.0 <= r["empty_rate"] <= 1.0
                assert r["gap_random"] == pytest.approx(r["fidelity"] - r["random_same_sizes"])
            else:
                best_global = by_key[(*cell, tables.GLOBAL)]["fidelity"]
                assert r["gap_global"] == pytest.approx(r["fidelity"] - best_global)
                if "shap_kernel" in peer_names:
                    kernel_shap = by_key[(*cell, "shap_kernel")]
                    assert r["gap_kernel_shap"] == pytest.approx(r["fidelity"]
                                                                 - kernel_shap["fidelity"])
        elif name in tables.PEERS:
            assert _finite(r["explain_ms_per_row"]) and r["explain_ms_per_row"] > 0
            assert r["queries_per_row"] >= 1
    features = {(*tables.parse(r["dataset"]), r["method"]): r["params"]["features"]
                for r in records if r["method"] == tables.GLOBAL}
    for table, black_box in fast.pairs:
        n_features = tables.TABLES[table].load()[0].shape[1]
        for k in tables.ks_for(n_features):
            cell = (table, black_box, k)
            oracle, best_global, random = (by_key[(*cell, name)] for name in
                                           (tables.ORACLE, tables.GLOBAL, tables.RANDOM))
            # The per-row search and the global subset both beat random features.
            assert oracle["fidelity"] >= random["fidelity"]
            assert best_global["fidelity"] >= random["fidelity"]
            # The full row's answer, then the candidates of each round.
            assert oracle["queries_per_row"] == 1 + sum(n_features - j for j in range(k))
            assert best_global["n_distinct_masks"] == 1
            assert len(set(features[(*cell, tables.GLOBAL)])) == k


@pytest.mark.slow  # a fast-profile run of the study
def test_tables_fast_profile_renders_its_tables_and_acceptance(tables_fast):
    payload, rst = tables_fast
    text = rst.read_text(encoding="utf-8")
    titles = ["Fidelity (points)", "Our fidelity minus the best global subset",
              "EVAL-X (eACC / eR2, points)", "The methods' own selection (k=None)",
              "Acceptance: cells failing each check", "Distinct masks among the explained rows",
              "Check and repair: rows whose mask held before the repair",
              "Model queries a row", "Our fidelity minus the best peer of the cell",
              "Fit seconds", "Transform, microseconds a row", "Milliseconds a row of the peers",
              "Evaluation (points; mean over the data sets)"]
    # The gaps to KernelSHAP exist where shap is installed (the bench extra; CI has the
    # test extra only), and then their table is drawn.
    kernel_shap = "shap_kernel" in registry.available_methods(["shap_kernel"])[0]
    for title in [*titles, *(["Our fidelity minus KernelSHAP"] if kernel_shap else [])]:
        assert f".. table:: {title}" in text
    for block in text.split(".. table::")[1:]:
        # Grid tables: every border alike, every line as wide (cells hold signed numbers).
        borders = {line.replace("=", "-") for line in block.splitlines()
                   if line.startswith("   +")}
        widths = {len(line) for line in block.splitlines() if line.startswith(("   +", "   |"))}
        assert len(borders) == 1 and len(widths) == 1
    records = payload["records"]
    counts = acceptance(records)
    assert set(counts) == {*tables.OURS, *tables.REPAIRED,
                           *(f"{name}_thresholded" for name in tables.THRESHOLDED)}
    # The repaired runs are held to the per-row search, not to the global subset.
    assert "oracle" in counts["l2x_repaired"] and "global" not in counts["l2x_repaired"]
    l2x = [values for (dataset, method), values in study.summarize(
        tables.with_gaps(records)).items() if method == "l2x"]
    below = sum(r["gap_global"] < -0.01 for r in l2x)
    assert counts["l2x"]["global"] == (below, len(l2x))
    assert "empty" not in counts["l2x"] and counts["realx_thresholded"]["empty"][1] == 3
    assert f"| {below} / {len(l2x)} " in text
    # Our fidelity: the mean over seeds, their spread (max - min) in parentheses.
    first = [r["value"] for r in records if r["method"] == "l2x" and r["metric"] == "fidelity"
             and r["dataset"] == records[0]["dataset"]]
    assert f"| {100 * np.mean(first):.1f} ({100 * np.ptp(first):.1f}) " in text


@pytest.mark.slow  # a fast-profile run of the study
def test_tables_fast_profile_reports_through_evaluate(tables_fast):
    payload, rst = tables_fast
    records = payload["records"]
    peer_names = [*registry.available_methods(["shap_kernel", "lime"])[0], "fastshap"]
    masks_only = set(tables.MASK_ENTRIES)
    expected = {**{name: masks_only for name in (tables.RANDOM, tables.GLOBAL, tables.ORACLE)},
                **{name: masks_only | set(tables.CURVE_ENTRIES) for name in peer_names},
                **{name: {*tables.OUR_ENTRIES, "seed_agreement"} for name in tables.OURS},
                **{name: masks_only for name in tables.REPAIRED},
                **{name: {*tables.OUR_ENTRIES, "seed_agreement", "features_per_row_std"}
                   for name in tables.OWN}}
    evaluated = (*quality.OUR_ENTRIES, "features_per_row_std", "seed_agreement")
    task = {r["dataset"]: r["task"] for r in records if r["method"] is None}
    fractions = ("fidelity_kept", "fidelity_removed", "road_kept", "road_removed",
                 "insertion_auc", "deletion_auc", "seed_agreement", "mask_change")
    for (dataset, name), r in study.summarize(records).items():
        if name is None:
            continue
        k = tables.parse(dataset)[2]
        # Every entry the method should have, and none it should not.
        assert {entry for entry in evaluated if entry in r} == expected[name], name
        classification = task[dataset] != "regression"
        for entry in expected[name]:
            assert _finite(r[entry]), (dataset, name, entry)
        for entry in set(fractions) & expected[name]:
            # Agreements of classes, mask overlaps: fractions; R² only bounded above.
            if classification or entry in ("seed_agreement", "mask_change"):
                assert 0.0 <= r[entry] <= 1.0, (dataset, name, entry)
            else:
                assert r[entry] <= 1.0, (dataset, name, entry)
        # evaluate's fidelity with the features kept is the fidelity recorded: at the fill,
        # or over the background rows of an explainer that has them, as it asks the model.
        recorded = r.get("fidelity_background_seeds", r["fidelity_seeds"])
        assert r["fidelity_kept_seeds"] == pytest.approx(recorded)
        if k is not None:
            assert r["features_per_row"] == k
        else:
            assert r["features_per_row"] == pytest.approx(r["mean_selected"])
            assert r["features_per_row_std"] >= 0.0
        if name in (*tables.OURS, *tables.OWN):
            # One agreement between the two seeds' masks, on the second seed's record.
            assert [x["seed"] for x in records if x["dataset"] == dataset
                    and x["method"] == name and x["metric"] == "seed_agreement"] == [1]
    # The evaluation table: one row per method, its columns the entries and the costs.
    text = rst.read_text(encoding="utf-8")
    block = text.split(".. table:: Evaluation (points; mean over the data sets)\n")[1]
    block = block.split("\n\n.. table::")[0]
    rows = [line.split("|")[1].strip() for line in block.splitlines() if line.startswith("   | ")]
    methods = [name for name in (*tables.METHODS, *tables.OWN)
               if name in expected and (name not in tables.PEERS or name in peer_names)]
    assert [row for row in rows if row] == ["Method", *map(tables.STUDY.label, methods)]
    body = [line for line in block.splitlines() if line.startswith("   | ")][2:]
    assert all(line.count("|") == len(tables.EVALUATION_COLUMNS) + 2 for line in body)
    assert "failed" not in block


def test_the_stored_tables_records_render_the_readme_table():
    text = bench.main(["tables", "--render", str(report.RESULTS_DIR / "tables_full.json")])
    readme = bench.RESULTS_PAGE.read_text(encoding="utf-8")
    block = readme.split(".. tables-table-start\n\n")[1].split("\n\n.. tables-table-end")[0]
    shown = [".. table::" + table.rstrip("\n") for table in block.split(".. table::")[1:]]
    assert [table.splitlines()[0] for table in shown] == [
        f".. table:: {title}" for title in tables.STUDY.readme_tables]
    for table in shown:  # each README table is the render's, cell for cell
        assert table in text


def test_tables_full_profile_keeps_the_defaults():
    full = tables.STUDY.profile("full")
    # Every test row explained (n_explain=None), so that one row is not a point.
    assert full.explainer_params == {} and full.seeds >= 2 and full.n_explain is None
    assert (full.shap_nsamples, full.lime_num_samples) == ("auto", 5000)
    assert set(tables.STUDY.profile("fast").explainer_params) == {"l2x", "realx", "meed",
                                                                  "hardkuma", "evalx"}


_TABLE_SHAPES = {"breast_cancer": (569, 30), "wine": (178, 13), "diabetes": (442, 10),
                 "digits": (1797, 64), "digits_two_labels": (1797, 64), "phishing": (1250, 9),
                 "image_segments": (2310, 18)}


@pytest.mark.parametrize("name", list(tables.TABLES))
def test_tables_load_from_installed_packages(name):
    if name in ("phishing", "image_segments") and not HAVE_RIVER:
        pytest.skip("river is not installed")
    X, y = tables.TABLES[name].load()
    assert X.shape == _TABLE_SHAPES[name] and X.dtype == np.float64 and np.isfinite(X).all()
    assert X.shape[1] == tables.TABLES[name].n_features
    assert len(y) == len(X) and np.ndim(y) == (2 if name == "digits_two_labels" else 1)
    if name == "diabetes":  # raw units: ages in years
        assert 18 <= X[:, 0].min() and X[:, 0].max() <= 80


def test_tables_full_profile_cells():
    # k = 3 and 20 % of d: one cell where they coincide (wine), two elsewhere.
    assert [tables.ks_for(d) for d in (30, 13, 10, 64, 9, 18)] == [
        [3, 6], [3], [2, 3], [3, 13], [2, 3], [3, 4]]
    cells = [(table, model, k) for table, model in tables.FULL_PAIRS
             for k in tables.ks_for(_TABLE_SHAPES[table][1])]
    assert sum(table != "digits_two_labels" for table, _, _ in cells) == 22
    # Two cells a torch network, on tables of 30 and 9 features.
    assert sum(model in tables.TORCH_MODELS for _, model, _ in cells) == 4
    assert {table for table, _ in tables.FULL_PAIRS} == set(tables.TABLES)
    assert {model for _, model in tables.FULL_PAIRS} <= set(tables.MODELS)
    # One data set a cell, and one a pair for the thresholded runs.
    names = tables.STUDY.datasets(tables.STUDY.profile("full"))
    assert [tables.parse(name) for name in names if tables.parse(name)[2] is not None] == cells
    assert len(names) == len(cells) + len(tables.FULL_PAIRS)


@pytest.fixture(scope="module")
def column_two_model():
    """A logistic regression that reads the third of five features only, and an L2X fitted
    on it in a few steps (its masker and output spec judge masks)."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.RandomState(0)
    X = rng.randn(200, 5)
    model = LogisticRegression().fit(X[:, [2]], X[:, 2] > 0)
    wrapped = lambda rows: model.predict_proba(np.asarray(rows)[:, [2]])  # noqa: E731
    explainer = L2XExplainer(k=1, max_epochs=1, refine=None, random_state=0)
    return X, explainer.fit(X, black_box=wrapped)


def test_tables_fidelity_is_what_score_measures(column_two_model):
    X, explainer = column_two_model
    # The plain share of rows at the explainer's fill (score weighs each answer alike).
    assert tables.fidelity(explainer, X, explainer.transform(X)) == pytest.approx(
        explainer.check(X).holds.mean())
    third = np.zeros_like(X)
    third[:, 2] = 1
    assert tables.fidelity(explainer, X, third) == 1.0
    assert tables.global_order(explainer, X, 2)[0] == 2


def test_tables_peers_explain_regressors_and_every_output_of_a_multi_output_model():
    from sklearn.linear_model import LinearRegression, LogisticRegression
    from sklearn.multioutput import MultiOutputClassifier

    rng = np.random.RandomState(0)
    X = rng.randn(100, 4)
    regressor = LinearRegression().fit(X, X @ [1.0, 0.0, 2.0, 0.0])
    [output] = peers.explained_outputs(regressor, X)
    assert output.regression and (output.columns == 0).all()
    np.testing.assert_allclose(output.column(0)(X), regressor.predict(X))
    Y = np.column_stack([X[:, 0] > 0, X[:, 1] + X[:, 2] > 0]).astype(int)
    multi = MultiOutputClassifier(LogisticRegression()).fit(X, Y)
    outputs = peers.explained_outputs(multi, X)
    assert len(outputs) == 2 and not outputs[0].regression
    assert all((output.columns == 1).all() for output in outputs)  # binary: class 1
    np.testing.assert_allclose(outputs[1].values(X), multi.predict_proba(X)[1])
    # Each output's |attribution| as a share of its row: every output weighs one.
    combined = peers.combine_outputs([rng.randn(100, 4), 1000 * rng.randn(100, 4)])
    np.testing.assert_allclose(combined.sum(axis=1), 2.0)
    single = rng.randn(100, 4)
    assert peers.combine_outputs([single]) is single


def test_the_stored_structured_records_render_the_readme_table():
    text = bench.main(["structured", "--render", str(report.RESULTS_DIR / "sointer_full.json")])
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in text.splitlines()
            if line.startswith("   |")]
    # SOInter, L2X, KernelSHAP, LIME, Saliency, random k features.
    assert ["E1", "y1", "5", "91.3 ± 15.0", "98.9 ± 1.2", "97.3", "48.0", "54.1",
            "19.5 ± 1.4"] in rows
    # The README shows the exact matches and the median rank against the width, as stored.
    records, machine, profile = report.load_study_results(report.RESULTS_DIR
                                                          / "sointer_full.json")
    block = report.render(structured.STUDY, records, machine, profile,
                          titles=structured.STUDY.readme_tables)
    readme = bench.RESULTS_PAGE.read_text(encoding="utf-8")
    assert report.replace_between_markers(readme, block, *structured.STUDY.readme) == readme
    width = block.split("against the number of features")[1]
    assert "| 20 | 2.54 " in width
