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

:func:`save` and :func:`load` are here; what they stand on is one module each: the file
and the bounds on reading it (``_format``), values as JSON (``_values``), what a file says
checked against the package's classes and the tensors' shapes (``_checks``), and the
estimator's parts written and rebuilt (``_state``).
"""

import os
import warnings

import numpy as np
from safetensors.torch import load_file
from sklearn.utils.validation import check_is_fitted

from .._layout import RowLayout
from .._version import __version__
from ._checks import (
    _attach,
    _attributes,
    _check_black_box,
    _check_class,
    _class_named,
    _is_fitted_attribute,
    _load_device,
    _public_estimators,
    _with_params,
)
from ._format import (
    _LAYOUT_ATTRIBUTES,
    _STRUCTURED,
    FORMAT_VERSION,
    _path_of,
    _small_tensors,
    _write_file,
    read_header,
)
from ._state import (
    _load_masker,
    _load_net,
    _load_spec,
    _masker_state,
    _net_problem,
    _spec_state,
    _stored_modules,
)
from ._values import _decode_array, _decode_object, _described, _encode, _output_config

# Names also read from here: by the CLI's inspect (read_header, _class_named, _encode,
# _decode_array) and by the tests, which replace load_file and _small_tensors here (load
# reads the tensors through these two names only) and list _public_estimators.
__all__ = ["load", "save"]


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
            name: _encode(_stored_param(estimator, name, value), f"parameter {name!r}")
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
    _write_file(path, doc, tensors)


def _stored_param(estimator, name, value):
    """A parameter as the file stores it: background rows given as a DataFrame (or another
    array-like) as the rows ``fit`` read, in the fitted column order
    (``BaseExplainer._background_rows``); a table's background frame is refused (its cells
    are text, dates, empty cells), which ``background_`` keeps as codes."""
    if name != "background" or not hasattr(value, "__array__") or isinstance(value, np.ndarray):
        return value
    where = f"sk_sointer.save cannot store parameter 'background' ({_described(value)})"
    if getattr(estimator.masker_, "codec", None) is not None:
        raise ValueError(
            f"{where}: a table's rows are not numbers. background_ keeps them as codes, "
            "which the file stores: set_params(background=None) before saving keeps what "
            "the explainer explains and scores (a later fit needs the rows again)."
        )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # fit has warned of rows read by position
            return np.asarray(estimator._background_rows(value), dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from None


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
    # The networks' tensors are read here, as the small ones above, once the file's
    # parameters are known to build networks of the shapes its header gives them.
    problem, selector_in_features = _net_problem(estimator, doc.get("net"), header, path)
    estimator.net_ = _load_net(estimator, problem, selector_in_features, load_file(path),
                               device, path)
    if estimator.black_box_ is not None:
        _check_black_box(estimator)
    return estimator
