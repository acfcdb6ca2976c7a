"""Smoke test of HardKuma's study on its fast profile."""

import json

import pytest
import torch

from benchmarks import bench
from benchmarks.harness.report import RESULTS_DIR as RESULTS
from benchmarks.harness.study import summarize

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def fast_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("hardkuma") / "hardkuma_fast.json"
    bench.main(["hardkuma", "--profile", "fast", "--device", "cpu", "--out", str(out)])
    return json.loads(out.read_text(encoding="utf-8")), out.with_suffix(".rst")


@pytest.mark.slow  # a fast-profile run of the study
def test_fast_profile_records_rates_and_matched_tpr(fast_run):
    payload, _ = fast_run
    records = payload["records"]
    assert payload["study"] == "hardkuma"
    assert list(dict.fromkeys((r["dataset"], r["method"]) for r in records if r["method"])) == [
        ("additive_code", "rate"), ("orange_skin", "matched")]
    assert {r["target_rate"] for r in records if r["method"] == "rate"} == {0.3}
    summary = summarize(records)
    rate, matched = summary[("additive_code", "rate")], summary[("orange_skin", "matched")]
    # 400 selector steps already hold the rate near its target, mostly on true features
    # (three of ten are kept, four are relevant: a TPR of 0.75 at best).
    assert rate["achieved_rate"] == pytest.approx(0.3, abs=0.05)
    assert rate["tpr"] > 0.5 and rate["fdr"] < 0.3
    assert len(rate["achieved_rate_seeds"]) == 1
    assert {r["k"] for r in records if r["method"] == "matched"} == {4}
    assert matched["target_rate"] == pytest.approx(0.4)
    for key in ("l2x_tpr", "tpr", "tpr_top_k", "achieved_rate"):
        assert 0.0 <= matched[key] <= 1.0
    assert matched["tpr_gain"] == pytest.approx(matched["tpr"] - matched["l2x_tpr"])
    # The refinement (on by default) trades some ground truth for fidelity to the model.
    assert matched["tpr"] > 0.8


@pytest.mark.slow  # a fast-profile run of the study
def test_fast_profile_renders_both_tables(fast_run):
    _, rst = fast_run
    text = rst.read_text(encoding="utf-8")
    assert "the selection rate asked for and achieved" in text
    assert "Orange skin" in text and "Additive (code)" in text


def test_the_stored_records_render_the_readme_table():
    text = bench.main(["hardkuma", "--render", str(RESULTS / "hardkuma_full.json")])
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in text.splitlines()
            if line.startswith("   |")]
    assert ["", "50.0", "50.1 ± 0.5", "53.7 ± 0.9", "100.0", "25.9 ± 1.2", "93.8 ± 0.1",
            "16.6 ± 0.3"] in rows
    assert ["Additive (code)", "4", "40.0", "43.6 ± 5.3", "100.0", "97.9 ± 2.2",
            "98.2 ± 2.0", "-2.1 ± 2.2"] in rows
