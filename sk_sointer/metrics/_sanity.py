"""Does an explanation depend on the model? Stability and sanity checks of masks.

- :func:`max_sensitivity`: how much an explainer's scores move when the row moves a little
  (Yeh et al. 2019), as MEED's SEN reports it;
- :func:`mask_similarity` and :func:`randomized_model`: Adebayo et al.'s (2018) model
  randomisation test for amortized explainers. Fit the explainer again on a copy of the
  model with random weights; masks that stay similar to the original ones do not depend
  on what the model learnt.
"""

import copy
import inspect

import numpy as np
import torch
from sklearn.utils import check_array, check_random_state

from .._layout import flatten_rows


def max_sensitivity(explainer, X, *, radius=0.2, n_samples=50, random_state=0):
    """Mean over rows of the largest relative change of the scores under small noise.

    For each row ``x``, ``max_j ||phi(x + delta_j) - phi(x)|| / ||phi(x)||`` over
    ``n_samples`` draws ``delta_j`` uniform in ``[-radius, radius]`` per feature, in the
    units of ``X`` (MEED's SEN, as a fraction: the paper reports 100 times it, with
    ``radius=0.2`` on pixels in [0, 1]). This is the formula, without the running-max
    slips of the reference implementations. Lower is more stable.

    Parameters
    ----------
    explainer : fitted explainer or callable
        ``phi``: an explainer's :meth:`explain` (or any callable from rows to scores of
        the same shape). An explainer that reads the black box's output
        (:class:`~sk_sointer.MEEDExplainer`) gets the output on the unperturbed row, so
        that only the row moves.
    X : array-like of shape (n_samples, n_features), or images as the explainer takes
        A table's raw frame moves in its number columns only (each in its own units; an
        empty cell stays empty); its text, category, boolean and date columns stay.
    radius : float, default=0.2
    n_samples : int, default=50
    random_state : int, RandomState instance or None, default=0

    Returns
    -------
    sensitivity : float
    """
    explain = getattr(explainer, "explain", explainer)
    if hasattr(X, "columns") and hasattr(X, "dtypes"):  # a frame: move its number columns
        from pandas.api import types as pd_api  # a frame means pandas is there

        numbers = [name for name, dtype in X.dtypes.items()
                   if pd_api.is_numeric_dtype(dtype) and not pd_api.is_bool_dtype(dtype)]

        def move(noise):
            moved = X.copy()
            moved[numbers] = X[numbers].astype(np.float64) + noise[:, : len(numbers)]
            return moved
        shape, dtype = (len(X), len(numbers)), np.float64
    else:
        X = np.asarray(X)
        if not np.issubdtype(X.dtype, np.floating):
            X = X.astype(np.float32)
        move, shape, dtype = (lambda noise: X + noise), X.shape, X.dtype
    keywords = {}
    if "outputs" in inspect.signature(explain).parameters:
        # The model's outputs on the unperturbed rows, as it takes them from the explainer
        # (a table's rows encoded).
        rows = (explainer._validate_transform_input(X)
                if hasattr(explainer, "_validate_transform_input") else flatten_rows(X)[0])
        keywords["outputs"] = explainer.black_box_.predict(rows)
    rng = check_random_state(random_state)
    reference = np.asarray(explain(X, **keywords), dtype=np.float64).reshape(len(X), -1)
    norms = np.linalg.norm(reference, axis=1)
    worst = np.zeros(len(X))
    for _ in range(n_samples):
        noise = rng.uniform(-radius, radius, size=shape).astype(dtype)
        moved = np.asarray(explain(move(noise), **keywords), dtype=np.float64).reshape(len(X), -1)
        worst = np.maximum(worst, np.linalg.norm(moved - reference, axis=1))
    return float(np.mean(worst / np.where(norms > 0, norms, 1.0)))


def mask_similarity(masks, other_masks, *, metric="cosine"):
    """Mean per-row similarity of two sets of 0/1 masks of the same rows.

    ``"cosine"``: ``|S ∩ S'| / sqrt(|S| |S'|)`` (for k-hot masks ``|S ∩ S'| / k``; chance is
    about ``k / n_features``); ``"pearson"``: the correlation of the two 0/1 vectors
    (chance is 0; 0 for a row where either mask is constant). MEED reports the cosine
    between masks of explainers fitted on a model and on its randomised copy: lower means
    the explanations depend on the model.

    Parameters
    ----------
    masks, other_masks : array-like of the same shape (n_samples, ...)
    metric : {"cosine", "pearson"}, default="cosine"

    Returns
    -------
    similarity : float
    """
    if metric not in ("cosine", "pearson"):
        raise ValueError(f"metric should be 'cosine' or 'pearson'; got {metric!r}.")
    a = check_array(np.reshape(masks, (len(masks), -1)), dtype=np.float64, input_name="masks") > 0
    b = check_array(np.reshape(other_masks, (len(other_masks), -1)), dtype=np.float64,
                    input_name="other_masks") > 0
    if a.shape != b.shape:
        raise ValueError(f"masks and other_masks should have the same shape; got {a.shape} "
                         f"and {b.shape}.")
    a, b = a.astype(np.float64), b.astype(np.float64)
    if metric == "cosine":
        norms = np.sqrt(a.sum(axis=1) * b.sum(axis=1))
        return float(np.mean(np.divide((a * b).sum(axis=1), norms, out=np.zeros(len(a)),
                                       where=norms > 0)))
    a, b = a - a.mean(axis=1, keepdims=True), b - b.mean(axis=1, keepdims=True)
    norms = np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    return float(np.mean(np.divide((a * b).sum(axis=1), norms, out=np.zeros(len(a)),
                                   where=norms > 0)))


def randomized_model(model, *, random_state=0):
    """A copy of a torch module with every layer's weights drawn afresh.

    Every submodule with a ``reset_parameters`` method (linear, convolution, embedding,
    normalisation layers) is re-initialised, under a torch seed drawn from
    ``random_state``; the model is left untouched.

    Parameters
    ----------
    model : torch.nn.Module
    random_state : int, RandomState instance or None, default=0

    Returns
    -------
    randomized : torch.nn.Module
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"randomized_model takes a torch module; got {type(model).__name__}.")
    copied = copy.deepcopy(model)
    seed = int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for module in copied.modules():
            if hasattr(module, "reset_parameters"):
                module.reset_parameters()
    return copied
