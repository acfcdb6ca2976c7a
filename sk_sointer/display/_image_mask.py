"""Masks painted over images: :class:`ImageMaskDisplay`, and the image helpers that
:class:`ComparisonDisplay` also draws with."""

import numpy as np

from ._base import (_color, _explained, _labels, _not_an_estimator, _panels, _positive_int,
                    _unit_float)


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
    _not_an_estimator(images, "images", "the images and the explainer's masks of them")
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


def _paint_weights(mask):
    """The opacity of each pixel, 0..1: a mask or scores >= 0 over their largest; signed
    scores from their lowest (0) to their largest (1), since only their order says which
    pixels were relied on; equal nonzero scores all at 1."""
    low, high = mask.min(), mask.max()
    if high == low:
        return np.full(mask.shape, float(high != 0))
    if low >= 0:
        return mask / high
    return (mask - low) / (high - low)


def _overlay(ax, image, mask, color, alpha):
    """``image`` in grey with the pixel ``mask`` (0..1, or scores scaled to it) painted over
    in ``color``; returns the paint's image artist."""
    from matplotlib.colors import to_rgba

    ax.imshow(image, cmap=None if image.ndim == 3 else "gray", interpolation="nearest")
    weight = _paint_weights(mask)
    paint = np.zeros(mask.shape + (4,))
    paint[..., :3] = to_rgba(color)[:3]
    paint[..., 3] = alpha * weight
    artist = ax.imshow(paint, interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])
    return artist


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
            ``explain``'s scores (painted in proportion, the largest at ``alpha``; signed
            scores from the lowest, unpainted, to the largest).
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
        titles = _labels(titles, len(images), "titles", "image")
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
        return cls.from_masks(images, np.asarray(masks).reshape(images.shape), titles=titles,
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
        n_cols = _positive_int("n_cols", n_cols)
        color, alpha = _color("color", color), _unit_float("alpha", alpha)
        titles = _labels(self.titles, len(self.images), "titles", "image")
        if len(self.masks) != len(self.images):
            raise ValueError(f"masks should hold one mask per image ({len(self.images)}); got "
                             f"{len(self.masks)}.")
        axes = _panels(ax, len(self.images), n_cols=n_cols, panel_size=(1.8, 1.9))
        self.overlays_ = []
        for i, panel in enumerate(axes):
            self.overlays_.append(_overlay(panel, self.images[i], self.masks[i], color, alpha))
            if titles is not None:
                panel.set_title(titles[i], fontsize="small")
        self.axes_, self.figure_ = axes, axes[0].figure
        return self
