"""Displays of explanations, in scikit-learn's convention (needs matplotlib:
``pip install "sk_sointer[plot]"``).

As :class:`sklearn.metrics.RocCurveDisplay`, a Display holds values already computed and
draws them: ``from_explainer(explainer, X, ...)`` (or ``from_search``, ``from_explainers``)
computes them from fitted objects, ``from_masks(...)`` from masks or scores in hand, and
both construct the Display and call its :meth:`plot`, which draws into ``ax`` (a new figure
by default), returns the Display and keeps what it drew: ``ax_`` (or ``axes_`` for several
panels), ``figure_`` and the artists (``im_``, ``bars_``, ``lines_``, ...).

- which features each row relied on: :class:`MaskDisplay` (rows x features);
- how often each feature is selected, overall or per class: :class:`SelectionFrequencyDisplay`;
- masks over images, pixel or patch masks: :class:`ImageMaskDisplay`;
- the selected words of texts: :class:`TokenMaskDisplay`;
- fidelity as ``k`` grows, from a fitted search: :class:`FidelityVsKDisplay`;
- several explainers on the same rows: :class:`ComparisonDisplay`;
- one row's reasons for the model's answer (its kept columns, their values and effects):
  :class:`ReasonsDisplay`, from :meth:`~sk_sointer.L2XExplainer.reasons`;
- one panel per explained output of a multi-output model: :class:`TargetsDisplay`;
- the model's agreement as the top-ranked features are inserted or deleted:
  :class:`InsertionDeletionDisplay`, computed by
  :func:`sk_sointer.metrics.insertion_deletion_curves`.

Masks are what ``transform`` returns (any value > 0 counts as kept); :meth:`explain`'s
scores are accepted wherever the text says so.
"""

from ._comparison import ComparisonDisplay
from ._fidelity_vs_k import FidelityVsKDisplay
from ._image_mask import ImageMaskDisplay
from ._insertion_deletion import InsertionDeletionDisplay
from ._mask import MaskDisplay
from ._reasons import ReasonsDisplay
from ._selection_frequency import SelectionFrequencyDisplay
from ._targets import TargetsDisplay
from ._token_mask import TokenMaskDisplay

__all__ = [
    "ComparisonDisplay",
    "FidelityVsKDisplay",
    "ImageMaskDisplay",
    "InsertionDeletionDisplay",
    "MaskDisplay",
    "ReasonsDisplay",
    "SelectionFrequencyDisplay",
    "TargetsDisplay",
    "TokenMaskDisplay",
]
