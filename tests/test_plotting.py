"""Every plotting helper draws on a non-interactive backend what its docstring says."""

import builtins
import sys

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

from sk_sointer import L2XExplainer, as_black_box  # noqa: E402
from sk_sointer import plotting  # noqa: E402
from sk_sointer.display import (  # noqa: E402
    ComparisonDisplay,
    FidelityVsKDisplay,
    ImageMaskDisplay,
    InsertionDeletionDisplay,
    MaskDisplay,
    SelectionFrequencyDisplay,
    TargetsDisplay,
    TokenMaskDisplay,
)
from sk_sointer.metrics import insertion_deletion_curves  # noqa: E402


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


# -- Displays: the values stored, the artists holding them, ax= respected ------------------



@pytest.fixture
def table_explainer():
    """An L2X explainer of a logistic regression on x0, fitted with the model in hand."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 3)).astype(np.float32)
    model = LogisticRegression().fit(X, X[:, 0] > 0)
    explainer = L2XExplainer(k=1, max_epochs=2, batch_size=40, baseline="zero",
                             random_state=0).fit(X, model)
    return explainer, model, X


def test_mask_display_stores_and_draws_the_masks(masks, table_explainer):
    _, ax = plt.subplots()
    display = MaskDisplay.from_masks(masks, feature_names=list("abcd"), row_labels=list("uvwxyz"),
                                     max_rows=3, ax=ax)
    assert display.ax_ is ax and display.figure_ is ax.figure
    np.testing.assert_array_equal(display.masks, masks[:3])
    assert display.feature_names == list("abcd") and display.row_labels == list("uvw")
    assert display.im_ is ax.images[0]
    np.testing.assert_array_equal(display.im_.get_array(), masks[:3])
    assert display.colorbar_.ax in ax.figure.axes

    # Drawn again elsewhere from the stored values.
    _, other = plt.subplots()
    assert display.plot(ax=other) is display and display.ax_ is other
    np.testing.assert_array_equal(other.images[0].get_array(), masks[:3])

    explainer, _, X = table_explainer
    display = MaskDisplay.from_explainer(explainer, X[:5])
    np.testing.assert_array_equal(display.masks, explainer.transform(X[:5]))
    assert display.feature_names == ["x0", "x1", "x2"]
    scores = MaskDisplay.from_explainer(explainer, X[:5], method="explain")
    np.testing.assert_allclose(scores.im_.get_array(), explainer.explain(X[:5]), rtol=1e-6)
    with pytest.raises(ValueError, match="'transform' or 'explain'"):
        MaskDisplay.from_explainer(explainer, X[:5], method="predict")


def test_selection_frequency_display_stores_shares_per_group(masks, table_explainer):
    by = np.array(["yes", "yes", "no", "no", "no", "no"])
    _, ax = plt.subplots()
    display = SelectionFrequencyDisplay.from_masks(masks, by=by, ax=ax)
    assert display.ax_ is ax
    # no: rows 2..5 -> [1, 3/4, 1/4, 0]; yes: rows 0, 1 -> [1, 1/2, 1/2, 0]
    np.testing.assert_allclose(display.frequencies, [[1, 0.75, 0.25, 0], [1, 0.5, 0.5, 0]])
    assert display.group_labels == ["no", "yes"] and display.group_sizes == [4, 2]
    for bars, heights in zip(display.bars_, display.frequencies):
        np.testing.assert_allclose([bar.get_height() for bar in bars], heights)
    assert list(ax.containers) == display.bars_

    top = SelectionFrequencyDisplay.from_masks(masks, top=2)
    np.testing.assert_allclose(top.frequencies, [[1, 4 / 6]])
    assert top.feature_names == ["x0", "x1"] and top.group_labels is None

    explainer, _, X = table_explainer
    display = SelectionFrequencyDisplay.from_explainer(explainer, X)
    np.testing.assert_allclose(display.frequencies[0], explainer.transform(X).mean(axis=0))
    assert display.frequencies.sum() == pytest.approx(1.0)  # k = 1: one feature per row


def test_image_mask_display_stores_pixel_masks_and_the_paints_hold_them():
    images = np.zeros((2, 1, 4, 6))
    grid = np.zeros((2, 2, 3))  # 2 x 3 patches of 2 x 2 pixels
    grid[0, 1, 2] = 1
    _, given = plt.subplots(1, 2)
    display = ImageMaskDisplay.from_masks(images, grid, titles=[3, 8], alpha=0.5, ax=given)
    assert list(display.axes_) == list(given) and display.figure_ is given[0].figure
    assert display.titles == ["3", "8"]
    expected = np.kron(grid[0], np.ones((2, 2)))
    np.testing.assert_array_equal(display.masks[0], expected)
    assert display.images[0].shape == (4, 6)  # the lone channel dropped for imshow
    np.testing.assert_allclose(display.overlays_[0].get_array()[..., 3], 0.5 * expected)
    np.testing.assert_allclose(display.overlays_[1].get_array()[..., 3], 0.0)


def test_image_mask_display_from_an_explainer_fitted_on_flat_rows_with_an_image_shape():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 16)).astype(np.float32)
    explainer = L2XExplainer(k=2, max_epochs=1, batch_size=40, image_shape=(4, 4),
                             random_state=0).fit(X, X[:, 0] > 0)
    display = ImageMaskDisplay.from_explainer(explainer, X[:3])
    masks = explainer.transform(X[:3]).reshape(3, 4, 4)
    np.testing.assert_array_equal(np.array(display.masks), masks)
    np.testing.assert_allclose(display.images[1], X[1].reshape(4, 4))
    assert len(display.axes_) == 3
    scores = ImageMaskDisplay.from_explainer(explainer, X[:3], method="explain", alpha=1.0)
    expected = explainer.explain(X[:3])[0].reshape(4, 4)
    np.testing.assert_allclose(scores.masks[0], expected, rtol=1e-6)
    painted = scores.overlays_[0].get_array()[..., 3]
    # signed scores: only their order says what was relied on, lowest unpainted
    low, high = expected.min(), expected.max()
    np.testing.assert_allclose(painted, (expected - low) / (high - low), rtol=1e-5, atol=1e-7)

    # Several explainers over the same images: the image, then one paint per explainer.
    both = ComparisonDisplay.from_explainers({"a": explainer, "b": explainer}, X, max_rows=2)
    assert both.axes_.shape == (2, 3)
    np.testing.assert_array_equal(both.masks["b"][1], masks[1])
    np.testing.assert_allclose(both.panels_[1][1].get_array()[..., 3], 0.6 * masks[1])


def test_token_mask_display_stores_words_and_boxes_the_selected_ones():
    from sk_sointer.text import TokenSequencer

    texts = ["good movie", "bad plot"]
    sequencer = TokenSequencer(max_length=4).fit(texts)
    ids = sequencer.transform(texts)
    masks = np.isin(ids, [sequencer.vocabulary_["good"], sequencer.vocabulary_["plot"]])
    _, ax = plt.subplots()
    display = TokenMaskDisplay.from_masks(ids, masks, sequencer=sequencer, ax=ax)
    assert display.ax_ is ax
    assert display.words == [["good", "movie"], ["bad", "plot"]]  # padding left out
    assert [m.tolist() for m in display.masks] == [[True, False], [False, True]]
    assert [t.get_text() for t in display.texts_] == ["good", "movie", "bad", "plot"]
    assert [t.get_bbox_patch() is not None for t in display.texts_] == [True, False, False, True]


def test_fidelity_vs_k_display_stores_the_search_results(xor_data):
    from sklearn.model_selection import GridSearchCV

    X, y = xor_data
    search = GridSearchCV(L2XExplainer(max_epochs=1, batch_size=100, random_state=0),
                          {"k": [1, 2]}, cv=2).fit(X[:100], y[:100])
    _, ax = plt.subplots()
    display = FidelityVsKDisplay.from_search(search, ax=ax)
    assert display.ax_ is ax and display.labels == [None] and display.param == "k"
    np.testing.assert_array_equal(display.values[0], [1, 2])
    np.testing.assert_allclose(display.mean_scores[0], search.cv_results_["mean_test_score"])
    np.testing.assert_allclose(display.std_scores[0], search.cv_results_["std_test_score"])
    np.testing.assert_allclose(display.lines_[0].lines[0].get_ydata(),
                               search.cv_results_["mean_test_score"])
    assert display.best == (search.best_params_["k"], pytest.approx(search.best_score_))
    assert display.best_.get_xdata()[0] == search.best_params_["k"]
    assert display.score_name == "fidelity"


def test_comparison_display_stores_each_explainers_masks(masks, table_explainer):
    display = ComparisonDisplay.from_masks({"A": masks, "B": 1 - masks}, max_rows=4)
    np.testing.assert_array_equal(display.masks["B"], 1 - masks[:4])
    assert display.axes_.shape == (1, 2)
    np.testing.assert_array_equal(display.panels_[1].im_.get_array(), 1 - masks[:4])
    assert display.panels_[1].ax_ is display.axes_[0, 1]

    images = np.zeros((2, 4, 4))
    pixel_masks = np.zeros((2, 4, 4))
    pixel_masks[:, 0, 0] = 1
    _, given = plt.subplots(2, 2)
    display = ComparisonDisplay.from_masks({"a": pixel_masks}, images=images, ax=given)
    assert display.axes_.shape == (2, 2) and display.axes_[1, 1] is given[1, 1]
    np.testing.assert_allclose(display.panels_[0][1].get_array()[..., 3], 0.6 * pixel_masks[1])

    explainer, _, X = table_explainer
    display = ComparisonDisplay.from_explainers({"one": explainer, "two": explainer}, X,
                                                max_rows=5)
    np.testing.assert_array_equal(display.masks["two"], explainer.transform(X[:5]))
    assert [ax.get_title() for ax in display.axes_.ravel()] == ["one", "two"]


def test_targets_display_holds_one_frequency_display_per_output(masks, table_explainer):
    by = {"y1": np.array([0, 0, 0, 1, 1, 1]), "y2": None}
    _, given = plt.subplots(1, 2)
    display = TargetsDisplay.from_masks({"y1": masks, "y2": 1 - masks}, by=by, ax=given)
    assert list(display.axes_) == list(given)
    np.testing.assert_allclose(display.displays["y1"].frequencies,
                               [[1, 2 / 3, 1 / 3, 0], [1, 2 / 3, 1 / 3, 0]])
    np.testing.assert_allclose(display.displays["y2"].frequencies, [[0, 2 / 6, 4 / 6, 1]])
    np.testing.assert_allclose([bar.get_height() for bar in given[1].containers[0]],
                               [0, 2 / 6, 4 / 6, 1])
    assert display.displays["y2"].ax_ is given[1]

    explainer, _, X = table_explainer
    display = TargetsDisplay.from_explainers([explainer], X)
    np.testing.assert_allclose(display.displays["output 0"].frequencies[0],
                               explainer.transform(X).mean(axis=0))


# -- insertion and deletion ----------------------------------------------------------------

def _x0_classifier(X):
    """Class 1 exactly when x0 > 0.5: at the zero baseline, every row is class 0."""
    p = (np.asarray(X)[:, 0] > 0.5).astype(np.float32)
    return np.c_[1 - p, p]


@pytest.fixture
def ranked_rows(table_explainer):
    """Four rows and fixed scores: x0 ranked first in rows 0 and 2, second in rows 1 and 3."""
    explainer, _, _ = table_explainer
    X = np.array([[1, 1, 1], [1, 1, 1], [-1, 1, 1], [-1, 1, 1]], dtype=np.float32)
    scores = np.array([[3, 2, 1], [2, 3, 1], [3, 2, 1], [2, 3, 1]], dtype=np.float32)
    explainer.explain = lambda rows: scores  # the ranking under test, by hand
    return explainer, X


def test_insertion_deletion_curves_match_a_hand_computation(ranked_rows):
    explainer, X = ranked_rows
    # The model answers [1, 1, 0, 0] on X, and 0 wherever x0 is at the baseline.
    # Insertion (top j kept): j=0 all at 0 -> rows 2, 3 agree; j=1 row 1 still lacks x0;
    # j=2 and 3 every row agrees. Deletion (top j removed): j=1 row 0 loses x0; j=2 row 1
    # too; j=3 only rows 2, 3 agree.
    curves = insertion_deletion_curves(explainer, X, model=as_black_box(_x0_classifier))
    np.testing.assert_allclose(curves.fraction, [0, 1 / 3, 2 / 3, 1])
    np.testing.assert_allclose(curves.insertion, [0.5, 0.75, 1.0, 1.0])
    np.testing.assert_allclose(curves.deletion, [1.0, 0.75, 0.5, 0.5])
    # Trapezoids of width 1/3: (0.625 + 0.875 + 1) / 3 and (0.875 + 0.625 + 0.5) / 3.
    assert curves.insertion_auc == pytest.approx(2.5 / 3)
    assert curves.deletion_auc == pytest.approx(2.0 / 3)

    # Two steps: j = round(linspace(0, 3, 3)) = 0, 2, 3 (1.5 rounds to even).
    coarse = insertion_deletion_curves(explainer, X, model=_x0_classifier, n_steps=2)
    np.testing.assert_allclose(coarse.fraction, [0, 2 / 3, 1])
    np.testing.assert_allclose(coarse.insertion, [0.5, 1.0, 1.0])
    with pytest.raises(ValueError, match="n_steps should be a positive integer"):
        insertion_deletion_curves(explainer, X, model=_x0_classifier, n_steps=0)


def test_insertion_deletion_display_draws_the_curves_and_their_areas(ranked_rows):
    explainer, X = ranked_rows
    _, ax = plt.subplots()
    display = InsertionDeletionDisplay.from_explainer(explainer, X, model=_x0_classifier,
                                                      name="fixed", ax=ax)
    assert display.ax_ is ax and display.figure_ is ax.figure
    np.testing.assert_allclose(display.insertion_line_.get_xdata(), [0, 1 / 3, 2 / 3, 1])
    np.testing.assert_allclose(display.insertion_line_.get_ydata(), [0.5, 0.75, 1.0, 1.0])
    np.testing.assert_allclose(display.deletion_line_.get_ydata(), [1.0, 0.75, 0.5, 0.5])
    assert display.insertion_auc == pytest.approx(2.5 / 3)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["fixed: insertion (AUC = 0.83)", "fixed: deletion (AUC = 0.67)"]

    again = InsertionDeletionDisplay.from_curves(display.fraction, display.insertion,
                                                 display.deletion)
    assert again.deletion_auc == pytest.approx(display.deletion_auc)
    with pytest.raises(ValueError, match="of one length"):
        InsertionDeletionDisplay.from_curves([0, 1], [1, 1, 1], [1, 0])


def test_insertion_deletion_with_the_explainers_own_model_and_groups(table_explainer):
    explainer, model, X = table_explainer
    curves = insertion_deletion_curves(explainer, X)  # the model given to fit
    assert curves.insertion[-1] == 1.0 and curves.deletion[0] == 1.0
    bare = as_black_box(model)
    np.testing.assert_allclose(curves.insertion[0],
                               np.mean(model.predict(np.zeros_like(X)) == model.predict(X)))
    np.testing.assert_allclose(insertion_deletion_curves(explainer, X, model=bare).insertion,
                               curves.insertion)

    # Groups: (x0, x1) ranks as one; the curves step over the two groups.
    grouped = L2XExplainer(k=1, max_epochs=1, batch_size=40, baseline="zero",
                           groups=[0, 0, 1], random_state=0).fit(X, model)
    curves = insertion_deletion_curves(grouped, X)
    np.testing.assert_allclose(curves.fraction, [0, 0.5, 1])
    first = grouped.explain(X)[:, 0] >= grouped.explain(X)[:, 2]
    kept = np.where(first[:, None], [1, 1, 0], [0, 0, 1])  # each row's top group
    expected = np.mean(model.predict(X * kept) == model.predict(X))
    assert curves.insertion[1] == pytest.approx(expected)


def test_insertion_deletion_needs_a_model_when_fitted_on_outputs_only(table_explainer):
    _, model, X = table_explainer
    explainer = L2XExplainer(k=1, max_epochs=1, batch_size=40, random_state=0).fit(
        X, model.predict(X))
    with pytest.raises(ValueError, match="holds no model.*pass it as model="):
        InsertionDeletionDisplay.from_explainer(explainer, X)
    display = InsertionDeletionDisplay.from_explainer(explainer, X, model=model, n_steps=1)
    np.testing.assert_allclose(display.fraction, [0, 1])
    assert display.deletion[0] == 1.0 and display.insertion[-1] == 1.0


def test_an_explainer_given_where_masks_or_images_go_is_named(masks):
    """The first hour's mistake: the explainer itself passed to a plotting helper (or to
    posthoc_accuracy as the model) is named, not a float() or 0-d array error."""
    from sk_sointer.metrics import posthoc_accuracy

    X = np.random.RandomState(0).randn(60, 4)
    explainer = L2XExplainer(k=2, max_epochs=1, refine=None, random_state=0).fit(
        X, X[:, 0] > 0)
    for draw in (lambda: plotting.plot_masks(explainer),
                 lambda: plotting.plot_selection_frequency(explainer)):
        with pytest.raises(TypeError, match=r"masks should be an array; got L2XExplainer, "
                           r"an estimator\. Pass its masks \(explainer\.transform\(X\)\), or "
                           r"build the Display with from_explainer\(explainer, X\)"):
            draw()
    with pytest.raises(TypeError, match="images should be an array; got L2XExplainer"):
        plotting.plot_image_masks(explainer, np.zeros((2, 4, 4)))
    with pytest.raises(TypeError, match=r"masks_by_name should be a dict .* got list"):
        plotting.plot_comparison([masks, masks])
    with pytest.raises(TypeError, match="An explainer is not the model it explains: pass the "
                       "model itself"):
        posthoc_accuracy(explainer, X, explainer.transform(X))


@pytest.mark.parametrize("n_features", [4, 28, 60])
def test_selection_frequency_by_label_has_room_and_readable_legend(plt, n_features):
    from sk_sointer.display import SelectionFrequencyDisplay

    rng = np.random.RandomState(0)
    masks = (rng.rand(50, n_features) > 0.5).astype(float)
    by = np.repeat([0, 1], 25)
    names = [f"feature_{j}" for j in range(n_features)]
    display = SelectionFrequencyDisplay.from_masks(masks, by=by, feature_names=names)
    legend = [t.get_text() for t in display.ax_.get_legend().get_texts()]
    assert legend == ["by = 0 (25 rows)", "by = 1 (25 rows)"]
    figure = display.figure_
    width, height = figure.get_size_inches()
    assert width <= 14 and height >= 3  # no strip: a page's width, room for the names
    figure.canvas.draw()
    drawn = figure.get_tightbbox(figure.canvas.get_renderer())
    assert drawn.x0 >= -0.01 and drawn.y0 >= -0.01  # names and legend inside the figure
    assert drawn.x1 <= width + 0.01 and drawn.y1 <= height + 0.01
    top = SelectionFrequencyDisplay.from_masks(masks, top=n_features + 5)
    assert len(top.bars_[0]) == n_features  # a top beyond the features keeps them all
