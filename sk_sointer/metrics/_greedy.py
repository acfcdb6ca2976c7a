"""The per-row greedy search: a reference that asks the model itself, row by row."""

import numpy as np

from .._model_judge import greedy_subsets


def greedy_masks(explainer, X, k, *, log_weight=0.1, max_rows_per_query=2**15):
    """Per row, the k features chosen greedily by the model's own answers on masked rows.

    A reference for any explainer's masks (the ceiling of a search that queries the model,
    at a cost): starting from no feature, each of ``k`` rounds adds to every row the
    feature (or feature group) whose addition keeps the model's answer on the full row
    best (ties to the lower index), the other features left out as the explainer leaves
    them out for ``score`` and ``check``: at its fill, or, fitted with ``background``,
    filled from each of its background rows in turn, the model's outputs averaged. A row
    costs ``1 + sum_{j<k} (n_groups - j)`` model queries, each masked row times the number
    of background rows.

    Parameters
    ----------
    explainer : fitted explainer
        Gives the model (``black_box_``), how a feature is left out (``masker_``,
        ``background_``), the feature groups and the model's outputs (``output_spec_``);
        its own masks are not used.
    X : array-like of shape (n_samples, n_features), or a DataFrame
        Rows as ``transform`` takes them (a table's raw frame, with its text and empty
        cells, for an explainer fitted on one).
    k : int
        Features (groups) kept per row, at most the number of groups.
    log_weight : float, default=0.1
        Weight of the log-probability of the full row's answer in the reward of a
        discrete output, next to whether the answer is kept.
    max_rows_per_query : int, default=2**15
        Masked rows sent to the model at once.

    Returns
    -------
    masks : ndarray of shape (n_samples, n_features), float32
        0/1 masks over the features (one column per table column, as ``transform``
        gives them), ``k`` groups kept per row.

    See Also
    --------
    random_masks : The level to beat from below.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sk_sointer import L2XExplainer
    >>> from sk_sointer.metrics import greedy_masks
    >>> X = np.random.RandomState(0).randn(200, 3)
    >>> model = LogisticRegression().fit(X, X[:, 0] > 0)
    >>> explainer = L2XExplainer(k=1, max_epochs=1, refine=None).fit(X, black_box=model)
    >>> greedy_masks(explainer, X[:5], k=1)[:, 0]
    array([1., 1., 1., 1., 1.], dtype=float32)
    """
    X = explainer._validate_transform_input(X)
    value = explainer._masked_value()  # the fill or the background rows, as score's
    groups = greedy_subsets(value.predict, X, explainer.masker_, explainer.output_spec_, k,
                            log_weight=log_weight, max_rows_per_query=max_rows_per_query,
                            background=value.background)
    masks = np.asarray(explainer.masker_.expand_raw(groups), dtype=np.float32)
    return explainer.layout_.unflatten(masks)
