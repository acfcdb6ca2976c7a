"""The scale study on a tiny grid, its anchors against the package, and its reports.

Timings are only checked to be positive and finite: their values depend on the machine.
"""

import json
import math

import numpy as np
import pytest
import torch

from benchmarks import bench
from benchmarks.harness import anchor, registry, report
from benchmarks.harness.data import make_rows
from benchmarks.harness.study import Profile, run, summarize
from benchmarks.studies import scale
from sk_sointer import L2XExplainer, RealXExplainer


def _positive(value):
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """The fast profile's budget (2 epochs) on one table of 600 rows and 6 features."""
    out = tmp_path_factory.mktemp("scale") / "scale.json"
    bench.main(["scale", "--profile", "fast", "--device", "cpu", "--rows", "600",
                "--widths", "6", "--out", str(out)])
    return out, json.loads(out.read_text(encoding="utf-8"))


@pytest.mark.slow  # a tiny run of the scale grid
def test_the_tiny_grid_records_finite_positive_timings_and_ratios(tiny_run):
    out, payload = tiny_run
    records = payload["records"]
    by_method = {method: values for (dataset, method), values in summarize(records).items()}
    # Methods without a plain-loop anchor in harness/anchor.py (MEED) are not run.
    assert list(by_method) == [
        name for name in registry.method_names(amortized=True) if name in anchor.ANCHORS]
    for r in records:
        assert r["metric"] != "error", r["traceback"]
        assert r.get("memory_error") is None, r["memory_error"]
        assert (r["dataset"], r["n_rows"], r["n_features"], r["device"], r["k"]) == (
            "600x6", 600, 6, "cpu", 4)
        assert r["budget"]["max_epochs"] == 2
    for values in by_method.values():
        # The anchor takes exactly the package's optimisation steps.
        assert values["n_steps"] == values["anchor_n_steps"] > 0
        for name in ("fit_s", "anchor_fit_s", "fit_ratio", "transform_s", "forward_s",
                     "throughput_ratio", "input_bytes", "output_bytes", "peak_bytes",
                     "memory_ratio", "forward_peak_bytes", "fit_loss", "anchor_loss"):
            assert _positive(values.get(name)), name
        assert values["input_bytes"] == 600 * 6 * 4
        assert values["peak_bytes"] >= values["input_bytes"]
        # Per-step times: each fit's seconds over its own steps.
        assert values["step_s"] == pytest.approx(values["fit_s"] / values["n_steps"])
        assert values["anchor_step_s"] == pytest.approx(
            values["anchor_fit_s"] / values["anchor_n_steps"])
        # A CPU run: no copy-in/forward/copy-out, device memory nor captured step.
        for name in ("copy_forward_s", "device_peak_bytes", "eager_step_s", "capture_speedup"):
            assert name not in values, name
    assert payload["machine"]["device"] == "cpu"
    assert payload["profile"]["name"] == "fast"
    text = out.with_suffix(".rst").read_text()
    assert "Fit and transform against table size" in text
    assert "Training step against table size" in text
    assert "Step ms: a fit's seconds over its steps." in " ".join(text.split())


def _l2x_data():
    X, outputs = make_rows(2000, 8, seed=3)
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
    X, outputs = make_rows(300, 6)
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


def test_the_anchors_import_public_names_of_sk_sointer_only():
    import ast
    from pathlib import Path

    tree = ast.parse(Path(anchor.__file__).read_text(encoding="utf-8"))
    modules = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    modules += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names]
    ours = [name for name in modules if name and name.split(".")[0] == "sk_sointer"]
    assert ours and not [name for name in ours if "._" in name or name.startswith("_")]


def test_full_budget_keeps_the_steps_about_constant():
    full = scale.STUDY.profile("full")
    l2x, realx = registry.METHODS["l2x"], registry.METHODS["realx"]
    assert scale.budget(full, l2x, 10_000) == {"max_epochs": 100}
    assert scale.budget(full, l2x, 100_000) == {"max_epochs": 10}
    assert scale.budget(full, l2x, 1_000_000) == {"max_epochs": 1}
    assert scale.budget(full, realx, 10_000) == {"max_epochs": 160, "predictor_epochs": 100}
    assert scale.budget(full, realx, 100_000) == {"max_epochs": 16, "predictor_epochs": 10}
    assert scale.budget(full, realx, 1_000_000) == {"max_epochs": 2, "predictor_epochs": 1}


def test_a_table_too_large_for_memory_is_skipped(monkeypatch):
    monkeypatch.setattr(scale, "available_memory", lambda: 1024)
    profile = scale.STUDY.profile("fast", rows=[600], widths=[6])
    records = run(scale.STUDY, profile, device="cpu")
    assert [r["method"] for r in records] == list(scale.STUDY.methods)
    assert all(r["metric"] == "error" and "skipped" in r["error"] and "GiB" in r["error"]
               for r in records)
    text = report.render(scale.STUDY, records, report.machine_info("cpu"), profile)
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


@pytest.mark.slow  # a tiny run of the scale grid
def test_rendering_gives_one_row_per_record_and_the_peers(tiny_run):
    _, payload = tiny_run
    records, machine = payload["records"], payload["machine"]
    profile = Profile(payload["profile"])
    # The run kept the peers' costs it read from the synthetic results in its profile.
    peers = scale.peer_costs()
    assert profile.peers == json.loads(json.dumps(peers))
    text = report.render(scale.STUDY, records, machine, profile)
    table = _table_lines(text, "Fit and transform against table size")
    assert _n_columns(table) == 14
    header_end = next(i for i, line in enumerate(table) if line.startswith("   +="))
    measured = summarize(records)
    assert sum(line.startswith("   +-") for line in table[header_end:]) == len(measured)
    first = next(iter(measured.values()))
    assert scale._ratio(first["fit_ratio"]) in table[header_end + 1]
    peer_table = _table_lines(text, "Per-row peers (from the synthetic benchmark)")
    assert "from the synthetic benchmark" in text
    for peer in peers["methods"]:
        assert any(peer["method_label"] in line for line in peer_table)
    assert any("``transform`` (this run, 600 x 6)" in line for line in peer_table)

    # On CUDA the table gains the copy-in/forward/copy-out and device-memory columns.
    cuda_records = [{**r, "device": "cuda"} for r in records]
    for r in [r for r in cuda_records if r["metric"] == "forward_s"]:
        cuda_records += [{**r, "metric": "copy_forward_s", "value": 2 * r["value"]},
                         {**r, "metric": "gpu_ratio", "value": 0.5},
                         {**r, "metric": "device_peak_bytes", "value": 1e6}]
    for r in [r for r in cuda_records if r["metric"] == "step_s"]:
        cuda_records += [{**r, "metric": "eager_step_s", "value": 6 * r["value"]},
                         {**r, "metric": "capture_speedup", "value": 6.0},
                         {**r, "metric": "anchor_speedup", "value": 5.5}]
    cuda_machine = {**machine, "device": "cuda", "gpu": "Some GPU"}
    no_peers = profile.replace(peers=None, peers_from="no/such/file.json")
    cuda_text = report.render(scale.STUDY, cuda_records, cuda_machine, no_peers)
    assert _n_columns(_table_lines(cuda_text, "Fit and transform against table size")) == 17
    assert "Some GPU (CUDA)" in cuda_text and "Per-row peers" not in cuda_text
    # The step table: the package's (captured) step, its eager step, the anchor's, and the
    # speed-ups of the captured fit; on the CPU the first and the anchor's only.
    assert _n_columns(_table_lines(text, "Training step against table size")) == 6
    steps = _table_lines(cuda_text, "Training step against table size")
    assert _n_columns(steps) == 9
    assert any("6.00" in line and "5.50" in line for line in steps)
    assert "eager: the same fit with ``cuda_graphs=False``" in " ".join(cuda_text.split())


def test_peer_costs_come_from_the_synthetic_results():
    peers = scale.peer_costs()
    path = scale.ROOT / scale.SYNTHETIC_RESULTS
    payload = json.loads(path.read_text(encoding="utf-8"))
    lime = [r["value"] for r in payload["records"]
            if r["method"] == "lime" and r["metric"] == "explain_ms_per_row"]
    by_method = {peer["method"]: peer for peer in peers["methods"]}
    assert set(by_method) == set(registry.method_names(amortized=False))
    assert by_method["lime"]["ms_per_row"] == pytest.approx(np.median(lime))
    assert scale.peer_costs("no/such/file.json") is None


def test_the_stored_cpu_results_render_to_the_readme_block():
    text = bench.main(["scale", "--render", str(report.RESULTS_DIR / "scale_full_cpu.json")])
    readme = (scale.ROOT / "doc" / "benchmarks.rst").read_text(encoding="utf-8")
    assert report.replace_between_markers(readme, text, *scale.STUDY.readme) == readme


def test_the_stored_cluster_results_are_the_page_s_cluster_table():
    from benchmarks.studies import cluster

    records, machine, profile = report.load_study_results(
        report.RESULTS_DIR / "scale_cluster_full.json")
    block = report.render(cluster.STUDY, records, machine, profile,
                          titles=cluster.STUDY.readme_tables)
    page = (scale.ROOT / "doc" / "benchmarks.rst").read_text(encoding="utf-8")
    assert "| dask_transform     | 2       | 1,000,000 | 644,678   | 1.98" in block
    assert report.replace_between_markers(page, block, *cluster.STUDY.readme) == page


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
    scale_readme = scale.STUDY.readme
    report.update_readme(path, "first table\n", *scale_readme)
    inserted = path.read_text(encoding="utf-8")
    assert inserted == README.replace(
        "Run the harness.\n\n",
        "Run the harness.\n\n.. scale-table-start\n\nfirst table\n\n.. scale-table-end\n\n",
    )
    report.update_readme(path, "second table\n", *scale_readme)
    assert path.read_text(encoding="utf-8") == inserted.replace("first table", "second table")
    report.update_readme(path, "second table\n", *scale_readme)
    assert path.read_text(encoding="utf-8") == inserted.replace("first table", "second table")


def _replace(text, block):
    return report.replace_between_markers(text, block, *scale.STUDY.readme)


def test_readme_block_needs_markers_or_a_benchmarks_section():
    with pytest.raises(ValueError, match="Benchmarks"):
        _replace("Title\n=====\n\nText.\n", "table")
    with pytest.raises(ValueError, match="scale-table-end"):
        _replace(".. scale-table-start\n\nold\n", "table")
    # The last section of a file takes the block at the very end.
    text = _replace("Benchmarks\n----------\n\nRun.\n", "table\n")
    assert text == ("Benchmarks\n----------\n\nRun.\n\n.. scale-table-start\n\ntable\n\n"
                    ".. scale-table-end\n")


@pytest.mark.slow  # a local Dask cluster's run
def test_cluster_part_checks_masks_and_reports_every_engine(tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    from benchmarks import bench
    from benchmarks.studies import cluster

    tiny = {"n_rows": 3000, "workers": (1, 2), "shap_rows": 2, "repeats": 1}
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
    first = next(r for r in records if r["method"] is not None)
    assert first["method"] == "in_memory"
    assert {r["metric"]: r["value"] for r in records
            if r["method"] == "in_memory"}["speedup_vs_1_worker"] == 1.0
    assert "dask_transform" in out.with_suffix(".rst").read_text(encoding="utf-8")
