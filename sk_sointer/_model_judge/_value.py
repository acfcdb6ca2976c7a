"""How the model answers a row of which only some features are known, and whether a mask
keeps the model's answer on a given row.

What "leaving a feature out" means for the model is a choice, and every place that asks
the model about masked rows makes it through one object, :class:`MaskedValue`, made by
:func:`masked_value` alone (an explainer's ``_masked_value`` for ``score``, ``check``,
the repair, the refinement and :func:`~sk_sointer.metrics.evaluate`):

- **fill** (``background=None``): the left-out features take the masker's baseline (the
  training mean by default). One query a row; cheap and exact, but a mask can be judged
  faithful because the filled row is one the model never sees in practice;
- **background rows**: the left-out features take the values of each of ``B`` rows drawn
  from the training data (shap's "background" data), and the model's outputs on those
  ``B`` rows are averaged (probabilities for a classifier, values for a regressor): the
  answer of the model *in distribution*, at ``B`` queries a row.

:func:`row_check` reads, row by row, whether the answer on the masked row is the answer
on the full row: for a class, whether it is the same class and with what probability;
for a value, how far it moved in units of the output's spread.
"""

import copy

import numpy as np
from sklearn.utils import Bunch, check_random_state
from sklearn.utils._param_validation import InvalidParameterError

from .._outputs import output_agreement
from .._utils import in_chunks
from ..black_box import model_agreement, model_answers

# Rows sent to the model at once when a masked row becomes one row per background row.
_ROWS_PER_QUERY = 1 << 15


class MaskedValue:
    """The model's outputs on rows with only some features kept.

    Parameters
    ----------
    predict : callable
        The model's outputs on raw rows (a :class:`BlackBox`'s ``predict``: probabilities
        of a classifier, values of a regressor).
    masker : Masker
        The fitted masker: its baseline is the fill, its groups expand group masks.
    background : ndarray of shape (n_background, n_features) or None, default=None
        Rows in the data's units whose values fill the left-out features, one copy of
        the row per background row, the model's outputs averaged; ``None``: the fill.
    black_box : BlackBox, default=None
        The model whose ``predict`` this is: its answers (a classifier's own labels) are
        what :meth:`agreement` compares at the fill.

    Attributes
    ----------
    n_queries : int
        Rows sent to the model so far (a masked row costs ``n_background`` of them).
    """

    def __init__(self, predict, masker, background=None, black_box=None):
        self.predict = predict
        self.masker = masker
        self.background = None if background is None else np.asarray(background)
        self.black_box = black_box
        self.n_queries = 0

    def through(self, predict):
        """The same value (fill or background rows) asking the model through ``predict``
        (a :class:`~sk_sointer._model_judge.ModelJudge`'s, which pays every query from its
        budget), its count of queries from 0."""
        value = copy.copy(self)
        value.predict, value.n_queries = predict, 0
        return value

    @property
    def queries_per_row(self):
        """Model rows one masked row costs."""
        return 1 if self.background is None else len(self.background)

    def _predict(self, rows):
        self.n_queries += len(rows)
        return self.predict(rows)

    def full(self, X):
        """The model's outputs on the rows themselves, ``(n_rows, n_columns)``."""
        return in_chunks(self._predict, np.asarray(X))

    def masked(self, X, masks):
        """The model's outputs on rows ``X`` with the features where ``masks`` (feature-level,
        the shape of ``X``) is 0 left out, ``(n_rows, n_columns)``."""
        X = np.asarray(X)
        masks = np.asarray(masks) > 0
        if self.background is None:
            return in_chunks(self._predict, self.masker.mask_raw(X, masks))
        n_background = len(self.background)
        step = max(1, _ROWS_PER_QUERY // n_background)
        return in_chunks(lambda rows, kept: self._averaged(rows, kept, n_background),
                         X, masks, chunk=step)

    def _averaged(self, rows, kept, n_background):
        filled = np.where(kept[:, None, :], rows[:, None, :],
                          self.background[None].astype(rows.dtype, copy=False))
        outputs = self._predict(filled.reshape(len(rows) * n_background, -1))
        return outputs.reshape(len(rows), n_background, -1).mean(axis=1)

    def masked_groups(self, X, group_masks):
        """:meth:`masked` for masks over the masker's feature groups."""
        return self.masked(X, self.masker.expand_raw(np.asarray(group_masks)))

    def answers(self, X, known=None):
        """What :meth:`agreement` compares the masked rows with, asked once for rows ``X``:
        the model's answers (:func:`~sk_sointer.black_box.model_answers`, ``known`` when
        given) at the fill, its averaged outputs over the background rows."""
        if self.background is None:
            return model_answers(self.black_box, X) if known is None else known
        return self.full(X)

    def agreement(self, X, masks, spec=None, *, by_answer=False, answers=None):
        """Per output, how often the model keeps its answer on rows ``X`` masked by
        ``masks`` (feature-level), an array: at the fill, the model's own answers compared
        (:func:`~sk_sointer.black_box.model_agreement`: a classifier's ``predict``); over
        background rows, its averaged outputs (:func:`~sk_sointer._outputs.
        output_agreement` by ``spec``, the black box's by default). ``by_answer``: each
        answer's rows weigh alike; ``answers``: :meth:`answers` of ``X``, when known."""
        if self.background is None:
            return model_agreement(self.black_box, X, self.masker.mask_raw(X, masks),
                                   multioutput="raw_values", answers=answers,
                                   by_answer=by_answer)
        full = self.full(X) if answers is None else answers
        return output_agreement(full, self.masked(X, masks),
                                self.black_box.spec if spec is None else spec,
                                multioutput="raw_values", by_answer=by_answer)


def masked_value(black_box, masker, background=None, *, predict=None):
    """How ``black_box`` answers rows with features left out by the fitted ``masker``: at
    its fill, or over the ``background`` rows (see :class:`MaskedValue`). The one place a
    :class:`MaskedValue` is made; ``predict`` asks the model instead of
    ``black_box.predict`` (a bare function of raw rows, ``black_box`` then ``None``)."""
    return MaskedValue(black_box.predict if predict is None else predict, masker, background,
                       black_box)


def draw_background(background, X, random_state, *, allow_nan=False):
    """The background rows an explainer keeps: ``None``; ``n`` rows of ``X`` drawn without
    replacement (all of them when ``X`` has fewer); or the rows given, in ``X``'s column
    order (see :meth:`~sk_sointer.base.BaseExplainer._background_rows`), validated against
    ``X``'s width, at least one, and finite (NaN allowed with ``allow_nan``: a table's empty
    cell). A bool is refused: ``background=True`` is a mistake, not one row."""
    if background is None:
        return None
    if isinstance(background, (bool, np.bool_)):
        raise InvalidParameterError(
            "background should be None, a number of training rows (an int >= 1) or rows of "
            f"numbers, not a bool; got {background!r}."
        )
    if isinstance(background, (int, np.integer)):
        if background < 1:
            raise InvalidParameterError(
                f"background should be a number of training rows >= 1; got {background!r}.")
        rng = check_random_state(random_state)
        n_rows = min(int(background), len(X))
        return np.array(X[np.sort(rng.choice(len(X), n_rows, replace=False))])
    try:
        rows = np.asarray(background, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            "background should be None, a number of training rows, or rows of numbers; got "
            f"{type(background).__name__} holding values that are not numbers."
        ) from None
    if rows.ndim == 1 and rows.size == X.shape[1]:
        rows = rows[None]
    if rows.ndim != 2 or rows.shape[1] != X.shape[1] or len(rows) == 0:
        raise ValueError(
            f"background should be a number of training rows, or rows of {X.shape[1]} "
            f"features; got an array of shape {rows.shape}."
        )
    if not (np.isfinite(rows) | (allow_nan & np.isnan(rows))).all():
        raise ValueError("background contains NaN or infinity."
                         if not allow_nan else "background contains infinity.")
    return rows.astype(X.dtype)


def row_check(full, masked, spec, *, tol=0.1):
    """Per row, whether the model keeps its answer on the masked row.

    A class is kept when the masked row gets the full row's class (the argmax of a
    categorical output, the side of 0.5 of a Bernoulli one); a value when it moved by at
    most ``tol`` times the output's spread (``spec.scale``, learnt at fit). A row holds
    when every output it is judged on (the target alone, when the spec selects one) is
    kept.

    Parameters
    ----------
    full, masked : ndarray of shape (n_rows, n_columns)
        The model's outputs on the full and on the masked rows.
    spec : OutputSpec
    tol : float, default=0.1

    Returns
    -------
    check : Bunch
        ``holds`` (bool, ``(n_rows,)``); ``proba_kept``: the probability the masked row
        gives the full row's class, the lowest over the discrete outputs (NaN without
        one); ``change``: the largest move of a value in units of its spread (NaN without
        a real output).
    """
    full = np.asarray(full, dtype=np.float64)
    masked = np.asarray(masked, dtype=np.float64)
    n_rows = len(full)
    holds = np.ones(n_rows, dtype=bool)
    proba_kept = np.full(n_rows, np.inf)
    change = np.full(n_rows, -np.inf)
    outputs = range(spec.n_outputs) if spec.target is None else [spec.target]
    for i in outputs:
        kind, (start, stop) = spec.kinds[i], spec.blocks[i]
        if kind == "real":
            scale = 1.0 if spec.scale is None else float(spec.scale[start])
            moved = np.abs(masked[:, start] - full[:, start]) / scale
            holds &= moved <= tol
            change = np.maximum(change, moved)
            continue
        if kind == "categorical":
            answer = full[:, start:stop].argmax(axis=1)
            kept_proba = masked[np.arange(n_rows), start + answer]
            kept = masked[:, start:stop].argmax(axis=1) == answer
        else:
            answer = full[:, start] > 0.5
            kept_proba = np.where(answer, masked[:, start], 1.0 - masked[:, start])
            kept = (masked[:, start] > 0.5) == answer
        holds &= kept
        proba_kept = np.minimum(proba_kept, kept_proba)
    return Bunch(holds=holds, proba_kept=np.where(np.isinf(proba_kept), np.nan, proba_kept),
                 change=np.where(np.isinf(change), np.nan, change))
