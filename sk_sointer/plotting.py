"""Pictures of explanations (needs matplotlib: ``pip install "sk_sointer[plot]"``).

- which features each row relied on: :func:`plot_masks` (rows x features);
- how often each feature is selected, overall or per class: :func:`plot_selection_frequency`;
- masks over images, pixel or patch masks: :func:`plot_image_masks`;
- the selected words of texts: :func:`plot_tokens`;
- fidelity as ``k`` grows, from a fitted search: :func:`plot_fidelity_vs_k`;
- several explainers on the same rows: :func:`plot_comparison`;
- one panel per explained output of a multi-output model: :func:`plot_targets`.

Every function draws into ``ax`` when given (one Axes, or one per panel for the functions
that draw several) and returns what it drew on: an Axes, or an ndarray of Axes whose
``.flat[0].figure`` is the figure. Masks are what ``transform`` returns (any value > 0
counts as kept); :meth:`explain`'s scores are accepted wherever the text says so.
"""

from numbers import Integral

import numpy as np

__all__ = [
    "plot_comparison",
    "plot_fidelity_vs_k",
    "plot_image_masks",
    "plot_masks",
    "plot_selection_frequency",
    "plot_targets",
    "plot_tokens",
]


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
    n_cols = max(1, min(n_cols, n_panels))
    n_rows = -(-n_panels // n_cols)
    width, height = panel_size
    _, axes = _pyplot().subplots(n_rows, n_cols, figsize=(width * n_cols, height * n_rows),
                                 squeeze=False, sharey=sharey)
    for extra in axes.ravel()[n_panels:]:
        extra.set_visible(False)
    return axes.ravel()[:n_panels]


def _table(masks, name="masks"):
    """A 2-D float array of masks or scores, and the column names of a DataFrame."""
    columns = getattr(masks, "columns", None)
    values = np.asarray(masks, dtype=float)
    if values.ndim == 1:
        values = values[None, :]
    if values.ndim != 2:
        raise ValueError(
            f"{name} should be 2-D, one row per sample and one column per feature; got shape "
            f"{values.shape}. Plot images with plot_image_masks."
        )
    return values, None if columns is None else [str(c) for c in columns]


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


def plot_masks(masks, *, feature_names=None, explainer=None, row_labels=None, max_rows=50,
               ax=None, cmap="Greys"):
    """Heat map of masks (or scores): one row per sample, one column per feature.

    Parameters
    ----------
    masks : array-like of shape (n_samples, n_features)
        Masks from ``transform``, or scores from ``explain``. A DataFrame gives its columns
        as the feature names.
    feature_names : sequence of str, default=None
        Column labels; default: the DataFrame's columns, else ``explainer.feature_names_in_``,
        else ``x0, x1, ...``.
    explainer : fitted explainer, default=None
        Where to find ``feature_names_in_`` (set when it was fitted on a DataFrame).
    row_labels : sequence of str, default=None
        Labels of the rows (e.g. the predicted class), one per sample.
    max_rows : int, default=50
        Only the first ``max_rows`` samples are drawn.
    ax : matplotlib Axes, default=None
        Where to draw; default: a new figure.
    cmap : str or Colormap, default="Greys"

    Returns
    -------
    ax : matplotlib Axes
        Its first image is the heat map, with a colour bar.
    """
    values, columns = _table(masks)
    values = values[:max_rows]
    names = _feature_names(values.shape[1], feature_names, explainer, columns)
    n_rows, n_features = values.shape
    ax = _axes(ax, figsize=(max(4.0, 0.35 * n_features + 2), max(2.5, 0.18 * n_rows + 1.2)))
    binary = np.isin(values, (0.0, 1.0)).all()
    image = ax.imshow(values, aspect="auto", interpolation="nearest", cmap=cmap,
                      vmin=0.0 if binary else None, vmax=1.0 if binary else None)
    ax.set_xticks(np.arange(n_features))
    ax.set_xticklabels(names, rotation=90 if max(map(len, names)) > 3 else 0)
    if row_labels is not None:
        row_labels = [str(label) for label in row_labels][:n_rows]
        ax.set_yticks(np.arange(len(row_labels)))
        ax.set_yticklabels(row_labels, fontsize="small" if n_rows <= 15 else "x-small")
    ax.set_xlabel("feature")
    ax.set_ylabel("row")
    colorbar = ax.figure.colorbar(image, ax=ax, fraction=0.05, pad=0.02)
    colorbar.set_label("selected" if binary else "score")
    if binary:
        colorbar.set_ticks([0, 1])
    return ax


def plot_selection_frequency(masks, *, by=None, feature_names=None, explainer=None,
                             top=None, ax=None):
    """Bar chart of how often each feature is selected, overall or per group of rows.

    Parameters
    ----------
    masks : array-like of shape (n_samples, n_features)
        Masks from ``transform`` (scores are averaged the same way).
    by : array-like of shape (n_samples,), default=None
        A label per row, e.g. the black box's predicted class: one bar per label for each
        feature, each the share of that label's rows selecting it.
    feature_names, explainer :
        As in :func:`plot_masks`.
    top : int, default=None
        Draw only the ``top`` most often selected features (over all rows), most frequent
        first; default: every feature in column order.
    ax : matplotlib Axes, default=None

    Returns
    -------
    ax : matplotlib Axes
        One bar container per group (one in all without ``by``); bar heights are shares of
        rows, 0 to 1.
    """
    values, columns = _table(masks)
    names = np.asarray(_feature_names(values.shape[1], feature_names, explainer, columns))
    if by is None:
        groups, labels = [np.ones(len(values), dtype=bool)], [None]
    else:
        by = np.asarray(by)
        if by.shape != (len(values),):
            raise ValueError(
                f"by should hold one label per row of masks ({len(values)}); got shape "
                f"{by.shape}."
            )
        labels = list(np.unique(by))
        groups = [by == label for label in labels]
    columns = np.arange(values.shape[1])
    if top is not None:
        columns = np.argsort(-values.mean(axis=0), kind="stable")[:top]
    ax = _axes(ax, figsize=(max(4.0, 0.4 * len(columns) * len(groups) + 2), 3.2))
    width = 0.8 / len(groups)
    for g, (rows, label) in enumerate(zip(groups, labels)):
        offsets = np.arange(len(columns)) + (g - (len(groups) - 1) / 2) * width
        ax.bar(offsets, values[rows][:, columns].mean(axis=0), width=width,
               label=None if label is None else f"{label} ({rows.sum()} rows)")
    ax.set_xticks(np.arange(len(columns)))
    ax.set_xticklabels(names[columns], rotation=90 if max(map(len, names)) > 3 else 0)
    ax.set_ylabel("share of rows selecting it")
    ax.set_ylim(0, 1.05)
    if by is not None:  # beside the axes: shares near 1 would hide under it
        ax.legend(title="rows of", fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return ax


def _image(image):
    """An image as (height, width) or (height, width, channels) for ``imshow``."""
    image = np.asarray(image, dtype=float)
    if image.ndim == 3 and image.shape[0] in (1, 3) and image.shape[-1] not in (1, 3):
        image = np.moveaxis(image, 0, -1)  # channels first, as the explainers take images
    if image.ndim == 3 and image.shape[-1] == 1:
        image = image[..., 0]
    if image.ndim not in (2, 3):
        raise ValueError(f"images should be (n, H, W) or (n, C, H, W); got one of {image.shape}.")
    if image.ndim == 3:  # colour: to 0..1 for imshow
        low, high = image.min(), image.max()
        image = (image - low) / (high - low) if high > low else np.zeros_like(image)
    return image


def _pixel_mask(mask, shape):
    """A mask over the (height, width) ``shape``: channels folded by their maximum, a grid of
    patches repeated up to the pixels."""
    mask = np.asarray(mask, dtype=float)
    if mask.ndim == 3:
        channels_first = mask.shape[0] in (1, 3) and mask.shape[1:] == shape
        mask = mask.max(axis=0 if channels_first else -1)
    if mask.ndim == 1 and mask.size == shape[0] * shape[1]:
        mask = mask.reshape(shape)
    if mask.ndim != 2 or shape[0] % mask.shape[0] or shape[1] % mask.shape[1]:
        raise ValueError(
            f"a mask of shape {np.shape(mask)} does not cover an image of {shape}: pass "
            "transform's masks (the images' shape) or a grid of patches that divides it."
        )
    return np.repeat(np.repeat(mask, shape[0] // mask.shape[0], axis=0),
                     shape[1] // mask.shape[1], axis=1)


def _overlay(ax, image, mask, color, alpha):
    """``image`` in grey with ``mask`` (0..1, or scores scaled to it) painted over in
    ``color``."""
    from matplotlib.colors import to_rgba

    ax.imshow(image, cmap=None if image.ndim == 3 else "gray", interpolation="nearest")
    mask = _pixel_mask(mask, image.shape[:2])
    high = mask.max()
    weight = np.clip(mask / high, 0.0, 1.0) if high > 0 else mask
    paint = np.zeros(mask.shape + (4,))
    paint[..., :3] = to_rgba(color)[:3]
    paint[..., 3] = alpha * weight
    ax.imshow(paint, interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])


def plot_image_masks(images, masks, *, titles=None, n_cols=5, color="tab:orange", alpha=0.6,
                     ax=None):
    """Masks painted over images, one panel per image.

    Parameters
    ----------
    images : array-like of shape (n_images, height, width) or (n_images, channels, height, width)
        The explained images (channels last also accepted); grey images are drawn in grey.
    masks : array-like
        One mask per image: ``transform``'s masks (the images' shape; channels folded by
        their maximum), a grid of patches of shape (n_images, rows, columns) that divides the
        image (repeated up to the pixels), or ``explain``'s scores (painted in proportion,
        the largest at ``alpha``).
    titles : sequence of str, default=None
        A title per panel, e.g. the predicted class.
    n_cols : int, default=5
        Panels per row of a new figure.
    color : matplotlib colour, default="tab:orange"
    alpha : float, default=0.6
        Opacity of the paint where a mask keeps the pixel.
    ax : sequence of matplotlib Axes, default=None
        One per image; default: a new figure.

    Returns
    -------
    axes : ndarray of matplotlib Axes
        One per image; each holds the image and, above it, the paint.
    """
    images = np.asarray(images)
    if len(masks) != len(images):
        raise ValueError(f"masks should hold one mask per image ({len(images)}); got {len(masks)}.")
    axes = _panels(ax, len(images), n_cols=n_cols, panel_size=(1.8, 1.9))
    for i, panel in enumerate(axes):
        _overlay(panel, _image(images[i]), masks[i], color, alpha)
        if titles is not None:
            panel.set_title(str(titles[i]), fontsize="small")
    return axes


def _words(tokens, masks, sequencer):
    """Rows of (word, kept) pairs: token ids read through ``sequencer`` (padding left out),
    or lists of words as given."""
    rows = []
    for i, row in enumerate(tokens):
        keep = np.asarray(masks[i]).ravel()
        row = list(np.asarray(row).ravel()) if sequencer is not None else list(row)
        if len(keep) != len(row):
            raise ValueError(
                f"row {i}: masks should have one value per token ({len(row)}); got {len(keep)}."
            )
        if sequencer is not None:
            words = sequencer.words_
            rows.append([(str(words[int(t)]), k > 0) for t, k in zip(row, keep) if int(t) != 0])
        else:
            rows.append([(str(t), k > 0) for t, k in zip(row, keep)])
    return rows


def plot_tokens(tokens, masks, *, sequencer=None, color="tab:orange", width=60, ax=None):
    """Texts with the selected words highlighted, one text under the other.

    Parameters
    ----------
    tokens : array-like of shape (n_texts, length), or a sequence of lists of words
        Token ids as the explainer took them (with ``sequencer``), or the words themselves.
    masks : array-like of shape (n_texts, length)
        ``transform``'s token masks.
    sequencer : fitted :class:`~sk_sointer.text.TokenSequencer`, default=None
        Reads token ids as words (padding left out); needed when ``tokens`` are ids.
    color : matplotlib colour, default="tab:orange"
        Background of the selected words.
    width : int, default=60
        Characters on a line before a text wraps.
    ax : matplotlib Axes, default=None

    Returns
    -------
    ax : matplotlib Axes
        One text artist per word; the selected ones have a coloured box (their
        ``get_bbox_patch()`` is not None).
    """
    rows = _words(tokens, masks, sequencer)
    lines = []  # (row, [(word, kept), ...]) wrapped at ``width`` characters
    for i, row in enumerate(rows):
        line, used = [], 0
        for word, kept in row:
            if line and used + len(word) > width:
                lines.append((i, line))
                line, used = [], 0
            line.append((word, kept))
            used += len(word) + 1
        lines.append((i, line))
    ax = _axes(ax, figsize=(0.11 * width + 0.5, 0.32 * len(lines) + 0.6))
    ax.set_axis_off()
    step = 1.0 / (len(lines) + 1)
    for n, (i, line) in enumerate(lines):
        y = 1.0 - (n + 1) * step
        for c, (word, kept) in enumerate(line):
            x = sum(len(w) + 1 for w, _ in line[:c]) / width
            box = dict(boxstyle="round,pad=0.15", facecolor=color, edgecolor="none") if kept else None
            ax.text(x, y, word, transform=ax.transAxes, va="center", family="monospace",
                    fontweight="bold" if kept else "normal", bbox=box)
        if n == 0 or lines[n - 1][0] != i:
            ax.text(-0.01, y, f"{i}", transform=ax.transAxes, va="center", ha="right",
                    color="0.5", family="monospace")
    return ax


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


def plot_fidelity_vs_k(search, *, param="k", ax=None):
    """Mean cross-validated score (fidelity by default) against ``k``, from a fitted search.

    One line per combination of the other searched parameters (e.g. ``tau``), with the
    score's spread over the folds as error bars and the chosen setting (``best_index_``)
    starred.

    Parameters
    ----------
    search : fitted GridSearchCV or RandomizedSearchCV
        Over an explainer, or a pipeline ending in one (``explainer__k`` is found).
    param : str, default="k"
        The parameter on the horizontal axis.
    ax : matplotlib Axes, default=None

    Returns
    -------
    ax : matplotlib Axes
        One error-bar line per combination of the other parameters, labelled with them.
    """
    results, key = _search_results(search, param)
    others = sorted(k for k in results if k.startswith("param_") and k != key)
    settings = [tuple(results[k][i] for k in others) for i in range(len(results[key]))]
    ax = _axes(ax, figsize=(5, 3.2))
    for setting in dict.fromkeys(settings):
        rows = [i for i, s in enumerate(settings) if s == setting]
        rows.sort(key=lambda i: results[key][i])
        label = ", ".join(f"{k[len('param_'):].split('__')[-1]}={v}"
                          for k, v in zip(others, setting)) or None
        ax.errorbar([results[key][i] for i in rows], results["mean_test_score"][rows],
                    yerr=results["std_test_score"][rows], marker="o", capsize=3, label=label)
    best = search.best_index_ if hasattr(search, "best_index_") else None
    if best is not None and best != -1:
        ax.plot([results[key][best]], [results["mean_test_score"][best]], marker="*",
                markersize=14, color="gold", markeredgecolor="k", linestyle="none",
                label="chosen")
    scoring = getattr(search, "scoring", None)
    ax.set_xlabel(param)
    ax.set_ylabel(f"mean test score ({scoring})" if isinstance(scoring, str)
                  else "mean test score (fidelity)")
    values = sorted(set(results[key]))
    if all(isinstance(v, Integral) for v in values):
        ax.set_xticks(values)
    ax.legend(fontsize="small")
    return ax


def plot_comparison(masks_by_name, *, images=None, feature_names=None, explainer=None,
                    max_rows=20, ax=None):
    """Several explainers on the same rows, side by side.

    Parameters
    ----------
    masks_by_name : dict of str to array-like
        Each explainer's masks (or scores) on the same rows, keyed by the panel's title.
    images : array-like, default=None
        The explained images: a grid with one row per image and one column per explainer,
        the image alone in the first column. Without images, one heat map per explainer.
    feature_names, explainer :
        As in :func:`plot_masks` (tables only).
    max_rows : int, default=20
        Rows (or images) drawn.
    ax : 2-D array of matplotlib Axes, default=None
        (rows, explainers + 1) Axes with images, (1, explainers) without.

    Returns
    -------
    axes : ndarray of matplotlib Axes, 2-D
    """
    names = list(masks_by_name)
    if not names:
        raise ValueError("masks_by_name should name at least one explainer's masks.")
    lengths = {len(masks_by_name[name]) for name in names}
    if len(lengths) != 1:
        raise ValueError("every explainer's masks should cover the same rows; got lengths "
                         f"{sorted(lengths)}.")
    if images is None:
        axes = _panels(ax, len(names), n_cols=len(names), panel_size=(3.2, 4.0), sharey=True)
        for panel, name in zip(axes, names):
            plot_masks(masks_by_name[name], feature_names=feature_names, explainer=explainer,
                       max_rows=max_rows, ax=panel)
            panel.set_title(name)
        return axes.reshape(1, -1)
    images = np.asarray(images)
    if len(images) != lengths.pop():
        raise ValueError("images and masks should cover the same rows.")
    images = images[:max_rows]
    n_cols = len(names) + 1
    axes = _panels(ax, len(images) * n_cols, n_cols=n_cols, panel_size=(1.6, 1.6))
    axes = axes.reshape(len(images), n_cols)
    for i, image in enumerate(images):
        image = _image(image)
        axes[i, 0].imshow(image, cmap=None if image.ndim == 3 else "gray")
        axes[i, 0].set_xticks([])
        axes[i, 0].set_yticks([])
        for j, name in enumerate(names, start=1):
            _overlay(axes[i, j], image, np.asarray(masks_by_name[name][i]), "tab:orange", 0.6)
    axes[0, 0].set_title("image", fontsize="small")
    for j, name in enumerate(names, start=1):
        axes[0, j].set_title(name, fontsize="small")
    return axes


def plot_targets(masks_by_target, *, feature_names=None, explainer=None, by=None, n_cols=3,
                 ax=None):
    """One selection-frequency panel per explained output of a multi-output model.

    :class:`~sk_sointer.SOInterExplainer` explains one output (``target``) at a time; fit
    one per output and pass their masks here to see which features each output relies on.

    Parameters
    ----------
    masks_by_target : dict of str to array-like, or a sequence of array-likes
        Masks of each output's explainer on the same rows (a sequence is titled by index).
    feature_names, explainer :
        As in :func:`plot_masks`.
    by : array-like of shape (n_samples,) or dict, default=None
        Labels per row for :func:`plot_selection_frequency`'s ``by``: one array for every
        panel, or a dict with one per target (e.g. each output's predicted value).
    n_cols : int, default=3
    ax : sequence of matplotlib Axes, default=None
        One per output.

    Returns
    -------
    axes : ndarray of matplotlib Axes
        One per output, titled with the output's name.
    """
    if not isinstance(masks_by_target, dict):
        masks_by_target = {f"output {t}": masks for t, masks in enumerate(masks_by_target)}
    if not masks_by_target:
        raise ValueError("masks_by_target should hold at least one output's masks.")
    targets = list(masks_by_target)
    axes = _panels(ax, len(targets), n_cols=n_cols, panel_size=(4.0, 3.0), sharey=True)
    for panel, target in zip(axes, targets):
        labels = by.get(target) if isinstance(by, dict) else by
        plot_selection_frequency(masks_by_target[target], by=labels, feature_names=feature_names,
                                 explainer=explainer, ax=panel)
        panel.set_title(str(target))
        if panel.get_subplotspec() is not None and not panel.get_subplotspec().is_first_col():
            panel.set_ylabel("")  # the panels of a row share the axis
    return axes
