"""HardKuma: gates with a controlled selection rate (Bastings et al., ACL 2019).

Every feature group of a row gets a Hard Kumaraswamy gate ``h_j ~ HK(a_j(x), b_j(x))``,
exactly 0 or exactly 1 with positive probability and continuous in between, from one
selector score per group (:meth:`HardKumaraswamy.from_logits`). A predictor reads the row
with every feature scaled by its gate, ``m(x, h)``, and is fitted to the black box's output.
The fraction of non-zero gates has a closed-form expectation,
``R = mean_j P(h_j != 0)``, differentiable in the selector's scores; an augmented
Lagrangian drives the fraction of non-zero *test-time* gates (what ``transform`` keeps)
to the target ``selection_rate`` through the gradient of ``R``: the paper's multiplier
(eq. 13, with the GECO update of the reference code, a moving average of the constraint
and a multiplicative step on the multiplier) plus a quadratic term that damps it.
An optional second constraint bounds the expected rate of zero / non-zero changes between
neighbouring groups (consecutive tokens or features, adjacent pixels or patches).

The predictor either trains with the selector on the sampled gates (``"joint"``, the
paper's model), or first alone on random masks and then stays fixed while the selector
trains (``"random"``, as REAL-X does, so that the choice of features cannot carry the
prediction). The random-mask objective lives in
:mod:`sk_sointer._training.random_masks`.
"""

from numbers import Integral, Real

import torch
from sklearn.utils._param_validation import Interval, StrOptions
from torch import nn

from .._docstrings import fill_doc
from .._networks import MLP
from .._training.random_masks import PredictorFirstNet, log_likelihood
from .._training.updates import Update
from ..base import TOKENS_CONSTRAINT, BaseExplainer
from ..distributions import HardKumaraswamy, open_gate_probability, open_logit


class RateConstraint(nn.Module):
    """Augmented-Lagrangian penalty driving constraint values (rates) to their targets.

    For each constraint ``j``, with ``c_j = R_j - r_j`` on the batch, the penalty is
    ``lambda_j * c_j + rho / 2 * c_j ** 2`` (only the excess ``max(c_j, 0)`` in the square
    for a one-sided constraint ``R_j <= r_j``), and in every training step, as in the GECO
    update the HardKuma code uses (Rezende and Viola 2018):

    - ``c̄_j <- decay * c̄_j + (1 - decay) * c_j`` (a moving average, started at ``c_j``);
    - the multiplier of ``R_j <= r_j`` is multiplied by ``exp(lr * c̄_j)`` and, for a
      two-sided constraint (``R_j = r_j``), that of ``R_j >= r_j`` by ``exp(-lr * c̄_j)``,
      both kept in ``bounds``; ``lambda_j`` is their difference.

    The quadratic term pulls the rate to its target at once and damps the oscillation
    that a multiplier alone (an integral controller) shows under Adam: with the
    multipliers alone, rates overshot their targets and drove gates into saturation, open
    or closed, where they no longer moved. The multipliers remove what bias the quadratic
    term leaves against the task's gradient.

    The multipliers and averages are buffers: no optimizer moves them, a ``state_dict``
    holds them, and they change in training mode only.
    """

    def __init__(self, targets, two_sided, *, lr, decay, init, rho, bounds=(1e-6, 100.0)):
        super().__init__()
        two_sided = torch.as_tensor(two_sided, dtype=torch.bool)
        self.register_buffer("targets", torch.as_tensor(targets, dtype=torch.float32))
        self.register_buffer("two_sided", two_sided)
        self.register_buffer("over", torch.full(two_sided.shape, float(init)))
        self.register_buffer("under", torch.where(two_sided, float(init), 0.0))
        self.register_buffer("average", torch.zeros(two_sided.shape))
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))
        self.lr, self.decay, self.rho, self.bounds = lr, decay, rho, bounds

    @property
    def multipliers(self):
        """The signed multipliers ``over - under`` (positive: the rate is pushed down)."""
        return self.over - self.under

    def forward(self, values):
        gap = values - self.targets
        if self.training:
            with torch.no_grad():
                self.average.copy_(torch.where(
                    self.steps > 0, self.decay * self.average + (1 - self.decay) * gap, gap
                ))
                self.steps += 1
                self.over.mul_(torch.exp(self.lr * self.average)).clamp_(*self.bounds)
                under = (self.under * torch.exp(-self.lr * self.average)).clamp(*self.bounds)
                self.under.copy_(torch.where(self.two_sided, under, 0.0))
        violation = torch.where(self.two_sided, gap, gap.clamp_min(0))
        return (self.multipliers * gap + self.rho / 2 * violation**2).sum()


class HardKumaNet(PredictorFirstNet):
    """skorch net of HardKuma: the selector (``module_``, one gate score per group), the
    predictor (``predictor_``) and the multipliers (``constraint_``, a
    :class:`RateConstraint`).

    ``optimizer_`` steps the selector and ``predictor_optimizer_`` the predictor
    (``predictor_optimizer__*`` options apply to it). With ``predictor_masks="joint"`` both
    step on the predictor's loss on the sampled gates; the selector's loss adds the
    multipliers' penalty. With ``"random"``, the first ``predictor_epochs`` epochs train the
    predictor alone on random masks (learning rate decaying over them), the later ones the
    selector alone against the fixed predictor. The recorded loss is the predictor's loss
    on the gates plus the penalty (on sampled gates in training, on the deterministic
    test-time gates in validation); the history also records each batch's share of
    non-zero test-time gates (``selection_rate``) and multiplier (``multiplier``).
    """

    def __init__(self, module, *, selection_rate, transition_rate, pairs, predictor_masks,
                 lagrange_lr, lagrange_decay, lagrange_init, lagrange_rho, **kwargs):
        self.module = module
        self.selection_rate = selection_rate
        self.transition_rate = transition_rate
        self.pairs = pairs
        self.predictor_masks = predictor_masks
        self.lagrange_lr = lagrange_lr
        self.lagrange_decay = lagrange_decay
        self.lagrange_init = lagrange_init
        self.lagrange_rho = lagrange_rho
        super().__init__(module, **kwargs)

    def initialize_module(self):
        super().initialize_module()
        self.offset_ = open_logit(self.selection_rate)
        self.open_threshold_ = open_gate_probability()
        self.pairs_ = None if self.pairs is None else torch.as_tensor(self.pairs,
                                                                      device=self.device)
        targets, two_sided = [self.selection_rate], [True]
        if self.transition_rate is not None:
            targets.append(self.transition_rate)
            two_sided.append(False)  # at most: fewer changes are never a fault
        self.constraint_ = RateConstraint(
            targets, two_sided, lr=self.lagrange_lr, decay=self.lagrange_decay,
            init=self.lagrange_init, rho=self.lagrange_rho,
        ).to(self.device)
        return self

    def gates(self, X):
        """The Hard Kumaraswamy gates of the rows ``X``, one per feature group.

        The selector's scores are offset by the score of a gate open with probability
        ``selection_rate``: a selector that starts with equal (zero) scores starts at the
        target rate, so the multipliers need not first drag the rate there (their growth
        on the way overshoots it), and weight decay pulls the rate towards the target."""
        return self.gates_of(self.module_(X))

    def gates_of(self, outputs):
        """The gates of the selector's outputs (see :meth:`gates`)."""
        return HardKumaraswamy.from_logits(outputs + self.offset_, validate_args=False)

    def rates(self, X, gates):
        """Constraint values of a batch: the fraction of non-zero test-time gates (with the
        gradient of the expected fraction), then (with a ``transition_rate``) the expected
        fraction of neighbouring pairs that change.

        With token ids the padding (id 0) is neither counted nor a neighbour."""
        # The value is the fraction of test-time gates that are non-zero, what transform
        # keeps; the gradient is that of the expected fraction (straight through). With
        # the expected fraction alone, the rate of the masks fell short of it where the
        # selector spread the last open gate over several uninformative ones, each too
        # unlikely to be open at test time (45.7 % for 50 % on the additive set).
        open_ = gates.prob_nonzero
        test_time = (open_ > self.open_threshold_).to(open_.dtype)
        open_ = open_ + (test_time - open_).detach()
        valid = self._valid_groups(X)
        if valid is None:
            values = [open_.mean()]
        else:
            values = [((open_ * valid).sum(1) / valid.sum(1).clamp_min(1)).mean()]
        if self.transition_rate is not None:
            pairs = self.pairs_
            changes = gates.transition_probs(pairs)
            if valid is None:
                values.append(changes.mean())
            else:
                both = valid[:, pairs[:, 0]] * valid[:, pairs[:, 1]]
                values.append(((changes * both).sum(1) / both.sum(1).clamp_min(1)).mean())
        return torch.stack(values)

    def _valid_groups(self, X):
        if not self.masker.tokens:
            return None
        return (X[:, : self.n_features] != 0).to(X.dtype)

    def selector_updates(self):
        trained = (self.module_, self.constraint_)
        if self.predictor_masks == "joint":  # the paper's model: one loss trains both
            return [Update(self._selector_loss, (self.optimizer_, self.predictor_optimizer_),
                           (self.module_, self.predictor_),
                           training=(*trained, self.predictor_))]
        # A fixed predictor runs in evaluation mode: its batch statistics stay those of the
        # random masks it was trained on.
        return [Update(self._selector_loss, self.optimizer_, (self.module_,),
                       training=trained, evaluation=(self.predictor_,))]

    def _selector_loss(self, X, targets):
        gates = self.gates(X)
        task = -log_likelihood(self, self.predictor_, X, gates.rsample(), targets).mean()
        rates = self.rates(X, gates)
        loss = task + self.constraint_(rates)
        records = {"selection_rate": rates[0].detach(),
                   "multiplier": self.constraint_.multipliers[0].detach()}
        return loss, {"loss": loss.detach(), "y_pred": None, "records": records}

    def selector_validation_loss(self, X, targets):
        gates = self.gates(X)
        masks = (gates.mode > 0).to(X.dtype)  # what transform keeps with k=None
        task = -log_likelihood(self, self.predictor_, X, masks, targets).mean()
        loss = task + self.constraint_(self.rates(X, gates))
        return {"loss": loss, "y_pred": None}

    def eval_modules(self):
        return [*super().eval_modules(), self.constraint_]

    def predictor_phase(self):
        return self.predictor_masks == "random" and super().predictor_phase()


@fill_doc
class HardKumaExplainer(BaseExplainer):
    """Instance-wise feature selection with Hard Kumaraswamy gates at a target rate.

    A selector network gives every feature (or group) of a row a gate that is exactly
    closed, exactly open, or in between, with a reparameterised distribution. A predictor
    of the black box reads the row through the gates; the selector learns which gates to
    open so that the predictor keeps the black box's output, while a Lagrange multiplier
    holds the fraction of open gates at ``selection_rate``. There is no penalty
    weight to tune: ask for the fraction of features to keep. Once fitted, explaining a
    row costs one forward pass of the selector.

    Parameters
    ----------
    selection_rate : float in (0, 1), default=None
        Target fraction of open gates, over the features (groups) and rows. ``None``:
        ``k / n_features`` when ``k`` is given (``k / n_groups`` with groups) and smaller
        than their number, else 0.2.
        Training holds the fraction of non-zero test-time gates (the masks of
        :meth:`transform` with ``k=None``) at this rate, in the mean over rows, not in
        every row.

    k : int or None, default=None
        ``None`` keeps, in every row, the groups whose deterministic test-time gate is
        non-zero (the paper's rule, see Notes), so the count varies from row to row. An
        int keeps exactly the ``k`` groups most likely to be open (all of them, with a
        warning, when ``k`` exceeds their number); it does not change training unless
        ``selection_rate`` is ``None``.

    transition_rate : float in [0, 1] or None, default=None
        With ordered features (token sequences, pixels or patches of images, or a table's
        columns in their order), an upper bound on the expected fraction of neighbouring
        pairs of which one gate is closed and the other open (the paper's fused-lasso
        constraint), which favours contiguous selections. ``None``: no such constraint.

    predictor_masks : {"random", "joint"}, default="random"
        ``"random"``: the predictor trains first and alone on random Bernoulli(0.5)
        masks, then stays fixed while the selector trains (REAL-X's objective), so the
        choice of features cannot encode the prediction. ``"joint"``: the predictor trains
        with the selector, on its sampled gates (the paper's model). On orange skin, the
        additive set and S1-S3 (5,000 rows, rates k / d) the default found as many true
        features as ``"joint"`` on S1 and orange skin and more on the others (additive
        99.5 against 75 %), in about half the training time.

    predictor_epochs : int, default=None
        With ``predictor_masks="random"``, the epochs at the start that train only the
        predictor; ``None``: half of ``max_epochs``. Ignored with ``"joint"``.

    append_mask : "auto" or bool, default="auto"
        Give the predictor the gates next to the gated row. ``"auto"``: with
        ``predictor_masks="random"`` only, where it tells a masked feature from one at
        its baseline (REAL-X's reason); a jointly trained predictor that reads the gates
        could read the prediction off the selection.

    lagrange_lr : float, default=0.5
        Step ``eta`` of the multiplicative multiplier update ``lambda * exp(eta * c)``
        (0.05 in the paper's code, which left the rate 3 points off a 10 % target after
        2,000 selector steps; 2 overshot, 58 % for a 50 % target).

    lagrange_decay : float, default=0.9
        Weight of the past in the moving average of the constraint.

    lagrange_init : float, default=1e-3
        Starting multipliers: small, so that the predictor learns before the rate
        constraint weighs.

    lagrange_rho : float, default=10.0
        Weight ``rho`` of the quadratic term ``rho / 2 * (R - r) ** 2`` of the augmented
        Lagrangian. It holds the rate at its target from the first step; 0 leaves the
        multipliers alone (the paper), which overshoot (see :class:`RateConstraint`).

    selector : callable, default=MLP(hidden_units=(100, 100), activation="elu", \
zero_output=True)
        Factory of the selector network: one score per feature (group), which
        :meth:`~sk_sointer.distributions.HardKumaraswamy.from_logits` turns into a gate
        after an offset that opens it with probability ``selection_rate``; the default
        starts every gate there, alike. ELU as in :class:`RealXExplainer`: with ReLU the
        true features of REAL-X's S1 were found in 66 % of cases rather than 84 %.

    predictor : callable, default=MLP(hidden_units=(200, 200), batch_norm=True)
        Factory of the predictor of the black box from the gated row.

    %(refine)s

    %(repair)s

    %(background)s

    %(row_layout)s

    %(tokens)s

    max_epochs : int, default=100
        Passes over the training data (the predictor-only epochs included).

    batch_size : int, default=256
        Rows per optimisation step.

    lr : float, default=1e-3
        Learning rate of both networks. With ``predictor_masks="random"`` the predictor's
        decays to 0 (cosine) over its own epochs.

    weight_decay : float, default=1e-4
        L2 penalty on the selector's weights (its optimizer's ``weight_decay``; the
        predictor has none unless ``predictor_optimizer__weight_decay`` is set).

    %(optimizer)s
        The selector and the predictor each get their own instance.

    %(training)s

    %(random_state)s
        It seeds weight initialisation, shuffling, the gates' noise and the random masks.

    %(verbose)s

    Attributes
    ----------
    net_ : HardKumaNet
        The fitted skorch net: ``net_.module_`` is the selector, ``net_.predictor_`` the
        predictor and ``net_.constraint_`` holds the multipliers. ``net_.history`` records,
        per batch, the expected selection rate and the multiplier.

    selection_rate_ : float
        The target rate used in training.

    black_box_ : BlackBox or None
        The adapted model when ``fit`` received one, used by :meth:`score`.

    %(fitted_)s

    See Also
    --------
    sk_sointer.distributions.HardKumaraswamy : The gates.
    RealXExplainer : Bernoulli selections against a random-mask predictor; its
        ``relaxation="hardkuma"`` trains them through these gates.
    L2XExplainer : Exactly k features per row.

    Notes
    -----
    :meth:`explain` returns each gate's probability of being open, ``1 - P(h = 0)``. With
    ``k=None``, :meth:`transform` keeps the groups whose deterministic gate is non-zero:
    the gate is 0 or 1, whichever point mass is larger, unless the continuous part
    outweighs both (Bastings et al., §7). For the gates of one selector score this is
    the same as an open probability above about 0.533 (see
    :func:`~sk_sointer.distributions.open_gate_probability`).

    Departures from the paper: one selector score per gate rather than two heads for
    ``a`` and ``b``; the rate constraint is an equality (two multipliers, one for each
    side), where the paper's single multiplier only bounds the rate from above, with a
    quadratic term next to the multipliers (an augmented Lagrangian); by default the
    predictor is trained on random masks, not jointly.

    References
    ----------
    .. [1] J. Bastings, W. Aziz and I. Titov, "Interpretable Neural Predictions with
       Differentiable Binary Variables", ACL 2019.
    .. [2] D. J. Rezende and F. Viola, "Taming VAEs", arXiv:1810.00597, 2018.

    Examples
    --------
    >>> import numpy as np
    >>> from sk_sointer import HardKumaExplainer
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(1000, 5).astype(np.float32)
    >>> outputs = (X[:, 0] > 0).astype(int)
    >>> expl = HardKumaExplainer(selection_rate=0.2, max_epochs=40, batch_size=100,
    ...                          random_state=0)
    >>> masks = expl.fit(X, outputs).transform(X)
    >>> masks.mean(axis=0).round(1)
    array([1., 0., 0., 0., 0.], dtype=float32)
    """

    _threshold = HardKumaraswamy.selection_threshold()

    _parameter_constraints: dict = {
        **BaseExplainer._parameter_constraints,
        **TOKENS_CONSTRAINT,
        "selection_rate": [Interval(Real, 0, 1, closed="neither"), None],
        "k": [Interval(Integral, 1, None, closed="left"), None],
        "transition_rate": [Interval(Real, 0, 1, closed="both"), None],
        "predictor_masks": [StrOptions({"joint", "random"})],
        "predictor_epochs": [Interval(Integral, 1, None, closed="left"), None],
        "append_mask": [StrOptions({"auto"}), "boolean"],
        "lagrange_lr": [Interval(Real, 0, None, closed="neither")],
        "lagrange_decay": [Interval(Real, 0, 1, closed="left")],
        "lagrange_init": [Interval(Real, 0, None, closed="neither")],
        "lagrange_rho": [Interval(Real, 0, None, closed="left")],
        "selector": [callable],
        "predictor": [callable],
    }

    def __init__(
        self, selection_rate=None, k=None, *, transition_rate=None, predictor_masks="random",
        predictor_epochs=None, append_mask="auto", lagrange_lr=0.5, lagrange_decay=0.9,
        lagrange_init=1e-3, lagrange_rho=10.0, selector=MLP(hidden_units=(100, 100),
        activation="elu", zero_output=True), predictor=MLP(hidden_units=(200, 200),
        batch_norm=True), refine="model",
        repair=None, background=None, baseline="mean", groups=None, image_shape=None,
        patch_size=None, tokens=False, max_epochs=100, batch_size=256, lr=1e-3,
        weight_decay=1e-4, optimizer="adam", callbacks=None, train_split=None, device="auto",
        data_on_device=True, cuda_graphs=True, random_state=None, verbose=0,
    ):
        self.selection_rate = selection_rate
        self.k = k
        self.transition_rate = transition_rate
        self.predictor_masks = predictor_masks
        self.predictor_epochs = predictor_epochs
        self.append_mask = append_mask
        self.lagrange_lr = lagrange_lr
        self.lagrange_decay = lagrange_decay
        self.lagrange_init = lagrange_init
        self.lagrange_rho = lagrange_rho
        self.selector = selector
        self.predictor = predictor
        self.refine = refine
        self.repair = repair
        self.background = background
        self.baseline = baseline
        self.groups = groups
        self.image_shape = image_shape
        self.patch_size = patch_size
        self.tokens = tokens
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

    def _check_params(self, problem):
        super()._check_params(problem)
        if self.selection_rate is not None:
            self.selection_rate_ = float(self.selection_rate)
        elif self.k_ is not None and self.k_ < problem.n_groups:
            self.selection_rate_ = self.k_ / problem.n_groups
        else:
            # No k, or a k that keeps every group (the masks are then all ones, whatever
            # the gates learn): the default rate.
            self.selection_rate_ = 0.2
        epochs = self._predictor_epochs()
        if self.predictor_masks == "random" and epochs >= self.max_epochs:
            raise ValueError(
                f"predictor_epochs should be < max_epochs = {self.max_epochs}, leaving epochs "
                f"to train the selector; got {epochs}."
            )

    def _predictor_epochs(self):
        if self.predictor_epochs is not None:
            return self.predictor_epochs
        return max(1, self.max_epochs // 2)

    def _build_net(self, problem, **net_params):
        append_mask = self.append_mask
        if append_mask == "auto":
            append_mask = self.predictor_masks == "random"
        pairs = None
        if self.transition_rate is not None:
            pairs = problem.layout.neighbour_pairs(problem.n_groups)
        return HardKumaNet(
            self.selector,
            predictor=self.predictor,
            selection_rate=self.selection_rate_,
            transition_rate=self.transition_rate,
            pairs=pairs,
            predictor_masks=self.predictor_masks,
            predictor_epochs=self._predictor_epochs(),
            lagrange_lr=self.lagrange_lr,
            lagrange_decay=self.lagrange_decay,
            lagrange_init=self.lagrange_init,
            lagrange_rho=self.lagrange_rho,
            append_mask=append_mask,
            **problem.net_params(),
            **net_params,
        )

    def _scores_of_output(self, outputs):
        return self.net_.gates_of(outputs).scores
