"""How often each feature is selected, overall or per group of rows:
:class:`SelectionFrequencyDisplay`."""

import numpy as np

from ._base import (_axes, _check_explainer, _feature_names, _is_masks, _label_size,
                    _positive_int, _table)

# Upright bars for at most this many features; more lie down, their names one a line.
_MOST_UPRIGHT = 40


def _frequencies(values, by):
    """Share of rows selecting each feature, one row per label of ``by`` (sorted), and
    the labels and their numbers of rows (``[None]`` and all rows without ``by``)."""
    if by is None:
        return values.mean(axis=0, keepdims=True), [None], [len(values)]
    by = np.asarray(by)
    if by.shape != (len(values),):
        raise ValueError(
            f"by should hold one label per row of masks ({len(values)}); got shape {by.shape}."
        )
    # NaN (or None) is no label: unequal to itself, its rows would silently drop out.
    if by.dtype.kind in "fc" and np.isnan(by).any() or by.dtype.kind == "O" and (
            np.any(by != by) or any(label is None for label in by)):
        raise ValueError("by should hold a label for every row; it holds missing values (NaN "
                         "or None).")
    try:
        labels = list(np.unique(by))
    except TypeError:  # labels that do not sort: numbers and strings mixed
        kinds = sorted({type(label).__name__ for label in by})
        raise TypeError(f"by should hold labels of one kind, all numbers or all strings; got "
                        f"{' and '.join(kinds)}. Convert them first, e.g. "
                        "by=np.asarray(by, dtype=str).") from None
    rows = [by == label for label in labels]
    return (np.array([values[r].mean(axis=0) for r in rows]), labels,
            [int(r.sum()) for r in rows])


class SelectionFrequencyDisplay:
    """Bar chart of how often each feature is selected, overall or per group of rows.

    Parameters
    ----------
    frequencies : ndarray of shape (n_groups, n_features)
        Share of each group's rows selecting each drawn feature (the mean of the scores
        for scores); one group, all rows, without ``by``.
    feature_names : list of str
        Names of the drawn features, in the order of the columns of ``frequencies``.
    group_labels : list, default=None
        The label of each group (``None`` for one group of all rows).
    group_sizes : list of int, default=None
        Rows in each group, for the legend.
    scores : bool, default=False
        Whether ``frequencies`` are mean scores (``explain``'s, or anything but 0/1 masks)
        rather than shares of rows: the axis then says so and spans their range, below 0
        for signed scores.
    n_left_out : int, default=0
        Features not drawn (left out by ``top``): the title says how many.

    Attributes
    ----------
    bars_ : list of matplotlib BarContainer
        One per group.
    orientation_ : {"vertical", "horizontal"}
        How the bars were drawn: upright, the names below, or lying, the names beside
        (more than 40 features by default).
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure

    Examples
    --------
    >>> import numpy as np
    >>> from sk_sointer.display import SelectionFrequencyDisplay
    >>> masks = np.array([[1, 0], [1, 1], [0, 1], [1, 0]])
    >>> display = SelectionFrequencyDisplay.from_masks(masks)
    >>> display.frequencies.tolist()
    [[0.75, 0.5]]
    >>> [float(bar.get_height()) for bar in display.bars_[0]]
    [0.75, 0.5]
    """

    def __init__(self, frequencies, *, feature_names, group_labels=None, group_sizes=None,
                 scores=False, n_left_out=0):
        self.frequencies = frequencies
        self.feature_names = feature_names
        self.group_labels = group_labels
        self.group_sizes = group_sizes
        self.scores = scores
        self.n_left_out = n_left_out

    @classmethod
    def from_masks(cls, masks, *, by=None, feature_names=None, explainer=None, top=None,
                   ax=None, orientation=None):
        """Selection frequencies of masks in hand.

        Parameters
        ----------
        masks : array-like of shape (n_samples, n_features)
            Masks from ``transform``; scores (any values but 0 and 1) are averaged the
            same way and drawn as mean scores.
        by : array-like of shape (n_samples,), default=None
            A label per row, e.g. the black box's predicted class: one bar per label for
            each feature, each the share of that label's rows selecting it.
        feature_names, explainer :
            As in :meth:`MaskDisplay.from_masks`.
        top : int, default=None
            Keep only the ``top`` most often selected features (over all rows), most
            frequent first; default: every feature in column order. The title says how
            many were left out.
        ax : matplotlib Axes, default=None
        orientation : {"vertical", "horizontal"}, default=None
            Upright bars with the names below, or lying bars with the names beside them,
            one line each; default: lying for more than 40 features.

        Returns
        -------
        display : SelectionFrequencyDisplay
        """
        values, columns = _table(masks)
        names = np.asarray(_feature_names(values.shape[1], feature_names, explainer, columns))
        frequencies, labels, sizes = _frequencies(values, by)
        kept = np.arange(values.shape[1])
        if top is not None:
            top = _positive_int("top", top)
            kept = np.argsort(-values.mean(axis=0), kind="stable")[:top]
        return cls(frequencies[:, kept], feature_names=list(names[kept]),
                   group_labels=None if by is None else labels,
                   group_sizes=None if by is None else sizes,
                   scores=not _is_masks(values),
                   n_left_out=values.shape[1] - len(kept)).plot(ax=ax, orientation=orientation)

    @classmethod
    def from_explainer(cls, explainer, X, *, by=None, feature_names=None, top=None, ax=None,
                       orientation=None):
        """Selection frequencies of a fitted explainer's masks on ``X``.

        Parameters
        ----------
        explainer : fitted explainer
        X : array-like of shape (n_samples, n_features)
        by, feature_names, top, ax, orientation :
            As in :meth:`from_masks`.

        Returns
        -------
        display : SelectionFrequencyDisplay
        """
        masks = _check_explainer(explainer).transform(X)
        return cls.from_masks(masks, by=by, feature_names=feature_names,
                              explainer=explainer, top=top, ax=ax, orientation=orientation)

    def plot(self, ax=None, *, orientation=None):
        """Draw one bar per feature and group.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
        orientation : {"vertical", "horizontal"}, default=None
            As in :meth:`from_masks`.

        Returns
        -------
        display : SelectionFrequencyDisplay
        """
        frequencies = np.atleast_2d(np.asarray(self.frequencies, dtype=float))
        names = list(self.feature_names)
        n_groups, n_features = frequencies.shape
        labels = self.group_labels if self.group_labels is not None else [None] * n_groups
        sizes = self.group_sizes if self.group_sizes is not None else [None] * n_groups
        if len(names) != n_features:
            raise ValueError(f"feature_names should have one name per column of frequencies "
                             f"({n_features}); got {len(names)}.")
        if orientation is None:
            orientation = "horizontal" if n_features > _MOST_UPRIGHT else "vertical"
        if orientation not in ("vertical", "horizontal"):
            raise ValueError(f"orientation should be 'vertical', 'horizontal' or None; got "
                             f"{orientation!r}.")
        horizontal = orientation == "horizontal"
        rotated = not horizontal and bool(names) and (max(map(len, names)) > 3
                                                       or n_features > 20)
        longest = max(map(len, names), default=1)
        legend_width = 1.4 if self.group_labels is not None else 0.0
        if horizontal:  # a feature's bars take 0.2 inch (0.12 each of several groups)
            height = 1.2 + n_features * max(0.2, 0.12 * n_groups)
            figsize = (6.0 + min(0.07 * longest, 3.0) + legend_width, height)
        else:
            # A feature's bars take about 0.15 inch each (0.35 at least), capped at a
            # page's width; rotated names get the height they need below the axes.
            width = float(np.clip(1.5 + n_features * max(0.35, 0.15 * n_groups), 4.0, 12.0))
            height = 3.0 + (min(0.07 * longest, 2.0) if rotated else 0.0)
            figsize = (width + legend_width, height)
        ax = _axes(ax, figsize=figsize, layout="constrained")
        bar_width = 0.8 / n_groups
        self.bars_ = []
        for g, (heights, label, size) in enumerate(zip(frequencies, labels, sizes)):
            offsets = np.arange(n_features) + (g - (n_groups - 1) / 2) * bar_width
            # a name reads alone; a number (a class index, a cluster) says what it is
            named = label if isinstance(label, str) else f"by = {label}"
            legend = None if label is None else (
                named if size is None else f"{named} ({size} rows)")
            draw = ax.barh if horizontal else ax.bar
            self.bars_.append(draw(offsets, heights, bar_width, label=legend))
        what = "mean score" if self.scores else "share of rows selecting it"
        along, across = (ax.yaxis, ax.xaxis) if horizontal else (ax.xaxis, ax.yaxis)
        set_range, line = (ax.set_xlim, ax.axvline) if horizontal else (ax.set_ylim, ax.axhline)
        along.set_ticks(np.arange(n_features))
        along.set_ticklabels(names, rotation=90 if rotated else 0,
                             fontsize=_label_size(ax, n_features, along="y" if horizontal
                                                  else "x", rotated=rotated))
        if horizontal:  # the first feature on top, as a table reads
            ax.set_ylim(n_features - 0.4, -0.6)
        else:
            ax.set_xlim(-0.6, n_features - 0.4)
        across.set_label_text(what)
        if self.scores:
            if frequencies.min() < 0:
                line(0.0, color="0.3", linewidth=0.8)
        else:
            set_range(0, 1.05)
        if self.n_left_out:
            ax.set_title(f"the {n_features} most often selected of {n_features + self.n_left_out}"
                         f" features ({self.n_left_out} not shown)", fontsize="medium")
        if self.group_labels is not None:  # beside the axes: shares near 1 would hide under it
            ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
        self.orientation_ = orientation
        self.ax_, self.figure_ = ax, ax.figure
        return self
