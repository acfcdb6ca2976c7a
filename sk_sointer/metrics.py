"""Metrics for instance-wise feature selection.

Like scikit-learn's metrics, every function takes the reference first and the
explainer's output second. The scorers call an explainer's ``transform`` and can be
passed as ``scoring`` to model-selection tools.
"""

import numbers

import numpy as np
import torch
from sklearn.base import BaseEstimator, _fit_context
from sklearn.metrics import r2_score, roc_auc_score
from sklearn.utils import check_array, check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from ._networks import MLP, output_loss, output_values
from .base import _INFERENCE_CHUNK, _SkorchEstimatorMixin, _writable_float32
from .black_box import as_black_box, check_outputs, output_agreement
from .datasets import CONTROL_FLOW_FEATURE
from .explainers._realx import RandomMaskPredictorNet

__all__ = [
    "EvalXEvaluator",
    "encoding_gap",
    "posthoc_accuracy",
    "control_flow_selection_rate",
    "false_discovery_rate",
    "fdr_scorer",
    "median_rank",
    "median_rank_scorer",
    "tpr_scorer",
    "true_positive_rate",
]


# Fidelity to the black box
# -------------------------


def posthoc_accuracy(black_box, X, masks):
    """Agreement of the black box on masked rows with the black box on full rows.

    For a classifier, the fraction of rows whose predicted class on ``x ⊙ mask`` (the
    unselected features set to 0) equals the predicted class on ``x``: L2X's post-hoc
    accuracy (Chen et al. 2018, §4.2.1), where the reference is the model's own prediction,
    not a label. For a regressor, the R² of the masked predictions against the full ones.
    Zero-filled inputs may lie outside the data the model was trained on; EVAL-X
    (:class:`EvalXEvaluator`) avoids that.

    Parameters
    ----------
    black_box : model
        Anything :func:`~sk_sointer.as_black_box` accepts.
    X : array-like of shape (n_samples, n_features)
    masks : array-like of shape (n_samples, n_features)
        Selections, 1 for a kept feature.

    Returns
    -------
    score : float
        Higher is better; 1 is perfect.
    """
    X = check_array(X, dtype=np.float32)
    masks = check_array(masks, dtype=np.float32)
    if masks.shape != X.shape:
        raise ValueError(f"masks should have the shape of X {X.shape}; got {masks.shape}.")
    black_box = as_black_box(black_box)
    full = black_box.predict(X)
    return output_agreement(full, black_box.predict(X * masks), black_box.spec)


# Ground-truth metrics for synthetic data
# ---------------------------------------
# ``relevant`` is the per-row ground truth returned by ``sk_sointer.datasets``; these
# metrics only make sense where it is known.

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


# EVAL-X evaluator
# ----------------
# A model trained on random masks, independent of the data, judges selections without
# being fooled by selections that encode the prediction (REAL-X paper, eq. 5). The
# training step is REAL-X's predictor step, imported so that the maths lives in one place.

# Metrics of score_masks for which lower is better; scorers negate them.
_LOWER_IS_BETTER = {"eNLL", "eMSE"}


class EvalXEvaluator(_SkorchEstimatorMixin, BaseEstimator):
    """EVAL-X: an evaluator of feature selections trained only on random masks.

    A predictor ``q_eval(y | x ⊙ r)`` is trained on masks ``r_j ~ Bernoulli(0.5)`` drawn
    independently of the data, so it approximates ``p(y | x_R)`` for every subset ``R`` and
    cannot have learned any link between *which* features are kept and the output. Scoring
    a method's selections with it measures how much the selected values themselves tell
    about the output: a selection that only encodes the prediction in its pattern scores
    near chance (REAL-X's "encoding", Lemma 1), unlike under the method's own predictor.

    Parameters
    ----------
    predictor : callable, default=MLP(hidden_units=(200, 200), batch_norm=True)
        Factory ``(in_features, out_features) -> torch.nn.Module`` of the evaluator network;
        by default the architecture of :class:`~sk_sointer.RealXExplainer`'s predictor.

    append_mask : bool, default=True
        Give the network the mask next to ``x ⊙ mask``, so that a masked feature is told
        apart from an observed 0 (see :class:`~sk_sointer.RealXExplainer`).

    max_epochs : int, default=100
        Passes over the training data (the default matches the predictor-only epochs of
        :class:`~sk_sointer.RealXExplainer`).

    batch_size : int, default=256
        Rows per optimisation step.

    lr : float, default=1e-3
        Initial learning rate; it decays to 0 over ``max_epochs`` (cosine), which the
        random-mask objective needs to resolve small conditional effects.

    weight_decay : float, default=0.0
        L2 penalty on the network's weights (the optimizer's ``weight_decay``).

    optimizer : {"adam", "adamw", "rmsprop", "sgd"} or torch optimizer class, default="adam"
        Optimizer class.

    callbacks : list of skorch callbacks, default=None
        Extra callbacks, e.g. ``skorch.callbacks.EarlyStopping()`` (with ``train_split``);
        the validation loss is the random-mask loss on held-out rows.

    train_split : float, callable or None, default=None
        Fraction of rows held out for validation losses, a skorch split callable, or
        ``None`` to train on every row.

    device : {"auto", "cpu", "cuda"} or str, default="auto"
        Torch device; ``"auto"`` uses CUDA when it is available.

    random_state : int, RandomState instance or None, default=None
        Seeds weight initialisation, shuffling and the random masks.

    verbose : int, default=0
        0: silent; 1: a progress bar over epochs; 2: skorch's per-epoch table.

    Attributes
    ----------
    net_ : RandomMaskPredictorNet
        The fitted skorch net; ``net_.module_`` is the evaluator network.

    black_box_ : BlackBox or None
        The adapted model when ``fit`` received one; it supplies the reference outputs of
        :meth:`score_masks` when no ``y`` is given.

    output_spec_ : OutputSpec
        What the outputs are (classification blocks or regression values).

    n_features_in_ : int
        Number of features seen during fit.

    See Also
    --------
    RealXExplainer : Trains its predictor with the same objective, next to a selector.
    encoding_gap : Own-predictor accuracy minus EVAL-X accuracy of an explainer.

    Notes
    -----
    REAL-X trains the evaluator on the data's true labels; pass them as ``y`` to do the
    same, or pass the black box to judge how well selections explain *its* outputs.

    :meth:`score_masks` compares the evaluator on ``x ⊙ mask`` with a reference: the
    ``y`` it is given (e.g. true labels), else the black box's outputs on the full rows.
    For classification it returns ``eACC`` (argmax agreement with the reference's class;
    soft references are reduced to their argmax), ``eAUROC`` (the reference's class as the
    label; the AUROC of the positive column for two classes, as INVASE does, and the
    micro-average over one-hot columns for more, as the REAL-X code does), ``eNLL`` (the
    cross-entropy to the reference, in nats; ``-log q(y | x ⊙ mask)`` for labels) and
    ``mean_log_likelihood = -eNLL``. Multi-output classifiers average each metric over
    their outputs. For regression it returns ``eMSE``, ``eR2`` and
    ``mean_log_likelihood`` (minus the squared error summed over outputs, the training
    objective). eNLL is the most sensitive of the three to omitted features: on REAL-X's
    S1-S3, dropping the control-flow feature costs under a point of accuracy but 0.06-0.1
    nats.

    References
    ----------
    .. [1] N. Jethani, M. Sudarshan, Y. Aphinyanaphongs and R. Ranganath, "Have We
       Learned to Explain?: How Interpretability Methods Can Learn to Encode Predictions
       in their Interpretations", AISTATS 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from sk_sointer.metrics import EvalXEvaluator
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(1000, 4).astype(np.float32)
    >>> y = (X[:, 0] > 0).astype(int)
    >>> evaluator = EvalXEvaluator(max_epochs=30, random_state=0).fit(X, y)
    >>> keep_first = np.tile([1.0, 0.0, 0.0, 0.0], (1000, 1))
    >>> keep_last = np.tile([0.0, 0.0, 0.0, 1.0], (1000, 1))
    >>> evaluator.score_masks(X, keep_first, y)["eACC"] > 0.9
    True
    >>> evaluator.score_masks(X, keep_last, y)["eACC"] < 0.6
    True
    """

    _parameter_constraints: dict = {
        **_SkorchEstimatorMixin._parameter_constraints,
        "predictor": [callable],
        "append_mask": ["boolean"],
    }

    def __init__(
        self,
        *,
        predictor=MLP(hidden_units=(200, 200), batch_norm=True),
        append_mask=True,
        max_epochs=100,
        batch_size=256,
        lr=1e-3,
        weight_decay=0.0,
        optimizer="adam",
        callbacks=None,
        train_split=None,
        device="auto",
        random_state=None,
        verbose=0,
    ):
        self.predictor = predictor
        self.append_mask = append_mask
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.optimizer = optimizer
        self.callbacks = callbacks
        self.train_split = train_split
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def _build_net(self, n_features, spec, **net_params):
        return RandomMaskPredictorNet(
            self.predictor,
            n_features=n_features,
            output_spec=spec,
            append_mask=self.append_mask,
            **net_params,
        )

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None, *, black_box=None):
        """Train the evaluator on random masks of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows.
        y : model or array-like of shape (n_samples,) or (n_samples, n_outputs), default=None
            What to predict: true labels (as REAL-X does), the black box's outputs on ``X``,
            or the model itself.
        black_box : model, default=None
            The model, given by keyword (the form for cross-validation tools).

        Returns
        -------
        self : object
            The fitted evaluator.
        """
        return self._fit(X, y, black_box)

    def predict_masked(self, X, masks):
        """The evaluator's outputs on ``x ⊙ mask``: probabilities, or values for regression.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        masks : array-like of shape (n_samples, n_features)
            0/1 selections (any value > 0 counts as selected).

        Returns
        -------
        outputs : ndarray of shape (n_samples, n_outputs), float32
        """
        X, masks = self._check_masked_input(X, masks)
        return output_values(self._raw_masked(X, masks), self.output_spec_).numpy()

    def score_masks(self, X, masks, y=None):
        """EVAL-X scores of selections: eACC, eAUROC, eNLL and the mean log-likelihood.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows the masks explain.
        masks : array-like of shape (n_samples, n_features)
            0/1 selections, e.g. an explainer's ``transform(X)``.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs), default=None
            Reference outputs, e.g. true labels. Default: the black box's outputs on ``X``
            (only when ``fit`` received the model).

        Returns
        -------
        scores : dict
            ``{"eACC", "eAUROC", "eNLL", "mean_log_likelihood"}`` for classification,
            ``{"eMSE", "eR2", "mean_log_likelihood"}`` for regression; see Notes of the
            class. An eAUROC that is undefined (one class in the reference) is NaN.
        """
        X, masks = self._check_masked_input(X, masks)
        reference = self._reference(X, y)
        raw = self._raw_masked(X, masks)
        spec = self.output_spec_
        per_row = output_loss(raw, torch.as_tensor(reference), spec, reduction="none").numpy()
        predicted = output_values(raw, spec).numpy()
        if spec.task != "classification":
            return {
                "eMSE": float(np.mean((predicted - reference) ** 2)),
                "eR2": float(r2_score(reference, predicted)),
                "mean_log_likelihood": float(-np.mean(per_row)),
            }
        accuracy, auroc = [], []
        for start, stop in spec.blocks:
            labels = reference[:, start:stop].argmax(axis=1)
            proba = predicted[:, start:stop]
            accuracy.append(np.mean(proba.argmax(axis=1) == labels))
            auroc.append(_auroc(labels, proba))
        n_blocks = len(spec.blocks)
        return {
            "eACC": float(np.mean(accuracy)),
            "eAUROC": float(np.mean(auroc)),
            "eNLL": float(np.mean(per_row) / n_blocks),
            "mean_log_likelihood": float(-np.mean(per_row) / n_blocks),
        }

    def make_scorer(self, metric="eACC"):
        """A scorer ``(explainer, X, y=None) -> float`` from one of :meth:`score_masks`'s keys.

        The scorer explains ``X`` with ``explainer.transform`` and scores the masks; for
        ``"eNLL"`` and ``"eMSE"`` it returns minus the value, so that higher is better and
        it can be passed as ``scoring`` to model-selection tools (where ``y`` is the
        split of the second argument given to ``fit``).

        Parameters
        ----------
        metric : {"eACC", "eAUROC", "eNLL", "mean_log_likelihood", "eMSE", "eR2"}, \
                default="eACC"

        Returns
        -------
        scorer : callable
        """
        known = {"eACC", "eAUROC", "eNLL", "mean_log_likelihood", "eMSE", "eR2"}
        if metric not in known:
            raise ValueError(f"metric should be one of {sorted(known)}; got {metric!r}.")
        return _EvalXScorer(self, metric)

    def _check_masked_input(self, X, masks):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=[np.float32, np.float64], reset=False)
        masks = check_array(masks, dtype=np.float32, input_name="masks")
        if masks.shape != X.shape:
            raise ValueError(
                f"masks must have the shape of X, {X.shape}; got {masks.shape}."
            )
        return _writable_float32(X), (masks > 0).astype(np.float32)

    def _raw_masked(self, X, masks):
        chunks = [
            self.net_.predict_masked(
                torch.as_tensor(X[start : start + _INFERENCE_CHUNK]),
                torch.as_tensor(masks[start : start + _INFERENCE_CHUNK]),
            ).float().cpu()
            for start in range(0, X.shape[0], _INFERENCE_CHUNK)
        ]
        return torch.cat(chunks)

    def _reference(self, X, y):
        if y is not None:
            reference, _ = check_outputs(y, X.shape[0], spec=self.output_spec_)
            return reference.astype(np.float32, copy=False)
        if self.black_box_ is None:
            raise ValueError(
                "EvalXEvaluator was fitted on outputs only, so score_masks needs the "
                "reference outputs on X as y (true labels or the black box's outputs)."
            )
        return self.black_box_.predict(X).astype(np.float32, copy=False)


def _auroc(labels, proba):
    if np.unique(labels).size < 2:
        return np.nan
    if proba.shape[1] == 2:
        return roc_auc_score(labels, proba[:, 1])
    onehot = np.eye(proba.shape[1])[labels]
    return roc_auc_score(onehot, proba, average="micro")


class _EvalXScorer:
    """Scorer protocol ``(explainer, X, y=None)`` over :meth:`EvalXEvaluator.score_masks`."""

    def __init__(self, evaluator, metric):
        self.evaluator = evaluator
        self.metric = metric

    def __call__(self, explainer, X, y=None):
        scores = self.evaluator.score_masks(X, explainer.transform(X), y)
        sign = -1 if self.metric in _LOWER_IS_BETTER else 1
        return sign * scores[self.metric]

    def __repr__(self):
        return f"{self.evaluator!r}.make_scorer({self.metric!r})"


def encoding_gap(evaluator, explainer, X, y=None):
    """Accuracy of an explainer's own predictor minus EVAL-X's, on the same selections.

    A method that trains its predictor on its own selections (L2X, INVASE: a "JAM") can
    make the *pattern* of the selection carry the prediction. Its predictor then reads
    the answer off which features are kept and scores well, while an evaluator trained on
    random masks (which carry no such code) does not. A gap well above the evaluator's
    own error (a few points) signals encoding (REAL-X, §4 and Lemma 1).

    Parameters
    ----------
    evaluator : EvalXEvaluator
        A fitted evaluator.
    explainer : fitted explainer
        An explainer of this package (it needs ``transform`` and its own predictor).
    X : array-like of shape (n_samples, n_features)
        Rows to explain.
    y : array-like, default=None
        Reference outputs, e.g. true labels; default: the evaluator's black box on ``X``.

    Returns
    -------
    gap : float
        ``accuracy(own predictor on x ⊙ mask) - eACC``, in [-1, 1].

    See Also
    --------
    EvalXEvaluator.score_masks : The eACC and the other EVAL-X scores.

    References
    ----------
    .. [1] N. Jethani, M. Sudarshan, Y. Aphinyanaphongs and R. Ranganath, "Have We
       Learned to Explain?: How Interpretability Methods Can Learn to Encode Predictions
       in their Interpretations", AISTATS 2021.
    """
    check_is_fitted(evaluator)
    if evaluator.output_spec_.task != "classification":
        raise ValueError("encoding_gap compares accuracies, so it needs a classifier's outputs.")
    masks = np.asarray(explainer.transform(X), dtype=np.float32)
    X32 = _writable_float32(validate_data(evaluator, X, reset=False))
    own = explainer._predict_masked(torch.as_tensor(X32), torch.as_tensor(masks))
    own = np.asarray(own.cpu() if isinstance(own, torch.Tensor) else own)
    reference = evaluator._reference(X32, y)
    own_accuracy = np.mean([
        np.mean(own[:, a:b].argmax(axis=1) == reference[:, a:b].argmax(axis=1))
        for a, b in evaluator.output_spec_.blocks
    ])
    return float(own_accuracy - evaluator.score_masks(X32, masks, y)["eACC"])
