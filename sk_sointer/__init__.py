"""Amortized instance-wise feature selection for black-box models, with a scikit-learn API."""

from ._networks import CNN, MLP, CNNSelector, EnergyMLP, TokenCNN, TokenCNNSelector
from ._persist import load, save
from ._search import ModelRefinement
from .black_box import BlackBox, as_black_box
from .explainers import (
    EnergyNet,
    HardKumaExplainer,
    L2XExplainer,
    MEEDExplainer,
    RealXExplainer,
    SOInterExplainer,
)
from ._version import __version__
from .metrics import EvalXEvaluator

__all__ = [
    "BlackBox",
    "CNN",
    "CNNSelector",
    "EnergyMLP",
    "EnergyNet",
    "EvalXEvaluator",
    "HardKumaExplainer",
    "L2XExplainer",
    "MEEDExplainer",
    "MLP",
    "ModelRefinement",
    "RealXExplainer",
    "SOInterExplainer",
    "TokenCNN",
    "TokenCNNSelector",
    "__version__",
    "as_black_box",
    "load",
    "save",
]
