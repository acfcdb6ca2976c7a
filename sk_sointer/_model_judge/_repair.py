"""Repair, row by row, the masks whose check fails: a budgeted search that starts from the
selector's mask and asks the model.

An amortized selector explains a row in microseconds, but it has learnt one function for
every row and is wrong on some. The model is at hand (``black_box_``), so each row's mask
is checked (:func:`~sk_sointer._model_judge.row_check`: does the model keep its answer on the
masked row?) and the rows that fail are searched further:

- with ``k`` groups a row, by *swaps*: each round takes out the selected group whose
  removal costs the model's answer least, then puts in the unselected group that best
  restores it (``n_groups`` queries a round); a swap is kept only when it improves the
  row's reward (:func:`~sk_sointer._model_judge.keep_reward`);
- with a selection of its own size (``k=None``), by *additions*: each round adds the
  unselected group that best keeps the answer, until the mask holds (with every group
  it does).

A row's search stops as soon as its mask holds, when no swap improves it, or when its
budget is spent; with ``k`` its best mask is kept, so a repaired mask keeps the answer at
least as well as the selector's (by the reward).
"""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import Bunch
from sklearn.utils._param_validation import Interval, InvalidParameterError

from ._reward import keep_reward
from ._value import row_check


class RowRepair(BaseEstimator):
    """How :meth:`~sk_sointer.L2XExplainer.transform` checks and repairs each row's mask.

    Every explained row is checked against the model (its answer on the full row and on
    the masked row: two queries a row, or ``1 + n_background`` with background rows); the
    rows whose mask fails are searched further (swaps from the selector's mask, see
    :mod:`sk_sointer._model_judge._repair`) within ``max_queries`` model queries a row.
    The explainer reports what happened (:meth:`~sk_sointer.L2XExplainer.repair_masks`).

    Parameters
    ----------
    max_queries : int or None, default=None
        Masked rows a failing row may send to the model. ``None``: ``k * n_groups``, about
        what a per-row greedy search costs (``k`` rounds of the search); with ``k=None``,
        ``n_groups`` (one addition to a mask of one group costs ``n_groups - 1``).
    tol : float, default=0.1
        A regression output is kept when it moves by at most ``tol`` times its spread.
    log_weight : float, default=0.1
        Weight of the log-probability of the model's answer in the search's reward
        (:func:`~sk_sointer._model_judge.keep_reward`): among masks that all keep (or lose) the
        class, the one whose probabilities are closest to the full row's is preferred.
    """

    _parameter_constraints: dict = {
        "max_queries": [Interval(Integral, 0, None, closed="left"), None],
        "tol": [Interval(Real, 0, None, closed="left")],
        "log_weight": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(self, *, max_queries=None, tol=0.1, log_weight=0.1):
        self.max_queries = max_queries
        self.tol = tol
        self.log_weight = log_weight

    def validate(self):
        """Check the parameters (sklearn's constraints); the explainer calls it wherever it
        reads its ``repair``. A bool is refused where a number is meant, although it is
        an ``int`` to Python: ``max_queries=True`` is a mistake, not one query."""
        for name, value in self.get_params().items():
            if isinstance(value, (bool, np.bool_)):
                raise InvalidParameterError(
                    f"The {name!r} parameter of RowRepair must be a number, not a bool; "
                    f"got {value!r}."
                )
        self._validate_params()
        return self

    def budget(self, k, n_groups):
        """Masked rows a failing row may send to the model."""
        if self.max_queries is not None:
            return int(self.max_queries)
        return max(1, k or 1) * n_groups


class RepairReport(Bunch):
    """What a repair did (:meth:`~sk_sointer.L2XExplainer.repair_masks`): a
    :class:`~sklearn.utils.Bunch` of ``n_rows``, ``n_failed`` (rows whose mask failed the
    check), ``n_repaired`` (of those, rows that hold after the search), ``n_queries``
    (model rows sent, the check included), ``queries_per_row``, ``holds`` (per row, after
    the search) and ``masks`` (the repaired masks). Printed, it gives the counts, how many
    rows hold and the masks' shape, not every row's."""

    def __repr__(self):
        fields = [f"{name}={self[name]!r}" for name in self if name not in ("holds", "masks")]
        holds = self.get("holds")
        if holds is not None:
            holds = np.asarray(holds)
            fields.append(f"holds=<{holds.size} rows, {int(holds.sum())} hold>")
        masks = self.get("masks")
        if masks is not None:
            fields.append(f"masks=<{' x '.join(map(str, np.shape(masks)))}>")
        return f"RepairReport({', '.join(fields)})"


def repair_masks(value, X, scores, group_masks, spec, k, repair):
    """Check every row's mask and search further where it fails.

    Parameters
    ----------
    value : MaskedValue
        How the model answers masked rows (fill or background), and the query count.
    X : ndarray of shape (n_rows, n_features)
        The rows, in their own units.
    scores : ndarray of shape (n_rows, n_groups)
        The selector's per-group scores (they order the candidates of a round).
    group_masks : ndarray of shape (n_rows, n_groups)
        The selector's masks (0/1); repaired rows are changed in place.
    spec : OutputSpec
        The model's outputs (the target output, when the explainer explains one).
    k : int or None
        Groups a row (swaps keep it), or ``None`` (additions).
    repair : RowRepair

    Returns
    -------
    report : Bunch
        ``holds`` and ``held_before`` (per row, after and before the search), ``n_failed``
        (rows that failed the check), ``n_repaired`` (of those, rows that hold after it)
        and ``n_queries`` (model rows sent, the check included).
    """
    start = value.n_queries
    full = value.full(X)
    masked = value.masked_groups(X, group_masks)
    check = row_check(full, masked, spec, tol=repair.tol)
    held_before = check.holds.copy()
    failing = np.flatnonzero(~held_before)
    if len(failing):
        search = _Search(value, X[failing], full[failing], masked[failing], scores[failing],
                         group_masks[failing].astype(bool), spec, repair)
        search.run(k, repair.budget(k, group_masks.shape[1]))
        group_masks[failing] = search.masks
        check.holds[failing] = search.holds
    return Bunch(holds=check.holds, held_before=held_before, n_failed=len(failing),
                 n_repaired=int(check.holds[failing].sum()),
                 n_queries=value.n_queries - start)


class _Search:
    """The per-row search of the failing rows, all rows advancing a round at a time."""

    def __init__(self, value, X, full, masked, scores, masks, spec, repair):
        self.value, self.X, self.full, self.scores = value, X, full, scores
        self.masks, self.spec, self.repair = masks, spec, repair
        self.reward = self._reward(np.arange(len(X)), masked)
        self.holds = np.zeros(len(X), dtype=bool)

    def _reward(self, rows, masked):
        return keep_reward(self.full[rows], masked, self.spec,
                           log_weight=self.repair.log_weight)

    def _holds(self, rows, masked):
        return row_check(self.full[rows], masked, self.spec, tol=self.repair.tol).holds

    def _try(self, rows, candidates):
        """The model's outputs and the rewards of ``candidates`` (``(len(rows), c,
        n_groups)`` masks) of ``rows``: ``(outputs (len(rows), c, n_columns), rewards
        (len(rows), c))``."""
        n_candidates = candidates.shape[1]
        repeated = np.repeat(rows, n_candidates)
        outputs = self.value.masked_groups(self.X[repeated],
                                           candidates.reshape(len(repeated), -1))
        rewards = self._reward(repeated, outputs)
        return (outputs.reshape(len(rows), n_candidates, -1),
                rewards.reshape(len(rows), n_candidates))

    def run(self, k, budget):
        n_groups = self.masks.shape[1]
        spent = np.zeros(len(self.X), dtype=np.int64)
        active = np.ones(len(self.X), dtype=bool)
        while True:
            size = self.masks.sum(axis=1)
            # A swap costs a row its k selected groups (taken out in turn) and the others
            # (put in in turn): n_groups queries; an addition, its unselected groups.
            cost = np.full(len(self.X), n_groups) if k is not None else n_groups - size
            active &= (spent + cost <= budget) & (cost > 0) & ~self.holds
            rows = np.flatnonzero(active)
            if not len(rows):
                return
            spent[rows] += cost[rows]
            # One batch of candidates per mask size (with k set, one size).
            for n_selected in np.unique(size[rows]):
                part = rows[size[rows] == n_selected]
                base, taken_out = self.masks[part], np.zeros(self.masks[part].shape, bool)
                if k is not None:
                    base, taken_out = self._take_out(part, base)
                active[part[~self._put_in(part, base, taken_out, grow=k is None)]] = False

    def _take_out(self, rows, masks):
        """Each row's masks without the selected group whose removal keeps the answer best,
        and that group (a one-hot row)."""
        n_rows, n_groups = masks.shape
        size = int(masks[0].sum())
        selected = np.argsort(~masks, axis=1, kind="stable")[:, :size]  # the selected groups
        candidates = np.repeat(masks[:, None], size, axis=1)
        candidates[np.arange(n_rows)[:, None], np.arange(size), selected] = False
        _, rewards = self._try(rows, candidates)
        best = rewards.argmax(axis=1)
        taken_out = np.zeros(masks.shape, dtype=bool)
        taken_out[np.arange(n_rows), selected[np.arange(n_rows), best]] = True
        return candidates[np.arange(n_rows), best], taken_out

    def _put_in(self, rows, masks, taken_out, grow=False):
        """Add to each row's masks the group, neither selected nor just taken out (putting
        it back is no swap), that keeps the answer best; keep the result where it beats the
        row's mask so far, or always when the masks ``grow`` (``k=None``: a larger mask
        that holds is worth more than a smaller one that fails). Whether each row took
        the new mask."""
        n_rows, n_groups = masks.shape
        excluded = masks | taken_out
        n_out = n_groups - int(excluded[0].sum())
        if n_out == 0:  # every group selected: nothing to put in
            return np.zeros(n_rows, dtype=bool)
        # Unselected groups, the selector's favourites first (ties: the first tried wins).
        order = np.argsort(np.where(excluded, np.inf, -self.scores[rows]), axis=1,
                           kind="stable")[:, :n_out]
        candidates = np.repeat(masks[:, None], n_out, axis=1)
        candidates[np.arange(n_rows)[:, None], np.arange(n_out), order] = True
        outputs, rewards = self._try(rows, candidates)
        best = rewards.argmax(axis=1)
        improved = rewards[np.arange(n_rows), best] > self.reward[rows] + 1e-12
        if grow:
            improved[:] = True
        kept = rows[improved]
        self.masks[kept] = candidates[np.arange(n_rows), best][improved]
        self.reward[kept] = rewards[np.arange(n_rows), best][improved]
        self.holds[kept] = self._holds(kept, outputs[np.arange(n_rows), best][improved])
        return improved
