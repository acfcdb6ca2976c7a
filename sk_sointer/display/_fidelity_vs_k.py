"""Fidelity as ``k`` grows, from a fitted search: :class:`FidelityVsKDisplay`."""

from numbers import Integral

import numpy as np

from ._base import _axes


def _search_results(search, param):
    """The ``cv_results_`` key of ``param`` (alone or at the end of a pipeline's name)."""
    results = getattr(search, "cv_results_", None)
    if results is None:
        raise ValueError("search should be a fitted GridSearchCV (or another search with "
                         "cv_results_).")
    keys = [key for key in results if key == f"param_{param}"
            or (key.startswith("param_") and key.endswith(f"__{param}"))]
    if len(keys) != 1:
        searched = sorted(key[len("param_"):] for key in results if key.startswith("param_"))
        raise ValueError(f"the search did not vary {param!r} (once); it searched {searched}.")
    return results, keys[0]


class FidelityVsKDisplay:
    """Mean cross-validated score (fidelity by default) against ``k``, one line per
    combination of the other searched parameters, the chosen setting starred.

    Build it with :meth:`from_search`.

    Parameters
    ----------
    values : list of ndarray
        The values of ``param`` along each line, ascending.
    mean_scores, std_scores : list of ndarray
        The mean and the spread over the folds of the test score at each value.
    labels : list of str or None
        Each line's other parameters (``"tau=0.1"``); None when only ``param`` varied.
    param : str, default="k"
        The parameter on the horizontal axis.
    best : tuple of (value, score), default=None
        The chosen setting (the search's ``best_index_``).
    score_name : str, default="fidelity"

    Attributes
    ----------
    lines_ : list of matplotlib ErrorbarContainer
        One per line.
    best_ : matplotlib Line2D or None
        The star on the chosen setting.
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure
    """

    def __init__(self, values, mean_scores, std_scores, labels, *, param="k", best=None,
                 score_name="fidelity"):
        self.values = values
        self.mean_scores = mean_scores
        self.std_scores = std_scores
        self.labels = labels
        self.param = param
        self.best = best
        self.score_name = score_name

    @classmethod
    def from_search(cls, search, *, param="k", ax=None):
        """The scores of a fitted search against one of its parameters.

        Parameters
        ----------
        search : fitted GridSearchCV or RandomizedSearchCV
            Over an explainer, or a pipeline ending in one (``explainer__k`` is found).
        param : str, default="k"
            The parameter on the horizontal axis.
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : FidelityVsKDisplay
        """
        results, key = _search_results(search, param)
        others = sorted(k for k in results if k.startswith("param_") and k != key)
        settings = [tuple(results[k][i] for k in others) for i in range(len(results[key]))]
        values, means, stds, labels = [], [], [], []
        for setting in dict.fromkeys(settings):
            rows = sorted((i for i, s in enumerate(settings) if s == setting),
                          key=lambda i: results[key][i])
            values.append(np.array([results[key][i] for i in rows]))
            means.append(np.asarray(results["mean_test_score"])[rows])
            stds.append(np.asarray(results["std_test_score"])[rows])
            labels.append(", ".join(f"{k[len('param_'):].split('__')[-1]}={v}"
                                    for k, v in zip(others, setting)) or None)
        best = getattr(search, "best_index_", None)
        if best is not None and best != -1:
            best = (results[key][best], float(results["mean_test_score"][best]))
        else:
            best = None
        scoring = getattr(search, "scoring", None)
        score_name = scoring if isinstance(scoring, str) else "fidelity"
        return cls(values, means, stds, labels, param=param, best=best,
                   score_name=score_name).plot(ax=ax)

    def plot(self, ax=None):
        """Draw the lines with their error bars and the star.

        Parameters
        ----------
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : FidelityVsKDisplay
        """
        ax = _axes(ax, figsize=(5, 3.2))
        self.lines_ = [
            ax.errorbar(x, mean, yerr=std, marker="o", capsize=3, label=label)
            for x, mean, std, label in zip(self.values, self.mean_scores, self.std_scores,
                                           self.labels)
        ]
        self.best_ = None
        if self.best is not None:
            (self.best_,) = ax.plot([self.best[0]], [self.best[1]], marker="*", markersize=14,
                                    color="gold", markeredgecolor="k", linestyle="none",
                                    label="chosen")
        ax.set_xlabel(self.param)
        ax.set_ylabel(f"mean test score ({self.score_name})")
        ticks = sorted({v for x in self.values for v in x.tolist()})
        if all(isinstance(v, Integral) for v in ticks):
            ax.set_xticks(ticks)
        ax.legend(fontsize="small")
        self.ax_, self.figure_ = ax, ax.figure
        return self
