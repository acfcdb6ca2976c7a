"""The anchors: each method's training as a plain torch loop, to measure the package's cost.

The explainer's networks (its own factories, seeded as ``fit`` seeds them) and budget, the
method's arithmetic and nothing else (device-resident tensors, the loss read once an epoch),
from public names of sk_sointer only, so that it never runs the code it is measured against.
Covered: one categorical output given as probabilities, no groups, the ``"mean"`` baseline,
REAL-X's ``"sequential"`` schedule.
"""

import math
from collections import namedtuple
from contextlib import contextmanager

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.utils import check_random_state

from sk_sointer.distributions import RebarBernoulli, SubsetConcrete

# An anchor's training: the last epoch's mean loss (skorch's ``train_loss``), the
# optimisation steps (both networks' for REAL-X) and the networks by factory name.
AnchorFit = namedtuple("AnchorFit", ["loss", "n_steps", "modules"])
_OPTIMIZERS = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW,
               "rmsprop": torch.optim.RMSprop, "sgd": torch.optim.SGD}


def fit_l2x(explainer, X, outputs, device):
    """L2X's training (eq. 6): one optimizer over selector and approximator, on masks drawn
    from the k-subset Concrete relaxation, with the soft-target cross-entropy."""
    params, device, X_t, targets = _inputs(explainer, X, outputs, device)
    n_features = X_t.shape[1]
    with _seeded(params["random_state"], device):
        selector = _network(params["selector"], n_features, n_features, device)
        approximator = _network(params["approximator"], n_features, targets.shape[1], device)
        optimizer = _optimizer(params, [*selector.parameters(), *approximator.parameters()],
                               weight_decay=params["weight_decay"])
        baseline = torch.zeros(n_features, device=device)  # the mean, standardised
        k, tau = min(params["k"], n_features), params["tau"]
        selector.train()
        approximator.train()

        def step(x, target):
            mask = SubsetConcrete(tau, selector(x), k).rsample()
            logits = approximator(baseline + mask * (x - baseline))
            return _step(optimizer, _soft_cross_entropy(logits, target).mean())

        loss, n_steps = _train(params, X_t, targets, lambda epoch: step)
    return AnchorFit(loss, n_steps, {"selector": selector, "approximator": approximator})


def fit_realx(explainer, X, outputs, device):
    """REAL-X's training (eq. 6, Algorithm 1, sequential schedule): predictor-only epochs
    on random masks, then REBAR steps of the selector against the frozen predictor."""
    params, device, X_t, targets = _inputs(explainer, X, outputs, device)
    if params["schedule"] != "sequential":
        raise ValueError(f"The REAL-X anchor runs the sequential schedule; got "
                         f"{params['schedule']!r}.")
    n_features, append_mask = X_t.shape[1], params["append_mask"]
    with _seeded(params["random_state"], device):
        selector = _network(params["selector"], n_features, n_features, device)
        predictor = _network(params["predictor"], n_features * (2 if append_mask else 1),
                             targets.shape[1], device)
        # The selector's optimizer carries the weight decay, the predictor's none.
        selector_optimizer = _optimizer(params, selector.parameters(),
                                        weight_decay=params["weight_decay"])
        predictor_optimizer = _optimizer(params, predictor.parameters())
        baseline = torch.zeros(n_features, device=device)  # the mean, standardised
        alpha, tau, n_predictor_epochs = params["alpha"], params["tau"], params["predictor_epochs"]

        def judge(x, masks):
            masked = baseline + masks * (x - baseline)
            return predictor(torch.cat([masked, masks], dim=1) if append_mask else masked)

        def predictor_step(x, target):
            masks = (torch.rand(len(x), n_features, device=device) < 0.5).float()
            return _step(predictor_optimizer,
                         _soft_cross_entropy(judge(x, masks), target).mean())

        def selector_step(x, target):
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
            return (-f_hard.detach() + alpha * sparsity.detach()).mean()

        def epoch_step(epoch):
            if epoch <= n_predictor_epochs:
                for group in predictor_optimizer.param_groups:
                    # The package's cosine decay from 1 at epoch 1 over the predictor epochs.
                    group["lr"] = params["lr"] * 0.5 * (1.0 + math.cos(
                        math.pi * min(epoch - 1, n_predictor_epochs) / n_predictor_epochs))
                predictor.train()
                return predictor_step
            # The predictor is fixed from here on: evaluation mode keeps its batch-norm
            # statistics those of the random masks, and no gradient reaches its weights.
            predictor.eval()
            predictor.requires_grad_(False)
            selector.train()
            return selector_step

        loss, n_steps = _train(params, X_t, targets, epoch_step)
    return AnchorFit(loss, n_steps, {"selector": selector, "predictor": predictor})


# The anchor of each registry method, by its name in ``registry.METHODS``.
ANCHORS = {"l2x": fit_l2x, "realx": fit_realx}


def _inputs(explainer, X, outputs, device):
    """The explainer's parameters, checked, the device, and on it what the networks see."""
    params = explainer.get_params(deep=False)
    baseline, groups, split = params["baseline"], params["groups"], params["train_split"]
    mean = isinstance(baseline, str) and baseline == "mean"
    if not mean or groups is not None or split is not None:
        raise ValueError("The anchors run baseline='mean' on every row without groups; got "
                         f"baseline={baseline!r}, groups={groups!r}, train_split={split!r}.")
    device = torch.device(device)
    X_t = torch.as_tensor(np.asarray(X, dtype=np.float32), device=device)
    X_t = (X_t - X_t.mean(dim=0)) / X_t.std(dim=0, correction=0)
    return params, device, X_t, torch.as_tensor(np.asarray(outputs, dtype=np.float32),
                                                device=device)


@contextmanager
def _seeded(random_state, device):
    """torch seeded as ``fit`` seeds it, the caller's random state kept."""
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


def _optimizer(params, parameters, **options):
    optimizer = params["optimizer"]
    optimizer = _OPTIMIZERS[optimizer] if isinstance(optimizer, str) else optimizer
    return optimizer(parameters, lr=params["lr"], **options)


def _step(optimizer, loss):
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.detach()


def _train(params, X_t, targets, epoch_step):
    """Every epoch's batches (blocks of a fresh permutation but a last one of a single row, as
    in the package) through ``epoch_step(epoch)(x, target)`` (a step taken, its loss); the
    last epoch's loss per row and the steps taken."""
    n_rows, batch_size, n_steps = len(X_t), params["batch_size"], 0
    starts = [start for start in range(0, n_rows, batch_size) if start == 0 or n_rows - start > 1]
    for epoch in range(1, params["max_epochs"] + 1):
        step = epoch_step(epoch)
        total, rows = torch.zeros((), device=X_t.device), 0
        order = torch.randperm(n_rows, device=X_t.device)
        for start in starts:
            index = order[start : start + batch_size]
            total += step(X_t[index], targets[index]) * len(index)
            rows += len(index)
            n_steps += 1
    return float(total.item()) / rows, n_steps
