"""The refinement of a fitted selector against the black box itself, driven from end to end
by :func:`refine`: the synthetic rows that complete a small table, the in-distribution
judge, the :class:`~sk_sointer._model_judge.ModelJudge` over the rows, the greedy targets
and the nets that train the selector on them (:mod:`~sk_sointer._model_judge._nets`), the
extensions of the budget, and the warning when the fidelity still rose at the end. It
returns a record of what happened; the explainer keeps its curve and its query count.
"""

import copy
import sys
import time
import warnings

import numpy as np
import torch
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import Bunch

from .._training.progress import _RefineProgress
from .._training.random_masks import in_distribution_judge
from .._utils import in_chunks
from ._judge import ModelJudge
from ._nets import ImitationNet, KeepBestByModel, ModelJudgedNet
from ._refinement import still_rising

# Most training rows on which a charged refinement is compared with the uncharged one.
_CHOICE_ROWS = 2_000
# Most training rows the refinement's in-distribution judge is trained on.
_JUDGE_ROWS = 10_000
# Epochs of imitation of greedy targets chosen in distribution (ModelRefinement's
# imitate_epochs="auto" with drawn rows).
_IMITATE_EPOCHS_IN_DISTRIBUTION = 20


def refine(fitted, problem, refine, X, net_input, outputs, *, value, k, sizes, threshold,
           scores_of, selector_input, removed_weight=0.0, verbose=0, name="The explainer"):
    """Refine the fitted selector of the net ``fitted`` (in place) against the black box
    (see :class:`~sk_sointer._model_judge.ModelRefinement`, ``refine``).

    With a ``removed_weight`` the selector is refined twice from where the method left
    it, once on the kept groups' reward alone and once charged for what the left-out
    groups tell (the same random draws), and the one whose masks earn more of the charged
    reward on up to ``_CHOICE_ROWS`` training rows is kept: the charge's score-function
    gradient is noisier, and where the kept-groups refinement already leaves little to
    the complement it reaches MEED's own objective better. Each is paid from its own
    ``max_queries``; ``max_seconds`` bounds the two together.

    Parameters
    ----------
    fitted : SelectorJudgeNet
        The method's fitted net; its selector (``module_``) is refined in place.
    problem : Problem
        What ``fit`` resolved: the rows' layout, masker, outputs and black box.
    refine : ModelRefinement
        The refinement's settings, validated.
    X, net_input, outputs : ndarray
        The training rows in their own units, what the selector sees of them and the
        model's outputs on them.
    value : MaskedValue
        How the model answers masked rows (the explainer's: the fill or its background
        rows); the judge asks it through its budget.
    k : int or None
        Groups a row; ``None``: each row keeps the number of groups ``sizes(net_input)``
        gives it (the fitted selector's), held above ``threshold`` by the selector's
        ``scores_of(outputs)``, and the refinement chooses which.
    selector_input : callable
        ``selector_input(X_scaled, X, outputs)``: what the selector sees of rows (the
        synthetic rows' too).
    removed_weight : float, default=0.0
        Weight of the model's answer with the selected groups left out (MEED's ``w_u``;
        see :class:`~sk_sointer._model_judge.ModelJudge`).
    verbose : int, default=0
        Report the refinement's progress on stderr.
    name : str
        The explainer's class name, for the progress and the warning.

    Returns
    -------
    record : Bunch or None
        ``fidelity`` (the model's fidelity on the judged rows at the start and after every
        epoch, float64), ``n_queries`` (rows sent to the model), and what the convergence
        warning reads; ``None`` when the budget cannot pay for judging the selector once
        (nothing refined).
    """
    def run(settings, removed_weight):
        return _refine_once(fitted, problem, settings, X, net_input, outputs, value=value,
                            k=k, sizes=sizes, threshold=threshold, scores_of=scores_of,
                            selector_input=selector_input, removed_weight=removed_weight,
                            verbose=verbose, name=name)

    if not removed_weight:
        record, _ = run(refine, 0.0)
    else:
        start, draws = copy.deepcopy(fitted.module_.state_dict()), torch.get_rng_state()
        # with k=None, each row's size as the method's own selector gives it
        own_sizes = None if k is not None else torch.as_tensor(sizes(net_input),
                                                               dtype=torch.long)
        began = time.monotonic()
        plain, _ = run(refine, 0.0)
        plain_state = copy.deepcopy(fitted.module_.state_dict())
        fitted.module_.load_state_dict(start)
        torch.set_rng_state(draws)
        if refine.max_seconds is not None:  # max_seconds bounds both refinements together
            refine = clone(refine).set_params(
                max_seconds=max(0.0, refine.max_seconds - (time.monotonic() - began)))
        record, judge = run(refine, removed_weight)
        if record is not None and plain is not None and judge.removed_weight:
            if not _charged_is_better(fitted, judge, net_input, k, own_sizes, plain_state):
                fitted.module_.load_state_dict(plain_state)
                record = plain
        elif record is None and plain is not None:
            fitted.module_.load_state_dict(plain_state)
            record = plain
        if record is not None:  # both refinements and the choice asked the model
            record.n_queries = (plain.n_queries if plain is not None else 0) + \
                (judge.n_queries if judge is not None else 0)
    if record is not None:
        _warn_if_still_rising(record, name)
    return record


def _charged_is_better(fitted, judge, net_input, k, sizes, other_state):
    """Whether the selector of ``fitted`` earns more of ``judge``'s (charged) reward than
    the one of ``other_state`` on up to ``_CHOICE_ROWS`` training rows (drawn with torch's
    generator, seeded by fit); leaves ``fitted`` with the selector it came with."""
    n_rows = judge.n_partners
    rng = np.random.default_rng(int(torch.randint(2**31 - 1, ()).item()))
    rows = np.sort(rng.permutation(n_rows)[:_CHOICE_ROWS])
    judge.set_budget(None)  # the choice is asked beyond the refinement's budget
    own = copy.deepcopy(fitted.module_.state_dict())
    rewards = []
    for state in (own, other_state):
        fitted.module_.load_state_dict(state)
        masks = fitted.group_masks(net_input[rows], k if sizes is None else sizes[rows])
        rewards.append(-float(np.mean(judge.costs(rows, masks))))
    fitted.module_.load_state_dict(own)
    return rewards[0] > rewards[1]


def _refine_once(fitted, problem, refine, X, net_input, outputs, *, value, k, sizes,
                 threshold, scores_of, selector_input, removed_weight, verbose, name):
    """One refinement (see :func:`refine`): its record (without the convergence warning)
    and its judge, or ``(None, None)``."""
    # max_seconds covers everything the refinement does, from here: the synthetic rows'
    # answers, the in-distribution judge's training and the epochs.
    deadline = None if refine.max_seconds is None else \
        time.monotonic() + refine.max_seconds
    n_rows = len(X)
    X, net_input, outputs = _with_synthetic_rows(problem, refine, X, net_input, outputs,
                                                 value, selector_input)
    fixed_k, keep_sizes = k, {}
    if k is None:  # each row's size, kept above the method's threshold
        k = sizes(net_input)
        keep_sizes = {"threshold": threshold, "scores_of": scores_of}
    # Ties to the judge on table rows at a fixed k (with k=None, REAL-X's thresholded
    # masks were no better on the real tables: 95.9 against 96.1; pixels: ModelJudge).
    judge_ties = problem.layout.image_shape is None and fixed_k is not None
    drawn = refine.drawn_rows
    if drawn == "auto":  # on a table read by column (a TableMasker's codec)
        drawn = 0.5 if getattr(problem.masker, "codec", None) is not None else 0.0
    if problem.layout.image_shape is not None or problem.masker.tokens:
        drawn = 0.0  # a pixel or a token moved between rows makes no row of the data
    if refine.imitate_epochs == "auto":  # imitation where the targets are in distribution
        refine = clone(refine).set_params(
            imitate_epochs=_IMITATE_EPOCHS_IN_DISTRIBUTION if drawn else 0)
    n_fill = value.queries_per_row
    judge = ModelJudge(problem.black_box, problem.masker, problem.output_spec, X,
                       outputs, spent=len(X) - n_rows, log_weight=refine.log_weight,
                       value=value,
                       in_distribution=_in_distribution_judge(fitted, problem, X, outputs,
                                                              refine, deadline),
                       in_distribution_weight=refine.in_distribution,
                       judge_ties=judge_ties, drawn_rows=drawn,
                       n_drawn=refine.n_drawn, n_partners=n_rows,
                       # torch's generator (seeded by fit) drawn only when used, so
                       # that a refinement without draws consumes no random numbers
                       random_state=int(torch.randint(2**31 - 1, ()).item()) if drawn
                       else None,
                       # the complement's term first asks every row with nothing kept:
                       # a budget that cannot pay for that refines the kept half alone
                       removed_weight=removed_weight
                       if refine.max_queries > 2 * len(X) * n_fill else 0.0,
                       max_seconds=None if deadline is None else
                       max(0.0, deadline - time.monotonic()))
    callbacks = []
    if verbose:
        what = f"{name} refining against the model"
        synthetic = f" (and {len(X) - n_rows:,} synthetic)" if len(X) > n_rows else ""
        sys.stderr.write(f"{what}: {n_rows:,} rows{synthetic}, a budget of "
                         f"{refine.max_queries:,} queries\n")
        sys.stderr.flush()
        callbacks.append(("refine_progress", _RefineProgress(judge, what)))
    net = _train_selector(fitted, net_input, judge, refine, k=k, n_judged=n_rows,
                          callbacks=callbacks, **keep_sizes)
    if net is None:  # a budget too small to judge the selector once: none refined
        return None, None
    keep_best = dict(net.callbacks_)["keep_best"]
    record = Bunch(
        fidelity=np.array([keep_best.start_fidelity_, *net.history[:, "model_fidelity"]],
                          dtype=np.float64),
        n_queries=judge.n_queries, settings=refine, most_epochs=net.plan_.most_epochs,
        extensions=net.extensions_, ended_stale=keep_best.stale_ >= keep_best.patience,
        out_of_time=judge.out_of_time(), n_training=n_rows, n_rows=len(X),
    )
    return record, judge


def _warn_if_still_rising(record, name):
    """A ConvergenceWarning when the refinement ended on its budget (queries, seconds or
    epochs), not on ``n_iter_no_change``, while the model's fidelity on the evaluation
    rows still rose (:func:`~sk_sointer._model_judge.still_rising`), its budget extended as
    often as ``max_extensions`` allows. ``record.n_rows`` rows were refined, the first
    ``record.n_training`` of them training rows, the others synthetic: the epochs that
    ``max_epochs`` allows those are not warned of."""
    refine, extensions = record.settings, record.extensions
    n_epochs = len(record.fidelity) - 1
    rising = still_rising(record.fidelity)
    if rising is None or record.ended_stale:
        return
    before, after, last = rising
    if record.out_of_time:
        limit, remedy = f"its time budget (max_seconds={refine.max_seconds:g})", "max_seconds"
    elif n_epochs < record.most_epochs:  # ended by the queries, not the epochs
        extended = (f", extended {extensions} times" if extensions > 1
                    else ", extended once" if extensions else "")
        limit = f"its query budget (max_queries={refine.max_queries:,}{extended})"
        # Extended as often as allowed: more extensions; otherwise a larger budget.
        remedy = "max_extensions" if extensions else "max_queries"
    elif record.n_rows > record.n_training:
        # With synthetic rows the epochs are max_epochs times the root of the training
        # rows' share, on purpose: a few hundred rows are not fitted further (on
        # diabetes, 309 rows, 300 epochs raised the training rows' fidelity, not the
        # test rows').
        return
    else:
        limit, remedy = f"max_epochs={refine.max_epochs}", "max_epochs"
    warnings.warn(
        f"{name}'s refinement against the model ended on {limit} after "
        f"{n_epochs} epochs while the model's fidelity on the training rows still rose "
        f"({before:.3f} -> {after:.3f} over its last {last} epochs): a larger "
        f"ModelRefinement({remedy}=...) may give more faithful masks "
        "(refinement_fidelity_ holds the curve).",
        ConvergenceWarning,
    )


def _with_synthetic_rows(problem, refine, X, net_input, outputs, value, selector_input):
    """The training rows, what the selector sees of them and the model's outputs on
    them, each followed by the same of the refinement's synthetic rows (see
    ``ModelRefinement(min_rows=)``), whose outputs the model gives here; none are made
    of images or token ids. A masked row costs ``value``'s queries a row;
    ``selector_input`` is what the selector sees of rows."""
    n_new = refine.n_synthetic(len(X), value.queries_per_row)
    if not n_new or problem.layout.image_shape is not None or problem.masker.tokens:
        return X, net_input, outputs
    synthetic = refine.synthetic_rows(X, problem.masker, n_new,
                                      int(torch.randint(2**31 - 1, ()).item()))
    answers = in_chunks(problem.black_box.predict, synthetic)
    seen = selector_input(problem.masker.standardize(synthetic), synthetic,
                          problem.output_spec.standardize(answers))
    return (np.concatenate([X, synthetic]), np.concatenate([net_input, seen]),
            np.concatenate([outputs, answers]))


def _in_distribution_judge(fitted, problem, X, outputs, refine, deadline=None):
    """``in_distribution(index, group_masks)``: the outputs of EVAL-X's predictor,
    trained here on random masks of ``X`` over the problem of the net ``fitted``, on those
    rows masked so; ``None`` when the
    refinement gives it no weight or the rows are token ids (see
    ``ModelRefinement(in_distribution=)``)."""
    masker = problem.masker
    if not refine.in_distribution or masker.tokens:  # token ids: see ModelRefinement
        return None
    X_scaled = masker.standardize(X).astype(np.float32)
    targets = problem.output_spec.standardize(outputs)
    # A bounded cost on large tables: trained on at most _JUDGE_ROWS rows, drawn with
    # torch's generator (seeded by fit) only when there are more.
    rows = slice(None) if len(X) <= _JUDGE_ROWS else \
        np.sort(torch.randperm(len(X))[:_JUDGE_ROWS].numpy())
    judge = in_distribution_judge(fitted, X_scaled[rows], targets[rows],
                                  max_epochs=refine.judge_epochs, deadline=deadline)
    return _InDistribution(judge, X_scaled, masker)


class _InDistribution:
    """An in-distribution judge's outputs on rows ``index`` (of the standardised training
    rows ``X_scaled``) masked by ``group_masks``: ``judge(index, group_masks)`` of arrays,
    in chunks, an array; :meth:`tensor` of tensors on the judge's device, a tensor there."""

    def __init__(self, judge, X_scaled, masker):
        self.judge, self.X_scaled, self.masker = judge, X_scaled, masker
        self._on_device = None

    def __call__(self, index, group_masks):
        def predict(scaled, feature_masks):
            outputs = self.judge.predict_masked(torch.as_tensor(scaled),
                                                torch.as_tensor(feature_masks))
            return outputs.cpu().numpy()

        return in_chunks(predict, self.X_scaled[index],
                         self.masker.expand(group_masks).astype(np.float32))

    def rows_on(self, device):
        """The standardised rows as a tensor on ``device``, copied there once."""
        if self._on_device is None or self._on_device.device != device:
            self._on_device = torch.as_tensor(self.X_scaled, device=device)
        return self._on_device

    def tensor(self, index, group_masks):
        return self.judge.predict_masked(self.rows_on(group_masks.device)[index],
                                         self.masker.expand(group_masks).float())


def _train_selector(fitted, net_input, model_judge, refinement, *, k, n_judged=None,
                    callbacks=(), threshold=None, scores_of=None):
    """Refine the selector of the fitted net ``fitted`` (its ``module_``, in place) against
    the black box.

    A :class:`ModelJudgedNet` trains it on the score-function gradient of the model's
    reward (``model_judge``, a :class:`~sk_sointer._model_judge.ModelJudge` over the training
    rows, ``net_input`` being what the selector sees of them), configured by
    ``refinement`` (a :class:`~sk_sointer._model_judge.ModelRefinement`); the selector the
    model judges best after an epoch, this one included, is kept, judged on rows drawn
    from the first ``n_judged`` (the training rows, not the synthetic ones that may
    follow them; all by default), which also bound the epochs. Every query is paid
    from ``refinement``'s budget (:meth:`~sk_sointer._model_judge.ModelRefinement.plan`),
    the synthetic rows' answers already spent included, and the steps it cannot pay
    for are not taken; where it ends the refinement while the fidelity still rises,
    the budget grows by another ``max_queries`` and training goes on (at most
    ``max_extensions`` times, see
    :meth:`~sk_sointer._model_judge.ModelRefinement.extension`). Returns the refinement's
    net, or ``None`` when the budget cannot pay for one evaluation (nothing refined);
    the net's history records ``model_fidelity``, its ``keep_best`` callback the
    fidelity before and after.
    ``callbacks`` (skorch's ``(name, callback)`` pairs) are added to its own, after
    ``keep_best``: progress reports. ``k`` may be an array of each row's size, kept
    above ``threshold`` (see :class:`ModelJudgedNet`); the plan then reckons with their
    mean.
    """
    n_rows = len(net_input)
    spent = model_judge.n_queries
    plan = refinement.plan(n_rows, max(1, round(float(np.mean(k)))),
                           model_judge.masker.n_groups_,
                           model_judge.value.queries_per_row, spent=spent,
                           n_training=n_judged, judged_queries=model_judge.judged_queries,
                           greedy_queries=model_judge.greedy_queries,
                           cost_queries=model_judge.cost_queries)
    if plan is None:  # the budget cannot pay for judging the selector once
        return None
    model_judge.set_budget(refinement.max_queries - spent, refinement.max_seconds)
    # The rows judged after every epoch: drawn once (torch's generator, seeded by fit).
    eval_index = np.sort(torch.randperm(n_judged or n_rows)[: plan.n_eval].numpy())
    imitate = None
    if plan.n_imitated:
        imitated = np.sort(model_judge.imitated(torch.randperm(n_rows).numpy(),
                                                plan.n_imitated))
        imitate = np.zeros((n_rows, model_judge.masker.n_groups_), dtype=np.float32)
        if np.ndim(k) == 0:
            imitate[imitated] = model_judge.greedy(imitated, k)
            # Every answer of a classifier imitated alike, the rare one's rows included.
            imitate[imitated] *= model_judge.answer_weights(imitated)[:, None]
        else:  # the rows of each size together
            for size in np.unique(k[imitated]):
                rows = imitated[k[imitated] == size]
                imitate[rows] = model_judge.greedy(rows, int(size))
    keep_best = KeepBestByModel(net_input, eval_index, patience=refinement.n_iter_no_change)
    if refinement.imitate_epochs and plan.n_imitated:
        # The method's own selector stays a candidate of the keep-best.
        sizes = (k if np.ndim(k) == 0
                 else torch.as_tensor(np.asarray(k)[eval_index], dtype=torch.long))
        judged = model_judge.judged(eval_index,
                                    fitted.group_masks(net_input[eval_index], sizes))
        keep_best.own_ = (*judged, copy.deepcopy(fitted.module_.state_dict()))
        ImitationNet(
            fitted.module_, k=k, imitate=imitate, max_epochs=refinement.imitate_epochs,
            batch_size=min(refinement.batch_size, len(imitated)), lr=refinement.lr,
            **fitted.phase_params(),
        ).fit(net_input[imitated], imitated.astype(np.int64)[:, None])
    net = ModelJudgedNet(
        fitted.module_,
        k=k,
        model_judge=model_judge,
        n_samples=refinement.n_samples,
        imitate=imitate,
        threshold=threshold,
        scores_of=scores_of,
        max_epochs=plan.max_epochs,
        batch_size=min(refinement.batch_size, n_rows),
        lr=refinement.lr,
        callbacks=[("keep_best", keep_best), *callbacks],
        **fitted.phase_params(),
    )
    net.plan_ = plan  # what ended the epochs, for the explainer's convergence warning
    index = np.arange(n_rows, dtype=np.int64)[:, None]
    net.fit(net_input, index)
    # Where the query budget ended it while the fidelity still rose, the same
    # refinement goes on, paid by another max_queries (ModelRefinement.max_extensions).
    net.extensions_ = 0
    while (net.extensions_ < refinement.max_extensions
           and keep_best.stale_ < keep_best.patience and not model_judge.out_of_time()):
        curve = [keep_best.start_fidelity_, *net.history[:, "model_fidelity"]]
        epochs = refinement.extension(plan, curve, model_judge.value.queries_per_row)
        if not epochs:
            break
        model_judge.extend_budget(refinement.max_queries)
        net.extensions_ += 1
        net.budget_spent_ = False
        # The greedy targets weigh in again over the extension's first half.
        net.extended_at_ = len(net.history)
        net.epochs_planned_ = len(net.history) + epochs
        net.partial_fit(net_input, index, epochs=epochs)
    return net
