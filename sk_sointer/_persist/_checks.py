"""What a file says, checked before anything is built from it: the estimator's class and
parameters, its fitted attributes against the tensors' shapes, the stored arrays, the
tensors against the networks its parameters build, and the black box given to load."""

import dis
import functools
import inspect
import math
import re
import sys
import types

import numpy as np

from .._masking import Masker
from .._utils import resolve_device
from .._estimator import _SkorchEstimatorMixin
from ..black_box import as_black_box
from ._format import _HEADER_DTYPES, _LAYOUT_ATTRIBUTES, _STRUCTURED
from ._values import _decode_object

_ATTRIBUTE_NAME = re.compile(r"[a-z][a-z0-9_]*_\Z")

# Fitted attributes that every estimator the loader builds reads, and those of one class.
_COMMON_ATTRIBUTES = ("n_features_in_", "row_shape_", "image_shape_", "n_tokens_")
_CLASS_ATTRIBUTES = {"HardKumaExplainer": ("k_", "selection_rate_"),
                     "SOInterExplainer": ("k_", "objective_")}
_EXPLAINER_ATTRIBUTES = ("k_",)


def _load_device(device):
    """The torch device the networks are loaded on: a CPU or an available CUDA device."""
    resolved = resolve_device(device)  # an index beyond the CUDA devices is refused there
    if resolved.type not in ("cpu", "cuda"):
        raise ValueError(f"sk_sointer.load puts the networks on 'cpu', 'cuda', 'cuda:N' or "
                         f"'auto'; got device={device!r}.")
    return resolved


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


@functools.lru_cache(maxsize=None)
def _assigned_names(cls):
    """The fitted attributes an estimator of ``cls`` can have: every public name ending in
    ``_`` that the code of the modules defining ``cls`` and its bases assigns as an
    attribute (``self.k_ = ...``), read from the bytecode, those that scikit-learn's
    ``validate_data`` sets and the layout's. A file naming another would set it on the
    estimator."""
    # fit_time_ is set by fit itself, which a test may replace before a load.
    names = {"n_features_in_", "feature_names_in_", "fit_time_", *_LAYOUT_ATTRIBUTES}
    modules = {sys.modules[base.__module__] for base in cls.__mro__
               if base.__module__.split(".")[0] == __name__.split(".")[0]}
    codes = [obj.__code__ for module in modules for obj in _functions(module)]
    while codes:
        code = codes.pop()
        codes.extend(const for const in code.co_consts if isinstance(const, types.CodeType))
        names.update(instruction.argval for instruction in dis.get_instructions(code)
                     if instruction.opname == "STORE_ATTR" and _is_fitted_attribute(
                         instruction.argval))
    return frozenset(names)


def _functions(module):
    """The functions defined in ``module``, at its top level and in its classes."""
    for obj in vars(module).values():
        if inspect.isfunction(obj) and obj.__module__ == module.__name__:
            yield inspect.unwrap(obj)
        elif inspect.isclass(obj) and obj.__module__ == module.__name__:
            for member in vars(obj).values():
                member = getattr(member, "__func__", member)  # static and class methods
                if isinstance(member, property):
                    yield from (f for f in (member.fget, member.fset) if f is not None)
                elif inspect.isfunction(member):
                    yield inspect.unwrap(member)  # fit under @_fit_context


def _attributes(doc, estimator, header):
    """The fitted attributes, each checked against the class and the tensors' shapes."""
    return _checked_attributes(doc, type(estimator), estimator.tokens, header)


def _checked_attributes(doc, cls, tokens, header):
    """:func:`_attributes` of an estimator of class ``cls`` with the parameter ``tokens``,
    read without building one (``inspect`` checks a file so)."""
    attributes = _decode_object(doc.get("attributes"), "fitted attributes")
    # Files of 0.1 hold the report of the last repaired transform, which an explainer no
    # longer keeps (repair_masks returns it).
    attributes.pop("repair_report_", None)
    for name in attributes:
        if not _ATTRIBUTE_NAME.match(name) or name in _STRUCTURED:
            raise ValueError(f"The file holds an invalid fitted attribute name {name!r}.")
    name = cls.__name__
    unknown = sorted(set(attributes) - _assigned_names(cls))
    if unknown:
        raise ValueError(f"The file holds fitted attributes {_some(unknown)} that a {name} "
                         "does not have; sk_sointer.save writes only the estimator's own.")
    required = [*_COMMON_ATTRIBUTES, *_CLASS_ATTRIBUTES.get(name, ())]
    if hasattr(cls, "_masks_from_scores"):  # an explainer: its masks need k_
        required += _EXPLAINER_ATTRIBUTES
    missing = sorted(set(required) - set(attributes))
    if missing:
        raise ValueError(f"The file lacks the fitted attributes {missing} of a {name}.")

    # n_features_in_ is also the length of the masker's arrays: the header bounds it.
    n_features = attributes["n_features_in_"]
    # The baseline holds one value per feature (per column of a table), as the rows.
    if "masker_.baseline_" not in header:
        raise ValueError("The file lacks the tensor 'masker_.baseline_'.")
    shape, _ = header["masker_.baseline_"]
    if not _is_int(n_features) or n_features < 1 or shape != (n_features,):
        raise ValueError(f"The file's n_features_in_={n_features!r} does not match its "
                         f"tensor 'masker_.baseline_' of shape {shape}.")
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
    if bool(tokens) != (n_tokens is not None) or (
        n_tokens is not None and (not _is_int(n_tokens) or n_tokens < 1)
    ):
        raise ValueError(f"The file's n_tokens_={n_tokens!r} does not match tokens="
                         f"{tokens!r}.")
    k = attributes.get("k_")
    if k is not None and (not _is_int(k) or not 1 <= k <= n_features):
        raise ValueError(f"The file's k_={k!r} should be None or an int in [1, "
                         f"n_features_in_={n_features}].")
    rate = attributes.get("selection_rate_")
    if "selection_rate_" in attributes and (
        isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate <= 1
    ):
        raise ValueError(f"The file's selection_rate_={rate!r} should be a number in (0, 1].")
    masker = doc.get("masker")
    _check_fitted_values(attributes, n_features,
                         table=isinstance(masker, dict) and "codec" in masker)
    return attributes


def _check_fitted_values(attributes, n_features, *, table):
    """The fitted arrays and counts a file holds, checked as ``fit`` (or ``transform``)
    makes them, so that none reaches ``score`` or ``check`` to fail there with numpy's
    words: ``background_`` as ``draw_background`` leaves it (rows of ``n_features`` numbers,
    at least one, finite; NaN only in a table's codes, an empty cell), the refinement's
    fidelities (finite, one per epoch and one before), the query count and fit time."""
    background = attributes.get("background_")
    if background is not None:
        if (not isinstance(background, np.ndarray) or background.dtype.kind != "f"
                or background.ndim != 2 or background.shape[1] != n_features
                or len(background) < 1):
            raise ValueError(
                f"The file's background_ ({_array_text(background)}) should be None or at "
                f"least one row of n_features_in_={n_features} numbers.")
        allowed = np.isfinite(background) | (table & np.isnan(background))
        if not allowed.all():
            what = "infinite values" if table else "NaN or infinite values"
            raise ValueError(f"The file's background_ holds {what}; fit keeps finite rows"
                             f"{' (NaN: an empty cell)' if table else ''}.")
    fidelity = attributes.get("refinement_fidelity_")
    if fidelity is not None and (
        not isinstance(fidelity, np.ndarray) or fidelity.dtype.kind != "f"
        or fidelity.ndim != 1 or len(fidelity) < 1 or not np.isfinite(fidelity).all()
    ):
        raise ValueError(f"The file's refinement_fidelity_ ({_array_text(fidelity)}) should "
                         "be None or finite numbers, one an epoch.")
    for name in ("n_model_queries_",):
        value = attributes.get(name, 0)
        if not _is_int(value) or value < 0:
            raise ValueError(f"The file's {name}={value!r} should be an int >= 0.")
    fit_time = attributes.get("fit_time_", 0.0)
    if isinstance(fit_time, bool) or not isinstance(fit_time, (int, float)) or not (
            math.isfinite(fit_time) and fit_time >= 0):
        raise ValueError(f"The file's fit_time_={fit_time!r} should be a number >= 0.")


def _array_text(value):
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    text = repr(value)
    return text if len(text) <= 60 else f"a {type(value).__name__}"


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_shape(shape, lengths, n_values):
    return (isinstance(shape, tuple) and len(shape) in lengths
            and all(_is_int(size) and size > 0 for size in shape)
            and math.prod(shape) == n_values)


def _int(value):
    if not _is_int(value):
        raise TypeError(f"{value!r} is not an int")
    return value


# The parts of a table masker's state that are JSON (its codec and its encoding's plan),
# not arrays.
_TABLE_JSON = ("codec", "slots")


def _masker_tensor_names(masker):
    """The names of the tensors a file holds of ``masker``'s state."""
    return {f"masker_.{name}" for name in masker.state_dict()
            if name != "n_groups_" and name not in _TABLE_JSON}


def _array(tensors, name, shape, kind, *, allow_nan=False):
    if name not in tensors:
        raise ValueError(f"The file lacks the tensor {name!r}.")
    array = tensors[name].numpy()
    if array.shape != shape or array.dtype.kind != kind:
        raise ValueError(
            f"The file's tensor {name!r} has shape {array.shape} and dtype {array.dtype}; "
            f"expected shape {shape}."
        )
    if kind == "f" and not (np.isfinite(array) | (allow_nan & np.isnan(array))).all():
        raise ValueError(f"The file's tensor {name!r} holds NaN or infinite values.")
    return array


def _attach(black_box, estimator):
    if black_box is None:
        return None
    black_box = as_black_box(black_box).with_row_shape(estimator.layout_.row_shape)
    black_box = black_box.with_token_ids(estimator.layout_.tokens)
    codec = getattr(estimator.masker_, "codec", None)
    if codec is not None:  # a table's model takes the rows decoded into frames
        black_box = black_box.with_table(codec)
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
    try:
        # predict: an estimator gets the row in float64, as in fit (KMeans fitted on
        # float64 refuses float32 rows).
        black_box.predict(estimator.masker_.baseline_[None])
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


def _check_tensors(estimator, shapes, header, path):
    """The file holds every tensor the rebuilt estimator has, no other, each of the
    shape and dtype the estimator's networks give it (read from the header)."""
    expected = set(shapes)
    expected |= _masker_tensor_names(estimator.masker_)
    expected |= {"output_spec_.center", "output_spec_.scale"}
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
