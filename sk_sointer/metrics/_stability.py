"""The stability and cost entries of :func:`~sk_sointer.metrics.evaluate`: agreement with
the masks of the explainer refitted with other seeds, and under small input perturbations
(OpenXAI's relative input stability); microseconds per row, and the rows after which
fitting once has paid for itself against a per-row explainer."""

import time
from numbers import Integral, Real

import numpy as np
from sklearn.base import clone

from ._sanity import mask_similarity


def _check_number(name, value, *, positive=False, integer=False):
    kind = "an integer" if integer else "a finite number"
    bound = "> 0" if positive else ">= 0"
    ok = isinstance(value, Integral if integer else Real) and not isinstance(value, bool)
    if not ok or not np.isfinite(value) or value < 0 or (positive and value == 0):
        raise ValueError(f"{name} should be {kind} {bound}; got {value!r}.")


def _stability(report, wanted, explainer, model, X, masks, rows, row_shape, refit_seeds,
               X_fit, noise, n_perturbations, rng):
    if "seed_agreement" in wanted and len(refit_seeds) and X_fit is not None:
        black_box = explainer.black_box_ if model is None else model
        agreements = [
            mask_similarity(masks, clone(explainer).set_params(random_state=seed)
                            .fit(X_fit, black_box).transform(X))
            for seed in refit_seeds
        ]
        report.seed_agreement = float(np.mean(agreements))
        report.seed_agreements = np.asarray(agreements)
    if not wanted & {"mask_change", "relative_input_stability"}:
        return
    if len(rows) < 2:  # the perturbations' scale is the features' spread over X
        for name in wanted & {"mask_change", "relative_input_stability"}:
            report.notes[name] = ("needs 2 rows of X at least: the perturbations are scaled "
                                  "by the features' spread over X")
        return
    flat_masks = np.reshape(masks, rows.shape) > 0
    with_ris = "relative_input_stability" in wanted  # the only one that needs the scores
    if with_ris:
        scores = np.reshape(explainer.explain(X), rows.shape).astype(np.float64)
    scale = noise * rows.std(axis=0)
    worst_change = np.zeros(len(rows))
    worst_ris = np.zeros(len(rows))
    for _ in range(n_perturbations):
        moved = rows + rng.standard_normal(rows.shape) * scale
        moved = moved.astype(rows.dtype, copy=False)
        shaped = moved if row_shape is None else moved.reshape(len(rows), *row_shape)
        if hasattr(X, "columns") and row_shape is None:  # a frame: its names, as fit saw
            shaped = type(X)(shaped, columns=X.columns, index=X.index)
        moved_masks = np.reshape(explainer.transform(shaped), rows.shape) > 0
        changed = (flat_masks & ~moved_masks).sum(axis=1) / np.maximum(flat_masks.sum(axis=1), 1)
        worst_change = np.maximum(worst_change, changed)
        if with_ris:
            moved_scores = np.reshape(explainer.explain(shaped), rows.shape).astype(np.float64)
            worst_ris = np.maximum(worst_ris, relative_input_stability(rows, moved, scores,
                                                                       moved_scores))
    if "mask_change" in wanted:
        report.mask_change = float(worst_change.mean())
    if with_ris:
        report.relative_input_stability = float(worst_ris.mean())


def relative_input_stability(X, X_moved, scores, moved_scores, *, eps_min=1e-6):
    """OpenXAI's relative input stability of each row (Agarwal et al. 2022, eq. 2), as
    Quantus computes it: the relative change of the explanation over the relative change
    of the input,

        ||(e(x) - e(x')) / e(x)|| / ||(x - x') / x||,

    with ``eps_min`` in place of a zero in any denominator. Lower is more stable.

    Parameters
    ----------
    X, X_moved : ndarray of shape (n_samples, n_features)
    scores, moved_scores : ndarray of shape (n_samples, n_features)
        The explanations of ``X`` and of ``X_moved``.
    eps_min : float, default=1e-6

    Returns
    -------
    ris : ndarray of shape (n_samples,)
    """
    def relative(before, after):
        return np.linalg.norm((before - after) / np.where(before == 0, eps_min, before), axis=1)

    inputs = relative(X, X_moved)
    return relative(scores, moved_scores) / np.where(inputs == 0, eps_min, inputs)


def _cost(report, wanted, explainer, X, peer_ms_per_row, fit_seconds):
    if wanted & {"us_per_row", "break_even_rows"}:
        explainer.transform(X[: min(len(X), 64)])  # warm-up
        times = []
        for _ in range(3):
            start = time.perf_counter()
            explainer.transform(X)
            times.append(time.perf_counter() - start)
        report.us_per_row = float(np.median(times) / len(X) * 1e6)
    fit_s = fit_seconds if fit_seconds is not None else getattr(explainer, "fit_time_", None)
    if fit_s is not None and "fit_s" in wanted:
        report.fit_s = float(fit_s)
    if "break_even_rows" in wanted and fit_s is not None and peer_ms_per_row is not None:
        report.break_even_rows = break_even_rows(fit_s, report.us_per_row, peer_ms_per_row)


def break_even_rows(fit_seconds, us_per_row, peer_ms_per_row):
    """The number of rows from which fitting an amortized explainer once and explaining
    every row in ``us_per_row`` microseconds costs less than a per-row explainer's
    ``peer_ms_per_row`` milliseconds a row: ``fit_seconds / (peer cost - own cost)``,
    infinite when the explainer is not cheaper a row.

    Parameters
    ----------
    fit_seconds : float
        The amortized explainer's fit time (finite, >= 0).
    us_per_row : float
        Its cost a row, in microseconds (finite, >= 0).
    peer_ms_per_row : float
        The per-row explainer's cost a row, in milliseconds (finite, > 0).

    Returns
    -------
    rows : float

    Examples
    --------
    >>> from sk_sointer.metrics import break_even_rows
    >>> round(break_even_rows(30.0, us_per_row=2.0, peer_ms_per_row=12.0))  # 30 s / ~12 ms
    2500
    """
    _check_number("peer_ms_per_row", peer_ms_per_row, positive=True)
    _check_number("fit_seconds", fit_seconds)
    _check_number("us_per_row", us_per_row)
    saved = peer_ms_per_row / 1e3 - us_per_row / 1e6
    return float(fit_seconds / saved) if saved > 0 else float("inf")
