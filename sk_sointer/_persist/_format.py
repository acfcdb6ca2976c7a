"""The file: a safetensors file whose string metadata holds one JSON document, written
and read here, and the bounds that keep reading it within a small multiple of its size
whatever it says."""

import json
import os
import re

import numpy as np
import safetensors
import torch
from safetensors.torch import save_file

from .._version import __version__

FORMAT_VERSION = 1
"""Version of the file layout that :func:`save` writes; :func:`load` reads it and older."""

_METADATA_KEY = "sk_sointer"

# Fitted attributes with their own place in the file (or, for the black box, none).
_STRUCTURED = ("net_", "masker_", "output_spec_", "black_box_", "layout_", "energy_net_")
# The layout's parts, stored as the fitted attributes of these names (RowLayout.state_dict).
_LAYOUT_ATTRIBUTES = {"row_shape_": "row_shape", "image_shape_": "image_shape",
                      "n_tokens_": "n_tokens"}

# The keys of the JSON document that save writes ("output_config" only after set_output);
# load reads these and refuses a document with others, which nothing would read.
_DOCUMENT_KEYS = ("format_version", "sk_sointer_version", "class", "params", "attributes",
                  "net", "masker", "output_spec", "output_config")

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

# Safetensors dtype names, as the header gives them.
_HEADER_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
    "U8": torch.uint8, "BOOL": torch.bool,
}


def _path_of(path):
    """``path`` as a str: bytes paths are decoded as the file system does."""
    try:
        return os.fsdecode(os.fspath(path))
    except TypeError:
        raise TypeError(
            f"path should be a str, bytes or os.PathLike; got {type(path).__name__}."
        ) from None


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
    unknown = sorted(set(doc) - set(_DOCUMENT_KEYS))
    if unknown:
        shown = ", ".join(repr(_short(key)) for key in unknown[:5])
        raise ValueError(
            f"The sk_sointer metadata of {path} holds the keys [{shown}"
            f"{', ...' if len(unknown) > 5 else ''}] that sk_sointer.save does not write; "
            f"it writes {', '.join(_DOCUMENT_KEYS)}."
        )
    return doc, header


def _short(key):
    """A key of the document cut to 40 characters: it comes from the file."""
    return key if len(key) <= 40 else key[:40] + "..."


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


def _write_file(path, doc, tensors):
    """Write ``tensors`` and the JSON document ``doc`` as one safetensors file."""
    try:
        save_file(tensors, path, metadata={_METADATA_KEY: json.dumps(doc)})
    except (safetensors.SafetensorError, OSError) as exc:
        raise OSError(f"Cannot write {path}: {exc}") from None


def _small_tensors(path, header):
    """The masker's and the output spec's tensors (one value per feature or output column),
    read once their shapes are known to match the document."""
    names = [name for name in header if name.startswith(("masker_.", "output_spec_."))]
    with safetensors.safe_open(path, framework="pt") as file:
        return {name: file.get_tensor(name) for name in names}
