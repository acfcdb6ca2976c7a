"""The scale benchmark on a tiny grid, its anchors against the package, and its reports.

Timings are only checked to be positive and finite: their values depend on the machine.
"""

import json
import math

import numpy as np
import pytest
import torch

from benchmarks import bench_scale
from benchmarks.harness import anchor, registry, report, scale
from sk_sointer import L2XExplainer, RealXExplainer


def _positive(value):
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """The fast profile's budget (2 epochs) on one table of 600 rows and 6 features."""
    out = tmp_path_factory.mktemp("scale") / "scale.json"
    bench_scale.main(["--profile", "fast", "--device", "cpu", "--rows", "600",
                      "--widths", "6", "--out", str(out)])
    return out, json.loads(out.read_text(encoding="utf-8"))


def test_the_tiny_grid_records_finite_positive_timings_and_ratios(tiny_run):
    out, payload = tiny_run
    records = payload["records"]
    # Methods without a plain-loop anchor in harness/anchor.py (MEED) are skipped.
    assert [r["method"] for r in records] == [
        name for name in registry.method_names(amortized=True) if name in anchor.ANCHORS]
    for r in records:
        assert r["error"] is None, r["traceback"]
        assert r["memory_error"] is None, r["memory_error"]
        assert (r["n_rows"], r["n_features"], r["device"], r["k"]) == (600, 6, "cpu", 4)
        assert r["budget"]["max_epochs"] == 2
        # The anchor takes exactly the package's optimisation steps.
        assert r["n_steps"] == r["anchor_n_steps"] > 0
        for name in ("fit_s", "anchor_fit_s", "fit_ratio", "transform_s", "forward_s",
                     "throughput_ratio", "input_bytes", "output_bytes", "peak_bytes",
                     "memory_ratio", "forward_peak_bytes", "fit_loss", "anchor_loss"):
            assert _positive(r[name]), name
        assert r["input_bytes"] == 600 * 6 * 4
        assert r["peak_bytes"] >= r["input_bytes"]
        assert r["copy_forward_s"] is None and r["device_peak_bytes"] is None  # CPU run
    assert payload["machine"]["device"] == "cpu"
    assert payload["profile"]["name"] == "fast"
    assert "Fit and transform against table size" in out.with_suffix(".rst").read_text()


def _l2x_data():
    X, outputs = scale.make_rows(2000, 8, seed=3)
    return X, outputs


def test_the_l2x_anchor_reaches_the_package_loss():
    X, outputs = _l2x_data()
    explainer = L2XExplainer(k=4, max_epochs=10, batch_size=200, random_state=0,
                             device="cpu").fit(X, outputs)
    fit = anchor.fit_l2x(explainer, X, outputs, "cpu")
    history = explainer.net_.history
    first, package = history[0, "train_loss"], history[-1, "train_loss"]
    assert fit.n_steps == sum(len(epoch["batches"]) for epoch in history) == 100
    # Both learn (an anchor that skipped its steps would stay near the first epoch's loss)
    # and land close together.
    assert package < first - 0.1 and fit.loss < first - 0.1
    assert abs(fit.loss - package) < 0.05


@pytest.mark.parametrize("make", [
    lambda: L2XExplainer(k=2, max_epochs=1, batch_size=100, lr=1e-9, random_state=0),
    lambda: RealXExplainer(k=2, max_epochs=2, predictor_epochs=1, batch_size=100, lr=1e-9,
                           random_state=0),
], ids=["L2X", "REAL-X"])
def test_an_anchor_trains_the_package_networks_from_the_same_weights(make):
    X, outputs = scale.make_rows(300, 6)
    explainer = make().set_params(device="cpu").fit(X, outputs)
    fit = anchor.ANCHORS[{"L2XExplainer": "l2x", "RealXExplainer": "realx"}[
        type(explainer).__name__]](explainer, X, outputs, "cpu")
    package = {"selector": explainer.net_.module_,
               **{name: getattr(explainer.net_, name + "_")
                  for name in explainer.net_.judges}}
    assert set(fit.modules) == set(package)
    # At a learning rate of 1e-9 the weights barely move: equal weights are equal starts.
    for name, module in package.items():
        ours = dict(fit.modules[name].named_parameters())
        for key, value in module.named_parameters():
            assert ours[key].shape == value.shape
            torch.testing.assert_close(ours[key], value, atol=1e-6, rtol=0)


def test_full_budget_keeps_the_steps_about_constant():
    full = scale.PROFILES["full"]
    l2x, realx = registry.METHODS["l2x"], registry.METHODS["realx"]
    assert full.budget(l2x, 10_000) == {"max_epochs": 100}
    assert full.budget(l2x, 100_000) == {"max_epochs": 10}
    assert full.budget(l2x, 1_000_000) == {"max_epochs": 1}
    assert full.budget(realx, 10_000) == {"max_epochs": 160, "predictor_epochs": 100}
    assert full.budget(realx, 100_000) == {"max_epochs": 16, "predictor_epochs": 10}
    assert full.budget(realx, 1_000_000) == {"max_epochs": 2, "predictor_epochs": 1}


def test_a_table_too_large_for_memory_is_skipped(monkeypatch):
    monkeypatch.setattr(scale, "_available_memory", lambda: 1024)
    records = scale.run_scale("fast", rows=[600], widths=[6], device="cpu")
    assert all(r["skipped"] and "GiB" in r["skipped"] for r in records)
    text = scale.render_rst(records, report.machine_info("cpu"), "fast")
    assert text.count("skipped") >= len(records)


def _table_lines(text, title):
    lines = text.splitlines()
    start = lines.index(f".. table:: {title}")
    table = []
    for line in lines[start + 2 :]:
        if not line.startswith(("   +", "   |")):
            break
        table.append(line)
    return table


def _n_columns(table):
    """Columns of a grid table whose separators line up: a border's ``+`` with every
    content line's ``|`` (cell text may hold a ``+``, as in "In+out")."""
    borders = {tuple(i for i, char in enumerate(line) if char == "+")
               for line in table if line.startswith("   +")}
    cells = {tuple(i for i, char in enumerate(line) if char == "|")
             for line in table if line.startswith("   |")}
    assert len(borders) == 1 and borders == cells
    return len(next(iter(borders))) - 1


def test_rendering_gives_one_row_per_record_and_the_peers(tiny_run):
    _, payload = tiny_run
    records, machine = payload["records"], payload["machine"]
    peers = scale.peer_costs()
    text = scale.render_rst(records, machine, "fast", peers)
    table = _table_lines(text, "Fit and transform against table size")
    assert _n_columns(table) == 14
    header_end = next(i for i, line in enumerate(table) if line.startswith("   +="))
    assert sum(line.startswith("   +-") for line in table[header_end:]) == len(records)
    assert scale._ratio(records[0]["fit_ratio"]) in table[header_end + 1]
    peer_table = _table_lines(text, "Per-row peers (from the synthetic benchmark)")
    assert "from the synthetic benchmark" in text
    for peer in peers["methods"]:
        assert any(peer["method_label"] in line for line in peer_table)
    assert any("``transform`` (this run, 600 x 6)" in line for line in peer_table)

    # On CUDA the table gains the copy-in/forward/copy-out and device-memory columns.
    cuda_records = [{**r, "device": "cuda", "copy_forward_s": 2 * r["forward_s"],
                     "gpu_ratio": 0.5, "device_peak_bytes": 1e6} for r in records]
    cuda_machine = {**machine, "device": "cuda", "gpu": "Some GPU"}
    cuda_text = scale.render_rst(cuda_records, cuda_machine, "fast")
    assert _n_columns(_table_lines(cuda_text, "Fit and transform against table size")) == 17
    assert "Some GPU (CUDA)" in cuda_text and "Per-row peers" not in cuda_text


def test_peer_costs_come_from_the_synthetic_results():
    peers = scale.peer_costs()
    payload = json.loads(scale.SYNTHETIC_RESULTS.read_text(encoding="utf-8"))
    lime = [r["explain_ms_per_row"] for r in payload["records"] if r["method"] == "lime"]
    by_method = {peer["method"]: peer for peer in peers["methods"]}
    assert set(by_method) == set(registry.method_names(amortized=False))
    assert by_method["lime"]["ms_per_row"] == pytest.approx(np.median(lime))
    assert scale.peer_costs("no/such/file.json") is None


README = """Title
=====

Results
-------

Text.

Benchmarks
----------

Run the harness.

Development
-----------

Tests.
"""


def test_readme_block_goes_at_the_end_of_benchmarks_then_is_replaced(tmp_path):
    path = tmp_path / "README.rst"
    path.write_text(README, encoding="utf-8")
    scale.update_readme(path, "first table\n")
    inserted = path.read_text(encoding="utf-8")
    assert inserted == README.replace(
        "Run the harness.\n\n",
        "Run the harness.\n\n.. scale-table-start\n\nfirst table\n\n.. scale-table-end\n\n",
    )
    scale.update_readme(path, "second table\n")
    assert path.read_text(encoding="utf-8") == inserted.replace("first table", "second table")
    scale.update_readme(path, "second table\n")
    assert path.read_text(encoding="utf-8") == inserted.replace("first table", "second table")


def test_readme_block_needs_markers_or_a_benchmarks_section():
    with pytest.raises(ValueError, match="Benchmarks"):
        scale.replace_or_insert_block("Title\n=====\n\nText.\n", "table")
    with pytest.raises(ValueError, match="scale-table-end"):
        scale.replace_or_insert_block(".. scale-table-start\n\nold\n", "table")
    # The last section of a file takes the block at the very end.
    text = scale.replace_or_insert_block("Benchmarks\n----------\n\nRun.\n", "table\n")
    assert text == ("Benchmarks\n----------\n\nRun.\n\n.. scale-table-start\n\ntable\n\n"
                    ".. scale-table-end\n")


def test_cluster_part_checks_masks_and_reports_every_engine(tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    from benchmarks import bench
    from benchmarks.studies import cluster

    tiny = dict(n_rows=3000, workers=(1, 2), shap_rows=2, repeats=1)
    monkeypatch.setitem(cluster.PROFILES, "fast", tiny)
    out = tmp_path / "cluster.json"
    records = bench.main(["cluster", "--profile", "fast", "--out", str(out)])
    stored = json.loads(out.read_text(encoding="utf-8"))["records"]
    assert [(r["method"], r["metric"]) for r in stored] == [
        (r["method"], r["metric"]) for r in records]
    assert not [r for r in records if r["metric"] == "error"]
    dask_runs = [r for r in records
                 if r["method"] == "dask_transform" and r["metric"] == "rows_per_s"]
    assert [r["workers"] for r in dask_runs] == [1, 2]
    assert all(r["identical_to_in_memory"] for r in dask_runs)
    assert all(_positive(r["value"]) for r in records if r["metric"] == "rows_per_s")
    first = [r for r in records if r["method"] is not None][0]
    assert first["method"] == "in_memory"
    assert {r["metric"]: r["value"] for r in records
            if r["method"] == "in_memory"}["speedup_vs_1_worker"] == 1.0
    assert "dask_transform" in out.with_suffix(".rst").read_text(encoding="utf-8")
