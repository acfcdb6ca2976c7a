"""The skorch net base every method's training objective extends.

An amortized explainer is a *selector* (``module_``: a row in, one logit per feature group
out) and one or more *judges* of its masks (L2X's approximator, REAL-X's random-mask
predictor, MEED's two approximators, ...), each built from a factory. The base owns what
they all share, so that a method's module holds its maths and little else:

- building the selector and every judge from their factories, at the widths the problem
  implies (``judges``: the names of the extra modules, each also a constructor argument
  holding its factory; the module is stored with a trailing ``_``);
- the masker: judges see ``m(x, s)`` on standardised rows, optionally with the mask
  appended, and group masks are expanded to features;
- the 1-based epoch, stepping one optimizer on one module's parameters only, and
  optimizers for one module with their own ``<prefix>__`` options;
- :meth:`predict_masked`, the judge's outputs on masked rows in the black box's scale.
"""

import torch
from skorch import NeuralNet
from skorch.dataset import unpack_data
from skorch.utils import to_tensor

from .._networks import build_network
from .._outputs import OutputLoss, output_values


class SelectorJudgeNet(NeuralNet):
    """Base skorch net: a selector (``module_``) and the judges of its masks.

    Parameters
    ----------
    module : callable
        Factory of the selector network; or, when the class sets ``selector = False``
        (an evaluator with no selector, such as EVAL-X's), of the judge itself.
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
    **kwargs
        skorch's own parameters, and one factory per name in ``judges``.
    """

    # Names of the judge modules; each is a constructor argument holding its factory.
    judges = ()
    # The module that predict_masked uses, among "module" and the judges.
    judge = None
    # False: ``module`` is the judge itself (an evaluator without a selector).
    selector = True

    def __init__(self, module, *, masker, output_spec, append_mask=False,
                 selector_in_features=None, input_shape=None, **kwargs):
        for name in self.judges:
            setattr(self, name, kwargs.pop(name))
        self.masker = masker
        self.output_spec = output_spec
        self.append_mask = append_mask
        self.selector_in_features = selector_in_features
        self.input_shape = input_shape
        super().__init__(module, criterion=OutputLoss, criterion__spec=output_spec, **kwargs)

    @property
    def n_features(self):
        return len(self.masker.mean_)

    @property
    def judge_in_features(self):
        return self.n_features * (2 if self.append_mask else 1)

    @property
    def epoch(self):
        """The current epoch, from 1: skorch opens an epoch's history row before its first
        batch."""
        return len(self.history)

    def initialize_module(self):
        if self.selector:
            in_features = self.selector_in_features or self.n_features
            self.module_ = build_network(self.module, in_features, self.masker.n_groups_,
                                         self.input_shape)
        else:
            self.module_ = self._build_judge(self.module)
        for name in self.judges:
            setattr(self, name + "_", self._build_judge(getattr(self, name)).to(self.device))
        return self

    def _build_judge(self, factory):
        return build_network(factory, self.judge_in_features, self.output_spec.n_columns,
                             self.input_shape)

    def module_optimizer(self, prefix, module):
        """An instance of the net's optimizer class over ``module``'s parameters only, with
        the options given as ``<prefix>__name`` (``optimizer__weight_decay``, ...)."""
        groups, options = self.get_params_for_optimizer(prefix, module.named_parameters())
        return self.optimizer(*groups, **options)

    @staticmethod
    def step(optimizer, loss, module):
        """Step ``optimizer`` on the gradient of ``loss`` with respect to ``module``'s
        parameters only: other modules' ``.grad`` stay untouched, so a loss meant for one
        network can never train another."""
        params = [p for p in module.parameters() if p.requires_grad]
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        for param, grad in zip(params, grads):
            param.grad = grad  # replaces, so nothing from a previous step accumulates
        optimizer.step()

    def batch_tensors(self, batch):
        """``(X, targets)`` of a batch as tensors on the net's device."""
        X, targets = unpack_data(batch)
        return to_tensor(X, device=self.device), to_tensor(targets, device=self.device)

    def masked(self, X, group_masks):
        """What a judge sees: ``m(x, s)`` for a mask over groups, mask appended if asked.

        ``X`` is what the net is fed: the standardised rows, possibly followed by extra
        columns that only the selector reads (a method's ``_selector_input``); the judges
        see the rows alone."""
        rows = X[:, : self.n_features]
        return self.masker.mask(rows, self.masker.expand(group_masks), append_mask=self.append_mask)

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
