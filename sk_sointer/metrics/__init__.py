"""Metrics for instance-wise feature selection.

- fidelity to the black box: :func:`posthoc_accuracy`;
- the EVAL-X evaluator, a judge trained on random masks: :class:`EvalXEvaluator`,
  :func:`encoding_gap`;
- ground truth on synthetic data: :func:`median_rank`, :func:`true_positive_rate`,
  :func:`false_discovery_rate`, :func:`control_flow_selection_rate`;
- scorers for model-selection tools: :data:`median_rank_scorer`, :data:`tpr_scorer`,
  :data:`fdr_scorer`, and :meth:`EvalXEvaluator.make_scorer`.

Like scikit-learn's metrics, every function takes the reference first and the explainer's
output second.
"""

from ._evalx import EvalXEvaluator, encoding_gap
from ._fidelity import posthoc_accuracy
from ._ground_truth import (
    control_flow_selection_rate,
    false_discovery_rate,
    median_rank,
    true_positive_rate,
)
from ._scorers import fdr_scorer, median_rank_scorer, tpr_scorer

__all__ = [
    "EvalXEvaluator",
    "control_flow_selection_rate",
    "encoding_gap",
    "false_discovery_rate",
    "fdr_scorer",
    "median_rank",
    "median_rank_scorer",
    "posthoc_accuracy",
    "tpr_scorer",
    "true_positive_rate",
]
