"""MEED: an explainer that sees the model's output, with adversarial infidelity learning.

Liang et al. (KDD 2020) select the features ``S`` of a row that maximise
``I(x_S; y) - I(x_S̄; y)``: the selected features should carry the black box's output ``y``
and the unselected ones should not (eqs. 1-2). With ``v`` the relaxed k-hot mask of L2X's
k-subset Concrete on the explainer's logits ``s = E(x, y)``, two approximators judge it:

- ``A_s`` predicts ``y`` from ``x ⊙ v`` (fidelity loss ``L_s``);
- ``A_u`` predicts ``y`` from ``x ⊙ (1 - v)`` (infidelity loss ``L_u``).

Training alternates, on every batch (eqs. 7-8):

- the approximators step on ``L_s + w_u L_u``, the explainer held fixed;
- the explainer steps on ``L_s + w_u L_u^adv`` with fresh noise, the approximators held
  fixed. ``L_u^adv`` is the cross-entropy of ``A_u`` against the *flipped* output ``1 - y``
  (App. B.1's relativistic form): the explainer leaves out what lets ``A_u`` recover ``y``.
  For ``c > 2`` classes the flipped target is ``(1 - y) / (c - 1)``; for a real output,
  ``L_u^adv = -L_u``.

With ``feedback`` (the paper's MEED) the explainer reads the black box's output next to
the row, and so queries the model at explanation time too; by default (``feedback=None``,
the paper's ablation "w/o Output") it reads the row alone. A per-row prior ``r`` (gradient × input) warm
starts the sampler: in the 0-based epoch ``m`` the Gumbel noise is added to
``(m s + log r) / (m + 1)`` instead of ``s`` (eq. 12), so the first epoch samples from the
prior alone and its weight fades; eq. 13's term ``L_e`` pulls ``softmax(s)`` to the faded
distribution with weight ``prior_weight`` (0 in the paper's runs but one).
"""

import math
import warnings
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.utils._param_validation import Interval, StrOptions

from .._docstrings import fill_doc
from .._networks import MLP, output_feedback_selector
from .._outputs import output_loss, output_values
from .._training.nets import SelectorJudgeNet
from .._training.random_masks import JudgeNet
from .._training.updates import Update
from .._utils import in_chunks
from ..base import BaseExplainer
from .._topk import topk_mask
from ..distributions import SubsetConcrete

# Share of the prior spread evenly over the groups, so that no group is impossible to
# sample in the first epoch (a pixel of value 0 has gradient x input 0).
PRIOR_FLOOR = 0.1


class MEEDNet(SelectorJudgeNet):
    """skorch net of MEED: the explainer (``module_``: a selector reading ``[x, y]``), the
    fidelity approximator ``approximator_`` (A_s) and the adversarial one ``adversary_``
    (A_u).

    ``optimizer_`` steps the explainer only, ``approximators_optimizer_`` both
    approximators (``approximators_optimizer__*`` options apply to it). The targets the net
    is fitted on are the black box's (standardised) outputs, followed, when a prior warm
    start is used, by the log-prior of every feature group. The recorded loss is the
    explainer's objective ``L_s + w_u L_u^adv``: on its sampled masks on training batches,
    on the top-k masks on validation batches (what an early-stopping callback should watch).
    """

    prefixes_ = [*SelectorJudgeNet.prefixes_, "approximators_optimizer"]
    judges = ("approximator", "adversary")
    judge = "approximator"
    judge_learns_relaxed_masks = True
    judge_optimizer = "approximators_optimizer"

    def __init__(self, module, *, feedback, k, tau, w_u, prior_weight, **kwargs):
        self.module = module
        self.feedback = feedback
        self.k = k
        self.tau = tau
        self.w_u = w_u
        self.prior_weight = prior_weight
        super().__init__(module, **kwargs)

    def build_selector(self):
        if self.feedback is None:  # the selector reads the row alone
            return super().build_selector()
        return output_feedback_selector(
            self.module, self.feedback, self.n_features, self.output_spec.n_columns,
            self.masker.n_groups_, self.input_shape, self.masker.groups_,
        )

    def initialize_optimizer(self, *args, **kwargs):
        self.optimizer_ = self.module_optimizer("optimizer", self.module_)
        both = {"approximator": self.approximator_, "adversary": self.adversary_}
        self.approximators_optimizer_ = self.module_optimizer("approximators_optimizer", both)
        return self

    def updates(self):
        modules = (self.module_, self.approximator_, self.adversary_)
        # A prior's weight in the sampler fades with the epoch (eqs. 12-13).
        epoch = (self.epoch,)
        return [
            # (a) the approximators, on masks of the fixed explainer (eq. 7).
            Update(self._approximators_loss, self.approximators_optimizer_,
                   (self.approximator_, self.adversary_), training=modules, constants=epoch),
            # (b) the explainer, with fresh noise, against the fixed approximators (eq. 8).
            Update(self._explainer_loss, self.optimizer_, (self.module_,), training=modules,
                   constants=epoch),
        ]

    def _approximators_loss(self, X, targets):
        targets, log_prior = self._split(targets)
        with torch.no_grad():
            logits = self.module_(X)
        mask = self._sample(logits, log_prior)
        return self._objective(X, mask, targets, adversarial=False), None

    def _explainer_loss(self, X, targets):
        targets, log_prior = self._split(targets)
        logits = self.module_(X)
        loss = self._objective(X, self._sample(logits, log_prior), targets, adversarial=True)
        if self.prior_weight and log_prior is not None:
            loss = loss + self.prior_weight * self._prior_term(logits, log_prior)
        return loss, {"loss": loss.detach(), "y_pred": logits.detach()}

    def validation_step(self, batch, **fit_params):
        X, targets = self.batch_tensors(batch)
        targets, _ = self._split(targets)
        self.set_modes(False)
        with torch.no_grad():
            logits = self.module_(X)
            loss = self._objective(X, topk_mask(logits, self.k), targets, adversarial=True)
        return {"loss": loss, "y_pred": logits}

    def _split(self, targets):
        """The black box's outputs and the log-prior (None without one) of a batch."""
        n_columns = self.output_spec.n_columns
        log_prior = targets[:, n_columns:] if targets.shape[1] > n_columns else None
        return targets[:, :n_columns], log_prior

    def _sampler_logits(self, logits, log_prior):
        """eq. 12 in logits: ``(m s + log r) / (m + 1)`` in the 0-based epoch ``m``."""
        if log_prior is None:
            return logits
        m = self.epoch - 1
        return (m * logits + log_prior) / (m + 1)

    def _sample(self, logits, log_prior):
        logits = self._sampler_logits(logits, log_prior)
        return SubsetConcrete(self.tau, logits, self.k, validate_args=False).rsample()

    def _prior_term(self, logits, log_prior):
        """eq. 13: the mean absolute gap between ``softmax(s)`` and the (fixed) faded
        distribution, over ``m + 1``."""
        faded = torch.softmax(self._sampler_logits(logits, log_prior).detach(), dim=1)
        gap = (torch.softmax(logits, dim=1) - faded).abs().mean(dim=1)
        return gap.mean() / self.epoch

    def _objective(self, X, mask, targets, *, adversarial):
        """``L_s + w_u L_u`` (A_s on the selected features, A_u on the others), or the
        explainer's ``L_s + w_u L_u^adv``."""
        fidelity = output_loss(self.approximator_(self.masked(X, mask)), targets,
                               self.output_spec)
        infidelity = infidelity_loss if adversarial else output_loss
        predicted = self.adversary_(self.masked(X, 1 - mask))
        return fidelity + self.w_u * infidelity(predicted, targets, self.output_spec)

    def surrogate_scores(self, X, targets, n_epochs):
        """Gradient × input per feature of the fidelity approximator on whole rows, after
        training it on whole rows for ``n_epochs`` epochs (a phase of its own, a
        :class:`~sk_sointer._training.random_masks.JudgeNet` with ``masks="none"``): the
        prior for a black box without gradients. ``X`` is what the net is fed, ``targets``
        the outputs on it."""
        options = self.get_params_for("approximators_optimizer")
        JudgeNet(self.approximator_, masks="none", max_epochs=n_epochs,
                 batch_size=self.batch_size, lr=self.lr, **self.phase_params(),
                 **{"optimizer__" + name: value for name, value in options.items()},
                 ).fit(X, targets)
        self.approximator_.eval()
        data = torch.as_tensor(X, device=self.device)[:, : self.n_features]
        baseline = torch.as_tensor(self.masker.baseline_scaled_, dtype=data.dtype,
                                   device=data.device)

        def values(rows):
            return output_values(self.judge_raw(rows, torch.ones_like(rows)), self.output_spec)

        return torch.cat([gradient_x_input(values, chunk, baseline, self.output_spec)
                          for chunk in data.split(4096)]).cpu().numpy()


def infidelity_loss(predicted, targets, spec):
    """The explainer's ``L_u^adv`` per App. B.1: A_u's cross-entropy against the flipped
    output, ``(1 - y) / (c - 1)`` for ``c`` classes and ``1 - p`` for a label; minus the
    squared error for a real output (no flipped target exists)."""
    flipped = targets.clone()
    bernoulli, real, categorical = spec.kind_columns(targets.device)
    for start, stop in categorical:
        flipped[:, start:stop] = (1 - targets[:, start:stop]) / max(stop - start - 1, 1)
    if bernoulli.numel():
        flipped.index_copy_(1, bernoulli, 1 - targets.index_select(1, bernoulli))
    loss = output_loss(predicted, flipped, spec, reduction="none")
    if real.numel():
        # output_loss adds the squared error of the real columns: count it with a minus
        # (columns by index_select, as there: see output_loss).
        loss = loss - 2 * ((predicted.index_select(1, real)
                            - targets.index_select(1, real)) ** 2).sum(1)
    return loss.mean()


def explained_outputs(values, spec):
    """Per row, the sum over outputs of what the gradient prior explains: the probability
    of the predicted class, of the predicted side of a label, or a real output's value."""
    bernoulli, real, categorical = spec.column_kinds
    total = values.new_zeros(len(values))
    for start, stop in categorical:
        total = total + values[:, start:stop].amax(dim=1)
    if bernoulli.numel():
        p = values[:, bernoulli.to(values.device)]
        total = total + torch.maximum(p, 1 - p).sum(1)
    if real.numel():
        total = total + values[:, real.to(values.device)].sum(1)
    return total


def gradient_x_input(outputs, rows, baseline, spec):
    """``|∂f/∂x ⊙ (x - baseline)|`` per value of the tensor ``rows``, ``f`` the explained
    outputs (:func:`explained_outputs`) of ``outputs(rows)``, in the black box's scale."""
    rows = rows.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        (grad,) = torch.autograd.grad(explained_outputs(outputs(rows), spec).sum(), rows)
    return (grad * (rows.detach() - baseline)).abs()


def model_gradient_scores(black_box, X, baseline):
    """:func:`gradient_x_input` of a differentiable black box, per feature of the raw rows
    ``X``."""
    baseline = torch.as_tensor(baseline, dtype=torch.float32)

    def scores(rows):
        rows = torch.as_tensor(rows, dtype=torch.float32)
        return gradient_x_input(lambda x: black_box(x, grad=True), rows, baseline,
                                black_box.spec).cpu().numpy()

    return in_chunks(scores, X)


def log_prior(feature_scores, groups, n_groups):
    """``log r`` per group from non-negative per-feature scores: a group's share of its
    row's total score, mixed with a uniform floor (:data:`PRIOR_FLOOR`)."""
    scores = np.nan_to_num(np.asarray(feature_scores, dtype=np.float64), nan=0.0, posinf=0.0)
    if groups is not None:
        summed = np.zeros((len(scores), n_groups))
        np.add.at(summed.T, np.asarray(groups), scores.T)
        scores = summed
    total = scores.sum(axis=1, keepdims=True)
    share = np.divide(scores, total, out=np.full_like(scores, 1.0 / n_groups), where=total > 0)
    prior = (1 - PRIOR_FLOOR) * share + PRIOR_FLOOR / n_groups
    return np.log(prior).astype(np.float32)


@fill_doc
class MEEDExplainer(BaseExplainer):
    """Instance-wise feature selection by MEED, with adversarial infidelity learning.

    Like :class:`~sk_sointer.L2XExplainer`, a selector network keeps ``k`` features (or
    feature groups) of each row, trained with an approximator that predicts the black box
    from them. MEED adds three things (Liang et al., KDD 2020):

    - the selector can also read the black box's output on the row (output feedback,
      off by default: see ``feedback``);
    - a second, adversarial approximator predicts the output from the features left out,
      and the selector is trained to defeat it, so that the features left out carry as
      little of the output as possible and the selection cannot hide the answer in its
      pattern;
    - a warm start from a gradient × input prior, which fades over the epochs.

    With output feedback (``feedback=``), MEED queries the black box when it explains
    rows, for the output the selector reads: it needs the model at ``fit`` and, at
    ``transform``, the model or its outputs. It always needs the model at ``fit``.

    Parameters
    ----------
    k : int, default=4
        Number of features (or feature groups) selected per row. A ``k`` beyond their
        number selects all of them, with a warning.

    tau : float, default=0.5
        Temperature of the k-subset Concrete relaxation (the paper's value).

    w_u : float, default=1.0
        Weight of the infidelity terms: ``L_s + w_u L_u`` for the approximators,
        ``L_s + w_u L_u^adv`` for the selector. 0 turns adversarial infidelity learning
        off (the adversary still trains but the selector ignores it). The refinement
        against the model weighs the model's answer with the selected features left out
        so too: its reward is the answer kept on the selected features minus ``w_u``
        times the answer kept on the others (one more query a masked row). The selector
        is refined both with and without that charge, and the one whose masks earn more
        of the charged reward on the training rows is kept (the charge's gradient is the
        noisier: on the synthetic sets the uncharged refinement often reaches MEED's
        objective better, on MNIST the charged one); the refinement then costs about
        twice the queries and time.

    prior : {"auto", "model", "surrogate"} or None, default="auto"
        Where the warm start's per-row prior comes from: ``"model"``, gradient × input of
        a differentiable black box (a torch module); ``"surrogate"``, gradient × input of
        the fidelity approximator, first trained on whole rows for a tenth of
        ``max_epochs`` (at least one epoch), for a black box without gradients;
        ``"auto"``, the model when it is differentiable, else the surrogate; ``None``, no
        warm start. Gradient × input is taken relative to the baseline,
        ``|∂f/∂x ⊙ (x - baseline)|``, with ``f`` the probability of the predicted class
        (or a real output's value), summed over the features of a group.

    prior_weight : float, default=0.0
        Weight of eq. 13's term pulling the selector's distribution toward the faded
        prior (0 in all but one of the paper's runs).

    selector : callable, default=MLP(hidden_units=(100, 100), zero_output=True)
        Factory of the selector's body, which reads the row and the output feedback: its
        input is the row followed by the feedback (one value per feature; for images one
        more channel, so a :class:`~sk_sointer.CNNSelector` reads ``channels + 1``).

    feedback : callable or None, default=None
        Factory of the network mapping the black box's output columns to the output
        feedback the selector reads, e.g. ``MLP(hidden_units=(100,))`` (the paper's
        MEED). ``None``, the default, leaves the feedback out (the paper's ablation "w/o
        Output"): the selector reads the row alone and explaining rows does not need the
        black box. With the feedback, on the synthetic tables with a known answer (orange
        skin, S1) the selector learnt to choose features by the output on S1, keeping 99.9
        and 46.3 %% of the relevant features against 99.6 and 84.5 %% without it, while on
        MNIST 3 vs 8 it moved FS-M from 97.8 to 99.0 %% and FU-M from 69.2 to 67.0 %%.

    approximator : callable, default=MLP(hidden_units=(200, 200), batch_norm=True)
        Factory of the fidelity approximator ``A_s``, which predicts the black box from the
        selected features. As L2X's, it ends ``fit`` with a tenth of ``max_epochs`` (three
        at least) alone on the selector's final masks.

    adversary : callable, default=MLP(hidden_units=(200, 200), batch_norm=True)
        Factory of the adversarial approximator ``A_u``, which predicts the black box from
        the features left out.

    %(refine)s

    %(repair)s

    %(background)s

    %(row_layout)s

    max_epochs : int, default=100
        Passes over the training data.

    batch_size : int, default=1000
        Rows per optimisation step (each step updates the approximators, then the
        selector).

    lr : float, default=1e-3
        Learning rate of every network.

    weight_decay : float, default=2e-3
        L2 penalty on the weights of every network (as :class:`~sk_sointer.L2XExplainer`).

    %(optimizer)s
        The selector and the two approximators each get their own instance (one for both
        approximators).

    %(training)s

    %(random_state)s
        It seeds weight initialisation, shuffling and the relaxation's noise.

    %(verbose)s

    Attributes
    ----------
    net_ : MEEDNet
        The fitted skorch net; ``net_.module_`` is the selector (with its feedback
        network), ``net_.approximator_`` and ``net_.adversary_`` the approximators.

    black_box_ : BlackBox or None
        The adapted model, queried by :meth:`transform` and :meth:`explain` unless they
        are given the outputs; ``None`` when ``fit`` got only the model's outputs (it
        then warns: the prior comes from the surrogate and :meth:`score` needs ``y``).

    %(fitted_)s

    See Also
    --------
    L2XExplainer : The same selection without output feedback or adversary.
    sk_sointer.metrics.posthoc_accuracy : FS-M and, with ``features="unselected"``, FU-M.

    Notes
    -----
    The paper's equations are implemented where its released code departs from them: the
    training masks are eq. 5's relaxed k-hot masks; the prior is gradient × input (not its
    negative) and fades as ``1 / (m + 1)`` with the epoch ``m``. The relativistic target
    ``1 - y`` of App. B.1 is defined for two classes; for ``c`` classes this class uses
    ``(1 - y) / (c - 1)``, and for a real output ``-L_u``. On tables the output feedback
    is joined to the row at the selector's input (the paper's pattern for images and time
    series), not to its hidden features as for the paper's text model.

    Output feedback is off by default, unlike the paper: on MNIST 3 vs 8 (k = 25 pixels,
    ``python benchmarks/bench.py meed``, three seeds) MEED with and without it kept the
    CNN's answer on 99.0 %% and 97.8 %% of the images and on 67.0 %% and 69.2 %% of them
    with the pixels removed, while on S1 it lowered the share of relevant features kept
    from 84.5 %% to 46.3 %%: with the output in hand, the selector could pick features by
    the class and the fidelity approximator read the class off the choice, which the
    adversary did not fully undo.

    A black box that cannot be pickled is left out of a pickled explainer (with a
    warning), as :func:`~sk_sointer.save` always leaves it out: give the outputs to
    :meth:`transform` (``outputs=``), or the model to :func:`~sk_sointer.load`.

    References
    ----------
    .. [1] J. Liang, B. Bai, Y. Cao, K. Bai and F. Wang, "Adversarial Infidelity Learning
       for Model Interpretation", KDD 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sk_sointer import MEEDExplainer
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(300, 5).astype(np.float32)
    >>> model = LogisticRegression().fit(X, X[:, 0] > 0)
    >>> expl = MEEDExplainer(k=1, max_epochs=20, batch_size=100, random_state=0)
    >>> expl.fit(X, black_box=model).transform(X[:3]).sum(axis=1)
    array([1., 1., 1.], dtype=float32)
    """

    def _check_params(self, problem):
        super()._check_params(problem)
        if problem.black_box is None:
            # Outputs alone suffice for the selector and the approximators (the feedback
            # is off by default); say what the model would have added.
            warnings.warn(
                "MEEDExplainer was fitted on the model's outputs only: the prior comes from "
                "the surrogate, score needs the outputs as y"
                + ("" if self.feedback is None else
                   ", and transform and explain need the outputs as outputs=")
                + "; fit(X, black_box=model) for the model's own gradients and fidelity.",
                UserWarning,
            )

    _parameter_constraints: dict = {
        **BaseExplainer._parameter_constraints,
        "k": [Interval(Integral, 1, None, closed="left")],
        "tau": [Interval(Real, 0, None, closed="neither")],
        "w_u": [Interval(Real, 0, None, closed="left")],
        "prior": [StrOptions({"auto", "model", "surrogate"}), None],
        "prior_weight": [Interval(Real, 0, None, closed="left")],
        "selector": [callable],
        "feedback": [callable, None],
        "approximator": [callable],
        "adversary": [callable],
    }

    def __init__(
        self, k=4, *, tau=0.5, w_u=1.0, prior="auto", prior_weight=0.0,
        selector=MLP(hidden_units=(100, 100), zero_output=True), feedback=None,
        approximator=MLP(hidden_units=(200, 200), batch_norm=True),
        adversary=MLP(hidden_units=(200, 200), batch_norm=True), refine="model",
        repair=None, background=None,
        baseline="mean", groups=None, image_shape=None, patch_size=None, max_epochs=100,
        batch_size=1000, lr=1e-3, weight_decay=2e-3, optimizer="adam", callbacks=None,
        train_split=None, device="auto",
        data_on_device=True, cuda_graphs=True, random_state=None, verbose=0,
    ):
        self.k = k
        self.tau = tau
        self.w_u = w_u
        self.prior = prior
        self.prior_weight = prior_weight
        self.selector = selector
        self.feedback = feedback
        self.approximator = approximator
        self.adversary = adversary
        self.refine = refine
        self.repair = repair
        self.background = background
        self.baseline = baseline
        self.groups = groups
        self.image_shape = image_shape
        self.patch_size = patch_size
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

    def explain(self, X, outputs=None):
        """Real-valued importance scores behind the masks (higher means more relied on).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or images as given to ``fit``
        outputs : array-like, default=None
            The black box's outputs on ``X`` (as ``fit``'s ``y`` would take them); by
            default the model is queried.

        Returns
        -------
        scores : ndarray of the shape of X, float32
        """
        X = self._validate_transform_input(X, finite=False)
        rows = self._explain_rows(X, self._scores_of, np.float32, self._outputs_of(X, outputs))
        return self.layout_.unflatten(rows)

    def transform(self, X, outputs=None):
        """k-hot masks of the features the black box relied on, one row per sample.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or images as given to ``fit``
        outputs : array-like, default=None
            The black box's outputs on ``X`` (as ``fit``'s ``y`` would take them); by
            default the model is queried.

        Returns
        -------
        masks : ndarray of the shape of X
            0/1 values in the dtype of ``X``; ``k`` of them (``k`` groups) per row.
        """
        self._check_output_container()  # as BaseExplainer.transform: no table of images
        X = self._validate_transform_input(X, finite=False)
        return self._masks_for(X, self._outputs_of(X, outputs))

    def _outputs_of(self, X, outputs):
        """The black box's outputs on the validated raw rows ``X``, standardised as in
        training."""
        spec = self.output_spec_
        if self.feedback is None:
            return None
        if outputs is not None:
            return spec.standardize(spec.encode(outputs, X.shape[0]))
        if self.black_box_ is None:
            raise ValueError(
                "MEEDExplainer explains a row from the black box's output on it, and this "
                "one holds no model (it could not be pickled, or the explainer was loaded "
                "without it): pass the model's outputs on X as outputs=, or load the "
                "explainer with load(path, black_box=model)."
            )
        if not np.isfinite(X).all():
            return None  # _explain_rows reports the non-finite values as validation would
        return spec.standardize(in_chunks(self.black_box_.predict, X))

    def _removed_weight(self):
        # The refinement pays for both halves of the objective: rewarded on the selected
        # features alone, the selector is free to keep features whose complement still
        # tells the answer, which is what MEED's infidelity term is there to prevent.
        return float(self.w_u)

    def _selector_input(self, X_scaled, X, outputs=None):
        if self.feedback is None:
            return X_scaled
        if outputs is None:  # only when X is not finite: standardisation raised already
            outputs = np.zeros((len(X), self.output_spec_.n_columns), dtype=np.float32)
        outputs = np.asarray(outputs, dtype=np.float32)
        if isinstance(X_scaled, torch.Tensor):  # explained on an accelerator
            return torch.cat([X_scaled, torch.as_tensor(outputs, device=X_scaled.device)], dim=1)
        return np.hstack([X_scaled, outputs])

    def _build_net(self, problem, **net_params):
        same_name = ("feedback", "approximator", "adversary", "tau", "w_u", "prior_weight")
        return MEEDNet(
            self.selector, k=self.k_, **{name: getattr(self, name) for name in same_name},
            approximators_optimizer__weight_decay=self.weight_decay, **problem.net_params(),
            **net_params,
        )

    def _train(self, problem, X, net_input, targets):
        self.net_.initialize()
        log_r = self._log_prior(problem, X, net_input, targets)
        self.net_.partial_fit(net_input, targets if log_r is None else np.hstack([targets, log_r]))

    def _log_prior(self, problem, X, net_input, targets):
        """Per-row, per-group log-prior of the warm start, or None."""
        source = self.prior
        if source is None:
            return None
        black_box = problem.black_box
        differentiable = black_box is not None and black_box.differentiable
        if source == "auto":
            source = "model" if differentiable else "surrogate"
        if source == "model":
            if not differentiable:
                got = "only its outputs" if black_box is None else repr(black_box.model)
                raise ValueError(
                    "prior='model' needs a differentiable black box (a torch module); got "
                    f"{got}. Use prior='surrogate' or prior='auto'."
                )
            scores = model_gradient_scores(black_box, X, self.masker_.baseline_)
        else:
            n_epochs = max(1, math.ceil(self.max_epochs / 10))
            scores = self.net_.surrogate_scores(net_input, targets, n_epochs)
        return log_prior(scores, self.masker_.groups_, problem.n_groups)
