"""Amortized instance-wise feature selection for black-box models, with a scikit-learn API."""

from ._networks import MLP
from .black_box import BlackBox, as_black_box
from .explainers import L2XExplainer

__version__ = "0.1.0"

__all__ = ["BlackBox", "L2XExplainer", "MLP", "__version__", "as_black_box"]
