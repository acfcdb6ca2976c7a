"""Amortized instance-wise feature selection for black-box models, with a scikit-learn API.

The public names are imported on first use (PEP 562): ``python -m sk_sointer --help`` and
anything else that only reads the version run without importing torch.
"""

from importlib import import_module as _import_module
from importlib.util import find_spec as _find_spec

from ._version import __version__

# Public name -> the module that defines it.
_PUBLIC = {
    "BlackBox": ".black_box",
    "CNN": "._networks",
    "CNNSelector": "._networks",
    "EnergyMLP": "._networks",
    "EnergyNet": ".explainers",
    "EvalXEvaluator": ".metrics",
    "HardKumaExplainer": ".explainers",
    "L2XExplainer": ".explainers",
    "MEEDExplainer": ".explainers",
    "MLP": "._networks",
    "ModelRefinement": "._model_judge",
    "RealXExplainer": ".explainers",
    "RowRepair": "._model_judge",
    "SOInterExplainer": ".explainers",
    "TokenCNN": "._networks",
    "TokenCNNSelector": "._networks",
    "as_black_box": ".black_box",
    "encoded_groups": "._encoding",
    "load": "._persist",
    "patch_groups": "._patches",
    "save": "._persist",
}

__all__ = sorted([*_PUBLIC, "__version__"])


def __getattr__(name):
    if name in _PUBLIC:
        value = getattr(_import_module(_PUBLIC[name], __name__), name)
    elif not name.startswith("__") and _find_spec(f"{__name__}.{name}"):
        # A submodule read as an attribute (sk_sointer.metrics), as after an eager import.
        value = _import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *_PUBLIC})
