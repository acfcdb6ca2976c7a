"""Tables as users have them: a DataFrame of numbers, text, categories, booleans, dates and
empty cells, explained column by column with the model asked on rows of that frame.

Two encodings of the same rows, each for one side of an explainer:

- :class:`TableCodec` turns the frame into one number per cell and back, *exactly*: numbers
  and dates as themselves (NaN for an empty cell), text, categories and booleans as codes
  into the values seen in ``fit``. This is the explainer's "rows in their own units": the
  masker leaves a column out by writing its fill's code, background rows are rows of codes,
  and :meth:`TableCodec.decode` gives the model a frame in the table's own columns and
  dtypes, a kept empty cell still empty.
- :class:`TableMasker` is the masker over those codes. Its networks' side is an encoding the
  explainer owns: a number standardised, with an indicator of its empty cells; a text or
  category column one-hot over its frequent values, the rare (and unseen) ones pooled, with
  an indicator of its empty cells. Every encoded feature of a column is one group, so that
  ``k`` counts the table's columns.
"""

import threading

import numpy as np

from ._masking import Masker

# A value of a text or category column is one-hot encoded for the networks when it is among
# the column's _MAX_LEVELS most frequent and holds at least _MIN_SHARE of the rows (and
# _MIN_COUNT of them); the others are pooled into one "other" feature.
_MAX_LEVELS = 30
_MIN_SHARE = 0.005
_MIN_COUNT = 5

# Rows encoded cell by cell rather than column by column (see TableCodec._encode_few).
_FEW_ROWS = 16


class _Missing:
    """Stands for pandas' ``NA`` until pandas is imported (the codec imports it lazily)."""


try:
    from pandas import NA as _NA
except ImportError:  # pragma: no cover - a table needs pandas
    _NA = _Missing()

# The kinds of column: how a column is coded, encoded for the networks and filled.
NUMBER, BOOLEAN, CATEGORY, DATETIME, TIMEDELTA = TABLE_KINDS = (
    "number", "boolean", "category", "datetime", "timedelta")


def is_table(X):
    """Whether ``X`` is a DataFrame that must be read as a table: some column holds text,
    categories of text, dates or times, or some cell is empty. A frame of numbers only (text
    that reads as numbers included, as scikit-learn reads it) is read as numbers."""
    dtypes = getattr(X, "dtypes", None)
    if not hasattr(dtypes, "items") or not hasattr(X, "iloc") or getattr(X, "ndim", 2) != 2:
        return False
    from ._layout import _numbers

    for j, (_, dtype) in enumerate(dtypes.items()):
        kind = getattr(dtype, "kind", "O")
        if kind in "mM":
            return True
        if kind not in "biuf" and not _numbers(X.iloc[:, j].to_numpy(dtype=object)):
            return True
    return bool(X.isna().to_numpy().any())


def _kind_of(column):
    dtype = column.dtype
    kind = getattr(dtype, "kind", "O")
    if kind == "M":
        return DATETIME
    if kind == "m":
        return TIMEDELTA
    if kind == "b":
        return BOOLEAN
    if kind in "iuf":
        return NUMBER
    return CATEGORY


class TableCodec:
    """A table's cells as numbers and back (see the module's docstring).

    Attributes
    ----------
    columns_ : list
        The frame's column names, in order.
    kinds_ : list of str
        Each column's kind: ``"number"``, ``"boolean"``, ``"category"`` (text, objects,
        categories), ``"datetime"`` or ``"timedelta"``.
    dtypes_ : list of str
        Each column's dtype, as pandas names it (rows go back to the model in it).
    values_ : list of list or None
        For a category or boolean column, its values seen in ``fit``, the most frequent
        first: a cell's code is its value's place in this list.
    counts_ : list of list or None
        How many training rows hold each of ``values_``.
    categories_ : list of list or None
        For a column of pandas' ``category`` dtype, its categories (the dtype given back).
    """

    def fit(self, frame):
        self.columns_ = list(frame.columns)
        if len(set(map(_key, self.columns_))) != len(self.columns_):
            raise ValueError("X has columns of the same name; give every column its own name.")
        self.kinds_, self.dtypes_, self.values_, self.counts_, self.categories_ = \
            [], [], [], [], []
        for name in self.columns_:
            column = frame[name]
            kind = _kind_of(column)
            self.kinds_.append(kind)
            self.dtypes_.append(str(column.dtype))
            values = counts = categories = None
            if kind in (CATEGORY, BOOLEAN):
                seen = column.dropna()
                if kind == CATEGORY:
                    seen = seen.astype(object)
                counted = seen.value_counts(sort=False)
                # The most frequent first; ties in the order of first appearance.
                order = np.argsort(-counted.to_numpy(), kind="stable")
                values = [_plain(v) for v in counted.index.to_numpy(dtype=object)[order]]
                counts = [int(c) for c in counted.to_numpy()[order]]
                if str(column.dtype) == "category":
                    categories = [_plain(v) for v in column.cat.categories]
            self.values_.append(values)
            self.counts_.append(counts)
            self.categories_.append(categories)
        self._build_lookups()
        return self

    def _build_lookups(self):
        import pandas as pd

        self._lookup = [None if v is None else pd.Index(v, dtype=object) for v in self.values_]
        self._codes = [None if v is None else {value: code for code, value in enumerate(v)}
                       for v in self.values_]
        self._unseen = [dict() for _ in self.columns_]
        self._unseen_lock = threading.Lock()

    @property
    def n_columns(self):
        return len(self.columns_)

    def state_dict(self):
        """The fitted state, JSON-ready (lists of names, kinds, dtypes and values)."""
        return {"columns": [_json_value(c) for c in self.columns_], "kinds": self.kinds_,
                "dtypes": self.dtypes_,
                "values": [None if v is None else [_json_value(x) for x in v]
                           for v in self.values_],
                "counts": self.counts_,
                "categories": [None if v is None else [_json_value(x) for x in v]
                               for v in self.categories_]}

    @classmethod
    def from_state(cls, state):
        codec = cls()
        codec.columns_ = list(state["columns"])
        codec.kinds_ = list(state["kinds"])
        codec.dtypes_ = list(state["dtypes"])
        codec.values_ = [None if v is None else list(v) for v in state["values"]]
        codec.counts_ = [None if v is None else [int(c) for c in v] for v in state["counts"]]
        codec.categories_ = [None if v is None else list(v) for v in state["categories"]]
        codec._build_lookups()
        return codec

    def __getstate__(self):
        state = self.__dict__.copy()
        for name in ("_lookup", "_codes", "_unseen", "_unseen_lock"):
            state.pop(name, None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._build_lookups()

    # -- frame -> codes --------------------------------------------------------------------

    def frame_of(self, X, input_name="X"):
        """``X`` as a frame with the fitted columns, in their order: a DataFrame is matched
        by column name (its other columns are refused), an array or a list of rows must
        have the fitted width and is read in the fitted order. A Series is one row, matched
        by its index's names as a frame's columns are."""
        import pandas as pd

        if isinstance(X, pd.Series):
            X = X.to_frame().T
        if hasattr(X, "columns") and hasattr(X, "iloc"):
            names = list(X.columns)
            missing = [c for c in self.columns_ if c not in names]
            extra = [c for c in names if c not in self.columns_]
            if missing or extra:
                parts = []
                if missing:
                    parts.append(f"lacks the columns {_listed(missing)} seen in fit")
                if extra:
                    parts.append(f"has columns {_listed(extra)} not seen in fit")
                raise ValueError(f"{input_name} {' and '.join(parts)}: give the table's "
                                 "columns, by the names they had in fit.")
            return X if names == self.columns_ else X[self.columns_]
        rows = np.asarray(X, dtype=object)
        if rows.ndim == 1 and rows.size == self.n_columns:
            rows = rows[None]
        if rows.ndim != 2 or rows.shape[1] != self.n_columns:
            raise ValueError(
                f"{input_name} should be a DataFrame with the {self.n_columns} columns seen in "
                f"fit, or rows of {self.n_columns} values; got shape {rows.shape}.")
        return pd.DataFrame(rows, columns=self.columns_)

    def encode(self, X, input_name="X"):
        """The cells of ``X`` (a frame of the fitted columns, matched by name) as codes,
        float64 ``(n_rows, n_columns)``. A text or category value not seen in ``fit`` gets a
        code past the fitted values (remembered, so that :meth:`decode` gives it back)."""
        import pandas as pd

        frame = self.frame_of(X, input_name)
        if len(frame) <= _FEW_ROWS:
            codes = self._encode_few(frame)
            if codes is not None:
                return codes
        codes = np.empty((len(frame), self.n_columns), dtype=np.float64)
        for j, kind in enumerate(self.kinds_):
            column = frame.iloc[:, j]
            try:
                codes[:, j] = self._encode_column(j, kind, column, pd)
            except (TypeError, ValueError) as exc:
                raise ValueError(
                    f"Column {self.columns_[j]!r} of {input_name} cannot be read as the "
                    f"{kind} column it was in fit (dtype {self.dtypes_[j]}): {exc}"
                ) from None
        return codes

    def _encode_few(self, frame):
        """:meth:`encode` of a few rows (a row served at a time), cell by cell from one
        object array: pandas' per-column conversions cost tens of microseconds each, which
        a row of 20 columns would pay 20 times. ``None`` where a cell needs pandas' reading
        (dates, text given for a number), which the column-wise path gives."""
        cells = frame.to_numpy(dtype=object)
        codes = np.empty(cells.shape, dtype=np.float64)
        for j, kind in enumerate(self.kinds_):
            if kind in (DATETIME, TIMEDELTA):
                return None
            codes_j, lookup = codes[:, j], self._codes[j]
            for i, value in enumerate(cells[:, j]):
                if value is None or value is _NA or (isinstance(value, float) and value != value):
                    codes_j[i] = np.nan
                elif kind == NUMBER:
                    if isinstance(value, (str, bytes)):
                        return None
                    codes_j[i] = float(value)
                else:
                    code = lookup.get(_plain(value))
                    codes_j[i] = code if code is not None else self._unseen_codes(j, [value])[0]
        return codes

    def _encode_column(self, j, kind, column, pd):
        if kind == NUMBER:
            values = pd.to_numeric(column, errors="raise")
            return np.asarray(values.astype("float64"), dtype=np.float64)
        if kind in (DATETIME, TIMEDELTA):
            converted = pd.to_datetime(column) if kind == DATETIME else pd.to_timedelta(column)
            if kind == DATETIME and converted.dt.tz is not None:
                converted = converted.dt.tz_convert("UTC").dt.tz_localize(None)
            missing = converted.isna().to_numpy()
            ns = converted.astype("datetime64[ns]" if kind == DATETIME else "timedelta64[ns]")
            out = ns.to_numpy().view(np.int64).astype(np.float64)
            out[missing] = np.nan
            return out
        values = column.astype(object).to_numpy()
        missing = pd.isna(values)
        out = self._lookup[j].get_indexer(values).astype(np.float64)
        out[missing] = np.nan
        unseen = (out < 0) & ~missing
        if unseen.any():
            out[unseen] = self._unseen_codes(j, values[unseen])
        return out

    def _unseen_codes(self, j, values):
        """Codes past the fitted values for values ``fit`` did not see (text the model may
        still take): the first time a value is met it is given the next code."""
        known, base = self._unseen[j], len(self.values_[j])
        with self._unseen_lock:
            for value in values:
                known.setdefault(_plain(value), base + len(known))
        return np.array([known[_plain(v)] for v in values], dtype=np.float64)

    # -- codes -> frame --------------------------------------------------------------------

    def decode(self, codes):
        """The frame whose cells ``codes`` are: the fitted columns in their dtypes."""
        import pandas as pd

        codes = np.asarray(codes, dtype=np.float64)
        if codes.ndim == 1:
            codes = codes[None]
        data = {}
        for j, kind in enumerate(self.kinds_):
            data[j] = self._decode_column(j, kind, codes[:, j], pd)
        frame = pd.DataFrame(data)
        frame.columns = pd.Index(self.columns_, dtype=object) if any(
            not isinstance(c, str) for c in self.columns_) else self.columns_
        return frame

    def _decode_column(self, j, kind, values, pd):
        dtype = self.dtypes_[j]
        missing = np.isnan(values)
        if kind == NUMBER:
            if dtype.startswith(("int", "uint")) and not missing.any() and \
                    np.array_equal(values, np.round(values)):
                return pd.Series(values.astype(dtype))
            if dtype in ("Int64", "Int32", "Int16", "Int8", "UInt64", "UInt32", "UInt16",
                         "UInt8") and np.array_equal(values[~missing], np.round(values[~missing])):
                return pd.Series(pd.array(np.where(missing, 0, values).astype(np.int64),
                                          dtype=dtype)).mask(missing)
            if dtype in ("Float64", "Float32"):
                return pd.Series(pd.array(values, dtype=dtype)).mask(missing)
            return pd.Series(values)
        if kind in (DATETIME, TIMEDELTA):
            ns = np.where(missing, 0, values).astype(np.int64)
            if kind == TIMEDELTA:
                out = pd.Series(ns.view("timedelta64[ns]"))
            else:
                out = pd.Series(ns.view("datetime64[ns]"))
                tz = getattr(pd.api.types.pandas_dtype(dtype), "tz", None)
                if tz is not None:
                    out = out.dt.tz_localize("UTC").dt.tz_convert(tz)
            out = out.mask(missing)
            try:
                return out.astype(dtype)
            except (TypeError, ValueError):
                return out
        out = self._values(j, values, missing)
        if kind == BOOLEAN:
            if dtype == "bool" and not missing.any():
                return pd.Series(out.astype(bool))
            return pd.Series(pd.array(out, dtype="boolean"))
        if self.categories_[j] is not None:
            return pd.Series(pd.Categorical(out, categories=self.categories_[j]))
        series = pd.Series(out, dtype=object)
        if dtype != "object":
            try:
                return series.astype(dtype)
            except (TypeError, ValueError):
                pass
        return series

    def _values(self, j, codes, missing):
        fitted = self.values_[j]
        table = np.empty(len(fitted) + len(self._unseen[j]) + 1, dtype=object)
        table[: len(fitted)] = fitted
        for value, code in list(self._unseen[j].items()):
            table[code] = value
        table[-1] = np.nan  # the missing cells' code below
        index = np.where(missing, len(table) - 1, codes).astype(np.int64)
        return table[index]

    # -- what a left-out column takes ------------------------------------------------------

    def fill_codes(self, codes):
        """Per column, the code of the value a left-out column takes: a number's (a date's)
        training mean (rounded for whole numbers), the most frequent value of a text,
        category or boolean column."""
        fill = np.empty(self.n_columns, dtype=np.float64)
        for j, kind in enumerate(self.kinds_):
            if kind in (CATEGORY, BOOLEAN):
                fill[j] = 0.0 if self.values_[j] else np.nan
            else:
                column = codes[:, j]
                finite = column[np.isfinite(column)]
                fill[j] = finite.mean(dtype=np.float64) if finite.size else np.nan
                if self.dtypes_[j].lower().startswith(("int", "uint")) or kind != NUMBER:
                    # A whole-number column (a count, an age; dates in ns) is filled with a
                    # whole number, which keeps its dtype.
                    fill[j] = np.round(fill[j])
        return fill


class TableMasker(Masker):
    """The masker of a table's codes (:class:`TableCodec`): the networks see the encoding
    the explainer owns (see the module's docstring), the model the codes decoded.

    Parameters
    ----------
    codec : TableCodec
        Fitted on the table.
    groups : array-like of shape (n_columns,), default=None
        One group id per column of the table (``None``: every column its own group).

    Attributes
    ----------
    baseline_ : ndarray of shape (n_columns,)
        The fill of every column, as a code (:meth:`TableCodec.fill_codes`).
    mean_, scale_, baseline_scaled_ : ndarray of shape (n_encoded,)
        The networks' side, over the encoded features.
    groups_ : ndarray of shape (n_encoded,)
        The group (column, or column group) of every encoded feature.
    column_groups_ : ndarray of shape (n_columns,) or None
        The group of every column, ``None`` when every column is its own group.
    n_groups_ : int
    encoded_names_ : list of str
        A name for every encoded feature (``"column"``, ``"column=value"``,
        ``"column=<other>"``, ``"column (empty)"``).
    """

    tokens = False
    baseline = "mean"

    def __init__(self, codec, groups=None):
        self.codec = codec
        self.groups = groups

    def fit(self, codes):
        codec = self.codec
        codes = np.asarray(codes, dtype=np.float64)
        n_columns = codec.n_columns
        self.column_groups_, self.n_groups_ = Masker(groups=self.groups)._resolve_groups(
            n_columns)
        self.baseline_ = codec.fill_codes(codes)
        self._plan(codes)
        encoded = self.encode(codes)
        fill = self.encode(self.baseline_[None])[0]
        column_groups = (np.arange(n_columns) if self.column_groups_ is None
                         else self.column_groups_)
        self._inner = Masker(baseline=fill, groups=column_groups[self._column_of]).fit(encoded)
        self.groups_ = self._inner.groups_
        return self

    def _plan(self, codes):
        """Which encoded features every column gets, from the training codes."""
        codec, n_rows = self.codec, len(codes)
        threshold = max(_MIN_COUNT, _MIN_SHARE * n_rows)
        self._slots = []
        for j, kind in enumerate(codec.kinds_):
            slots = {"missing": bool(np.isnan(codes[:, j]).any())}
            if kind == CATEGORY:
                counts = np.asarray(codec.counts_[j], dtype=np.int64)
                slots["levels"] = int(min(_MAX_LEVELS, np.sum(counts >= threshold)))
            self._slots.append(slots)
        self._set_plan()

    def _set_plan(self):
        widths = [_width(slots) for slots in self._slots]
        self._column_of = np.repeat(np.arange(len(widths)), widths).astype(np.int64)
        self.encoded_names_ = _encoded_names(self.codec, self._slots)

    def encode(self, codes):
        """The networks' features of ``codes`` before standardisation, float64."""
        codes = np.asarray(codes, dtype=np.float64)
        out = np.zeros((len(codes), len(self._column_of)), dtype=np.float64)
        start = 0
        for j, slots in enumerate(self._slots):
            column = codes[:, j]
            missing = np.isnan(column)
            if "levels" in slots:
                n_levels = slots["levels"]
                slot = np.where(missing, -1, np.minimum(np.nan_to_num(column, nan=0.0), n_levels))
                rows = np.flatnonzero(slot >= 0)
                out[rows, start + slot[rows].astype(np.int64)] = 1.0
                start += n_levels + 1
            else:
                out[:, start] = np.where(missing, self.baseline_[j] if np.isfinite(
                    self.baseline_[j]) else 0.0, column)
                start += 1
            if slots["missing"]:
                out[:, start] = missing
                start += 1
        return out

    # -- the networks' side: the inner masker over the encoded features ----------------------

    @property
    def mean_(self):
        return self._inner.mean_

    @property
    def scale_(self):
        return self._inner.scale_

    @property
    def baseline_scaled_(self):
        return self._inner.baseline_scaled_

    @property
    def _tensors(self):
        return self._inner._tensors

    def standardize(self, X, out=None):
        return self._inner.standardize(self.encode(X), out=out)

    def standardize_tensor(self, X):
        rows = X.detach().cpu().numpy()
        import torch

        return torch.from_numpy(self.standardize(rows)).to(X.device)

    def mask(self, X_scaled, masks, *, append_mask=False):
        return self._inner.mask(X_scaled, masks, append_mask=append_mask)

    def _tensor(self, name, like, dtype=None):
        return self._inner._tensor(name, like, dtype)

    def expand(self, group_masks):
        return self._inner.expand(group_masks)

    # -- the model's side: codes, one per column ----------------------------------------------

    def expand_raw(self, group_masks):
        if self.column_groups_ is None:
            return group_masks
        return group_masks[..., self.column_groups_]

    def reduce_raw(self, values):
        if self.column_groups_ is None:
            return values
        return values[..., np.unique(self.column_groups_, return_index=True)[1]]

    def scaled_masks(self, masks):
        return self.expand(self.reduce_raw(np.asarray(masks)))

    @property
    def raw_grouped(self):
        return self.column_groups_ is not None

    @property
    def n_encoded_features(self):
        return len(self._column_of)

    def state_dict(self):
        """The fitted state: the codec's (JSON-ready), the encoding's plan, the fill codes
        (``baseline_``) and the inner masker's arrays over the encoded features."""
        state = {"codec": self.codec.state_dict(), "slots": self._slots,
                 "baseline_": self.baseline_, "n_groups_": self.n_groups_,
                 **{f"encoded.{name}": value for name, value in self._inner.state_dict().items()}}
        if self.column_groups_ is not None:
            state["column_groups_"] = self.column_groups_
        return state

    @classmethod
    def from_state(cls, state):
        """A fitted masker of the :meth:`state_dict` ``state``."""
        masker = cls(TableCodec.from_state(state["codec"]), state.get("column_groups_"))
        masker.column_groups_ = state.get("column_groups_")
        masker.n_groups_ = int(state["n_groups_"])
        masker.baseline_ = np.asarray(state["baseline_"], dtype=np.float64)
        masker._slots = [dict(slots) for slots in state["slots"]]
        masker._set_plan()
        inner = {name.split(".", 1)[1]: value for name, value in state.items()
                 if name.startswith("encoded.")}
        masker._inner = Masker.from_state(inner, baseline=inner["baseline_"])
        masker.groups_ = masker._inner.groups_
        return masker

    def __getstate__(self):
        return self.__dict__.copy()


def _width(slots):
    """Encoded features of a column: its value (or its frequent values and the pooled
    other), and the indicator of its empty cells when ``fit`` saw some."""
    return (slots["levels"] + 1 if "levels" in slots else 1) + bool(slots["missing"])


def _encoded_names(codec, all_slots):
    names = []
    for j, slots in enumerate(all_slots):
        name = str(codec.columns_[j])
        if "levels" in slots:
            names += [f"{name}={_short(v)}" for v in codec.values_[j][: slots["levels"]]]
            names.append(f"{name}=<other>")
        else:
            names.append(name)
        if slots["missing"]:
            names.append(f"{name} (empty)")
    return names


def _key(value):
    return (type(value).__name__, str(value))


def _plain(value):
    """A value as a plain Python object (numpy scalars made Python ones)."""
    return value.item() if isinstance(value, np.generic) else value


def _json_value(value):
    value = _plain(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _short(value, width=40):
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        text = str(int(value))
    elif isinstance(value, float):
        text = f"{value:.4g}"
    else:
        text = str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _listed(names, limit=5):
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")
