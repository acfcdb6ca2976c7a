"""Several explainers on the same rows: :class:`ComparisonDisplay`."""

from collections.abc import Mapping

import numpy as np

from ._base import (_explained, _explainers, _feature_names, _label_size, _panels,
                    _positive_int, _table)
from ._image_mask import _image_rows, _images_and_masks, _overlay
from ._mask import MaskDisplay


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
        if not isinstance(masks_by_name, Mapping):
            raise TypeError(
                "masks_by_name should be a dict of each explainer's name and its masks, "
                f"e.g. {{'L2X': masks}}; got {type(masks_by_name).__name__}."
            )
        max_rows = _positive_int("max_rows", max_rows)
        names = list(masks_by_name)
        if not names:
            raise ValueError("masks_by_name should name at least one explainer's masks.")
        lengths = {len(masks_by_name[name]) for name in names}
        if len(lengths) != 1:
            raise ValueError("every explainer's masks should cover the same rows; got lengths "
                             f"{sorted(lengths)}.")
        if images is None:
            masks = {name: _table(masks_by_name[name], f"masks_by_name[{name!r}]")[0][:max_rows]
                     for name in names}
            widths = {name: values.shape[1] for name, values in masks.items()}
            if len(set(widths.values())) != 1:
                raise ValueError("every explainer's masks should have the same features (columns);"
                                 f" got {widths}.")
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
        explainers = _explainers(explainers)
        max_rows = _positive_int("max_rows", max_rows)
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
            # a panel widens with the columns (0.18 inch each past 12), its names below
            n_features = len(self.feature_names) if self.feature_names is not None else 0
            longest = max(map(len, map(str, self.feature_names or ["x"])))
            size = (max(3.2, 0.18 * n_features + 1.0), 4.0 + min(0.065 * longest, 2.5))
            axes = _panels(ax, len(names), n_cols=len(names), panel_size=size, sharey=True,
                           layout="constrained")
            self.panels_ = []
            for panel, name in zip(axes, names):
                self.panels_.append(MaskDisplay(self.masks[name],
                                                feature_names=self.feature_names).plot(ax=panel))
                panel.set_title(name)
            if n_features:  # every panel's names alike, at the size the narrowest allows
                size = min(_label_size(panel, n_features) for panel in axes)
                for panel in axes:
                    for label in panel.get_xticklabels():
                        label.set_fontsize(min(size, label.get_fontsize()))
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
