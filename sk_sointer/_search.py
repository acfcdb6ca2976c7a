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

import numpy as np
from sklearn.base import BaseEstimator

from ._utils import in_chunks
from .black_box import model_agreement

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
    full, masked : ndarray of shape (n_rows, n_columns)
        The model's outputs on the full rows and on the masked rows (probabilities or
        values, as :class:`~sk_sointer.black_box.BlackBox` returns them).
    spec : OutputSpec
    log_weight : float, default=0.1

    Returns
    -------
    reward : ndarray of shape (n_rows,), float64
    """
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


def greedy_subsets(predict, X, masker, spec, k, *, full=None, log_weight=0.1,
                   max_rows_per_query=2**15):
    """Per row, k feature groups chosen greedily by the model's own answer on masked rows.

    Starting from no group, each of ``k`` rounds adds to every row the group whose addition
    gives the highest :func:`keep_reward` (ties to the lower index), the row masked with the
    masker's fill. A row costs ``sum_{j<k} (n_groups - j)`` model queries.

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

    Returns
    -------
    group_masks : ndarray of shape (n_rows, n_groups), float32
        0/1, ``k`` ones per row.
    """
    X = np.asarray(X)
    n_rows, n_groups = X.shape[0], masker.n_groups_
    if not 0 <= k <= n_groups:
        raise ValueError(f"k should be in [0, n_groups = {n_groups}]; got {k}.")
    if full is None:
        full = in_chunks(predict, X)
    chosen = np.zeros((n_rows, n_groups), dtype=np.float32)
    if n_rows == 0:
        return chosen
    rows_per_chunk = max(1, max_rows_per_query // n_groups)
    for _ in range(k):
        for start in range(0, n_rows, rows_per_chunk):
            block = slice(start, start + rows_per_chunk)
            _add_best_group(predict, X[block], full[block], chosen[block], masker, spec,
                            log_weight)
    return chosen


def _add_best_group(predict, X, full, chosen, masker, spec, log_weight):
    """Add to every row of ``chosen`` (in place) the group that best keeps the answer."""
    n_rows, n_groups = chosen.shape
    # Every row with every group switched on in turn: (n_rows * n_groups) candidates.
    candidates = np.repeat(chosen, n_groups, axis=0)
    candidates[np.arange(len(candidates)), np.tile(np.arange(n_groups), n_rows)] = 1.0
    masked = predict(masker.mask_raw(np.repeat(X, n_groups, axis=0), masker.expand(candidates)))
    reward = keep_reward(np.repeat(full, n_groups, axis=0), masked, spec,
                         log_weight=log_weight).reshape(n_rows, n_groups)
    reward[chosen > 0] = -np.inf
    chosen[np.arange(n_rows), reward.argmax(axis=1)] = 1.0


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
    squared change of a regression output). After every epoch the top-k masks of up to
    ``n_eval_rows`` training rows are scored by the model, and the selector that keeps the
    model's answer best, the method's own included, is the one kept: refinement never
    makes the explanations of the training rows less faithful than the method's own.

    Parameters
    ----------
    max_queries : int, default=1_000_000
        Budget of masked rows sent to the model over the whole refinement (the epochs' draws
        and their evaluations); the number of epochs follows from it, between one and
        ``max_epochs``. A 100-tree random forest answers about 10^5 to 10^6 rows a second.
    max_epochs : int, default=100
        Most passes over the training rows.
    n_samples : int, default=8
        k-subsets drawn per row and step.
    batch_size : int, default=128
        Training rows per step (the model answers ``batch_size * n_samples`` rows a step).
    lr : float, default=3e-3
        Learning rate of the refinement's optimizer (the explainer's optimizer class).
    log_weight : float, default=0.1
        Weight of the log-probability of the model's answer in the reward.
    n_eval_rows : int, default=2000
        Training rows whose top-k masks are scored after every epoch, to keep the best
        selector.
    n_iter_no_change : int, default=20
        Stop after this many epochs without a better selector.
    imitate_share : float, default=0.5
        Share of ``max_queries`` spent on the greedy search whose subsets the selector
        imitates; the rest pays for the epochs. ``0`` trains by the score-function
        gradient alone.

    See Also
    --------
    sk_sointer._search.greedy_subsets : The per-row greedy search by the same reward.
    """

    def __init__(self, *, max_queries=1_000_000, max_epochs=100, n_samples=8, batch_size=128,
                 lr=3e-3, log_weight=0.1, n_eval_rows=2000, n_iter_no_change=20,
                 imitate_share=0.5):
        self.max_queries = max_queries
        self.max_epochs = max_epochs
        self.n_samples = n_samples
        self.batch_size = batch_size
        self.lr = lr
        self.log_weight = log_weight
        self.n_eval_rows = n_eval_rows
        self.n_iter_no_change = n_iter_no_change
        self.imitate_share = imitate_share

    def n_imitated(self, n_rows, k, n_groups):
        """Training rows whose greedy subsets the budget's ``imitate_share`` pays for."""
        per_row = k * n_groups - k * (k - 1) // 2
        return int(min(n_rows, self.max_queries * self.imitate_share // max(per_row, 1)))

    def epochs_for(self, n_rows):
        """Epochs over ``n_rows`` training rows that the query budget allows."""
        # the draws, and the evaluation: the model on the judged rows, full and masked
        per_epoch = n_rows * self.n_samples + 2 * min(n_rows, self.n_eval_rows)
        budget = self.max_queries * (1.0 - self.imitate_share)
        return int(np.clip(budget // max(per_epoch, 1), 1, self.max_epochs))


class ModelJudge:
    """The black box as the judge of masks of its training rows.

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
    """

    def __init__(self, black_box, masker, spec, X, full, *, log_weight):
        self.black_box = black_box
        self.masker = masker
        self.spec = spec
        self.X = X
        self.full = full
        self.log_weight = log_weight
        self.n_queries = 0

    def _masked_rows(self, index, group_masks):
        return self.masker.mask_raw(self.X[index], self.masker.expand(group_masks))

    def costs(self, index, group_masks):
        """Minus the model's reward for rows ``index`` masked by 0/1 ``group_masks``."""
        rows = self._masked_rows(index, group_masks)
        self.n_queries += len(rows)
        reward = keep_reward(self.full[index], in_chunks(self.black_box.predict, rows), self.spec,
                             log_weight=self.log_weight)
        return -reward.astype(np.float32)

    def greedy(self, index, k):
        """The per-row greedy k-subsets (:func:`greedy_subsets`) of rows ``index``."""

        def predict(rows):
            self.n_queries += len(rows)
            return self.black_box.predict(rows)

        return greedy_subsets(predict, self.X[index], self.masker, self.spec, k,
                              full=self.full[index], log_weight=self.log_weight)

    def fidelity(self, index, group_masks):
        """What ``score`` measures, on rows ``index`` masked by ``group_masks`` (on the
        target output alone, when the explainer explains one)."""
        rows = self._masked_rows(index, group_masks)
        self.n_queries += 2 * len(rows)  # the answers on the full rows too
        scores = model_agreement(self.black_box, self.X[index], rows, multioutput="raw_values")
        return float(scores.mean() if self.spec.target is None else scores[self.spec.target])
