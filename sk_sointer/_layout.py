"""The layout of a row: a table's features, an image's pixels, a text's token ids.

Every explainer flattens what it is given into rows of features: a table as it is, images
(``(n, height, width)`` or ``(n, channels, height, width)``, or flat rows with
``image_shape``) as rows of pixels, token ids as rows of ids. A :class:`RowLayout` is
resolved once in ``fit`` from the data and the explainer's modality parameters
(``image_shape``, ``patch_size``, ``groups``, ``tokens``); the masker takes its groups, the
networks its input shape and vocabulary, the estimator its flattening and unflattening and
the output a pixel names (SOInter's ``target=(row, col)``), and HardKuma its neighbouring
groups.
"""

import math
from numbers import Integral

import numpy as np


class RowLayout:
    """How the rows given to ``fit`` are laid out.

    Parameters
    ----------
    n_features : int
        Values in a flattened row.
    row_shape : tuple or None, default=None
        Shape of one row as given to ``fit`` when ``X`` held images (``None``: flat rows).
    image_shape : tuple of 3 ints or None, default=None
        ``(channels, height, width)`` when the rows are images.
    tokens : bool, default=False
        The values are token ids (0 the padding).
    n_tokens : int or None, default=None
        With tokens, the number of ids the embeddings hold (the largest id seen + 1).
    patch_size : int or pair of ints or None, default=None
        With images, the size of the patches that group the pixels.
    groups : array-like of shape (n_features,) or None, default=None
        One group id per feature, given by the user; with ``patch_size``, the patches.
    """

    def __init__(self, n_features, *, row_shape=None, image_shape=None, tokens=False,
                 n_tokens=None, patch_size=None, groups=None):
        self.n_features = int(n_features)
        self.row_shape = None if row_shape is None else tuple(int(s) for s in row_shape)
        self.image_shape = None if image_shape is None else tuple(int(s) for s in image_shape)
        self.tokens = bool(tokens)
        self.n_tokens = None if n_tokens is None else int(n_tokens)
        self.patch_size = patch_size
        self.groups = groups

    @classmethod
    def resolve(cls, row_shape, n_features, *, image_shape=None, tokens=False, n_tokens=None,
                groups=None, patch_size=None):
        """The layout of validated flat rows of ``n_features`` values, whose rows had the
        shape ``row_shape`` as given (``None`` for a table), with an explainer's modality
        parameters; raises a ``ValueError`` naming any that do not fit the data."""
        image_shape = image_shape_of(row_shape, n_features, image_shape)
        if patch_size is not None:
            if groups is not None:
                raise ValueError(
                    "Pass groups or patch_size, not both: patch_size makes the groups.")
            if image_shape is None:
                raise ValueError(
                    "patch_size needs images: X of shape (n_samples, height, width) or "
                    "(n_samples, channels, height, width), or flat rows with "
                    "image_shape=(height, width)."
                )
            groups = patch_groups(image_shape, patch_size)
        return cls(n_features, row_shape=row_shape, image_shape=image_shape, tokens=tokens,
                   n_tokens=n_tokens, patch_size=patch_size, groups=groups)

    @property
    def input_shape(self):
        """What the networks are built for: the image's ``(channels, height, width)``, or
        ``(n_features,)``."""
        return self.image_shape or (self.n_features,)

    def flatten(self, X, input_name="X"):
        """Rows of ``X`` flattened as in ``fit`` (images become rows of pixels), after
        checking that they have the shape of the rows ``fit`` saw."""
        if self.row_shape is None:
            # A table: validation rejects anything else with sklearn's message, except
            # columns of text or categories, which it would not name.
            check_numeric_columns(X, input_name)
            return X
        X = np.asarray(X)
        if X.shape[1:] != self.row_shape:
            raise ValueError(
                f"{input_name} should hold rows of shape {self.row_shape}, as in fit; got an "
                f"array of shape {X.shape}."
            )
        return X.reshape(len(X), -1)

    def unflatten(self, values):
        """Flat per-feature rows (masks, scores) in the shape of the rows given to ``fit``."""
        return values if self.row_shape is None else values.reshape(len(values), *self.row_shape)

    def output_index(self, target, n_outputs):
        """The index of the model's output that ``target`` names: an int as it is (checked
        by the output spec); a ``(row, col)`` pair names a pixel of a model with one output
        per pixel of the images (``n_outputs`` of them, in the pixels' row-major order)."""
        if not isinstance(target, (tuple, list)):
            return target
        if len(target) != 2 or not all(
                isinstance(i, (Integral, np.integer)) and not isinstance(i, bool) for i in target):
            raise ValueError(f"target as a pixel should be a pair of ints (row, col); got "
                             f"{target!r}.")
        if self.image_shape is None:
            raise ValueError(
                f"target={target!r} names a pixel, which needs image rows: X of shape "
                "(n_samples, height, width) or (n_samples, channels, height, width), or flat "
                "rows with image_shape=(height, width). Pass an int output index otherwise.")
        height, width = self.image_shape[1:]
        if n_outputs != height * width:
            raise ValueError(
                f"target={target!r} names a pixel, so the black box should have one output "
                f"per pixel of the {height} x {width} images ({height * width}); it has "
                f"{n_outputs}. Pass an int output index.")
        row, col = (int(i) for i in target)
        if not (0 <= row < height and 0 <= col < width):
            raise ValueError(f"target={target!r} is outside the {height} x {width} images: row "
                             f"should be in [0, {height - 1}] and col in [0, {width - 1}].")
        return row * width + col

    def neighbour_pairs(self, n_groups):
        """Index pairs of neighbouring groups: adjacent pixels (or patches) of an image, in
        each channel, horizontally and vertically; consecutive groups otherwise."""
        ids = None
        if self.image_shape is not None:
            channels, height, width = self.image_shape
            if self.patch_size is not None:
                ph, pw = _pair(self.patch_size)
                grid = (1, -(-height // ph), -(-width // pw))
            else:
                grid = (channels, height, width)
            if math.prod(grid) == n_groups:
                ids = np.arange(n_groups).reshape(grid)
        if ids is None:
            return np.stack([np.arange(n_groups - 1), np.arange(1, n_groups)], axis=1)
        horizontal = np.stack([ids[..., :-1].ravel(), ids[..., 1:].ravel()], axis=1)
        vertical = np.stack([ids[:, :-1, :].ravel(), ids[:, 1:, :].ravel()], axis=1)
        return np.concatenate([horizontal, vertical])

    def state_dict(self):
        """The layout as plain values (the groups are the masker's to keep)."""
        return {"n_features": self.n_features, "row_shape": self.row_shape,
                "image_shape": self.image_shape, "tokens": self.tokens,
                "n_tokens": self.n_tokens, "patch_size": self.patch_size}

    @classmethod
    def from_state(cls, state, groups=None):
        """The layout of :meth:`state_dict`, with the masker's ``groups``."""
        return cls(**state, groups=groups)

    def __repr__(self):
        fields = {name: value for name, value in self.state_dict().items()
                  if value not in (None, False)}
        return f"RowLayout({', '.join(f'{k}={v!r}' for k, v in fields.items())})"


def _pair(size):
    return (size, size) if np.ndim(size) == 0 else tuple(size)


def flatten_rows(X, input_name="X"):
    """``X`` as a table of rows, and the shape of one row when ``X`` holds images."""
    if isinstance(X, (list, tuple)):
        X = np.asarray(X)
    if getattr(X, "ndim", 2) <= 2:  # tables, DataFrames, array-likes: validated as they are
        check_numeric_columns(X, input_name)
        return X, None
    X = np.asarray(X)
    return X.reshape(len(X), -1), X.shape[1:]


def check_numeric_columns(X, input_name="X", advice=None):
    """Raise a ``ValueError`` naming the columns of a table that hold text or categories
    (``advice``: what to do, in place of the explainer's way with a table).

    scikit-learn's validation fails on them with the first value that is not a number
    ("could not convert string to float: 'v'"), which names neither the column nor what to
    do. A left-out feature takes a number (the training mean, a background row's value), so
    such columns must be encoded first, and the model behind the encoder explained
    (:func:`~sk_sointer.encoded_groups`). Numeric arrays and frames cost a dtype lookup.
    """
    dtypes = getattr(X, "dtypes", None)
    if hasattr(dtypes, "items"):  # a DataFrame: one dtype per column
        # Text or categories that hold numbers only read as numbers, as scikit-learn's
        # validation reads them; dates and times never do.
        columns = [(f"{name!r}", str(dtype)) for j, (name, dtype) in enumerate(dtypes.items())
                   if getattr(dtype, "kind", "O") not in "biuf" and (
                       getattr(dtype, "kind", "O") in "mM"
                       or not _numbers(X.iloc[:, j].to_numpy(dtype=object)))]
    elif getattr(getattr(X, "dtype", None), "kind", None) in ("O", "U", "S") and X.ndim == 2:
        columns = [(f"column {j}", "text") for j in range(X.shape[1]) if not _numbers(X[:, j])]
    else:
        return
    if columns:
        listed = ", ".join(f"{name} ({kind})" for name, kind in columns[:10])
        more = f" and {len(columns) - 10} more" if len(columns) > 10 else ""
        table = ("fit the explainer on the table itself, a pandas DataFrame" if
                 hasattr(dtypes, "items") else "pass the table as a pandas DataFrame")
        if advice is None:
            advice = (
                f"Rows of numbers are masked with numbers (the training mean): {table} (with "
                "a model that takes it, such as a Pipeline with its encoder), whose text and "
                "category columns the explainer reads, or explain the model behind its "
                "encoder on the encoded rows with "
                f"groups=sk_sointer.encoded_groups(encoder, {input_name}).")
        raise ValueError(
            f"{input_name} has columns that are not numbers: {listed}{more}. {advice}")


def _numbers(column):
    """Whether an object column reads as numbers; a cell that is neither text nor a number
    (a dict) raises numpy's ``TypeError``, as scikit-learn's validation does."""
    try:
        column.astype(np.float64)
    except ValueError:
        return False
    return True


def image_shape_of(row_shape, n_features, image_shape=None):
    """The ``(channels, height, width)`` of image rows, or ``None`` for table rows.

    ``row_shape`` is the shape of one row as given to ``fit`` (``None`` for flat rows);
    ``image_shape`` the explainer's parameter: ``(height, width)`` or
    ``(channels, height, width)``, needed for flat rows, optional for image arrays.
    """
    if row_shape is not None and len(row_shape) not in (2, 3):
        raise ValueError(
            "X should be a table (n_samples, n_features) or images (n_samples, height, width) "
            f"or (n_samples, channels, height, width); got rows of shape {row_shape}."
        )
    if image_shape is None:
        return None if row_shape is None else _channels_first(row_shape)
    shape = tuple(image_shape) if np.ndim(image_shape) == 1 else ()
    if len(shape) not in (2, 3) or not all(isinstance(s, (int, np.integer)) and s > 0
                                           for s in shape):
        raise ValueError(
            "image_shape should be (height, width) or (channels, height, width) of positive "
            f"integers; got {image_shape!r}."
        )
    shape = _channels_first(shape)
    if row_shape is not None and _channels_first(row_shape) != shape:
        raise ValueError(f"image_shape={image_shape!r} differs from the shape of X's rows, "
                         f"{tuple(row_shape)}.")
    if int(np.prod(shape)) != n_features:
        raise ValueError(f"image_shape={image_shape!r} holds {int(np.prod(shape))} values, but "
                         f"a row of X has {n_features}.")
    return shape


def _channels_first(shape):
    return tuple(int(s) for s in ((1, *shape) if len(shape) == 2 else shape))


def patch_groups(image_shape, patch_size):
    """Group id of every value of a flattened ``(channels, height, width)`` image: the
    ``patch_size`` patch it falls in, patches numbered row by row, every channel of a
    pixel in the pixel's patch. Patches at the right and bottom edges are smaller when the
    patch size does not divide the image."""
    channels, height, width = image_shape
    sizes = _pair(patch_size)
    # A bool is an int to Python, but patch_size=True is a mistake, not 1 x 1 patches.
    if len(sizes) != 2 or not all(
        isinstance(p, (int, np.integer)) and not isinstance(p, (bool, np.bool_)) and p > 0
        for p in sizes
    ):
        raise ValueError(
            f"patch_size should be a positive integer or a pair of them; got {patch_size!r}."
        )
    ph, pw = sizes
    if ph > height or pw > width:
        raise ValueError(
            f"patch_size={patch_size!r} is larger than the images ({height} x {width})."
        )
    rows = np.arange(height)[:, None] // ph
    cols = np.arange(width)[None, :] // pw
    grid = rows * -(-width // pw) + cols
    return np.broadcast_to(grid, (channels, height, width)).ravel().copy()
