"""Scorers that compare an explainer's ``transform`` output with the ground truth."""

from ._ground_truth import false_discovery_rate, median_rank, true_positive_rate


class _TransformScorer:
    """Scorer that compares an explainer's ``transform`` output with the ground truth.

    ``sklearn.metrics.make_scorer`` only accepts ``"predict"``, ``"predict_proba"`` and
    ``"decision_function"`` as a response method, so the few lines it would provide are
    written here. The call signature is the scorer protocol, ``scorer(estimator, X,
    y_true)``, where ``y_true`` is the ``relevant`` mask.
    """

    def __init__(self, score_func, *, greater_is_better=True, **kwargs):
        self._score_func = score_func
        self._sign = 1 if greater_is_better else -1
        self._kwargs = kwargs

    def __call__(self, estimator, X, y_true):
        if y_true is None:
            raise ValueError(
                f"{self!r} needs the ground-truth mask `relevant` as its third "
                "argument; got None."
            )
        masks = estimator.transform(X)
        return self._sign * self._score_func(y_true, masks, **self._kwargs)

    def __repr__(self):
        options = "".join(f", {key}={value!r}" for key, value in self._kwargs.items())
        sign = "" if self._sign > 0 else ", greater_is_better=False"
        return (
            f"make_scorer({self._score_func.__name__}{sign}{options}, "
            "response_method='transform')"
        )


median_rank_scorer = _TransformScorer(median_rank, greater_is_better=False)
"""Scorer ``(explainer, X, relevant)``: minus :func:`median_rank` of the masks."""

tpr_scorer = _TransformScorer(true_positive_rate)
"""Scorer ``(explainer, X, relevant)``: :func:`true_positive_rate` of the masks."""

fdr_scorer = _TransformScorer(false_discovery_rate, greater_is_better=False)
"""Scorer ``(explainer, X, relevant)``: minus :func:`false_discovery_rate`."""
