"""One panel per explained output of a multi-output model: :class:`TargetsDisplay`."""

from collections.abc import Mapping

from ._base import _explainers, _feature_names, _is_masks, _panels, _positive_int, _table
from ._selection_frequency import SelectionFrequencyDisplay, _frequencies


class TargetsDisplay:
    """One selection-frequency panel per explained output of a multi-output model.

    :class:`~sk_sointer.SOInterExplainer` explains one output (``target``) at a time; fit
    one per output and compare which features each output relies on.

    Parameters
    ----------
    displays : dict of str to SelectionFrequencyDisplay
        Each output's selection frequencies, keyed by the panel's title.

    Attributes
    ----------
    axes_ : ndarray of matplotlib Axes
        One per output, titled with the output's name.
    figure_ : matplotlib Figure

    Examples
    --------
    >>> import numpy as np
    >>> from sk_sointer.display import TargetsDisplay
    >>> masks = np.array([[1, 0], [1, 1]])
    >>> display = TargetsDisplay.from_masks({"y1": masks, "y2": 1 - masks})
    >>> display.displays["y2"].frequencies.tolist()
    [[0.0, 0.5]]
    """

    def __init__(self, displays):
        self.displays = displays

    @classmethod
    def from_masks(cls, masks_by_target, *, by=None, feature_names=None, explainer=None,
                   n_cols=3, ax=None):
        """Masks in hand of one explainer per output.

        Parameters
        ----------
        masks_by_target : dict of str to array-like, or a sequence of array-likes
            Masks of each output's explainer on the same rows (a sequence is titled by
            index).
        by : array-like of shape (n_samples,) or dict, default=None
            Labels per row for :class:`SelectionFrequencyDisplay`'s ``by``: one array for
            every panel, or a dict with one per target (e.g. each output's predicted value).
        feature_names, explainer :
            As in :meth:`MaskDisplay.from_masks`.
        n_cols : int, default=3
        ax : sequence of matplotlib Axes, default=None
            One per output.

        Returns
        -------
        display : TargetsDisplay
        """
        if hasattr(masks_by_target, "shape") or isinstance(masks_by_target, (str, bytes)) \
                or not hasattr(masks_by_target, "__iter__"):
            raise TypeError("masks_by_target should be a dict (or a sequence) of masks, one per "
                            f"output, e.g. {{'y1': masks}}; got {type(masks_by_target).__name__}.")
        if not isinstance(masks_by_target, Mapping):
            masks_by_target = {f"output {t}": masks for t, masks in enumerate(masks_by_target)}
        if not masks_by_target:
            raise ValueError("masks_by_target should hold at least one output's masks.")
        displays = {}
        for target, masks in masks_by_target.items():
            values, columns = _table(masks)
            names = _feature_names(values.shape[1], feature_names, explainer, columns)
            labels = by.get(target) if isinstance(by, dict) else by
            frequencies, groups, sizes = _frequencies(values, labels)
            displays[str(target)] = SelectionFrequencyDisplay(
                frequencies, feature_names=names, group_labels=None if labels is None else groups,
                group_sizes=None if labels is None else sizes, scores=not _is_masks(values))
        return cls(displays).plot(ax=ax, n_cols=n_cols)

    @classmethod
    def from_explainers(cls, explainers, X, *, by=None, feature_names=None, n_cols=3,
                        ax=None):
        """Fitted explainers, one per output, on the same rows ``X``.

        Parameters
        ----------
        explainers : dict of str to fitted explainer, or a sequence of them
        X : array-like of shape (n_samples, n_features)
        by, feature_names, n_cols, ax :
            As in :meth:`from_masks`.

        Returns
        -------
        display : TargetsDisplay
        """
        explainers = _explainers(explainers, by_index="output {}")
        masks = {target: explainer.transform(X) for target, explainer in explainers.items()}
        first = next(iter(explainers.values()))
        return cls.from_masks(masks, by=by, feature_names=feature_names, explainer=first,
                              n_cols=n_cols, ax=ax)

    def plot(self, ax=None, *, n_cols=3):
        """Draw one bar chart per output.

        Parameters
        ----------
        ax : sequence of matplotlib Axes, default=None
        n_cols : int, default=3

        Returns
        -------
        display : TargetsDisplay
        """
        n_cols = _positive_int("n_cols", n_cols)
        targets = list(self.displays)
        axes = _panels(ax, len(targets), n_cols=n_cols, panel_size=(4.0, 3.0), sharey=True)
        for panel, target in zip(axes, targets):
            self.displays[target].plot(ax=panel)
            panel.set_title(str(target))
            if panel.get_subplotspec() is not None and not panel.get_subplotspec().is_first_col():
                panel.set_ylabel("")  # the panels of a row share the axis
        self.axes_, self.figure_ = axes, axes[0].figure
        return self
