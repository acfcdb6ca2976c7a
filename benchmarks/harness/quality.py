"""How masks are judged: ground truth, post-hoc accuracy, EVAL-X, ``metrics.evaluate``."""

import numpy as np

from sk_sointer import metrics

from .data import EXPLAIN_SEED
from .study import Metric, percent

# evaluate's entries of any mask set, of ranked features (their scores) and of our explainers.
MASK_ENTRIES = ("fidelity_kept", "fidelity_removed", "road_kept", "road_removed",
                "features_per_row")
CURVE_ENTRIES = ("insertion_auc", "deletion_auc")
OUR_ENTRIES = (*MASK_ENTRIES, *CURVE_ENTRIES, "mask_change")
# Rows from which fitting ours once costs less than a per-row peer (a derived metric).
BREAK_EVEN = "break_even_rows"
EVALUATION_METRICS = {
    **{name: percent(label, "") for name, label in [
        ("fidelity_kept", "Fidelity\nkept"), ("fidelity_removed", "Fidelity\nremoved"),
        ("road_kept", "ROAD\nkept"), ("road_removed", "ROAD\nremoved"),
        ("deletion_auc", "Deletion\nAUC"), ("insertion_auc", "Insertion\nAUC"),
        ("seed_agreement", "Seed\nagreement"), ("mask_change", "Mask\nchange")]},
    "features_per_row": Metric("Features\na row", fmt=".1f"),
    "features_per_row_std": Metric("Features a\nrow, std", fmt=".1f"),
    BREAK_EVEN: Metric("Break-even\nrows", fmt=",.0f"),
}


def mask_quality(spec, data, masks, evaluator):
    """Ground-truth, post-hoc and EVAL-X metrics of one method's masks; post-hoc accuracy
    fills left-out features with 0, as the papers do on their N(0, 1) data."""
    relevant = data.relevant_explain
    out = {
        "median_rank": metrics.median_rank(relevant, masks),
        "median_rank_optimum": float(np.mean((relevant.sum(axis=1) + 1) / 2)),
        "tpr": metrics.true_positive_rate(relevant, masks),
        "fdr": metrics.false_discovery_rate(relevant, masks),
        "mean_selected": float(np.mean((masks > 0).sum(axis=1))),
        "posthoc_acc": float(metrics.posthoc_accuracy(data.model, data.X_explain, masks,
                                                      baseline="zero")),
    }
    if spec.control_flow:
        out["cfsr"] = metrics.control_flow_selection_rate(masks)
    if evaluator is not None:
        scores = evaluator.score_masks(data.X_explain, masks, y=data.y_explain)
        out.update(eacc=scores.get("eACC"), eauroc=scores.get("eAUROC"), enll=scores.get("eNLL"))
        proba = binary_proba(data)
        if proba is not None:
            # The accuracy in expectation over the labels, free of their sampling noise.
            predicted = evaluator.predict_masked(data.X_explain, masks)[:, 1] > 0.5
            out["eacc_expected"] = float(np.mean(np.where(predicted, proba, 1 - proba)))
    return out


def binary_proba(data):
    """The generator's P(y = 1 | x) of the explained rows if the labels are binary."""
    proba = data.proba_explain
    return None if proba is None or np.ndim(proba) != 1 else np.asarray(proba)


def evaluation(data, profile, explanation, entries, *, baseline=None, scores=None):
    """The ``entries`` of ``metrics.evaluate`` on the explained rows, of an explainer (its own
    masks, baseline and black box) or of masks (at ``baseline``, the curves along ``scores``)."""
    own = hasattr(explanation, "masker_")
    report = metrics.evaluate(
        explanation, None if own else data.model, data.X_explain,
        baseline=None if own else baseline, scores=scores, entries=entries,
        X_reference=data.X_train, n_steps=profile.eval_steps,
        n_perturbations=profile.n_perturbations, random_state=EXPLAIN_SEED)
    return {name: float(report[name]) for name in entries if name in report}


def seed_agreement(cache, key, seed, masks):
    """The mean mask cosine of ``masks`` to those of earlier seeds (none for the first), kept
    in ``cache`` under ``key`` with these."""
    earlier = cache.setdefault(("masks", *key), {})
    out = {"seed_agreement": float(np.mean([metrics.mask_similarity(masks, other)
                                            for other in earlier.values()]))} if earlier else {}
    earlier[seed] = masks
    return out
