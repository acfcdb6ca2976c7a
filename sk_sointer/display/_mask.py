"""Masks (or scores) as a heat map: :class:`MaskDisplay`."""

import numpy as np

from ._base import (_axes, _check_explainer, _cmap, _explained, _feature_names, _flag, _is_masks,
                    _label_size, _labels, _positive_int, _table)


class MaskDisplay:
    """Heat map of masks (or scores): one row per sample, one column per feature.

    Build it with :meth:`from_explainer` or :meth:`from_masks`; the constructor only
    stores what they computed. Every column is named below the map (a table's names, from
    the explainer's ``get_feature_names_out()``); a new figure widens with the columns (to
    20 inches), and the names shrink to their share of the width so that none overlaps.

    Parameters
    ----------
    masks : ndarray of shape (n_rows, n_features)
        The masks (or scores) drawn, one row per sample.
    feature_names : list of str
        Column labels.
    row_labels : list of str, default=None
        Labels of the rows (e.g. the predicted class).
    holds : ndarray of shape (n_rows,), default=None
        Whether the model keeps its answer on each masked row (the explainer's
        :meth:`~sk_sointer.L2XExplainer.check`): a row is marked ``✓`` or, in red, ``✗``.

    Attributes
    ----------
    im_ : matplotlib AxesImage
        The heat map.
    colorbar_ : matplotlib Colorbar
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure

    See Also
    --------
    SelectionFrequencyDisplay : How often each feature is selected.

    Examples
    --------
    >>> import numpy as np
    >>> from sk_sointer.display import MaskDisplay
    >>> masks = np.array([[1, 0, 0], [0, 1, 0]])
    >>> display = MaskDisplay.from_masks(masks, feature_names=["a", "b", "c"])
    >>> display.im_.get_array().tolist()
    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    >>> [label.get_text() for label in display.ax_.get_xticklabels()]
    ['a', 'b', 'c']
    """

    def __init__(self, masks, *, feature_names, row_labels=None, holds=None):
        self.masks = masks
        self.feature_names = feature_names
        self.row_labels = row_labels
        self.holds = holds

    @classmethod
    def from_masks(cls, masks, *, feature_names=None, explainer=None, row_labels=None,
                   holds=None, max_rows=50, ax=None, cmap="Greys"):
        """Heat map of masks or scores in hand.

        Parameters
        ----------
        masks : array-like of shape (n_samples, n_features)
            Masks from ``transform``, or scores from ``explain``. A DataFrame gives its
            columns as the feature names.
        feature_names : sequence of str, default=None
            Column labels; default: the DataFrame's columns, else
            ``explainer.feature_names_in_``, else ``x0, x1, ...``.
        explainer : fitted explainer, default=None
            Where to find ``feature_names_in_`` (set when it was fitted on a DataFrame).
        row_labels : sequence of str, default=None
            Labels of the rows, one per sample.
        holds : array-like of bool, default=None
            Whether each row's mask holds (``explainer.check(X, masks).holds``), one per
            sample: the rows are marked ``✓``, or ``✗`` in red.
        max_rows : int, default=50
            Only the first ``max_rows`` samples are kept and drawn.
        ax : matplotlib Axes, default=None
            Where to draw; default: a new figure.
        cmap : str or Colormap, default="Greys"

        Returns
        -------
        display : MaskDisplay
        """
        max_rows = _positive_int("max_rows", max_rows)
        values, columns = _table(masks)
        n_rows = len(values)
        values = values[:max_rows]
        names = _feature_names(values.shape[1], feature_names, explainer, columns)
        row_labels = _labels(row_labels, n_rows)
        if row_labels is not None:
            row_labels = row_labels[:max_rows]
        if holds is not None:
            holds = np.asarray(holds)
            if holds.shape != (n_rows,) or holds.dtype.kind not in "bui":
                raise ValueError(f"holds should give one bool per row of the masks, "
                                 f"shape ({n_rows},); got shape {holds.shape}.")
            holds = holds[:max_rows].astype(bool)
        return cls(values, feature_names=names, row_labels=row_labels,
                   holds=holds).plot(ax=ax, cmap=cmap)

    @classmethod
    def from_explainer(cls, explainer, X, *, method="transform", feature_names=None,
                       row_labels=None, check=False, max_rows=50, ax=None, cmap="Greys"):
        """Heat map of a fitted explainer's masks (or scores) on ``X``.

        Parameters
        ----------
        explainer : fitted explainer
        X : array-like of shape (n_samples, n_features)
        method : {"transform", "explain"}, default="transform"
            Draw the masks, or the real-valued scores behind them.
        check : bool, default=False
            Ask the model whether it keeps its answer on each drawn row's masked row
            (the explainer's :meth:`~sk_sointer.L2XExplainer.check`, two queries a row) and
            mark the rows: ``✓``, or ``✗`` in red. Needs the explainer's model.
        feature_names, row_labels, max_rows, ax, cmap :
            As in :meth:`from_masks`.

        Returns
        -------
        display : MaskDisplay
        """
        max_rows = _positive_int("max_rows", max_rows)
        _check_explainer(explainer)
        holds = None
        if _flag("check", check):  # the drawn rows only: the model is asked about each
            if row_labels is not None:  # one per row of X, as without check
                row_labels = _labels(row_labels, len(X))[:max_rows]
            X = X[:max_rows]
            holds = explainer.check(X, explainer.transform(X)).holds
        return cls.from_masks(_explained(explainer, X, method), feature_names=feature_names,
                              explainer=explainer, row_labels=row_labels, holds=holds,
                              max_rows=max_rows, ax=ax, cmap=cmap)

    def plot(self, ax=None, *, cmap="Greys"):
        """Draw the heat map, with a colour bar.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Where to draw; default: a new figure.
        cmap : str or Colormap, default="Greys"

        Returns
        -------
        display : MaskDisplay
        """
        values, names = _table(self.masks)[0], list(self.feature_names)
        n_rows, n_features = values.shape
        if len(names) != n_features:
            raise ValueError(f"feature_names should have one name per column of masks "
                             f"({n_features}); got {len(names)}.")
        row_labels = _labels(self.row_labels, n_rows)
        cmap = _cmap(cmap)
        rotated = max(map(len, names)) > 3 or n_features > 20
        # A column takes 0.35 inch up to 30 columns, then 0.18 inch more each (its name a
        # little smaller), up to 20 inches; rotated names get the height they need below.
        width = float(np.clip(min(0.35 * n_features + 2, 0.18 * n_features + 7), 4.0, 20.0))
        longest = max(map(len, names))
        below = min(0.065 * longest, 2.5) if rotated else 0.0
        ax = _axes(ax, figsize=(width, max(2.5, 0.18 * n_rows + 1.2) + below),
                   layout="constrained")
        binary = _is_masks(values)
        self.im_ = ax.imshow(values, aspect="auto", interpolation="nearest", cmap=cmap,
                             vmin=0.0 if binary else None, vmax=1.0 if binary else None)
        self.colorbar_ = ax.figure.colorbar(self.im_, ax=ax, fraction=0.05, pad=0.02)
        self.colorbar_.set_label("selected" if binary else "score")
        if binary:
            self.colorbar_.set_ticks([0, 1])
        ax.set_xticks(np.arange(n_features))
        ax.set_xticklabels(names, rotation=90 if rotated else 0,
                           fontsize=_label_size(ax, n_features, rotated=rotated))
        labels = row_labels
        if self.holds is not None:
            labels = [f"{'' if labels is None else labels[i] + ' '}{'✓' if held else '✗'}"
                      for i, held in enumerate(self.holds)]
        if labels is not None:
            ax.set_yticks(np.arange(len(labels)))
            ax.set_yticklabels(labels, fontsize="small" if n_rows <= 15 else "x-small")
            for tick, held in zip(ax.get_yticklabels(),
                                  [True] * len(labels) if self.holds is None else self.holds):
                if not held:
                    tick.set_color("tab:red")
        ax.set_xlabel("feature")
        ax.set_ylabel("row")
        self.ax_, self.figure_ = ax, ax.figure
        return self
