"""Continuous relaxations of discrete feature selections, in ``torch.distributions`` style.

No training logic lives here: a relaxation turns per-feature logits into a differentiable
sample of a (nearly) discrete mask, and, where it has one, a mode used at explanation time.
"""

from ._concrete import GumbelTopK, RebarBernoulli, RebarSample, SubsetConcrete, gumbel_noise
from ._kumaraswamy import HardKumaraswamy, open_gate_probability, open_logit

__all__ = ["GumbelTopK", "HardKumaraswamy", "RebarBernoulli", "RebarSample", "SubsetConcrete",
           "gumbel_noise", "open_gate_probability", "open_logit"]
