"""The random-mask predictor objective (REAL-X eq. 6, first line; EVAL-X eq. 5), and the
judges trained alone over a fitted net's problem (:func:`in_distribution_judge`,
:func:`fit_judge_to_masks`).

A predictor ``q(y | m(x, r))`` is trained on masks ``r_j ~ Bernoulli(0.5)`` drawn afresh for
every row, feature (group) and step, independently of ``x``, of ``y`` and of any selector.
It then approximates ``p(y | x_R)`` for every subset ``R``, and cannot have learned a link
between *which* features are kept and the output. REAL-X trains its predictor this way next
to its selector; EVAL-X trains one alone as a judge of any method's selections; HardKuma
can use it as its predictor.
"""

import math
import time

import numpy as np
import torch
from skorch.callbacks import Callback

from .._networks import MLP
from .._outputs import output_loss
from .graphs import set_lr
from .nets import SelectorJudgeNet
from .updates import Update


def random_masks(n_rows, n_groups, device):
    """Masks ``r_j ~ Bernoulli(0.5)`` over groups, fresh on every call."""
    return (torch.rand(n_rows, n_groups, device=device) < 0.5).float()


def log_likelihood(net, predictor, X, group_masks, targets):
    """``log q(y | m(x, s))`` per row: minus the per-row output loss of ``predictor``."""
    predicted = predictor(net.masked(X, group_masks))
    return -output_loss(predicted, targets, net.output_spec, reduction="none")


def random_mask_loss(net, predictor, X, targets):
    """Loss of ``predictor`` on ``m(x, r)`` for random masks ``r`` independent of everything."""
    masks = random_masks(X.shape[0], net.masker.n_groups_, X.device)
    return -log_likelihood(net, predictor, X, masks, targets).mean()


def predictor_update(net, predictor, optimizer, lr_factor):
    """The :class:`~sk_sointer._training.updates.Update` of the random-mask predictor.

    Only ``predictor``'s parameters move, so a selector never does here, and the predictor
    is never stepped on a selector's masks. The learning rate is the optimizer's initial
    one times ``lr_factor``.
    """
    for group in optimizer.param_groups:
        if "base_lr" not in group:  # read once: a device learning rate costs a sync
            group["base_lr"] = float(group["lr"])
        set_lr(group, group["base_lr"] * lr_factor)

    def loss(X, targets):
        value = random_mask_loss(net, predictor, X, targets)
        return value, {"loss": value.detach(), "y_pred": None}

    return Update(loss, optimizer, (predictor,), training=(predictor,))


def cosine_factor(epoch, n_epochs):
    """Learning-rate factor of a cosine decay from 1 at epoch 1 towards 0 after ``n_epochs``.

    The decay lets the random-mask objective resolve small conditional effects, such as a
    control-flow feature worth a few hundredths of a nat, which a constant learning rate
    learns only in part (see ``doc/tuning.rst`` in the source repository).
    """
    return 0.5 * (1.0 + math.cos(math.pi * min(epoch - 1, n_epochs) / n_epochs))


class JudgeNet(SelectorJudgeNet):
    """skorch net training ``module_`` alone as a judge of masked rows.

    With ``masks="random"`` (EVAL-X's evaluator) every step draws random Bernoulli(0.5)
    masks and runs :func:`predictor_update`, the learning rate decaying (cosine) over
    ``max_epochs``. With ``masks="given"`` (the FS-A / FU-A of
    :func:`~sk_sointer.metrics.approximator_accuracy`) the net is fed the standardised
    rows followed by their 0/1 feature masks, and the judge learns on the rows masked so.
    With ``masks="none"`` (the surrogate of MEED's prior: its fidelity approximator, an
    initialised ``module`` trained in place) the judge learns on whole rows; what the net
    is fed past the features is not read. The validation loss is the same objective in
    evaluation mode.
    """

    selector = False
    judge = "module"

    def __init__(self, module, *, masks="random", **kwargs):
        self.masks = masks
        super().__init__(module, **kwargs)

    def updates(self):
        if self.masks == "random":
            factor = cosine_factor(self.epoch, self.max_epochs)
            return [predictor_update(self, self.module_, self.optimizer_, factor)]

        return [Update(self._judge_loss, self.optimizer_, (self.module_,),
                       training=(self.module_,))]

    def _judge_loss(self, X, targets):
        value = self._masks_loss(X, targets)
        return value, {"loss": value.detach(), "y_pred": None}

    def validation_step(self, batch, **fit_params):
        X, targets = self.batch_tensors(batch)
        self.module_.eval()
        with torch.no_grad():
            if self.masks == "random":
                loss = random_mask_loss(self, self.module_, X, targets)
            else:
                loss = self._masks_loss(X, targets)
        return {"loss": loss, "y_pred": None}

    def _masks_loss(self, X, targets):
        """The judge's loss on the rows masked by the given masks, or on whole rows."""
        if self.masks == "none":
            masks = X.new_ones(len(X), self.masker.n_groups_)
        else:
            masks = X[:, self.n_features :]
        return -log_likelihood(self, self.module_, X, masks, targets).mean()


class PredictorFirstNet(SelectorJudgeNet):
    """A selector (``module_``) judged by a random-mask predictor (``predictor_``): the
    schedule REAL-X and HardKuma share.

    ``optimizer_`` steps the selector and ``predictor_optimizer_`` the predictor (both of
    the net's optimizer class and ``lr``; ``predictor_optimizer__*`` options apply to the
    predictor's alone). In epochs ``1 .. predictor_epochs`` (:meth:`predictor_phase`) the
    predictor trains alone on random masks, its learning rate decaying (cosine) over
    :meth:`predictor_decay_epochs`; in later epochs the method's ``selector_updates()``
    run. Validation scores the random-mask loss in the predictor phase and the method's
    ``selector_validation_loss(X, targets)`` after it, every module in evaluation mode. A
    subclass writes those two: the first returns the step's list of
    :class:`~sk_sointer._training.updates.Update`, the second ``{"loss": ..., "y_pred":
    ...}``.
    """

    prefixes_ = [*SelectorJudgeNet.prefixes_, "predictor_optimizer"]
    judges = ("predictor",)
    judge = "predictor"

    def __init__(self, module, *, predictor_epochs, **kwargs):
        self.predictor_epochs = predictor_epochs
        super().__init__(module, **kwargs)

    def initialize_optimizer(self, *args, **kwargs):
        self.optimizer_ = self.module_optimizer("optimizer", self.module_)
        self.predictor_optimizer_ = self.module_optimizer("predictor_optimizer", self.predictor_)
        return self

    def predictor_phase(self):
        """Whether the current epoch trains the predictor alone."""
        return self.epoch <= self.predictor_epochs

    def predictor_decay_epochs(self):
        """The epochs over which the predictor's learning rate decays."""
        return self.predictor_epochs

    def predictor_update(self):
        """The random-mask update of the predictor (:func:`predictor_update`)."""
        factor = cosine_factor(self.epoch, self.predictor_decay_epochs())
        return predictor_update(self, self.predictor_, self.predictor_optimizer_, factor)

    def updates(self):
        if self.predictor_phase():
            return [self.predictor_update()]
        return self.selector_updates()

    def validation_step(self, batch, **fit_params):
        X, targets = self.batch_tensors(batch)
        for module in self.eval_modules():
            module.eval()
        with torch.no_grad():
            if self.predictor_phase():
                return {"loss": random_mask_loss(self, self.predictor_, X, targets),
                        "y_pred": None}
            return self.selector_validation_loss(X, targets)

    def eval_modules(self):
        """The net's modules, put in evaluation mode for validation."""
        return [self.module_, self.predictor_]


# A judge trained alone over a fitted net's problem (the nets' judges reach JudgeNet here,
# below them, not through a lazy import).


def in_distribution_judge(net, X, targets, *, max_epochs, deadline=None):
    """EVAL-X's predictor over the problem of ``net`` (a fitted
    :class:`~sk_sointer._training.nets.SelectorJudgeNet`), trained on random masks of the
    standardised rows ``X`` against the model's standardised outputs ``targets`` (the
    architecture of :class:`~sk_sointer.metrics.EvalXEvaluator`, its mask appended):
    the in-distribution judge of the refinement (``ModelRefinement(in_distribution=)``).
    Training ends at ``deadline`` (``time.monotonic()``'s), if given: the refinement's
    time budget covers it. Returns the fitted
    :class:`JudgeNet`."""
    callbacks = [] if deadline is None else [("deadline", _Deadline(deadline))]
    judge = JudgeNet(
        MLP(hidden_units=(200, 200), batch_norm=True), masks="random",
        max_epochs=max_epochs, batch_size=min(256, len(X)), lr=1e-3, callbacks=callbacks,
        **{**net.phase_params(), "append_mask": True})
    return judge.fit(X, targets)


def fit_judge_to_masks(net, X, group_masks, targets, *, max_epochs):
    """Train the judge of ``net`` (a fitted
    :class:`~sk_sointer._training.nets.SelectorJudgeNet`, in place) on the standardised
    rows ``X`` masked by the selector's own masks of them, ``group_masks``, against the
    standardised outputs ``targets``: what it answers afterwards
    (:meth:`~sk_sointer._training.nets.SelectorJudgeNet.predict_masked`, ``score`` on
    outputs alone, the encoding gap) is learnt on the masks that ``transform`` returns.
    A fine-tuning, at a tenth of the net's learning rate: a fresh Adam's first steps at
    the full rate shake what the judge learnt (held-out R² of L2X and MEED on the
    diabetes GBR's outputs, four seeds: 0.77 and 0.76 without this phase, 0.73 and 0.80
    at the full rate, 0.80 and 0.86 at a tenth).

    A judge trained on relaxed masks only never sees a left-out feature at exactly the
    baseline: the relaxation always leaks a little of it. A hidden unit that the leak
    keeps silent in training has a batch-normalisation variance near zero, and on an
    exact mask it can fire, divided by that variance: an L2X fitted on regression values
    on an H200 answered with R² 0.14 on its own masks (0.80 with the statistics of the
    masked rows themselves), 0.99 after this."""
    options = net.get_params_for(net.judge_optimizer)
    module = getattr(net, net.judge + "_")
    JudgeNet(
        module, masks="given", max_epochs=max_epochs,
        batch_size=min(net.batch_size, len(X)), lr=net.lr / 10, **net.phase_params(),
        **{"optimizer__" + name: value for name, value in options.items()},
    ).fit(np.hstack([X, group_masks]).astype(np.float32), targets)
    module.eval()


class _Deadline(Callback):
    """Ends training once ``time.monotonic()`` passes ``deadline`` (after the batch that
    passed it), as skorch ends it on an interrupt."""

    def __init__(self, deadline):
        self.deadline = deadline

    def on_batch_end(self, net, **kwargs):
        if time.monotonic() >= self.deadline:
            raise KeyboardInterrupt
