"""The anchors: each method's training as a plain torch loop, to measure the package's cost.

An anchor reads an unfitted explainer's parameters and trains the same networks (its own
factories, seeded as ``fit`` seeds them) with the same budget, doing the method's arithmetic
and nothing else: device-resident tensors, batches sliced by ``torch.randperm`` blocks, the
loss brought to the host once an epoch. It imports public names of sk_sointer only, so it
never calls the code it is measured against. Covered: one categorical output given as
probabilities, no groups, the ``"mean"`` baseline, REAL-X's ``"sequential"`` schedule.
"""

import math
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.utils import check_random_state

from sk_sointer.distributions import RebarBernoulli, SubsetConcrete


@dataclass
class AnchorFit:
    """An anchor's training: the last epoch's mean loss (skorch's ``train_loss``), the
    optimisation steps (both networks' for REAL-X) and the networks by factory name."""

    loss: float
    n_steps: int
    modules: dict


def fit_l2x(explainer, X, outputs, device):
    """L2X's training (eq. 6): one optimizer over selector and approximator, on masks drawn
    from the k-subset Concrete relaxation, with the soft-target cross-entropy."""
    params, device, X_t, targets = _inputs(explainer, X, outputs, device)
    n_rows, n_features = X_t.shape
    with _seeded(params["random_state"], device):
        selector = _network(params["selector"], n_features, n_features, device)
        approximator = _network(params["approximator"], n_features, targets.shape[1], device)
        optimizer = _optimizer(params, [*selector.parameters(), *approximator.parameters()],
                               weight_decay=params["weight_decay"])
        baseline = torch.zeros(n_features, device=device)  # the mean, standardised
        k, tau = min(params["k"], n_features), params["tau"]
        selector.train()
        approximator.train()
        n_steps = 0
        for _ in range(params["max_epochs"]):
            total = torch.zeros((), device=device)
            for index in _batches(n_rows, params["batch_size"], device):
                x, target = X_t[index], targets[index]
                mask = SubsetConcrete(tau, selector(x), k).rsample()
                logits = approximator(baseline + mask * (x - baseline))
                loss = _soft_cross_entropy(logits, target).mean()
                _step(optimizer, loss)
                total += loss.detach() * len(index)
                n_steps += 1
    return AnchorFit(_epoch_mean(total, n_rows, params["batch_size"]), n_steps,
                     {"selector": selector, "approximator": approximator})


def fit_realx(explainer, X, outputs, device):
    """REAL-X's training (eq. 6, Algorithm 1, sequential schedule): predictor-only epochs
    on random masks, then REBAR steps of the selector against the frozen predictor."""
    params, device, X_t, targets = _inputs(explainer, X, outputs, device)
    if params["schedule"] != "sequential":
        raise ValueError(f"The REAL-X anchor runs the sequential schedule; got "
                         f"{params['schedule']!r}.")
    n_rows, n_features = X_t.shape
    append_mask = params["append_mask"]
    with _seeded(params["random_state"], device):
        selector = _network(params["selector"], n_features, n_features, device)
        predictor = _network(params["predictor"], n_features * (2 if append_mask else 1),
                             targets.shape[1], device)
        # The selector's optimizer carries the weight decay, the predictor's none.
        selector_optimizer = _optimizer(params, selector.parameters(),
                                        weight_decay=params["weight_decay"])
        predictor_optimizer = _optimizer(params, predictor.parameters())
        baseline = torch.zeros(n_features, device=device)  # the mean, standardised

        def judge(x, masks):
            masked = baseline + masks * (x - baseline)
            return predictor(torch.cat([masked, masks], dim=1) if append_mask else masked)

        alpha, tau = params["alpha"], params["tau"]
        n_predictor_epochs = params["predictor_epochs"]
        n_steps = 0
        for epoch in range(1, params["max_epochs"] + 1):
            total = torch.zeros((), device=device)
            if epoch <= n_predictor_epochs:
                for group in predictor_optimizer.param_groups:
                    # The package's cosine decay from 1 at epoch 1 over the predictor epochs.
                    group["lr"] = params["lr"] * 0.5 * (1.0 + math.cos(
                        math.pi * min(epoch - 1, n_predictor_epochs) / n_predictor_epochs))
                predictor.train()
                for index in _batches(n_rows, params["batch_size"], device):
                    x, target = X_t[index], targets[index]
                    masks = (torch.rand(len(index), n_features, device=device) < 0.5).float()
                    loss = _soft_cross_entropy(judge(x, masks), target).mean()
                    _step(predictor_optimizer, loss)
                    total += loss.detach() * len(index)
                    n_steps += 1
                continue
            # The predictor is fixed from here on: evaluation mode keeps its batch-norm
            # statistics those of the random masks, and no gradient reaches its weights.
            predictor.eval()
            predictor.requires_grad_(False)
            selector.train()
            for index in _batches(n_rows, params["batch_size"], device):
                x, target = X_t[index], targets[index]
                logits = selector(x)
                selection = RebarBernoulli(tau, logits)
                draw = selection.rebar_sample()  # eqs. 8-10
                masks = torch.cat([draw.hard, draw.relaxed, draw.conditional])
                log_lik = -_soft_cross_entropy(judge(x.repeat(3, 1), masks), target.repeat(3, 1))
                f_hard, f_relaxed, f_conditional = log_lik.chunk(3)
                sparsity = torch.sigmoid(logits).mean(dim=1)
                surrogate = (  # eq. 11, with the sparsity penalty
                    (f_hard - f_conditional).detach() * selection.log_prob(draw.hard)
                    + f_relaxed - f_conditional - alpha * sparsity
                )
                _step(selector_optimizer, -surrogate.mean())
                objective = (-f_hard.detach() + alpha * sparsity.detach()).mean()
                total += objective * len(index)
                n_steps += 1
    return AnchorFit(_epoch_mean(total, n_rows, params["batch_size"]), n_steps,
                     {"selector": selector, "predictor": predictor})


# The anchor of each registry method, by its name in ``registry.METHODS``.
ANCHORS = {"l2x": fit_l2x, "realx": fit_realx}


def _inputs(explainer, X, outputs, device):
    """The explainer's parameters, checked; the device; the standardised rows and the
    outputs as float32 tensors on it: what the package's networks see."""
    params = explainer.get_params(deep=False)
    baseline = params["baseline"]
    if not (isinstance(baseline, str) and baseline == "mean") or params["groups"] is not None:
        raise ValueError("The anchors run the default baseline ('mean') without feature "
                         f"groups; got baseline={baseline!r}, groups={params['groups']!r}.")
    if params["train_split"] is not None:
        raise ValueError("The anchors train on every row; got train_split="
                         f"{params['train_split']!r}.")
    device = torch.device(device)
    X_t = torch.as_tensor(np.asarray(X, dtype=np.float32), device=device)
    X_t = (X_t - X_t.mean(dim=0)) / X_t.std(dim=0, correction=0)
    return params, device, X_t, torch.as_tensor(np.asarray(outputs, dtype=np.float32),
                                                device=device)


@contextmanager
def _seeded(random_state, device):
    """torch seeded as ``fit`` seeds it (an integer drawn from ``random_state``), the
    caller's random state kept."""
    seed = int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
    with torch.random.fork_rng(devices=[device.index or 0] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        yield


def _soft_cross_entropy(logits, target):
    """Per row ``-sum_c P(c | x) log q(c | .)``, the loss of one categorical output."""
    return -(target * F.log_softmax(logits, dim=1)).sum(dim=1)


def _network(factory, in_features, out_features, device):
    # The package's tabular factories (MLP) take the two sizes.
    return factory(in_features=in_features, out_features=out_features).to(device)


_OPTIMIZERS = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW,
               "rmsprop": torch.optim.RMSprop, "sgd": torch.optim.SGD}


def _optimizer(params, parameters, **options):
    optimizer = params["optimizer"]
    optimizer = _OPTIMIZERS[optimizer] if isinstance(optimizer, str) else optimizer
    return optimizer(parameters, lr=params["lr"], **options)


def _step(optimizer, loss):
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


def _batches(n_rows, batch_size, device):
    """Index blocks of a fresh permutation; a last block of one row is left out, as the
    package does (batch normalisation cannot normalise a single row)."""
    order = torch.randperm(n_rows, device=device)
    for start in range(0, n_rows, batch_size):
        if start > 0 and n_rows - start == 1:
            return
        yield order[start : start + batch_size]


def _epoch_mean(total, n_rows, batch_size):
    """The last epoch's loss per row, over the rows its batches held."""
    rows = n_rows - 1 if n_rows > batch_size and n_rows % batch_size == 1 else n_rows
    return float(total.item()) / rows
