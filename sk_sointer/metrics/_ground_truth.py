"""Ground-truth metrics for synthetic data, where the relevant features of every row are known.

``relevant`` is the per-row ground truth returned by :mod:`sk_sointer.datasets`; like
scikit-learn's metrics, every function takes the reference first and the explainer's output
second.
"""

import numbers

import numpy as np
from sklearn.utils import check_array, check_random_state

from ..datasets import CONTROL_FLOW_FEATURE

# INVASE's guard against empty denominators; kept so rates match published numbers.
_EPS = 1e-8


def _check_2d(array, name):
    return check_array(array, dtype="numeric", ensure_all_finite=True, input_name=name)


def _check_relevant(relevant, other, other_name):
    """Validate the ground truth and an explainer output of the same shape."""
    relevant = _check_2d(relevant, "relevant")
    other = _check_2d(other, other_name)
    if relevant.shape != other.shape:
        raise ValueError(
            f"relevant and {other_name} must have the same shape; got "
            f"{relevant.shape} and {other.shape}."
        )
    if relevant.dtype != bool and not np.isin(relevant, (0, 1)).all():
        raise ValueError(
            "relevant must be a binary mask (bool or 0/1 values); got values "
            f"{np.unique(relevant)[:5]}."
        )
    return relevant.astype(bool), other


def median_rank(relevant, scores, *, random_state=0):
    """Mean over rows of the median rank of the relevant features, as in L2X.

    In every row the features are ranked by decreasing score (rank 1 = highest), ties
    broken uniformly at random; the row's statistic is the median of the ranks of its
    relevant features, and the rows' statistics are averaged. Lower is better.

    Read more in the L2X paper, Section 4.1 and Figure 3.

    Parameters
    ----------
    relevant : array-like of shape (n_samples, n_features)
        Ground-truth mask (bool or 0/1). Every row needs at least one relevant feature.

    scores : array-like of shape (n_samples, n_features)
        The explainer's masks or real-valued importance scores; higher means more
        important.

    random_state : int, RandomState instance or None, default=0
        Seeds the tie-breaking, so that repeated calls give the same value by default.

    Returns
    -------
    rank : float
        Mean of the per-row medians, between (k + 1) / 2 and n_features - (k - 1) / 2
        for rows with k relevant features.

    See Also
    --------
    true_positive_rate : Fraction of the relevant features a mask selects.

    Notes
    -----
    When the scores are masks with exactly k ones and each row selects exactly its k
    relevant features, the result is (k + 1) / 2 whatever the tie-breaking: 1.5 for XOR,
    2.5 for orange skin and nonlinear additive, 3.0 for switch. L2X ranks the masks,
    not the logits behind them; ranking real-valued scores instead gives lower values,
    so pass masks to compare with the paper. Ties are broken by a random permutation of
    each row followed by a stable sort, so a tie never favours a column by its position.

    References
    ----------
    .. [1] J. Chen, L. Song, M. J. Wainwright and M. I. Jordan, "Learning to Explain: An
       Information-Theoretic Perspective on Model Interpretation", ICML 2018.

    Examples
    --------
    >>> from sk_sointer.metrics import median_rank
    >>> relevant = [[1, 1, 0, 0], [0, 1, 1, 0]]
    >>> median_rank(relevant, [[1, 1, 0, 0], [0, 1, 1, 0]])
    1.5
    >>> median_rank(relevant, [[0.9, 0.1, 0.5, 0.3], [0.4, 0.3, 0.2, 0.1]])
    2.5
    """
    relevant, scores = _check_relevant(relevant, scores, "scores")
    n_relevant = relevant.sum(axis=1)
    if not n_relevant.all():
        empty = np.flatnonzero(n_relevant == 0)
        raise ValueError(
            f"median_rank needs at least one relevant feature per row; rows "
            f"{empty[:5].tolist()} have none."
        )
    rng = check_random_state(random_state)
    n_samples, n_features = scores.shape
    rows = np.arange(n_samples)[:, None]

    # A uniformly random permutation per row (argsort of iid uniforms), vectorised.
    perm = np.argsort(rng.random_sample((n_samples, n_features)), axis=1)
    permuted = -scores.astype(np.float64)[rows, perm]
    order = np.argsort(permuted, axis=1, kind="stable")
    ranks = np.empty((n_samples, n_features), dtype=np.float64)
    ranks[rows, perm[rows, order]] = np.arange(1, n_features + 1)

    # Median over a varying number of entries per row: push the irrelevant ranks to the
    # end and average the two middle relevant ones (equal when the count is odd).
    sorted_ranks = np.sort(np.where(relevant, ranks, np.inf), axis=1)
    lower = sorted_ranks[rows[:, 0], (n_relevant - 1) // 2]
    upper = sorted_ranks[rows[:, 0], n_relevant // 2]
    return float(np.mean((lower + upper) / 2))


def true_positive_rate(relevant, masks):
    """Mean over rows of the fraction of relevant features that the mask selects.

    For a row with ground truth G and selection S the rate is
    ``|S & G| / (|G| + 1e-8)``; the function returns the mean over rows, in [0, 1].
    Higher is better.

    Read more in the REAL-X paper, Section 5.1.

    Parameters
    ----------
    relevant : array-like of shape (n_samples, n_features)
        Ground-truth mask (bool or 0/1).

    masks : array-like of shape (n_samples, n_features)
        The explainer's selections; any value > 0 counts as selected.

    Returns
    -------
    tpr : float
        Mean true-positive rate, a fraction (REAL-X and INVASE report percentages).

    See Also
    --------
    false_discovery_rate : The companion rate over the selected features.

    Notes
    -----
    The 1e-8 in the denominator is INVASE's; it makes a row without relevant features
    count as 0, and a perfect mask score 1 - O(1e-9) rather than exactly 1.

    References
    ----------
    .. [1] N. Jethani, M. Sudarshan, Y. Aphinyanaphongs and R. Ranganath, "Have We
       Learned to Explain?: How Interpretability Methods Can Learn to Encode
       Predictions in their Interpretations", AISTATS 2021.
    .. [2] J. Yoon, J. Jordon and M. van der Schaar, "INVASE: Instance-wise Variable
       Selection using Neural Networks", ICLR 2019.

    Examples
    --------
    >>> from sk_sointer.metrics import true_positive_rate
    >>> relevant = [[1, 1, 0, 0], [0, 1, 1, 0]]
    >>> round(true_positive_rate(relevant, [[1, 0, 1, 0], [0, 1, 1, 0]]), 6)
    0.75
    """
    relevant, masks = _check_relevant(relevant, masks, "masks")
    selected = masks > 0
    hits = np.sum(selected & relevant, axis=1)
    return float(np.mean(hits / (relevant.sum(axis=1) + _EPS)))


def false_discovery_rate(relevant, masks):
    """Mean over rows of the fraction of selected features that are not relevant.

    For a row with ground truth G and selection S the rate is
    ``|S - G| / (|S| + 1e-8)``, which is 0 for an empty selection; such rows are kept in
    the mean. The function returns a fraction in [0, 1]. Lower is better.

    Read more in the REAL-X paper, Section 5.1.

    Parameters
    ----------
    relevant : array-like of shape (n_samples, n_features)
        Ground-truth mask (bool or 0/1).

    masks : array-like of shape (n_samples, n_features)
        The explainer's selections; any value > 0 counts as selected.

    Returns
    -------
    fdr : float
        Mean false-discovery rate, a fraction (REAL-X and INVASE report percentages).

    See Also
    --------
    true_positive_rate : The companion rate over the relevant features.

    References
    ----------
    .. [1] N. Jethani, M. Sudarshan, Y. Aphinyanaphongs and R. Ranganath, "Have We
       Learned to Explain?: How Interpretability Methods Can Learn to Encode
       Predictions in their Interpretations", AISTATS 2021.
    .. [2] J. Yoon, J. Jordon and M. van der Schaar, "INVASE: Instance-wise Variable
       Selection using Neural Networks", ICLR 2019.

    Examples
    --------
    >>> from sk_sointer.metrics import false_discovery_rate
    >>> relevant = [[1, 1, 0, 0], [0, 1, 1, 0]]
    >>> round(false_discovery_rate(relevant, [[1, 0, 1, 0], [0, 0, 0, 0]]), 6)
    0.25
    """
    relevant, masks = _check_relevant(relevant, masks, "masks")
    selected = masks > 0
    false = np.sum(selected & ~relevant, axis=1)
    return float(np.mean(false / (selected.sum(axis=1) + _EPS)))


def control_flow_selection_rate(masks, *, feature=CONTROL_FLOW_FEATURE):
    """Fraction of rows whose mask selects the control-flow feature.

    In REAL-X's S1-S3 the control-flow feature decides which function generates the
    label, so it is relevant in every row; an explainer that drops it has not explained
    the prediction (REAL-X, Lemma 2). Higher is better.

    Read more in the REAL-X paper, Section 5.1.

    Parameters
    ----------
    masks : array-like of shape (n_samples, n_features)
        The explainer's selections; any value > 0 counts as selected.

    feature : int, default=10
        Column of the control-flow feature; the default is
        :data:`sk_sointer.datasets.CONTROL_FLOW_FEATURE`.

    Returns
    -------
    rate : float
        Fraction of rows in which ``feature`` is selected (REAL-X reports a percentage).

    See Also
    --------
    sk_sointer.datasets.make_control_flow : The data sets this rate is meant for.

    References
    ----------
    .. [1] N. Jethani, M. Sudarshan, Y. Aphinyanaphongs and R. Ranganath, "Have We
       Learned to Explain?: How Interpretability Methods Can Learn to Encode
       Predictions in their Interpretations", AISTATS 2021.

    Examples
    --------
    >>> from sk_sointer.metrics import control_flow_selection_rate
    >>> masks = [[1, 0, 1], [1, 1, 0]]
    >>> control_flow_selection_rate(masks, feature=2)
    0.5
    """
    masks = _check_2d(masks, "masks")
    n_features = masks.shape[1]
    if (
        not isinstance(feature, numbers.Integral)
        or isinstance(feature, bool)
        or not 0 <= feature < n_features
    ):
        raise ValueError(
            f"feature must be an int in [0, n_features - 1] = [0, {n_features - 1}]; "
            f"got {feature!r}."
        )
    return float(np.mean(masks[:, feature] > 0))
