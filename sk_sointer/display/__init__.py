"""Displays of explanations, in scikit-learn's convention (needs matplotlib:
``pip install "sk_sointer[plot]"``).

As :class:`sklearn.metrics.RocCurveDisplay`, a Display holds values already computed and
draws them: ``from_explainer(explainer, X, ...)`` (or ``from_search``, ``from_explainers``)
computes them from fitted objects, ``from_masks(...)`` from masks or scores in hand, and
both construct the Display and call its :meth:`plot`, which draws into ``ax`` (a new figure
by default), returns the Display and keeps what it drew: ``ax_`` (or ``axes_`` for several
panels), ``figure_`` and the artists (``im_``, ``bars_``, ``lines_``, ...).

- which features each row relied on: :class:`MaskDisplay` (rows x features);
- how often each feature is selected, overall or per class: :class:`SelectionFrequencyDisplay`;
- masks over images, pixel or patch masks: :class:`ImageMaskDisplay`;
- the selected words of texts: :class:`TokenMaskDisplay`;
- fidelity as ``k`` grows, from a fitted search: :class:`FidelityVsKDisplay`;
- several explainers on the same rows: :class:`ComparisonDisplay`;
- one panel per explained output of a multi-output model: :class:`TargetsDisplay`;
- the model's agreement as the top-ranked features are inserted or deleted:
  :class:`InsertionDeletionDisplay`, computed by
  :func:`sk_sointer.metrics.insertion_deletion_curves`.

Masks are what ``transform`` returns (any value > 0 counts as kept); :meth:`explain`'s
scores are accepted wherever the text says so.
"""

from numbers import Integral

import numpy as np
from sklearn.metrics import auc

from ..metrics import insertion_deletion_curves

__all__ = [
    "ComparisonDisplay",
    "FidelityVsKDisplay",
    "ImageMaskDisplay",
    "InsertionDeletionDisplay",
    "MaskDisplay",
    "SelectionFrequencyDisplay",
    "TargetsDisplay",
    "TokenMaskDisplay",
]


# -- shared helpers ----------------------------------------------------------------------

def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise ImportError(
            'sk_sointer.plotting needs matplotlib: pip install "sk_sointer[plot]".'
        ) from error
    return plt


def _axes(ax, **subplots):
    """``ax``, or a new figure's Axes."""
    if ax is not None:
        return ax
    return _pyplot().subplots(**subplots)[1]


def _panels(ax, n_panels, *, n_cols, panel_size, sharey=False):
    """``ax`` as a flat array of ``n_panels`` Axes, or a new figure's grid of panels."""
    if ax is not None:
        axes = np.asarray(ax, dtype=object).ravel()
        if axes.size < n_panels:
            raise ValueError(f"ax should hold {n_panels} Axes, one per panel; got {axes.size}.")
        return axes[:n_panels]
    plt = _pyplot()
    n_cols = max(1, min(n_cols, n_panels))
    n_rows = -(-n_panels // n_cols)
    width, height = panel_size
    _, axes = plt.subplots(n_rows, n_cols, figsize=(width * n_cols, height * n_rows),
                           squeeze=False, sharey=sharey)
    for extra in axes.ravel()[n_panels:]:
        extra.set_visible(False)
    return axes.ravel()[:n_panels]


def _table(masks, name="masks"):
    """A 2-D float array of masks or scores, and the column names of a DataFrame."""
    columns = getattr(masks, "columns", None)
    values = np.asarray(masks, dtype=float)
    if values.ndim == 1:
        values = values[None, :]
    if values.ndim != 2:
        raise ValueError(
            f"{name} should be 2-D, one row per sample and one column per feature; got shape "
            f"{values.shape}. Plot images with ImageMaskDisplay (plot_image_masks)."
        )
    if 0 in values.shape:
        raise ValueError(f"{name} should hold one row and one feature at least; got shape "
                         f"{values.shape}.")
    if not np.isfinite(values).all():
        raise ValueError(f"{name} should be finite; got NaN or infinite values.")
    return values, None if columns is None else [str(c) for c in columns]


def _positive_int(name, value):
    """``value`` when it is a whole number >= 1 (not a bool), else a one-line ValueError."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < 1:
        raise ValueError(f"{name} should be a whole number >= 1; got {value!r}.")
    return int(value)


def _feature_names(n_features, feature_names=None, explainer=None, columns=None):
    """Names given, else a DataFrame's columns, else the explainer's ``feature_names_in_``,
    else x0, x1, ..."""
    for names in (feature_names, columns, getattr(explainer, "feature_names_in_", None)):
        if names is not None:
            names = [str(name) for name in names]
            if len(names) != n_features:
                raise ValueError(
                    f"feature_names should have one name per column of masks ({n_features}); "
                    f"got {len(names)}."
                )
            return names
    return [f"x{j}" for j in range(n_features)]


def _explained(explainer, X, method):
    """``explainer.transform(X)`` (masks) or ``explainer.explain(X)`` (scores)."""
    if method not in ("transform", "explain"):
        raise ValueError(f"method should be 'transform' or 'explain'; got {method!r}.")
    return getattr(explainer, method)(X)


def _image(image):
    """An image as (height, width) or (height, width, channels) for ``imshow``."""
    image = np.asarray(image, dtype=float)
    if image.ndim == 3 and image.shape[0] in (1, 3) and image.shape[-1] not in (1, 3):
        image = np.moveaxis(image, 0, -1)  # channels first, as the explainers take images
    if image.ndim == 3 and image.shape[-1] == 1:
        image = image[..., 0]
    if image.ndim not in (2, 3) or 0 in image.shape:
        raise ValueError(f"images should be (n, H, W) or (n, C, H, W); got one of {image.shape}.")
    if image.ndim == 3:  # colour: to 0..1 for imshow
        low, high = image.min(), image.max()
        image = (image - low) / (high - low) if high > low else np.zeros_like(image)
    return image


def _pixel_mask(mask, shape):
    """A mask over the (height, width) ``shape``: channels folded by their maximum, a grid of
    patches repeated up to the pixels."""
    mask = np.asarray(mask, dtype=float)
    if mask.ndim == 3:
        channels_first = mask.shape[0] in (1, 3) and mask.shape[1:] == shape
        mask = mask.max(axis=0 if channels_first else -1)
    if mask.ndim == 1 and mask.size == shape[0] * shape[1]:
        mask = mask.reshape(shape)
    if mask.ndim != 2 or shape[0] % mask.shape[0] or shape[1] % mask.shape[1]:
        raise ValueError(
            f"a mask of shape {np.shape(mask)} does not cover an image of {shape}: pass "
            "transform's masks (the images' shape) or a grid of patches that divides it."
        )
    return np.repeat(np.repeat(mask, shape[0] // mask.shape[0], axis=0),
                     shape[1] // mask.shape[1], axis=1)


def _images_and_masks(images, masks):
    """Images ready for ``imshow`` and their masks over the pixels, one per image."""
    images = [_image(image) for image in np.asarray(images)]
    if not images:
        raise ValueError("images should hold one image at least; got none.")
    if len(masks) != len(images):
        raise ValueError(
            f"masks should hold one mask per image ({len(images)}); got {len(masks)}."
        )
    if not np.isfinite(np.asarray(masks, dtype=float)).all():
        raise ValueError("masks should be finite; got NaN or infinite values.")
    return images, [_pixel_mask(masks[i], image.shape[:2]) for i, image in enumerate(images)]


def _image_rows(explainer, X):
    """``X`` as images: flat rows of an explainer fitted with ``image_shape`` are reshaped."""
    X = np.asarray(X)
    image_shape = getattr(getattr(explainer, "layout_", None), "image_shape", None)
    if X.ndim == 2 and image_shape is not None:
        X = X.reshape(len(X), *image_shape)
    return X


def _overlay(ax, image, mask, color, alpha):
    """``image`` in grey with the pixel ``mask`` (0..1, or scores scaled to it) painted over
    in ``color``; returns the paint's image artist."""
    from matplotlib.colors import to_rgba

    ax.imshow(image, cmap=None if image.ndim == 3 else "gray", interpolation="nearest")
    high = mask.max()
    weight = np.clip(mask / high, 0.0, 1.0) if high > 0 else mask
    paint = np.zeros(mask.shape + (4,))
    paint[..., :3] = to_rgba(color)[:3]
    paint[..., 3] = alpha * weight
    artist = ax.imshow(paint, interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])
    return artist


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
    labels = list(np.unique(by))
    rows = [by == label for label in labels]
    return (np.array([values[r].mean(axis=0) for r in rows]), labels,
            [int(r.sum()) for r in rows])


# -- masks and scores --------------------------------------------------------------------

class MaskDisplay:
    """Heat map of masks (or scores): one row per sample, one column per feature.

    Build it with :meth:`from_explainer` or :meth:`from_masks`; the constructor only
    stores what they computed.

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
        values, columns = _table(masks)
        values = values[:max_rows]
        names = _feature_names(values.shape[1], feature_names, explainer, columns)
        if row_labels is not None:
            row_labels = [str(label) for label in row_labels][:len(values)]
        if holds is not None:
            holds = np.asarray(holds)
            if holds.shape != (len(masks),) or holds.dtype.kind not in "bui":
                raise ValueError(f"holds should give one bool per row of the masks, "
                                 f"shape ({len(masks)},); got shape {holds.shape}.")
            holds = holds[:len(values)].astype(bool)
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
        holds = None
        if check:  # the drawn rows only: the model is asked about each
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
        values, names = np.asarray(self.masks, dtype=float), list(self.feature_names)
        n_rows, n_features = values.shape
        ax = _axes(ax, figsize=(max(4.0, 0.35 * n_features + 2), max(2.5, 0.18 * n_rows + 1.2)))
        binary = np.isin(values, (0.0, 1.0)).all()
        self.im_ = ax.imshow(values, aspect="auto", interpolation="nearest", cmap=cmap,
                             vmin=0.0 if binary else None, vmax=1.0 if binary else None)
        ax.set_xticks(np.arange(n_features))
        ax.set_xticklabels(names, rotation=90 if max(map(len, names)) > 3 else 0)
        labels = self.row_labels
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
        self.colorbar_ = ax.figure.colorbar(self.im_, ax=ax, fraction=0.05, pad=0.02)
        self.colorbar_.set_label("selected" if binary else "score")
        if binary:
            self.colorbar_.set_ticks([0, 1])
        self.ax_, self.figure_ = ax, ax.figure
        return self


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

    Attributes
    ----------
    bars_ : list of matplotlib BarContainer
        One per group.
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

    def __init__(self, frequencies, *, feature_names, group_labels=None, group_sizes=None):
        self.frequencies = frequencies
        self.feature_names = feature_names
        self.group_labels = group_labels
        self.group_sizes = group_sizes

    @classmethod
    def from_masks(cls, masks, *, by=None, feature_names=None, explainer=None, top=None,
                   ax=None):
        """Selection frequencies of masks in hand.

        Parameters
        ----------
        masks : array-like of shape (n_samples, n_features)
            Masks from ``transform`` (scores are averaged the same way).
        by : array-like of shape (n_samples,), default=None
            A label per row, e.g. the black box's predicted class: one bar per label for
            each feature, each the share of that label's rows selecting it.
        feature_names, explainer :
            As in :meth:`MaskDisplay.from_masks`.
        top : int, default=None
            Keep only the ``top`` most often selected features (over all rows), most
            frequent first; default: every feature in column order.
        ax : matplotlib Axes, default=None

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
                   group_sizes=None if by is None else sizes).plot(ax=ax)

    @classmethod
    def from_explainer(cls, explainer, X, *, by=None, feature_names=None, top=None, ax=None):
        """Selection frequencies of a fitted explainer's masks on ``X``.

        Parameters
        ----------
        explainer : fitted explainer
        X : array-like of shape (n_samples, n_features)
        by, feature_names, top, ax :
            As in :meth:`from_masks`.

        Returns
        -------
        display : SelectionFrequencyDisplay
        """
        return cls.from_masks(explainer.transform(X), by=by, feature_names=feature_names,
                              explainer=explainer, top=top, ax=ax)

    def plot(self, ax=None):
        """Draw one bar per feature and group.

        Parameters
        ----------
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : SelectionFrequencyDisplay
        """
        frequencies = np.atleast_2d(np.asarray(self.frequencies, dtype=float))
        names = list(self.feature_names)
        n_groups, n_features = frequencies.shape
        labels = self.group_labels if self.group_labels is not None else [None] * n_groups
        sizes = self.group_sizes if self.group_sizes is not None else [None] * n_groups
        rotated = bool(names) and max(map(len, names)) > 3
        if ax is None:
            # A feature's bars take about 0.15 inch each (0.35 at least), capped at a
            # page's width; rotated names get the height they need below the axes.
            longest = max(map(len, names), default=1)
            width = float(np.clip(1.5 + n_features * max(0.35, 0.15 * n_groups), 4.0, 12.0))
            height = 3.0 + (min(0.07 * longest, 2.0) if rotated else 0.0)
            legend_width = 1.4 if self.group_labels is not None else 0.0
            ax = _pyplot().subplots(figsize=(width + legend_width, height),
                                    layout="constrained")[1]
        bar_width = 0.8 / n_groups
        self.bars_ = []
        for g, (heights, label, size) in enumerate(zip(frequencies, labels, sizes)):
            offsets = np.arange(n_features) + (g - (n_groups - 1) / 2) * bar_width
            # a name reads alone; a number (a class index, a cluster) says what it is
            named = label if isinstance(label, str) else f"by = {label}"
            legend = None if label is None else (
                named if size is None else f"{named} ({size} rows)")
            self.bars_.append(ax.bar(offsets, heights, width=bar_width, label=legend))
        ax.set_xticks(np.arange(n_features))
        ax.set_xticklabels(names, rotation=90 if rotated else 0)
        ax.set_xlim(-0.6, n_features - 0.4)
        ax.set_ylabel("share of rows selecting it")
        ax.set_ylim(0, 1.05)
        if self.group_labels is not None:  # beside the axes: shares near 1 would hide under it
            ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
        self.ax_, self.figure_ = ax, ax.figure
        return self


# -- images and texts --------------------------------------------------------------------

class ImageMaskDisplay:
    """Masks painted over images, one panel per image.

    Parameters
    ----------
    images : list of ndarray
        The images as drawn: (height, width) in grey, or (height, width, 3) scaled to 0..1.
    masks : list of ndarray of shape (height, width)
        Each image's mask over its pixels (channels folded by their maximum, patches
        repeated up to the pixels), or scores (painted in proportion).
    titles : list of str, default=None
        A title per panel.

    Attributes
    ----------
    overlays_ : list of matplotlib AxesImage
        The paint over each image (RGBA; its alpha is the mask).
    axes_ : ndarray of matplotlib Axes
        One per image.
    figure_ : matplotlib Figure

    Examples
    --------
    >>> import numpy as np
    >>> from sk_sointer.display import ImageMaskDisplay
    >>> images = np.zeros((1, 2, 2))
    >>> masks = np.array([[[1, 0], [0, 0]]])
    >>> display = ImageMaskDisplay.from_masks(images, masks, alpha=0.5)
    >>> display.overlays_[0].get_array()[..., 3].tolist()
    [[0.5, 0.0], [0.0, 0.0]]
    """

    def __init__(self, images, masks, *, titles=None):
        self.images = images
        self.masks = masks
        self.titles = titles

    @classmethod
    def from_masks(cls, images, masks, *, titles=None, n_cols=5, color="tab:orange",
                   alpha=0.6, ax=None):
        """Masks in hand over their images.

        Parameters
        ----------
        images : array-like of shape (n_images, height, width) or \
                (n_images, channels, height, width)
            The explained images (channels last also accepted).
        masks : array-like
            One mask per image: ``transform``'s masks (the images' shape), a grid of
            patches of shape (n_images, rows, columns) that divides the image, or
            ``explain``'s scores (painted in proportion, the largest at ``alpha``).
        titles : sequence of str, default=None
            A title per panel, e.g. the predicted class.
        n_cols : int, default=5
            Panels per row of a new figure.
        color : matplotlib colour, default="tab:orange"
        alpha : float, default=0.6
            Opacity of the paint where a mask keeps the pixel.
        ax : sequence of matplotlib Axes, default=None
            One per image; default: a new figure.

        Returns
        -------
        display : ImageMaskDisplay
        """
        images, masks = _images_and_masks(images, masks)
        titles = None if titles is None else [str(title) for title in titles]
        return cls(images, masks, titles=titles).plot(ax=ax, n_cols=n_cols, color=color,
                                                      alpha=alpha)

    @classmethod
    def from_explainer(cls, explainer, X, *, method="transform", titles=None, n_cols=5,
                       color="tab:orange", alpha=0.6, ax=None):
        """A fitted explainer's masks (or scores) over the images ``X``.

        Parameters
        ----------
        explainer : fitted explainer
            Fitted on images, or on flat rows with ``image_shape``.
        X : array-like of images, or flat rows of an explainer fitted with ``image_shape``
        method : {"transform", "explain"}, default="transform"
        titles, n_cols, color, alpha, ax :
            As in :meth:`from_masks`.

        Returns
        -------
        display : ImageMaskDisplay
        """
        masks = _explained(explainer, X, method)
        images = _image_rows(explainer, X)
        return cls.from_masks(images, masks.reshape(images.shape), titles=titles,
                              n_cols=n_cols, color=color, alpha=alpha, ax=ax)

    def plot(self, ax=None, *, n_cols=5, color="tab:orange", alpha=0.6):
        """Draw each image with its mask painted over.

        Parameters
        ----------
        ax : sequence of matplotlib Axes, default=None
            One per image; default: a new figure.
        n_cols : int, default=5
        color : matplotlib colour, default="tab:orange"
        alpha : float, default=0.6

        Returns
        -------
        display : ImageMaskDisplay
        """
        axes = _panels(ax, len(self.images), n_cols=n_cols, panel_size=(1.8, 1.9))
        self.overlays_ = []
        for i, panel in enumerate(axes):
            self.overlays_.append(_overlay(panel, self.images[i], self.masks[i], color, alpha))
            if self.titles is not None:
                panel.set_title(self.titles[i], fontsize="small")
        self.axes_, self.figure_ = axes, axes[0].figure
        return self


def _words(tokens, masks, sequencer):
    """Rows of words and of their kept flags: token ids read through ``sequencer``
    (padding left out), or lists of words as given."""
    words, kept = [], []
    for i, row in enumerate(tokens):
        keep = np.asarray(masks[i]).ravel()
        row = list(np.asarray(row).ravel()) if sequencer is not None else list(row)
        if len(keep) != len(row):
            raise ValueError(
                f"row {i}: masks should have one value per token ({len(row)}); got {len(keep)}."
            )
        if sequencer is not None:
            vocabulary = sequencer.words_
            _check_token_ids(i, row, len(vocabulary))
            pairs = [(str(vocabulary[int(t)]), k > 0) for t, k in zip(row, keep) if int(t) != 0]
        else:
            pairs = [(str(t), k > 0) for t, k in zip(row, keep)]
        words.append([word for word, _ in pairs])
        kept.append(np.array([k for _, k in pairs], dtype=bool))
    return words, kept


def _check_token_ids(i, row, n_ids):
    """Token ids of text ``i``: whole numbers from 0 (the padding) below ``n_ids``."""
    try:
        ids = np.asarray(row, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"row {i}: tokens should be token ids (numbers) with a sequencer; got "
                        f"{row[:3]!r}...") from None
    bad = ~np.isfinite(ids) | (ids != np.round(ids)) | (ids < 0) | (ids >= n_ids)
    if bad.any():
        raise ValueError(f"row {i}: token ids should be whole numbers in [0, {n_ids}) (the "
                         "sequencer's vocabulary, 0 the padding); got "
                         f"{sorted(set(ids[bad].tolist()))[:5]}.")


class TokenMaskDisplay:
    """Texts with the selected words highlighted, one text under the other.

    Parameters
    ----------
    words : list of list of str
        The words of each text (padding left out).
    masks : list of ndarray of bool
        Whether each word is selected.

    Attributes
    ----------
    texts_ : list of matplotlib Text
        One per word, in reading order; the selected ones have a coloured box (their
        ``get_bbox_patch()`` is not None).
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure

    Examples
    --------
    >>> from sk_sointer.display import TokenMaskDisplay
    >>> display = TokenMaskDisplay.from_masks([["not", "bad", "at", "all"]], [[1, 1, 0, 0]])
    >>> [t.get_text() for t in display.texts_ if t.get_bbox_patch() is not None]
    ['not', 'bad']
    """

    def __init__(self, words, masks):
        self.words = words
        self.masks = masks

    @classmethod
    def from_masks(cls, tokens, masks, *, sequencer=None, color="tab:orange", width=60,
                   ax=None):
        """Token masks in hand over their texts.

        Parameters
        ----------
        tokens : array-like of shape (n_texts, length), or a sequence of lists of words
            Token ids as the explainer took them (with ``sequencer``), or the words.
        masks : array-like of shape (n_texts, length)
            ``transform``'s token masks.
        sequencer : fitted :class:`~sk_sointer.text.TokenSequencer`, default=None
            Reads token ids as words (padding left out); needed when ``tokens`` are ids.
        color : matplotlib colour, default="tab:orange"
            Background of the selected words.
        width : int, default=60
            Characters on a line before a text wraps.
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : TokenMaskDisplay
        """
        width = _positive_int("width", width)
        words, kept = _words(tokens, masks, sequencer)
        return cls(words, kept).plot(ax=ax, color=color, width=width)

    @classmethod
    def from_explainer(cls, explainer, X, *, sequencer, color="tab:orange", width=60,
                       ax=None):
        """A fitted explainer's token masks on the token ids ``X``.

        Parameters
        ----------
        explainer : fitted explainer
            Fitted with ``tokens=True``.
        X : array-like of shape (n_texts, length)
            Token ids, e.g. ``sequencer.transform(texts)``.
        sequencer : fitted :class:`~sk_sointer.text.TokenSequencer`
        color, width, ax :
            As in :meth:`from_masks`.

        Returns
        -------
        display : TokenMaskDisplay
        """
        return cls.from_masks(X, explainer.transform(X), sequencer=sequencer, color=color,
                              width=width, ax=ax)

    def plot(self, ax=None, *, color="tab:orange", width=60):
        """Draw the texts, the selected words on a coloured box.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
        color : matplotlib colour, default="tab:orange"
        width : int, default=60
            Characters on a line before a text wraps.

        Returns
        -------
        display : TokenMaskDisplay
        """
        width = _positive_int("width", width)
        lines = []  # (text, [(word, kept), ...]) wrapped at ``width`` characters
        for i, (row, keep) in enumerate(zip(self.words, self.masks)):
            line, used = [], 0
            for word, kept in zip(row, keep):
                if line and used + len(word) > width:
                    lines.append((i, line))
                    line, used = [], 0
                line.append((word, bool(kept)))
                used += len(word) + 1
            lines.append((i, line))
        ax = _axes(ax, figsize=(0.11 * width + 0.5, 0.32 * len(lines) + 0.6))
        ax.set_axis_off()
        step = 1.0 / (len(lines) + 1)
        self.texts_ = []
        for n, (i, line) in enumerate(lines):
            y = 1.0 - (n + 1) * step
            for c, (word, kept) in enumerate(line):
                x = sum(len(w) + 1 for w, _ in line[:c]) / width
                box = (dict(boxstyle="round,pad=0.15", facecolor=color, edgecolor="none")
                       if kept else None)
                self.texts_.append(ax.text(x, y, word, transform=ax.transAxes, va="center",
                                           family="monospace",
                                           fontweight="bold" if kept else "normal", bbox=box))
            if n == 0 or lines[n - 1][0] != i:
                ax.text(-0.01, y, f"{i}", transform=ax.transAxes, va="center", ha="right",
                        color="0.5", family="monospace")
        self.ax_, self.figure_ = ax, ax.figure
        return self


# -- searches, comparisons, outputs ------------------------------------------------------

def _search_results(search, param):
    """The ``cv_results_`` key of ``param`` (alone or at the end of a pipeline's name)."""
    results = getattr(search, "cv_results_", None)
    if results is None:
        raise ValueError("search should be a fitted GridSearchCV (or another search with "
                         "cv_results_).")
    keys = [key for key in results if key == f"param_{param}"
            or (key.startswith("param_") and key.endswith(f"__{param}"))]
    if len(keys) != 1:
        searched = sorted(key[len("param_"):] for key in results if key.startswith("param_"))
        raise ValueError(f"the search did not vary {param!r} (once); it searched {searched}.")
    return results, keys[0]


class FidelityVsKDisplay:
    """Mean cross-validated score (fidelity by default) against ``k``, one line per
    combination of the other searched parameters, the chosen setting starred.

    Build it with :meth:`from_search`.

    Parameters
    ----------
    values : list of ndarray
        The values of ``param`` along each line, ascending.
    mean_scores, std_scores : list of ndarray
        The mean and the spread over the folds of the test score at each value.
    labels : list of str or None
        Each line's other parameters (``"tau=0.1"``); None when only ``param`` varied.
    param : str, default="k"
        The parameter on the horizontal axis.
    best : tuple of (value, score), default=None
        The chosen setting (the search's ``best_index_``).
    score_name : str, default="fidelity"

    Attributes
    ----------
    lines_ : list of matplotlib ErrorbarContainer
        One per line.
    best_ : matplotlib Line2D or None
        The star on the chosen setting.
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure
    """

    def __init__(self, values, mean_scores, std_scores, labels, *, param="k", best=None,
                 score_name="fidelity"):
        self.values = values
        self.mean_scores = mean_scores
        self.std_scores = std_scores
        self.labels = labels
        self.param = param
        self.best = best
        self.score_name = score_name

    @classmethod
    def from_search(cls, search, *, param="k", ax=None):
        """The scores of a fitted search against one of its parameters.

        Parameters
        ----------
        search : fitted GridSearchCV or RandomizedSearchCV
            Over an explainer, or a pipeline ending in one (``explainer__k`` is found).
        param : str, default="k"
            The parameter on the horizontal axis.
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : FidelityVsKDisplay
        """
        results, key = _search_results(search, param)
        others = sorted(k for k in results if k.startswith("param_") and k != key)
        settings = [tuple(results[k][i] for k in others) for i in range(len(results[key]))]
        values, means, stds, labels = [], [], [], []
        for setting in dict.fromkeys(settings):
            rows = sorted((i for i, s in enumerate(settings) if s == setting),
                          key=lambda i: results[key][i])
            values.append(np.array([results[key][i] for i in rows]))
            means.append(np.asarray(results["mean_test_score"])[rows])
            stds.append(np.asarray(results["std_test_score"])[rows])
            labels.append(", ".join(f"{k[len('param_'):].split('__')[-1]}={v}"
                                    for k, v in zip(others, setting)) or None)
        best = getattr(search, "best_index_", None)
        if best is not None and best != -1:
            best = (results[key][best], float(results["mean_test_score"][best]))
        else:
            best = None
        scoring = getattr(search, "scoring", None)
        score_name = scoring if isinstance(scoring, str) else "fidelity"
        return cls(values, means, stds, labels, param=param, best=best,
                   score_name=score_name).plot(ax=ax)

    def plot(self, ax=None):
        """Draw the lines with their error bars and the star.

        Parameters
        ----------
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : FidelityVsKDisplay
        """
        ax = _axes(ax, figsize=(5, 3.2))
        self.lines_ = [
            ax.errorbar(x, mean, yerr=std, marker="o", capsize=3, label=label)
            for x, mean, std, label in zip(self.values, self.mean_scores, self.std_scores,
                                           self.labels)
        ]
        self.best_ = None
        if self.best is not None:
            (self.best_,) = ax.plot([self.best[0]], [self.best[1]], marker="*", markersize=14,
                                    color="gold", markeredgecolor="k", linestyle="none",
                                    label="chosen")
        ax.set_xlabel(self.param)
        ax.set_ylabel(f"mean test score ({self.score_name})")
        ticks = sorted({v for x in self.values for v in x.tolist()})
        if all(isinstance(v, Integral) for v in ticks):
            ax.set_xticks(ticks)
        ax.legend(fontsize="small")
        self.ax_, self.figure_ = ax, ax.figure
        return self


class ComparisonDisplay:
    """Several explainers on the same rows, side by side.

    Without images, one heat map per explainer; with images, a grid with one row per
    image and one column per explainer, the image alone in the first column.

    Parameters
    ----------
    masks : dict of str to ndarray
        Each explainer's masks (or scores) on the rows drawn, keyed by the panel's title;
        over images, masks over the pixels (see :class:`ImageMaskDisplay`).
    feature_names : list of str, default=None
        Column labels of the heat maps (tables only).
    images : list of ndarray, default=None
        The images as drawn, when the rows are images.

    Attributes
    ----------
    axes_ : ndarray of matplotlib Axes, 2-D
        (1, explainers) for tables, (images, explainers + 1) for images.
    panels_ : list
        Tables: each explainer's :class:`MaskDisplay`. Images: each explainer's paints,
        one list of AxesImage per explainer.
    figure_ : matplotlib Figure

    Examples
    --------
    >>> import numpy as np
    >>> from sk_sointer.display import ComparisonDisplay
    >>> masks = np.array([[1, 0], [0, 1]])
    >>> display = ComparisonDisplay.from_masks({"A": masks, "B": 1 - masks})
    >>> [ax.get_title() for ax in display.axes_.ravel()]
    ['A', 'B']
    """

    def __init__(self, masks, *, feature_names=None, images=None):
        self.masks = masks
        self.feature_names = feature_names
        self.images = images

    @classmethod
    def from_masks(cls, masks_by_name, *, images=None, feature_names=None, explainer=None,
                   max_rows=20, ax=None):
        """Masks in hand of several explainers on the same rows.

        Parameters
        ----------
        masks_by_name : dict of str to array-like
            Each explainer's masks (or scores) on the same rows, keyed by the panel's title.
        images : array-like, default=None
            The explained images, when the rows are images.
        feature_names, explainer :
            As in :meth:`MaskDisplay.from_masks` (tables only).
        max_rows : int, default=20
            Rows (or images) kept and drawn.
        ax : 2-D array of matplotlib Axes, default=None
            (rows, explainers + 1) Axes with images, (1, explainers) without.

        Returns
        -------
        display : ComparisonDisplay
        """
        names = list(masks_by_name)
        if not names:
            raise ValueError("masks_by_name should name at least one explainer's masks.")
        lengths = {len(masks_by_name[name]) for name in names}
        if len(lengths) != 1:
            raise ValueError("every explainer's masks should cover the same rows; got lengths "
                             f"{sorted(lengths)}.")
        if images is None:
            masks = {name: _table(masks_by_name[name])[0][:max_rows] for name in names}
            columns = _table(masks_by_name[names[0]])[1]
            n_features = masks[names[0]].shape[1]
            feature_names = _feature_names(n_features, feature_names, explainer, columns)
            return cls(masks, feature_names=feature_names).plot(ax=ax)
        images = np.asarray(images)
        if len(images) != lengths.pop():
            raise ValueError("images and masks should cover the same rows.")
        shown = images[:max_rows]
        drawn, masks = None, {}
        for name in names:
            shown_masks = np.asarray(masks_by_name[name])[:max_rows]
            drawn, masks[name] = _images_and_masks(shown, shown_masks)
        return cls(masks, images=drawn).plot(ax=ax)

    @classmethod
    def from_explainers(cls, explainers, X, *, method="transform", feature_names=None,
                        max_rows=20, ax=None):
        """Fitted explainers side by side on the same rows ``X``.

        Parameters
        ----------
        explainers : dict of str to fitted explainer
            Keyed by the panel's title.
        X : array-like of shape (n_samples, n_features), or images
            Images (rows of more than one dimension, or flat rows of explainers fitted with
            ``image_shape``) are drawn under their masks.
        method : {"transform", "explain"}, default="transform"
        feature_names, max_rows, ax :
            As in :meth:`from_masks`.

        Returns
        -------
        display : ComparisonDisplay
        """
        if not explainers:
            raise ValueError("explainers should name at least one fitted explainer.")
        rows = X[:max_rows]
        first = next(iter(explainers.values()))
        images = _image_rows(first, rows)
        masks = {name: _explained(explainer, rows, method)
                 for name, explainer in explainers.items()}
        if images.ndim > 2:
            masks = {name: np.asarray(m).reshape(images.shape) for name, m in masks.items()}
            return cls.from_masks(masks, images=images, max_rows=max_rows, ax=ax)
        return cls.from_masks(masks, feature_names=feature_names, explainer=first,
                              max_rows=max_rows, ax=ax)

    def plot(self, ax=None):
        """Draw the panels.

        Parameters
        ----------
        ax : 2-D array of matplotlib Axes, default=None

        Returns
        -------
        display : ComparisonDisplay
        """
        names = list(self.masks)
        if self.images is None:
            axes = _panels(ax, len(names), n_cols=len(names), panel_size=(3.2, 4.0),
                           sharey=True)
            self.panels_ = []
            for panel, name in zip(axes, names):
                self.panels_.append(MaskDisplay(self.masks[name],
                                                feature_names=self.feature_names).plot(ax=panel))
                panel.set_title(name)
            self.axes_, self.figure_ = axes.reshape(1, -1), axes[0].figure
            return self
        n_cols = len(names) + 1
        axes = _panels(ax, len(self.images) * n_cols, n_cols=n_cols, panel_size=(1.6, 1.6))
        axes = axes.reshape(len(self.images), n_cols)
        self.panels_ = [[] for _ in names]
        for i, image in enumerate(self.images):
            axes[i, 0].imshow(image, cmap=None if image.ndim == 3 else "gray")
            axes[i, 0].set_xticks([])
            axes[i, 0].set_yticks([])
            for j, name in enumerate(names):
                self.panels_[j].append(_overlay(axes[i, j + 1], image, self.masks[name][i],
                                                "tab:orange", 0.6))
        axes[0, 0].set_title("image", fontsize="small")
        for j, name in enumerate(names, start=1):
            axes[0, j].set_title(name, fontsize="small")
        self.axes_, self.figure_ = axes, axes[0, 0].figure
        return self


class TargetsDisplay:
    """One selection-frequency panel per explained output of a multi-output model.

    :class:`~sk_sointer.SOInterExplainer` explains one output (``target``) at a time; fit
    one per output and compare which features each output relies on.

    Parameters
    ----------
    displays : dict of str to SelectionFrequencyDisplay
        Each output's selection frequencies, keyed by the panel's title.

    Attributes
    ----------
    axes_ : ndarray of matplotlib Axes
        One per output, titled with the output's name.
    figure_ : matplotlib Figure

    Examples
    --------
    >>> import numpy as np
    >>> from sk_sointer.display import TargetsDisplay
    >>> masks = np.array([[1, 0], [1, 1]])
    >>> display = TargetsDisplay.from_masks({"y1": masks, "y2": 1 - masks})
    >>> display.displays["y2"].frequencies.tolist()
    [[0.0, 0.5]]
    """

    def __init__(self, displays):
        self.displays = displays

    @classmethod
    def from_masks(cls, masks_by_target, *, by=None, feature_names=None, explainer=None,
                   n_cols=3, ax=None):
        """Masks in hand of one explainer per output.

        Parameters
        ----------
        masks_by_target : dict of str to array-like, or a sequence of array-likes
            Masks of each output's explainer on the same rows (a sequence is titled by
            index).
        by : array-like of shape (n_samples,) or dict, default=None
            Labels per row for :class:`SelectionFrequencyDisplay`'s ``by``: one array for
            every panel, or a dict with one per target (e.g. each output's predicted value).
        feature_names, explainer :
            As in :meth:`MaskDisplay.from_masks`.
        n_cols : int, default=3
        ax : sequence of matplotlib Axes, default=None
            One per output.

        Returns
        -------
        display : TargetsDisplay
        """
        if not isinstance(masks_by_target, dict):
            masks_by_target = {f"output {t}": masks for t, masks in enumerate(masks_by_target)}
        if not masks_by_target:
            raise ValueError("masks_by_target should hold at least one output's masks.")
        displays = {}
        for target, masks in masks_by_target.items():
            values, columns = _table(masks)
            names = _feature_names(values.shape[1], feature_names, explainer, columns)
            labels = by.get(target) if isinstance(by, dict) else by
            frequencies, groups, sizes = _frequencies(values, labels)
            displays[str(target)] = SelectionFrequencyDisplay(
                frequencies, feature_names=names, group_labels=None if labels is None else groups,
                group_sizes=None if labels is None else sizes)
        return cls(displays).plot(ax=ax, n_cols=n_cols)

    @classmethod
    def from_explainers(cls, explainers, X, *, by=None, feature_names=None, n_cols=3,
                        ax=None):
        """Fitted explainers, one per output, on the same rows ``X``.

        Parameters
        ----------
        explainers : dict of str to fitted explainer, or a sequence of them
        X : array-like of shape (n_samples, n_features)
        by, feature_names, n_cols, ax :
            As in :meth:`from_masks`.

        Returns
        -------
        display : TargetsDisplay
        """
        if not isinstance(explainers, dict):
            explainers = {f"output {t}": e for t, e in enumerate(explainers)}
        masks = {target: explainer.transform(X) for target, explainer in explainers.items()}
        first = next(iter(explainers.values()), None)
        return cls.from_masks(masks, by=by, feature_names=feature_names, explainer=first,
                              n_cols=n_cols, ax=ax)

    def plot(self, ax=None, *, n_cols=3):
        """Draw one bar chart per output.

        Parameters
        ----------
        ax : sequence of matplotlib Axes, default=None
        n_cols : int, default=3

        Returns
        -------
        display : TargetsDisplay
        """
        targets = list(self.displays)
        axes = _panels(ax, len(targets), n_cols=n_cols, panel_size=(4.0, 3.0), sharey=True)
        for panel, target in zip(axes, targets):
            self.displays[target].plot(ax=panel)
            panel.set_title(str(target))
            if panel.get_subplotspec() is not None and not panel.get_subplotspec().is_first_col():
                panel.set_ylabel("")  # the panels of a row share the axis
        self.axes_, self.figure_ = axes, axes[0].figure
        return self


# -- insertion and deletion --------------------------------------------------------------

class InsertionDeletionDisplay:
    """Insertion and deletion curves of an explainer's scores, with their areas.

    See :func:`sk_sointer.metrics.insertion_deletion_curves` for what the curves measure. Build it with
    :meth:`from_explainer`, or :meth:`from_curves` from values in hand.

    Parameters
    ----------
    fraction : ndarray
        Share of the feature groups inserted or deleted, from 0 to 1.
    insertion, deletion : ndarray
        The model's agreement with its own answer at each ``fraction``.
    insertion_auc, deletion_auc : float
        Areas under the curves.
    name : str, default=None
        The explainer's name, for the legend.

    Attributes
    ----------
    insertion_line_, deletion_line_ : matplotlib Line2D
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure

    Examples
    --------
    >>> from sk_sointer.display import InsertionDeletionDisplay
    >>> display = InsertionDeletionDisplay.from_curves([0, 0.5, 1], [0.5, 1, 1], [1, 0.5, 0.5])
    >>> display.insertion_auc, display.deletion_auc
    (0.875, 0.625)
    >>> display.insertion_line_.get_ydata().tolist()
    [0.5, 1.0, 1.0]
    """

    def __init__(self, fraction, insertion, deletion, *, insertion_auc, deletion_auc,
                 name=None):
        self.fraction = fraction
        self.insertion = insertion
        self.deletion = deletion
        self.insertion_auc = insertion_auc
        self.deletion_auc = deletion_auc
        self.name = name

    @classmethod
    def from_curves(cls, fraction, insertion, deletion, *, name=None, ax=None):
        """Curves in hand (e.g. a :func:`sk_sointer.metrics.insertion_deletion_curves` result); their areas
        are computed by the trapezoid rule.

        Parameters
        ----------
        fraction : array-like of shape (n_points,)
            Share of the groups inserted or deleted, increasing from 0 to 1.
        insertion, deletion : array-like of shape (n_points,)
        name : str, default=None
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : InsertionDeletionDisplay
        """
        fraction, insertion, deletion = (np.asarray(v, dtype=float).ravel()
                                         for v in (fraction, insertion, deletion))
        if not fraction.shape == insertion.shape == deletion.shape or fraction.size < 2:
            raise ValueError(
                "fraction, insertion and deletion should be 1-D of one length (2 points at "
                f"least); got lengths {fraction.size}, {insertion.size} and {deletion.size}."
            )
        if not all(np.isfinite(v).all() for v in (fraction, insertion, deletion)):
            raise ValueError("fraction, insertion and deletion should be finite; got NaN or "
                             "infinite values.")
        if fraction.min() < 0 or fraction.max() > 1 or np.any(np.diff(fraction) <= 0):
            raise ValueError(
                "fraction should increase within [0, 1] (shares of the groups inserted or "
                f"deleted); got values from {fraction.min():g} to {fraction.max():g}"
                f"{'' if np.all(np.diff(fraction) > 0) else ', not increasing'}."
            )
        return cls(fraction, insertion, deletion, insertion_auc=float(auc(fraction, insertion)),
                   deletion_auc=float(auc(fraction, deletion)), name=name).plot(ax=ax)

    @classmethod
    def from_explainer(cls, explainer, X, *, model=None, n_steps=None, name=None, ax=None):
        """The curves of a fitted explainer's scores on ``X``.

        Parameters
        ----------
        explainer : fitted explainer
        X : array-like of shape (n_samples, n_features), or images as given to ``fit``
        model, n_steps :
            As in :func:`sk_sointer.metrics.insertion_deletion_curves`.
        name : str, default=None
            For the legend; default: the explainer's class name.
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : InsertionDeletionDisplay
        """
        curves = insertion_deletion_curves(explainer, X, model=model, n_steps=n_steps)
        name = type(explainer).__name__ if name is None else name
        return cls(curves.fraction, curves.insertion, curves.deletion,
                   insertion_auc=curves.insertion_auc, deletion_auc=curves.deletion_auc,
                   name=name).plot(ax=ax)

    def plot(self, ax=None, *, name=None):
        """Draw both curves, their areas in the legend.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Where to draw; several explainers' displays can share one.
        name : str, default=None
            For the legend; default: ``self.name``.

        Returns
        -------
        display : InsertionDeletionDisplay
        """
        ax = _axes(ax, figsize=(4.5, 3.2))
        name = self.name if name is None else name
        prefix = "" if name is None else f"{name}: "
        (self.insertion_line_,) = ax.plot(
            self.fraction, self.insertion, marker=".",
            label=f"{prefix}insertion (AUC = {self.insertion_auc:.2f})")
        (self.deletion_line_,) = ax.plot(
            self.fraction, self.deletion, marker=".", linestyle="--",
            label=f"{prefix}deletion (AUC = {self.deletion_auc:.2f})")
        ax.set_xlabel("fraction of features, top-ranked first")
        ax.set_ylabel("agreement with the model")
        ax.set_xlim(0, 1)
        ax.legend(fontsize="small")
        self.ax_, self.figure_ = ax, ax.figure
        return self
