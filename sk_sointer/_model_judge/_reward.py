"""The model itself as the judge of a mask: a per-row reward, and a per-row greedy search.

An amortized explainer's surrogate judge (approximator, predictor, energy) has seen the
black box's outputs on unmasked rows only; what ``score`` measures is the black box's own
answer on the masked row ``m(x, s)`` (left-out features at the masker's baseline). The
functions here ask the model that question directly:

- :func:`keep_reward`: how well the model's output on masked rows keeps its output on the
  full rows, per row (higher is better), the quantity that training against the model
  maximises;
- :func:`greedy_subsets`: for every row, the k groups chosen one at a time, each the one
  that best keeps the model's answer given those already chosen (about ``k * n_groups``
  queries a row). It is the ceiling a per-row search reaches, and the targets an amortized
  selector can learn to imitate.
"""

import numpy as np
import torch

from .._utils import in_chunks
from ._value import masked_value, row_check

# A log-probability below this carries no more information on whether the answer is kept;
# the floor keeps one confidently wrong row from dominating a batch's rewards.
_LOG_FLOOR = np.log(1e-4)


def keep_reward(full, masked, spec, *, log_weight=0.1):
    """Per-row reward of masked rows: how well the model keeps its answer, higher is better.

    For a discrete output (categorical, Bernoulli), ``1`` when the masked row gets the full
    row's answer, plus ``log_weight`` times the log-likelihood of the full row's output
    distribution under the masked row's, ``sum_c p_full(c) log p_masked(c)`` (masked
    probabilities floored at ``1e-4``): the indicator is what ``score`` counts, the
    log-likelihood ranks masks that all keep (or all lose) the answer, highest where the
    masked row reproduces the full row's probabilities. A mask that makes the model surer
    of its answer than the full row does (left-out features whose baseline argues for the
    answer) is not paid for that. For a real output, minus the squared change of the
    prediction in units of the output's spread (the row's share of ``1 - R²``). Summed over
    the outputs, or the target output alone when the spec selects one.

    Parameters
    ----------
    full, masked : ndarray of shape (n_rows, n_columns), or tensors on one device
        The model's outputs on the full rows and on the masked rows (probabilities or
        values, as :class:`~sk_sointer.black_box.BlackBox` returns them).
    spec : OutputSpec
    log_weight : float, default=0.1

    Returns
    -------
    reward : ndarray of shape (n_rows,), float64 (a tensor on their device for tensors)
    """
    if isinstance(full, torch.Tensor):
        return _keep_reward_tensor(full, masked, spec, log_weight)
    full = np.asarray(full, dtype=np.float64)
    masked = np.asarray(masked, dtype=np.float64)
    reward = np.zeros(len(full))
    outputs = range(spec.n_outputs) if spec.target is None else [spec.target]
    for i in outputs:
        kind, (start, stop) = spec.kinds[i], spec.blocks[i]
        if kind == "real":
            scale = 1.0 if spec.scale is None else spec.scale[start]
            reward -= ((masked[:, start] - full[:, start]) / scale) ** 2
            continue
        if kind == "categorical":
            full_proba, masked_proba = full[:, start:stop], masked[:, start:stop]
            kept = masked_proba.argmax(axis=1) == full_proba.argmax(axis=1)
        else:
            full_proba = np.column_stack([1.0 - full[:, start], full[:, start]])
            masked_proba = np.column_stack([1.0 - masked[:, start], masked[:, start]])
            kept = (masked[:, start] > 0.5) == (full[:, start] > 0.5)
        log_proba = np.log(np.clip(masked_proba, np.exp(_LOG_FLOOR), None))
        reward += kept + log_weight * np.sum(full_proba * log_proba, axis=1)
    return reward


def _keep_reward_tensor(full, masked, spec, log_weight):
    """:func:`keep_reward` of tensors, in float64 on their device (nothing read back)."""
    full, masked = full.double(), masked.double()
    reward = torch.zeros(len(full), dtype=torch.float64, device=full.device)
    outputs = range(spec.n_outputs) if spec.target is None else [spec.target]
    for i in outputs:
        kind, (start, stop) = spec.kinds[i], spec.blocks[i]
        if kind == "real":
            scale = 1.0 if spec.scale is None else float(spec.scale[start])
            reward -= ((masked[:, start] - full[:, start]) / scale) ** 2
            continue
        if kind == "categorical":
            full_proba, masked_proba = full[:, start:stop], masked[:, start:stop]
            kept = masked_proba.argmax(dim=1) == full_proba.argmax(dim=1)
        else:
            full_proba = torch.stack([1.0 - full[:, start], full[:, start]], dim=1)
            masked_proba = torch.stack([1.0 - masked[:, start], masked[:, start]], dim=1)
            kept = (masked[:, start] > 0.5) == (full[:, start] > 0.5)
        log_proba = torch.log(masked_proba.clamp(min=float(np.exp(_LOG_FLOOR))))
        reward += kept + log_weight * (full_proba * log_proba).sum(dim=1)
    return reward


def greedy_subsets(predict, X, masker, spec, k, *, full=None, log_weight=0.1,
                   max_rows_per_query=2**15, background=None):
    """Per row, k feature groups chosen greedily by the model's own answer on masked rows.

    Starting from no group, each of ``k`` rounds adds to every row the group whose addition
    gives the highest :func:`keep_reward` (ties to the lower index), the row masked with the
    masker's fill. A row costs ``sum_{j<k} (n_groups - j)`` model queries, plus one for its
    full answer when ``full`` is not given.

    Parameters
    ----------
    predict : callable
        ``predict(rows)``: the model's outputs on raw rows (e.g. ``BlackBox.predict``).
    X : ndarray of shape (n_rows, n_features)
        Rows in their own units.
    masker : Masker
        The fitted masker (baseline and feature groups).
    spec : OutputSpec
        The model's outputs (``spec.scale`` sets the units of a real output's reward).
    k : int
        Groups per row, at most the number of groups.
    full : ndarray of shape (n_rows, n_columns), default=None
        The model's outputs on ``X``, when already known.
    log_weight : float, default=0.1
        See :func:`keep_reward`.
    max_rows_per_query : int, default=2**15
        Masked rows sent to ``predict`` at once.
    background : ndarray of shape (n_background, n_features), default=None
        Rows whose values fill the left-out features in turn, the model's outputs averaged
        (:class:`~sk_sointer._model_judge.MaskedValue`; each masked row costs ``n_background``
        queries); ``None``: the masker's fill.

    Returns
    -------
    group_masks : ndarray of shape (n_rows, n_groups), float32
        0/1, ``k`` ones per row.
    """
    return _greedy(predict, X, masker, spec, k, full=full, log_weight=log_weight,
                   max_rows_per_query=max_rows_per_query, background=background)


def _greedy(predict, X, masker, spec, k, *, full=None, log_weight=0.1,
            max_rows_per_query=2**15, background=None, empty=None, judge=None, value=None):
    """:func:`greedy_subsets`, where the model is indifferent broken by a judge.

    A round whose best group does not move the model's outputs at all (every group the
    model reads would take the masked row further from the row's own outputs: a row whose
    answer the fill already gives) would keep a group the model does not read there. With
    ``judge`` (``judge(rows, group_masks)``: outputs like the model's on rows ``rows`` of
    ``X`` so masked, the in-distribution judge) and ``empty`` (the model's outputs on the
    empty mask, one row for all or one a row), such a round adds instead, of the groups
    with which the model still keeps the row's answer (:func:`row_check`), the one the
    judge rewards most: the one that tells the answer in the data. It costs no query.
    ``value`` (a :class:`_DrawnValue` of these rows) replaces the fill or ``background``."""
    X = np.asarray(X)
    n_rows, n_groups = X.shape[0], masker.n_groups_
    if not 0 <= k <= n_groups:
        raise ValueError(f"k should be in [0, n_groups = {n_groups}]; got {k}.")
    if full is None:
        full = in_chunks(predict, X)
    chosen = np.zeros((n_rows, n_groups), dtype=np.float32)
    if n_rows == 0:
        return chosen
    value = masked_value(None, masker, background, predict=predict) if value is None else value
    # The outputs on each row as masked so far, from the empty mask's on.
    last = np.full((n_rows, np.shape(full)[1]), np.nan)
    if empty is None:
        judge = None
    else:
        last[:] = empty
    rows_per_chunk = max(1, max_rows_per_query // (n_groups * value.queries_per_row))
    for _ in range(k):
        for start in range(0, n_rows, rows_per_chunk):
            block = slice(start, start + rows_per_chunk)
            _add_best_group(value.rows(block) if hasattr(value, "rows") else value,
                            X[block], full[block], chosen[block], spec, log_weight,
                            last[block], None if judge is None else (
                                lambda rows, masks, start=start: judge(start + rows, masks)))
    return chosen


def _add_best_group(value, X, full, chosen, spec, log_weight, last, judge=None):
    """Add to every row of ``chosen`` (in place) the group that best keeps the answer;
    every row has chosen as many groups, and only the others are tried. ``last`` (the
    outputs on the rows masked as chosen so far) becomes the outputs with the new group;
    where they would not move, ``judge`` chooses (see :func:`_greedy`)."""
    n_rows, n_groups = chosen.shape
    n_left = n_groups - int(chosen[0].sum()) if n_rows else 0
    # Each row's unchosen groups in increasing order, each switched on in turn.
    left = np.argsort(chosen > 0, axis=1, kind="stable")[:, :n_left]
    candidates = np.repeat(chosen, n_left, axis=0)
    candidates[np.arange(len(candidates)), left.ravel()] = 1.0
    masked = np.asarray(value.masked_groups(np.repeat(X, n_left, axis=0), candidates))
    repeated = np.repeat(full, n_left, axis=0)
    reward = keep_reward(repeated, masked, spec, log_weight=log_weight).reshape(n_rows, n_left)
    best = reward.argmax(axis=1)
    masked = masked.reshape(n_rows, n_left, -1)
    idle = np.all(masked[np.arange(n_rows), best] == last, axis=1)
    if judge is not None and idle.any():
        tied = np.repeat(idle, n_left)
        rows = np.flatnonzero(idle)
        judged = keep_reward(repeated[tied], judge(np.repeat(rows, n_left), candidates[tied]),
                             spec, log_weight=log_weight).reshape(len(rows), n_left)
        keeps = row_check(repeated[tied], masked[idle].reshape(len(rows) * n_left, -1),
                          spec).holds.reshape(len(rows), n_left)
        # None keeps it where the rows masked so far lose it: the model's choice stands.
        some = keeps.any(axis=1)
        best[rows[some]] = np.where(keeps, judged, -np.inf)[some].argmax(axis=1)
    chosen[np.arange(n_rows), left[np.arange(n_rows), best]] = 1.0
    last[:] = masked[np.arange(n_rows), best]


class _DrawnValue:
    """The model's outputs on rows with only some groups kept, the others at the fill and,
    in turn, at each of the row's partner rows: ``(1 - weight)`` times the outputs at the
    fill plus ``weight`` times their mean over the partners (``ModelRefinement(drawn_rows=)``
    in the greedy search). A masked row costs ``1 + n_drawn`` queries.

    ``partners[i]`` are the rows of ``X`` whose values row ``i`` of the rows given to
    :meth:`masked_groups` takes; those rows may be repeated, each consecutively and as
    often as every other (as the greedy search repeats a row for each candidate group)."""

    def __init__(self, predict, masker, X, partners, weight):
        self.predict, self.masker, self.X = predict, masker, X
        self.partners, self.weight = partners, weight

    @property
    def queries_per_row(self):
        return 1 + self.partners.shape[1]

    def rows(self, block):
        """The same value for the rows ``block`` (a slice) of those it was made for."""
        return _DrawnValue(self.predict, self.masker, self.X, self.partners[block],
                           self.weight)

    def masked_groups(self, X, group_masks):
        partners = np.repeat(self.partners, len(X) // len(self.partners), axis=0)
        kept = self.masker.expand_raw(group_masks) > 0
        draws = partners.shape[1]
        # the fill and every draw in one call: a pipeline's every call costs its overhead
        rows = np.concatenate([self.masker.mask_raw(X, kept)]
                              + [np.where(kept, X, self.X[partners[:, d]])
                                 for d in range(draws)])
        outputs = in_chunks(self.predict, rows).reshape(1 + draws, len(X), -1)
        return (1 - self.weight) * outputs[0] + self.weight * outputs[1:].mean(axis=0)
