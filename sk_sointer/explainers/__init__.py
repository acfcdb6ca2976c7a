"""The explainers, one private module per method."""

from ._energy import EnergyNet
from ._hardkuma import HardKumaExplainer
from ._l2x import L2XExplainer
from ._meed import MEEDExplainer
from ._realx import RealXExplainer
from ._sointer import SOInterExplainer

__all__ = ["EnergyNet", "HardKumaExplainer", "L2XExplainer", "MEEDExplainer", "RealXExplainer", "SOInterExplainer"]
