"""The explainers, one private module per method."""

from ._l2x import L2XExplainer

__all__ = ["L2XExplainer"]
