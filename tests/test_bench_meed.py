"""Smoke test of MEED's image benchmark on its fast profile (sklearn's 8 x 8 digits)."""

import json

import pytest
import torch

from benchmarks import bench_meed
from benchmarks.harness import meed

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def fast_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("meed") / "meed_fast.json"
    methods = ["meed", "meed_no_ail", "l2x"]
    bench_meed.main(["--profile", "fast", "--device", "cpu", "--out", str(out),
                     "--methods", *methods])
    return methods, json.loads(out.read_text(encoding="utf-8")), out.with_suffix(".rst")


def test_fast_profile_records_every_metric(fast_run):
    methods, payload, _ = fast_run
    records = payload["records"]
    assert [r["method"] for r in records] == [*methods, meed.RANDOM, "sanity"]
    by_name = {r["method"]: r for r in records}
    for name in [*methods, meed.RANDOM]:
        r = by_name[name]
        assert r["error"] is None
        for key in ("fs_m", "fu_m", "fs_a", "fu_a"):
            assert 0.0 <= r[key] <= 1.0, key
    for name in methods:
        assert by_name[name]["sen"] >= 0.0
        assert len(by_name[name]["fs_m_seeds"]) == meed.PROFILES["fast"].seeds
    # Six epochs already keep the CNN's answer better than random pixels do.
    assert by_name["meed"]["fs_m"] > by_name[meed.RANDOM]["fs_m"] + 0.1
    assert by_name["meed"]["fu_m"] < by_name[meed.RANDOM]["fu_m"]
    sanity = by_name["sanity"]
    assert 0.0 <= sanity["sanity_cosine"] < 1.0
    assert sanity["chance_cosine"] == pytest.approx(6 / 64)


def test_fast_profile_renders_one_row_per_method(fast_run):
    _, payload, rst = fast_run
    text = rst.read_text(encoding="utf-8")
    for r in payload["records"][:-1]:
        assert r["method_label"] in text
    assert "Sanity check (model randomisation)" in text
