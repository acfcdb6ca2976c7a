"""Pictures of explanations (needs matplotlib: ``pip install "sk_sointer[plot]"``).

The pictures are Displays, in scikit-learn's convention (:mod:`sk_sointer.display`,
re-exported here): ``SomeDisplay.from_explainer(explainer, X)`` or
``SomeDisplay.from_masks(masks)`` computes the values, stores them and draws;
``.plot(ax=...)`` draws them again. The functions here are shortcuts that build a Display
from masks in hand and return the Axes it drew on:

- which features each row relied on: :func:`plot_masks` (:class:`.MaskDisplay`);
- how often each feature is selected, overall or per class:
  :func:`plot_selection_frequency` (:class:`.SelectionFrequencyDisplay`);
- masks over images, pixel or patch masks: :func:`plot_image_masks`
  (:class:`.ImageMaskDisplay`);
- the selected words of texts: :func:`plot_tokens` (:class:`.TokenMaskDisplay`);
- fidelity as ``k`` grows, from a fitted search: :func:`plot_fidelity_vs_k`
  (:class:`.FidelityVsKDisplay`);
- several explainers on the same rows: :func:`plot_comparison` (:class:`.ComparisonDisplay`);
- one panel per explained output of a multi-output model: :func:`plot_targets`
  (:class:`.TargetsDisplay`);
- insertion and deletion curves of an explainer's scores: :class:`.InsertionDeletionDisplay`
  and :func:`sk_sointer.metrics.insertion_deletion_curves` (no shortcut).

Every function draws into ``ax`` when given (one Axes, or one per panel for the functions
that draw several) and returns what it drew on: an Axes, or an ndarray of Axes whose
``.flat[0].figure`` is the figure. Masks are what ``transform`` returns (any value > 0
counts as kept); :meth:`explain`'s scores are accepted wherever the text says so.
"""

from .display import (
    ComparisonDisplay,
    FidelityVsKDisplay,
    ImageMaskDisplay,
    InsertionDeletionDisplay,
    MaskDisplay,
    SelectionFrequencyDisplay,
    TargetsDisplay,
    TokenMaskDisplay,
)

__all__ = [
    "ComparisonDisplay",
    "FidelityVsKDisplay",
    "ImageMaskDisplay",
    "InsertionDeletionDisplay",
    "MaskDisplay",
    "SelectionFrequencyDisplay",
    "TargetsDisplay",
    "TokenMaskDisplay",
    "plot_comparison",
    "plot_fidelity_vs_k",
    "plot_image_masks",
    "plot_masks",
    "plot_selection_frequency",
    "plot_targets",
    "plot_tokens",
]


def plot_masks(masks, *, feature_names=None, explainer=None, row_labels=None, max_rows=50,
               ax=None, cmap="Greys"):
    """Heat map of masks (or scores): one row per sample, one column per feature.

    A shortcut for :meth:`.MaskDisplay.from_masks` (same parameters).

    Returns
    -------
    ax : matplotlib Axes
        Its first image is the heat map, with a colour bar.
    """
    return MaskDisplay.from_masks(masks, feature_names=feature_names, explainer=explainer,
                                  row_labels=row_labels, max_rows=max_rows, ax=ax,
                                  cmap=cmap).ax_


def plot_selection_frequency(masks, *, by=None, feature_names=None, explainer=None,
                             top=None, ax=None):
    """Bar chart of how often each feature is selected, overall or per group of rows.

    A shortcut for :meth:`.SelectionFrequencyDisplay.from_masks` (same parameters).

    Returns
    -------
    ax : matplotlib Axes
        One bar container per group (one in all without ``by``); bar heights are shares of
        rows, 0 to 1.
    """
    return SelectionFrequencyDisplay.from_masks(masks, by=by, feature_names=feature_names,
                                                explainer=explainer, top=top, ax=ax).ax_


def plot_image_masks(images, masks, *, titles=None, n_cols=5, color="tab:orange", alpha=0.6,
                     ax=None):
    """Masks painted over images, one panel per image.

    A shortcut for :meth:`.ImageMaskDisplay.from_masks` (same parameters).

    Returns
    -------
    axes : ndarray of matplotlib Axes
        One per image; each holds the image and, above it, the paint.
    """
    return ImageMaskDisplay.from_masks(images, masks, titles=titles, n_cols=n_cols,
                                       color=color, alpha=alpha, ax=ax).axes_


def plot_tokens(tokens, masks, *, sequencer=None, color="tab:orange", width=60, ax=None):
    """Texts with the selected words highlighted, one text under the other.

    A shortcut for :meth:`.TokenMaskDisplay.from_masks` (same parameters).

    Returns
    -------
    ax : matplotlib Axes
        One text artist per word; the selected ones have a coloured box (their
        ``get_bbox_patch()`` is not None).
    """
    return TokenMaskDisplay.from_masks(tokens, masks, sequencer=sequencer, color=color,
                                       width=width, ax=ax).ax_


def plot_fidelity_vs_k(search, *, param="k", ax=None):
    """Mean cross-validated score (fidelity by default) against ``k``, from a fitted search.

    A shortcut for :meth:`.FidelityVsKDisplay.from_search` (same parameters).

    Returns
    -------
    ax : matplotlib Axes
        One error-bar line per combination of the other parameters, labelled with them.
    """
    return FidelityVsKDisplay.from_search(search, param=param, ax=ax).ax_


def plot_comparison(masks_by_name, *, images=None, feature_names=None, explainer=None,
                    max_rows=20, ax=None):
    """Several explainers on the same rows, side by side.

    A shortcut for :meth:`.ComparisonDisplay.from_masks` (same parameters).

    Returns
    -------
    axes : ndarray of matplotlib Axes, 2-D
    """
    return ComparisonDisplay.from_masks(masks_by_name, images=images,
                                        feature_names=feature_names, explainer=explainer,
                                        max_rows=max_rows, ax=ax).axes_


def plot_targets(masks_by_target, *, feature_names=None, explainer=None, by=None, n_cols=3,
                 ax=None):
    """One selection-frequency panel per explained output of a multi-output model.

    A shortcut for :meth:`.TargetsDisplay.from_masks` (same parameters).

    Returns
    -------
    axes : ndarray of matplotlib Axes
        One per output, titled with the output's name.
    """
    return TargetsDisplay.from_masks(masks_by_target, by=by, feature_names=feature_names,
                                     explainer=explainer, n_cols=n_cols, ax=ax).axes_
