"""Insertion and deletion curves of an explainer's scores:
:class:`InsertionDeletionDisplay`."""

import numpy as np
from sklearn.metrics import auc

from ..metrics import insertion_deletion_curves
from ._base import _axes, _check_explainer


class InsertionDeletionDisplay:
    """Insertion and deletion curves of an explainer's scores, with their areas.

    See :func:`sk_sointer.metrics.insertion_deletion_curves` for what the curves measure. Build it with
    :meth:`from_explainer`, or :meth:`from_curves` from values in hand.

    Parameters
    ----------
    fraction : ndarray
        Share of the feature groups inserted or deleted, from 0 to 1.
    insertion, deletion : ndarray
        The model's agreement with its own answer at each ``fraction``.
    insertion_auc, deletion_auc : float
        Areas under the curves.
    name : str, default=None
        The explainer's name, for the legend.

    Attributes
    ----------
    insertion_line_, deletion_line_ : matplotlib Line2D
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure

    Examples
    --------
    >>> from sk_sointer.display import InsertionDeletionDisplay
    >>> display = InsertionDeletionDisplay.from_curves([0, 0.5, 1], [0.5, 1, 1], [1, 0.5, 0.5])
    >>> display.insertion_auc, display.deletion_auc
    (0.875, 0.625)
    >>> display.insertion_line_.get_ydata().tolist()
    [0.5, 1.0, 1.0]
    """

    def __init__(self, fraction, insertion, deletion, *, insertion_auc, deletion_auc,
                 name=None):
        self.fraction = fraction
        self.insertion = insertion
        self.deletion = deletion
        self.insertion_auc = insertion_auc
        self.deletion_auc = deletion_auc
        self.name = name

    @classmethod
    def from_curves(cls, fraction, insertion, deletion, *, name=None, ax=None):
        """Curves in hand (e.g. a :func:`sk_sointer.metrics.insertion_deletion_curves` result); their areas
        are computed by the trapezoid rule.

        Parameters
        ----------
        fraction : array-like of shape (n_points,)
            Share of the groups inserted or deleted, increasing from 0 to 1.
        insertion, deletion : array-like of shape (n_points,)
        name : str, default=None
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : InsertionDeletionDisplay
        """
        fraction, insertion, deletion = (np.asarray(v, dtype=float).ravel()
                                         for v in (fraction, insertion, deletion))
        if not fraction.shape == insertion.shape == deletion.shape or fraction.size < 2:
            raise ValueError(
                "fraction, insertion and deletion should be 1-D of one length (2 points at "
                f"least); got lengths {fraction.size}, {insertion.size} and {deletion.size}."
            )
        if not all(np.isfinite(v).all() for v in (fraction, insertion, deletion)):
            raise ValueError("fraction, insertion and deletion should be finite; got NaN or "
                             "infinite values.")
        if fraction.min() < 0 or fraction.max() > 1 or np.any(np.diff(fraction) <= 0):
            raise ValueError(
                "fraction should increase within [0, 1] (shares of the groups inserted or "
                f"deleted); got values from {fraction.min():g} to {fraction.max():g}"
                f"{'' if np.all(np.diff(fraction) > 0) else ', not increasing'}."
            )
        return cls(fraction, insertion, deletion, insertion_auc=float(auc(fraction, insertion)),
                   deletion_auc=float(auc(fraction, deletion)), name=name).plot(ax=ax)

    @classmethod
    def from_explainer(cls, explainer, X, *, model=None, n_steps=None, name=None, ax=None):
        """The curves of a fitted explainer's scores on ``X``.

        Parameters
        ----------
        explainer : fitted explainer
        X : array-like of shape (n_samples, n_features), or images as given to ``fit``
        model, n_steps :
            As in :func:`sk_sointer.metrics.insertion_deletion_curves`.
        name : str, default=None
            For the legend; default: the explainer's class name.
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : InsertionDeletionDisplay
        """
        curves = insertion_deletion_curves(_check_explainer(explainer), X, model=model,
                                           n_steps=n_steps)
        name = type(explainer).__name__ if name is None else name
        return cls(curves.fraction, curves.insertion, curves.deletion,
                   insertion_auc=curves.insertion_auc, deletion_auc=curves.deletion_auc,
                   name=name).plot(ax=ax)

    def plot(self, ax=None, *, name=None):
        """Draw both curves, their areas in the legend.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Where to draw; several explainers' displays can share one.
        name : str, default=None
            For the legend; default: ``self.name``.

        Returns
        -------
        display : InsertionDeletionDisplay
        """
        ax = _axes(ax, figsize=(4.5, 3.2))
        name = self.name if name is None else name
        prefix = "" if name is None else f"{name}: "
        (self.insertion_line_,) = ax.plot(
            self.fraction, self.insertion, marker=".",
            label=f"{prefix}insertion (AUC = {self.insertion_auc:.2f})")
        (self.deletion_line_,) = ax.plot(
            self.fraction, self.deletion, marker=".", linestyle="--",
            label=f"{prefix}deletion (AUC = {self.deletion_auc:.2f})")
        ax.set_xlabel("fraction of features, top-ranked first")
        ax.set_ylabel("agreement with the model")
        ax.set_xlim(0, 1)
        ax.legend(fontsize="small")
        self.ax_, self.figure_ = ax, ax.figure
        return self
