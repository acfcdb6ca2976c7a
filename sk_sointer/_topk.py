"""k-subset masks: the top k of scores (every explanation), and random ones (the level an
explanation must beat)."""

import numpy as np
import torch
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


def topk_mask(scores, k, *, out=None, overwrite_scores=False):
    """k-hot mask of the ``k`` largest scores along the last axis; ties go to lower indices.

    ``scores`` is a tensor (the mask is a tensor of its dtype, on its device) or an ndarray
    (the mask is float32, or written into ``out``, a float array of the scores' shape, and
    returned). The tie-break is deterministic (``torch.topk`` does not promise which of two
    equal scores it returns): of the scores equal to the k-th largest, those of the lowest
    indices are kept. On an ndarray NumPy's partition finds the k-th largest score, faster
    than a sort (and on the CPU than ``torch.topk``): this runs on every explained row. On
    wide rows with a small ``k``, ``k`` rounds of argmax are faster still; they knock each
    winner out of a copy of the scores, or of the scores themselves with
    ``overwrite_scores=True`` (an ndarray the caller no longer needs).
    """
    if isinstance(scores, np.ndarray):
        if out is None:
            out = np.empty(scores.shape, dtype=np.float32)
        return _topk_mask_numpy(scores, k, out, overwrite_scores)
    if out is not None:
        raise TypeError("out is only supported for ndarray scores.")
    # Every score above the k-th largest is kept, and of the scores equal to it the first
    # ones, in index order, until k are kept: no row is asked whether it has a tie, so
    # nothing waits for the device (a training step calls this inside a CUDA graph).
    kth = torch.topk(scores, k, dim=-1).values[..., -1:]
    above = scores > kth
    at = scores == kth
    room = k - above.sum(-1, keepdim=True)
    mask = above | (at & (_running_count(at) <= room))
    return mask.to(scores.dtype)


# Largest k that :func:`topk_mask_of_finite` takes in rounds of argmax (measured up to 10).
ROUNDS_K = 10


def topk_mask_of_finite(scores, k):
    """:func:`topk_mask` of a tensor of *finite* scores, as booleans, by ``k`` rounds of
    argmax, each knocking its winner out (``argmax`` returns the first of equal maxima, so
    ties go to the lower index as there).

    On CUDA, for ``k <= ROUNDS_K``, faster than the top-k and its tie count (an H200:
    0.18 against 0.35 ms at 100,000 x 10 with k = 3, 0.45 against 2.4 ms at 1,000,000 x
    10, 2.1 against 5.6 ms at 100,000 x 1,000 with k = 10). A row with a non-finite score
    gets a mask of no meaning (a knocked-out winner may win again): the caller checks the
    scores, as ``transform``'s device path does before it keeps a chunk."""
    mask = torch.zeros_like(scores, dtype=torch.bool)
    work = scores.clone()
    for _ in range(k):
        best = work.argmax(-1, keepdim=True)
        mask.scatter_(-1, best, True)
        work.scatter_(-1, best, float("-inf"))
    return mask


# Widest rows whose running count an accelerator takes as a product with a triangular matrix.
_TRIANGLE_WIDTH = 256


def _running_count(flags, by_product=None):
    """How many of a row's ``flags`` (booleans) are set up to and including each position.

    ``cumsum`` along the last axis is slow on CUDA for narrow rows: 0.64 ms of the 2.8 ms
    that ``transform`` took on 100,000 rows of ten features (an H200), more than the
    selector's forward pass. On an accelerator, rows up to :data:`_TRIANGLE_WIDTH` wide are
    counted as one product with an upper-triangular matrix of ones instead (exact: sums of
    at most 256 ones in float32). ``by_product`` forces one way or the other."""
    width = flags.shape[-1]
    if by_product is None:
        by_product = flags.device.type != "cpu" and width <= _TRIANGLE_WIDTH
    if not by_product:
        return flags.cumsum(-1)
    triangle = torch.ones(width, width, device=flags.device).triu()
    return flags.to(torch.float32) @ triangle


def topk_masks_of_sizes(scores, sizes):
    """0/1 masks (a tensor of the scores' dtype) of each row's ``sizes`` largest scores
    (``sizes``: a long tensor, one a row); ties go to lower indices, as in
    :func:`topk_mask`."""
    order = torch.argsort(scores, dim=-1, descending=True, stable=True)
    positions = torch.arange(scores.shape[-1], device=scores.device).expand_as(order)
    rank = torch.empty_like(order).scatter_(-1, order, positions)
    return (rank < sizes.unsqueeze(-1)).to(scores.dtype)


def _topk_mask_numpy(scores, k, out, overwrite=False):
    n_features = scores.shape[-1]
    if _rounds_of_argmax_pay(n_features, k) and _topk_by_argmax(scores, k, out, overwrite):
        return out
    kth = np.partition(scores, n_features - k, axis=-1)[..., n_features - k, None]
    mask = scores >= kth
    # Every row keeps at least k, so one count over the whole array finds whether any row
    # kept more; the per-row count (slower than the partition itself) runs only then.
    if np.count_nonzero(mask) != k * (mask.size // max(n_features, 1)):
        tied = np.flatnonzero(np.count_nonzero(mask, axis=-1) != k)
        order = np.argsort(-scores[tied], axis=-1, kind="stable")[:, :k]
        mask[tied] = False
        mask[tied[:, None], order] = True
    # Counting a boolean mask and copying it into ``out`` is faster than comparing into a
    # float ``out`` and counting that.
    np.copyto(out, mask)
    return out


def _rounds_of_argmax_pay(n_features, k):
    """Whether ``k`` rounds of a row-wise argmax beat one partition of each row.

    Measured on one CPU thread (NumPy 2): a partition costs about 50 ns a row plus 2.5 ns a
    score, a round of argmax (with its two scatters) about 60 ns a row plus 0.1 ns a score.
    So the rounds win on wide rows with a small k (k <= 4 of 100 scores, k <= 16 of 1,000)
    and never on rows of ten.
    """
    return k * (60 + 0.1 * n_features) < 50 + 2.5 * n_features


def _topk_by_argmax(scores, k, out, overwrite_scores=False):
    """Top-k into ``out`` by ``k`` rounds of argmax, each knocking its winner out of the
    scores (a scratch copy unless ``overwrite_scores``); whether that worked.

    ``argmax`` returns the first of equal maxima, so ties go to the lower index as in the
    partition path. A row with fewer than ``k`` scores above -inf would pick a knocked-out
    score again: then this gives up (``out`` half written, the scores restored) and the
    caller falls back.
    """
    n_features = scores.shape[-1]
    if not np.issubdtype(scores.dtype, np.floating):
        scores, overwrite_scores = scores.astype(np.float64), True
    if overwrite_scores and scores.flags.c_contiguous and scores.flags.writeable:
        rest = scores.reshape(-1, n_features)
    else:
        rest = np.array(scores, order="C").reshape(-1, n_features)
    mask = out if out.flags.c_contiguous else np.empty(out.shape, dtype=out.dtype)
    flat_mask, flat_rest = mask.reshape(-1), rest.reshape(-1)
    flat_mask[...] = 0
    row_starts = np.arange(0, rest.size, n_features)
    knocked = []
    for _ in range(k):
        winners = rest.argmax(axis=-1)
        winners += row_starts
        values = flat_rest[winners]
        if np.isneginf(values).any():
            for winners, values in reversed(knocked):  # the scores as they were
                flat_rest[winners] = values
            return False
        knocked.append((winners, values))
        flat_mask[winners] = 1
        flat_rest[winners] = -np.inf
    if mask is not out:
        np.copyto(out, mask)
    return True
