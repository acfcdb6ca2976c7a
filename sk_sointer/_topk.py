"""k-subset masks: random ones, the level an explanation must beat."""

import numpy as np
from sklearn.utils import check_random_state


def random_masks(n_rows, n_features, k, *, groups=None, random_state=None):
    """Masks keeping ``k`` features per row, drawn uniformly without replacement.

    The level an explanation must beat: scored with :func:`posthoc_accuracy` (or EVAL-X),
    random masks of the same sizes tell how much of an explainer's fidelity comes from the
    number of features it keeps rather than from which ones.

    Parameters
    ----------
    n_rows : int
        Number of masks.
    n_features : int
        Width of a mask (the flattened row: pixels of an image, tokens of a text).
    k : int or array-like of shape (n_rows,)
        Features (or groups, with ``groups``) kept per row: one number for every row, or
        one per row (to match a thresholded explainer's varying sizes).
    groups : array-like of shape (n_features,), default=None
        Group id of every feature (image patches, the columns of one category). When
        given, ``k`` groups are drawn per row and every feature of a drawn group is kept.
    random_state : int, RandomState instance or None, default=None
        Seeds the draws.

    Returns
    -------
    masks : ndarray of shape (n_rows, n_features), dtype float32
        1 for a kept feature, 0 otherwise.

    Examples
    --------
    >>> from sk_sointer.metrics import random_masks
    >>> random_masks(3, 5, 2, random_state=0).sum(axis=1)
    array([2., 2., 2.], dtype=float32)
    """
    if groups is None:
        unit_of = np.arange(n_features)
    else:
        unit_of = np.unique(np.asarray(groups), return_inverse=True)[1].ravel()
        if unit_of.shape[0] != n_features:
            raise ValueError(f"groups has {unit_of.shape[0]} entries; expected n_features = "
                             f"{n_features}.")
    n_units = int(unit_of.max()) + 1 if n_features else 0
    sizes = np.broadcast_to(np.asarray(k), (n_rows,))
    if sizes.size and (sizes.min() < 0 or sizes.max() > n_units):
        raise ValueError(f"k must lie in [0, {n_units}] (the number of "
                         f"{'groups' if groups is not None else 'features'}); got "
                         f"{sizes.min() if sizes.min() < 0 else sizes.max()}.")
    scores = check_random_state(random_state).random_sample((n_rows, n_units))
    ranks = scores.argsort(axis=1).argsort(axis=1)
    kept = ranks < sizes[:, None]
    return kept[:, unit_of].astype(np.float32)
