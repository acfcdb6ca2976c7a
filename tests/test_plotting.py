"""Every plotting helper draws on a non-interactive backend what its docstring says."""

import builtins
import sys

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

from sk_sointer import L2XExplainer  # noqa: E402
from sk_sointer import plotting  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture
def masks():
    """Six rows of four features: feature 0 always kept, feature 3 never."""
    return np.array([[1, 1, 0, 0], [1, 0, 1, 0], [1, 1, 0, 0],
                     [1, 0, 1, 0], [1, 1, 0, 0], [1, 1, 0, 0]], dtype=np.float32)


def test_plot_masks_draws_the_masks_with_feature_names(masks):
    ax = plotting.plot_masks(masks, feature_names=["age", "bmi", "bp", "s1"],
                             row_labels=list("abcdef"), max_rows=4)
    image = ax.images[0]
    np.testing.assert_array_equal(image.get_array(), masks[:4])
    assert image.get_clim() == (0.0, 1.0)  # 0/1 masks: a fixed scale
    assert [t.get_text() for t in ax.get_xticklabels()] == ["age", "bmi", "bp", "s1"]
    assert [t.get_text() for t in ax.get_yticklabels()] == list("abcd")
    assert len(ax.figure.axes) == 2  # the heat map and its colour bar


def test_plot_masks_takes_names_from_a_dataframe_or_a_fitted_explainer(masks):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(masks, columns=["a", "b", "c", "d"])
    ax = plotting.plot_masks(frame)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c", "d"]

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.standard_normal((60, 4)).astype(np.float32),
                     columns=["w", "x", "y", "z"])
    explainer = L2XExplainer(k=1, max_epochs=1, random_state=0).fit(X, X["w"].to_numpy())
    ax = plotting.plot_masks(explainer.transform(X), explainer=explainer)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["w", "x", "y", "z"]
    # Without names: sklearn's x0, x1, ...
    ax = plotting.plot_masks(masks)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["x0", "x1", "x2", "x3"]


def test_plot_masks_scales_scores_freely_and_draws_into_the_given_axes(masks):
    _, ax = plt.subplots()
    scores = masks * 3.0 + 0.5
    assert plotting.plot_masks(scores, ax=ax) is ax
    assert ax.images[0].get_clim() == (0.5, 3.5)


def test_plot_masks_rejects_images_and_wrong_names(masks):
    with pytest.raises(ValueError, match="plot_image_masks"):
        plotting.plot_masks(np.zeros((2, 3, 4)))
    with pytest.raises(ValueError, match="one name per column of masks \\(4\\); got 2"):
        plotting.plot_masks(masks, feature_names=["a", "b"])


def test_plot_selection_frequency_bars_are_shares_overall_and_per_group(masks):
    ax = plotting.plot_selection_frequency(masks)
    (bars,) = ax.containers
    np.testing.assert_allclose([bar.get_height() for bar in bars], [1, 4 / 6, 2 / 6, 0])

    by = np.array(["yes", "yes", "yes", "no", "no", "no"])
    ax = plotting.plot_selection_frequency(masks, by=by, feature_names=list("abcd"))
    no, yes = ax.containers  # labels in sorted order
    np.testing.assert_allclose([bar.get_height() for bar in yes], [1, 2 / 3, 1 / 3, 0])
    np.testing.assert_allclose([bar.get_height() for bar in no], [1, 2 / 3, 1 / 3, 0])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["no (3 rows)", "yes (3 rows)"]

    ax = plotting.plot_selection_frequency(masks, feature_names=list("abcd"), top=2)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]  # most frequent first
    with pytest.raises(ValueError, match="one label per row of masks \\(6\\)"):
        plotting.plot_selection_frequency(masks, by=[0, 1])


def test_plot_image_masks_paints_kept_pixels_and_upsamples_patch_grids():
    images = np.zeros((2, 1, 4, 6))
    masks = np.zeros((2, 1, 4, 6))
    masks[0, 0, :2, :3] = 1
    axes = plotting.plot_image_masks(images, masks, titles=["3", "8"], color="red", alpha=0.5)
    assert axes.shape == (2,)
    assert [ax.get_title() for ax in axes] == ["3", "8"]
    paint = axes[0].images[1].get_array()
    assert paint.shape == (4, 6, 4)
    np.testing.assert_allclose(paint[:2, :3, 3], 0.5)  # kept: red at alpha
    np.testing.assert_allclose(paint[:2, :3, :3], np.broadcast_to(to_rgba("red")[:3], (2, 3, 3)))
    np.testing.assert_allclose(paint[2:, :, 3], 0.0)
    np.testing.assert_allclose(axes[1].images[1].get_array()[..., 3], 0.0)

    # A 2 x 3 grid of patches over 4 x 6 images: each patch covers 2 x 2 pixels.
    grid = np.zeros((2, 2, 3))
    grid[:, 1, 2] = 1
    axes = plotting.plot_image_masks(images[:, 0], grid)
    alpha = axes[0].images[1].get_array()[..., 3]
    np.testing.assert_array_equal(alpha > 0, np.kron(grid[0], np.ones((2, 2))) > 0)
    with pytest.raises(ValueError, match="does not cover an image"):
        plotting.plot_image_masks(images, np.zeros((2, 3, 5)))
    with pytest.raises(ValueError, match="one mask per image"):
        plotting.plot_image_masks(images, masks[:1])


def test_plot_image_masks_scales_scores_and_accepts_given_axes():
    images = np.random.default_rng(0).random((2, 3, 3))
    scores = np.array([[[0, 1, 2]] * 3, [[0, 0, 4]] * 3], dtype=float)
    _, given = plt.subplots(1, 2)
    axes = plotting.plot_image_masks(images, scores, alpha=1.0, ax=given)
    assert list(axes) == list(given)
    np.testing.assert_allclose(axes[0].images[1].get_array()[0, :, 3], [0, 0.5, 1])
    with pytest.raises(ValueError, match="one per panel"):
        plotting.plot_image_masks(np.zeros((3, 3, 3)), np.zeros((3, 3, 3)), ax=given)


def test_plot_tokens_highlights_exactly_the_selected_words():
    words = [["what", "a", "lovely", "day"], ["not", "good"]]
    ax = plotting.plot_tokens(words, [[0, 0, 1, 1], [1, 0]])
    boxed = [t.get_text() for t in ax.texts if t.get_bbox_patch() is not None]
    plain = [t.get_text() for t in ax.texts if t.get_bbox_patch() is None]
    assert boxed == ["lovely", "day", "not"]
    assert plain == ["what", "a", "0", "good", "1"]  # the row numbers are plain


def test_plot_tokens_reads_ids_through_a_sequencer_and_wraps_long_texts():
    from sk_sointer.text import TokenSequencer

    texts = ["good movie", "bad bad plot and a very long tail of words"]
    sequencer = TokenSequencer(max_length=12).fit(texts)
    ids = sequencer.transform(texts)
    masks = (ids == sequencer.vocabulary_["bad"]).astype(float)
    ax = plotting.plot_tokens(ids, masks, sequencer=sequencer, width=12)
    words = [t.get_text() for t in ax.texts if t.get_text() not in ("0", "1")]
    assert words == sequencer.selected_words(ids, ids > 0)[0] + sequencer.selected_words(ids, ids > 0)[1]
    assert [t.get_text() for t in ax.texts if t.get_bbox_patch() is not None] == ["bad", "bad"]
    heights = {round(t.get_position()[1], 6) for t in ax.texts}
    assert len(heights) > 2  # the second text wrapped onto more lines
    with pytest.raises(ValueError, match="one value per token"):
        plotting.plot_tokens(ids, masks[:, :3], sequencer=sequencer)


def test_plot_fidelity_vs_k_draws_one_line_per_tau_with_the_best_starred(xor_data):
    from sklearn.model_selection import GridSearchCV

    X, y = xor_data
    search = GridSearchCV(L2XExplainer(max_epochs=2, batch_size=100, random_state=0),
                          {"k": [1, 2, 3], "tau": [0.1, 1.0]}, cv=2).fit(X[:200], y[:200])
    ax = plotting.plot_fidelity_vs_k(search)
    lines = [c for c in ax.containers]  # one ErrorbarContainer per tau
    assert len(lines) == 2
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert sorted(labels) == ["chosen", "tau=0.1", "tau=1.0"]
    xs, ys = lines[0].lines[0].get_data()
    np.testing.assert_array_equal(xs, [1, 2, 3])
    results = search.cv_results_
    tau01 = [i for i in range(6) if results["param_tau"][i] == 0.1]
    np.testing.assert_allclose(ys, results["mean_test_score"][tau01])
    star = ax.lines[-1]
    assert star.get_xdata()[0] == search.best_params_["k"]
    assert star.get_ydata()[0] == pytest.approx(search.best_score_)
    assert ax.get_xlabel() == "k"

    with pytest.raises(ValueError, match="did not vary 'alpha'"):
        plotting.plot_fidelity_vs_k(search, param="alpha")
    with pytest.raises(ValueError, match="fitted GridSearchCV"):
        plotting.plot_fidelity_vs_k(L2XExplainer())


def test_plot_comparison_puts_explainers_side_by_side(masks):
    axes = plotting.plot_comparison({"L2X": masks, "REAL-X": 1 - masks})
    assert axes.shape == (1, 2)
    assert [ax.get_title() for ax in axes.ravel()] == ["L2X", "REAL-X"]
    np.testing.assert_array_equal(axes[0, 1].images[0].get_array(), 1 - masks)

    images = np.zeros((3, 4, 4))
    image_masks = np.zeros((3, 4, 4))
    image_masks[:, 0, 0] = 1
    axes = plotting.plot_comparison({"a": image_masks, "b": image_masks}, images=images)
    assert axes.shape == (3, 3)  # the image, then one column per explainer
    assert [ax.get_title() for ax in axes[0]] == ["image", "a", "b"]
    assert len(axes[2, 0].images) == 1 and len(axes[2, 2].images) == 2
    # More rows than max_rows: the first max_rows of the images and of the masks.
    many = np.repeat(images, 10, axis=0)
    axes = plotting.plot_comparison({"a": np.repeat(image_masks, 10, axis=0)}, images=many,
                                    max_rows=2)
    assert axes.shape == (2, 2)
    with pytest.raises(ValueError, match="same rows"):
        plotting.plot_comparison({"a": masks, "b": masks[:2]})


def test_plot_targets_draws_one_panel_per_output(masks):
    axes = plotting.plot_targets({"y1": masks, "y2": 1 - masks}, feature_names=list("abcd"))
    assert [ax.get_title() for ax in axes] == ["y1", "y2"]
    heights = [bar.get_height() for bar in axes[1].containers[0]]
    np.testing.assert_allclose(heights, [0, 2 / 6, 4 / 6, 1])
    axes = plotting.plot_targets([masks, masks, masks, masks], n_cols=3)
    assert [ax.get_title() for ax in axes] == [f"output {t}" for t in range(4)]
    assert len([ax for ax in axes[0].figure.axes if ax.get_visible()]) == 4


def test_missing_matplotlib_names_the_extra(monkeypatch, masks):
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    monkeypatch.delitem(sys.modules, "matplotlib.pyplot")
    with pytest.raises(ImportError, match=r'pip install "sk_sointer\[plot\]"'):
        plotting.plot_masks(masks)
