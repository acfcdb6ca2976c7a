"""The skorch net base every method's training objective extends.

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
  box's scale.

The judges trained alone over a net's problem (the refinement's in-distribution judge, the
judge fitted to the final masks) are :mod:`~sk_sointer._training.random_masks`'s, beside
:class:`~sk_sointer._training.random_masks.JudgeNet`; the nets that refine a fitted
selector against the model itself are :mod:`sk_sointer._model_judge`'s.
"""

import torch
from skorch import NeuralNet
from skorch.dataset import unpack_data
from skorch.utils import to_tensor

from .._networks import build_network
from .._outputs import OutputLoss, output_values
from .._utils import PortableNet, in_chunks, set_mode
from .._topk import topk_mask, topk_masks_of_sizes
from ..distributions import GumbelTopK
from .batches import index_batches
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
