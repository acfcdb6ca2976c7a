"""The black box as the judge of masks of its training rows, within a budget:
:class:`ModelJudge`, what the refinement asks the model (rewards of sampled masks, the
greedy search's targets, the fidelity of the selector's masks) and what that costs.
"""

import time

import numpy as np
import torch

from .._outputs import output_agreement
from .._utils import in_chunks
from ..black_box import model_agreement, model_answers
from ._reward import _DrawnValue, _greedy, keep_reward
from ._value import masked_value

# Whether ModelJudge.on_device also holds on the CPU (tests: the device path, run there).
_JUDGE_ON_CPU_TENSORS = False


class ModelJudge:
    """The black box as the judge of masks of its training rows, within a budget.

    Parameters
    ----------
    black_box : BlackBox
        The model: its outputs (probabilities) drive the rewards, and its answers (a
        classifier's own ``predict``) the fidelity, as in ``score``.
    masker : Masker
        The fitted masker (fills left-out features with the baseline; expands groups).
    spec : OutputSpec
        The model's outputs (the target output, when the explainer explains one).
    X : ndarray of shape (n_rows, n_features)
        The training rows in their own units.
    full : ndarray of shape (n_rows, n_columns)
        The model's outputs on ``X``.
    log_weight : float
        See :func:`~sk_sointer._model_judge.keep_reward`.
    max_queries : int, default=None
        Most rows sent to the model (``None``: no bound); see :meth:`affords`.
    max_seconds : float, default=None
        Seconds from now after which :meth:`affords` answers no.
    value : MaskedValue, default=None
        How the model answers masked rows (:func:`~sk_sointer._model_judge.masked_value`:
        the explainer's, at the fill or over its background rows, whose values fill the
        left-out features in turn, the model's outputs averaged), asked through the judge,
        which pays every query from its budget; ``None``: the masker's fill.
    in_distribution : callable, default=None
        ``in_distribution(index, group_masks)``: an in-distribution judge's outputs on rows
        ``index`` masked so (see ``ModelRefinement(in_distribution=...)``), mixed into the
        rewards and the fidelity with weight ``in_distribution_weight``; no query.
    in_distribution_weight : float, default=0.0
    spent : int, default=0
        Queries already sent about these rows (the synthetic rows' answers), counted in
        ``n_queries``.
    judge_ties : bool, default=False
        Where the model is indifferent between groups in the greedy search, let the
        in-distribution judge choose (see :meth:`greedy`): table rows at a fixed ``k``.
        Pixel rows keep the model's choice; their judge, trained on a few hundred images,
        was too weak to choose a pixel.
    drawn_rows : float, default=0.0
        Weight of the model's answers in distribution (``ModelRefinement(drawn_rows=)``):
        the chance that a masked row of :meth:`costs` has its left-out features taken
        from a training row drawn at random (one of the first ``n_partners``) rather than
        the fill, and the weight of the drawn fidelity in :meth:`judged`. Only without
        ``background``.
    n_drawn : int, default=4
        Training rows each row judged by :meth:`judged` is filled from, drawn once a row.
    n_partners : int, default=None
        The rows of ``X`` drawn from (the training rows, not synthetic ones after them);
        ``None``: all.
    random_state : int, default=None
        Seed of those draws.
    removed_weight : float, default=0.0
        Weight of the model's answer on each masked row's complement (its kept groups
        left out, the others kept, at the fill) in :meth:`costs`: the reward is the kept
        groups' less ``removed_weight`` times what the complement's reward exceeds the
        row's with every group left out, so that the groups left out do not alone tell
        more of the answer than no group does (MEED's infidelity, weighed as its ``w_u``
        weighs it). Measured against no groups rather than counted whole, a complement
        that keeps a class only because the fill does (a rare class's rows; a tie at the
        fill) costs nothing, and leaving out the features that argue against the answer
        earns nothing. The rows with every group left out are asked once, when the judge
        is made; a masked row then costs one query more (:attr:`cost_queries`).

    Attributes
    ----------
    n_queries : int
        Rows sent to the model so far.
    """

    # Rows of the greedy search sent at once: the time budget is checked between chunks.
    _GREEDY_ROWS = 256

    def __init__(self, black_box, masker, spec, X, full, *, log_weight, max_queries=None,
                 max_seconds=None, value=None, in_distribution=None,
                 in_distribution_weight=0.0, spent=0, judge_ties=False, drawn_rows=0.0,
                 n_drawn=4, n_partners=None, random_state=None, removed_weight=0.0):
        background = None if value is None else value.background
        self.black_box = black_box
        self.removed_weight = removed_weight
        self.drawn_rows = drawn_rows if background is None else 0.0
        self.n_drawn = n_drawn
        self.n_partners = len(X) if n_partners is None else n_partners
        self._rng = np.random.default_rng(random_state)
        self._partners = None
        self.in_distribution = in_distribution
        self.in_distribution_weight = in_distribution_weight if in_distribution else 0.0
        self.judge_ties = judge_ties and in_distribution is not None
        self.masker = masker
        self.background = background
        self.value = (masked_value(None, masker, predict=self._predict) if value is None
                      else value.through(self._predict))
        self.spec = spec
        self.X = X
        self.full = full
        self.log_weight = log_weight
        self.n_queries = spent
        self._answers = {}
        self.set_budget(max_queries, max_seconds)
        if removed_weight:  # the model's reward on every row with all groups left out
            empty = self.value.masked_groups(X, np.zeros((len(X), masker.n_groups_)))
            self._empty_reward = keep_reward(full, empty, spec, log_weight=log_weight)

    def set_budget(self, max_queries=None, max_seconds=None):
        """Bound the queries from now on to ``max_queries`` more rows and ``max_seconds``
        (a deadline set before, the refinement's from its start, stands if earlier)."""
        self.max_queries = None if max_queries is None else self.n_queries + max_queries
        deadline = None if max_seconds is None else time.monotonic() + max_seconds
        earlier = getattr(self, "deadline", None)
        self.deadline = deadline if earlier is None or deadline is None else min(deadline,
                                                                                  earlier)

    def out_of_time(self):
        """Whether the time budget has passed."""
        return self.deadline is not None and time.monotonic() >= self.deadline

    def extend_budget(self, max_queries):
        """Allow ``max_queries`` more rows than the budget did (with no bound, none)."""
        if self.max_queries is not None:
            self.max_queries += max_queries

    def affords(self, n_rows):
        """Whether ``n_rows`` more masked rows stay within the budget, before its deadline
        (each costs the background rows it is filled from, or one query)."""
        if self.out_of_time():
            return False
        n_queries = n_rows * self.value.queries_per_row
        return self.max_queries is None or self.n_queries + n_queries <= self.max_queries

    def _spend(self, n_rows):
        # Callers plan within the budget (see ModelRefinement.plan); a query beyond it is a
        # bug, never sent.
        if self.max_queries is not None and self.n_queries + n_rows > self.max_queries:
            raise RuntimeError(
                f"The refinement's budget of queries would be exceeded ({self.n_queries:,} "
                f"sent, {n_rows:,} more asked, at most {self.max_queries:,})."
            )
        self.n_queries += n_rows

    def _predict(self, rows):
        self._spend(len(rows))
        return self.black_box.predict(rows)

    def _masked_rows(self, index, group_masks, partners=None):
        """Rows ``index`` with the groups left out by ``group_masks`` at the fill, or, where
        ``partners`` is given, taken from those rows of ``X`` (one a row)."""
        kept = self.masker.expand_raw(group_masks)
        if partners is None:
            return self.masker.mask_raw(self.X[index], kept)
        return np.where(kept > 0, self.X[index], self.X[partners])

    @property
    def cost_queries(self):
        """Masked rows that one masked row of :meth:`costs` costs: two with
        ``removed_weight`` (the row and its complement), else one."""
        return 2 if self.removed_weight else 1

    @property
    def judged_queries(self):
        """Masked rows that judging one row costs (:meth:`judged`): one at the fill, and
        ``n_drawn`` more with ``drawn_rows``."""
        return 1 + (self.n_drawn if self.drawn_rows else 0)

    def _drawn(self, index, group_masks):
        """The model's outputs on rows ``index`` with the left-out groups taken from each of
        the row's ``n_drawn`` partners (drawn once a row of ``X``), averaged."""
        if self._partners is None:
            self._partners = self._rng.integers(0, self.n_partners, (len(self.X), self.n_drawn))
        index = np.asarray(index)
        # all draws in one call: a pipeline's every call costs its own overhead
        draws = self.n_drawn
        rows = self._masked_rows(np.tile(index, draws), np.tile(group_masks, (draws, 1)),
                                 self._partners[index].T.ravel())
        outputs = in_chunks(self._predict, rows)
        return outputs.reshape(self.n_drawn, len(index), -1).mean(axis=0)

    def on_device(self, device):
        """Whether :meth:`costs` can take rows and masks as tensors on ``device`` and
        answer there, nothing read back to the host: a torch module on that accelerator,
        the left-out features at the masker's fill (not a background's rows)."""
        black_box = self.black_box
        if (device.type == "cpu" and not _JUDGE_ON_CPU_TENSORS) or black_box.kind != "torch" \
                or self.background is not None or black_box.token_ids or self.drawn_rows \
                or (self.in_distribution_weight and not hasattr(self.in_distribution, "rows_on")):
            return False
        param = next(iter(black_box.model.parameters()), None)
        if (param.device if param is not None else torch.device("cpu")) != device \
                or getattr(self, "_too_many_for", None) == device:
            return False
        try:
            self._on(device)
            if self.in_distribution_weight:
                self.in_distribution.rows_on(device)
        except torch.OutOfMemoryError:  # rows too many for the device: asked on the host
            self._too_many_for = device
            return False
        return True

    def _on(self, device):
        """The rows and the full rows' outputs as tensors on ``device`` (copied once), and
        a device flag that stays true while every answer of the model is finite."""
        if getattr(self, "_device", None) != device:
            self._X_t = torch.as_tensor(self.X, dtype=torch.float32, device=device)
            self._full_t = torch.as_tensor(self.full, device=device)
            self._finite = torch.ones((), dtype=torch.bool, device=device)
            self._device = device
        return self._X_t, self._full_t

    def check_finite(self):
        """Raise the black box's error if it answered NaN or an infinity on the device
        (:meth:`costs` of tensors checks nothing as it goes: that would wait for the
        device at every step)."""
        finite = getattr(self, "_finite", None)
        if finite is not None and not bool(finite):
            raise ValueError(
                f"The black box {self.black_box.model!r} returned NaN or infinite outputs on "
                "masked rows; explanations need finite outputs."
            )

    def _tensor_costs(self, index, group_masks):
        X, full = self._on(group_masks.device)
        self._spend(len(index))
        masks = self.masker.expand(group_masks).bool()
        fill = self.masker._tensor("baseline_", X)
        answers = self.black_box(torch.where(masks, X[index], fill), checked=False)
        self._finite &= torch.isfinite(answers).all()
        reward = keep_reward(full[index], answers, self.spec, log_weight=self.log_weight)
        weight = self.in_distribution_weight
        if weight:
            judged = keep_reward(full[index], self.in_distribution.tensor(index, group_masks),
                                 self.spec, log_weight=self.log_weight)
            reward = (1 - weight) * reward + weight * judged
        if self.removed_weight:
            self._spend(len(index))
            answers = self.black_box(torch.where(masks, fill, X[index]), checked=False)
            self._finite &= torch.isfinite(answers).all()
            removed = keep_reward(full[index], answers, self.spec, log_weight=self.log_weight)
            if getattr(self, "_empty_t", None) is None or self._empty_t.device != removed.device:
                self._empty_t = torch.as_tensor(self._empty_reward, device=removed.device)
            empty = self._empty_t[index]  # copied to the device once, not every step
            reward = reward - self.removed_weight * (removed - empty).clamp(min=0)
        return (-reward).float()

    def costs(self, index, group_masks):
        """Minus the model's reward for rows ``index`` masked by 0/1 ``group_masks``
        (an ndarray; tensors on a device where :meth:`on_device` holds give a tensor
        there), less ``removed_weight`` times what their complements' reward exceeds the
        rows' with nothing kept (see ``removed_weight``)."""
        if isinstance(group_masks, torch.Tensor):
            return self._tensor_costs(index, group_masks)
        if self.drawn_rows:
            # Each masked row filled from a training row with that chance: the gradient of
            # the mixed reward, unbiased, at one query a row.
            index = np.asarray(index)
            drawn = self._rng.random(len(index)) < self.drawn_rows
            partners = self._rng.integers(0, self.n_partners, len(index))
            rows = self._masked_rows(index, group_masks)
            rows[drawn] = self._masked_rows(index[drawn], group_masks[drawn], partners[drawn])
            masked = in_chunks(self._predict, rows)
        else:
            masked = self.value.masked_groups(self.X[index], group_masks)
        reward = keep_reward(self.full[index], masked, self.spec, log_weight=self.log_weight)
        weight = self.in_distribution_weight
        if weight:
            judged = keep_reward(self.full[index], self.in_distribution(index, group_masks),
                                 self.spec, log_weight=self.log_weight)
            reward = (1 - weight) * reward + weight * judged
        if self.removed_weight:  # the left-out groups alone should not tell the answer
            removed = self.value.masked_groups(self.X[index], 1 - np.asarray(group_masks))
            removed = keep_reward(self.full[index], removed, self.spec,
                                  log_weight=self.log_weight)
            reward = reward - self.removed_weight * np.maximum(removed - self._empty_reward[index],
                                                               0)
        return -reward.astype(np.float32)

    def greedy(self, index, k):
        """The per-row greedy k-subsets (:func:`greedy_subsets`) of rows ``index``, chunk
        by chunk while the budget lasts; rows left without a subset are all zero.

        With ``judge_ties``, a round whose best group does not move the model's outputs
        (the model is indifferent: at the fill, every group it reads would take the row
        further from its own outputs) adds, of the groups with which the model still keeps
        the answer, the one the in-distribution judge rewards most (see :func:`_greedy`).
        On a table where a boosting classifier answers "positive" on 8 % of the rows, the
        model's search alone taught L2X and MEED to keep features the model never reads
        in up to 41 % of the negative rows' kept features. It costs one query
        (``n_background`` with background rows): the empty mask makes one row of every
        row.

        With ``drawn_rows``, the search's reward is the model's outputs at the fill and on
        ``n_drawn`` partner rows of each row mixed (:class:`_DrawnValue`, drawn afresh for
        every chunk; ``1 + n_drawn`` queries a masked row, :attr:`greedy_queries`), and no
        judge breaks ties: the drawn rows move the outputs where the fill does not. On
        the rare answer of a loans table, judged over 32 other training rows, the
        subsets of this search (the fill and 4 partners) held on 33 % of the rows, those
        of the search at the fill alone on 23 %, TreeSHAP's top 3 on 40 % (at the fill:
        80, 81 and 65 %): a search at the fill alone teaches subsets that hold only there."""
        chosen = np.zeros((len(index), self.masker.n_groups_), dtype=np.float32)
        judge = empty = None
        if (self.judge_ties and not self.drawn_rows and len(index)
                and self.affords(self.value.queries_per_row)):
            empty = self.value.masked_groups(self.X[index[:1]], chosen[:1])
            judge = self.in_distribution
        per_row = (k * self.masker.n_groups_ - k * (k - 1) // 2) * self.greedy_queries
        for start in range(0, len(index), self._GREEDY_ROWS):
            rows = index[start : start + self._GREEDY_ROWS]
            if not self.affords(len(rows) * per_row):
                break
            value = None
            if self.drawn_rows:
                partners = self._rng.integers(0, self.n_partners, (len(rows), self.n_drawn))
                value = _DrawnValue(self._predict, self.masker, self.X, partners,
                                    self.drawn_rows)
            chosen[start : start + len(rows)] = _greedy(
                self._predict, self.X[rows], self.masker, self.spec, k, full=self.full[rows],
                log_weight=self.log_weight, background=self.background, empty=empty,
                judge=None if judge is None else (
                    lambda local, masks, rows=rows: judge(rows[local], masks)), value=value)
        return chosen

    @property
    def greedy_queries(self):
        """Queries a masked row of :meth:`greedy` costs, beyond a background's: one at the
        fill, and ``n_drawn`` more with ``drawn_rows``."""
        return 1 + (self.n_drawn if self.drawn_rows else 0)

    def imitated(self, order, n_rows):
        """``n_rows`` rows of ``order`` (a permutation of the rows) for the greedy search:
        the first ones, or with ``drawn_rows``, as many of each answer of a classifier as
        there are (:meth:`answer_weights`' answers, each in the order's order), so that a
        rare answer's rows all get the search's subsets when the budget pays for a few of
        the rows only."""
        order = np.asarray(order)
        answers = self._answers_of(order) if self.drawn_rows else None
        if answers is None:
            return order[:n_rows]
        rank = np.zeros(len(order), dtype=np.int64)  # each row's among its answer's rows
        for answer in np.unique(answers):
            rows = np.flatnonzero(answers == answer)
            rank[rows] = np.arange(len(rows))
        return order[np.lexsort((np.arange(len(order)), rank))[:n_rows]]

    def row_weights(self, index):
        """:meth:`answer_weights` over every row the judge holds, read at ``index`` (an
        array, or a tensor: then a tensor on its device, read without a host
        synchronisation): the weight of each row's term in the score-function gradient."""
        if getattr(self, "_row_weights", None) is None:
            self._row_weights = {"host": self.answer_weights(np.arange(len(self.full)))}
        if not isinstance(index, torch.Tensor):
            return self._row_weights["host"][index]
        if index.device not in self._row_weights:
            self._row_weights[index.device] = torch.as_tensor(self._row_weights["host"],
                                                              device=index.device)
        return self._row_weights[index.device][index]

    def answer_weights(self, index):
        """Per row of ``index``, float32 weights of mean 1 that give each answer of the
        model the same total: one over the number of rows with the row's answer, for a
        model of one discrete output (a classifier's class, the side of 0.5 of a
        Bernoulli output); ones for a real output or several outputs. The greedy targets
        are imitated so, and the score-function gradient weighs each row so
        (:meth:`row_weights`): on a table where a boosting classifier answers "positive" on
        8 % of the rows, the common answer's rows otherwise set what the selector learns."""
        answers = self._answers_of(index)
        if answers is None:
            return np.ones(len(index), dtype=np.float32)
        _, inverse, counts = np.unique(answers, return_inverse=True, return_counts=True)
        weights = 1.0 / counts[inverse]
        return (weights / weights.mean()).astype(np.float32)

    def _answers_of(self, index):
        """The model's answers on rows ``index`` (a classifier's class, the side of 0.5 of
        a Bernoulli output), or ``None`` for a real output or several outputs."""
        spec = self.spec
        outputs = range(spec.n_outputs) if spec.target is None else [spec.target]
        if len(outputs) != 1 or "real" in spec.kinds or len(index) == 0:
            return None
        return spec.labels(self.full[index])[:, outputs[0]]

    def judged(self, index, group_masks):
        """``(value, fidelity)`` of rows ``index`` masked by ``group_masks``: the
        :meth:`fidelity`, and the value the refinement keeps its best selector by, that
        fidelity mixed with the drawn fidelity (``drawn_rows``: the model's, the left-out
        groups taken from training rows) or else with the in-distribution judge's
        agreement when either has a weight."""
        fidelity = self.fidelity(index, group_masks)
        if self.drawn_rows:
            scores = output_agreement(self.full[index], self._drawn(index, group_masks),
                                      self.spec, multioutput="raw_values", by_answer=True)
            drawn = float(scores.mean() if self.spec.target is None
                          else scores[self.spec.target])
            return (1 - self.drawn_rows) * fidelity + self.drawn_rows * drawn, fidelity
        weight = self.in_distribution_weight
        if not weight:
            return fidelity, fidelity
        agreement = output_agreement(self.full[index], self.in_distribution(index, group_masks),
                                     self.spec, multioutput="raw_values", by_answer=True)
        agreement = float(agreement.mean() if self.spec.target is None
                          else agreement[self.spec.target])
        return (1 - weight) * fidelity + weight * agreement, fidelity

    def fidelity(self, index, group_masks):
        """What ``score`` measures, on rows ``index`` masked by ``group_masks`` (on the
        target output alone, when the explainer explains one). The model's answers on the
        full rows are asked once per set of rows."""
        # Each answer's rows weigh alike, as in score: on a table where one answer is rare,
        # the share of all rows would keep a selector that serves only the common one.
        if self.background is not None:  # the averaged outputs, as score compares them
            masked = self.value.masked_groups(self.X[index], group_masks)
            scores = output_agreement(self.full[index], masked, self.spec,
                                      multioutput="raw_values", by_answer=True)
            return float(scores.mean() if self.spec.target is None else scores[self.spec.target])
        key = np.asarray(index).tobytes()
        if key not in self._answers:
            self._answers[key] = model_answers(_Counted(self), self.X[index])
        rows = self._masked_rows(index, group_masks)
        scores = model_agreement(_Counted(self), self.X[index], rows, multioutput="raw_values",
                                 answers=self._answers[key], by_answer=True)
        return float(scores.mean() if self.spec.target is None else scores[self.spec.target])


class _Counted:
    """A :class:`BlackBox` whose every query is counted against a :class:`ModelJudge`'s
    budget (its outputs and a classifier's own labels alike)."""

    def __init__(self, judge):
        self._judge = judge
        self._black_box = judge.black_box

    def __getattr__(self, name):
        return getattr(self._black_box, name)

    def predict(self, rows):
        return self._judge._predict(rows)

    def labels(self, rows):
        self._judge._spend(len(rows))
        return self._black_box.labels(rows)
