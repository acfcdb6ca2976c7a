"""The skorch net base every method's training objective extends, and the nets that refine
a fitted selector against the model.

An amortized explainer is a *selector* (``module_``: a row in, one logit per feature group
out) and one or more *judges* of its masks (L2X's approximator, REAL-X's random-mask
predictor, MEED's two approximators, ...), each built from a factory.
:class:`SelectorJudgeNet` owns what they all share, so that a method's module holds its
maths and little else:

- building the selector and every judge from their factories, at the widths the problem
  implies (``judges``: the names of the extra modules, each also a constructor argument
  holding its factory; the module is stored with a trailing ``_``);
- the masker: judges see ``m(x, s)`` on standardised rows, optionally with the mask
  appended, and group masks are expanded to features;
- the 1-based epoch, stepping one optimizer on one module's parameters only
  (:class:`~sk_sointer._training.updates.UpdateSteps`), and optimizers for one module with
  their own ``<prefix>__`` options;
- :meth:`~SelectorJudgeNet.predict_masked`, the judge's outputs on masked rows in the black
  box's scale;
- the model itself as a judge: :class:`ModelJudgedNet` refines any method's fitted selector
  against the black box's own answers on masked training rows
  (:meth:`SelectorJudgeNet.refine`, with the losses of :mod:`~sk_sointer._training.losses`;
  ``sk_sointer._search`` holds the judge and the configuration), :class:`ImitationNet`
  first teaches it greedy targets, and :class:`KeepBestByModel` keeps the selector the
  model judges best.

The refinement's nets subclass :class:`SelectorJudgeNet` and :meth:`SelectorJudgeNet.refine`
builds them, so they share this module.
"""

import copy
import time

import numpy as np
import torch
from skorch import NeuralNet
from skorch.callbacks import Callback
from skorch.dataset import unpack_data
from skorch.utils import to_tensor

from .._networks import MLP, build_network
from .._outputs import OutputLoss, output_values
from .._utils import PortableNet, in_chunks, set_mode
from .._topk import topk_mask, topk_masks_of_sizes
from ..distributions import GumbelTopK
from .batches import index_batches
from .losses import imitation_term, score_function_loss
from .updates import Update, UpdateSteps


class SelectorJudgeNet(UpdateSteps, PortableNet, NeuralNet):
    """Base skorch net: a selector (``module_``) and the judges of its masks.

    Parameters
    ----------
    module : callable or torch.nn.Module
        Factory of the selector network; or, when the class sets ``selector = False``
        (an evaluator with no selector, such as EVAL-X's), of the judge itself. An
        initialised module is trained in place (a later phase of a fitted net's training:
        the refinement of its selector, MEED's prior surrogate).
    masker : Masker
        Fitted masker of the problem (baseline, standardisation, groups).
    output_spec : OutputSpec
        What the judges predict.
    append_mask : bool, default=False
        Give the judges the mask next to the masked row.
    selector_in_features : int, default=None
        Width of what the selector sees; default: the number of features.
    input_shape : tuple, default=None
        Shape of one input row, passed to factories that accept it.
    n_tokens : int, default=None
        With token ids (a masker with ``tokens=True``): the number of ids, passed to
        factories that accept it (their embedding's size).
    data_on_device : bool, default=True
        Move the training rows to the net's device once per fit and slice batches there;
        ``False`` keeps them on the host and copies every batch.
    cuda_graphs : bool, default=True
        On CUDA, capture the training step in a CUDA graph and replay it (see
        :mod:`~sk_sointer._training.graphs`); ``False`` runs every step eagerly.
    **kwargs
        skorch's own parameters, and one factory per name in ``judges``.
    """

    # Names of the judge modules; each is a constructor argument holding its factory.
    judges = ()
    # The module that predict_masked uses, among "module" and the judges.
    judge = None
    # False: ``module`` is the judge itself (an evaluator without a selector).
    selector = True
    # True where the judge learns on relaxed masks (L2X's and MEED's approximators, on
    # k-subset Concrete samples) but answers on the selector's exact top-k: the fit then
    # ends with fit_judge_to_masks. The optimizer whose options the judge trains with.
    judge_learns_relaxed_masks = False
    judge_optimizer = "optimizer"

    def __init__(self, module, *, masker, output_spec, append_mask=False,
                 selector_in_features=None, input_shape=None, n_tokens=None, data_on_device=True,
                 cuda_graphs=True, **kwargs):
        for name in self.judges:
            setattr(self, name, kwargs.pop(name))
        self.masker = masker
        self.output_spec = output_spec
        self.append_mask = append_mask
        self.selector_in_features = selector_in_features
        self.input_shape = input_shape
        self.n_tokens = n_tokens
        self.data_on_device = data_on_device
        self.cuda_graphs = cuda_graphs
        super().__init__(module, criterion=OutputLoss, criterion__spec=output_spec, **kwargs)

    @property
    def n_features(self):
        return len(self.masker.mean_)

    @property
    def judge_in_features(self):
        # Token ids always come with their mask (the judge masks in its embedding).
        masked_width = 2 if self.append_mask or self.masker.tokens else 1
        return self.n_features * masked_width

    @property
    def epoch(self):
        """The current epoch, from 1: skorch opens an epoch's history row before its first
        batch."""
        return len(self.history)

    def initialize_module(self):
        if isinstance(self.module, torch.nn.Module):  # a later phase: trained in place
            self.module_ = self.module
        elif self.selector:
            self.module_ = self.build_selector()
        else:
            self.module_ = self._build_judge(self.module)
        for name in self.judges:
            setattr(self, name + "_", self._build_judge(getattr(self, name)).to(self.device))
        return self

    def build_selector(self):
        """The selector network, from the ``module`` factory: what the net is fed in, one
        logit per feature group out."""
        in_features = self.selector_in_features or self.n_features
        return build_network(self.module, in_features, self.masker.n_groups_, self.input_shape,
                             self.masker.groups_, self.n_tokens)

    def _build_judge(self, factory):
        return build_network(factory, self.judge_in_features, self.output_spec.n_columns,
                             self.input_shape, n_tokens=self.n_tokens)

    def phase_params(self):
        """What the net of a later training phase over this net's problem and modules
        takes from it (the refinement's, MEED's prior surrogate): the masker, the outputs,
        the rows' shape, the optimizer class and the device; no validation split, silent."""
        return dict(masker=self.masker, output_spec=self.output_spec,
                    append_mask=self.append_mask, input_shape=self.input_shape,
                    n_tokens=self.n_tokens, selector_in_features=self.selector_in_features,
                    optimizer=self.optimizer, device=self.device,
                    data_on_device=self.data_on_device, cuda_graphs=self.cuda_graphs,
                    train_split=None, verbose=0)

    def module_optimizer(self, prefix, module):
        """An instance of the net's optimizer class over ``module``'s parameters only (or
        those of a dict of modules, each's named under its key: MEED's two approximators),
        with the options given as ``<prefix>__name`` (``optimizer__weight_decay``, ...)."""
        named = (module.named_parameters() if isinstance(module, torch.nn.Module) else
                 [p for name, part in module.items() for p in part.named_parameters(prefix=name)])
        groups, options = self.get_params_for_optimizer(prefix, named)
        return self.optimizer(*groups, **options)

    def set_modes(self, training):
        """Put the selector, the judges and the criterion in training (or evaluation) mode,
        skipping those already entirely in it.

        skorch's steps set the modes of every module before each batch; ``nn.Module.train``
        walks and re-sets every submodule through ``nn.Module.__setattr__`` even when
        nothing changes, a cost per step that a plain torch loop does not pay. A module with
        any submodule in the other mode (one whose ``train`` keeps a part in evaluation
        mode, say) is set as before."""
        for name in ("module", *self.judges, "criterion"):
            module = getattr(self, name + "_", None)
            if isinstance(module, torch.nn.Module):
                set_mode(module, training)

    # skorch's steps, with the modes set by set_modes.

    def updates(self):
        """One update of every module on skorch's loss of :meth:`infer` (a method with
        its own step lists its own updates)."""
        modules = tuple(self.state_modules().values())
        trained = tuple(m for m in modules if isinstance(m, torch.nn.Module))
        return [Update(self.infer_loss, self.optimizer_, trained, training=trained)]

    def infer_loss(self, X, targets):
        """skorch's training loss of :meth:`infer` on a batch, with the step's record."""
        y_pred = self.infer(X)
        loss = self.get_loss(y_pred, targets, X=X, training=True)
        return loss, {"loss": loss.detach(), "y_pred": y_pred.detach()}

    def validation_step(self, batch, **fit_params):
        self.set_modes(False)
        X, y = unpack_data(batch)
        with torch.no_grad():
            y_pred = self.infer(X, **fit_params)
            loss = self.get_loss(y_pred, y, X=X, training=False)
        return {"loss": loss, "y_pred": y_pred}

    def evaluation_step(self, batch, training=False):
        self.check_is_fitted()
        X, _ = unpack_data(batch)
        with torch.set_grad_enabled(training):
            self.set_modes(training)
            return self.infer(X)

    def get_iterator(self, dataset, training=False):
        """Batches sliced from whole tensors (see :class:`_IndexBatches`) when the dataset
        holds arrays, skorch's DataLoader otherwise."""
        batches = index_batches(self, dataset, training, on_device=self.data_on_device)
        return batches if batches is not None else super().get_iterator(dataset, training=training)

    def masked(self, X, group_masks):
        """What a judge sees: ``m(x, s)`` for a mask over groups, mask appended if asked.

        ``X`` is what the net is fed: the standardised rows, possibly followed by extra
        columns that only the selector reads (a method's ``_selector_input``); the judges
        see the rows alone."""
        rows = X[:, : self.n_features]
        return self.masker.mask(rows, self.masker.expand(group_masks), append_mask=self.append_mask)

    def group_masks(self, net_input, k, *, sample=False):
        """Group masks (an ndarray) of the selector's top-k of what it is fed, or
        (``sample``) of one Gumbel top-k draw per row from its logits; in evaluation
        mode. ``k`` may be a long tensor of each row's own k (not with ``sample``)."""
        self.module_.eval()
        device = next(self.module_.parameters()).device

        def masks(rows, sizes=None):
            with torch.no_grad():
                logits = self.module_(to_tensor(rows, device=device))
                if sample:
                    subsets = GumbelTopK(logits, k, validate_args=False)
                    return subsets.as_mask(subsets.sample()).cpu().numpy()
                if sizes is not None:
                    return topk_masks_of_sizes(logits, sizes.to(device)).cpu().numpy()
                return topk_mask(logits, k).cpu().numpy()

        if isinstance(k, torch.Tensor):
            return in_chunks(masks, net_input, k)
        return in_chunks(masks, net_input)

    def judge_raw(self, X, feature_masks):
        """Raw outputs (logits, standardised values) of the judge on feature-masked rows."""
        module = getattr(self, self.judge + "_")
        rows = X[:, : self.n_features]
        return module(self.masker.mask(rows, feature_masks, append_mask=self.append_mask))

    def predict_masked(self, X, feature_masks):
        """The judge's outputs on ``m(x, s)``: probabilities, or values in the target's units.

        ``X`` holds standardised rows, ``feature_masks`` 0/1 masks over the features (both
        tensors); the judge runs in evaluation mode on the net's device.
        """
        module = getattr(self, self.judge + "_")
        module.eval()
        device = next(module.parameters()).device
        with torch.inference_mode():
            raw = self.judge_raw(X.to(device), feature_masks.to(device))
            return output_values(raw, self.output_spec)

    def in_distribution_judge(self, X, targets, *, max_epochs, deadline=None):
        """EVAL-X's predictor over this net's problem, trained on random masks of the
        standardised rows ``X`` against the model's standardised outputs ``targets`` (the
        architecture of :class:`~sk_sointer.metrics.EvalXEvaluator`, its mask appended):
        the in-distribution judge of the refinement (``ModelRefinement(in_distribution=)``).
        Training ends at ``deadline`` (``time.monotonic()``'s), if given: the refinement's
        time budget covers it. Returns the fitted
        :class:`~sk_sointer._training.random_masks.JudgeNet`."""
        callbacks = [] if deadline is None else [("deadline", _Deadline(deadline))]
        judge = _judge_net()(
            MLP(hidden_units=(200, 200), batch_norm=True), masks="random",
            max_epochs=max_epochs, batch_size=min(256, len(X)), lr=1e-3, callbacks=callbacks,
            **{**self.phase_params(), "append_mask": True})
        return judge.fit(X, targets)

    def fit_judge_to_masks(self, X, group_masks, targets, *, max_epochs):
        """Train the judge (in place) on the standardised rows ``X`` masked by the
        selector's own masks of them, ``group_masks``, against the standardised outputs
        ``targets``: what it answers afterwards (:meth:`predict_masked`, ``score`` on
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
        options = self.get_params_for(self.judge_optimizer)
        module = getattr(self, self.judge + "_")
        _judge_net()(
            module, masks="given", max_epochs=max_epochs,
            batch_size=min(self.batch_size, len(X)), lr=self.lr / 10, **self.phase_params(),
            **{"optimizer__" + name: value for name, value in options.items()},
        ).fit(np.hstack([X, group_masks]).astype(np.float32), targets)
        module.eval()

    def refine(self, net_input, model_judge, refinement, *, k, n_judged=None, callbacks=(),
               threshold=None, scores_of=None):
        """Refine the fitted selector (``module_``, in place) against the black box.

        A :class:`ModelJudgedNet` trains it on the score-function gradient of the model's
        reward (``model_judge``, a :class:`~sk_sointer._search.ModelJudge` over the training
        rows, ``net_input`` being what the selector sees of them), configured by
        ``refinement`` (a :class:`~sk_sointer._search.ModelRefinement`); the selector the
        model judges best after an epoch, this one included, is kept, judged on rows drawn
        from the first ``n_judged`` (the training rows, not the synthetic ones that may
        follow them; all by default), which also bound the epochs. Every query is paid
        from ``refinement``'s budget (:meth:`~sk_sointer._search.ModelRefinement.plan`),
        the synthetic rows' answers already spent included, and the steps it cannot pay
        for are not taken; where it ends the refinement while the fidelity still rises,
        the budget grows by another ``max_queries`` and training goes on (at most
        ``max_extensions`` times, see
        :meth:`~sk_sointer._search.ModelRefinement.extension`). Returns the refinement's
        net, or ``None`` when the budget cannot pay for one evaluation (nothing refined);
        the net's history records ``model_fidelity``, its ``keep_best`` callback the
        fidelity before and after.
        ``callbacks`` (skorch's ``(name, callback)`` pairs) are added to its own, after
        ``keep_best``: progress reports. ``k`` may be an array of each row's size, kept
        above ``threshold`` (see :class:`ModelJudgedNet`); the plan then reckons with their
        mean.
        """
        n_rows = len(net_input)
        spent = model_judge.n_queries
        plan = refinement.plan(n_rows, max(1, round(float(np.mean(k)))),
                               model_judge.masker.n_groups_,
                               model_judge.value.queries_per_row, spent=spent,
                               n_training=n_judged, judged_queries=model_judge.judged_queries,
                               greedy_queries=model_judge.greedy_queries,
                               cost_queries=model_judge.cost_queries)
        if plan is None:  # the budget cannot pay for judging the selector once
            return None
        model_judge.set_budget(refinement.max_queries - spent, refinement.max_seconds)
        # The rows judged after every epoch: drawn once (torch's generator, seeded by fit).
        eval_index = np.sort(torch.randperm(n_judged or n_rows)[: plan.n_eval].numpy())
        imitate = None
        if plan.n_imitated:
            imitated = np.sort(model_judge.imitated(torch.randperm(n_rows).numpy(),
                                                    plan.n_imitated))
            imitate = np.zeros((n_rows, model_judge.masker.n_groups_), dtype=np.float32)
            if np.ndim(k) == 0:
                imitate[imitated] = model_judge.greedy(imitated, k)
                # Every answer of a classifier imitated alike, the rare one's rows included.
                imitate[imitated] *= model_judge.answer_weights(imitated)[:, None]
            else:  # the rows of each size together
                for size in np.unique(k[imitated]):
                    rows = imitated[k[imitated] == size]
                    imitate[rows] = model_judge.greedy(rows, int(size))
        keep_best = KeepBestByModel(net_input, eval_index, patience=refinement.n_iter_no_change)
        if refinement.imitate_epochs and plan.n_imitated:
            # The method's own selector stays a candidate of the keep-best.
            sizes = (k if np.ndim(k) == 0
                     else torch.as_tensor(np.asarray(k)[eval_index], dtype=torch.long))
            judged = model_judge.judged(eval_index,
                                        self.group_masks(net_input[eval_index], sizes))
            keep_best.own_ = (*judged, copy.deepcopy(self.module_.state_dict()))
            ImitationNet(
                self.module_, k=k, imitate=imitate, max_epochs=refinement.imitate_epochs,
                batch_size=min(refinement.batch_size, len(imitated)), lr=refinement.lr,
                **self.phase_params(),
            ).fit(net_input[imitated], imitated.astype(np.int64)[:, None])
        net = ModelJudgedNet(
            self.module_,
            k=k,
            model_judge=model_judge,
            n_samples=refinement.n_samples,
            imitate=imitate,
            threshold=threshold,
            scores_of=scores_of,
            max_epochs=plan.max_epochs,
            batch_size=min(refinement.batch_size, n_rows),
            lr=refinement.lr,
            callbacks=[("keep_best", keep_best), *callbacks],
            **self.phase_params(),
        )
        net.plan_ = plan  # what ended the epochs, for the explainer's convergence warning
        index = np.arange(n_rows, dtype=np.int64)[:, None]
        net.fit(net_input, index)
        # Where the query budget ended it while the fidelity still rose, the same
        # refinement goes on, paid by another max_queries (ModelRefinement.max_extensions).
        net.extensions_ = 0
        while (net.extensions_ < refinement.max_extensions
               and keep_best.stale_ < keep_best.patience and not model_judge.out_of_time()):
            curve = [keep_best.start_fidelity_, *net.history[:, "model_fidelity"]]
            epochs = refinement.extension(plan, curve, model_judge.value.queries_per_row)
            if not epochs:
                break
            model_judge.extend_budget(refinement.max_queries)
            net.extensions_ += 1
            net.budget_spent_ = False
            # The greedy targets weigh in again over the extension's first half.
            net.extended_at_ = len(net.history)
            net.epochs_planned_ = len(net.history) + epochs
            net.partial_fit(net_input, index, epochs=epochs)
        return net


def _judge_net():
    """The net class that trains a judge alone (``in_distribution_judge``,
    ``fit_judge_to_masks``): EVAL-X's JudgeNet, a subclass of SelectorJudgeNet, so defined
    in a module that imports this one."""
    from .random_masks import JudgeNet

    return JudgeNet


# The model itself as a judge
# ---------------------------


class ImitationNet(SelectorJudgeNet):
    """Trains a fitted selector (``module``, in place) to imitate per-row target subsets
    alone, without asking the model: the greedy targets of :meth:`SelectorJudgeNet.refine`
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


class _Deadline(Callback):
    """Ends training once ``time.monotonic()`` passes ``deadline`` (after the batch that
    passed it), as skorch ends it on an interrupt."""

    def __init__(self, deadline):
        self.deadline = deadline

    def on_batch_end(self, net, **kwargs):
        if time.monotonic() >= self.deadline:
            raise KeyboardInterrupt


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
