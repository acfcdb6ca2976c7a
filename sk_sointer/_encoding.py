"""Feature groups of encoded rows: which column of a table each encoded feature comes from.

A table with text or category columns reaches its model through an encoder (a
``ColumnTransformer`` with a ``OneHotEncoder``, say). The explainers mask numbers, so they
explain the model behind the encoder, on the encoded rows; :func:`encoded_groups` gives the
``groups=`` under which the encoded features of one column of the table are kept or left out
together, so that ``k`` counts the table's columns.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted


def encoded_groups(encoder, X):
    """The column of ``X`` behind every feature that ``encoder.transform(X)`` outputs.

    The encoder is asked, one column of ``X`` at a time, which of its outputs move when that
    column's values are moved to other rows (shifted by one row): those outputs belong to
    that column. Any fitted transformer works this way (a ``ColumnTransformer``, a
    ``OneHotEncoder``, a ``Pipeline`` of them, scalers, binning, target encoding), so long as
    each of its outputs comes from one column of ``X``.

    Parameters
    ----------
    encoder : fitted transformer
        What turns the table into the model's input: for a pipeline ``pipe`` whose last
        step is the model, ``pipe[:-1]``.
    X : DataFrame or array-like of shape (n_samples, n_columns)
        The table as the encoder takes it, at least 2 rows: the rows it was fitted on, or
        others with every category (an output that no column moves over these rows, such as
        the one-hot feature of a category they lack, gets a group of its own).

    Returns
    -------
    groups : ndarray of shape (n_encoded_features,), int
        ``groups[i] = j``: encoded feature ``i`` comes from column ``j`` of ``X`` (0-based
        position). A column the encoder drops has no feature; an output that is constant
        over ``X`` gets an id from ``n_columns`` up.

    Raises
    ------
    ValueError
        When an output moves with two columns of ``X`` (interactions, such as
        ``PolynomialFeatures``' products): it belongs to no single column. When an output
        changes between two calls on the same rows (a random encoder), or the output is not
        a table with one row per row of ``X``.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from sklearn.compose import make_column_transformer
    >>> from sklearn.preprocessing import OneHotEncoder, StandardScaler
    >>> from sk_sointer import encoded_groups
    >>> X = pd.DataFrame({"age": [31, 45, 52, 28], "city": ["Oslo", "Rome", "Oslo", "Lima"]})
    >>> encoder = make_column_transformer((OneHotEncoder(), ["city"]),
    ...                                   (StandardScaler(), ["age"])).fit(X)
    >>> encoded_groups(encoder, X)  # three one-hot features of city, then age
    array([1, 1, 1, 0])
    """
    if not callable(getattr(encoder, "transform", None)):
        model = " (a model: for a pipeline, pass pipe[:-1])" if hasattr(encoder, "predict") else ""
        raise TypeError(
            "encoder should be a fitted transformer (a ColumnTransformer, a OneHotEncoder, "
            f"the steps of a pipeline before its model); got {type(encoder).__name__}{model}."
        )
    check_is_fitted(encoder)
    table = _Table(X)
    if table.n_rows < 2:
        raise ValueError(f"X should have at least 2 rows to move values between; got "
                         f"{table.n_rows}.")
    encoded = _numeric_output(encoder.transform(X), table.n_rows)
    # An output that moves on its own would be blamed on the first column shifted.
    noisy = np.flatnonzero(_moved_outputs(encoded, _numeric_output(encoder.transform(X),
                                                                   table.n_rows)))
    if noisy.size:
        raise ValueError(
            f"The encoder's outputs {noisy[:5].tolist()}{'...' if noisy.size > 5 else ''} change "
            "between two calls on the same rows of X (noise, sampling): its features cannot be "
            "traced to columns. Fix its randomness (random_state) or leave the random step out."
        )
    groups = np.full(encoded.shape[1], -1)
    for j in range(table.n_columns):
        moved = _moved_outputs(encoded, _numeric_output(encoder.transform(table.shifted(j)),
                                                        table.n_rows))
        shared = moved & (groups >= 0)
        if shared.any():
            i = int(np.flatnonzero(shared)[0])
            raise ValueError(
                f"The encoder's output {i} moves with columns {table.name(groups[i])} and "
                f"{table.name(j)} of X: each encoded feature should come from one column "
                "for the columns to be groups (an encoder that combines columns, such as "
                "PolynomialFeatures, has no such groups)."
            )
        groups[moved] = j
    constant = np.flatnonzero(groups < 0)
    groups[constant] = table.n_columns + np.arange(len(constant))
    return groups


class _Table:
    """A DataFrame or a 2-d array, whose columns can be shifted one at a time."""

    def __init__(self, X):
        self.frame = X if hasattr(X, "iloc") and hasattr(X, "columns") else None
        if self.frame is None:
            X = np.asarray(X)
            if X.ndim != 2:
                raise ValueError(f"X should be a table (n_samples, n_columns); got an array "
                                 f"of shape {X.shape}.")
        self.X = X
        self.n_rows, self.n_columns = X.shape

    def name(self, j):
        return repr(self.frame.columns[j]) if self.frame is not None else str(j)

    def shifted(self, j):
        """The table with column ``j``'s values moved down by one row (the last to the top)."""
        order = np.roll(np.arange(self.n_rows), 1)
        if self.frame is not None:
            moved = self.frame.copy()
            moved.isetitem(j, self.frame.iloc[order, j].set_axis(self.frame.index))
            return moved
        moved = self.X.copy()
        moved[:, j] = self.X[order, j]
        return moved


def _numeric_output(Z, n_rows):
    """The encoder's output as a float table of ``n_rows`` rows, else a one-line error."""
    Z = Z.toarray() if sp.issparse(Z) else Z
    try:
        Z = np.asarray(Z, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("The encoder's output should be numbers (the model's input); got "
                         f"values of type {type(Z).__name__} that are not.") from None
    if Z.ndim != 2 or len(Z) != n_rows:
        raise ValueError(
            f"The encoder's output should be a table, one row per row of X ({n_rows}, "
            f"n_features); got shape {Z.shape}. Pass the transformer whose output is the "
            "model's input: for a pipeline pipe, pipe[:-1]."
        )
    return Z


def _moved_outputs(before, after):
    """The outputs that differ in some row, a NaN equal to a NaN."""
    differ = (before != after) & ~(np.isnan(before) & np.isnan(after))
    return differ.any(axis=0)
