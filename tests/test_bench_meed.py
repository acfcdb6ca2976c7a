"""Smoke test of MEED's image study on its fast profile (sklearn's 8 x 8 digits)."""

import json

import pytest
import torch

from benchmarks import bench
from benchmarks.harness.study import summarize
from benchmarks.studies import meed

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def fast_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("meed") / "meed_fast.json"
    methods = ["meed", "meed_no_ail", "l2x"]
    bench.main(["meed", "--profile", "fast", "--device", "cpu", "--out", str(out),
                "--methods", *methods])
    return methods, json.loads(out.read_text(encoding="utf-8")), out.with_suffix(".rst")


@pytest.mark.slow  # a fast-profile run of the study
def test_fast_profile_records_every_metric(fast_run):
    methods, payload, _ = fast_run
    records = payload["records"]
    assert list(dict.fromkeys(r["method"] for r in records if r["method"])) == [
        *methods, meed.RANDOM, meed.SANITY]
    assert not [r for r in records if r["metric"] == "error"]
    for r in records:  # every seed's value
        if r["metric"] in ("fs_m", "fu_m", "fs_a", "fu_a"):
            assert 0.0 <= r["value"] <= 1.0, r["metric"]
    by_name = {method: values for (_, method), values in summarize(records).items()}
    for name in [*methods, meed.RANDOM]:
        assert {"fs_m", "fu_m", "fs_a", "fu_a"} <= set(by_name[name]), name
    for name in methods:
        assert min(by_name[name]["sen_seeds"]) >= 0.0
        assert len(by_name[name]["fs_m_seeds"]) == meed.PROFILES["fast"]["seeds"]
    # Six epochs already keep the CNN's answer better than random pixels do.
    assert by_name["meed"]["fs_m"] > by_name[meed.RANDOM]["fs_m"] + 0.1
    assert by_name["meed"]["fu_m"] < by_name[meed.RANDOM]["fu_m"]
    sanity = by_name[meed.SANITY]
    assert 0.0 <= sanity["sanity_cosine"] < 1.0
    assert sanity["chance_cosine"] == pytest.approx(6 / 64)


@pytest.mark.slow  # a fast-profile run of the study
def test_fast_profile_renders_one_row_per_method(fast_run):
    methods, _, rst = fast_run
    text = rst.read_text(encoding="utf-8")
    for name in [*methods, meed.RANDOM]:
        assert meed.STUDY.label(name) in text
    assert "Sanity check (model randomisation)" in text


def test_the_stored_records_render_the_readme_table():
    from benchmarks.harness.report import RESULTS_DIR

    text = bench.main(["meed", "--render", str(RESULTS_DIR / "meed_full.json")])
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in text.splitlines()
            if line.startswith("   |")]
    assert ["MEED", "99.0 ± 0.5", "67.0 ± 1.5", "99.0 ± 1.0", "95.2 ± 0.6", "478.5 ± 95.2",
            "290.7 ± 35.2", "0.134 ± 0.00112"] in rows
    assert "random weights 1.2 % (Pearson -2.1 %; chance 3.2 %)" in " ".join(text.split())
