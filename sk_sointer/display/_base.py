"""What the Displays share: new figures and their Axes, masks as a table, the feature
names, labels per row, the options every Display checks alike (whole numbers, colours,
opacity) and the explainer's masks or scores."""

from collections.abc import Mapping

import numpy as np


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise ImportError(
            'sk_sointer.plotting needs matplotlib: pip install "sk_sointer[plot]".'
        ) from error
    return plt


def _check_axes(ax, name="ax"):
    """``ax`` when it is a matplotlib Axes, else a one-line TypeError."""
    _pyplot()
    from matplotlib.axes import Axes

    if not isinstance(ax, Axes):
        raise TypeError(f"{name} should be a matplotlib Axes (e.g. plt.subplots()[1]) or None; "
                        f"got {type(ax).__name__}.")
    return ax


def _axes(ax, **subplots):
    """``ax``, or a new figure's Axes."""
    if ax is not None:
        return _check_axes(ax)
    return _pyplot().subplots(**subplots)[1]


def _panels(ax, n_panels, *, n_cols, panel_size, sharey=False, layout=None):
    """``ax`` as a flat array of ``n_panels`` Axes, or a new figure's grid of panels."""
    if ax is not None:
        axes = np.empty(1, dtype=object)
        axes[0] = ax  # a lone Axes: np.asarray would try to iterate it
        if isinstance(ax, (list, tuple, np.ndarray)):
            axes = np.asarray(ax, dtype=object).ravel()
        for panel in axes:
            _check_axes(panel, "ax (each panel)" if axes.size > 1 else "ax")
        if axes.size < n_panels:
            raise ValueError(f"ax should hold {n_panels} Axes, one per panel; got {axes.size}.")
        return axes[:n_panels]
    plt = _pyplot()
    n_cols = max(1, min(n_cols, n_panels))
    n_rows = -(-n_panels // n_cols)
    width, height = panel_size
    _, axes = plt.subplots(n_rows, n_cols, figsize=(width * n_cols, height * n_rows),
                           squeeze=False, sharey=sharey, layout=layout)
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
    try:
        values = np.asarray(masks, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} should be an array of numbers, one row per sample of one "
                         f"length; got {type(masks).__name__} that is not.") from None
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


def _labels(labels, n_rows, name="row_labels", what="row of masks"):
    """``labels`` as a list of str, one per row, else a one-line error naming ``name``."""
    if labels is None:
        return None
    if isinstance(labels, (str, bytes)) or not hasattr(labels, "__len__"):
        raise TypeError(f"{name} should be a sequence of labels, one per {what}; got "
                        f"{type(labels).__name__}.")
    if len(labels) != n_rows:
        raise ValueError(f"{name} should hold one label per {what} ({n_rows}); got "
                         f"{len(labels)}.")
    return [str(label) for label in labels]


def _is_masks(values):
    """Whether ``values`` are 0/1 masks rather than scores."""
    return bool(np.isin(values, (0.0, 1.0)).all())


def _unit_float(name, value):
    """``value`` when it is a real number in [0, 1] (not a bool), else a one-line error."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise TypeError(f"{name} should be a number in [0, 1]; got {type(value).__name__}.")
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} should be a number in [0, 1]; got {value!r}.")
    return float(value)


def _color(name, value):
    """``value`` when matplotlib reads it as a colour, else a one-line ValueError."""
    _pyplot()
    from matplotlib.colors import is_color_like

    if not is_color_like(value):
        raise ValueError(f"{name} should be a matplotlib colour, such as 'tab:orange' or "
                         f"'#ff8800'; got {value!r}.")
    return value


def _cmap(value):
    """``value`` when it is a Colormap or the name of one, else a one-line error."""
    _pyplot()
    import matplotlib
    from matplotlib.colors import Colormap

    if isinstance(value, Colormap) or isinstance(value, str) and value in matplotlib.colormaps:
        return value
    raise ValueError(f"cmap should be a matplotlib Colormap or the name of one, such as "
                     f"'Greys' or 'viridis'; got {value!r}.")


def _flag(name, value):
    """``value`` when it is a bool, else a one-line TypeError."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} should be True or False; got {value!r}.")
    return bool(value)


def _positive_int(name, value):
    """``value`` when it is a whole number >= 1 (not a bool), else a one-line ValueError."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < 1:
        raise ValueError(f"{name} should be a whole number >= 1; got {value!r}.")
    return int(value)


def _names_out(explainer, n_features):
    """The explainer's ``get_feature_names_out()`` when it gives one name per column of its
    masks (a table's columns), else its ``feature_names_in_``, else None."""
    names_out = getattr(explainer, "get_feature_names_out", None)
    if callable(names_out):
        try:
            names = list(names_out())
        except Exception:  # not fitted, or a stand-in without names: the fallbacks decide
            names = None
        if names is not None and len(names) == n_features:
            return names
    return getattr(explainer, "feature_names_in_", None)


def _feature_names(n_features, feature_names=None, explainer=None, columns=None):
    """Names given, else a DataFrame's columns, else the explainer's
    ``get_feature_names_out()`` (a table's columns) or ``feature_names_in_``, else x0, x1,
    ..."""
    for names in (feature_names, columns, _names_out(explainer, n_features)):
        if names is not None:
            names = [str(name) for name in names]
            if len(names) != n_features:
                raise ValueError(
                    f"feature_names should have one name per column of masks ({n_features}); "
                    f"got {len(names)}."
                )
            return names
    return [f"x{j}" for j in range(n_features)]


def _position(name, value, n_rows, what="X"):
    """``value`` when it is a whole number in ``[0, n_rows)`` (a row's position), else a
    one-line error."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} should be a row's position in {what}, a whole number from 0 "
                        f"to {n_rows - 1}; got {type(value).__name__} {value!r}.")
    if not 0 <= value < n_rows:
        raise ValueError(f"{name} should be a row's position in {what}, a whole number from 0 "
                         f"to {n_rows - 1}; got {value!r}. To choose a row by its index "
                         f"label, pass X.loc[[label]] and {name}=0.")
    return int(value)


def _label_size(ax, n_labels, *, along="x", rotated=True, at_most=None):
    """A font size in points at which ``n_labels`` tick labels side by side along ``along``
    of ``ax`` do not overlap: each gets its share of the Axes' length, and a label's
    extent across (a rotated x label's, or a y label's) is about 1.4 times its size.
    Never above the tick labels' usual size (or ``at_most``), never below 4 points."""
    import matplotlib
    from matplotlib.font_manager import FontProperties

    usual = FontProperties(size=matplotlib.rcParams[f"{along}tick.labelsize"]).get_size_in_points()
    if at_most is not None:
        usual = min(usual, at_most)
    engine = ax.figure.get_layout_engine()
    if engine is not None:  # the Axes' size once laid out, not before
        engine.execute(ax.figure)
    box = ax.get_position()
    width, height = ax.figure.get_size_inches()
    length = (box.width * width if along == "x" else box.height * height) * 72.0
    share = length / max(n_labels, 1)
    return float(np.clip(share / (1.4 if rotated or along == "y" else 2.4), 4.0, usual))


def _check_explainer(explainer, name="explainer"):
    """``explainer`` when it has an explainer's ``transform`` and ``explain``, else a
    one-line TypeError: a model given where its explainer goes is the usual mistake."""
    if not (callable(getattr(explainer, "transform", None))
            and callable(getattr(explainer, "explain", None))):
        raise TypeError(
            f"{name} should be a fitted sk_sointer explainer (such as L2XExplainer); got "
            f"{type(explainer).__name__}. Explain a model first, e.g. "
            "L2XExplainer(k=3).fit(X, black_box=model), and pass the explainer."
        )
    return explainer


def _explainers(explainers, name="explainers", by_index=None):
    """A dict of names and fitted explainers: a dict as given, a sequence titled
    ``by_index.format(i)`` (refused without ``by_index``)."""
    if not isinstance(explainers, Mapping):
        if by_index is None or isinstance(explainers, (str, bytes)) \
                or not hasattr(explainers, "__iter__") or hasattr(explainers, "transform"):
            raise TypeError(f"{name} should be a dict of names and fitted explainers, e.g. "
                            f"{{'L2X': explainer}}; got {type(explainers).__name__}.")
        explainers = {by_index.format(t): e for t, e in enumerate(explainers)}
    if not explainers:
        raise ValueError(f"{name} should name at least one fitted explainer.")
    for key, explainer in explainers.items():
        _check_explainer(explainer, f"{name}[{key!r}]")
    return dict(explainers)


def _explained(explainer, X, method):
    """``explainer.transform(X)`` (masks) or ``explainer.explain(X)`` (scores)."""
    if method not in ("transform", "explain"):
        raise ValueError(f"method should be 'transform' or 'explain'; got {method!r}.")
    return getattr(_check_explainer(explainer), method)(X)
