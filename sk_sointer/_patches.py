"""Feature groups of flattened images: one group a patch."""

from ._layout import patch_groups as _patch_groups


def patch_groups(image_shape, patch_size):
    """Group id of every value of a flattened image: the patch it falls in.

    Pass the result as an explainer's ``groups`` to select patches of images given as flat
    rows (``patch_size=`` does the same from ``image_shape``), or to compare other masks
    patch by patch.

    Parameters
    ----------
    image_shape : tuple of int
        ``(channels, height, width)`` of the images; the rows hold their values in C order.
    patch_size : int or tuple of int
        Side of the square patches, or ``(height, width)``. Patches at the right and bottom
        edges are smaller when the size does not divide the image's.

    Returns
    -------
    groups : ndarray of shape (channels * height * width,)
        The patch of each value, patches numbered row by row; every channel of a pixel is
        in the pixel's patch.

    Examples
    --------
    >>> from sk_sointer import patch_groups
    >>> patch_groups((1, 4, 4), 2).reshape(4, 4)
    array([[0, 0, 1, 1],
           [0, 0, 1, 1],
           [2, 2, 3, 3],
           [2, 2, 3, 3]])
    """
    return _patch_groups(image_shape, patch_size)
