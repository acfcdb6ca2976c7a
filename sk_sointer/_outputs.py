"""What a black box's outputs mean: a spec of output blocks, their losses and agreement.

A model has one or more *outputs*, each a block of columns of the ``(n_samples,
n_columns)`` output matrix, with a kind:

- ``"categorical"``: a probability vector over the classes of one output (softmax), the
  columns of an ordinary classifier's ``predict_proba``;
- ``"bernoulli"``: one column, the probability of one label of a multi-label model
  (sigmoid);
- ``"real"``: one column, one regression output.

The networks that judge a mask predict raw scores per column (logits, or standardised
values); :func:`output_loss` fits them to the black box's columns and
:func:`output_values` turns them back into the black box's scale. Regression columns are
standardised with statistics learnt from the training outputs (:meth:`OutputSpec.fitted`),
so that losses and learning rates do not depend on the units of the target.
"""

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.metrics import r2_score
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils.multiclass import type_of_target
from torch import nn

from ._utils import device_copies

KINDS = ("categorical", "bernoulli", "real")


class ColumnKinds(NamedTuple):
    """:attr:`OutputSpec.column_kinds`: the columns of each kind of output."""

    bernoulli: torch.Tensor
    real: torch.Tensor
    categorical: list


@dataclass(frozen=True)
class OutputSpec:
    """The outputs of a black box: one block of columns per output, each with a kind.

    Attributes
    ----------
    kinds : tuple of str
        Kind of every output: ``"categorical"``, ``"bernoulli"`` or ``"real"``.
    blocks : tuple of (int, int)
        Column range ``[start, stop)`` of every output.
    classes : tuple or None
        Per output, the labels behind a categorical block's columns when the outputs were
        given as class labels (else ``None``).
    target : int or None
        The output a method explains when it explains one output of several; ``None``:
        all outputs together.
    center, scale : ndarray of shape (n_columns,) or None
        Standardisation of the columns (mean and standard deviation of regression columns,
        0 and 1 elsewhere), set by :meth:`fitted`.
    """

    kinds: tuple
    blocks: tuple
    classes: tuple = field(default=None, compare=False)
    target: int = None
    center: np.ndarray = field(default=None, compare=False, repr=False)
    scale: np.ndarray = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if len(self.kinds) != len(self.blocks):
            raise ValueError("an OutputSpec needs one kind per block.")
        for kind, (start, stop) in zip(self.kinds, self.blocks):
            if kind not in KINDS:
                raise ValueError(f"output kinds are {KINDS}; got {kind!r}.")
            if kind != "categorical" and stop - start != 1:
                raise ValueError(f"a {kind} output has one column; got columns [{start}, {stop}).")

    def state_dict(self):
        """The spec as plain values and arrays: what :meth:`from_state` rebuilds it from."""
        return {"kinds": list(self.kinds), "blocks": [list(block) for block in self.blocks],
                "classes": self.classes, "target": self.target, "center": self.center,
                "scale": self.scale}

    @classmethod
    def from_state(cls, state):
        """The spec of :meth:`state_dict`."""
        return cls(tuple(state["kinds"]), tuple(tuple(block) for block in state["blocks"]),
                   classes=state["classes"], target=state["target"], center=state["center"],
                   scale=state["scale"])

    @property
    def n_outputs(self):
        """Number of outputs (blocks)."""
        return len(self.blocks)

    @property
    def n_columns(self):
        """Width of the output matrix."""
        return self.blocks[-1][1] if self.blocks else 0

    @property
    def task(self):
        """``"classification"``, ``"regression"`` or ``"mixed"`` (both kinds of output)."""
        real = ["real" == kind for kind in self.kinds]
        if not any(real):
            return "classification"
        return "regression" if all(real) else "mixed"

    @cached_property
    def column_kinds(self):
        """Where each kind of output lies in the output matrix, for losses over all outputs.

        A :class:`ColumnKinds`: ``bernoulli`` and ``real``, the column indices of those
        outputs (long tensors), and ``categorical``, the ``(start, stop)`` block of every
        categorical output."""
        columns = {kind: [] for kind in KINDS}
        for kind, (start, stop) in zip(self.kinds, self.blocks):
            columns[kind].append((start, stop) if kind == "categorical" else start)
        return ColumnKinds(
            torch.as_tensor(columns["bernoulli"], dtype=torch.long),
            torch.as_tensor(columns["real"], dtype=torch.long),
            columns["categorical"],
        )

    def kind_columns(self, device):
        """:attr:`column_kinds` with its index tensors on ``device``, copied there once."""
        cache = device_copies(self)
        if device not in cache:
            bernoulli, real, categorical = self.column_kinds
            cache[device] = ColumnKinds(bernoulli.to(device), real.to(device), categorical)
        return cache[device]

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_on_device", None)  # device copies are rebuilt where the spec loads
        return state

    @property
    def n_states(self):
        """Number of values of every discrete output (classes; 2 for a Bernoulli output).

        Raises ``ValueError`` when an output is real-valued."""
        if "real" in self.kinds:
            raise ValueError(
                "the black box has real-valued outputs; only discrete outputs (classes, "
                "labels) have states."
            )
        return tuple(
            stop - start if kind == "categorical" else 2
            for kind, (start, stop) in zip(self.kinds, self.blocks)
        )

    def labels(self, outputs):
        """The value of every discrete output, from output columns (probabilities):
        ``(n_samples, n_outputs)`` int64 codes, the argmax of a categorical block (the
        column index within the block) and ``p > 0.5`` for a Bernoulli output."""
        outputs = np.asarray(outputs)
        self.n_states  # noqa: B018 - refuses real-valued outputs
        codes = np.empty((outputs.shape[0], self.n_outputs), dtype=np.int64)
        for i, (kind, (start, stop)) in enumerate(zip(self.kinds, self.blocks)):
            if kind == "categorical":
                codes[:, i] = outputs[:, start:stop].argmax(axis=1)
            else:
                codes[:, i] = outputs[:, start] > 0.5
        return codes

    def state_probabilities(self, outputs):
        """Every discrete output's distribution over its values, side by side: ``(n_samples,
        sum(n_states))`` float32 (a Bernoulli column ``p`` becomes ``[1 - p, p]``)."""
        outputs = np.asarray(outputs, dtype=np.float32)
        self.n_states  # noqa: B018 - refuses real-valued outputs
        blocks = []
        for kind, (start, stop) in zip(self.kinds, self.blocks):
            block = outputs[:, start:stop]
            blocks.append(block if kind == "categorical" else np.hstack([1 - block, block]))
        return np.hstack(blocks)

    def state_columns(self, states):
        """Back from per-output distributions over values (one ``(B, n_states[i])`` tensor
        per output, as :meth:`state_probabilities` lays them out) to the model's columns:
        a Bernoulli output keeps the probability of 1."""
        return torch.cat([block[:, 1:] if kind == "bernoulli" else block
                          for kind, block in zip(self.kinds, states)], dim=1)

    def select(self, target):
        """The same spec with ``target`` as the output to explain (validated)."""
        if target is None:
            return replace(self, target=None)
        if isinstance(target, bool) or not isinstance(target, (int, np.integer)):
            raise ValueError(f"target should be an int (the index of an output); got {target!r}.")
        if not -self.n_outputs <= target < self.n_outputs:
            raise ValueError(
                f"target should be in [0, n_outputs - 1] = [0, {self.n_outputs - 1}] for a black "
                f"box with {self.n_outputs} outputs; got {target}."
            )
        return replace(self, target=int(target) % self.n_outputs)

    def fitted(self, targets):
        """The same spec with the standardisation of its real columns learnt on ``targets``."""
        targets = np.asarray(targets, dtype=np.float64)
        center = np.zeros(self.n_columns)
        scale = np.ones(self.n_columns)
        real = self.column_kinds.real.numpy()
        if real.size:
            center[real] = targets[:, real].mean(axis=0)
            spread = targets[:, real].std(axis=0)
            scale[real] = np.where(spread > 0, spread, 1.0)
        return replace(self, center=center, scale=scale)

    def standardize(self, targets):
        """Targets as the losses see them: regression columns standardised, float32."""
        targets = np.asarray(targets, dtype=np.float64)
        if self.center is None:
            return targets.astype(np.float32)
        return ((targets - self.center) / self.scale).astype(np.float32)

    def encode(self, y, n_samples):
        """Outputs ``y`` given at score time, encoded as at fit time.

        ``y`` holds either the output columns themselves (probabilities or values, width
        ``n_columns``) or one label or value per output (width ``n_outputs``, 1-D for one
        output); labels are one-hot encoded with the classes seen in ``fit``, never with
        the classes present in ``y``, so that a subset with one class scores correctly.
        """
        y_arr = np.asarray(y)
        if y_arr.ndim == 2 and y_arr.shape[1] == 1:
            y_arr = y_arr[:, 0]
        _check_length(y_arr, n_samples)
        y_2d = y_arr[:, None] if y_arr.ndim == 1 else y_arr
        if y_2d.shape[1] == self.n_columns:
            return _numeric(y_2d)
        if y_2d.shape[1] == self.n_outputs:
            classes = self.classes or (None,) * self.n_outputs
            return np.hstack([
                _encode_column(y_2d[:, i], kind, stop - start, classes[i])
                for i, (kind, (start, stop)) in enumerate(zip(self.kinds, self.blocks))
            ])
        raise ValueError(
            f"The outputs y have {y_2d.shape[1]} columns, but the explainer was fitted on "
            f"{self.n_columns} output columns ({self.n_outputs} outputs)."
        )


def _check_length(y_arr, n_samples):
    if y_arr.ndim == 0 or y_arr.ndim > 2:
        raise ValueError(
            f"The outputs y should be 1-D or 2-D with one row per sample; got shape {y_arr.shape}."
        )
    if y_arr.shape[0] != n_samples:
        raise ValueError(
            f"The outputs y have {y_arr.shape[0]} rows but X has {n_samples} samples; give the "
            "black box's outputs on exactly these rows."
        )
    if y_arr.ndim == 2 and y_arr.shape[1] == 0:
        raise ValueError(
            f"The outputs y have no columns (shape {y_arr.shape}); there is nothing to "
            "explain: give the black box's outputs, one column or more."
        )


def _numeric(y_arr):
    try:
        values = y_arr.astype(np.float32)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"The outputs y should be numeric or class labels; got dtype {y_arr.dtype}."
        ) from exc
    if not np.isfinite(values).all():
        raise ValueError("The outputs y contain NaN or infinity (or values too large for float32).")
    return values


def _encode_column(column, kind, width, classes):
    if kind != "categorical":
        return _numeric(column)[:, None]
    if classes is None:
        # A model's columns without known labels: labels must be column indices.
        classes = np.arange(width)
    unknown = np.setdiff1d(column, classes)
    if unknown.size:
        raise ValueError(f"The outputs y contain labels {unknown[:5]} unseen during fit.")
    return (column[:, None] == np.asarray(classes)[None, :]).astype(np.float32)


def check_outputs(y, n_samples, spec=None):
    """Validate outputs given instead of a model; return float32 columns and their spec.

    - 1-D (or one column) class labels, binary or multiclass: one categorical output, one-hot
      encoded; continuous values: one real output.
    - 2-D rows that are probability vectors (non-negative, summing to one): one categorical
      output.
    - 2-D 0/1 indicators (a multi-label target): one Bernoulli output per column.
    - 2-D class labels (a multi-output classifier's ``predict``): one categorical output per
      column, one-hot encoded.
    - anything else numeric: one real output per column.

    With ``spec`` (the spec seen at fit time) the outputs are encoded the same way.
    """
    if spec is not None:
        return spec.encode(y, n_samples), spec
    y_arr = np.asarray(y)
    if y_arr.ndim == 2 and y_arr.shape[1] == 1:
        y_arr = y_arr[:, 0]  # a column of labels is labels, not a regression target
    _check_length(y_arr, n_samples)
    if y_arr.dtype.kind in "fc":
        _numeric(y_arr)
    with np.errstate(invalid="ignore"):  # its integer test casts values beyond int64
        target_type = type_of_target(y_arr) if y_arr.dtype.kind in "biufOUS" else "unknown"
    if y_arr.ndim == 1:
        if target_type in ("binary", "multiclass"):
            onehot, classes = _one_hot(y_arr)
            return onehot, spec_of(["categorical"], [onehot.shape[1]], classes=(classes,))
        return _numeric(y_arr)[:, None], spec_of(["real"], [1])
    if target_type == "multiclass-multioutput" or (
        # scikit-learn calls any two-valued label matrix an indicator; only 0/1 columns
        # are one label each, other pairs of labels ({1, 2}, strings) are classes.
        target_type == "multilabel-indicator" and not _is_zero_one(y_arr)
    ):
        encoded = [_one_hot(column) for column in y_arr.T]
        return (
            np.hstack([onehot for onehot, _ in encoded]),
            spec_of(["categorical"] * len(encoded), [onehot.shape[1] for onehot, _ in encoded],
                    classes=tuple(classes for _, classes in encoded)),
        )
    values = _numeric(y_arr)
    if looks_like_proba(values):
        return values, spec_of(["categorical"], [values.shape[1]])
    if target_type == "multilabel-indicator":
        return values, spec_of(["bernoulli"] * values.shape[1], [1] * values.shape[1])
    return values, spec_of(["real"] * values.shape[1], [1] * values.shape[1])


def _is_zero_one(y_arr):
    return y_arr.dtype.kind in "biuf" and bool(np.isin(y_arr, (0, 1)).all())


def _one_hot(column):
    binarizer = LabelBinarizer().fit(column)
    if len(binarizer.classes_) < 2:
        raise ValueError(
            f"The outputs y hold a single class ({binarizer.classes_[0].item()!r}): there is "
            "nothing to explain when the black box gives every row the same answer. Pass the "
            "model (or its class probabilities) instead of its labels."
        )
    onehot = binarizer.transform(column).astype(np.float32)
    if onehot.shape[1] == 1:
        onehot = np.hstack([1.0 - onehot, onehot])
    return onehot, binarizer.classes_


def spec_of(kinds, widths, *, classes=None):
    """An :class:`OutputSpec` from the kind and the width of every output, in order."""
    stops = np.cumsum(widths)
    blocks = tuple((int(stop - width), int(stop)) for width, stop in zip(widths, stops))
    return OutputSpec(tuple(kinds), blocks, classes=classes)


# How far from one a probability row of float32 (or wider) outputs may sum.
PROBA_ATOL = 1e-3


def looks_like_proba(values, atol=PROBA_ATOL):
    """Whether every row of a 2-D array (2 columns or more) is a probability vector: in
    [0, 1], summing to one within ``atol``."""
    values = np.asarray(values)
    return bool(
        values.ndim == 2
        and values.shape[1] > 1
        and values.min() >= 0
        and values.max() <= 1
        and np.allclose(values.sum(axis=1), 1.0, rtol=0.0, atol=atol)
    )


# Losses and values of the networks that predict the black box
# -------------------------------------------------------------


def output_loss(predicted, target, spec, reduction="mean"):
    """Loss of a network's raw outputs against the black box's (standardised) columns.

    Summed over outputs, per row: the soft-target cross-entropy
    ``-sum_c P_m(c | x) log q(c | ·)`` of a categorical output (L2X eq. 6), the binary
    cross-entropy of a Bernoulli output, and the squared error of a real output (on
    standardised values).
    """
    bernoulli, real, categorical = spec.kind_columns(predicted.device)
    per_row = predicted.new_zeros(predicted.shape[0])
    for start, stop in categorical:
        per_row = per_row - (target[:, start:stop] * F.log_softmax(predicted[:, start:stop], 1)).sum(1)
    # Columns are taken with index_select, never ``predicted[:, index]``: the gradient of
    # that indexing accumulates with index_put, whose CUDA kernel (a sort of the indices)
    # is not safe to capture in a CUDA graph; index_select's gradient adds with atomics.
    if bernoulli.numel():
        per_row = per_row + F.binary_cross_entropy_with_logits(
            predicted.index_select(1, bernoulli), target.index_select(1, bernoulli),
            reduction="none").sum(1)
    if real.numel():
        per_row = per_row + ((predicted.index_select(1, real)
                              - target.index_select(1, real)) ** 2).sum(1)
    return per_row.mean() if reduction == "mean" else per_row


def output_values(predicted, spec):
    """A network's raw outputs in the black box's scale: probabilities, or values in the
    target's own units."""
    bernoulli, real, categorical = spec.kind_columns(predicted.device)
    values = predicted.clone()
    for start, stop in categorical:
        values[:, start:stop] = torch.softmax(predicted[:, start:stop], dim=1)
    if bernoulli.numel():
        values.index_copy_(1, bernoulli, torch.sigmoid(predicted.index_select(1, bernoulli)))
    if real.numel() and spec.center is not None:
        cache, key = device_copies(spec), ("units", values.device, values.dtype)
        if key not in cache:  # copied once: a copy at every call waits for the device
            on_host = spec.column_kinds.real.numpy()
            cache[key] = tuple(torch.as_tensor(array[on_host], dtype=values.dtype,
                                               device=values.device)
                               for array in (spec.center, spec.scale))
        center, scale = cache[key]
        values.index_copy_(1, real, predicted.index_select(1, real) * scale + center)
    return values


class OutputLoss(nn.Module):
    """:func:`output_loss` as a criterion module, the form skorch expects."""

    def __init__(self, spec):
        super().__init__()
        self.spec = spec

    def forward(self, predicted, target):
        return output_loss(predicted, target, self.spec)


def kept_share(kept, answers, by_answer=False):
    """The share of rows whose answer is ``kept`` (booleans, one per row), or with
    ``by_answer`` its mean over the ``answers`` given (one per row): each answer's rows
    weigh alike, as in balanced accuracy."""
    kept = np.asarray(kept, dtype=np.float64)
    if not by_answer or len(kept) == 0:
        return float(kept.mean()) if len(kept) else np.nan
    _, index = np.unique(np.asarray(answers), return_inverse=True)
    index = index.ravel()
    return float(np.mean(np.bincount(index, weights=kept) / np.bincount(index)))


def output_agreement(reference, other, spec, *, multioutput="uniform_average",
                     by_answer=False):
    """How well ``other`` outputs agree with ``reference`` outputs, per output: higher is better.

    A categorical output scores the fraction of rows with the same class (argmax), a
    Bernoulli output the fraction on the same side of 0.5, a real output the R² of
    ``other`` against ``reference``.

    Parameters
    ----------
    reference, other : array-like of shape (n_samples, n_columns)
    spec : OutputSpec
    multioutput : {"uniform_average", "raw_values"}, default="uniform_average"
        Average over the outputs, or one score per output.
    by_answer : bool, default=False
        A discrete output scores the mean, over the answers of ``reference``, of the
        fraction of their rows with the same answer (:func:`kept_share`).
    """
    reference = np.asarray(reference, dtype=np.float64)
    other = np.asarray(other, dtype=np.float64)
    scores = []
    for kind, (start, stop) in zip(spec.kinds, spec.blocks):
        ref, oth = reference[:, start:stop], other[:, start:stop]
        if kind == "categorical":
            answers = ref.argmax(axis=1)
            scores.append(kept_share(answers == oth.argmax(axis=1), answers, by_answer))
        elif kind == "bernoulli":
            answers = ref[:, 0] > 0.5
            scores.append(kept_share(answers == (oth[:, 0] > 0.5), answers, by_answer))
        else:
            scores.append(r2_score(ref[:, 0], oth[:, 0]))
    scores = np.asarray(scores, dtype=np.float64)
    if multioutput == "raw_values":
        return scores
    if multioutput != "uniform_average":
        raise ValueError(
            f"multioutput should be 'uniform_average' or 'raw_values'; got {multioutput!r}."
        )
    return float(scores.mean())
