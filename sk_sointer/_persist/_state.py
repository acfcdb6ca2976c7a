"""The estimator's state in a file: the masker's and the output spec's (each written and
read through its own ``state_dict`` / ``from_state``) and the networks', rebuilt by the
estimator's own code before the stored weights are copied in."""

import numpy as np
import torch

from .._masking import Masker
from .._table import TABLE_KINDS, TableMasker, _width as _table_width
from .._outputs import OutputSpec
from .._utils import seeded
from .._estimator import Problem
from ._checks import _TABLE_JSON, _array, _check_tensors, _int, _is_int
from ._values import _decode, _encode


def _masker_state(masker, tensors):
    state = masker.state_dict()
    doc = {"n_groups_": int(state.pop("n_groups_"))}
    for name in _TABLE_JSON:
        if name in state:
            doc[name] = state.pop(name)
    for name, value in state.items():
        tensors[f"masker_.{name}"] = torch.from_numpy(np.array(value))
    return doc


def _load_masker(estimator, state, tensors):
    if not isinstance(state, dict) or not _is_int(state.get("n_groups_")):
        raise ValueError("The file's masker state should give n_groups_, an int.")
    if "codec" in state:
        return _load_table_masker(estimator, state, tensors)
    n_features, n_groups = estimator.n_features_in_, state["n_groups_"]
    if not 1 <= n_groups <= n_features:
        raise ValueError(f"The file's masker has n_groups_={n_groups} for "
                         f"n_features_in_={n_features} features.")
    fitted = {"n_groups_": n_groups}
    for name in Masker.FITTED_ARRAYS:
        fitted[name] = _array(tensors, f"masker_.{name}", (n_features,), "f")
    if estimator.groups is not None or estimator.patch_size is not None:
        groups = fitted["groups_"] = _array(tensors, "masker_.groups_", (n_features,), "i")
        # As fit numbers them: every group from 0 to n_groups_ - 1 has a feature.
        if len(np.unique(groups)) != n_groups or groups.min() != 0 or groups.max() != n_groups - 1:
            raise ValueError("The file's feature groups do not match its number of groups.")
    elif n_groups != n_features:
        raise ValueError(f"The file's masker has n_groups_={n_groups} without feature groups; "
                         f"expected n_features_in_={n_features}.")
    if "masker_.groups_" in tensors and "groups_" not in fitted:
        raise ValueError("The file holds feature groups that its parameters do not ask for.")
    return Masker.from_state(fitted, baseline=estimator.baseline, groups=estimator.groups,
                             tokens=estimator.tokens)


def _load_table_masker(estimator, state, tensors):
    """A table's masker (:class:`~sk_sointer._table.TableMasker`) from the file, its codec
    and plan checked against the fitted width and its tensors' shapes."""
    n_columns, n_groups = estimator.n_features_in_, state["n_groups_"]
    codec, slots = state.get("codec"), state.get("slots")
    try:
        columns, kinds, dtypes = codec["columns"], codec["kinds"], codec["dtypes"]
        values, counts, categories = codec["values"], codec["counts"], codec["categories"]
        parts = (columns, kinds, dtypes, values, counts, categories, slots)
        if not all(isinstance(part, list) and len(part) == n_columns for part in parts):
            raise ValueError(f"every part should list the {n_columns} columns")
        for j, kind in enumerate(kinds):
            if kind not in TABLE_KINDS or not isinstance(dtypes[j], str):
                raise ValueError(f"column {j} has kind {kind!r} and dtype {dtypes[j]!r}")
            plan = slots[j]
            if not isinstance(plan, dict) or not isinstance(plan.get("missing"), bool):
                raise ValueError(f"column {j}'s plan should say whether it has empty cells")
            listed = kind in ("category", "boolean")
            if listed != isinstance(values[j], list) or (listed and (
                    not isinstance(counts[j], list) or len(counts[j]) != len(values[j])
                    or not all(_is_int(c) and c > 0 for c in counts[j]))):
                raise ValueError(f"column {j}'s values and counts do not match its kind")
            if (kind == "category") != ("levels" in plan) or (
                    "levels" in plan and not (_is_int(plan["levels"])
                                              and 0 <= plan["levels"] <= len(values[j]))):
                raise ValueError(f"column {j}'s plan does not match its values")
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"The file's table masker is invalid ({exc}).") from None
    names = getattr(estimator, "feature_names_in_", None)
    if names is None or [str(n) for n in names] != [str(c) for c in columns]:
        raise ValueError("The file's table columns do not match its feature_names_in_.")
    if not 1 <= n_groups <= n_columns:
        raise ValueError(f"The file's masker has n_groups_={n_groups} for "
                         f"n_features_in_={n_columns} columns.")
    n_encoded = sum(_table_width(plan) for plan in slots)
    fitted = {"codec": codec, "slots": slots, "n_groups_": n_groups,
              "baseline_": _array(tensors, "masker_.baseline_", (n_columns,), "f",
                                  allow_nan=True)}
    for name in Masker.FITTED_ARRAYS:
        fitted[f"encoded.{name}"] = _array(tensors, f"masker_.encoded.{name}", (n_encoded,), "f")
    fitted["encoded.groups_"] = _array(tensors, "masker_.encoded.groups_", (n_encoded,), "i")
    fitted["encoded.n_groups_"] = n_groups
    if "masker_.column_groups_" in tensors:
        fitted["column_groups_"] = _array(tensors, "masker_.column_groups_", (n_columns,), "i")
    elif n_groups != n_columns:
        raise ValueError(f"The file's table masker has n_groups_={n_groups} without column "
                         f"groups; expected n_features_in_={n_columns}.")
    return TableMasker.from_state(fitted)


def _spec_state(spec, tensors):
    state = spec.state_dict()
    for name in ("center", "scale"):
        tensors[f"output_spec_.{name}"] = torch.from_numpy(
            np.array(state.pop(name), dtype=np.float64))
    state["classes"] = _encode(state["classes"], "the output spec's classes")
    return state


def _load_spec(state, tensors):
    if not isinstance(state, dict):
        raise ValueError("The file's output spec should be a JSON object.")
    try:
        kinds = tuple(str(kind) for kind in state["kinds"])
        blocks = tuple((_int(start), _int(stop)) for start, stop in state["blocks"])
        target = state["target"]
        classes = _decode(state["classes"], "output spec's classes")
        spec = OutputSpec(kinds, blocks, classes=classes, target=target)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"The file's output spec is invalid ({exc}).") from None
    # Blocks side by side from column 0, as fit makes them: the width is the tensors'.
    stops = [0, *(stop for _, stop in blocks)]
    if not blocks or any(start != stops[i] or stop <= start
                         for i, (start, stop) in enumerate(blocks)):
        raise ValueError(f"The file's output spec has invalid column blocks {list(blocks)}.")
    if target is not None and (not _is_int(target) or not 0 <= target < len(blocks)):
        raise ValueError(f"The file's output spec has an invalid target {target!r}.")
    if classes is not None and (
        not isinstance(classes, (list, tuple)) or len(classes) != len(blocks)
        or any(labels is not None and (not isinstance(labels, np.ndarray)
                                       or labels.shape != (stop - start,))
               for labels, (start, stop) in zip(classes, blocks))
    ):
        raise ValueError("The file's output spec has classes that do not match its outputs.")
    n_columns = spec.n_columns
    return OutputSpec.from_state({
        **spec.state_dict(),
        "center": _array(tensors, "output_spec_.center", (n_columns,), "f"),
        "scale": _array(tensors, "output_spec_.scale", (n_columns,), "f"),
    })


def _net_problem(estimator, state, header, path):
    """The problem and the selector's input width that the file's net was built for.

    The net is first built on torch's ``meta`` device, which gives every weight's shape
    without its storage, and compared with the file's header: parameters that would build
    a network the file's tensors do not fill are refused before any memory is taken."""
    if not isinstance(state, dict):
        raise ValueError("The file's net description should be a JSON object.")
    try:
        selector_in_features = _int(state["selector_in_features"])
        input_shape = tuple(_int(size) for size in state["input_shape"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"The file's net description is invalid ({exc}).") from None
    n_features = estimator.n_features_in_
    if input_shape != estimator.layout_.input_shape:
        raise ValueError(f"The file's net input shape {input_shape} does not match its rows "
                         f"of {n_features} features.")
    # What the networks read: the rows (a table's as the explainer encodes them), then any
    # columns a method adds (MEED: the model's outputs).
    n_inputs = estimator.masker_.n_encoded_features
    if not n_inputs <= selector_in_features <= n_inputs + estimator.output_spec_.n_columns:
        raise ValueError(f"The file's selector_in_features={selector_in_features} does not "
                         f"match its {n_inputs} features.")
    problem = Problem(estimator.layout_, estimator.masker_, estimator.output_spec_,
                      estimator.black_box_)
    meta = torch.device("meta")
    try:
        with torch.device(meta):
            estimator._rebuild_parts(problem, meta)
            shapes = _built_states(estimator, problem, selector_in_features, meta)
    except (RuntimeError, ValueError, TypeError, OverflowError, AttributeError) as exc:
        raise ValueError(f"The parameters in {path} do not build a {type(estimator).__name__} "
                         f"({type(exc).__name__}: {exc}).") from None
    _check_tensors(estimator, shapes, header, path)
    return problem, selector_in_features


def _load_net(estimator, problem, selector_in_features, tensors, device, path):
    """The estimator's net, built by its ``_build_net`` and holding the stored ``tensors``
    (all of the file's, read once :func:`_net_problem` has checked their shapes)."""
    for name, value in tensors.items():
        if value.is_floating_point() and not bool(torch.isfinite(value).all()):
            raise ValueError(f"The tensor {name!r} of {path} holds NaN or infinite values.")
    # The modules draw initial weights that the stored ones replace: the caller's torch
    # random state is left as it was. The seed and the sample count only configure training.
    with seeded(0, device) as seed:
        estimator._rebuild_parts(problem, device)
        net = _built_net(estimator, problem, selector_in_features, device, seed)
    for prefix, module in _stored_modules(estimator, net).items():
        weights = {key: tensors[f"{prefix}.{key}"] for key in module.state_dict()}
        module.load_state_dict(weights, strict=True)
    return net


def _stored_modules(estimator, net):
    """The torch modules a file stores, by the prefix of their tensors' names."""
    modules = {f"net_.{name}_": module for name, module in net.state_modules().items()}
    return {**modules, **estimator._fitted_parts()}


def _built_net(estimator, problem, selector_in_features, device, seed):
    net = estimator._build_net(
        problem,
        selector_in_features=selector_in_features,
        **estimator._net_params(device, seed, 0),
    )
    net.initialize()
    return net


def _built_states(estimator, problem, selector_in_features, device):
    """``{tensor name: (shape, dtype)}`` of the net the estimator builds on ``device``."""
    net = _built_net(estimator, problem, selector_in_features, device, 0)
    return {
        f"{prefix}.{key}": (tuple(value.shape), value.dtype)
        for prefix, module in _stored_modules(estimator, net).items()
        for key, value in module.state_dict().items()
    }
