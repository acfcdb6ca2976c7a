"""``inspect``: what a file written by :func:`sk_sointer.save` holds, read from its header.

Only the safetensors header (tensor names, shapes and dtypes) and the JSON document in its
metadata are read, by the same :func:`sk_sointer._persist.read_header` that ``load`` starts
with, and its fitted attributes are checked as ``load`` checks them: no estimator and
no torch module is built and no tensor data is read, so a file from anyone can be
looked at before it is loaded, and a file that ``load`` refuses is refused in its words.
"""

import json
import math

from ._common import _InputError, _defaults, _one_line

# Bytes per element of the safetensors dtypes (as the header names them).
_DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2,
                "I8": 1, "U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1,
                "F8_E4M3": 1, "F8_E5M2": 1}

# The stored parts, by the prefix of their tensors' names: a net's modules are
# ``net_.<name>_``, the selector being skorch's ``module``.
_PART_ROLES = {"net_.module_": "selector", "energy_net_.net_.module_": "energy network",
               "masker_": "masker (feature means, scales and baseline)",
               "output_spec_": "output standardisation"}

_SHOWN_NAMES = 5
_SHOWN_ITEMS = 8

_BLACK_BOX_NOTE = ("not stored (a file never holds one): pass the model to "
                   "sk_sointer.load(path, black_box=model), or MODEL to explain --explainer, "
                   "to score post-hoc fidelity")


def _run_inspect(args):
    summary = describe(args.file)
    # JSON escapes control characters (ensure_ascii) and has no NaN; the text escapes them.
    try:
        text = (json.dumps(_finite(summary), indent=2, allow_nan=False) if args.json
                else _text(summary))
    except _MALFORMED as exc:
        raise _malformed(summary["file"], exc) from None
    print(text)
    return 0


def _finite(value):
    """``value`` with every NaN or infinite float written as a string ("NaN", "Infinity",
    "-Infinity"), which JSON has no number for."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, list):
        return [_finite(item) for item in value]
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    return value


def printable(text):
    """``text`` with every character that is not printable (escape sequences, line breaks,
    bidirectional overrides) written as a Python escape, as ``repr`` writes them: text
    from a file must not move the cursor, retitle or clear a terminal, or forge lines."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def describe(path):
    """The summary of a saved estimator as a JSON-ready dict, from its header alone."""
    from .. import _persist
    from .._persist._checks import _checked_attributes
    from .._persist._values import _decode_object

    try:
        path, doc, header = _persist.read_header(path)
        cls = _persist._class_named(doc.get("class"))
        # The fitted attributes as load checks them, without building the estimator: what
        # load refuses there, inspect refuses in the same words.
        tokens = _decode_object(doc.get("params"), "parameters").get("tokens")
        _checked_attributes(doc, cls, tokens, header)
    except (OSError, ValueError, TypeError) as exc:
        raise _InputError(_one_line(str(exc))) from None
    try:
        return _summary(path, doc, header, cls)
    except _MALFORMED as exc:
        raise _malformed(path, exc) from None


# What a document that the checks above let through may still hold that the summary cannot
# read or write.
_MALFORMED = (TypeError, ValueError, KeyError, AttributeError, IndexError)


def _malformed(path, exc):
    return _InputError(f"cannot inspect {path!r}: its sk_sointer document is malformed "
                       f"({type(exc).__name__}: {_one_line(str(exc))}).")


def _summary(path, doc, header, cls):
    from .._version import __version__

    params = _object(doc.get("params"), "parameters")
    attributes = _object(doc.get("attributes"), "fitted attributes")
    written = doc.get("sk_sointer_version")
    non_default = _non_default(cls, params)
    masker = _object(doc.get("masker"), "masker state")
    return {
        "file": path,
        "format_version": doc["format_version"],
        "class": cls.__name__,
        "sk_sointer_version": written,
        "installed_version": __version__,
        "version_differs": written != __version__,
        "params": {name: _plain(value) for name, value in params.items()},
        "non_default_params": non_default,
        "selection": _selection(params, attributes, masker),
        "refinement": _refinement(params, attributes),
        "data": _data(params, attributes, masker),
        "outputs": _outputs(_object(doc.get("output_spec"), "output spec")),
        "other_attributes": {
            name: _plain(value) for name, value in attributes.items()
            if name not in ("k_", "selection_rate_", "n_features_in_", "feature_names_in_",
                            "row_shape_", "image_shape_", "n_tokens_", "n_model_queries_",
                            "refinement_fidelity_")
        },
        "black_box": {"stored": False, "note": _BLACK_BOX_NOTE},
        "tensors": _tensors(header, cls.__name__),
    }


def _object(value, where):
    if not isinstance(value, dict):
        raise TypeError(f"the {where} should be a JSON object")
    return value


def _non_default(cls, params):
    """Parameter names whose stored value differs from the class's default, read from the
    signature of ``__init__`` (nothing is built), in the file's order."""
    from .._persist import _encode

    defaults = _defaults(cls)
    names = []
    for name, value in params.items():
        try:
            same = name in defaults and _encode(defaults[name], name) == value
        except ValueError:
            same = False
        if not same:
            names.append(name)
    return names


def _plain(value):
    """A value as :func:`sk_sointer.save` encodes it, in plain JSON: tuples and arrays as
    lists, an optimizer class as its name; network factories stay ``{"factory", "params"}``.
    Nothing is built from it."""
    from .._persist import _decode_array

    if isinstance(value, list):
        return [_plain(item) for item in value]
    if not isinstance(value, dict):
        return value
    keys = set(value)
    if keys == {"tuple"}:
        return _plain(value["tuple"])
    if keys == {"dict"}:
        return {key: _plain(item) for key, item in _object(value["dict"], "dict").items()}
    if keys == {"ndarray", "dtype", "shape"}:
        return _decode_array(value, "arrays").tolist()
    if keys == {"factory", "params"}:
        return {"factory": value["factory"],
                "params": {key: _plain(item)
                           for key, item in _object(value["params"], "factory").items()}}
    if keys == {"optimizer"}:
        return value["optimizer"]
    if keys == {"random_state"}:
        return "RandomState(...)"
    return {key: _plain(item) for key, item in value.items()}


def _selection(params, attributes, masker):
    """The k that the loaded explainer's masks keep: the ``k`` parameter as it is now (what
    ``transform`` reads, ``set_params(k=...)`` after fit included, capped at the number of
    groups as ``transform`` caps it), and the k it was fitted with."""
    fitted = attributes.get("k_")
    k = params.get("k", fitted)
    n_groups = masker.get("n_groups_")
    if isinstance(k, int) and not isinstance(k, bool) and isinstance(n_groups, int):
        k = min(k, n_groups)
    selection = {"k": k, "fitted_k": fitted}
    if "selection_rate_" in attributes:
        selection["selection_rate"] = attributes["selection_rate_"]
    return selection


def _refinement(params, attributes):
    """Whether the selector was refined against the model, read from the fitted attributes
    (the ``refine`` parameter says only what was asked)."""
    if "refine" not in params:
        return None
    asked = _plain(params["refine"])
    queries = attributes.get("n_model_queries_")
    fidelity = _plain(attributes.get("refinement_fidelity_"))
    done = bool(queries) and fidelity is not None
    refinement = {"asked": asked, "done": done, "n_model_queries": queries,
                  "fidelity": fidelity}
    if done:
        refinement["note"] = (f"refined against the model with {queries:,} queries; the "
                              f"model kept its answer on {_share(fidelity[0])} of the judged "
                              f"rows before and {_share(max(fidelity))} after")
    elif asked is None:
        refinement["note"] = "not asked (refine=None)"
    else:
        refinement["note"] = ("not done: the explainer was fitted without the model (its "
                              "outputs only), or with a query budget too small to judge the "
                              "selector once, so the selector is the method's own")
    return refinement


def _share(value):
    return f"{100 * value:.1f} %" if isinstance(value, (int, float)) else repr(value)


def _data(params, attributes, masker):
    n_features = attributes["n_features_in_"]
    names = attributes.get("feature_names_in_")
    return {
        "n_features": n_features,
        "n_groups": masker.get("n_groups_"),
        "row_shape": _plain(attributes.get("row_shape_")),
        "image_shape": _plain(attributes.get("image_shape_")),
        "patch_size": _plain(params.get("patch_size")),
        "tokens": bool(_plain(params.get("tokens"))),
        "n_tokens": attributes.get("n_tokens_"),
        "feature_names": None if names is None else _plain(names),
        "table": _table_kinds(masker),
    }


def _table_kinds(masker):
    """For a table explainer's file, how many of its columns are of each kind (numbers,
    text and categories, booleans, dates): ``{kind: count}``; ``None`` otherwise."""
    codec = masker.get("codec")
    if not isinstance(codec, dict) or not isinstance(codec.get("kinds"), list):
        return None
    kinds = [str(kind) for kind in codec["kinds"]]
    return {kind: kinds.count(kind) for kind in dict.fromkeys(kinds)}


def _outputs(spec):
    blocks = [list(block) for block in spec["blocks"]]
    classes = _plain(spec.get("classes"))
    return {
        "kinds": list(spec["kinds"]),
        "n_outputs": len(blocks),
        "n_columns": blocks[-1][1] if blocks else 0,
        "classes": classes,
        "target": spec.get("target"),
    }


def _part_of(name):
    for prefix in sorted(_PART_ROLES, key=len, reverse=True):
        if name.startswith(prefix + "."):
            return prefix
    return ".".join(name.split(".")[:2])


def _role(prefix, class_name):
    if prefix == "net_.module_" and class_name == "EvalXEvaluator":
        return "evaluator"
    if prefix in _PART_ROLES:
        return _PART_ROLES[prefix]
    return prefix.rsplit(".", 1)[-1].rstrip("_")  # a judge: approximator, predictor, ...


def _tensors(header, class_name):
    parts = {}
    for name in sorted(header):
        shape, dtype = header[name]
        size = math.prod(shape)
        width = _DTYPE_BYTES.get(dtype)
        prefix = _part_of(name)
        part = parts.setdefault(prefix, {"prefix": prefix, "role": _role(prefix, class_name),
                                         "count": 0, "parameters": 0, "bytes": 0,
                                         "tensors": {}})
        part["count"] += 1
        part["parameters"] += size
        part["bytes"] = None if width is None or part["bytes"] is None else (
            part["bytes"] + size * width)
        part["tensors"][name[len(prefix) + 1:]] = {"shape": list(shape), "dtype": dtype}
    # The selector, then the judges, the energy network, and the preprocessing.
    order = {"net_.module_": 0, "masker_": 3, "output_spec_": 4}
    parts = sorted(parts.values(), key=lambda part: (
        order.get(part["prefix"], 1 if part["prefix"].startswith("net_.") else 2),
        part["prefix"]))
    total_bytes = [part["bytes"] for part in parts]
    return {
        "count": len(header),
        "parameters": sum(part["parameters"] for part in parts),
        "bytes": None if None in total_bytes else sum(total_bytes),
        "parts": parts,
    }


# Text
# ----


def _value_text(value):
    """A plain value as a short line of text."""
    if isinstance(value, dict) and set(value) == {"factory", "params"}:
        inner = ", ".join(f"{key}={_value_text(item)}" for key, item in value["params"].items())
        return f"{value['factory']}({inner})"
    if isinstance(value, list):
        shown = [_value_text(item) for item in value[:_SHOWN_ITEMS]]
        more = f", ... ({len(value)} items)" if len(value) > _SHOWN_ITEMS else ""
        return "[" + ", ".join(shown) + more + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key!r}: {_value_text(item)}" for key, item in value.items()) + "}"
    return repr(value)


def _bytes_text(size):
    if size is None:
        return "unknown size"
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:,} bytes" if unit == "bytes" else f"{size:,.1f} {unit}"
        size /= 1024
    return None  # not reached


def _shape_text(shape):
    return "(" + ", ".join(str(size) for size in shape) + ("," if len(shape) == 1 else "") + ")"


def _text(summary):
    lines = [(f"{summary['file']}: a fitted {summary['class']} saved by sk_sointer.save "
              f"(format version {summary['format_version']})")]
    version = f"written by sk_sointer {summary['sk_sointer_version']}"
    if summary["version_differs"]:
        version += f"; installed: {summary['installed_version']} (differs)"
    else:
        version += " (the installed version)"
    lines.append(f"Version: {version}")

    data = summary["data"]
    text = f"{data['n_features']} features"
    if data.get("table"):
        counts = ", ".join(f"{n} {kind}" for kind, n in data["table"].items())
        text = f"a table of {data['n_features']} columns ({counts})"
    if data["n_groups"] is not None and data["n_groups"] != data["n_features"]:
        text += f" in {data['n_groups']} groups"
    if data["row_shape"] is not None:
        text += f", rows of shape {_shape_text(data['row_shape'])}"
    if data["image_shape"] is not None:
        text += f", images of shape {_shape_text(data['image_shape'])}"
    if data["patch_size"] is not None:
        text += f", patches of {_value_text(data['patch_size'])}"
    if data["tokens"]:
        text += f", token ids (vocabulary of {data['n_tokens']})"
    lines.append(f"Data: {text}")
    names = data["feature_names"]
    if names is not None:
        shown = ", ".join(str(name) for name in names[:_SHOWN_NAMES])
        more = f", ... ({len(names)} in all)" if len(names) > _SHOWN_NAMES else ""
        lines.append(f"  feature names: {shown}{more}")

    selection = summary["selection"]
    if selection["k"] is not None or "selection_rate" in selection:
        text = f"k = {selection['k']}"
        if "selection_rate" in selection:
            text += f", selection rate {selection['selection_rate']}"
        lines.append(f"Selection: {text}")
    elif summary["class"] != "EvalXEvaluator":
        lines.append("Selection: k = None (features with selection probability above 0.5)")
    if selection["fitted_k"] != selection["k"] and summary["class"] != "EvalXEvaluator":
        lines.append(f"  fitted with k = {selection['fitted_k']}; k was set after fit, and "
                     "the masks keep the k above")
    refinement = summary["refinement"]
    if refinement is not None:
        lines.append(f"Refinement against the model: {refinement['note']}")

    outputs = summary["outputs"]
    n = outputs["n_outputs"]
    lines.append(f"Outputs: {n} output{'s' if n != 1 else ''} "
                 f"({outputs['n_columns']} columns): {', '.join(outputs['kinds'])}")
    if outputs["classes"] is not None:
        for i, labels in enumerate(outputs["classes"]):
            if labels is not None:
                lines.append(f"  output {i} classes: {_value_text(labels)}")
    if outputs["target"] is not None:
        lines.append(f"  target: output {outputs['target']} (the one explained)")
    lines.append(f"Black box: {summary['black_box']['note']}")

    non_default = summary["non_default_params"]
    params = summary["params"]
    lines.append("Parameters (* set, differing from the default):")
    for name in [*non_default, *(name for name in params if name not in non_default)]:
        mark = "*" if name in non_default else " "
        lines.append(f"  {mark} {name} = {_value_text(params[name])}")
    others = summary["other_attributes"]
    if others:
        lines.append("Fitted: " + ", ".join(f"{name}={_value_text(value)}"
                                            for name, value in others.items()))

    tensors = summary["tensors"]
    lines.append(f"Tensors: {tensors['count']}, {tensors['parameters']:,} values, "
                 f"{_bytes_text(tensors['bytes'])}")
    for part in tensors["parts"]:
        lines.append(f"  {part['role']} ({part['prefix']}): {part['count']} tensors, "
                     f"{part['parameters']:,} values, {_bytes_text(part['bytes'])}")
        for name, tensor in part["tensors"].items():
            lines.append(f"    {name}: {_shape_text(tensor['shape'])} {tensor['dtype']}")
    return "\n".join(printable(line) for line in lines)
