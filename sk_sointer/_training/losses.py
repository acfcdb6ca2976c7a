"""The losses of a selector judged by the model itself: :func:`score_function_loss`, the
score-function gradient of a cost of exact k-subsets drawn from the selector (or of each
row's own size), and :func:`imitation_term`, the selector's log-probability of per-row
target subsets. Both are tensor work that asks nothing of what computes the cost."""

import torch

from ..distributions import GumbelTopK


def score_function_loss(logits, k, n_samples, cost, most=None, weights=None):
    """A loss whose gradient is the score-function (REINFORCE) estimate of the gradient of
    the expected ``cost`` of exact k-subsets drawn from the selector.

    Every row draws ``n_samples`` k-subsets without replacement, with probabilities from
    ``softmax(logits)`` (Gumbel top-k); a draw's cost less the mean cost of the row's other
    draws (a leave-one-out baseline, which keeps the estimate unbiased) weighs the draw's
    Plackett-Luce log-probability. Nothing is asked of what computes the cost: it may be
    the black box itself, queried on the masked rows.

    Parameters
    ----------
    logits : tensor of shape (n_rows, n_groups)
        The selector's log-weights of the groups (differentiable).
    k : int or long tensor of shape (n_rows,)
        Groups per subset, or each row's own (a selection of its own size).
    n_samples : int
        Subsets drawn per row (at least 2 for the baseline).
    cost : callable
        ``cost(hard)``: the cost (lower is better) of every draw, from the draws' 0/1 group
        masks ``(n_rows * n_samples, n_groups)``, the draws of a row consecutive; a tensor
        or an array of shape ``(n_rows * n_samples,)``, not differentiated.
    most : int, default=None
        With a size a row, the most groups drawn (at least the largest of ``k``); by
        default the largest of ``k``, which reads it back from ``k``'s device.
    weights : array-like of shape (n_rows,), default=None
        A weight of each row's terms (mean 1 over the rows the selector learns from);
        ``None`` weighs them alike.

    Returns
    -------
    loss : tensor
    costs : tensor of shape (n_rows, n_samples)
    hard : tensor of shape (n_rows * n_samples, n_groups)
    """
    n_rows = len(logits)
    sizes = None
    if isinstance(k, torch.Tensor):  # a size a row: the largest drawn, each row's kept
        sizes = k.to(logits.device).repeat_interleave(n_samples)
        k = int(k.max()) if most is None else most
    subsets = GumbelTopK(logits.repeat_interleave(n_samples, dim=0), k, validate_args=False)
    order = subsets.sample()
    hard = subsets.as_mask(order, sizes)
    with torch.no_grad():
        costs = torch.as_tensor(cost(hard), dtype=logits.dtype, device=logits.device)
        costs = costs.view(n_rows, n_samples)
        others = (costs.sum(dim=1, keepdim=True) - costs) / max(n_samples - 1, 1)
    log_prob = subsets.log_prob(order, sizes).view(n_rows, n_samples)
    terms = (costs - others) * log_prob
    if weights is not None:
        terms = terms * torch.as_tensor(weights, dtype=logits.dtype,
                                        device=logits.device).view(n_rows, 1)
    return terms.mean(), costs, hard


def imitation_term(logits, targets, sizes):
    """``(imitation, scale)``: the selector's log-probability of the target groups
    (``targets``, 0/1 of shape (n_rows, n_groups); an all-zero row has none), summed over a
    row's targets and averaged over the rows that have some, and what it is divided by to
    count a group: ``sizes``, or 1 when ``sizes`` is a tensor of each row's (the rows'
    sums are divided by their own)."""
    targets = torch.as_tensor(targets, device=logits.device)
    # The mean over the rows that have a target (none: no term), without asking the device
    # which rows those are.
    has = (targets.sum(dim=1) > 0).to(logits.dtype)
    log_p = torch.log_softmax(logits, dim=1)
    kept, scale = (targets * log_p).sum(dim=1), sizes
    if isinstance(sizes, torch.Tensor):  # each row's own size
        kept, scale = kept / sizes.to(logits.device, logits.dtype), 1
    return (kept * has).sum() / has.sum().clamp_min(1), scale
