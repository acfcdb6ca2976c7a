"""EVAL-X: an evaluator of feature selections trained only on random masks (REAL-X eq. 5).

A model trained on random masks, independent of the data, judges selections without being
fooled by selections that encode the prediction. Its training objective is REAL-X's
predictor objective, from :mod:`sk_sointer._training.random_masks`.
"""

import numpy as np
import torch
from sklearn.base import BaseEstimator, _fit_context
from sklearn.metrics import r2_score, roc_auc_score
from sklearn.utils.validation import check_is_fitted, validate_data

from .._docstrings import fill_doc
from .._networks import MLP
from .._outputs import output_agreement, output_loss, output_values
from .._training.random_masks import JudgeNet
from .._utils import in_chunks
from .._estimator import _SkorchEstimatorMixin, _check_masks

# Metrics of score_masks for which lower is better; scorers negate them.
_LOWER_IS_BETTER = {"eNLL", "eMSE"}


@fill_doc
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

    %(baseline)s

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

    %(optimizer)s

    %(callbacks)s
        The validation loss is the random-mask loss on held-out rows.

    %(train_split)s

    %(device)s

    %(data_on_device)s

    %(cuda_graphs)s

    %(random_state)s
        It seeds weight initialisation, shuffling and the random masks.

    %(verbose)s

    Attributes
    ----------
    net_ : JudgeNet
        The fitted skorch net; ``net_.module_`` is the evaluator network.

    black_box_ : BlackBox or None
        The adapted model when ``fit`` received one; it supplies the reference outputs of
        :meth:`score_masks` when no ``y`` is given.

    %(output_spec_)s

    %(masker_)s

    %(n_features_in_)s

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

    # EVAL-X judges masks over features; it has no feature groups and no target output.
    groups = None

    def __init__(
        self, *, predictor=MLP(hidden_units=(200, 200), batch_norm=True), append_mask=True,
        baseline="mean", max_epochs=100, batch_size=256, lr=1e-3, weight_decay=0.0,
        optimizer="adam", callbacks=None, train_split=None, device="auto",
        data_on_device=True, cuda_graphs=True,
        random_state=None, verbose=0,
    ):
        self.predictor = predictor
        self.append_mask = append_mask
        self.baseline = baseline
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.optimizer = optimizer
        self.callbacks = callbacks
        self.train_split = train_split
        self.device = device
        self.data_on_device = data_on_device
        self.cuda_graphs = cuda_graphs
        self.random_state = random_state
        self.verbose = verbose

    def _build_net(self, problem, **net_params):
        return JudgeNet(
            self.predictor, masks="random", append_mask=self.append_mask, **problem.net_params(), **net_params
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
        outputs : ndarray of shape (n_samples, n_columns), float32
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
        standardized = torch.as_tensor(spec.standardize(reference))
        per_row = output_loss(raw, standardized, spec, reduction="none").numpy() / spec.n_outputs
        predicted = output_values(raw, spec).numpy()
        scores = {"mean_log_likelihood": float(-np.mean(per_row))}
        real = [start for kind, (start, _) in zip(spec.kinds, spec.blocks) if kind == "real"]
        if real:
            scores["eMSE"] = float(np.mean((predicted[:, real] - reference[:, real]) ** 2))
            scores["eR2"] = float(r2_score(reference[:, real], predicted[:, real]))
        accuracy, auroc = [], []
        for kind, (start, stop) in zip(spec.kinds, spec.blocks):
            if kind == "real":
                continue
            if kind == "bernoulli":
                labels = (reference[:, start] > 0.5).astype(int)
                proba = np.c_[1 - predicted[:, start], predicted[:, start]]
            else:
                labels = reference[:, start:stop].argmax(axis=1)
                proba = predicted[:, start:stop]
            accuracy.append(np.mean(proba.argmax(axis=1) == labels))
            auroc.append(_auroc(labels, proba))
        if accuracy:
            scores["eACC"] = float(np.mean(accuracy))
            scores["eAUROC"] = float(np.mean(auroc))
            scores["eNLL"] = -scores["mean_log_likelihood"]
        return scores

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
        if hasattr(self, "output_spec_"):
            _check_metric(metric, self.output_spec_)
        return _EvalXScorer(self, metric)

    def _check_masked_input(self, X, masks):
        check_is_fitted(self)
        codec = self._table_codec
        if codec is not None:  # a table: its rows as codes, matched to its columns by name
            X = codec.encode(X)
        else:
            X = validate_data(self, self.layout_.flatten(X), dtype=[np.float32, np.float64],
                              reset=False)
        return X, _check_masks(self.layout_.flatten(masks, "masks"), X.shape)

    def _raw_masked(self, X, masks):
        """Raw outputs of the evaluator on ``m(x, mask)`` (CPU tensor), in evaluation mode."""
        net = self.net_
        net.module_.eval()
        device = next(net.module_.parameters()).device

        def raw(rows, kept):
            with torch.inference_mode():
                return net.judge_raw(torch.as_tensor(rows).to(device),
                                     torch.as_tensor(kept).to(device)).float().cpu()

        return in_chunks(raw, self.masker_.standardize(X), self.masker_.scaled_masks(masks))

    def _reference(self, X, y):
        """Reference outputs on ``X`` in the output spec's columns, float32."""
        if y is not None:
            return self.output_spec_.encode(y, X.shape[0]).astype(np.float32, copy=False)
        if self.black_box_ is None:
            raise ValueError(
                "EvalXEvaluator was fitted on outputs only, so score_masks needs the "
                "reference outputs on X as y (true labels or the black box's outputs)."
            )
        return in_chunks(self.black_box_.predict, X).astype(np.float32, copy=False)


def _auroc(labels, proba):
    if np.unique(labels).size < 2:
        return np.nan
    if proba.shape[1] == 2:
        return roc_auc_score(labels, proba[:, 1])
    onehot = np.eye(proba.shape[1])[labels]
    return roc_auc_score(onehot, proba, average="micro")


def _metrics_for(spec):
    """The keys :meth:`EvalXEvaluator.score_masks` returns for outputs described by ``spec``."""
    kinds = set(spec.kinds)
    names = ["mean_log_likelihood"]
    if kinds - {"real"}:
        names += ["eACC", "eAUROC", "eNLL"]
    if "real" in kinds:
        names += ["eMSE", "eR2"]
    return names


def _check_metric(metric, spec):
    available = _metrics_for(spec)
    if metric not in available:
        raise ValueError(
            f"metric {metric!r} is not defined for this evaluator's outputs ({spec.task}); "
            f"choose one of {available}."
        )


class _EvalXScorer:
    """Scorer protocol ``(explainer, X, y=None)`` over :meth:`EvalXEvaluator.score_masks`."""

    def __init__(self, evaluator, metric):
        self.evaluator = evaluator
        self.metric = metric

    def __call__(self, explainer, X, y=None):
        _check_metric(self.metric, self.evaluator.output_spec_)
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
    # Each validates X its own way (a table's raw frame is encoded by each).
    masks = explainer.transform(X)
    own = explainer.predict_masked(X, masks)
    reference = evaluator._reference(evaluator._check_masked_input(X, masks)[0], y)
    own_accuracy = output_agreement(reference, own, evaluator.output_spec_)
    return float(own_accuracy - evaluator.score_masks(X, masks, y)["eACC"])
