"""The nets that refine a fitted selector against the black box itself, on the net base
(:class:`~sk_sointer._training.nets.SelectorJudgeNet`): :class:`ModelJudgedNet` trains it on
the score-function gradient of the model's own reward on masked training rows (the losses
of :mod:`~sk_sointer._training.losses`; :class:`~sk_sointer._model_judge.ModelJudge` asks
the model), :class:`ImitationNet` first teaches it greedy targets, and
:class:`KeepBestByModel` keeps the selector the model judges best.
"""

import copy

import numpy as np
import torch
from skorch.callbacks import Callback

from .._training.losses import imitation_term, score_function_loss
from .._training.nets import SelectorJudgeNet


class ImitationNet(SelectorJudgeNet):
    """Trains a fitted selector (``module``, in place) to imitate per-row target subsets
    alone, without asking the model: the greedy targets of :func:`~sk_sointer._model_judge.refine`
    before its score-function epochs (``ModelRefinement(imitate_epochs=...)``). It is fed
    what the selector sees and, as targets, the rows' indices into ``imitate``
    (n_rows, n_groups); ``k`` is the subsets' size, or an array of each row's."""

    def __init__(self, module, *, k, imitate, **kwargs):
        self.module = module
        self.k = k
        self.imitate = imitate
        super().__init__(module, **kwargs)

    def sizes(self, index):
        """The subsets' size on rows ``index``: ``k``, or a long tensor of each row's (on
        ``index``'s device when it is a tensor)."""
        if np.ndim(self.k) == 0:
            return self.k
        if isinstance(index, torch.Tensor):
            return self._on_device("k", index.device, torch.long)[index]
        return torch.as_tensor(np.asarray(self.k)[index], dtype=torch.long)

    def targets(self, index):
        """The greedy target subsets of rows ``index`` (an ndarray, or a tensor on
        ``index``'s device when it is a tensor)."""
        if isinstance(index, torch.Tensor):
            return self._on_device("imitate", index.device, torch.float32)[index]
        return self.imitate[index]

    def _on_device(self, name, device, dtype):
        """The array parameter ``name`` as a tensor on ``device``, copied there once a fit."""
        cache = self.__dict__.setdefault("_on_device_", {})
        if (name, device) not in cache:
            cache[name, device] = torch.as_tensor(np.asarray(getattr(self, name)), dtype=dtype,
                                                  device=device)
        return cache[name, device]

    def initialize_optimizer(self, *args, **kwargs):
        self.optimizer_ = self.module_optimizer("optimizer", self.module_)
        return self

    def train_step(self, batch, **fit_params):
        X, index = self.batch_tensors(batch)
        index = index.long().view(-1).cpu().numpy()
        self.module_.train()
        logits = self.module_(X)
        imitation, scale = imitation_term(logits, self.targets(index), self.sizes(index))
        loss = -imitation / scale
        self.step(self.optimizer_, loss, self.module_)
        return {"loss": loss.detach(), "y_pred": None}


class ModelJudgedNet(ImitationNet):
    """Refines a fitted selector (``module``, an initialised module trained in place) by the
    score-function gradient of the black box's own reward on masked training rows.

    It is fed what the selector sees and, as targets, the rows' indices into the
    :class:`ModelJudge`'s rows. The selector's outputs are the groups' log-weights: every
    method's scores (L2X's logits, REAL-X's probabilities, HardKuma's open-gate
    probabilities) increase with them, so their top-k is the explainer's mask. ``imitate``
    (n_rows, n_groups), when given, holds per-row target subsets (0/1; all-zero rows have
    none) that the selector is also taught, see :meth:`_imitation_weight`.

    ``k`` is the groups of every row's subsets, or an array of each row's own number (a
    thresholded selection, ``k=None``): then ``threshold`` is the score above which the
    explainer selects a group, ``scores_of(outputs)`` its scores, and a hinge pulls that
    many groups of each row above the threshold and the others below it (by
    ``_SIZE_MARGIN``), so that the refined selector changes which groups the rows hold
    rather than how many.
    """

    # How far the scores of a thresholded selection are kept from the threshold. The hinge
    # weighs as much as the score-function loss: ten times more (measured on a switch
    # model) pins every row's groups and nothing is refined; as it is, a row may trade its
    # size by one, the mean size holds.
    _SIZE_MARGIN = 0.05

    def __init__(self, module, *, k, model_judge, n_samples=8, imitate=None, threshold=None,
                 scores_of=None, **kwargs):
        self.module = module
        self.k = k
        self.model_judge = model_judge
        self.n_samples = n_samples
        self.imitate = imitate
        self.threshold = threshold
        self.scores_of = scores_of
        super().__init__(module, k=k, imitate=imitate, **kwargs)

    def _size_loss(self, logits, sizes):
        """The hinge that keeps ``sizes`` groups of each row above the threshold: the
        ``sizes``-th largest score over it by the margin, the next one under it."""
        scores = self.scores_of(logits)
        ranked = scores.sort(dim=1, descending=True).values
        sizes = sizes.to(logits.device).unsqueeze(1)
        margin, n_groups = self._SIZE_MARGIN, scores.shape[1]
        inside = ranked.gather(1, sizes - 1)
        outside = ranked.gather(1, sizes.clamp(max=n_groups - 1))
        below = torch.relu(outside - self.threshold + margin) * (sizes < n_groups)
        return (torch.relu(self.threshold + margin - inside) + below).mean()

    def initialize_module(self):
        self.budget_spent_ = False
        return super().initialize_module()

    def _imitation_weight(self):
        """Weight of the greedy targets in this epoch's loss: from 1 down to 0 at half the
        epochs, so that the score-function gradient alone has the last word (a greedy
        search is myopic where a feature matters only with another one). An extended
        budget's epochs (from ``extended_at_`` to ``epochs_planned_``) start over: on
        statsmodels' fair (affairs, a boosting regressor, k = 2) an extension with them
        raised L2X's fidelity on the test rows from 30 to 54 %, without them to 30."""
        if self.imitate is None:
            return 0.0
        epoch, start, span = len(self.history) - 1, 0, self.max_epochs
        extended_at = getattr(self, "extended_at_", None)
        if extended_at is not None and epoch >= extended_at:
            start, span = extended_at, self.epochs_planned_ - extended_at
        return max(0.0, 1.0 - 2.0 * (epoch - start) / max(span, 1))

    def train_step(self, batch, **fit_params):
        X, index = self.batch_tensors(batch)
        index = index.long().view(-1)
        # With a torch model on the selector's device the rows, the masks and the model's
        # answers stay there (ModelJudge.on_device): the step reads nothing back.
        on_device = self.model_judge.on_device(X.device)
        if not on_device:
            index = index.cpu().numpy()
        queries = len(index) * self.n_samples * self.model_judge.cost_queries
        # The step is taken only if the budget pays for it and for the evaluation that
        # ends the epoch (KeepBestByModel's); otherwise the epoch's remaining steps are
        # skipped and training ends after that evaluation.
        judged = len(dict(self.callbacks_)["keep_best"].index)
        reserve = judged * self.model_judge.judged_queries
        if self.budget_spent_ or not self.model_judge.affords(queries + reserve):
            self.budget_spent_ = True
            return {"loss": torch.zeros((), device=X.device), "y_pred": None}
        self.module_.train()
        logits = self.module_(X)
        sizes = self.sizes(index)
        if on_device:
            rows = index.repeat_interleave(self.n_samples)
            cost = lambda hard: self.model_judge.costs(rows, hard)  # noqa: E731
        else:
            rows = np.repeat(index, self.n_samples)
            cost = lambda hard: self.model_judge.costs(rows, hard.cpu().numpy())  # noqa: E731
        most = int(np.max(self.k)) if on_device and np.ndim(self.k) else None
        # Each answer of a classifier weighs alike in the gradient, as in score and the
        # imitation: the rare answer's rows would otherwise move the selector little.
        weights = self.model_judge.row_weights(index)
        loss, costs, _ = score_function_loss(logits, sizes, self.n_samples, cost, most=most,
                                             weights=weights)
        weight = self._imitation_weight()
        if weight > 0:
            imitation, scale = imitation_term(logits, self.targets(index), sizes)
            loss = loss - weight * imitation / scale
        if isinstance(sizes, torch.Tensor):
            loss = loss + self._size_loss(logits, sizes)
        self.step(self.optimizer_, loss, self.module_)
        return {"loss": costs.mean(), "y_pred": None}


class KeepBestByModel(Callback):
    """Keeps the selector whose top-k masks of the evaluation rows the model judges most
    faithful (mixed with the in-distribution judge's agreement when the refinement gives it
    a weight), from the start of training (the method's own selector) on; stops after
    ``patience`` epochs without a better one once the greedy targets no longer weigh in
    (:meth:`ModelJudgedNet._imitation_weight`), or when the model judge's budget cannot pay
    for another epoch's step and evaluation. Records ``model_fidelity`` per epoch."""

    def __init__(self, net_input, index, *, patience):
        self.net_input = net_input
        self.index = index
        self.patience = patience

    def _judged(self, net):
        masks = net.group_masks(self.net_input[self.index], net.sizes(self.index))
        return net.model_judge.judged(self.index, masks)

    def on_train_begin(self, net, **kwargs):
        if len(net.history):  # training goes on (an extended budget): the best so far stands
            return
        self.best_, self.start_fidelity_ = self._judged(net)
        self.best_state_ = copy.deepcopy(net.module_.state_dict())
        self.stale_ = 0
        # After the imitation epochs (ImitationNet), the selector before them, judged then:
        # ``(judged, fidelity, state)``.
        own = getattr(self, "own_", None)
        if own is not None:
            self.start_fidelity_ = own[1]
            if own[0] > self.best_:
                self.best_, self.best_state_ = own[0], own[2]

    def on_epoch_end(self, net, **kwargs):
        net.model_judge.check_finite()  # the answers of the epoch's steps on the device
        judged, fidelity = self._judged(net)
        net.history.record("model_fidelity", fidelity)
        if judged > self.best_:
            self.best_, self.stale_ = judged, 0
            self.best_state_ = copy.deepcopy(net.module_.state_dict())
        elif net._imitation_weight() == 0:
            # Epochs still pulled toward the greedy targets do not count: the score-function
            # gradient alone gets ``patience`` epochs after them to improve on their best.
            self.stale_ += 1
        # Also stop when the budget (queries or time) cannot pay for a step of the next
        # epoch and its evaluation.
        next_epoch = (net.n_samples * net.batch_size * net.model_judge.cost_queries
                      + len(self.index) * net.model_judge.judged_queries)
        if (self.stale_ >= self.patience or net.budget_spent_
                or not net.model_judge.affords(next_epoch)):
            raise KeyboardInterrupt  # skorch's way to end training early

    def on_train_end(self, net, **kwargs):
        net.module_.load_state_dict(self.best_state_)
        net.module_.eval()
