"""The model in the loop: the black box itself as the judge of masks.

Between the net base (:mod:`sk_sointer._training`) and the estimators (``base.py``): it
imports the first and lower modules, never the estimators, the methods or the metrics.

- the value function (:mod:`._value`): how the model answers a row with features left out
  (:class:`MaskedValue`, made by :func:`masked_value` alone: at the masker's fill, or over
  background rows), and whether it keeps its answer (:func:`row_check`);
- the reward and the greedy search (:mod:`._reward`: :func:`keep_reward`,
  :func:`greedy_subsets`);
- the judge of a refinement's masks within a budget (:mod:`._judge`: :class:`ModelJudge`),
  its configuration (:mod:`._refinement`: :class:`ModelRefinement`), the nets that train
  the selector against it (:mod:`._nets`) and :func:`refine`, which drives it all and
  returns a record (:mod:`._refine`);
- the per-row check and repair of masks (:mod:`._repair`: :class:`RowRepair`,
  :func:`repair_masks`).
"""

from ._judge import ModelJudge
from ._nets import ImitationNet, KeepBestByModel, ModelJudgedNet
from ._refine import refine
from ._refinement import ModelRefinement, still_rising
from ._repair import RepairReport, RowRepair, repair_masks
from ._reward import greedy_subsets, keep_reward
from ._value import MaskedValue, draw_background, masked_value, row_check

__all__ = [
    "ImitationNet", "KeepBestByModel", "MaskedValue", "ModelJudge", "ModelJudgedNet",
    "ModelRefinement", "RepairReport", "RowRepair", "draw_background", "greedy_subsets",
    "keep_reward", "masked_value", "refine", "repair_masks", "row_check", "still_rising",
]
