"""Every Display refuses a bad argument in one line of a sensible type, naming it, on every
surface that takes it (each ``from_*`` and ``plot``), and draws scores as what they are."""

import inspect

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

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
from sk_sointer.text import TokenSequencer  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


class _Explainer:
    """Stands for a fitted explainer: masks keep the positive values, scores are the values."""

    def transform(self, X):
        return (np.asarray(X, dtype=float) > 0).astype(float)

    def explain(self, X):
        return np.asarray(X, dtype=float)

    def check(self, X, masks):
        class _Report:
            holds = np.ones(len(X), dtype=bool)
        return _Report()


class _Search:
    cv_results_ = {"param_k": np.array([1, 2]), "mean_test_score": np.array([0.6, 0.9]),
                   "std_test_score": np.array([0.1, 0.05])}
    best_index_ = 1
    scoring = None


_X = np.array([[1.0, -1.0, 2.0], [-1.0, 1.0, 1.0], [1.0, 1.0, -1.0], [2.0, -2.0, 1.0]])
_MASKS = (_X > 0).astype(float)
_IMAGES = np.arange(32, dtype=float).reshape(2, 4, 4) - 16
_SEQUENCER = TokenSequencer().fit(["not bad at all", "bad film"])
_IDS = _SEQUENCER.transform(["not bad at all", "bad film"])

# Each surface: a call with good arguments, taking keyword overrides.
SURFACES = {
    "MaskDisplay.from_masks": lambda **kw: MaskDisplay.from_masks(_MASKS, **kw),
    "MaskDisplay.from_explainer": lambda **kw: MaskDisplay.from_explainer(
        kw.pop("explainer", _Explainer()), _X, **kw),
    "SelectionFrequencyDisplay.from_masks":
        lambda **kw: SelectionFrequencyDisplay.from_masks(_MASKS, **kw),
    "SelectionFrequencyDisplay.from_explainer": lambda **kw: SelectionFrequencyDisplay
        .from_explainer(kw.pop("explainer", _Explainer()), _X, **kw),
    "ImageMaskDisplay.from_masks":
        lambda **kw: ImageMaskDisplay.from_masks(_IMAGES, _IMAGES > 0, **kw),
    "ImageMaskDisplay.from_explainer": lambda **kw: ImageMaskDisplay.from_explainer(
        kw.pop("explainer", _Explainer()), _IMAGES, **kw),
    "TokenMaskDisplay.from_masks":
        lambda **kw: TokenMaskDisplay.from_masks(_IDS, _IDS > 2, sequencer=_SEQUENCER, **kw),
    "TokenMaskDisplay.from_explainer": lambda **kw: TokenMaskDisplay.from_explainer(
        kw.pop("explainer", _Explainer()), _IDS, sequencer=_SEQUENCER, **kw),
    "FidelityVsKDisplay.from_search": lambda **kw: FidelityVsKDisplay.from_search(_Search(),
                                                                                 **kw),
    "ComparisonDisplay.from_masks":
        lambda **kw: ComparisonDisplay.from_masks({"a": _MASKS, "b": 1 - _MASKS}, **kw),
    "ComparisonDisplay.from_explainers": lambda **kw: ComparisonDisplay.from_explainers(
        {"a": kw.pop("explainer", _Explainer())}, _X, **kw),
    "TargetsDisplay.from_masks":
        lambda **kw: TargetsDisplay.from_masks({"y1": _MASKS, "y2": 1 - _MASKS}, **kw),
    "TargetsDisplay.from_explainers": lambda **kw: TargetsDisplay.from_explainers(
        [kw.pop("explainer", _Explainer())], _X, **kw),
    "InsertionDeletionDisplay.from_curves": lambda **kw: InsertionDeletionDisplay.from_curves(
        [0, 0.5, 1], [0.5, 1, 1], [1, 0.5, 0.5], **kw),
    "InsertionDeletionDisplay.from_explainer": lambda **kw: InsertionDeletionDisplay
        .from_explainer(kw.pop("explainer"), _X, **kw),
}

_NOT_A_MODEL = LogisticRegression().fit(_X, [0, 1, 0, 1])
# Each argument: bad values, the error's type and what its message says.
BAD = {
    "ax": [("ax", TypeError, "ax should be a matplotlib Axes"),
           (3, TypeError, "ax should be a matplotlib Axes")],
    "max_rows": [(-1, ValueError, "max_rows should be a whole number >= 1"),
                 (0, ValueError, "max_rows should be a whole number >= 1"),
                 (2.5, ValueError, "max_rows should be a whole number >= 1"),
                 (True, ValueError, "max_rows should be a whole number >= 1")],
    "n_cols": [(0, ValueError, "n_cols should be a whole number"),
               (2.5, ValueError, "n_cols should be a whole number")],
    "width": [(2.5, ValueError, "width should be a whole number")],
    "top": [(0, ValueError, "top should be a whole number")],
    "alpha": [(2.0, ValueError, r"alpha should be a number in \[0, 1\]"),
              ("x", TypeError, r"alpha should be a number in \[0, 1\]")],
    "color": [("not a colour", ValueError, "color should be a matplotlib colour")],
    "cmap": [("no such map", ValueError, "cmap should be a matplotlib Colormap")],
    "row_labels": [(["a"], ValueError, r"row_labels should hold one label per row .*\(4\); "
                                       "got 1"),
                   (["a"] * 5, ValueError, "row_labels should hold one label per row"),
                   ("abcd", TypeError, "row_labels should be a sequence of labels")],
    "titles": [(["a"], ValueError, r"titles should hold one label per image \(2\); got 1")],
    "method": [("bogus", ValueError, "method should be 'transform' or 'explain'")],
    "check": [("yes", TypeError, "check should be True or False")],
    "by": [(np.array(["a", 1, "a", 1], dtype=object), TypeError,
            "by should hold labels of one kind.*int and str"),
           ([0, 1], ValueError, "by should hold one label per row")],
    "explainer": [(_NOT_A_MODEL, TypeError,
                   "should be a fitted sk_sointer explainer .*got LogisticRegression")],
}


def _accepts(surface, name):
    if name == "explainer":
        return "explainer" in surface
    if surface == "InsertionDeletionDisplay.from_explainer":  # needs a model: its own tests
        return False
    cls, method = surface.split(".")
    return name in inspect.signature(getattr(globals()[cls], method)).parameters


_CASES = [(surface, name, i) for surface in SURFACES for name in BAD
          for i in range(len(BAD[name])) if _accepts(surface, name)]


def _one_line(info):
    assert "\n" not in str(info.value)
    assert type(info.value).__module__.split(".")[0] in ("builtins", "sklearn")


@pytest.mark.parametrize("surface", [s for s in SURFACES if s != "InsertionDeletionDisplay"
                                     ".from_explainer"])
def test_every_surface_draws_with_good_arguments(surface):
    display = SURFACES[surface]()
    assert display.figure_ is not None


@pytest.mark.parametrize("surface, name, i", _CASES)
def test_every_from_method_refuses_a_bad_argument_in_one_line(surface, name, i):
    value, error, message = BAD[name][i]
    with pytest.raises(error, match=message) as info:
        SURFACES[surface](**{name: value})
    _one_line(info)


_PLOTS = [(surface, name, i) for surface in SURFACES if surface.endswith((
    "from_masks", "from_search", "from_curves")) for name in BAD
    for i in range(len(BAD[name]))
    if name in inspect.signature(getattr(globals()[surface.split(".")[0]], "plot")).parameters]


@pytest.mark.parametrize("surface, name, i", _PLOTS)
def test_every_plot_refuses_a_bad_argument_in_one_line(surface, name, i):
    display = SURFACES[surface]()
    value, error, message = BAD[name][i]
    with pytest.raises(error, match=message) as info:
        display.plot(**{name: value})
    _one_line(info)


def test_a_display_built_by_hand_checks_its_values_when_it_plots():
    with pytest.raises(ValueError, match=r"row_labels should hold one label per row .*\(2\)"):
        MaskDisplay(_MASKS[:2], feature_names=["a", "b", "c"], row_labels=["r"]).plot()
    with pytest.raises(ValueError, match=r"feature_names should have one name per column"):
        MaskDisplay(_MASKS, feature_names=["a", "b"]).plot()
    with pytest.raises(ValueError, match=r"titles should hold one label per image \(2\)"):
        ImageMaskDisplay(list(_IMAGES), list(_IMAGES), titles=["t"]).plot()
    with pytest.raises(ValueError, match=r"masks should hold one row per text \(2\)"):
        TokenMaskDisplay([["a"], ["b"]], [np.array([True])]).plot()


def test_row_labels_follow_the_rows_kept_by_max_rows():
    display = MaskDisplay.from_masks(_MASKS, row_labels=list("abcd"), max_rows=2)
    assert display.row_labels == ["a", "b"]
    assert [t.get_text() for t in display.ax_.get_yticklabels()] == ["a", "b"]


@pytest.mark.parametrize("kwargs, error, message", [
    ({"masks": [[1, 0]]}, ValueError, r"masks should hold one row per text of tokens \(2\); "
                                      "got 1"),
    ({"masks": [[1, 0], [1], [0]]}, ValueError, r"one row per text of tokens \(2\); got 3"),
    ({"sequencer": TokenSequencer()}, NotFittedError, "sequencer should be fitted"),
    ({"sequencer": LogisticRegression()}, TypeError,
     "sequencer should be a fitted sk_sointer.text.TokenSequencer"),
])
def test_token_masks_and_sequencer_are_checked(kwargs, error, message):
    arguments = {"masks": _IDS > 2, "sequencer": _SEQUENCER, **kwargs}
    with pytest.raises(error, match=message) as info:
        TokenMaskDisplay.from_masks(_IDS if "masks" not in kwargs else [["a", "b"], ["c"]],
                                    arguments.pop("masks"), **arguments)
    _one_line(info)
    if "sequencer" in kwargs:
        with pytest.raises(error, match=message):
            TokenMaskDisplay.from_explainer(_Explainer(), _IDS, sequencer=kwargs["sequencer"])


def test_comparison_of_masks_of_different_widths_names_each_width():
    with pytest.raises(ValueError, match=r"same features .*\{'a': 3, 'b': 2\}") as info:
        ComparisonDisplay.from_masks({"a": _MASKS, "b": _MASKS[:, :2]})
    _one_line(info)


def test_ragged_or_textual_masks_are_named():
    with pytest.raises(ValueError, match="masks should be an array of numbers") as info:
        MaskDisplay.from_masks([[1, 0], [1]])
    _one_line(info)
    with pytest.raises(TypeError, match="masks_by_target should be a dict"):
        TargetsDisplay.from_masks(_MASKS)
    with pytest.raises(TypeError, match="explainers should be a dict"):
        ComparisonDisplay.from_explainers(_Explainer(), _X)


@pytest.mark.parametrize("display", ["selection", "targets"])
def test_signed_scores_are_drawn_as_mean_scores_not_as_shares(display):
    scores = _X  # signed: from -2 to 2
    if display == "selection":
        drawn = SelectionFrequencyDisplay.from_masks(scores)
        panel, frequencies = drawn.ax_, drawn.frequencies
    else:
        drawn = TargetsDisplay.from_masks({"y": scores})
        panel, frequencies = drawn.axes_[0], drawn.displays["y"].frequencies
    np.testing.assert_allclose(frequencies, [scores.mean(axis=0)])
    heights = [bar.get_height() for bar in panel.containers[0]]
    np.testing.assert_allclose(heights, scores.mean(axis=0))
    assert panel.get_ylabel() == "mean score"
    low, high = panel.get_ylim()
    assert low < scores.mean(axis=0).min() and high >= scores.mean(axis=0).max()
    masks = SelectionFrequencyDisplay.from_masks(_MASKS)
    assert masks.ax_.get_ylabel() == "share of rows selecting it"
    assert masks.ax_.get_ylim() == (0, 1.05)


@pytest.mark.parametrize("scores", [
    np.array([[[-4.0, -3.0], [-2.0, -1.0]]]),  # all negative: -1 is the most relied on
    np.array([[[-1.0, 0.0], [1.0, 2.0]]]),  # signed
])
def test_signed_image_scores_paint_from_the_lowest_to_the_largest(scores):
    display = ImageMaskDisplay.from_masks(np.zeros((1, 2, 2)), scores, alpha=0.8)
    painted = display.overlays_[0].get_array()[..., 3]
    np.testing.assert_allclose(painted, 0.8 * np.array([[0, 1 / 3], [2 / 3, 1]]))
    both = ComparisonDisplay.from_masks({"a": scores}, images=np.zeros((1, 2, 2)))
    np.testing.assert_allclose(both.panels_[0][0].get_array()[..., 3],
                               0.6 * np.array([[0, 1 / 3], [2 / 3, 1]]))


def test_scores_of_one_value_paint_everything_or_nothing():
    ones = ImageMaskDisplay.from_masks(np.zeros((2, 2, 2)),
                                       np.stack([np.full((2, 2), -3.0), np.zeros((2, 2))]))
    np.testing.assert_allclose(ones.overlays_[0].get_array()[..., 3], 0.6)
    np.testing.assert_allclose(ones.overlays_[1].get_array()[..., 3], 0.0)


def test_a_lone_axes_and_an_array_of_axes_are_both_accepted():
    _, ax = plt.subplots()
    assert ImageMaskDisplay.from_masks(_IMAGES[:1], _IMAGES[:1] > 0, ax=ax).axes_[0] is ax
    _, axes = plt.subplots(1, 2)
    assert list(ImageMaskDisplay.from_masks(_IMAGES, _IMAGES > 0, ax=axes).axes_) == list(axes)
    with pytest.raises(TypeError, match=r"ax \(each panel\) should be a matplotlib Axes"):
        ImageMaskDisplay.from_masks(_IMAGES, _IMAGES > 0, ax=[axes[0], "ax"])


# Empty, non-finite or out-of-range input, refused in one line.


def _sequencer():
    from sk_sointer.text import TokenSequencer

    return TokenSequencer().fit(["not bad at all", "bad film"])


_EYE = np.eye(4)
_DISPLAY_CASES = {
    "table without rows": ("MaskDisplay", "from_masks", (np.zeros((0, 4)),), {},
                           "one row and one feature at least"),
    "table without features": ("SelectionFrequencyDisplay", "from_masks", (np.zeros((3, 0)),),
                               {}, "one row and one feature at least"),
    "NaN masks": ("MaskDisplay", "from_masks", (np.full((2, 3), np.nan),), {},
                  "masks should be finite"),
    "negative top": ("SelectionFrequencyDisplay", "from_masks", (_EYE,), {"top": -1},
                     "top should be a whole number >= 1"),
    "fractional top": ("SelectionFrequencyDisplay", "from_masks", (_EYE,), {"top": 1.5},
                       "top should be a whole number >= 1"),
    "NaN by": ("SelectionFrequencyDisplay", "from_masks", (_EYE,),
               {"by": [0.0, 1.0, np.nan, 1.0]}, "holds missing values"),
    "None by": ("SelectionFrequencyDisplay", "from_masks", (_EYE,),
                {"by": np.array(["a", None, "b", "a"], dtype=object)}, "holds missing values"),
    "no images": ("ImageMaskDisplay", "from_masks", (np.zeros((0, 4, 4)), np.zeros((0, 4, 4))),
                  {}, "one image at least"),
    "no images to compare": ("ComparisonDisplay", "from_masks",
                             ({"a": np.zeros((0, 4, 4))},), {"images": np.zeros((0, 4, 4))},
                             "one image at least"),
    "NaN image masks": ("ImageMaskDisplay", "from_masks",
                        (np.zeros((1, 4, 4)), np.full((1, 4, 4), np.nan)), {},
                        "masks should be finite"),
    "fractions beyond 1": ("InsertionDeletionDisplay", "from_curves",
                           ([0, 5, 10], [0.5, 1, 1], [1, 0.5, 0.5]), {},
                           "fraction should increase within"),
    "fractions not increasing": ("InsertionDeletionDisplay", "from_curves",
                                 ([0, 0.6, 0.5, 1], [0.5, 1, 1, 1], [1, 0.5, 0.5, 0.5]), {},
                                 "not increasing"),
    "NaN curve": ("InsertionDeletionDisplay", "from_curves",
                  ([0, 0.5, 1], [np.nan, 1, 1], [1, 0.5, 0.5]), {}, "should be finite"),
    "zero width": ("TokenMaskDisplay", "from_masks", ([["bad", "film"]], [[1, 0]]),
                   {"width": 0}, "width should be a whole number >= 1"),
    "negative id": ("TokenMaskDisplay", "from_masks", ([[1, -1]], [[1, 0]]),
                    {"sequencer": "fitted"}, r"token ids should be whole numbers in \[0, "),
    "id beyond the vocabulary": ("TokenMaskDisplay", "from_masks", ([[1, 99]], [[1, 0]]),
                                 {"sequencer": "fitted"}, r"got \[99.0\]"),
    "fractional id": ("TokenMaskDisplay", "from_masks", ([[1, 2.5]], [[1, 0]]),
                      {"sequencer": "fitted"}, r"got \[2.5\]"),
}


@pytest.mark.parametrize("case", list(_DISPLAY_CASES))
def test_displays_refuse_bad_input_in_one_line(plt, case):
    from sk_sointer import display

    name, method, args, kwargs, message = _DISPLAY_CASES[case]
    if kwargs.get("sequencer") == "fitted":
        kwargs = {**kwargs, "sequencer": _sequencer()}
    with pytest.raises(ValueError, match=message) as info:
        getattr(getattr(display, name), method)(*args, **kwargs)
    assert "\n" not in str(info.value)


def test_token_display_reads_valid_ids_through_the_vocabulary(plt):
    from sk_sointer.display import TokenMaskDisplay

    sequencer = _sequencer()
    words = list(sequencer.words_)
    ids = [[words.index("bad"), words.index("film"), 0]]
    display = TokenMaskDisplay.from_masks(ids, [[1, 0, 1]], sequencer=sequencer, width=1)
    assert [t.get_text() for t in display.texts_] == ["bad", "film"]
    assert [t.get_text() for t in display.texts_ if t.get_bbox_patch()] == ["bad"]
