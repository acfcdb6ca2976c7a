"""The explainers, one private module per method."""

from ._l2x import L2XExplainer
from ._realx import RealXExplainer

__all__ = ["L2XExplainer", "RealXExplainer"]
