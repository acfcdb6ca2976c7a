"""One report of an explanation in the evaluation literature's terms: :func:`evaluate`.

The entries, and where the literature names them:

- fidelity with the selected features kept, and with them removed (MEED's FS-M and FU-M;
  OpenXAI's prediction gaps on unimportant and important features, PGU and PGI, read as
  agreements rather than gaps);
- the insertion and deletion curves along the explainer's ranking and their areas
  (shap.benchmark's keep and remove curves; :func:`insertion_deletion_curves`);
- the same two fidelities with the left-out features imputed from the kept ones rather
  than set to the baseline (ROAD's noisy linear imputation, for tables: each left-out
  feature drawn from its Gaussian conditional on the kept ones), so that the mask's shape
  cannot tell the model anything;
- the per-row check: the share of rows whose masked row keeps the model's answer (a class
  kept, a value within a tenth of its spread), and which rows those are;
- the EVAL-X eACC (:class:`EvalXEvaluator`);
- stability: agreement with the masks of the same explainer refitted with other seeds,
  and under small input perturbations (OpenXAI's relative input stability, RIS);
- sparsity: features kept per row and their spread (``k=None`` methods vary);
- cost: microseconds per row, and the rows after which fitting once has paid for itself
  against a per-row explainer of a given cost.
"""

from numbers import Integral

import numpy as np
from sklearn.utils import Bunch, check_random_state
from sklearn.utils.validation import check_is_fitted

from .._masking import Masker
from .._model_judge import masked_value, row_check
from ..black_box import as_black_box, model_agreement, model_answers
from ._fidelity import _rows_and_masks
from ._stability import _check_number, _cost, _stability

# Entries for which lower is better: their scorers return minus the value.
LOWER_IS_BETTER = frozenset({
    "fidelity_removed", "road_removed", "deletion_auc", "mask_change",
    "relative_input_stability", "features_per_row", "us_per_row", "break_even_rows",
})

ENTRIES = (
    "fidelity_kept", "fidelity_removed", "rows_holding", "insertion_auc", "deletion_auc",
    "road_kept", "road_removed", "eacc", "seed_agreement", "mask_change",
    "relative_input_stability", "features_per_row", "features_per_row_std", "us_per_row", "fit_s", "break_even_rows",
)
"""Every entry :func:`evaluate` can compute, in the order it reports them."""


def evaluate(explanation, model=None, X=None, *, baseline=None, scores=None, entries=None,
             evaluator=None, X_reference=None, refit_seeds=(), X_fit=None, noise=0.05,
             n_perturbations=10, n_steps=None, peer_ms_per_row=None, fit_seconds=None,
             random_state=0):
    """How faithful, stable, sparse and costly an explanation of ``X`` is, in one report.

    Parameters
    ----------
    explanation : fitted explainer or array-like of the shape of X
        An explainer (its masks of ``X``, its way of leaving features out, its scores for
        the curves, its black box unless ``model`` is given) or raw 0/1 masks. An
        explainer fitted with ``background`` rows is judged as its ``score`` judges it:
        ``fidelity_kept``, ``fidelity_removed``, ``rows_holding`` and the insertion and
        deletion curves compare the model's outputs averaged over those rows, on the full
        and on the masked rows (a fidelity: the share of rows whose class survives, R²
        for a real output); otherwise the left-out features take its baseline and a
        classifier's own answers are compared.
    model : model, default=None
        The black box; by default the explainer's own (``black_box_``).
    X : array-like of shape (n_samples, n_features), or images
        The rows explained.
    baseline : {"mean", "zero"}, float or array-like, default=None
        What fills the left-out features of raw masks (required with them: an explainer's
        fidelity depends on it, so it is never guessed). With an explainer it must be None:
        the explainer's own baseline (``masker_.baseline_``), or its background rows, are
        used.
    scores : array-like of the shape of X, default=None
        Scores that rank the features of each row, for the insertion and deletion curves;
        by default the explainer's :meth:`explain`. Without them the curves are left out.
    entries : iterable of str, default=None
        The entries to compute (see :data:`ENTRIES`); by default every one the inputs allow.
    evaluator : fitted EvalXEvaluator, default=None
        Gives ``eacc``, its eACC of the masks.
    X_reference : array-like, default=None
        Rows that the ROAD imputation's Gaussian is fitted on; by default ``X``.
    refit_seeds : iterable of int, default=()
        For ``seed_agreement``: the explainer is refitted on ``X_fit`` and ``model`` with
        each of these ``random_state`` values, and its masks of ``X`` compared with the
        original ones (mean cosine, ``|S ∩ S'| / k`` for k-hot masks).
    X_fit : array-like, default=None
        The rows to refit on for ``seed_agreement``.
    noise : float, default=0.05
        For ``mask_change`` and ``relative_input_stability``: the perturbations are
        Gaussian, with a standard deviation of ``noise`` times each feature's standard
        deviation over ``X``.
    n_perturbations : int, default=10
        Perturbed copies of each row.
    n_steps : int, default=None
        Steps of the insertion and deletion curves (see
        :func:`insertion_deletion_curves`).
    peer_ms_per_row : float, default=None
        The cost of a per-row explainer (KernelSHAP, LIME) in milliseconds per row, for
        ``break_even_rows``.
    fit_seconds : float, default=None
        The explainer's fit time, for ``fit_s`` and ``break_even_rows``; by default the
        explainer's ``fit_time_`` when it has one.
    random_state : int, RandomState instance or None, default=0
        Seeds the ROAD draws and the perturbations.

    Returns
    -------
    report : Bunch
        One key per entry computed (floats), plus ``fraction``, ``insertion`` and
        ``deletion`` (the curves) with the areas, ``row_holds`` (bool, one per row) with
        ``rows_holding`` and, for a model of one categorical output,
        ``rows_holding_by_answer`` (``{class: share}``: the rows holding among those the
        model answers that class, where a rare answer shows), and ``notes``: why an entry
        asked for was left out. It prints as a table of entry and value.

    Notes
    -----
    The explanation comes first because it may be judged without a model (an explainer
    holds its own); the order of the other metrics, the model first, is accepted too:
    ``evaluate(model, explainer, X)`` is ``evaluate(explainer, model, X)``.
    Options are checked before anything is computed: ``n_perturbations`` must be
    positive (none would report perfect stability), ``noise`` at least 0, ``scores`` finite
    and of the shape of ``X``, ``X_reference`` of its width with 2 rows at least. Entries
    that the rows cannot give (ROAD or the stability entries on one row) are left out
    with a note.

    See Also
    --------
    posthoc_accuracy : The fidelity entries alone.
    EvalXEvaluator : The judge behind ``eacc``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sk_sointer.metrics import evaluate
    >>> X = np.random.RandomState(0).randn(200, 3)
    >>> model = LogisticRegression().fit(X, X[:, 0] > 0)
    >>> keep_first = np.tile([1.0, 0.0, 0.0], (200, 1))
    >>> report = evaluate(keep_first, model, X, baseline="mean",
    ...                   entries=["fidelity_kept", "fidelity_removed", "features_per_row"])
    >>> report.fidelity_kept > 0.95, report.fidelity_removed < 0.6, report.features_per_row
    (True, True, 1.0)
    """
    explanation, model = _explanation_and_model(explanation, model)
    if _is_explainer(explanation):
        check_is_fitted(explanation)
    explainer = explanation if hasattr(explanation, "masker_") else None
    if X is None:
        raise ValueError("evaluate needs the rows X that the explanation explains.")
    wanted = _wanted_entries(entries)
    _check_options(evaluator, refit_seeds, noise, n_perturbations, peer_ms_per_row,
                   fit_seconds)
    rng = check_random_state(random_state)
    if explainer is not None:
        if baseline is not None:
            raise ValueError(
                f"evaluate was given the explainer {type(explainer).__name__} and a baseline: "
                "the explainer's own baseline fills the left-out features (masker_.baseline_)."
            )
        masks = explainer.transform(X)
        masker = explainer.masker_
        if scores is None and wanted & {"insertion_auc", "deletion_auc"}:
            scores = explainer.explain(X)
    else:
        if baseline is None:
            raise ValueError(
                "evaluate needs the baseline that fills the left-out features when it is given "
                "raw masks (the explainer's masker_.baseline_, \"mean\", \"zero\", a number or "
                "one per feature): the fidelity of the same masks depends on it."
            )
        masks = explanation
    codec = None if explainer is None else explainer._table_codec
    if codec is not None:
        # A table: the rows as the explainer codes them, one mask column per table column.
        rows, row_shape = explainer._validate_transform_input(X), None
        kept = _rows_and_masks(np.zeros(rows.shape), masks, "selected")[1]
    else:
        rows, kept, row_shape = _rows_and_masks(X, masks, "selected")
    if explainer is None:
        masker = Masker(baseline).fit(rows)
    black_box = _black_box(explainer, model, row_shape)
    report = EvaluationReport(notes={})
    if scores is not None:
        scores = _check_scores(scores, rows, row_shape)

    target = None if explainer is None else explainer.output_spec_.target
    answers = model_answers(black_box, rows)  # the full rows' answers, asked once
    # How the model answers masked rows: the explainer's own way (its fill, or its
    # background rows, as score asks), the baseline's fill for raw masks.
    value = (masked_value(black_box, masker) if explainer is None
             else explainer._masked_value(black_box))
    reference = value.answers(rows, answers)

    def fidelity(keep, fill=None):
        if fill is None:
            return _of_target(value.agreement(rows, keep, answers=reference), target)
        return _agreement(black_box, rows, masker.mask_raw(rows, keep, fill=fill), target,
                          answers)

    if "fidelity_kept" in wanted:
        report.fidelity_kept = fidelity(kept)
    if "fidelity_removed" in wanted:
        report.fidelity_removed = fidelity(~kept)
    if "rows_holding" in wanted:
        spec = black_box.spec if explainer is None else explainer.output_spec_
        report.row_holds = _row_holds(value, rows, kept, spec)
        report.rows_holding = float(report.row_holds.mean())
        by_answer = _holding_by_answer(black_box.spec, answers, report.row_holds)
        if by_answer is not None:
            report.rows_holding_by_answer = by_answer
    if wanted & {"insertion_auc", "deletion_auc"}:
        if scores is None:
            report.notes["insertion_auc"] = "needs scores (or an explainer) to rank features"
        else:
            report.update(_curves(value, rows, scores, n_steps, target, reference))
    if wanted & {"road_kept", "road_removed"}:
        if getattr(masker, "tokens", False):
            report.notes["road_kept"] = "token ids have no Gaussian to impute from"
        elif codec is not None:
            report.notes["road_kept"] = ("a table's text and category columns have no "
                                         "Gaussian to impute from")
        elif X_reference is None and len(rows) < 2:
            report.notes["road_kept"] = ("the imputation's Gaussian needs 2 rows at least: "
                                         "pass X_reference=")
        else:
            gaussian = _Gaussian(rows if X_reference is None
                                 else _reference_rows(X_reference, rows))
            report.road_kept = fidelity(kept, gaussian.impute(rows, kept, rng))
            report.road_removed = fidelity(~kept, gaussian.impute(rows, ~kept, rng))
        if "road_kept" in report.notes:
            report.notes["road_removed"] = report.notes["road_kept"]
    if "eacc" in wanted and evaluator is not None:
        judged = evaluator.score_masks(X, masks)
        if "eACC" in judged:
            report.eacc = float(judged["eACC"])
        else:
            report.notes["eacc"] = "the evaluator judges real outputs, which have no accuracy"
    if codec is not None:
        for name in wanted & {"mask_change", "relative_input_stability"}:
            report.notes[name] = ("a table's text and category columns cannot be moved by "
                                  "Gaussian noise")
        wanted = wanted - {"mask_change", "relative_input_stability"}
    if explainer is not None:
        _stability(report, wanted, explainer, model, X, masks, rows, row_shape, refit_seeds,
                   X_fit, noise, n_perturbations, rng)
    counts = kept.sum(axis=1)
    if "features_per_row" in wanted:
        report.features_per_row = float(counts.mean())
    if "features_per_row_std" in wanted:
        report.features_per_row_std = float(counts.std())
    if explainer is not None:
        _cost(report, wanted, explainer, X, peer_ms_per_row, fit_seconds)
    for name in wanted - set(report) - set(report.notes):
        report.notes.setdefault(name, _MISSING.get(name, "needs a fitted explainer"))
    return report


def _row_holds(value, rows, kept, spec):
    """The per-row check of the masks (:func:`~sk_sointer._model_judge.row_check`), with the
    explainer's way of leaving features out (``value``: its background rows, or its fill)."""
    return row_check(value.full(rows), value.masked(rows, kept), spec).holds


def _holding_by_answer(spec, answers, holds):
    """For a model of one categorical output, the share of rows holding among those it
    answers each class, ``{class: share}`` (classes as the model names them, or column
    indices); ``None`` for other models. On a table where one answer is rare, the mean
    fill keeps the common answer on nearly every row, and ``rows_holding`` says little of
    the rare one's rows."""
    if spec.kinds != ("categorical",):
        return None
    kind, values = answers
    if kind == "labels":
        labels = values[:, 0]
    else:
        labels = values.argmax(axis=1)
        if spec.classes is not None and spec.classes[0] is not None:
            labels = np.asarray(spec.classes[0])[labels]
    return {_plain(label): float(holds[labels == label].mean()) for label in np.unique(labels)}


def _plain(label):
    """A class label as a plain Python value (an int, not np.int64), for printing."""
    return label.item() if isinstance(label, np.generic) else label


_MISSING = {
    "eacc": "needs evaluator=",
    "seed_agreement": "needs an explainer, refit_seeds= and X_fit=",
    "break_even_rows": "needs peer_ms_per_row= and a fit time",
    "fit_s": "needs fit_seconds= (or an explainer's fit_time_)",
}


class EvaluationReport(Bunch):
    """:func:`evaluate`'s report: a :class:`~sklearn.utils.Bunch` (a dict whose keys are
    also attributes) that prints as a short table, one entry a line, then the notes."""

    def __repr__(self):
        lines = ["evaluate report"]
        # The rows holding by the model's answer first: a rare answer's share is where a
        # table's explanation is read, and the overall share hides it.
        first = [name for name in ("rows_holding_by_answer", "rows_holding") if name in self]
        named = first + [name for name in ENTRIES if name in self and name not in first]
        others = [name for name in self if name not in named and name != "notes"]
        width = max((len(name) for name in [*named, *others]), default=0)
        for name in [*named, *others]:
            lines.append(f"  {name:<{width}}  {_short(self[name])}")
        notes = self.get("notes") or {}
        if notes:
            lines.append("  left out:")
            lines.extend(f"    {name}: {why}" for name, why in notes.items())
        return "\n".join(lines)

    __str__ = __repr__


def _short(value):
    """One entry's value in a few characters."""
    if isinstance(value, (float, np.floating)):
        return f"{value:.4g}"
    array = np.asarray(value) if isinstance(value, (np.ndarray, list, tuple)) else None
    if array is not None and array.ndim == 1 and array.size <= 6:
        return "[" + ", ".join(_short(float(v)) for v in array) + "]"
    if array is not None:
        return f"array of shape {array.shape}"
    if isinstance(value, dict) and len(value) <= 6:
        return "{" + ", ".join(f"{key!r}: {_short(v)}" for key, v in value.items()) + "}"
    if isinstance(value, dict):
        return f"{len(value)} entries"
    return repr(value)


def _wanted_entries(entries):
    if entries is None:
        return set(ENTRIES)
    entries = {entries} if isinstance(entries, str) else set(entries)
    unknown = entries - set(ENTRIES)
    if unknown:
        raise ValueError(f"Unknown entries {sorted(unknown)}; known: {list(ENTRIES)}.")
    return entries


def _black_box(explainer, model, row_shape):
    if model is not None:
        black_box = as_black_box(model).with_row_shape(row_shape)
        codec = None if explainer is None else explainer._table_codec
        return black_box if codec is None else black_box.with_table(codec)
    if explainer is None:
        raise ValueError("evaluate needs the model to judge raw masks: pass model=.")
    if explainer.black_box_ is None:
        raise ValueError(
            f"This {type(explainer).__name__} holds no model (it was fitted on outputs only, "
            "or saved without it), and its fidelity is measured by querying the model on "
            "masked rows: pass it as model=."
        )
    return explainer._model_of_rows()


def _is_explainer(obj):
    return hasattr(obj, "explain") and hasattr(obj, "transform") and not isinstance(obj, type)


def _is_model(obj):
    return not _is_explainer(obj) and not isinstance(obj, type) and (
        callable(obj) or hasattr(obj, "predict") or hasattr(obj, "predict_proba"))


def _explanation_and_model(explanation, model):
    """``(explanation, model)`` as evaluate reads them, whichever order they came in: the
    metrics' order (the model first, as a reference) is accepted too."""
    if _is_model(explanation) and model is not None and not _is_model(model):
        explanation, model = model, explanation
    for name, value in (("explanation", explanation), ("model", model)):
        if isinstance(value, type):
            raise TypeError(f"evaluate's {name} should be an instance, not the class "
                            f"{value.__name__}.")
    if _is_model(explanation):
        raise TypeError(
            f"evaluate's explanation should be a fitted explainer or 0/1 masks; got the model "
            f"{explanation!r} (pass the model as model=)."
        )
    return explanation, model


def _check_options(evaluator, refit_seeds, noise, n_perturbations, peer_ms_per_row,
                   fit_seconds):
    """evaluate's options, refused with one line naming the one that is wrong."""
    if evaluator is not None:
        if isinstance(evaluator, type):
            raise TypeError(f"evaluator should be a fitted instance, not the class "
                            f"{evaluator.__name__}: pass {evaluator.__name__}(...).fit(X, model).")
        if not hasattr(evaluator, "score_masks"):
            raise TypeError(f"evaluator should be a fitted EvalXEvaluator; got {evaluator!r}.")
        check_is_fitted(evaluator)
    if isinstance(refit_seeds, (str, bytes)) or not np.iterable(refit_seeds) or not all(
            isinstance(seed, Integral) and not isinstance(seed, bool) for seed in refit_seeds):
        raise ValueError(f"refit_seeds should be integers; got {refit_seeds!r}.")
    _check_number("noise", noise)  # 0: the control, masks unchanged
    _check_number("n_perturbations", n_perturbations, positive=True, integer=True)
    if peer_ms_per_row is not None:
        _check_number("peer_ms_per_row", peer_ms_per_row, positive=True)
    if fit_seconds is not None:
        _check_number("fit_seconds", fit_seconds)


def _check_scores(scores, rows, row_shape):
    """``scores`` as flat float rows, of the rows' shape and finite."""
    scores = np.asarray(scores, dtype=np.float64)
    expected = (len(rows), *row_shape) if row_shape is not None else rows.shape
    if scores.shape != tuple(expected):
        raise ValueError(f"scores should have the shape of X {tuple(expected)}; got "
                         f"{scores.shape}.")
    if not np.isfinite(scores).all():
        raise ValueError("scores should be finite: they hold NaN or infinite values, which "
                         "rank no feature.")
    return scores.reshape(rows.shape)


def _reference_rows(X_reference, rows):
    """``X_reference`` as flat float rows of the width of the rows explained."""
    reference = _rows_and_masks(X_reference, np.ones(np.shape(X_reference)), "selected")[0]
    if reference.shape[1] != rows.shape[1]:
        raise ValueError(f"X_reference should have the width of X ({rows.shape[1]} features); "
                         f"got {reference.shape[1]}.")
    if len(reference) < 2:
        raise ValueError("X_reference should have 2 rows at least (a Gaussian is fitted on "
                         f"them); got {len(reference)}.")
    return reference


def insertion_deletion_curves(explainer, X, *, model=None, n_steps=None):
    """The model's agreement with itself as an explainer's top-ranked features are
    inserted into the baseline, or deleted from the rows.

    Each row's feature groups (features without groups) are ranked by the explainer's
    scores (:meth:`explain`, ties to the lower index as in ``transform``). For ``j``
    from 0 to the number of groups ``d``, insertion keeps each row's top ``j`` groups and
    puts the others at the explainer's baseline; deletion puts the top ``j`` at the
    baseline and keeps the others. Each point is the model's agreement on those rows with
    its own answer on the full rows, as in the explainer's ``score``: the fraction of
    unchanged predicted labels for a classifier (post-hoc accuracy), R² for a real output.
    Insertion ends, and deletion starts, at 1; good scores make insertion rise fast (a
    large area under it) and deletion fall fast (a small one).

    Parameters
    ----------
    explainer : fitted explainer
    X : array-like of shape (n_samples, n_features), or images as given to ``fit``
    model : object, default=None
        The model to query (see :func:`~sk_sointer.as_black_box`); default: the one the
        explainer was fitted with (``black_box_``), needed when it was fitted on outputs
        only.
    n_steps : int, default=None
        Steps from no group to all: the curves have ``n_steps + 1`` points, at
        ``j = round(i * d / n_steps)``. Default: every ``j`` up to 100 groups, 100 steps
        beyond.

    Returns
    -------
    curves : :class:`~sklearn.utils.Bunch`
        ``fraction`` (``j / d``), ``insertion`` and ``deletion`` (ndarrays of the same
        length), and ``insertion_auc`` and ``deletion_auc``: the areas under the curves by
        the trapezoid rule over ``fraction`` (in [0, 1] for classifiers).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sk_sointer import L2XExplainer
    >>> from sk_sointer.metrics import insertion_deletion_curves
    >>> X = np.random.RandomState(0).randn(60, 3).astype(np.float32)
    >>> model = LogisticRegression().fit(X, X[:, 0] > 0)
    >>> explainer = L2XExplainer(k=1, max_epochs=2, random_state=0).fit(X, model)
    >>> curves = insertion_deletion_curves(explainer, X)
    >>> curves.fraction.round(2).tolist()
    [0.0, 0.33, 0.67, 1.0]
    >>> float(curves.insertion[-1]), float(curves.deletion[0])
    (1.0, 1.0)
    """
    check_is_fitted(explainer)
    black_box = _black_box(explainer, model, explainer.layout_.row_shape)
    rows = (explainer._validate_transform_input(X) if explainer._table_codec is not None
            else _rows_and_masks(X, explainer.transform(X), "selected")[0])
    return Bunch(**_curves(explainer._masked_value(black_box), rows, explainer.explain(X),
                           n_steps, explainer.output_spec_.target))


def _curves(value, rows, scores, n_steps, target=None, answers=None):
    """The curves of :func:`insertion_deletion_curves` for flat ``rows`` and the
    ``scores`` of their features (a group's features carry the group's score), the model
    asked as ``value`` asks it (``answers``: its :meth:`~sk_sointer._model_judge.
    MaskedValue.answers` of ``rows``, when known)."""
    masker = value.masker
    answers = value.answers(rows) if answers is None else answers
    scores = np.asarray(scores, dtype=np.float64).reshape(rows.shape)
    scores = masker.reduce_raw(scores)  # each group's score, read at its first feature
    n_groups = scores.shape[1]
    if n_steps is None:
        n_steps = min(n_groups, 100)
    elif not isinstance(n_steps, Integral) or isinstance(n_steps, bool) or n_steps < 1:
        raise ValueError(f"n_steps should be a positive integer; got {n_steps!r}.")
    steps = np.unique(np.round(np.linspace(0, n_groups, n_steps + 1)).astype(int))
    # rank[i, g]: place of group g in row i's order, best first (stable, as transform's top-k)
    order = np.argsort(-scores, axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(n_groups), order.shape), axis=1)

    def agreement(kept):
        return _of_target(value.agreement(rows, masker.expand_raw(kept), answers=answers),
                          target)

    insertion = np.array([agreement(rank < j) for j in steps])
    deletion = np.array([agreement(rank >= j) for j in steps])
    fraction = steps / n_groups
    return {"fraction": fraction, "insertion": insertion, "deletion": deletion,
            "insertion_auc": float(np.trapezoid(insertion, fraction)),
            "deletion_auc": float(np.trapezoid(deletion, fraction))}


def _agreement(black_box, rows, masked, target=None, answers=None):
    """The model's agreement with itself from ``rows`` (its ``answers`` on them, when
    known) to ``masked``: averaged over its outputs, or on the ``target`` output alone (an
    explainer of one output)."""
    return _of_target(model_agreement(black_box, rows, masked, multioutput="raw_values",
                                      answers=answers), target)


def _of_target(values, target):
    """Per-output ``values`` averaged, or the ``target`` output's alone."""
    if target is not None and target >= len(values):
        raise ValueError(
            f"The explainer explains output {target} of its model, but the model given has "
            f"{len(values)} output{'s' if len(values) != 1 else ''}: pass the model the "
            "explainer was fitted with."
        )
    return float(values.mean() if target is None else values[target])


class _Gaussian:
    """A Gaussian fitted on reference rows, whose conditionals impute left-out features:
    ROAD's noisy linear imputation for tables (the conditional mean is linear in the kept
    features; the draw adds the conditional noise)."""

    def __init__(self, reference):
        reference = np.asarray(reference, dtype=np.float64)
        self.mean = reference.mean(axis=0)
        cov = np.atleast_2d(np.cov(reference, rowvar=False))
        # A ridge of a millionth of the average variance keeps constant or collinear
        # features from making the conditionals singular.
        self.cov = cov + 1e-6 * max(np.trace(cov) / len(cov), 1e-12) * np.eye(len(cov))

    def impute(self, X, kept, rng):
        """``X`` with the features outside ``kept`` drawn from their conditional on the
        kept ones (rows sharing a pattern of kept features are drawn together)."""
        X = np.asarray(X, dtype=np.float64)
        filled = X.copy()
        patterns, inverse = np.unique(kept, axis=0, return_inverse=True)
        for index, pattern in enumerate(patterns):
            rows, left = np.flatnonzero(inverse.ravel() == index), ~pattern
            if not left.any():
                continue
            mean = np.broadcast_to(self.mean[left], (len(rows), left.sum()))
            cov = self.cov[np.ix_(left, left)]
            if pattern.any():
                gain = np.linalg.solve(self.cov[np.ix_(pattern, pattern)],
                                       self.cov[np.ix_(pattern, left)])
                mean = mean + (X[np.ix_(rows, pattern)] - self.mean[pattern]) @ gain
                cov = cov - self.cov[np.ix_(left, pattern)] @ gain
            root = np.linalg.cholesky((cov + cov.T) / 2 + 1e-9 * np.eye(len(cov)))
            filled[np.ix_(rows, left)] = mean + rng.standard_normal(mean.shape) @ root.T
        return filled


class _EntryScorer:
    """A scorer ``(explainer, X, y=None) -> float`` of one :func:`evaluate` entry."""

    def __init__(self, entry, **kwargs):
        if entry not in ENTRIES:
            raise ValueError(f"Unknown entry {entry!r}; known: {list(ENTRIES)}.")
        self.entry = entry
        self.kwargs = kwargs

    def __call__(self, explainer, X, y=None):
        report = evaluate(explainer, X=X, entries=[self.entry], **self.kwargs)
        if self.entry not in report:
            raise ValueError(f"evaluate could not compute {self.entry!r}: "
                             f"{report.notes.get(self.entry)}.")
        value = report[self.entry]
        return -value if self.entry in LOWER_IS_BETTER else value

    def __repr__(self):
        options = "".join(f", {key}={value!r}" for key, value in self.kwargs.items())
        return f"evaluation_scorer({self.entry!r}{options})"


def evaluation_scorer(entry, **kwargs):
    """A scorer ``(explainer, X, y=None)`` of one entry of :func:`evaluate`, for
    ``GridSearchCV(scoring=...)``: the entry's value, or minus it where lower is better
    (:data:`LOWER_IS_BETTER`). ``kwargs`` go to :func:`evaluate`.

    Examples
    --------
    >>> from sk_sointer.metrics import evaluation_scorer
    >>> evaluation_scorer("deletion_auc")
    evaluation_scorer('deletion_auc')
    """
    return _EntryScorer(entry, **kwargs)
