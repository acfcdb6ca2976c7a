"""Reasons for a decision: a row's kept columns, ranked by what each does to the model's
answer, with the row's own value of each.

A mask says which columns the model needs to keep its answer on a row; it does not say
which of them weighs most, nor which way each pushed. With the model at hand, a kept
column's *effect* is how much the model's answer moves when that column alone is left out
of the row (at the explainer's fill, or averaged over its background rows): for a class,
the probability the model gives the row's answer on the row minus that probability with
the column left out (positive: the row's value pushed towards the answer); for a value,
the answer on the row minus the answer with the column left out (positive: the row's
value raised it). One query a kept column and one for the row.
"""

import numpy as np

from ._outputs import OutputSpec


def reasons_frame(explainer, X, codes, group_masks, scores, value):
    """The tidy frame of :meth:`BaseExplainer.reasons` (see there).

    ``codes`` are the validated rows, ``group_masks`` their masks over groups, ``scores``
    the selector's group scores, ``value`` the explainer's :class:`MaskedValue` or ``None``
    without a model."""
    import pandas as pd

    masker, spec = explainer.masker_, explainer.output_spec_
    n_rows = len(codes)
    kept = [np.flatnonzero(row) for row in group_masks]
    if value is not None:
        effects = _effects(value, masker, spec, codes, kept)
        by = "model"
    else:
        effects = [np.full(len(groups), np.nan) for groups in kept]
        by = "selector"
    names, cells = _group_names(explainer), _cell_texts(explainer, codes)
    labels = _row_labels(X, n_rows)
    records = []
    for i in range(n_rows):
        groups, effect = kept[i], effects[i]
        key = -np.abs(effect) if value is not None else -scores[i, groups]
        for rank, place in enumerate(np.argsort(key, kind="stable"), start=1):
            g = groups[place]
            records.append((labels[i], rank, names[g], cells[i][g], float(effect[place]),
                            _direction(effect[place], spec), by))
    return pd.DataFrame.from_records(
        records, columns=["row", "rank", "column", "value", "effect", "direction", "by"])


def _effects(value, masker, spec, codes, kept):
    """Per row, the effect of each kept group (see the module's docstring)."""
    n_groups = masker.n_groups_
    full = value.full(codes)
    answer = _answer_of(full, spec)
    rows = np.repeat(np.arange(len(kept)), [len(groups) for groups in kept])
    if not len(rows):
        return [np.zeros(0) for _ in kept]
    masks = np.ones((len(rows), n_groups), dtype=bool)
    masks[np.arange(len(rows)), np.concatenate(kept)] = False
    left_out = value.masked_groups(codes[rows], masks)
    moved = answer(full[rows], rows) - answer(left_out, rows)
    out, start = [], 0
    for groups in kept:
        out.append(moved[start : start + len(groups)])
        start += len(groups)
    return out


def _answer_of(full, spec):
    """``answer(outputs, rows)``: per row of ``outputs``, the model's measure of the answer
    it gives on row ``rows`` of ``full`` (the probability of that class, or the value),
    averaged over the outputs the explainer is judged on."""
    outputs = range(spec.n_outputs) if spec.target is None else [spec.target]
    classes = {}
    for i in outputs:
        kind, (start, stop) = spec.kinds[i], spec.blocks[i]
        if kind == "categorical":
            classes[i] = full[:, start:stop].argmax(axis=1)
        elif kind == "bernoulli":
            classes[i] = full[:, start] > 0.5

    def answer(values, rows):
        values = np.asarray(values, dtype=np.float64)
        total = np.zeros(len(values))
        for i in outputs:
            kind, (start, stop) = spec.kinds[i], spec.blocks[i]
            if kind == "categorical":
                total += values[np.arange(len(values)), start + classes[i][rows]]
            elif kind == "bernoulli":
                p = values[:, start]
                total += np.where(classes[i][rows], p, 1.0 - p)
            else:
                total += values[:, start]
        return total / len(outputs)

    return answer


def _direction(effect, spec: OutputSpec):
    if not np.isfinite(effect):
        return ""
    outputs = range(spec.n_outputs) if spec.target is None else [spec.target]
    discrete = all(spec.kinds[i] != "real" for i in outputs)
    if discrete:
        return "for" if effect > 0 else "against" if effect < 0 else "none"
    return "raises" if effect > 0 else "lowers" if effect < 0 else "none"


def _members(masker):
    """The raw features of every group, as index arrays."""
    eye = np.eye(masker.n_groups_, dtype=bool)
    return [np.flatnonzero(masker.expand_raw(eye[g])) for g in range(masker.n_groups_)]


def _group_names(explainer):
    """A name for every group: its column's (the features' names joined by "+" for a group
    of several)."""
    names = np.asarray(explainer.get_feature_names_out(), dtype=object)
    return ["+".join(str(n) for n in names[m]) for m in _members(explainer.masker_)]


def _cell_texts(explainer, codes):
    """Per row and group, the row's value of that group as the table holds it (a tuple of
    the values for a group of several features)."""
    masker = explainer.masker_
    codec = getattr(masker, "codec", None)
    cells = (codec.decode(codes).to_numpy(dtype=object) if codec is not None
             else np.asarray(codes, dtype=object))
    members = _members(masker)
    return [[_plain(row[m[0]]) if len(m) == 1 else tuple(_plain(v) for v in row[m])
             for m in members] for row in cells]


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    return value


def _row_labels(X, n_rows):
    index = getattr(X, "index", None)
    if index is not None and len(index) == n_rows:
        return list(index)
    return list(range(n_rows))
