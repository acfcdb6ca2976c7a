"""Continuous relaxations of discrete feature selections, in ``torch.distributions`` style.

No training logic lives here: a relaxation turns per-feature logits into a differentiable
sample of a (nearly) discrete mask, and, where it has one, a mode used at explanation time.
"""

import torch
from torch.distributions import Distribution, constraints
from torch.distributions.utils import broadcast_all


class SubsetConcrete(Distribution):
    r"""Relaxed distribution over k-subsets: the maximum of k Concrete samples.

    Each of the k draws is a Concrete (Gumbel-softmax) vector on the simplex over the
    features,

    .. math:: C^j_i = \mathrm{softmax}_i\big((\ell_i + G_{j,i}) / \tau\big),
              \qquad G_{j,i} \sim \mathrm{Gumbel}(0, 1),

    and the relaxed mask takes their elementwise maximum, :math:`V_i = \max_j C^j_i`
    (L2X, Chen et al. 2018, eqs. 5-6). As ``temperature`` goes to 0 a sample approaches a
    0/1 vector with at most ``k`` ones (two draws can land on the same feature).

    The density of the maximum has no closed form, so :meth:`log_prob` is not provided;
    training uses the reparameterised :meth:`rsample` only.

    Parameters
    ----------
    temperature : float or Tensor
        Relaxation temperature :math:`\tau > 0`.
    logits : Tensor of shape (..., n_features)
        Unnormalised selection logits.
    k : int
        Number of Concrete draws, i.e. the size of the subset.
    validate_args : bool, optional
        Check the arguments, as in :class:`torch.distributions.Distribution`.

    Examples
    --------
    >>> import torch
    >>> d = SubsetConcrete(0.1, torch.tensor([[3.0, 2.0, -1.0, -1.0]]), k=2)
    >>> d.rsample().shape
    torch.Size([1, 4])
    >>> d.mode
    tensor([[1., 1., 0., 0.]])
    """

    arg_constraints = {"temperature": constraints.positive, "logits": constraints.real_vector}
    support = constraints.independent(constraints.unit_interval, 1)
    has_rsample = True

    def __init__(self, temperature, logits, k, validate_args=None):
        if logits.dim() < 1:
            raise ValueError("logits should have at least one dimension (the features).")
        n_features = logits.shape[-1]
        if not 1 <= int(k) <= n_features:
            raise ValueError(f"k should be in [1, n_features = {n_features}]; got {k}.")
        self.k = int(k)
        self.logits = logits
        self.temperature, _ = broadcast_all(temperature, logits[..., :1])
        self.temperature = self.temperature.squeeze(-1)
        super().__init__(logits.shape[:-1], logits.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(SubsetConcrete, _instance)
        batch_shape = torch.Size(batch_shape)
        new.k = self.k
        new.logits = self.logits.expand(batch_shape + self.event_shape)
        new.temperature = self.temperature.expand(batch_shape)
        super(SubsetConcrete, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=torch.Size()):
        shape = self._extended_shape(sample_shape)
        noise_shape = shape[:-1] + (self.k,) + shape[-1:]
        # Noise is drawn in float32 even under reduced precision: float16's smallest normal
        # and its log are too coarse for the Gumbel transform (L2X's code clamps at the
        # float32 tiny, which keeps every draw finite).
        uniform = torch.rand(noise_shape, device=self.logits.device, dtype=torch.float32)
        uniform = uniform.clamp_min(torch.finfo(torch.float32).tiny)
        gumbel = -torch.log(-torch.log(uniform)).to(self.logits.dtype)
        temperature = self.temperature[..., None, None]
        concrete = torch.softmax((self.logits.unsqueeze(-2) + gumbel) / temperature, dim=-1)
        return concrete.amax(dim=-2)

    @property
    def mode(self):
        """The k-hot mask of the k largest logits (the explanation, L2X §3.4)."""
        return topk_mask(self.logits, self.k)


def topk_mask(scores, k):
    """k-hot mask of the ``k`` largest scores along the last axis; ties go to lower indices.

    A stable sort is what makes the tie-break deterministic: ``torch.topk`` does not promise
    which of two equal scores it returns.
    """
    order = torch.sort(scores, dim=-1, descending=True, stable=True).indices[..., :k]
    return torch.zeros_like(scores).scatter_(-1, order, 1.0)
