"""SOInter's questions to the model, and what it keeps of the answers.

SOInter never differentiates the black box: it asks it about masked rows. Before the
interpreter trains, the model's per-output distributions on the full rows and on rows with
random k-subsets kept are the energy network's training set (:func:`energy_training_set`);
while it trains, the model is re-queried on the interpreter's own masks between epochs
(Algorithm 1, :class:`Requery`), and its codes on them are what the hinge reads. Every
answer is :func:`model_states`: the model's outputs on the masked rows, the left-out
features at the baseline or drawn from the data.
"""

import numpy as np
import torch
from skorch.callbacks import Callback

from .._topk import random_masks
from .._utils import in_chunks


def energy_training_set(black_box, masker, spec, X, X_scaled, targets, *, n_masks, k,
                        append_mask, fill, n_draws):
    """The energy network's rows (as :meth:`Masker.mask` gives them) and the model's
    per-output distributions on them: the full rows, with the model's outputs ``targets``
    on them, then ``n_masks`` copies of every row with a random ``k``-subset of groups kept
    (:func:`model_states` on them). ``X`` holds the rows in their units, ``X_scaled`` as
    the networks see them."""
    full = torch.as_tensor(X_scaled)
    rows = [masker.mask(full, torch.ones_like(full), append_mask=append_mask).numpy()]
    proba = [spec.state_probabilities(targets)]
    for _ in range(n_masks):
        # Seeded from torch's generator, which fit seeds.
        draws = random_masks(len(X), masker.n_groups_, k,
                             random_state=int(torch.randint(2**31 - 1, ())))
        rows.append(masker.mask(full, torch.as_tensor(masker.expand(draws)),
                                append_mask=append_mask).numpy())
        proba.append(model_states(black_box, masker, spec, X, masker.expand_raw(draws), fill=fill,
                                  n_draws=n_draws, pool=X))
    return np.concatenate(rows), np.concatenate(proba)


def model_states(black_box, masker, spec, X, masks, *, fill, n_draws, pool):
    """The model's per-output distributions over values (``OutputSpec.state_probabilities``)
    on ``X`` with ``masks`` kept and the rest at the baseline, or (``fill="draws"``) the
    mean of those distributions over ``n_draws`` fillings with the values of random rows of
    ``pool``."""
    if fill == "baseline":
        return spec.state_probabilities(in_chunks(black_box.predict, masker.mask_raw(X, masks)))
    total = 0.0
    for _ in range(n_draws):
        # torch's generator, which fit seeds from random_state
        donors = pool[torch.randint(len(pool), (len(X),)).numpy()]
        outputs = in_chunks(black_box.predict, masker.mask_raw(X, masks, fill=donors))
        total = total + spec.state_probabilities(outputs)
    return (total / n_draws).astype(np.float32)


class Requery(Callback):
    """Algorithm 1's re-query of the model on the interpreter's masks, between epochs.

    Before the first epoch and after every one, the model's codes on the training rows
    masked by the interpreter (a Gumbel top-k draw with ``mode="sample"``, its top-k with
    ``"topk"``) become the net's ``masked_codes_`` for the next epoch; with ``"batch"`` the
    net queries the model in every step and nothing is stored. After every epoch the
    history records the share of rows whose target flips under the top-k masks
    (``topk_flip_rate``), with ``fill="draws"`` the expected share under the draws
    (``draws_flip_rate``), and the one of those that picks the interpreter to keep
    (``kept_flip_rate``); with ``"sample"`` and ``"topk"``, the flips under the masks of
    the next epoch (``flip_rate``).
    """

    def __init__(self, net_input, full_codes, *, mode):
        self.net_input = net_input
        self.full_codes = full_codes
        self.mode = mode

    def release(self):
        """Drop the training rows' data, once training is over."""
        self.net_input = self.full_codes = None

    def on_train_begin(self, net, **kwargs):
        _store_codes(net, "full_codes_", self.full_codes)
        if self.mode != "batch":
            masks = net.interpreter_masks(self.net_input, sample=self.mode == "sample")
            _store_codes(net, "masked_codes_", net.model_codes(masks))

    def on_epoch_end(self, net, **kwargs):
        target, full = net.target, self.full_codes[:, net.target]
        topk_masks = net.interpreter_masks(self.net_input, sample=False)
        topk = net.model_codes(topk_masks)
        topk_rate = float(np.mean(topk[:, target] != full))
        rate = topk_rate
        if net.fill == "draws":
            rows = np.arange(len(full))
            proba = model_states(net.black_box, net.masker, net.output_spec, net.rows, topk_masks,
                                 fill=net.fill, n_draws=net.n_draws, pool=net.rows)
            # the target's columns in the per-output distributions of model_states
            offset = int(np.sum(net.output_spec.n_states[:target]))
            rate = float(1.0 - proba[rows, offset + full].mean())
            net.history.record("draws_flip_rate", rate)
        if self.mode != "batch":
            masked = topk
            if self.mode == "sample":
                masked = net.model_codes(net.interpreter_masks(self.net_input, sample=True))
            _store_codes(net, "masked_codes_", masked)
            net.history.record("flip_rate", float(np.mean(masked[:, target] != full)))
        net.history.record("topk_flip_rate", topk_rate)
        net.history.record("kept_flip_rate", rate)


def _store_codes(net, name, codes):
    """The model's codes (an ndarray) into the net's tensor ``name`` on its device, which
    the training steps index there: written in place over the last ones, so that a step
    captured in a CUDA graph reads the new codes."""
    codes = torch.as_tensor(codes, device=net.device)
    held = getattr(net, name, None)
    if isinstance(held, torch.Tensor) and held.shape == codes.shape \
            and held.dtype == codes.dtype and held.device == codes.device:
        held.copy_(codes)
    else:
        setattr(net, name, codes)
