"""Saving and loading fitted estimators without pickle.

Unpickling a file runs whatever code the file names, so a pickled explainer can only be
loaded from someone one trusts. :func:`save` writes a fitted explainer (or EVAL-X
evaluator) as one `safetensors <https://huggingface.co/docs/safetensors>`_ file, which
holds only data, and :func:`load` rebuilds it with the package's own code:

- the tensors are every network's ``state_dict`` under the estimator's attribute path
  (``net_.module_.0.weight``, ``net_.approximator_.0.weight``, ...), the masker's arrays
  (``masker_.mean_``, ``masker_.scale_``, ``masker_.baseline_``,
  ``masker_.baseline_scaled_``, and ``masker_.groups_`` with feature groups) and the
  output standardisation (``output_spec_.center``, ``output_spec_.scale``), and what a
  method trains before its net (SOInter's energy network, ``energy_net_.net_.module_.*``);
- the file's string metadata ``"sk_sointer"`` is a JSON document: the format version, the
  version of sk_sointer that wrote it, the estimator's class name, its parameters
  (``get_params(deep=False)``), its other fitted attributes (``n_features_in_``,
  ``feature_names_in_``, ``k_``, ...), the masker's number of groups, the output spec
  (kinds, blocks, classes, target) and the widths the networks were built for.

Values JSON has no type for are written as one-key objects: ``{"tuple": [...]}``,
``{"ndarray": [...], "dtype": "<f8", "shape": [3]}``, ``{"dict": {...}}``, a network
factory as ``{"factory": "MLP", "params": {...}}``, a torch optimizer class as
``{"optimizer": "adam"}`` and a ``RandomState`` as ``{"random_state": {...}}``. Anything
else (a custom factory, callbacks, a split callable) is code, and :func:`save` refuses it.

Loading never imports a name read from the file: the class comes from the package's
public estimators, the factories from the package's own, and the networks are built by
the estimator's ``_build_net`` before the stored weights are copied in. The black box is
never stored.

A file may come from anyone, so nothing is allocated from its numbers before they are
checked: sizes in the JSON document must agree with the tensors' shapes in the safetensors
header (known without reading the data), arrays in the JSON are bounded by the JSON's own
length, and the networks are first built on torch's ``meta`` device (shapes without
storage) and compared with the header, so that memory stays within a small multiple of the
file's tensor bytes whatever the file says.
"""

import json
import math
import os
import re

import numpy as np
import safetensors
import torch
from safetensors.torch import load_file, save_file
from sklearn.utils.validation import check_is_fitted

from .._layout import RowLayout
from .._masking import Masker
from .._networks import CNN, MLP, CNNSelector, EnergyMLP, TokenCNN, TokenCNNSelector
from .._outputs import OutputSpec
from .._version import __version__
from .._repair import RowRepair
from .._search import ModelRefinement
from .._utils import resolve_device, seeded
from ..base import _OPTIMIZERS, Problem, _SkorchEstimatorMixin
from ..black_box import as_black_box
from ..explainers._energy import EnergyNet

__all__ = ["load", "save"]

FORMAT_VERSION = 1
"""Version of the file layout that :func:`save` writes; :func:`load` reads it and older."""

_METADATA_KEY = "sk_sointer"

# The package's network factories, by the name a file gives them. A factory is stored as
# its parameters, so only a class whose modules follow from them alone can be listed.
_FACTORIES = {"MLP": MLP, "CNN": CNN, "CNNSelector": CNNSelector, "TokenCNN": TokenCNN,
              "TokenCNNSelector": TokenCNNSelector, "EnergyMLP": EnergyMLP}

# Every package class a file may name: the factories and configuration objects whose state
# is their parameters (written as {"factory": name, "params": {...}}).
_FROM_PARAMS = {**_FACTORIES, "ModelRefinement": ModelRefinement, "RowRepair": RowRepair,
                "EnergyNet": EnergyNet}


_OPTIMIZER_NAMES = {cls: name for name, cls in _OPTIMIZERS.items()}

# Fitted attributes with their own place in the file (or, for the black box, none).
_STRUCTURED = ("net_", "masker_", "output_spec_", "black_box_", "layout_", "energy_net_")
# The layout's parts, stored as the fitted attributes of these names (RowLayout.state_dict).
_LAYOUT_ATTRIBUTES = {"row_shape_": "row_shape", "image_shape_": "image_shape",
                      "n_tokens_": "n_tokens"}


_ATTRIBUTE_NAME = re.compile(r"[a-z][a-z0-9_]*_\Z")

# Fitted attributes that every estimator the loader builds reads, and those of one class.
_COMMON_ATTRIBUTES = ("n_features_in_", "row_shape_", "image_shape_", "n_tokens_")
_CLASS_ATTRIBUTES = {"HardKumaExplainer": ("k_", "selection_rate_"),
                     "SOInterExplainer": ("k_", "objective_")}
_EXPLAINER_ATTRIBUTES = ("k_",)

# The JSON document's nesting: what save writes is a few levels deep.
_MAX_DEPTH = 32

# The arrays of a JSON document decode to at most this many bytes per character of the
# document, plus a little: a dtype such as "<U160" on one-digit items (640 bytes for two
# characters) is refused before anything is decoded. What save writes takes less than 4
# (an int64 zero, "0, ", takes 8 bytes for 3 characters); the slack leaves room for
# string arrays whose width is that of one long item among many short ones.
_ARRAY_BYTES_PER_CHAR = 4
_ARRAY_SLACK_BYTES = 8 << 20

# JSON arrays and objects in one document: save writes a few for each output and
# parameter, and each costs a hundred bytes or so once parsed, whatever its text.
_MAX_CONTAINERS = 200_000
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')

# Items of a list in a network factory's parameters (hidden_units, channels): one layer
# each, built (on the meta device) before the weights are compared with the file's.
_MAX_LAYERS = 256

# Safetensors dtype names, as the header gives them.
_HEADER_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
    "U8": torch.uint8, "BOOL": torch.bool,
}


def save(estimator, path):
    """Write a fitted explainer or EVAL-X evaluator to a file that holds no code.

    The file is a safetensors file: the networks' weights and the masker's arrays as
    tensors, and the parameters and the rest of the fitted state as a JSON document in
    its metadata (see Notes). Unlike a pickle, it can be loaded from a source one does
    not trust. The black box is not stored: pass it to :func:`load` to score post-hoc
    fidelity again.

    Parameters
    ----------
    estimator : fitted estimator
        An instance of one of the package's public explainers (such as
        :class:`~sk_sointer.L2XExplainer`) or of
        :class:`~sk_sointer.metrics.EvalXEvaluator`, not of a subclass.
    path : str or path-like
        File to write (conventionally ending in ``.safetensors``); overwritten if it
        exists.

    Raises
    ------
    ValueError
        If the estimator's class is not one of the package's public estimators, or a
        parameter or fitted attribute holds code rather than data: a
        custom network factory, ``callbacks``, a callable ``train_split`` or ``optimizer``
        other than the torch optimizers named in the parameter's description.
    sklearn.exceptions.NotFittedError
        If the estimator is not fitted.
    OSError
        If the folder of ``path`` does not exist or the file cannot be written.

    See Also
    --------
    load : Rebuild the estimator from the file.

    Notes
    -----
    The tensors are named by their attribute path on the estimator: every network's
    ``state_dict`` (``net_.module_.0.weight``, ``net_.approximator_.0.weight``, ...), the
    masker's ``masker_.mean_``, ``masker_.scale_``, ``masker_.baseline_``,
    ``masker_.baseline_scaled_`` (and ``masker_.groups_`` with feature groups),
    ``output_spec_.center`` and ``output_spec_.scale``, and for SOInter its energy
    network's (``energy_net_.net_.module_.*``). The metadata entry
    ``"sk_sointer"`` is a JSON object with the keys ``format_version``,
    ``sk_sointer_version``, ``class``, ``params`` (``get_params(deep=False)``),
    ``attributes`` (the other fitted attributes, such as ``n_features_in_``), ``masker``,
    ``output_spec`` (kinds, blocks, classes, target) and ``net`` (the widths the
    networks were built for). A network factory is written as ``{"factory": "MLP",
    "params": {...}}``; tuples, arrays, dicts, torch optimizer classes and ``RandomState``
    instances as one-key objects named after their type.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from sk_sointer import L2XExplainer, load, save
    >>> X = np.random.RandomState(0).randn(100, 4).astype(np.float32)
    >>> expl = L2XExplainer(k=1, max_epochs=2, device="cpu", random_state=0)
    >>> expl = expl.fit(X, X[:, 0] > 0)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "l2x.safetensors")
    ...     save(expl, path)
    ...     loaded = load(path)
    >>> np.array_equal(loaded.transform(X), expl.transform(X))
    True
    """
    cls = _check_class(type(estimator))
    check_is_fitted(estimator)
    path = _path_of(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"Cannot save to {path}: the folder {folder} does not exist.")
    net = estimator.net_
    doc = {
        "format_version": FORMAT_VERSION,
        "sk_sointer_version": __version__,
        "class": cls.__name__,
        "params": {
            name: _encode(value, f"parameter {name!r}")
            for name, value in estimator.get_params(deep=False).items()
        },
        "attributes": {
            name: _encode(value, f"fitted attribute {name!r}")
            for name, value in sorted([
                *((name, value) for name, value in vars(estimator).items()
                  if _is_fitted_attribute(name) and name not in _STRUCTURED),
                *((name, estimator.layout_.state_dict()[key])
                  for name, key in _LAYOUT_ATTRIBUTES.items()),
            ])
        },
        "net": {
            "selector_in_features": net.selector_in_features,
            "input_shape": list(net.input_shape),
        },
    }
    output_config = getattr(estimator, "_sklearn_output_config", None)
    if output_config:
        doc["output_config"] = _encode(output_config, "the set_output configuration")
    tensors = {}
    doc["masker"] = _masker_state(estimator.masker_, tensors)
    doc["output_spec"] = _spec_state(estimator.output_spec_, tensors)
    for prefix, module in _stored_modules(estimator, net).items():
        for key, value in module.state_dict().items():
            tensors[f"{prefix}.{key}"] = value.detach().to("cpu", copy=True).contiguous()
    try:
        save_file(tensors, path, metadata={_METADATA_KEY: json.dumps(doc)})
    except (safetensors.SafetensorError, OSError) as exc:
        raise OSError(f"Cannot write {path}: {exc}") from None


def load(path, *, device="cpu", black_box=None):
    """Rebuild an estimator written by :func:`save`, running no code from the file.

    The estimator's class is looked up among the package's public estimators, its
    networks are built by the package's code from the stored parameters and widths, and
    the stored weights are copied into them (every weight present, none extra).

    Parameters
    ----------
    path : str or path-like
        A file written by :func:`save`.
    device : {"cpu", "cuda", "auto"} or str, default="cpu"
        Torch device of the loaded networks; a model trained on CUDA loads on a machine
        without it. The estimator's ``device`` parameter keeps its saved value: it is the
        device of the next ``fit``.
    black_box : model, default=None
        The model the estimator explains, adapted with :func:`~sk_sointer.as_black_box`,
        so that ``score(X)`` measures post-hoc fidelity. Without it ``black_box_`` is
        ``None`` and the estimator scores against outputs given as ``y``.

    Returns
    -------
    estimator : fitted estimator
        Explains, transforms and scores as the saved one did.

    Raises
    ------
    ValueError
        If the file is not a safetensors file written by :func:`save`, comes from a newer
        version of the format, names a class that is not one of the package's public
        estimators, holds parameters the class rejects or fitted attributes it does not
        have, gives sizes that disagree with its tensors' shapes, or its tensors are not
        exactly those that the rebuilt estimator has, or hold NaN or infinite values. All
        of this is checked before anything is allocated from the file's numbers.
    OSError
        If ``path`` does not exist or is not a file.

    See Also
    --------
    save : Write a fitted estimator.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sk_sointer import RealXExplainer, load, save
    >>> X = np.random.RandomState(0).randn(200, 4).astype(np.float32)
    >>> model = LogisticRegression().fit(X, X[:, 0] > 0)
    >>> expl = RealXExplainer(k=1, max_epochs=3, predictor_epochs=2, device="cpu",
    ...                       random_state=0)
    >>> expl = expl.fit(X, black_box=model)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "realx.safetensors")
    ...     save(expl, path)
    ...     loaded = load(path, black_box=model)
    >>> loaded.score(X) == expl.score(X)
    True
    """
    device = _load_device(device)
    path, doc, header = read_header(path)
    cls = _class_named(doc.get("class"))
    estimator = _with_params(cls, _decode_object(doc.get("params"), "parameters"))
    attributes = _attributes(doc, estimator, header)
    layout = {key: attributes.pop(name) for name, key in _LAYOUT_ATTRIBUTES.items()}
    for name, value in attributes.items():
        setattr(estimator, name, value)
    if "output_config" in doc:
        estimator._sklearn_output_config = _output_config(doc["output_config"])
    small = _small_tensors(path, header)
    estimator.masker_ = _load_masker(estimator, doc.get("masker"), small)
    estimator.layout_ = RowLayout.from_state(
        {**layout, "n_features": estimator.n_features_in_, "tokens": estimator.tokens,
         "patch_size": estimator.patch_size},
        groups=estimator.masker_.groups,
    )
    estimator.output_spec_ = _load_spec(doc.get("output_spec"), small)
    estimator.black_box_ = _attach(black_box, estimator)
    estimator.net_ = _load_net(estimator, doc.get("net"), header, device, path)
    if estimator.black_box_ is not None:
        _check_black_box(estimator)
    return estimator


def _load_device(device):
    """The torch device the networks are loaded on: a CPU or an available CUDA device."""
    resolved = resolve_device(device)
    if resolved.type not in ("cpu", "cuda"):
        raise ValueError(f"sk_sointer.load puts the networks on 'cpu', 'cuda', 'cuda:N' or "
                         f"'auto'; got device={device!r}.")
    if resolved.type == "cuda" and (resolved.index or 0) >= torch.cuda.device_count():
        raise ValueError(f"device={str(resolved)!r} does not exist: this machine has "
                         f"{torch.cuda.device_count()} CUDA device(s).")
    return resolved


def _path_of(path):
    """``path`` as a str: bytes paths are decoded as the file system does."""
    try:
        return os.fsdecode(os.fspath(path))
    except TypeError:
        raise TypeError(
            f"path should be a str, bytes or os.PathLike; got {type(path).__name__}."
        ) from None


# Classes and versions
# --------------------


def _public_estimators():
    """The package's public estimators that train a net, by class name."""
    from .. import explainers, metrics

    classes = {}
    for module in (explainers, metrics):
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, type) and issubclass(obj, _SkorchEstimatorMixin):
                classes[obj.__name__] = obj
    return classes


def _check_class(cls):
    known = _public_estimators()
    if known.get(cls.__name__) is not cls:
        raise ValueError(
            f"sk_sointer.save stores the package's own estimators ({', '.join(sorted(known))}); "
            f"got {cls.__module__}.{cls.__qualname__}, whose code a file cannot restore "
            "without running it."
        )
    return cls


def _class_named(name):
    known = _public_estimators()
    if not isinstance(name, str) or name not in known:
        raise ValueError(
            f"The file's estimator class {name!r} is not one that sk_sointer.load builds: "
            f"{', '.join(sorted(known))}."
        )
    return known[name]


def read_header(path):
    """What a file written by :func:`save` says it holds, without building anything.

    Reads only the safetensors header and its JSON document: no tensor data, no estimator
    and no torch module. :func:`load` starts here, and so does ``python -m sk_sointer
    inspect``.

    Returns
    -------
    path : str
        ``path`` as a str.
    doc : dict
        The JSON document (format version checked; nothing else decoded).
    header : dict
        ``{tensor name: (shape, safetensors dtype name)}``.

    Raises
    ------
    OSError
        If ``path`` does not exist or is not a file.
    ValueError
        If the file is not a safetensors file, was not written by :func:`save`, holds
        invalid or too deeply nested JSON, or comes from a newer format version.
    """
    path = _path_of(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"No such file: {path}.")
    if not os.path.isfile(path):
        raise IsADirectoryError(f"{path} is not a file (a folder?); give the path of a file "
                                "written by sk_sointer.save.")
    doc, header = _read_document(path)
    return path, doc, header


def _read_document(path):
    """The file's JSON document and its tensors' header: ``{name: (shape, dtype)}``, read
    without reading the tensors' data."""
    try:
        with safetensors.safe_open(path, framework="pt") as file:
            metadata = file.metadata() or {}
            header = {}
            for name in file.keys():
                part = file.get_slice(name)
                header[name] = (tuple(part.get_shape()), part.get_dtype())
    except safetensors.SafetensorError as exc:
        raise ValueError(f"{path} is not a safetensors file ({exc}).") from None
    if _METADATA_KEY not in metadata:
        raise ValueError(
            f"{path} was not written by sk_sointer.save: its metadata has no "
            f"{_METADATA_KEY!r} entry."
        )
    text = metadata[_METADATA_KEY]
    # Counted in the text, strings left out, before anything is parsed.
    stripped = _JSON_STRING.sub("", text)
    containers = stripped.count("[") + stripped.count("{")
    del stripped
    if containers > _MAX_CONTAINERS:
        raise ValueError(
            f"The sk_sointer metadata of {path} holds {containers:,} JSON arrays and "
            f"objects; sk_sointer.save writes a few for each parameter and output, and "
            f"sk_sointer.load reads at most {_MAX_CONTAINERS:,}."
        )
    try:
        doc = json.loads(text)
    except RecursionError:
        doc = None
    except ValueError as exc:
        raise ValueError(f"The sk_sointer metadata of {path} is not valid JSON ({exc}).") from None
    if doc is None or _depth(doc) > _MAX_DEPTH:
        raise ValueError(
            f"The sk_sointer metadata of {path} is nested more than {_MAX_DEPTH} levels deep; "
            "sk_sointer.save writes a few."
        )
    if not isinstance(doc, dict):
        raise ValueError(f"The sk_sointer metadata of {path} should be a JSON object.")
    declared, limit = _array_bytes(doc), _array_budget(len(text))
    if declared > limit:
        raise ValueError(
            f"The sk_sointer metadata of {path} declares arrays of {declared:,} bytes in "
            f"{len(text):,} characters of JSON, more than the {limit:,} "
            "bytes that sk_sointer.save writes for that much text: an array's dtype is wider "
            "than its items."
        )
    version = doc.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"{path} has an invalid format version {version!r}.")
    if version > FORMAT_VERSION:
        raise ValueError(
            f"{path} was written in format version {version} (by sk_sointer "
            f"{doc.get('sk_sointer_version')}), newer than the format version "
            f"{FORMAT_VERSION} that sk_sointer {__version__} reads; upgrade sk_sointer "
            "to load it."
        )
    return doc, header


def _array_budget(n_chars):
    """The most bytes that the arrays of a JSON document of ``n_chars`` characters may
    decode to."""
    return _ARRAY_BYTES_PER_CHAR * n_chars + _ARRAY_SLACK_BYTES


def _array_bytes(obj):
    """What the arrays written as ``{"ndarray", "dtype", "shape"}`` in a JSON value say they
    take once decoded (items times the dtype's width), read from the declarations alone. A
    declaration that does not parse counts for nothing here: decoding refuses it."""
    total = 0
    for value, _ in _containers(obj):
        if (isinstance(value, dict) and set(value) == {"ndarray", "dtype", "shape"}
                and isinstance(value["ndarray"], list)):
            try:
                width = np.dtype(value["dtype"]).itemsize
            except (TypeError, ValueError, OverflowError):
                width = 0
            total += width * len(value["ndarray"])
    return total


def _depth(obj):
    """Nesting depth of a JSON value, without recursion (the value may come from anyone)."""
    deepest = 1
    for value, depth in _containers(obj):
        deepest = max(deepest, depth + 1 if value else depth)
        if deepest > _MAX_DEPTH:
            break
    return deepest


def _containers(obj):
    """Every dict and list in a JSON value with its depth (``obj``'s is 1), depth first.
    The walk keeps one iterator a level, so that its memory grows with the depth of the
    value, not with its number of items."""
    if not isinstance(obj, (dict, list)):
        return
    yield obj, 1
    stack = [iter(obj.values() if isinstance(obj, dict) else obj)]
    while stack:
        for item in stack[-1]:
            if isinstance(item, (dict, list)):
                yield item, len(stack) + 1
                stack.append(iter(item.values() if isinstance(item, dict) else item))
                break
        else:
            stack.pop()


# Parameters and fitted attributes as JSON
# ----------------------------------------


def _encode(value, where):
    """The JSON form of a parameter or fitted value; ``where`` names it in errors."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, list):
        return [_encode(item, where) for item in value]
    if isinstance(value, tuple):
        return {"tuple": [_encode(item, where) for item in value]}
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return {"dict": {key: _encode(item, where) for key, item in value.items()}}
    if isinstance(value, np.ndarray):
        return _encode_array(value, where)
    if type(value) in _FROM_PARAMS.values():
        name = next(key for key, cls in _FROM_PARAMS.items() if type(value) is cls)
        return {"factory": name, "params": {
            key: _encode(item, f"{where} ({name}'s {key!r})")
            for key, item in value.get_params(deep=False).items()
        }}
    if isinstance(value, type) and value in _OPTIMIZER_NAMES:
        return {"optimizer": _OPTIMIZER_NAMES[value]}
    if isinstance(value, np.random.RandomState):
        kind, keys, pos, has_gauss, cached = value.get_state(legacy=True)
        return {"random_state": {"keys": keys.tolist(), "pos": int(pos),
                                 "has_gauss": int(has_gauss), "cached_gaussian": float(cached)}}
    raise ValueError(_unstorable(value, where))


def _unstorable(value, where):
    hint = ""
    if where == "parameter 'callbacks'":
        hint = (" Callbacks only act in training: set_params(callbacks=None) before saving "
                "leaves what the estimator explains and scores unchanged.")
    elif where == "parameter 'train_split'":
        hint = (" The split only acts in training: set_params(train_split=None) before "
                "saving leaves what the estimator explains and scores unchanged.")
    elif hasattr(value, "__array__"):
        hint = " Give it as a numpy array or a list (set_params) before saving."
    elif callable(value):
        hint = (f" Code cannot be stored as data: of the network factories, only the "
                f"package's own ({', '.join(_FACTORIES)}) can be saved, and of the "
                f"optimizers the names {sorted(_OPTIMIZERS)}.")
    return (
        f"sk_sointer.save cannot store {where}: {value!r} ({type(value).__name__}) is not "
        f"data it can write without pickle.{hint}"
    )


def _encode_array(array, where):
    if array.dtype.kind == "O":
        if not all(isinstance(item, (str, bool, int, float)) for item in array.ravel()):
            raise ValueError(
                f"sk_sointer.save cannot store {where}: an object array holding values other "
                "than strings and numbers."
            )
    elif array.dtype.kind not in "biufU":
        raise ValueError(f"sk_sointer.save cannot store {where}: an array of dtype {array.dtype}.")
    return {"ndarray": array.ravel().tolist(), "dtype": array.dtype.str, "shape": list(array.shape)}


def _decode(obj, where):
    """The value of a JSON form written by :func:`_encode`."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, list):
        return [_decode(item, where) for item in obj]
    if isinstance(obj, dict):
        keys = set(obj)
        if keys == {"tuple"} and isinstance(obj["tuple"], list):
            return tuple(_decode(item, where) for item in obj["tuple"])
        if keys == {"dict"} and isinstance(obj["dict"], dict):
            return {key: _decode(item, where) for key, item in obj["dict"].items()}
        if keys == {"ndarray", "dtype", "shape"}:
            return _decode_array(obj, where)
        if (keys == {"factory", "params"} and isinstance(obj["factory"], str)
                and isinstance(obj["params"], dict)):
            return _decode_factory(obj, where)
        if keys == {"optimizer"} and isinstance(obj["optimizer"], str) and (
            obj["optimizer"] in _OPTIMIZERS
        ):
            return _OPTIMIZERS[obj["optimizer"]]
        if keys == {"random_state"} and isinstance(obj["random_state"], dict):
            return _decode_random_state(obj["random_state"], where)
    raise ValueError(
        f"The file's {where} hold {obj!r}, which is not a value sk_sointer.save writes."
    )


def _decode_object(obj, where):
    """A JSON object of values written by :func:`_encode`, decoded."""
    if not isinstance(obj, dict):
        raise ValueError(f"The file's {where} should be a JSON object.")
    return {name: _decode(value, where) for name, value in obj.items()}


def _decode_array(obj, where):
    try:
        dtype = np.dtype(obj["dtype"])
        shape = tuple(int(size) for size in obj["shape"])
    except (TypeError, ValueError):
        dtype = None
    if dtype is None or dtype.kind not in "biufUO" or dtype.fields is not None:
        raise ValueError(f"The file's {where} hold an array of unknown dtype {obj['dtype']!r}.")
    items = obj["ndarray"]
    if not isinstance(items, list) or not all(
        isinstance(item, (str, bool, int, float)) for item in items
    ):
        raise ValueError(
            f"The file's {where} hold an array whose items are not numbers or strings."
        )
    if any(size < 0 for size in shape) or math.prod(shape) != len(items):
        raise ValueError(
            f"The file's {where} hold an array of shape {list(shape)} with {len(items)} items."
        )
    # A declared dtype could ask for far more memory than the items take (strings of ten
    # million characters for one-letter labels): the array is bounded by the shortest JSON
    # text its items can be written in (read_header bounds all of a file's arrays at once).
    text = sum(len(item) + 3 if isinstance(item, str) else 2 for item in items)
    if dtype.itemsize * len(items) > _array_budget(text):
        raise ValueError(
            f"The file's {where} hold an array of dtype {dtype.str} that would take "
            f"{dtype.itemsize * len(items):,} bytes for {len(items):,} items written in "
            f"{text:,} characters."
        )
    try:
        return np.array(items, dtype=dtype).reshape(shape)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"The file's {where} hold an invalid array ({exc}).") from None


def _decode_factory(obj, where):
    name = obj["factory"]
    if name not in _FROM_PARAMS:
        raise ValueError(
            f"The file's {where} name the network factory {name!r}, which is not one of the "
            f"package's ({', '.join(_FACTORIES)})."
        )
    params = _decode_object(obj["params"], where)
    for key, value in params.items():
        if isinstance(value, (list, tuple)) and len(value) > _MAX_LAYERS:
            raise ValueError(
                f"The file's {where} give {name} a {key} of {len(value):,} items; "
                f"sk_sointer.load builds networks of at most {_MAX_LAYERS} layers."
            )
    try:
        return _FROM_PARAMS[name](**params)
    except TypeError as exc:
        raise ValueError(f"The file's {where} give {name} invalid parameters ({exc}).") from None


def _decode_random_state(state, where):
    generator = np.random.RandomState()
    keys = state.get("keys")
    if not isinstance(keys, list) or len(keys) != 624:
        raise ValueError(f"The file's {where} hold an invalid RandomState (its key should "
                         "have 624 words).")
    try:
        generator.set_state((
            "MT19937", np.asarray(state["keys"], dtype=np.uint32), int(state["pos"]),
            int(state["has_gauss"]), float(state["cached_gaussian"]),
        ))
    except (KeyError, TypeError, ValueError, OverflowError, IndexError) as exc:
        raise ValueError(f"The file's {where} hold an invalid RandomState ({exc}).") from None
    return generator


def _output_config(obj):
    config = _decode(obj, "set_output configuration")
    if not isinstance(config, dict) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in config.items()
    ):
        raise ValueError("The file's set_output configuration should map names to strings.")
    return config


def _is_fitted_attribute(name):
    return name.endswith("_") and not name.startswith("_")


def _with_params(cls, params):
    accepted = cls().get_params(deep=False)
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(f"The file gives {cls.__name__} unknown parameters {unknown}.")
    # save writes no code, so the training options that would be code are absent.
    if params.get("callbacks") not in (None, []):
        raise ValueError(f"The file gives {cls.__name__} callbacks {params['callbacks']!r}; "
                         "sk_sointer.save writes none (callbacks are code).")
    if isinstance(params.get("train_split"), str):
        raise ValueError(f"The file gives {cls.__name__} an invalid train_split "
                         f"{params['train_split']!r}.")
    estimator = cls(**params)
    # The same checks as fit: a tampered value is refused here, not at explanation time.
    estimator._validate_params()
    return estimator


def _attributes(doc, estimator, header):
    """The fitted attributes, each checked against the class and the tensors' shapes."""
    attributes = _decode_object(doc.get("attributes"), "fitted attributes")
    for name in attributes:
        if not _ATTRIBUTE_NAME.match(name) or name in _STRUCTURED:
            raise ValueError(f"The file holds an invalid fitted attribute name {name!r}.")
    name = type(estimator).__name__
    required = [*_COMMON_ATTRIBUTES, *_CLASS_ATTRIBUTES.get(name, ())]
    if hasattr(estimator, "_masks_from_scores"):  # an explainer: its masks need k_
        required += _EXPLAINER_ATTRIBUTES
    missing = sorted(set(required) - set(attributes))
    if missing:
        raise ValueError(f"The file lacks the fitted attributes {missing} of a {name}.")

    # n_features_in_ is also the length of the masker's arrays: the header bounds it.
    n_features = attributes["n_features_in_"]
    if "masker_.mean_" not in header:
        raise ValueError("The file lacks the tensor 'masker_.mean_'.")
    shape, _ = header["masker_.mean_"]
    if not _is_int(n_features) or n_features < 1 or shape != (n_features,):
        raise ValueError(f"The file's n_features_in_={n_features!r} does not match its "
                         f"tensor 'masker_.mean_' of shape {shape}.")
    names = attributes.get("feature_names_in_")
    if names is not None and (not isinstance(names, np.ndarray) or names.shape != (n_features,)):
        raise ValueError(f"The file's feature_names_in_ should hold {n_features} names.")
    row_shape, image_shape = attributes["row_shape_"], attributes["image_shape_"]
    if row_shape is not None and (not _is_shape(row_shape, (2, 3), n_features)):
        raise ValueError(f"The file's row_shape_={row_shape!r} does not hold "
                         f"n_features_in_={n_features} values.")
    if image_shape is not None and not _is_shape(image_shape, (3,), n_features):
        raise ValueError(f"The file's image_shape_={image_shape!r} does not hold "
                         f"n_features_in_={n_features} values.")
    n_tokens = attributes["n_tokens_"]
    if bool(estimator.tokens) != (n_tokens is not None) or (
        n_tokens is not None and (not _is_int(n_tokens) or n_tokens < 1)
    ):
        raise ValueError(f"The file's n_tokens_={n_tokens!r} does not match tokens="
                         f"{estimator.tokens!r}.")
    k = attributes.get("k_")
    if k is not None and (not _is_int(k) or not 1 <= k <= n_features):
        raise ValueError(f"The file's k_={k!r} should be None or an int in [1, "
                         f"n_features_in_={n_features}].")
    rate = attributes.get("selection_rate_")
    if "selection_rate_" in attributes and (
        isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate <= 1
    ):
        raise ValueError(f"The file's selection_rate_={rate!r} should be a number in (0, 1].")
    return attributes


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_shape(shape, lengths, n_values):
    return (isinstance(shape, tuple) and len(shape) in lengths
            and all(_is_int(size) and size > 0 for size in shape)
            and math.prod(shape) == n_values)


# Masker and output spec
# ----------------------


def _masker_state(masker, tensors):
    state = masker.state_dict()
    for name, value in state.items():
        if name != "n_groups_":
            tensors[f"masker_.{name}"] = torch.from_numpy(np.array(value))
    return {"n_groups_": int(state["n_groups_"])}


def _load_masker(estimator, state, tensors):
    if not isinstance(state, dict) or not _is_int(state.get("n_groups_")):
        raise ValueError("The file's masker state should give n_groups_, an int.")
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


def _int(value):
    if not _is_int(value):
        raise TypeError(f"{value!r} is not an int")
    return value


def _small_tensors(path, header):
    """The masker's and the output spec's tensors (one value per feature or output column),
    read once their shapes are known to match the document."""
    names = [name for name in header if name.startswith(("masker_.", "output_spec_."))]
    with safetensors.safe_open(path, framework="pt") as file:
        return {name: file.get_tensor(name) for name in names}


def _array(tensors, name, shape, kind):
    if name not in tensors:
        raise ValueError(f"The file lacks the tensor {name!r}.")
    array = tensors[name].numpy()
    if array.shape != shape or array.dtype.kind != kind:
        raise ValueError(
            f"The file's tensor {name!r} has shape {array.shape} and dtype {array.dtype}; "
            f"expected shape {shape}."
        )
    if kind == "f" and not np.isfinite(array).all():
        raise ValueError(f"The file's tensor {name!r} holds NaN or infinite values.")
    return array


def _attach(black_box, estimator):
    if black_box is None:
        return None
    black_box = as_black_box(black_box).with_row_shape(estimator.layout_.row_shape)
    black_box = black_box.with_token_ids(estimator.layout_.tokens)
    n_features = getattr(black_box.model, "n_features_in_", None)
    if n_features is not None and n_features != estimator.n_features_in_:
        raise ValueError(
            f"The black box takes {n_features} features, but the {type(estimator).__name__} "
            f"was fitted on {estimator.n_features_in_}."
        )
    spec = black_box.spec
    if spec is not None and (spec.kinds, spec.blocks) != (
        estimator.output_spec_.kinds, estimator.output_spec_.blocks
    ):
        raise ValueError(
            f"The black box's outputs {spec.kinds} do not match those the "
            f"{type(estimator).__name__} was fitted on, {estimator.output_spec_.kinds}."
        )
    return black_box


def _check_black_box(estimator):
    """The black box answers a row of the baseline with outputs of the stored spec: a
    regressor given for a classifier's explainer would otherwise score as if it agreed."""
    black_box, stored = estimator.black_box_, estimator.output_spec_
    name = type(estimator).__name__
    row = torch.as_tensor(estimator.masker_.baseline_[None], dtype=torch.float32)
    try:
        with torch.no_grad():
            black_box(row)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"The black box given to load does not answer a row of the {name}'s "
                         f"baseline: {' '.join(str(exc).split())}") from None
    spec = black_box.spec
    if (spec.kinds, spec.blocks) != (stored.kinds, stored.blocks):
        raise ValueError(
            f"The black box's outputs ({_spec_text(spec)}) do not match those the {name} was "
            f"fitted on ({_spec_text(stored)})."
        )


def _spec_text(spec):
    parts = []
    for kind, (start, stop) in zip(spec.kinds, spec.blocks):
        parts.append(f"{kind} over {stop - start} classes" if kind == "categorical" else kind)
    if len(parts) > 4:
        return f"{len(parts)} outputs: {', '.join(parts[:4])}, ..."
    return f"{len(parts)} output{'s' if len(parts) != 1 else ''}: {', '.join(parts)}"


# Networks
# --------


def _load_net(estimator, state, header, device, path):
    """The estimator's net, built by its ``_build_net`` and holding the stored weights.

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
    if not n_features <= selector_in_features <= n_features + estimator.output_spec_.n_columns:
        raise ValueError(f"The file's selector_in_features={selector_in_features} does not "
                         f"match its {n_features} features.")
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
    tensors = load_file(path)
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


def _check_tensors(estimator, shapes, header, path):
    """The file holds every tensor the rebuilt estimator has, no other, each of the
    shape and dtype the estimator's networks give it (read from the header)."""
    expected = set(shapes)
    expected |= {f"masker_.{name}" for name in Masker.FITTED_ARRAYS}
    expected |= {"output_spec_.center", "output_spec_.scale"}
    if estimator.masker_.groups_ is not None:
        expected.add("masker_.groups_")
    missing, extra = sorted(expected - set(header)), sorted(set(header) - expected)
    if missing or extra:
        problems = []
        if missing:
            problems.append(f"it lacks the tensors {_some(missing)}")
        if extra:
            problems.append(f"it holds tensors {_some(extra)} that the estimator does not have")
        raise ValueError(
            f"The tensors of {path} do not match the {type(estimator).__name__} its parameters "
            f"build: {'; '.join(problems)}."
        )
    for name, (shape, dtype) in shapes.items():
        stored_shape, stored_dtype = header[name]
        stored_dtype = _HEADER_DTYPES.get(stored_dtype, stored_dtype)
        if stored_shape != shape or stored_dtype != dtype:
            raise ValueError(
                f"The tensor {name!r} of {path} has shape {stored_shape} and dtype "
                f"{stored_dtype}; the network its parameters build expects {shape} and "
                f"{dtype}."
            )


def _some(names, limit=10):
    shown = ", ".join(repr(name) for name in names[:limit])
    return f"[{shown}{', ...' if len(names) > limit else ''}]"
