"""What the Displays share: new figures and their Axes, masks as a table, the feature
names, whole-number options and the explainer's masks or scores."""

import numpy as np


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise ImportError(
            'sk_sointer.plotting needs matplotlib: pip install "sk_sointer[plot]".'
        ) from error
    return plt


def _axes(ax, **subplots):
    """``ax``, or a new figure's Axes."""
    if ax is not None:
        return ax
    return _pyplot().subplots(**subplots)[1]


def _panels(ax, n_panels, *, n_cols, panel_size, sharey=False):
    """``ax`` as a flat array of ``n_panels`` Axes, or a new figure's grid of panels."""
    if ax is not None:
        axes = np.asarray(ax, dtype=object).ravel()
        if axes.size < n_panels:
            raise ValueError(f"ax should hold {n_panels} Axes, one per panel; got {axes.size}.")
        return axes[:n_panels]
    plt = _pyplot()
    n_cols = max(1, min(n_cols, n_panels))
    n_rows = -(-n_panels // n_cols)
    width, height = panel_size
    _, axes = plt.subplots(n_rows, n_cols, figsize=(width * n_cols, height * n_rows),
                           squeeze=False, sharey=sharey)
    for extra in axes.ravel()[n_panels:]:
        extra.set_visible(False)
    return axes.ravel()[:n_panels]


def _not_an_estimator(values, name, instead="its masks (explainer.transform(X))"):
    """A TypeError naming the mistake when an estimator is given where arrays go."""
    if hasattr(values, "fit") or hasattr(values, "get_params"):
        raise TypeError(
            f"{name} should be an array; got {type(values).__name__}, an estimator. Pass "
            f"{instead}, or build the Display with from_explainer(explainer, X)."
        )


def _table(masks, name="masks"):
    """A 2-D float array of masks or scores, and the column names of a DataFrame."""
    _not_an_estimator(masks, name)
    columns = getattr(masks, "columns", None)
    values = np.asarray(masks, dtype=float)
    if values.ndim == 1:
        values = values[None, :]
    if values.ndim != 2:
        raise ValueError(
            f"{name} should be 2-D, one row per sample and one column per feature; got shape "
            f"{values.shape}. Plot images with ImageMaskDisplay (plot_image_masks)."
        )
    if 0 in values.shape:
        raise ValueError(f"{name} should hold one row and one feature at least; got shape "
                         f"{values.shape}.")
    if not np.isfinite(values).all():
        raise ValueError(f"{name} should be finite; got NaN or infinite values.")
    return values, None if columns is None else [str(c) for c in columns]


def _positive_int(name, value):
    """``value`` when it is a whole number >= 1 (not a bool), else a one-line ValueError."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < 1:
        raise ValueError(f"{name} should be a whole number >= 1; got {value!r}.")
    return int(value)


def _feature_names(n_features, feature_names=None, explainer=None, columns=None):
    """Names given, else a DataFrame's columns, else the explainer's ``feature_names_in_``,
    else x0, x1, ..."""
    for names in (feature_names, columns, getattr(explainer, "feature_names_in_", None)):
        if names is not None:
            names = [str(name) for name in names]
            if len(names) != n_features:
                raise ValueError(
                    f"feature_names should have one name per column of masks ({n_features}); "
                    f"got {len(names)}."
                )
            return names
    return [f"x{j}" for j in range(n_features)]


def _explained(explainer, X, method):
    """``explainer.transform(X)`` (masks) or ``explainer.explain(X)`` (scores)."""
    if method not in ("transform", "explain"):
        raise ValueError(f"method should be 'transform' or 'explain'; got {method!r}.")
    return getattr(explainer, method)(X)
