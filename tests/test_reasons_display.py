"""A Display of one row's reasons (:class:`ReasonsDisplay`), and Displays that speak in a
wide table's columns: every name legible, none overlapping another, at 40 and 80 columns."""

import pickle

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

from sk_sointer import L2XExplainer  # noqa: E402
from sk_sointer.display import (  # noqa: E402
    ComparisonDisplay,
    MaskDisplay,
    ReasonsDisplay,
    SelectionFrequencyDisplay,
)

pd = pytest.importorskip("pandas")

GRADES = list("ABCDE")
RISK = dict(A=-1.5, B=-0.8, C=0.0, D=1.5, E=2.0)
FAST = dict(k=3, max_epochs=2, refine=None, random_state=0)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _loans(n_rows=240, seed=0):
    """Loan applications with numbers, a category, text, booleans and empty cells; the
    index is the applicant's number, not the row's position."""
    rng = np.random.default_rng(seed)
    income = rng.lognormal(10.5, 0.4, n_rows).round(-2)
    X = pd.DataFrame({
        "income": income,
        "debt": (income * rng.uniform(0.0, 0.6, n_rows)).round(2),
        "grade": pd.Categorical(rng.choice(GRADES, n_rows), categories=GRADES),
        "purpose": rng.choice(["car", "home", "study"], n_rows),
        "owns_home": rng.random(n_rows) < 0.4,
        "age": rng.integers(19, 80, n_rows),
    }, index=pd.RangeIndex(1000, 1000 + n_rows, name="applicant"))
    X.loc[rng.random(n_rows) < 0.1, "debt"] = np.nan
    return X


def _deny(frame):
    """Probabilities of (granted, denied): a smooth function of the raw frame."""
    ratio = (frame["debt"].fillna(0.0) / frame["income"]).to_numpy(dtype=float)
    grade = frame["grade"].map(RISK).astype(float).to_numpy()
    z = 6 * ratio - 1.5 + grade - 0.8 * frame["owns_home"].to_numpy(dtype=float)
    p = 1 / (1 + np.exp(-z))
    return np.column_stack([1 - p, p])


@pytest.fixture(scope="module")
def loans():
    X = _loans()
    return X, L2XExplainer(**FAST).fit(X, black_box=_deny)


def _ticks(ax, axis="y"):
    return [t.get_text() for t in getattr(ax, f"get_{axis}ticklabels")()]


def _widths(display):
    return [float(bar.get_width()) for bar in display.bars_]


# --- ReasonsDisplay -----------------------------------------------------------------------

def test_from_explainer_draws_the_rows_reasons_first_on_top(loans):
    X, expl = loans
    display = ReasonsDisplay.from_explainer(expl, X, row=5)
    reasons = expl.reasons(X.iloc[[5]]).sort_values("rank")
    assert display.row_label_ == X.index[5] == 1005
    pd.testing.assert_frame_equal(display.reasons_, reasons.reset_index(drop=True))
    np.testing.assert_allclose(_widths(display), reasons["effect"])
    tops = [bar.get_y() for bar in display.bars_]
    assert display.ax_.yaxis_inverted() or tops == sorted(tops)
    # the first reason is drawn highest: the smallest y on an inverted axis
    assert display.ax_.get_ylim()[0] > display.ax_.get_ylim()[1]
    assert tops == sorted(tops)
    assert _ticks(display.ax_) == [f"{c} = {v}" for c, v in
                                   zip(reasons["column"], _shown(reasons["value"]))]
    assert display.ax_.get_xlabel().startswith("change in the probability of the model's "
                                               "answer")
    assert display.ax_.get_title() == "Reasons for row 1005"
    assert display.figure_ is display.ax_.figure
    assert any(line.get_xdata()[0] == 0 for line in display.ax_.get_lines())  # the line at 0


def _shown(values):
    out = []
    for v in values:
        if isinstance(v, float) and np.isnan(v):
            out.append("(empty)")
        elif isinstance(v, float) and v.is_integer():
            out.append(str(int(v)))
        else:
            out.append(str(v))
    return out


def test_a_denied_applicants_grade_is_a_reason_for_the_denial(loans):
    X, expl = loans
    risky = X.iloc[[0]].copy()  # grade E, debt empty, no home of their own
    risky[["grade", "debt", "owns_home"]] = ["E", np.nan, False]
    keep = pd.DataFrame(0, index=risky.index, columns=X.columns)
    keep[["grade", "debt", "owns_home"]] = 1
    reasons = expl.reasons(risky, keep.to_numpy())
    assert _deny(risky).argmax(axis=1)[0] == 1  # denied
    display = ReasonsDisplay.from_reasons(reasons, color_for="tab:red",
                                          color_against="tab:blue")
    labels = _ticks(display.ax_)
    assert labels[0] == "grade = E"  # the largest effect, on top
    assert "debt = (empty)" in labels
    assert "owns_home = False" in labels
    colour = {"for": to_rgba("tab:red"), "against": to_rgba("tab:blue"), "none": to_rgba("0.6")}
    assert [bar.get_facecolor() for bar in display.bars_] == \
        [colour[d] for d in display.reasons_["direction"]]
    assert display.reasons_["direction"].iloc[0] == "for" and _widths(display)[0] > 0.2
    display.figure_.savefig("/tmp/reasons_test.png")


def test_regression_effects_raise_or_lower_the_answer():
    reasons = pd.DataFrame({
        "row": ["flat 12"] * 3, "rank": [1, 2, 3], "column": ["area", "district", "note"],
        "value": [84.0, "north", "x" * 50], "effect": [31_000.0, -12_500.5, 0.0],
        "direction": ["raises", "lowers", "none"], "by": ["model"] * 3})
    display = ReasonsDisplay.from_reasons(reasons)
    assert display.ax_.get_xlabel().startswith("change in the model's answer")
    assert _widths(display) == [31_000.0, -12_500.5, 0.0]
    labels = _ticks(display.ax_)
    assert labels[:2] == ["area = 84", "district = north"]
    assert labels[2].startswith("note = xxx") and labels[2].endswith("…")
    assert len(labels[2]) == len("note = ") + 30
    colours = [bar.get_facecolor() for bar in display.bars_]
    assert colours[0] == to_rgba("tab:red") and colours[1] == to_rgba("tab:blue")
    assert [t.get_text() for t in display.ax_.get_legend().get_texts()] == [
        "raises it", "lowers it"]


def test_without_a_model_the_bars_are_ranks_and_the_title_says_so(loans):
    X, expl = loans
    without = pickle.loads(pickle.dumps(expl))
    without.black_box_ = None
    display = ReasonsDisplay.from_explainer(without, X, row=2)
    assert set(display.reasons_["by"]) == {"selector"}
    assert _widths(display) == [1.0] * len(display.reasons_)
    assert list(display.reasons_["rank"]) == [1, 2, 3]
    assert _ticks(display.ax_)[0].startswith(display.reasons_["column"].iloc[0] + " = ")
    assert "ranked by the selector, not measured" in display.ax_.get_title()


def test_several_rows_reasons_are_drawn_one_row_at_a_time(loans):
    X, expl = loans
    reasons = expl.reasons(X.iloc[:4])
    display = ReasonsDisplay.from_reasons(reasons, row=1002)
    assert display.row_label_ == 1002 and set(display.reasons_["row"]) == {1002}
    _, ax = plt.subplots()
    again = display.plot(ax=ax)
    assert again.ax_ is ax and len(again.bars_) == 3


def test_an_array_row_is_named_by_its_position():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 5))
    expl = L2XExplainer(k=2, max_epochs=1, refine=None, random_state=0).fit(
        X, black_box=lambda x: (x[:, 0] + x[:, 1] > 0).astype(float))
    display = ReasonsDisplay.from_explainer(expl, X, row=7)
    assert display.row_label_ == 7 and len(display.bars_) == 2
    assert all(t.startswith("x") for t in _ticks(display.ax_))


_GOOD = pd.DataFrame({"row": [0, 0], "rank": [1, 2], "column": ["a", "b"], "value": [1, 2],
                      "effect": [0.5, 0.1], "direction": ["for", "for"], "by": ["model"] * 2})


@pytest.mark.parametrize("call, error, message", [
    (lambda X, e: ReasonsDisplay.from_explainer(e, X, row=240), ValueError,
     r"row should be a row's position in X, a whole number from 0 to 239; got 240"),
    (lambda X, e: ReasonsDisplay.from_explainer(e, X, row=-1), ValueError,
     r"row should be a row's position in X"),
    (lambda X, e: ReasonsDisplay.from_explainer(e, X, row=1003), ValueError,
     r"pass X.loc\[\[label\]\] and row=0"),
    (lambda X, e: ReasonsDisplay.from_explainer(e, X, row="1003"), TypeError,
     r"row should be a row's position in X.*got str"),
    (lambda X, e: ReasonsDisplay.from_explainer(e, X, row=True), TypeError,
     r"row should be a row's position in X"),
    (lambda X, e: ReasonsDisplay.from_explainer(LogisticRegression(), X), TypeError,
     r"explainer should be a fitted sk_sointer explainer .*got LogisticRegression"),
    (lambda X, e: ReasonsDisplay.from_explainer(L2XExplainer(), X), NotFittedError,
     r"not fitted"),
    (lambda X, e: ReasonsDisplay.from_explainer(e, X, ax="ax"), TypeError,
     r"ax should be a matplotlib Axes"),
    (lambda X, e: ReasonsDisplay.from_reasons(_GOOD.to_numpy()), TypeError,
     r"reasons should be a DataFrame as explainer.reasons\(X\) returns it; got ndarray"),
    (lambda X, e: ReasonsDisplay.from_reasons(_GOOD.drop(columns=["effect", "by"])),
     ValueError, r"reasons should have the columns .*; it lacks effect, by"),
    (lambda X, e: ReasonsDisplay.from_reasons(_GOOD.iloc[:0]), ValueError,
     r"reasons should hold at least one reason"),
    (lambda X, e: ReasonsDisplay.from_reasons(e.reasons(X.iloc[:3])), ValueError,
     r"reasons hold the reasons of 3 rows \(1000, 1001, 1002\); choose one with row="),
    (lambda X, e: ReasonsDisplay.from_reasons(_GOOD, row=5), ValueError,
     r"row should be one of the labels in reasons\['row'\] \(0\); got 5"),
    (lambda X, e: ReasonsDisplay.from_reasons(_GOOD.assign(effect=[0.5, np.nan])),
     ValueError, r"measured by the model should hold a finite effect"),
    (lambda X, e: ReasonsDisplay.from_reasons(_GOOD.assign(by=["model", "me"])), ValueError,
     r"reasons\['by'\] should say 'model' or 'selector'"),
    (lambda X, e: ReasonsDisplay.from_reasons(_GOOD, kind="odds"), ValueError,
     r"kind should be 'probability', 'value' or None; got 'odds'"),
    (lambda X, e: ReasonsDisplay.from_reasons(_GOOD, color_for="no colour"), ValueError,
     r"color_for should be a matplotlib colour"),
    (lambda X, e: ReasonsDisplay.from_reasons(_GOOD, ax=3), TypeError,
     r"ax should be a matplotlib Axes"),
])
def test_bad_input_is_refused_in_one_line(loans, call, error, message):
    X, expl = loans
    with pytest.raises(error, match=message) as info:
        call(X, expl)
    assert "\n" not in str(info.value)


# --- Displays of wide tables --------------------------------------------------------------

WORDS = ["income", "debt_ratio", "months_employed", "inquiries_last_12m", "open_accounts",
         "revolving_utilisation", "age", "late_payments_90d"]


def _wide(n_columns, n_rows=160, seed=0):
    """A table of ``n_columns`` named columns (numbers, one text column), names of 3 to 25
    characters."""
    rng = np.random.default_rng(seed)
    names = [f"{WORDS[j % len(WORDS)]}_{j:02d}" for j in range(n_columns)]
    X = pd.DataFrame(rng.standard_normal((n_rows, n_columns)), columns=names)
    X[names[3]] = rng.choice(["rent", "own", "mortgage"], n_rows)
    X.loc[rng.random(n_rows) < 0.1, names[1]] = np.nan
    return X


def _wide_model(frame):
    z = frame.iloc[:, 0].to_numpy(dtype=float) - frame.iloc[:, 2].to_numpy(dtype=float) \
        + (frame.iloc[:, 3] == "rent").to_numpy(dtype=float)
    p = 1 / (1 + np.exp(-2 * z))
    return np.column_stack([1 - p, p])


@pytest.fixture(scope="module")
def wide():
    X = _wide(40)
    return X, L2XExplainer(**FAST).fit(X, black_box=_wide_model)


def _legible(figure, labels):
    """No two labels' boxes overlap, and each lies inside the figure."""
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    boxes = [label.get_window_extent(renderer) for label in labels]
    assert all(box.width > 0 for box in boxes)
    for a, b in zip(boxes, boxes[1:]):  # neighbours: the labels are drawn in order
        overlap_x = min(a.x1, b.x1) - max(a.x0, b.x0)
        overlap_y = min(a.y1, b.y1) - max(a.y0, b.y0)
        assert overlap_x <= 0.5 or overlap_y <= 0.5, (a, b)
    width, height = figure.bbox.width, figure.bbox.height
    for box in boxes:
        assert box.x0 >= -1 and box.y0 >= -1 and box.x1 <= width + 1 and box.y1 <= height + 1
    sizes = {label.get_fontsize() for label in labels}
    assert min(sizes) >= 5  # still legible


def test_a_wide_tables_mask_display_names_every_column_legibly(wide):
    X, expl = wide
    display = MaskDisplay.from_explainer(expl, X, max_rows=30)
    assert list(expl.get_feature_names_out()) == list(X.columns)
    assert _ticks(display.ax_, "x") == list(X.columns)
    _legible(display.figure_, display.ax_.get_xticklabels())


def test_a_wide_tables_selection_frequency_names_every_column_legibly(wide):
    X, expl = wide
    display = SelectionFrequencyDisplay.from_explainer(expl, X)
    assert display.orientation_ == "vertical"
    assert _ticks(display.ax_, "x") == list(X.columns)
    _legible(display.figure_, display.ax_.get_xticklabels())


def test_a_wide_tables_comparison_names_every_column_in_every_panel(wide):
    X, expl = wide
    display = ComparisonDisplay.from_explainers({"L2X": expl, "again": expl}, X, max_rows=10)
    for ax in display.axes_.ravel():
        assert _ticks(ax, "x") == list(X.columns)
        _legible(display.figure_, ax.get_xticklabels())


@pytest.mark.parametrize("by", [None, "answer"])
def test_eighty_columns_lie_down_one_name_a_line(by):
    X = _wide(80, n_rows=60)
    masks = np.random.default_rng(1).random(X.shape) < 0.05
    groups = np.repeat(["granted", "denied"], 30) if by else None
    display = SelectionFrequencyDisplay.from_masks(masks, feature_names=list(X.columns),
                                                   by=groups)
    assert display.orientation_ == "horizontal"
    assert _ticks(display.ax_, "y") == list(X.columns)
    _legible(display.figure_, display.ax_.get_yticklabels())
    heights = [float(bar.get_width()) for bar in display.bars_[0]]
    np.testing.assert_allclose(heights, display.frequencies[0])


def test_eighty_columns_mask_display_is_legible():
    X = _wide(80, n_rows=20)
    masks = (np.random.default_rng(2).random(X.shape) < 0.05).astype(float)
    display = MaskDisplay.from_masks(pd.DataFrame(masks, columns=X.columns))
    assert _ticks(display.ax_, "x") == list(X.columns)
    _legible(display.figure_, display.ax_.get_xticklabels())


def test_top_says_how_many_columns_it_left_out():
    X = _wide(80, n_rows=20)
    masks = np.random.default_rng(3).random(X.shape) < 0.1
    display = SelectionFrequencyDisplay.from_masks(masks, feature_names=list(X.columns), top=20)
    assert display.ax_.get_title() == "the 20 most often selected of 80 features (60 not shown)"
    assert display.orientation_ == "vertical" and len(display.bars_[0]) == 20


def test_names_come_from_get_feature_names_out():
    class _Named:
        def transform(self, X):
            return (np.asarray(X) > 0).astype(float)

        def explain(self, X):
            return np.asarray(X, dtype=float)

        def get_feature_names_out(self):
            return np.array(["grade", "debt"], dtype=object)

    display = MaskDisplay.from_explainer(_Named(), np.array([[1.0, -1.0], [0.0, 2.0]]))
    assert _ticks(display.ax_, "x") == ["grade", "debt"]
