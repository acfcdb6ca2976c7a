"""Smoke test of HardKuma's benchmark on its fast profile."""

import json

import pytest
import torch

from benchmarks import bench_hardkuma

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def fast_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("hardkuma") / "hardkuma_fast.json"
    bench_hardkuma.main(["--profile", "fast", "--device", "cpu", "--out", str(out)])
    return json.loads(out.read_text(encoding="utf-8")), out.with_suffix(".rst")


def test_fast_profile_records_rates_and_matched_tpr(fast_run):
    payload, _ = fast_run
    rate, matched = payload["records"]
    assert (rate["part"], rate["dataset"], rate["target_rate"]) == ("rate", "additive_code", 0.3)
    # 400 selector steps already hold the rate near its target, mostly on true features
    # (three of ten are kept, four are relevant: a TPR of 0.75 at best).
    assert rate["achieved_rate"] == pytest.approx(0.3, abs=0.05)
    assert rate["tpr"] > 0.5 and rate["fdr"] < 0.3
    assert len(rate["runs"]) == 1
    assert (matched["part"], matched["dataset"], matched["k"]) == ("matched", "orange_skin", 4)
    assert matched["target_rate"] == pytest.approx(0.4)
    for key in ("l2x_tpr", "tpr", "tpr_top_k", "achieved_rate"):
        assert 0.0 <= matched[key] <= 1.0
    # The refinement (on by default) trades some ground truth for fidelity to the model.
    assert matched["tpr"] > 0.8


def test_fast_profile_renders_both_tables(fast_run):
    _, rst = fast_run
    text = rst.read_text(encoding="utf-8")
    assert "the selection rate asked for and achieved" in text
    assert "Orange skin" in text and "Additive (code)" in text
