"""scikit-learn plumbing shared by every explainer.

:class:`BaseExplainer` owns the public API (``fit``, ``transform``, ``explain``, ``score``,
``predict_masked``), validates data and parameters, adapts the black box, learns the masker
(baseline, standardisation, feature groups), seeds training, builds the method's skorch net
(stored as ``net_``; composed, not inherited) and turns scores into masks.

The fit template, :class:`Problem` and the reading of data at the boundary are
:mod:`sk_sointer._estimator`'s (shared with the EVAL-X evaluator), the chunked inference
:mod:`sk_sointer._inference`'s, the model asked about masked rows (``score``, ``check``,
the repair, the refinement) :mod:`sk_sointer._model_judge`'s.

``fit`` first resolves a :class:`Problem` (the rows' :class:`~sk_sointer._layout.RowLayout`,
masker and groups, output spec, black box, target output) and hands it to the method's
hooks:

- ``_check_params(problem)``: checks that depend on the data (``k`` against the groups, a
  ``target`` against the outputs, a single-output model given to a multi-output method);
- ``_pretrain(problem, X, X_scaled, targets)``: an optional phase before the net is built
  (SOInter's energy network);
- ``_fitted_parts()`` and ``_rebuild_parts(problem, device)``: what ``_pretrain`` trained
  besides the net, named for a file, and how :func:`sk_sointer.load` rebuilds it;
- ``_build_net(problem, **net_params)``: the method's skorch net;
- ``_train(problem, X, net_input, targets)``: trains ``net_`` (one ``net_.fit`` by default;
  SOInter's fit adds its re-query and keep-best callbacks);
- ``_refine(problem, X, net_input, outputs)``: after the method's own training, the
  selector refined against the black box itself (:func:`~sk_sointer._model_judge.refine`),
  when ``fit`` got the model and ``refine`` is not None (the selector's
  output serves as the groups' log-weights: every method's scores are increasing in it;
  with ``k=None`` each row keeps its size);
- ``_fit_judge_to_masks(X_scaled, net_input, targets)``: last, where the net's judge learnt
  on relaxed masks (L2X, MEED), a few epochs of the judge alone on the selector's final
  masks, so that it answers on the masks ``transform`` returns;
- ``_selector_input(X_scaled, X)``: what the selector sees (the standardised rows by
  default; MEED adds the black box's output);
- ``_selector_scores(X)``: per-group scores from the fitted selector, its module's outputs
  through ``_scores_of_output`` (REAL-X's and HardKuma's selection probabilities);
- ``_masks_from_scores(scores)``: the top-k, or with ``k=None`` the scores above
  ``_threshold`` (selection probabilities above 0.5).
"""

import time
import warnings
from abc import ABCMeta, abstractmethod
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, _fit_context
from sklearn.utils._param_validation import (Interval, InvalidParameterError, StrOptions,
                                            validate_parameter_constraints)

# Problem, what fit hands the hooks, and expected_failed_checks, what the sklearn checks
# of tests/test_common.py read, are named here as ever.
from ._estimator import Problem, _check_masks, _SkorchEstimatorMixin  # noqa: F401
from ._fitted import _CHECKS_THAT_FIT, _DIVERGED, _diverged, _fitted_state  # noqa: F401
from ._fitted import _restore_fitted_state, _with_expected_failures, expected_failed_checks
from ._inference import _InferenceMixin
from ._model_judge import ModelRefinement, RepairReport, RowRepair, masked_value, refine, \
    repair_masks, row_check
from ._outputs import output_agreement
from ._training.progress import _EpochProgress  # noqa: F401 (SOInter's progress)
from ._utils import in_chunks

# The explainers that read token ids add this to their constraints.
TOKENS_CONSTRAINT = {"tokens": ["boolean"]}


class BaseExplainer(
    _InferenceMixin, _SkorchEstimatorMixin, OneToOneFeatureMixin, TransformerMixin,
    BaseEstimator, metaclass=ABCMeta,
):
    """Base class of the amortized instance-wise feature-selection explainers.

    Not meant to be used directly: use a subclass such as
    :class:`~sk_sointer.L2XExplainer`. The shared parameters are described there.
    """

    # Every explainer's: the modality parameters (what a row is, see RowLayout) and the
    # refinement against the model.
    _parameter_constraints: dict = {
        **_SkorchEstimatorMixin._parameter_constraints,
        "groups": ["array-like", None],
        "image_shape": [tuple, list, None],
        "patch_size": [Integral, tuple, list, None],
        "refine": [StrOptions({"model"}), ModelRefinement, None],
        "repair": [StrOptions({"model"}), RowRepair, None],
        "background": [Interval(Integral, 1, None, closed="left"), "array-like", None],
    }

    # With k=None, the groups whose score exceeds this are selected (selection
    # probabilities above one half).
    _threshold = 0.5

    @abstractmethod
    def _build_net(self, problem, **net_params):
        """Return the method's (uninitialised) skorch net."""

    def _selector_scores(self, X):
        """Per-group scores (float tensor) for standardised rows ``X`` on the net's device."""
        return self._scores_of_output(self.net_.module_(X))

    def _removed_weight(self):
        """Weight of the model's answer with the selected groups left out, taken from the
        refinement's reward (:class:`~sk_sointer._model_judge.ModelJudge`'s ``removed_weight``):
        none; a method whose objective asks the left-out features not to carry the answer
        says how much."""
        return 0.0

    def _refine(self, problem, X, net_input, outputs):
        """Refine the fitted selector against the black box (see :class:`ModelRefinement`
        and :func:`~sk_sointer._model_judge.refine`): only with the model at hand and
        ``refine``. With ``k=None`` each row keeps the number of groups the fitted selector
        gives it, and the refinement chooses which."""
        settings = getattr(self, "refine", None)
        if isinstance(settings, str):  # "model": the default settings
            settings = ModelRefinement()
        self.n_model_queries_ = 0
        self.refinement_fidelity_ = None
        if settings is None or problem.black_box is None or settings.max_queries == 0:
            return  # max_queries=0: the selector as the method trained it
        record = refine(
            self.net_, problem, settings, X, net_input, outputs, value=self._masked_value(),
            k=self.k_, sizes=self._selection_sizes, threshold=self._threshold,
            scores_of=self._scores_of_output, selector_input=self._selector_input,
            removed_weight=self._removed_weight(), verbose=self.verbose,
            name=type(self).__name__)
        if record is not None:  # None: a budget too small to judge the selector once
            self.refinement_fidelity_ = record.fidelity
            self.n_model_queries_ = record.n_queries

    def _scores_of_output(self, outputs):
        """The selector's scores (those ``_threshold`` applies to) of its module's outputs,
        differentiably: the outputs themselves unless a method says otherwise."""
        return outputs

    def _check_params(self, problem):
        k = self._check_k()
        self.k_ = k
        for name, what in (("repair", "checks and repairs masks with"),
                           ("background", "fills left-out features from background rows for")):
            if getattr(self, name, None) is not None and problem.black_box is None:
                raise ValueError(
                    f"{type(self).__name__}({name}=...) {what} the model's own answers, so "
                    "fit needs the model itself (fit(X, black_box=model)); it got only the "
                    f"model's outputs. Set {name}=None to fit on outputs."
                )
        if k is not None and k > problem.n_groups:
            what = "n_groups" if problem.masker.groups_ is not None else "n_features"
            # As SelectKBest does: a k beyond the data keeps everything, with a warning,
            # so that the default k works on narrow tables.
            warnings.warn(
                f"k={k} is greater than {what}={problem.n_groups}. All the features will be "
                "selected.",
                UserWarning,
            )
            self.k_ = problem.n_groups

    def _check_k(self):
        """``k`` as it is now, checked by the rules and with the messages of ``fit``.

        ``set_params(k=...)`` after fit changes only how scores become masks, so ``k`` is
        read (and checked again) wherever masks are made: 0, a float, a string, or None
        where the method needs a number, are refused there as ``fit`` refuses them. A
        bool is refused too, although it is an ``int`` to Python: ``k=True`` is a mistake,
        not one feature."""
        k = getattr(self, "k", None)
        name = type(self).__name__
        if isinstance(k, (bool, np.bool_)):
            raise InvalidParameterError(
                f"The 'k' parameter of {name} must be an int, not a bool; got {k!r}."
            )
        constraints = self._parameter_constraints.get("k")
        if constraints is not None:
            validate_parameter_constraints({"k": constraints}, {"k": k}, caller_name=name)
        return None if k is None else int(k)

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None, *, black_box=None):
        """Train the explainer on ``X`` and the black box (or its outputs on ``X``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), images or a table
            Rows to learn explanations from, in their own units; no labels are needed.
            Images are ``(n_samples, height, width)`` or ``(n_samples, channels, height,
            width)``: the explainer's other methods then take and return that shape. A
            pandas DataFrame with text, category, boolean, date or time columns, or empty
            cells, is a table: the explainer selects among its columns, asks the model
            with rows of that frame (the model must take it: a ``Pipeline`` with its
            encoder, a function of a DataFrame) and its other methods take such frames,
            matched by column name ("Tables as users have them" in the user guide).
        y : model or array-like of shape (n_samples,) or (n_samples, n_outputs), default=None
            The black box's outputs on ``X`` (class labels, class probabilities, 0/1 label
            indicators or values), or the model itself (see
            :func:`~sk_sointer.as_black_box` for what qualifies).
        black_box : model, default=None
            The model, given by keyword. Use this form with cross-validation tools, which
            would otherwise try to split the model like an array of outputs. Those tools
            refuse a ``Pipeline`` here before the explainer sees it (it has a length):
            pass ``as_black_box(pipeline)``.

        Returns
        -------
        self : object
            The fitted explainer.
        """
        refine = getattr(self, "refine", None)
        if isinstance(refine, ModelRefinement):
            refine.validate()
        # A fit that fails (bad data, a model that raises, an interrupt, a diverged net)
        # leaves the explainer as it was: its fitted state is put back, or taken away
        # when it had none, never left half-replaced.
        fitted = _fitted_state(self)
        previous = fitted.get("net_")
        start = time.perf_counter()
        try:
            try:
                self._fit(X, y, black_box)
            except (ValueError, RuntimeError) as exc:
                # A NaN in the weights surfaces wherever it is first checked (a
                # relaxation's argument constraints, a loss): name the cause rather than
                # the place. Only a net this fit built counts.
                net = getattr(self, "net_", None)
                if net is not previous and _diverged(net):
                    raise ValueError(
                        _DIVERGED.format(name=type(self).__name__, lr=self.lr)) from exc
                raise
            if _diverged(self.net_):
                raise ValueError(_DIVERGED.format(name=type(self).__name__, lr=self.lr))
        except BaseException:
            _restore_fitted_state(self, fitted)
            raise
        self.fit_time_ = time.perf_counter() - start
        return self

    def explain(self, X):
        """Real-valued importance scores behind the masks (higher means more relied on).

        With feature groups, every feature carries its group's score.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or images as given to ``fit``

        Returns
        -------
        scores : ndarray of the shape of X, float32
        """
        X = self._validate_transform_input(X, finite=False)
        return self.layout_.unflatten(self._explain_rows(X, self._scores_of, np.float32))

    def transform(self, X):
        """k-hot masks of the features the black box relied on, one row per sample.

        Deterministic: the top-k of :meth:`explain`'s scores, ties going to the lower index
        (``k`` counts groups when the explainer has feature groups).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or images as given to ``fit``

        Returns
        -------
        masks : ndarray of the shape of X
            0/1 values in the dtype of ``X`` (float32 or float64); for a table, float64,
            one column per column of the table.

        Notes
        -----
        With ``repair`` set, every row's mask is then checked against the model and the
        rows whose mask fails are searched further (:class:`~sk_sointer.RowRepair`): the
        masks are no longer a function of the scores alone. :meth:`repair_masks` gives the
        same masks with the search's report (how many rows failed, how many were repaired,
        how many queries that took); ``transform`` sets no attribute. ``repair`` is read,
        and checked as ``fit`` checks it, at every call.
        """
        X = self._validate_transform_input(X, finite=False)
        self._check_output_container()
        return self._masks_for(X)

    def _masks_for(self, X, outputs=None):
        """:meth:`transform` of validated rows ``X`` (``outputs``: what
        :meth:`_explain_rows` passes to the selector), repaired when ``repair`` is set."""
        repair = self._repair_settings()
        if repair is None:
            masks = self._explain_rows(X, self._masks_of, X.dtype, outputs)
        else:
            masks = self._repaired_masks(X, repair, outputs)[0].astype(X.dtype)
        return self.layout_.unflatten(masks)

    def repair_masks(self, X):
        """The masks of :meth:`transform` with ``repair``, and the repair's report.

        Every row's mask is checked against the model, and the rows whose mask fails are
        searched further (:class:`~sk_sointer.RowRepair`; with ``repair=None``, its
        defaults).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or images as given to ``fit``

        Returns
        -------
        report : RepairReport
            A :class:`~sklearn.utils.Bunch` of ``masks`` (as :meth:`transform` returns
            them with this ``repair``; an ndarray), ``n_rows``, ``n_failed`` (rows whose mask
            failed the check), ``n_repaired`` (of those, rows that hold after the search),
            ``n_queries`` (model rows sent, the check included), ``queries_per_row`` and
            ``holds`` (per row, after the search).
        """
        X = self._validate_transform_input(X, finite=False)
        repair = self._repair_settings() or RowRepair()
        masks, report = self._repaired_masks(X, repair, self._outputs_of(X, None))
        report.masks = self.layout_.unflatten(masks.astype(X.dtype))
        return report

    def _outputs_of(self, X, outputs):
        """What :meth:`_explain_rows` passes to the selector on the validated rows ``X``
        besides them, given the model's ``outputs`` on them or ``None``: nothing, but for
        a selector that reads the model's outputs (MEED's feedback)."""
        return None

    def _repair_settings(self):
        """``repair`` as it is now, as a validated :class:`~sk_sointer.RowRepair`, or
        ``None``.

        ``set_params(repair=...)`` after fit changes only how masks are made, so ``repair``
        is read (and checked again, by the rules and with the messages of ``fit``) where
        masks are made or checked: a string other than "model", or a ``RowRepair`` with a
        bool or a negative budget, is refused there."""
        repair = getattr(self, "repair", None)
        name = type(self).__name__
        if repair is None:
            return None
        constraints = self._parameter_constraints.get("repair")
        if constraints is not None:
            validate_parameter_constraints({"repair": constraints}, {"repair": repair},
                                           caller_name=name)
        if isinstance(repair, str):  # "model": the default settings
            return RowRepair()
        return repair.validate()

    def _masked_value(self, black_box=None):
        """How the model answers this explainer's masked rows (the masker's fill, or the
        fitted background rows; :func:`~sk_sointer._model_judge.masked_value`): the one
        value ``score``, ``check``, the repair, the refinement and
        :func:`~sk_sointer.metrics.evaluate` ask. ``black_box``: another model asked so
        (evaluate's ``model=``), this explainer's by default."""
        if black_box is None:
            if self.black_box_ is None:
                raise ValueError(
                    f"This {type(self).__name__} holds no black box (it was fitted on outputs, "
                    "or the model was left out when it was saved), so it cannot ask the model "
                    "about masked rows: set black_box_ = as_black_box(model), or repair=None."
                )
            black_box = self._model_of_rows()
        return masked_value(black_box, self.masker_, getattr(self, "background_", None))

    def _model_of_rows(self):
        """``black_box_`` as it takes this explainer's rows: a table's codes decoded into
        frames, whether it was set by fit or afterwards (``black_box_ = as_black_box(m)``)."""
        codec, black_box = self._table_codec, self.black_box_
        if codec is None or black_box is None or black_box.table is codec:
            return black_box
        return black_box.with_table(codec)

    def _repaired_masks(self, X, repair, outputs=None):
        """Feature-level masks of rows ``X``: the selector's, checked against the model and
        searched further where they fail, and the :class:`RepairReport` of the search."""
        scores = self._group_scores(X, outputs)
        group_masks = self._masks_from_scores(torch.from_numpy(scores.copy()))
        report = repair_masks(self._masked_value(), X, scores, group_masks, self.output_spec_,
                              self._check_k(), repair)
        n_rows = len(X)
        return self.masker_.expand_raw(group_masks), RepairReport(
            n_rows=n_rows, n_failed=report.n_failed, n_repaired=report.n_repaired,
            n_queries=report.n_queries, queries_per_row=report.n_queries / max(n_rows, 1),
            holds=report.holds,
        )

    def reasons(self, X, masks=None):
        """For each row, its kept columns ranked by what each does to the model's answer,
        with the row's own value of each: reasons for a decision.

        A kept column's ``effect`` is how much the model's answer moves when that column
        alone is left out of the row (at the fill, or averaged over the background rows,
        as :meth:`check` asks): for a classifier, the probability the model gives the
        row's answer minus that probability with the column left out (positive: the row's
        value pushed towards the answer, ``direction`` "for"; negative: "against"); for a
        regressor, the answer minus the answer with the column left out ("raises" or
        "lowers" it). Columns are ranked by the size of their effect, the largest first.
        The model is asked ``k + 1`` times a row. Without a model (an explainer fitted on
        outputs, or loaded without one), the kept columns are ranked by the selector's
        scores, ``effect`` is NaN and ``by`` says "selector".

        A mask's columns are those the model needs to keep its answer; a column left out
        may still matter to the model (it moved the answer less than these, or only with
        others), and an effect is the model's, not the world's: a reason says what the
        model read, not what caused the outcome.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
        masks : array-like of shape (n_samples, n_features), default=None
            The masks whose kept columns are ranked; by default this explainer's
            (:meth:`transform`).

        Returns
        -------
        reasons : DataFrame
            One row per kept column of each row of ``X``: ``row`` (the row's label in
            ``X``'s index, or its position), ``rank`` (1 the largest effect), ``column``
            (its name, as ``get_feature_names_out`` gives it; the names joined by "+" for a
            group of several), ``value`` (the row's value, as the table holds it; empty
            cells are NaN), ``effect``, ``direction`` and ``by`` ("model" or "selector").
        """
        from ._reasons import reasons_frame

        if masks is None:
            masks = self.transform(X)
        codes = self._validate_transform_input(X)
        masks = _check_masks(self.layout_.flatten(masks, "masks"), codes.shape)
        group_masks = self.masker_.reduce_raw(masks) > 0
        scores = self._group_scores(codes)
        value = self._masked_value() if self.black_box_ is not None else None
        return reasons_frame(self, X, codes, group_masks, scores, value)

    def check(self, X, masks=None, *, tol=None):
        """Per row, whether the model keeps its answer on the row masked by its explanation.

        The model is asked about every row and every masked row (its answer on ``x`` and on
        ``m(x, mask)``, the left-out features at the baseline or, with ``background``, the
        outputs averaged over the background rows): two queries a row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or images as given to ``fit``
        masks : array-like of the shape of X, default=None
            Masks to check; by default this explainer's (:meth:`transform`).
        tol : float, default=None
            A regression output is kept when it moves by at most ``tol`` times its spread
            on the training rows; by default ``repair``'s ``tol``, or 0.1.

        Returns
        -------
        check : Bunch
            ``holds`` (bool, one per row): every output judged kept its answer (for
            SOInter, the target output); ``proba_kept``: the probability the masked row
            gives the row's class (the lowest over the model's discrete outputs; NaN for a
            regressor); ``change``: how far a value moved, in units of its spread (the
            largest over the real outputs; NaN for a classifier); ``n_queries``: rows sent
            to the model; ``outputs`` and ``masked_outputs``: the model's outputs on the
            rows and on the masked rows, in the columns of ``output_spec_`` (for
            :func:`sk_sointer.metrics.output_agreement` or a metric of your own).
        """
        if masks is None:
            masks = self.transform(X)
        X = self._validate_transform_input(X)
        masks = _check_masks(self.layout_.flatten(masks, "masks"), X.shape)
        if tol is None:
            repair = self._repair_settings()
            tol = 0.1 if repair is None else repair.tol
        if isinstance(tol, (bool, np.bool_)) or not (isinstance(tol, Real) and tol >= 0):
            raise InvalidParameterError(f"tol should be a number >= 0, not a bool; got {tol!r}."
                                        if isinstance(tol, (bool, np.bool_)) else
                                        f"tol should be a number >= 0; got {tol!r}.")
        value = self._masked_value()
        outputs, masked_outputs = value.full(X), value.masked(X, masks)
        result = row_check(outputs, masked_outputs, self.output_spec_, tol=tol)
        result.n_queries = value.n_queries
        result.outputs, result.masked_outputs = outputs, masked_outputs
        return result

    def predict_masked(self, X, masks):
        """The method's own judge of masks (approximator or predictor) on ``m(x, mask)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or images as given to ``fit``
        masks : array-like of the shape of X
            0/1 masks over the features (any value > 0 counts as kept), e.g. from
            :meth:`transform`.

        Returns
        -------
        outputs : ndarray of shape (n_samples, n_columns), float32
            Probabilities, or values in the target's units, like the black box's outputs.
        """
        X = self._validate_transform_input(X)
        masks = _check_masks(self.layout_.flatten(masks, "masks"), X.shape)
        X_scaled = self.masker_.standardize(X)
        masks = self.masker_.scaled_masks(masks)
        predict = lambda rows, kept: self.net_.predict_masked(  # noqa: E731
            torch.as_tensor(rows), torch.as_tensor(kept)
        ).float().cpu()
        return in_chunks(predict, X_scaled, masks).numpy()

    def score(self, X, y=None):
        """Fidelity of the explanations on ``X``: higher is better.

        With a model at hand (``fit`` received one), this is post-hoc fidelity: the model
        on ``m(x, mask)`` (left-out features at the baseline) against the model on ``x``,
        averaged over its outputs: for a categorical output (or a Bernoulli one, one label
        of a multi-label model), the share of the rows of each answer the model gives on
        ``X`` that keep it, averaged over those answers (as ``balanced_accuracy_score`` is
        to accuracy: on a table where the model denies 8 % of applicants, the denials weigh
        as much as the approvals, so that a search over ``k`` and ``tau`` sees them); for a
        real output the R². The plain share of rows that keep their answer is
        ``check(X).holds.mean()``. A classifier's answer is its own ``predict``, which may differ from the argmax
        of its ``predict_proba`` (``SVC(probability=True)``); models without one (torch
        modules, functions) answer with the argmax of their probabilities, or the side of
        0.5. The probabilities still drive training. Fitted on outputs only, the method's
        own judge on ``m(x, mask)`` is compared with the outputs ``y`` instead. An explainer
        of one output (SOInter's ``target``) is scored on that output alone.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like, default=None
            The black box's outputs on ``X``; needed only when the explainer holds no model.

        Returns
        -------
        score : float
        """
        masks = self.transform(X)
        rows = X  # with its column names, for predict_masked's own validation
        X = self._validate_transform_input(X)
        spec = self.output_spec_
        if self.black_box_ is not None:
            # The model's answer on x against its answer on m(x, s): at the fill, or its
            # outputs averaged over the background rows (the explainer's value).
            scores = self._masked_value().agreement(X, masks.reshape(X.shape), spec,
                                                    by_answer=True)
        elif y is None:
            raise ValueError(
                f"This {type(self).__name__} has no black box (it was left out when the "
                "explainer was saved), so score needs the black box's outputs on X as y, or "
                "black_box_ = as_black_box(model)." if self._requires_model else
                f"{type(self).__name__} was fitted on outputs only, so score needs the black "
                "box's outputs on X as y (or fit it with the model to score post-hoc fidelity)."
            )
        else:
            targets = spec.encode(y, X.shape[0])
            scores = output_agreement(targets, self.predict_masked(rows, masks), spec,
                                      multioutput="raw_values", by_answer=True)
        # An explainer of one output (SOInter's target) is judged on that output alone.
        return float(scores.mean() if spec.target is None else scores[spec.target])

    # -- helpers -------------------------------------------------------------------------

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        if not self._requires_model:
            return tags
        # sklearn's checks fit on outputs given as y, which an explainer that needs the
        # model refuses: every check that fits fails with that refusal; its other checks
        # pass. Declared in its tags, read by tests/test_common.py.
        why = (f"{type(self).__name__} {self._requires_model_because}, so it needs the model "
               "itself (fit(X, black_box=model)), and sklearn's checks give only outputs as y")
        return _with_expected_failures(tags, dict.fromkeys(_CHECKS_THAT_FIT, why))
