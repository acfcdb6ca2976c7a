"""Smoke test of the segmentation study on its fast profile."""

import json

import numpy as np
import pytest
import torch

from benchmarks import bench
from benchmarks.harness import data, report
from benchmarks.harness.study import summarize
from benchmarks.studies import segmentation

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def fast_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("segmentation") / "segmentation_fast.json"
    bench.main(["segmentation", "--profile", "fast", "--device", "cpu", "--out", str(out)])
    return json.loads(out.read_text(encoding="utf-8")), out.with_suffix(".rst")


@pytest.mark.slow  # a fast-profile run of the study
def test_fast_profile_records_every_method_at_its_k(fast_run):
    payload, _ = fast_run
    records = payload["records"]
    assert payload["study"] == "segmentation"
    assert not [r for r in records if r["metric"] == "error"]
    assert list(dict.fromkeys((r["dataset"], r["method"]) for r in records if r["method"])) == [
        ("pixel_12_12", "sointer"), ("pixel_12_12", "l2x"), ("pixel_12_12", "random"),
        ("pixel_12_12", "nearest"), ("pixel_12_12", "greedy")]
    assert {r["k"] for r in records if r["method"]} == {10}
    summary = summarize(records)
    network = summary[("pixel_12_12", None)]
    assert 0.5 < network["model_acc"] <= 1.0
    for method in ("sointer", "l2x", "random", "nearest", "greedy"):
        entry = summary[("pixel_12_12", method)]
        assert 0.0 <= entry["post_acc"] <= 1.0 and 0.0 <= entry["posthoc_acc"] <= 1.0
    # Random pixels lie, on average, as far from (12, 12) as the grid's pixels do.
    rows, cols = np.divmod(np.arange(24 * 24), 24)
    expected = np.hypot(rows - 12, cols - 12).mean()
    assert summary[("pixel_12_12", "random")]["distance"] == pytest.approx(expected, abs=0.3)
    # Two epochs already pull SOInter's pixels towards the target.
    assert summary[("pixel_12_12", "sointer")]["distance"] < expected - 0.5
    assert summary[("pixel_12_12", "sointer")]["fit_s"] > 0
    # The 10 nearest pixels: the target, its 4 neighbours at 1, 4 diagonals, one at 2.
    nearest = (4 * 1 + 4 * np.sqrt(2) + 2) / 10
    assert summary[("pixel_12_12", "nearest")]["distance"] == pytest.approx(nearest)
    assert summary[("pixel_12_12", "nearest")]["target_kept"] == 1.0
    # The search that reads the network keeps its label best.
    assert summary[("pixel_12_12", "greedy")]["posthoc_acc"] >= max(
        summary[("pixel_12_12", method)]["posthoc_acc"] for method in ("sointer", "nearest"))


def test_the_greedy_reference_keeps_k_pixels_of_the_field_and_reads_the_network_exactly():
    torch.manual_seed(0)
    model = segmentation.SegmentationFCN().eval()
    X = np.random.default_rng(0).uniform(0, 1, (30, 576))
    fill = X.mean(axis=0)
    masks = segmentation.greedy_masks(model, X, fill, 16, 9, k=4, chunk=7)
    assert masks.shape == (30, 576) and (masks.sum(axis=1) == 4).all()
    rows, cols = np.divmod(np.nonzero(masks)[1], 24)
    assert (np.abs(rows - 16) <= 5).all() and (np.abs(cols - 9) <= 5).all()
    # Each pick is the best one: no other pixel of the field, added to the first three,
    # moves the network's logit further to its own label (computed on whole images).
    index = 16 * 24 + 9
    with torch.no_grad():
        own = torch.sign(model(torch.as_tensor(X, dtype=torch.float32))[:, index])
    row = 0
    first = segmentation.greedy_masks(model, X[:1], fill, 16, 9, k=3)[0]
    last = np.nonzero(masks[row] & ~first)[0]
    assert len(last) == 1
    field = [r * 24 + c for r in range(11, 22) for c in range(4, 15) if not first[r * 24 + c]]
    trials = np.stack([np.where(first | (np.arange(576) == p), X[row], fill) for p in field])
    with torch.no_grad():
        margins = model(torch.as_tensor(trials, dtype=torch.float32))[:, index] * own[row]
    assert field[int(margins.argmax())] == last[0]
    with pytest.raises(ValueError, match="field inside the image"):
        segmentation.greedy_masks(model, X, fill, 2, 9, k=1)


@pytest.mark.slow  # a fast-profile run of the study
def test_fast_profile_renders_the_tables(fast_run):
    _, rst = fast_run
    text = rst.read_text(encoding="utf-8")
    assert "Post-accuracy % on the target pixel" in text
    assert "Mean distance (pixels) of the selected pixels to the target" in text
    assert "SOInter (whole network)" in text and "L2X (target pixel alone)" in text


def test_one_pixel_is_the_network_s_probability_of_that_pixel():
    torch.manual_seed(0)
    model = segmentation.SegmentationFCN().eval()
    X = torch.rand(3, 576)
    with torch.no_grad():
        p = torch.sigmoid(model(X)[:, 100])
        np.testing.assert_allclose(data.one_logit(model, 100)(X).numpy(),
                                   torch.stack([1 - p, p], 1).numpy(), rtol=1e-6)


def test_the_stored_records_render_the_readme_tables():
    records, machine, profile = report.load_study_results(
        report.RESULTS_DIR / "segmentation_full.json")
    block = report.render(segmentation.STUDY, records, machine, profile,
                          titles=segmentation.STUDY.readme_tables)
    readme = bench.RESULTS_PAGE.read_text(encoding="utf-8")
    assert report.replace_between_markers(readme, block, *segmentation.STUDY.readme) == readme


def test_the_stored_full_run_is_local_and_within_the_fit_budget():
    path = report.RESULTS_DIR / "segmentation_full.json"
    records = json.loads(path.read_text(encoding="utf-8"))["records"]
    assert not [r for r in records if r["metric"] == "error"]
    by_cell = {}
    for r in records:
        if r["method"] and r["metric"] in ("distance", "fit_s"):
            by_cell.setdefault((r["dataset"], r["k"], r["method"], r["metric"]), []).append(
                r["value"])
    cells = {(dataset, k) for dataset, k, _, _ in by_cell}
    assert len(cells) == 12  # 3 target pixels x k = 5, 10, 50, 100
    for dataset, k in cells:
        sointer = np.mean(by_cell[(dataset, k, "sointer", "distance")])
        assert len(by_cell[(dataset, k, "sointer", "distance")]) == 3  # seeds
        assert sointer < np.mean(by_cell[(dataset, k, "random", "distance")]) - 1.0
        # the budget: a fit in 15 minutes on one CPU thread
        assert max(by_cell[(dataset, k, "sointer", "fit_s")]) < 15 * 60
