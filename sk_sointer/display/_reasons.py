"""One row's reasons for the model's answer: :class:`ReasonsDisplay`."""

import numbers

import numpy as np

from ._base import _axes, _check_explainer, _color, _position

# What ``explainer.reasons(X)`` gives, in its order.
_COLUMNS = ("row", "rank", "column", "value", "effect", "direction", "by")
# Directions of a class's probability and of a value.
_CLASS = {"for", "against"}
_VALUE = {"raises", "lowers"}
_LONGEST_VALUE, _LONGEST_NAME = 30, 40


def _short(text, most):
    return text if len(text) <= most else text[: most - 1] + "…"


def _is_empty(value):
    if value is None:
        return True
    try:
        empty = value != value  # NaN, NaT, pd.NA (which answers NA: not a bool)
        return bool(empty) if isinstance(empty, (bool, np.bool_)) else True
    except (TypeError, ValueError):
        return False


def _cell(value):
    """A cell as a person reads it: "(empty)" for an empty cell, numbers without float
    noise, a date without a midnight time, the values of a group of columns joined."""
    if isinstance(value, tuple):
        return ", ".join(_cell(v) for v in value)
    if _is_empty(value):
        return "(empty)"
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        value = float(value)
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        if 1e-3 <= abs(value) < 1e15:
            return np.format_float_positional(value, precision=4, unique=True, trim="-")
        return f"{value:.4g}"
    normalize = getattr(value, "normalize", None)  # a pandas Timestamp at midnight: its day
    if callable(normalize) and getattr(value, "tzinfo", None) is None:
        try:
            if value == normalize():
                return str(value.date())
        except (TypeError, ValueError, AttributeError):
            pass
    return str(value)


def _label(column, value):
    """The tick label of a reason: "column = value", both shortened."""
    return f"{_short(str(column), _LONGEST_NAME)} = {_short(_cell(value), _LONGEST_VALUE)}"


def _one_row(reasons, row):
    """The reasons of one row of a frame as ``explainer.reasons`` gives it, ranked, and the
    row's label; a one-line error when the frame is not such, or holds several rows' and
    ``row`` does not choose one."""
    if not hasattr(reasons, "columns") or not hasattr(reasons, "iloc"):
        raise TypeError(f"reasons should be a DataFrame as explainer.reasons(X) returns it; "
                        f"got {type(reasons).__name__}.")
    missing = [c for c in _COLUMNS if c not in reasons.columns]
    if missing:
        raise ValueError(f"reasons should have the columns explainer.reasons(X) gives "
                         f"({', '.join(_COLUMNS)}); it lacks {', '.join(missing)}.")
    if not len(reasons):
        raise ValueError("reasons should hold at least one reason; got an empty frame.")
    labels = list(dict.fromkeys(reasons["row"]))
    shown = ", ".join(map(repr, labels[:5])) + (", ..." if len(labels) > 5 else "")
    if row is None:
        if len(labels) > 1:
            raise ValueError(f"reasons hold the reasons of {len(labels)} rows ({shown}); "
                             f"choose one with row=<its label>.")
        row = labels[0]
    else:
        try:
            found = any(row == label for label in labels)
        except (TypeError, ValueError):
            found = False
        if not found:
            raise ValueError(f"row should be one of the labels in reasons['row'] ({shown}); "
                             f"got {row!r}.")
    one = reasons[reasons["row"] == row]
    try:
        ranks = np.asarray(one["rank"], dtype=float)
        effects = np.asarray(one["effect"], dtype=float)
    except (TypeError, ValueError):
        raise ValueError("reasons should hold numbers in its rank and effect columns.") \
            from None
    by = set(one["by"])
    if not by <= {"model", "selector"} or len(by) != 1:
        raise ValueError(f"reasons['by'] should say 'model' or 'selector' for all of a row's "
                         f"reasons; got {sorted(map(str, by))}.")
    if by == {"model"} and not np.isfinite(effects).all():
        raise ValueError("reasons measured by the model should hold a finite effect for each "
                         "column; got NaN or infinite values.")
    one = one.iloc[np.argsort(ranks, kind="stable")].reset_index(drop=True)
    return one, row


def _kind(directions):
    """"probability" when the directions are a class's, "value" when a value's, else None."""
    directions = set(directions)
    if directions & _CLASS:
        return "probability"
    if directions & _VALUE:
        return "value"
    return None


class ReasonsDisplay:
    """One row's reasons for the model's answer: a horizontal bar per kept column.

    The bars are :meth:`~sk_sointer.L2XExplainer.reasons`' effects, the first reason on
    top: how much the model's answer moves when that column alone is left out of the row
    (for a classifier, the probability of the row's answer; for a regressor, the answer).
    Each bar is labelled with the column and the row's own value of it ("grade = D"), and
    coloured by its direction: for the answer (or raising it) in one colour, against it
    (or lowering it) in another. Reasons ranked by the selector without a model (``by`` is
    "selector") have no effect: their bars are of equal length, in rank order, and the
    title says they are not measured.

    Build it with :meth:`from_explainer` or :meth:`from_reasons`; the constructor only
    stores what they computed.

    Parameters
    ----------
    reasons : DataFrame
        One row's reasons, as ``explainer.reasons(X)`` gives them.
    row_label : object, default=None
        The row's label (its index label in ``X``); default: the frame's ``row``.
    kind : {"probability", "value"}, default=None
        What the effects change: the probability of the model's answer (a classifier) or
        the answer (a regressor); default: read from the directions.

    Attributes
    ----------
    reasons_ : DataFrame
        The reasons drawn, first reason first.
    row_label_ : object
        The row's label.
    bars_ : matplotlib BarContainer
        One bar per reason, top to bottom in rank order; a bar's width is its effect.
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure

    See Also
    --------
    MaskDisplay : Which columns each row's mask keeps.

    Examples
    --------
    >>> import pandas as pd
    >>> from sk_sointer.display import ReasonsDisplay
    >>> reasons = pd.DataFrame({"row": [7, 7], "rank": [1, 2], "column": ["grade", "debt"],
    ...                         "value": ["D", 930.5], "effect": [0.6, -0.1],
    ...                         "direction": ["for", "against"], "by": ["model", "model"]})
    >>> display = ReasonsDisplay.from_reasons(reasons)
    >>> [label.get_text() for label in display.ax_.get_yticklabels()]
    ['grade = D', 'debt = 930.5']
    >>> [round(float(bar.get_width()), 2) for bar in display.bars_]
    [0.6, -0.1]
    """

    def __init__(self, reasons, *, row_label=None, kind=None):
        self.reasons = reasons
        self.row_label = row_label
        self.kind = kind

    @classmethod
    def from_reasons(cls, reasons, *, row=None, kind=None, ax=None, color_for="tab:red",
                     color_against="tab:blue"):
        """One row's reasons in hand.

        Parameters
        ----------
        reasons : DataFrame
            As ``explainer.reasons(X)`` returns it: one row's, or several rows' with
            ``row`` choosing one.
        row : object, default=None
            The label (in the frame's ``row`` column) of the row drawn; needed when the
            frame holds several rows' reasons.
        kind : {"probability", "value"}, default=None
            What the effects change, for the axis' label; default: read from the
            directions ("for"/"against": a probability, "raises"/"lowers": a value).
        ax : matplotlib Axes, default=None
            Where to draw; default: a new figure.
        color_for : matplotlib colour, default="tab:red"
            The bars of columns for the answer (or raising it).
        color_against : matplotlib colour, default="tab:blue"
            The bars of columns against the answer (or lowering it).

        Returns
        -------
        display : ReasonsDisplay
        """
        one, label = _one_row(reasons, row)
        return cls(one, row_label=label, kind=kind).plot(
            ax=ax, color_for=color_for, color_against=color_against)

    @classmethod
    def from_explainer(cls, explainer, X, *, row=0, ax=None, color_for="tab:red",
                       color_against="tab:blue"):
        """The reasons of one row of ``X``, from a fitted explainer and its model.

        The model is asked ``k + 1`` times (see :meth:`~sk_sointer.L2XExplainer.reasons`);
        without a model, the columns are ranked by the selector.

        Parameters
        ----------
        explainer : fitted explainer
        X : DataFrame or array-like of shape (n_samples, n_features)
        row : int, default=0
            The row's position in ``X`` (as ``X.iloc[row]``).
        ax, color_for, color_against :
            As in :meth:`from_reasons`.

        Returns
        -------
        display : ReasonsDisplay
        """
        if not callable(getattr(_check_explainer(explainer), "reasons", None)):
            raise TypeError(f"explainer should be a fitted sk_sointer explainer with reasons "
                            f"(such as L2XExplainer); got {type(explainer).__name__}.")
        if not hasattr(X, "__len__") or isinstance(X, (str, bytes)):
            raise TypeError(f"X should be a DataFrame or an array of rows; got "
                            f"{type(X).__name__}.")
        row = _position("row", row, len(X))
        one = X.iloc[[row]] if hasattr(X, "iloc") else np.asarray(X)[[row]]
        reasons = explainer.reasons(one)
        if not hasattr(X, "index"):  # an array's row is named by its position in X
            reasons = reasons.assign(row=row)
        kind = None
        spec = getattr(explainer, "output_spec_", None)
        if spec is not None:
            outputs = range(spec.n_outputs) if spec.target is None else [spec.target]
            kind = "value" if any(spec.kinds[i] == "real" for i in outputs) else "probability"
        return cls.from_reasons(reasons, kind=kind, ax=ax, color_for=color_for,
                                color_against=color_against)

    def plot(self, ax=None, *, color_for="tab:red", color_against="tab:blue"):
        """Draw one horizontal bar per reason, the first on top.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
        color_for, color_against :
            As in :meth:`from_reasons`.

        Returns
        -------
        display : ReasonsDisplay
        """
        color_for = _color("color_for", color_for)
        color_against = _color("color_against", color_against)
        one, label = _one_row(self.reasons, self.row_label)
        kind = self.kind if self.kind is not None else _kind(one["direction"])
        if kind not in (None, "probability", "value"):
            raise ValueError(f"kind should be 'probability', 'value' or None; got {kind!r}.")
        measured = (one["by"] == "model").all()
        n = len(one)
        labels = [_label(c, v) for c, v in zip(one["column"], one["value"])]
        longest = max(map(len, labels))
        ax = _axes(ax, figsize=(5.5 + min(0.075 * longest, 3.5), 1.4 + 0.42 * n),
                   layout="constrained")
        y = np.arange(n)
        if measured:
            effects = one["effect"].to_numpy(dtype=float)
            colors = [color_for if d in ("for", "raises") else
                      color_against if d in ("against", "lowers") else "0.6"
                      for d in one["direction"]]
        else:
            effects = np.ones(n)
            colors = ["0.55"] * n
        self.bars_ = ax.barh(y, effects, 0.6, color=colors)
        ax.set_yticks(y, labels)
        ax.set_ylim(n - 0.5, -0.5)  # the first reason on top
        ax.axvline(0.0, color="0.2", linewidth=0.8)
        where = f"Reasons for row {label}"
        if measured:
            span = effects.max(initial=0.0) - effects.min(initial=0.0)
            span = span if span > 0 else 1.0  # no effect at all: a unit axis around 0
            for bar, effect in zip(self.bars_, effects):
                text = f"{effect:+.3f}" if kind == "probability" else f"{effect:+.3g}"
                ax.annotate(text, (effect, bar.get_y() + bar.get_height() / 2),
                            xytext=(4 if effect >= 0 else -4, 0), textcoords="offset points",
                            ha="left" if effect >= 0 else "right", va="center",
                            fontsize="small")
            # room for the numbers beside the bars' ends
            ax.set_xlim(min(effects.min(), 0.0) - 0.22 * span,
                        max(effects.max(), 0.0) + 0.22 * span)
            what = {"probability": "change in the probability of the model's answer",
                    "value": "change in the model's answer"}.get(kind, "change in the "
                                                                   "model's answer")
            ax.set_xlabel(f"{what}\n(with the row's value, minus with the column alone "
                          "left out)")
            ax.set_title(where, fontsize="medium")
            handles = [(color_for, "for the answer" if kind != "value" else "raises it"),
                       (color_against, "against it" if kind != "value" else "lowers it")]
            shown = set(one["direction"])
            present = [("for", "raises"), ("against", "lowers")]
            from matplotlib.patches import Patch

            legend = [Patch(color=c, label=t) for (c, t), names in zip(handles, present)
                      if shown & set(names)]
            if legend:
                ax.legend(handles=legend, fontsize="small", loc="best")
        else:
            ax.set_xticks([])
            ax.set_xlim(0.0, 1.1)
            ax.set_xlabel("rank (no model: effects not measured)")
            ax.set_title(f"{where}: ranked by the selector, not measured", fontsize="medium")
        self.reasons_, self.row_label_ = one, label
        self.ax_, self.figure_ = ax, ax.figure
        return self
