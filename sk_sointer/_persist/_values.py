"""Parameters and fitted attributes as JSON: what JSON has no type for is written as a
one-key object (a tuple, an array, a network factory, an optimizer, a ``RandomState``),
and read back refusing anything that :func:`~sk_sointer.save` does not write."""

import math

import numpy as np

from .._networks import CNN, MLP, CNNSelector, EnergyMLP, TokenCNN, TokenCNNSelector
from .._model_judge import ModelRefinement, RowRepair
from .._estimator import _OPTIMIZERS
from ..explainers._energy import EnergyNet
from ._format import _array_budget

# The package's network factories, by the name a file gives them. A factory is stored as
# its parameters, so only a class whose modules follow from them alone can be listed.
_FACTORIES = {"MLP": MLP, "CNN": CNN, "CNNSelector": CNNSelector, "TokenCNN": TokenCNN,
              "TokenCNNSelector": TokenCNNSelector, "EnergyMLP": EnergyMLP}

# Every package class a file may name: the factories and configuration objects whose state
# is their parameters (written as {"factory": name, "params": {...}}).
_FROM_PARAMS = {**_FACTORIES, "ModelRefinement": ModelRefinement, "RowRepair": RowRepair,
                "EnergyNet": EnergyNet}

_OPTIMIZER_NAMES = {cls: name for name, cls in _OPTIMIZERS.items()}

# Items of a list in a network factory's parameters (hidden_units, channels): one layer
# each, built (on the meta device) before the weights are compared with the file's.
_MAX_LAYERS = 256


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
        f"sk_sointer.save cannot store {where}: {_described(value)} is not data it can "
        f"write without pickle.{hint}"
    )


def _described(value, limit=80):
    """``value`` in a few words for an error message: its type and shape for an array-like
    (a frame's printed form runs to thousands of characters), else its repr, shortened."""
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple):
        return f"a {type(value).__name__} of shape {shape}"
    text = repr(value)
    if len(text) > limit:
        text = text[:limit - 3] + "..."
    return f"{text} ({type(value).__name__})"


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
        dtype = np.dtype(obj["dtype"]) if isinstance(obj["dtype"], str) else None
    except (TypeError, ValueError):
        dtype = None
    if dtype is None or dtype.kind not in "biufUO" or dtype.fields is not None:
        raise ValueError(f"The file's {where} hold an array of unknown dtype {obj['dtype']!r}.")
    shape = obj["shape"]
    if not isinstance(shape, list) or not all(
            isinstance(size, int) and not isinstance(size, bool) for size in shape):
        raise ValueError(f"The file's {where} hold an array of shape {shape!r}; a shape is a "
                         "list of whole numbers, such as [3] or [2, 4].")
    shape = tuple(shape)
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
