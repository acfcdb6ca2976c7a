"""The masker: what "leaving a feature out" means, in the data's own units.

A masked feature is replaced by a *baseline* (the training mean by default), never by a raw
0, which in everyday units is an arbitrary and often impossible value (a blood pressure of
0). The same masker serves both sides of an explainer:

- the method's networks see *standardised* rows ``(x - mean) / scale``, in which a masked
  feature takes the standardised baseline (0 for the default mean baseline), so that what
  the networks learn does not depend on the units of ``X``;
- the black box, whenever it is queried on masked rows, sees ``s * x + (1 - s) * baseline``
  in the data's units.

It also maps *feature groups* (image patches, the one-hot columns of a category) to
features: selectors score groups, and a mask over groups is expanded to the features.
On the papers' N(0, 1) synthetic data, ``baseline="zero"`` is the papers' zero-filling and
the default ``"mean"`` differs from it by the sampling error of the mean.
"""

import numpy as np
import torch

# Values per chunk of the statistics' and of the float64 standardisation's passes: the
# float64 temporaries stay at 32 MB whatever the size of X.
_STATS_CHUNK = 1 << 22


class Masker:
    """Masking in the data's units, standardisation for the networks, feature groups.

    Parameters
    ----------
    baseline : {"mean", "zero"}, float or array-like of shape (n_features,), default="mean"
        Value of a left-out feature, in the data's units.
    groups : array-like of shape (n_features,), default=None
        One group id per feature; ``None`` makes every feature its own group.
    tokens : bool, default=False
        The features are token ids (0 the padding): the networks get them as they are (no
        standardisation, so that they can embed them) together with the mask, and mask in
        their embedding; a left-out token is the padding for the black box (the baseline
        is 0 whatever ``baseline`` says).

    Attributes
    ----------
    mean_, scale_ : ndarray of shape (n_features,)
        Standardisation learnt by :meth:`fit` (a constant feature gets scale 1).
    baseline_ : ndarray of shape (n_features,)
        The baseline in the data's units.
    baseline_scaled_ : ndarray of shape (n_features,), float32
        The baseline as the networks see it.
    groups_ : ndarray of shape (n_features,) or None
        Index (0 .. n_groups_ - 1) of each feature's group, in the order of first appearance.
    n_groups_ : int
        Number of groups: the width of a selector's output.
    """

    def __init__(self, baseline="mean", groups=None, tokens=False):
        self.baseline = baseline
        self.groups = groups
        self.tokens = tokens

    def fit(self, X):
        """Learn the standardisation and resolve the baseline and the groups on ``X``."""
        X = np.asarray(X)
        n_features = X.shape[1]
        if self.tokens:
            mean, spread = np.zeros(n_features), np.ones(n_features)
        else:
            mean, spread = _column_mean_std(X)
        if not (np.isfinite(mean).all() and np.isfinite(spread).all()):
            raise ValueError(
                "X has values too large to standardise (their mean or spread overflows); "
                "rescale the features."
            )
        self.mean_ = mean
        # A constant feature's spread is rounding error of the mean (1e-15 for a column of
        # 0.1s), not a scale: dividing by it would blow any other value up to ~1e15.
        constant = spread <= X.shape[0] * np.finfo(np.float64).eps * np.abs(mean)
        self.scale_ = np.where((spread > 0) & ~constant, spread, 1.0)
        self.baseline_ = self._resolve_baseline(n_features)
        with np.errstate(over="ignore"):
            scaled = (self.baseline_ - self.mean_) / self.scale_
            self.baseline_scaled_ = scaled.astype(np.float32)
        if not np.isfinite(self.baseline_scaled_).all():
            raise ValueError("baseline is too far from the data to be standardised in float32.")
        self.groups_, self.n_groups_ = self._resolve_groups(n_features)
        self._tensors = {}
        return self

    # The fitted state: the per-feature arrays, the groups and their number.
    FITTED_ARRAYS = ("mean_", "scale_", "baseline_", "baseline_scaled_")

    def state_dict(self):
        """The fitted state: ``mean_``, ``scale_``, ``baseline_`` and ``baseline_scaled_``
        (arrays of shape ``(n_features,)``), ``n_groups_``, and ``groups_`` with groups."""
        state = {name: getattr(self, name) for name in self.FITTED_ARRAYS}
        state["n_groups_"] = self.n_groups_
        if self.groups_ is not None:
            state["groups_"] = self.groups_
        return state

    @classmethod
    def from_state(cls, state, *, baseline="mean", groups=None, tokens=False):
        """A fitted masker with the parameters given and the fitted ``state`` of
        :meth:`state_dict` (``groups`` default to the state's, as patches are)."""
        groups_ = state.get("groups_")
        masker = cls(baseline, groups_ if groups is None else groups, tokens=tokens)
        for name in cls.FITTED_ARRAYS:
            setattr(masker, name, state[name])
        masker.groups_, masker.n_groups_ = groups_, state["n_groups_"]
        masker._tensors = {}
        return masker

    def _resolve_baseline(self, n_features):
        baseline = self.baseline
        if self.tokens:
            return np.zeros(n_features)  # the padding id
        if isinstance(baseline, str):
            if baseline == "mean":
                return self.mean_.copy()
            if baseline == "zero":
                return np.zeros(n_features)
            raise ValueError(f"baseline should be 'mean', 'zero', a number or an array; got {baseline!r}.")
        if baseline is None or isinstance(baseline, (bool, np.bool_)):
            raise ValueError(
                f"baseline should be 'mean', 'zero', a number or an array; got {baseline!r}."
            )
        try:
            values = np.asarray(baseline, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(
                f"baseline should be 'mean', 'zero', a number or an array of numbers; got "
                f"{baseline!r}."
            ) from None
        if values.ndim == 0:
            values = np.full(n_features, float(values))
        elif values.shape != (n_features,):
            raise ValueError(
                f"baseline should have one value per feature, shape ({n_features},); got "
                f"shape {values.shape}."
            )
        if not np.isfinite(values).all():
            raise ValueError("baseline contains NaN or infinity.")
        return values

    def _resolve_groups(self, n_features):
        if self.groups is None:
            return None, n_features
        groups = np.asarray(self.groups)
        if groups.shape != (n_features,):
            raise ValueError(
                f"groups should give one group id per feature, shape ({n_features},); got shape "
                f"{groups.shape}."
            )
        if groups.dtype.kind == "f" and not np.isfinite(groups).all():
            raise ValueError("groups contains NaN or infinity.")
        try:
            _, first, index = np.unique(groups, return_index=True, return_inverse=True)
        except TypeError:
            raise ValueError(
                "groups should hold ids of one comparable type (all numbers or all strings)."
            ) from None
        # Number groups in the order in which they first appear, not in sorted order.
        rank = np.empty(len(first), dtype=np.int64)
        rank[np.argsort(first, kind="stable")] = np.arange(len(first))
        return rank[index.ravel()], len(first)

    # -- the networks' side ------------------------------------------------------------

    def standardize(self, X, out=None):
        """Rows as the networks see them: ``(x - mean) / scale``, float32, computed in float64
        when float32 arithmetic would overflow on the way.

        ``out`` (float32, the shape of ``X``) receives the rows and is returned; by default
        a new array. Float32 rows are standardised in place in ``out``; float64 (and other)
        rows go through float64 temporaries of :data:`_STATS_CHUNK` values at most, never a
        float64 copy of ``X``.
        """
        X = np.asarray(X)
        if out is None:
            out = np.empty(X.shape, dtype=np.float32)
        step, buffer = _chunk_rows(X), None
        for start in range(0, max(X.shape[0], 1), step):
            buffer = self._standardize_chunk(X[start : start + step], out[start : start + step],
                                             buffer)
        return out

    def _standardize_chunk(self, X, out, buffer):
        """Standardise ``X`` into ``out``; returns the float64 buffer of the detour (None
        until one is needed) for the next chunk to reuse."""
        if X.dtype == np.float32:
            # This runs on every explained row: float32 arithmetic is twice as fast, and
            # only rows near float32's limit need the float64 detour below.
            with np.errstate(over="ignore", invalid="ignore"):
                np.subtract(X, self._float32("mean_"), out=out)
                np.divide(out, self._float32("scale_"), out=out)
            if _all_finite(out):
                return buffer
        if buffer is None or len(buffer) < len(X):
            buffer = np.empty(X.shape, dtype=np.float64)
        with np.errstate(over="ignore"):
            scaled = np.subtract(X, self.mean_, out=buffer[: len(X)])
            np.divide(scaled, self.scale_, out=scaled)
            np.copyto(out, scaled, casting="same_kind")
        if not _all_finite(out):
            raise ValueError(
                "X has values so far from the training data that they overflow float32 once "
                "standardised."
            )
        return buffer

    def standardize_tensor(self, X):
        """:meth:`standardize` of a tensor of rows, on its device: the same float32 values,
        computed in float32 for float32 rows and in float64 for others. Rows that overflow
        float32 on the way come out non-finite; the caller checks (the host's
        :meth:`standardize` takes the float64 detour for them)."""
        work = torch.float32 if X.dtype == torch.float32 else torch.float64
        mean = self._tensor("mean_", X, dtype=work)
        scale = self._tensor("scale_", X, dtype=work)
        return ((X.to(work) - mean) / scale).to(torch.float32)

    def _float32(self, name):
        key = (name, "float32")
        if key not in self._tensors:
            self._tensors[key] = getattr(self, name).astype(np.float32)
        return self._tensors[key]

    def mask(self, X_scaled, masks, *, append_mask=False):
        """``s * x + (1 - s) * b`` on standardised rows (a tensor); with ``append_mask`` the
        mask follows as extra columns, so that a left-out feature is told apart from a
        feature that happens to equal the baseline."""
        masks = masks.to(X_scaled.dtype)
        if self.tokens:
            # Token ids stay whole (a relaxed mask would make fractional ids): the networks
            # get the ids and the mask, and multiply the ids' embeddings by the mask.
            return torch.cat([X_scaled, masks], dim=1)
        baseline = self._tensor("baseline_scaled_", X_scaled)
        masked = baseline + masks * (X_scaled - baseline)
        return torch.cat([masked, masks], dim=1) if append_mask else masked

    def _tensor(self, name, like, dtype=None):
        """The fitted array ``name`` as a tensor on ``like``'s device, of ``dtype`` (default
        ``like``'s), made once."""
        dtype = like.dtype if dtype is None else dtype
        key = (name, like.device, dtype)
        if key not in self._tensors:
            values = getattr(self, name)
            if dtype == torch.float32 and name in ("mean_", "scale_"):
                values = self._float32(name)  # rounded as the host's standardisation does
            self._tensors[key] = torch.as_tensor(values, dtype=dtype, device=like.device)
        return self._tensors[key]

    # -- the black box's side ----------------------------------------------------------

    def mask_raw(self, X, masks, fill=None):
        """``s * x + (1 - s) * baseline`` in the data's units (ndarray, the dtype of ``X``);
        ``fill`` (an array broadcastable to ``X``, such as other rows) takes the baseline's
        place."""
        X = np.asarray(X)
        masks = np.asarray(masks, dtype=bool)
        if fill is None:
            fill = self.baseline_
        return np.where(masks, X, np.asarray(fill).astype(X.dtype, copy=False))

    # -- groups ------------------------------------------------------------------------

    def expand_raw(self, group_masks):
        """Masks (or scores) over the features of rows in their own units (those
        :meth:`mask_raw` and the model take) from group-level ones. The features the
        networks see are those of :meth:`expand`; here they are the same (a table's masker,
        :class:`~sk_sointer._table.TableMasker`, has one raw feature per column)."""
        return self.expand(group_masks)

    def reduce_raw(self, values):
        """Group-level values from raw-feature-level ones (every feature carrying its
        group's value): each group's value read at its first feature."""
        if self.groups_ is None:
            return values
        return values[..., np.unique(self.groups_, return_index=True)[1]]

    def scaled_masks(self, masks):
        """Masks over the features the networks see from masks over the raw features."""
        return masks

    @property
    def raw_grouped(self):
        """Whether a group holds several raw features (or features out of order)."""
        return self.groups_ is not None

    @property
    def n_encoded_features(self):
        """Width of the rows the networks see (before any column a method adds)."""
        return len(self.mean_)

    def expand(self, group_masks):
        """Feature-level masks (or scores) from group-level ones (tensor or ndarray)."""
        if self.groups_ is None:
            return group_masks
        if isinstance(group_masks, torch.Tensor):
            index = self._tensor("groups_", torch.empty((), dtype=torch.long, device=group_masks.device))
            return group_masks.index_select(-1, index)
        return group_masks[..., self.groups_]

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_tensors"] = {}  # device copies are rebuilt where the masker is loaded
        return state


def _chunk_rows(X):
    """Rows per chunk of :data:`_STATS_CHUNK` values (at least one row)."""
    return max(1, _STATS_CHUNK // max(int(np.prod(X.shape[1:])), 1))


def _column_mean_std(X):
    """Per-column mean and standard deviation of ``X`` in float64, chunk by chunk.

    What ``X.mean(axis=0, dtype=np.float64)`` and ``X.std(axis=0, dtype=np.float64)``
    compute (the same operations, and the same values on an ``X`` of one chunk), without
    their float64 copy of ``X``: the sums are float64 accumulators over row chunks, the
    deviations from the mean are squared one chunk at a time.
    """
    n_rows, step = X.shape[0], _chunk_rows(X)
    chunks = [X[start : start + step] for start in range(0, n_rows, step)]
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.zeros(X.shape[1:], dtype=np.float64)
        for chunk in chunks:
            total += np.add.reduce(chunk, axis=0, dtype=np.float64)
        mean = total / n_rows
        squares = np.zeros(X.shape[1:], dtype=np.float64)
        # One float64 buffer for every chunk: a fresh one per chunk would be mapped (and
        # page-faulted) anew each time.
        buffer = np.empty((min(step, n_rows),) + X.shape[1:], dtype=np.float64)
        for chunk in chunks:
            deviation = np.subtract(chunk, mean, out=buffer[: len(chunk)])
            np.multiply(deviation, deviation, out=deviation)
            squares += np.add.reduce(deviation, axis=0)
        spread = np.sqrt(squares / n_rows)
    return mean, spread


def _all_finite(values):
    """Whether every value is finite, from one sum (no temporary array): a NaN or an
    infinity makes the sum non-finite; only a sum of finite values that overflows needs the
    exact check."""
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.add.reduce(values, axis=None)):
            return True
    return bool(np.isfinite(values).all())
