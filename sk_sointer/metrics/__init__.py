"""Metrics for instance-wise feature selection.

- one report of an explanation (fidelity, curves, ROAD, EVAL-X, stability, sparsity,
  cost): :func:`evaluate`, each entry also a scorer through :func:`evaluation_scorer`;
- fidelity to the black box: :func:`posthoc_accuracy` (MEED's FS-M and FU-M),
  :func:`approximator_accuracy` (FS-A and FU-A);
- the level to beat: :func:`random_masks` of the explanations' sizes; a ceiling that asks
  the model row by row: :func:`greedy_masks`;
- agreement of outputs already computed: :func:`output_agreement`;
- stability and sanity: :func:`max_sensitivity`, :func:`mask_similarity`,
  :func:`randomized_model`;
- the EVAL-X evaluator, a judge trained on random masks: :class:`EvalXEvaluator`,
  :func:`encoding_gap`;
- ground truth on synthetic data: :func:`median_rank`, :func:`true_positive_rate`,
  :func:`false_discovery_rate`, :func:`control_flow_selection_rate`;
- scorers for model-selection tools: :data:`median_rank_scorer`, :data:`tpr_scorer`,
  :data:`fdr_scorer`, and :meth:`EvalXEvaluator.make_scorer`.

Like scikit-learn's metrics, every function takes the reference first and the explainer's
output second, except :func:`evaluate`, which takes the explanation first (an explainer
holds its own model); it accepts the model first too.
"""

from ._evalx import EvalXEvaluator, encoding_gap
from ._agreement import output_agreement
from ._evaluate import (ENTRIES, LOWER_IS_BETTER, evaluate, evaluation_scorer,
                        insertion_deletion_curves)
from ._stability import break_even_rows, relative_input_stability
from ._fidelity import approximator_accuracy, posthoc_accuracy
from ._greedy import greedy_masks
from ._ground_truth import (
    control_flow_selection_rate,
    false_discovery_rate,
    median_rank,
    true_positive_rate,
)
from .._topk import random_masks
from ._sanity import mask_similarity, max_sensitivity, randomized_model
from ._scorers import fdr_scorer, median_rank_scorer, tpr_scorer

__all__ = [
    "ENTRIES",
    "LOWER_IS_BETTER",
    "EvalXEvaluator",
    "approximator_accuracy",
    "break_even_rows",
    "control_flow_selection_rate",
    "encoding_gap",
    "evaluate",
    "evaluation_scorer",
    "false_discovery_rate",
    "fdr_scorer",
    "greedy_masks",
    "insertion_deletion_curves",
    "mask_similarity",
    "max_sensitivity",
    "median_rank",
    "median_rank_scorer",
    "output_agreement",
    "posthoc_accuracy",
    "random_masks",
    "randomized_model",
    "relative_input_stability",
    "tpr_scorer",
    "true_positive_rate",
]
