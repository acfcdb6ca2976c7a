"""Amortized instance-wise feature selection for black-box models, with a scikit-learn API."""

from ._networks import MLP
from ._persist import load, save
from .black_box import BlackBox, as_black_box
from .explainers import L2XExplainer, RealXExplainer
from .metrics import EvalXEvaluator

__version__ = "0.1.0"

__all__ = [
    "BlackBox",
    "EvalXEvaluator",
    "L2XExplainer",
    "MLP",
    "RealXExplainer",
    "__version__",
    "as_black_box",
    "load",
    "save",
]
