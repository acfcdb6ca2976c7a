"""Smoke tests of the benchmark harness on the tiniest settings (no peers).

Timings are only checked to be positive and finite: their values depend on the machine.
"""

import json
import math

import numpy as np
import pytest
import torch
from sklearn.base import BaseEstimator
from sklearn.neural_network import MLPClassifier

from benchmarks import common

TINY = common.Profile(
    name="smoke",
    n_train=300,
    n_explain=100,
    n_timing=500,
    timing_repeats=2,
    explainer_params={
        "l2x": {"max_epochs": 2, "batch_size": 64},
        "realx": {"max_epochs": 2, "predictor_epochs": 1, "batch_size": 64},
        "evalx": {"max_epochs": 2},
    },
)


@pytest.fixture(scope="module")
def s1_run():
    """Our explainers on S1, the set with every metric (CFSR, and eACC once EVAL-X exists)."""
    return common.run_benchmark(TINY, dataset_names=["S1"], methods=list(common.OURS),
                                device="cpu")


def _finite(value):
    return isinstance(value, float) and math.isfinite(value)


def test_records_hold_finite_metrics_in_range(s1_run):
    runnable, _ = common.available_methods(common.OURS)
    assert [record["method"] for record in s1_run] == runnable
    for record in s1_run:
        assert record["error"] is None, record["traceback"]
        assert set(record) == set(common.RECORD_FIELDS)
        assert (record["dataset"], record["n_train"], record["n_explain"]) == ("S1", 300, 100)
        n_features = record["n_features"]
        # S1 rows have 3 or 5 relevant features, so the optimum lies between 2 and 3.
        assert 2.0 <= record["median_rank_optimum"] <= 3.0
        assert record["median_rank_optimum"] <= record["median_rank"] <= n_features
        for name in ("tpr", "fdr", "cfsr", "posthoc_acc", "own_acc", "own_agreement",
                     "black_box_acc"):
            assert _finite(record[name]) and 0.0 <= record[name] <= 1.0, name
        assert 0.0 <= record["mean_selected"] <= n_features
        for name in ("fit_s", "explain_ms_per_row", "throughput_ratio", "forward_ms",
                     "transform_ms"):
            assert _finite(record[name]) and record[name] > 0, name
        if hasattr(common.metrics, "EvalXEvaluator"):
            assert record["evalx_error"] is None, record["evalx_error"]
            assert _finite(record["eacc"]) and 0.0 <= record["eacc"] <= 1.0
        else:
            assert record["eacc"] is None


def test_our_explainers_use_their_s_set_selection_rules(s1_run):
    by_method = {record["method"]: record for record in s1_run}
    assert by_method["l2x"]["k"] == 4 and by_method["l2x"]["mean_selected"] == 4.0
    if "realx" in by_method:
        assert by_method["realx"]["k"] is None  # thresholded, as in REAL-X's Table 1


def test_rst_table_renders_one_row_per_record(s1_run):
    machine = common.machine_info("cpu")
    text = common.render_rst(s1_run, machine, TINY)
    lines = text.splitlines()
    start = lines.index(".. table:: Synthetic data sets")
    table = []
    for line in lines[start + 2 :]:
        if not line.startswith(("   +", "   |")):
            break
        table.append(line)
    # A grid table's column separators line up in every line, borders and cells alike.
    columns = {tuple(i for i, char in enumerate(line) if char in "+|") for line in table}
    assert len(columns) == 1 and len(next(iter(columns))) == 13  # 12 columns
    header_end = next(i for i, line in enumerate(table) if line.startswith("   +="))
    assert sum(line.startswith("   +-") for line in table[header_end:]) == len(s1_run)
    assert "L2X (k = 4)" in text and "``smoke``" in text


def test_readme_block_is_replaced_between_the_markers_only():
    text = ("Title\n=====\n\n.. results-table-start\n\nold table\n\n"
            ".. results-table-end\n\nAfter.\n")
    once = common.replace_between_markers(text, "new table\n")
    assert once == ("Title\n=====\n\n.. results-table-start\n\nnew table\n\n"
                    ".. results-table-end\n\nAfter.\n")
    assert common.replace_between_markers(once, "new table\n") == once
    with pytest.raises(ValueError, match="results-table-start"):
        common.replace_between_markers("no markers\n", "table")


def test_readme_has_the_results_markers():
    readme = common.RESULTS_DIR.parents[1] / "README.rst"
    lines = readme.read_text(encoding="utf-8").splitlines()
    assert lines.index(common.README_START) < lines.index(common.README_END)


def test_a_failing_method_is_recorded_and_the_run_goes_on(monkeypatch):
    real_run_ours = common._run_ours

    def broken_l2x(method, *args):
        if method == "l2x":
            raise RuntimeError("boom")
        return real_run_ours(method, *args)

    monkeypatch.setattr(common, "_run_ours", broken_l2x)
    profile = common.Profile(name="smoke", n_train=200, n_explain=50, n_timing=100,
                             timing_repeats=1, explainer_params=TINY.explainer_params)
    records = common.run_benchmark(profile, dataset_names=["xor"], methods=["l2x", "realx"],
                                   device="cpu")
    assert records[0]["error"] == "RuntimeError: boom" and "boom" in records[0]["traceback"]
    assert records[0]["median_rank"] is None
    for record in records[1:]:
        assert record["error"] is None and _finite(record["median_rank"])


class _StubEvaluator(BaseEstimator):
    """Stands in for EvalXEvaluator: records how the harness calls it."""

    calls = []

    def __init__(self, max_epochs=100, random_state=None):
        self.max_epochs = max_epochs
        self.random_state = random_state

    def fit(self, X, y=None, *, black_box=None):
        self.calls.append(("fit", X.shape, black_box is not None, self.max_epochs))
        return self

    def score_masks(self, X, masks, y=None):
        self.calls.append(("score_masks", masks.shape, y is not None))
        return {"eACC": 0.25, "eAUROC": 0.5, "eNLL": 0.75}

    def predict_masked(self, X, masks):
        # Class 1 in every row: the expected accuracy is then the mean of P(y = 1 | x).
        return np.tile([0.2, 0.8], (len(X), 1))


def test_one_evaluator_per_data_set_judges_every_method(monkeypatch):
    monkeypatch.setattr(common.metrics, "EvalXEvaluator", _StubEvaluator, raising=False)
    monkeypatch.setattr(_StubEvaluator, "calls", [])
    profile = common.Profile(name="smoke", n_train=200, n_explain=50, n_timing=100,
                             timing_repeats=1, explainer_params=TINY.explainer_params)
    records = common.run_benchmark(profile, dataset_names=["xor", "xor_probe"],
                                   methods=["l2x"], device="cpu")
    # XOR and its probe share rows, black box and evaluator; the evaluator's parameters come
    # from the profile, and parameters it does not have (device) are left out.
    assert _StubEvaluator.calls[0] == ("fit", (200, 10), True, 2)
    assert _StubEvaluator.calls[1:] == [("score_masks", (50, 10), True)] * 2
    for record in records:
        assert record["error"] is None, record["traceback"]
        assert (record["eacc"], record["eauroc"], record["enll"]) == (0.25, 0.5, 0.75)
        assert record["evalx_error"] is None and record["evalx_fit_s"] >= 0
    _, _, _, proba = common.DATASETS["xor"].draw(50, common.EXPLAIN_SEED, return_proba=True)
    assert records[0]["eacc_expected"] == pytest.approx(proba.mean())


def test_a_failing_data_set_fails_its_methods_only(monkeypatch):
    real_prepare = common._prepare

    def prepare(spec, *args):
        if spec.name == "orange_skin":
            raise ValueError("no rows")
        return real_prepare(spec, *args)

    monkeypatch.setattr(common, "_prepare", prepare)
    profile = common.Profile(name="smoke", n_train=200, n_explain=50, n_timing=100,
                             timing_repeats=1, explainer_params=TINY.explainer_params)
    records = common.run_benchmark(profile, dataset_names=["orange_skin", "xor"],
                                   methods=["l2x"], device="cpu")
    assert [r["error"] for r in records] == ["data set: ValueError: no rows", None]


def test_results_are_saved_as_strict_json(s1_run, tmp_path):
    path = tmp_path / "results" / "synthetic_smoke.json"
    machine = common.machine_info("cpu")
    records = [*s1_run, {**s1_run[0], "fit_s": float("nan")}]
    common.save_results(path, records, machine, TINY)
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert saved["machine"]["torch"] == torch.__version__
    assert saved["profile"]["n_train"] == 300
    assert len(saved["records"]) == len(records) and saved["records"][-1]["fit_s"] is None
    assert not list(path.parent.glob("*.tmp"))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("n_classes", [2, 3])
def test_mlp_to_torch_matches_predict_proba(n_classes):
    rng = np.random.RandomState(0)
    X = rng.randn(200, 5)
    y = np.digitize(X[:, 0] + X[:, 1] * X[:, 2], np.quantile(X[:, 0], [1 / 3, 2 / 3]))
    y = y if n_classes == 3 else (y > 0).astype(int)
    model = MLPClassifier((16, 8), max_iter=50, random_state=0).fit(X, y)
    net = common.mlp_to_torch(model)
    assert common.check_torch_copy(model, net, X) <= 1e-5
    with torch.inference_mode():
        proba = net(torch.as_tensor(X, dtype=torch.float32)).numpy()
    assert proba.shape == (200, n_classes)
    np.testing.assert_allclose(proba, model.predict_proba(X), atol=1e-5)


def test_peer_masks_are_top_k_of_absolute_attributions():
    attributions = np.array([[0.1, -0.9, 0.5, 0.5], [0.0, 0.0, 0.0, -0.2]])
    np.testing.assert_array_equal(common.topk_of_abs(attributions, 2),
                                  [[0, 1, 1, 0], [1, 0, 0, 1]])


def test_merge_keeps_records_not_redone():
    kept = [{"dataset": "S1", "method": "l2x", "v": 1}, {"dataset": "xor", "method": "lime", "v": 2}]
    new = [{"dataset": "S1", "method": "l2x", "v": 3}]
    merged = common.merge_records(kept, new)
    assert [(r["dataset"], r["method"], r["v"]) for r in merged] == [("xor", "lime", 2), ("S1", "l2x", 3)]


def test_extra_seeds_record_each_seeds_median_rank():
    records = common.run_benchmark(TINY, dataset_names=["orange_skin"], methods=["l2x"],
                                   device="cpu", seeds=3)
    ranks = records[0]["median_rank_seeds"]
    assert len(ranks) == 3 and ranks[0] == records[0]["median_rank"]
    # Seed 1 is the explainer the harness builds, refitted with random_state=1.
    data, _ = common._prepare_or_error(common.DATASETS["orange_skin"], TINY, torch.device("cpu"),
                                       False)
    spec = common.DATASETS["orange_skin"]
    explainer = common._our_explainer("l2x", spec, TINY, torch.device("cpu"))
    explainer.set_params(random_state=1).fit(data.X_train, black_box=data.model)
    assert ranks[1] == common.metrics.median_rank(data.relevant_explain,
                                                  explainer.transform(data.X_explain))
    text = common.render_rst(records, common.machine_info("cpu"), TINY)
    assert "Median rank over explainer seeds" in text and "over 3 seeds" in text
