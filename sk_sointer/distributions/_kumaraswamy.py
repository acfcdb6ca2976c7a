"""HardKuma's gates: the Hard Kumaraswamy distribution (a stretched and rectified
Kumaraswamy), with its probabilities of 0 and 1 and its expected L0 in log space."""

import functools
import math
from numbers import Real

import torch
import torch.nn.functional as F
from torch.distributions import Distribution, Kumaraswamy, constraints
from torch.distributions.utils import broadcast_all


class HardKumaraswamy(Distribution):
    r"""Hard Kumaraswamy gates: a stretched Kumaraswamy variable rectified into [0, 1].

    A Kumaraswamy variable :math:`K \sim \mathrm{Kuma}(a, b)` on (0, 1), with cdf
    :math:`F(k) = 1 - (1 - k^a)^b`, is stretched to :math:`T = l + (r - l) K` over
    :math:`(l, r) \supset (0, 1)` and clipped, :math:`H = \min(1, \max(0, T))` (Bastings et
    al. 2019, §3). The gate is exactly 0 with probability :math:`P_0 = F(k_0)` and exactly 1
    with probability :math:`P_1 = 1 - F(k_1)`, where :math:`k_0 = -l / (r - l)` and
    :math:`k_1 = (1 - l) / (r - l)`; in between it has the density of :math:`T`. Samples are
    reparameterised through the inverse cdf, so a loss of :math:`H` trains :math:`a` and
    :math:`b`, and the expected number of non-zero gates (the expected L0 norm) is the
    closed form :math:`\sum_j (1 - P_{0,j})`, differentiable without sampling.

    Gates are independent: the batch shape is the shape of ``concentration1`` and
    ``concentration0`` broadcast together, the event shape is ``()``.

    Parameters
    ----------
    concentration1 : float or Tensor
        :math:`a > 0` (the name follows :class:`torch.distributions.Kumaraswamy`).
    concentration0 : float or Tensor
        :math:`b > 0`.
    lower, upper : float, default=-0.1, 1.1
        The stretch :math:`(l, r)`, with :math:`l < 0` and :math:`r > 1` (the paper's).
    validate_args : bool, optional
        Check the arguments, as in :class:`torch.distributions.Distribution`.

    See Also
    --------
    HardKumaraswamy.from_logits : Gates from one unconstrained score each.
    RebarBernoulli : Independent Bernoulli selections (REAL-X).

    Notes
    -----
    Every probability is computed in log space, with :math:`\log(1 - e^x)` evaluated by
    the branch that is accurate for :math:`x` (``log(-expm1(x))`` near 0, ``log1p(-exp(x))``
    below :math:`-\log 2`), so shape parameters from :math:`10^{-6}` to :math:`10^3` give
    finite values and gradients. The inverse cdf used for sampling is
    :math:`k = \exp(\log(1 - e^{\log(1 - u) / b}) / a)` on :math:`u` clamped to
    :math:`[10^{-6}, 1 - 10^{-6}]`.

    References
    ----------
    .. [1] J. Bastings, W. Aziz and I. Titov, "Interpretable Neural Predictions with
       Differentiable Binary Variables", ACL 2019.
    .. [2] P. Kumaraswamy, "A generalized probability density function for double-bounded
       random processes", Journal of Hydrology, 1980.

    Examples
    --------
    >>> import torch
    >>> gates = HardKumaraswamy(torch.tensor([1.0, 0.5]), torch.tensor([1.0, 0.5]))
    >>> gates.prob_zero
    tensor([0.0833, 0.1566])
    >>> gates.prob_one
    tensor([0.0833, 0.2063])
    >>> gates.rsample((3,)).shape
    torch.Size([3, 2])
    """

    arg_constraints = {
        "concentration1": constraints.positive,
        "concentration0": constraints.positive,
    }
    support = constraints.unit_interval
    has_rsample = True

    # u is drawn in [EPS, 1 - EPS]: the inverse cdf is then finite in float32 (the
    # reference code clamps at 1e-3, which trims the tails of every gate).
    _uniform_eps = 1e-6

    def __init__(self, concentration1, concentration0, lower=-0.1, upper=1.1,
                 validate_args=None):
        if not lower < 0 < 1 < upper:
            raise ValueError(
                f"The stretch should satisfy lower < 0 < 1 < upper; got ({lower}, {upper})."
            )
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        self.lower, self.upper = float(lower), float(upper)
        super().__init__(self.concentration1.shape, validate_args=validate_args)

    @classmethod
    def from_logits(cls, logits, **kwargs):
        r"""Gates from one unconstrained score per gate.

        :math:`a = \mathrm{softplus}(\ell) / 2` and :math:`b = e^{-\mathrm{softplus}(\ell)}`,
        both at least :math:`10^{-6}`. The gate opens monotonically with the score: both
        point masses move like a sigmoid of it (:math:`P_0 \approx 1 - a \log 12` for a
        very negative score, :math:`P_1 \to 1` and :math:`P_0 \approx b\,12^{-a}` for a
        large one), so neither an open nor a closed gate loses its gradient, and an open
        gate sits at exactly 1 rather than spread over (0, 1). At :math:`\ell = 0` the gate
        is non-zero with probability 0.76. One score per gate lets every selector network
        (one logit per feature or group) parametrise the gates; the paper's two separate
        heads for :math:`a` and :math:`b`, each ``softplus`` then clamped to
        :math:`[10^{-6}, 100]`, lose the gradient of a gate at either clamp and make the
        point mass at 0 vanish faster than exponentially as :math:`a` grows.

        Parameters
        ----------
        logits : Tensor
            One score per gate.
        **kwargs
            ``lower``, ``upper`` and ``validate_args``.
        """
        softplus = F.softplus(logits)
        return cls((softplus / 2).clamp_min(1e-6), torch.exp(-softplus).clamp_min(1e-6),
                   **kwargs)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HardKumaraswamy, _instance)
        batch_shape = torch.Size(batch_shape)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        new.lower, new.upper = self.lower, self.upper
        super(HardKumaraswamy, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    # -- the Kumaraswamy part ---------------------------------------------------------------

    @property
    def kumaraswamy(self):
        """The unstretched :class:`torch.distributions.Kumaraswamy` of the gates."""
        return Kumaraswamy(self.concentration1, self.concentration0, validate_args=False)

    def _log_survival(self, k):
        """``log(1 - F(k)) = b log(1 - k^a)`` for a constant or tensor ``k`` in (0, 1)."""
        if isinstance(k, Real):  # a constant: no tensor copied to the device
            log_k = math.log(k)
        else:
            log_k = torch.log(torch.as_tensor(k, dtype=self.concentration1.dtype,
                                              device=self.concentration1.device))
        return self.concentration0 * _log1mexp(self.concentration1 * log_k)

    @property
    def _k0(self):
        return -self.lower / (self.upper - self.lower)

    @property
    def _k1(self):
        return (1.0 - self.lower) / (self.upper - self.lower)

    # -- point masses and sparsity terms ----------------------------------------------------

    @property
    def prob_zero(self):
        """:math:`P(H = 0) = F(k_0)`, per gate."""
        return -torch.expm1(self._log_survival(self._k0))

    @property
    def prob_one(self):
        """:math:`P(H = 1) = 1 - F(k_1)`, per gate."""
        return torch.exp(self._log_survival(self._k1))

    @property
    def prob_nonzero(self):
        """:math:`P(H \\neq 0) = 1 - P_0`, per gate: each gate's expected L0 norm."""
        return torch.exp(self._log_survival(self._k0))

    def expected_l0(self, dim=-1):
        """Expected number of non-zero gates along ``dim``: the sum of :attr:`prob_nonzero`."""
        return self.prob_nonzero.sum(dim)

    def expected_transitions(self, pairs):
        r"""Expected number of zero / non-zero changes between paired gates (the fused
        lasso of Bastings et al., eq. 12), gates being independent:
        :math:`\sum_{(i, j)} P_{0,i}(1 - P_{0,j}) + (1 - P_{0,i}) P_{0,j}`.

        Parameters
        ----------
        pairs : LongTensor of shape (n_pairs, 2)
            Indices along the last axis of the neighbouring gates (consecutive tokens,
            adjacent pixels or patches).

        Returns
        -------
        transitions : Tensor of the batch shape without its last axis
        """
        return self.transition_probs(pairs).sum(-1)

    def transition_probs(self, pairs):
        """The probability that each pair of gates differs in being zero, ``(..., n_pairs)``
        (see :meth:`expected_transitions`)."""
        zero = self.prob_zero
        first, second = zero[..., pairs[:, 0]], zero[..., pairs[:, 1]]
        return first + second - 2 * first * second

    # -- the distribution -------------------------------------------------------------------

    def rsample(self, sample_shape=torch.Size()):
        shape = self._extended_shape(sample_shape)
        eps = self._uniform_eps
        a = self.concentration1.expand(shape)
        b = self.concentration0.expand(shape)
        uniform = torch.rand(shape, dtype=a.dtype, device=a.device).clamp(eps, 1 - eps)
        # The inverse cdf (1 - (1 - u)^(1/b))^(1/a) in log space: the naive form rounds
        # (1 - u)^(1/b) to 1 for a large b and its power 1/a underflows for a small a.
        kuma = torch.exp(_log1mexp(torch.log1p(-uniform) / b) / a)
        stretched = self.lower + (self.upper - self.lower) * kuma
        return stretched.clamp(0.0, 1.0)

    def cdf(self, value):
        """:math:`P(H \\le h)`: 0 below 0, :math:`P_0` at 0, 1 from 1 on."""
        if self._validate_args:
            self._validate_sample(value)
        value = torch.as_tensor(value, dtype=self.concentration1.dtype,
                                device=self.concentration1.device)
        inside = self._stretched_to_kuma(value.clamp(0.0, 1.0))
        below = -torch.expm1(self._log_survival(inside))
        return torch.where(value >= 1, torch.ones_like(below), below)

    def log_prob(self, value):
        """Log-probability of exactly 0 or exactly 1 at the point masses, log-density of the
        stretched variable in between (the mixed density the paper uses)."""
        if self._validate_args:
            self._validate_sample(value)
        value = torch.as_tensor(value, dtype=self.concentration1.dtype,
                                device=self.concentration1.device)
        a, b = self.concentration1, self.concentration0
        log_zero = _log1mexp(self._log_survival(self._k0))
        log_one = self._log_survival(self._k1)
        # The density is evaluated strictly inside (0, 1) so that the branches not taken
        # stay finite and pass no NaN into the gradient.
        inside = self._stretched_to_kuma(value.clamp(1e-6, 1 - 1e-6))
        log_inside = torch.log(inside)
        log_density = (
            torch.log(a) + torch.log(b) + (a - 1) * log_inside
            + (b - 1) * _log1mexp(a * log_inside)
            - math.log(self.upper - self.lower)
        )
        return torch.where(value <= 0, log_zero, torch.where(value >= 1, log_one, log_density))

    def _stretched_to_kuma(self, value):
        return (value - self.lower) / (self.upper - self.lower)

    @property
    def scores(self):
        """What an explainer's ``explain`` returns: the probability that a gate is open."""
        return self.prob_nonzero

    @staticmethod
    def selection_threshold():
        """With ``k=None``, the gates with a higher chance of being open than this are
        selected: those whose test-time value (:attr:`mode`) is non-zero."""
        return open_gate_probability()

    @property
    def mode(self):
        """The deterministic gate of the paper's test time: 0 or 1, whichever point mass is
        larger, unless the continuous part outweighs both, then the Kumaraswamy mean
        :math:`b\\,B(1 + 1/a, b)` (of the unstretched variable, as in the reference code)."""
        zero, one = self.prob_zero, self.prob_one
        continuous = 1 - zero - one
        discrete = (one >= zero).to(zero.dtype)
        middle = continuous > torch.maximum(zero, one)
        return torch.where(middle, self.kumaraswamy.mean, discrete)


def _log1mexp(x):
    """``log(1 - exp(x))`` for ``x <= 0``, accurate over the whole range (Maechler 2012).

    Each branch gets an input clamped to its own side of -log 2, so the branch that
    ``where`` discards is finite too and cannot pass a NaN into the gradient."""
    cut = -math.log(2.0)
    # At x = 0 the value is -inf; the smallest normal number away from it, the value is
    # finite and the clamp passes no gradient (a saturated gate's log P0).
    x = x.clamp(max=-torch.finfo(x.dtype).tiny)
    near = torch.log(-torch.expm1(x.clamp(cut, 0.0)))
    far = torch.log1p(-torch.exp(x.clamp(max=cut)))
    return torch.where(x > cut, near, far)


def open_logit(probability):
    """The score whose gate of :meth:`HardKumaraswamy.from_logits` is open (non-zero) with
    ``probability`` (in (0, 1)): the inverse of its :attr:`~HardKumaraswamy.prob_nonzero`,
    which grows monotonically with the score. Found by bisection in float64."""
    if not 0 < probability < 1:
        raise ValueError(f"probability should be in (0, 1); got {probability}.")
    return _bisect(lambda logit: HardKumaraswamy.from_logits(logit).prob_nonzero > probability)


@functools.cache
def open_gate_probability():
    """The open probability above which a gate of :meth:`HardKumaraswamy.from_logits` has a
    non-zero :attr:`~HardKumaraswamy.mode` (about 0.533).

    For these gates both point masses move monotonically with the score, so the test-time
    gate is non-zero exactly above one score, where :math:`P_0` stops being the largest of
    :math:`P_0`, :math:`P_1` and the continuous mass: thresholding
    :attr:`~HardKumaraswamy.prob_nonzero` there is thresholding the test-time gates, and
    an explainer's scores can stay open probabilities. Found by bisection in float64.
    """
    logit = _bisect(lambda logit: HardKumaraswamy.from_logits(logit).mode > 0)
    return float(HardKumaraswamy.from_logits(torch.tensor(logit, dtype=torch.float64)).prob_nonzero)


def _bisect(is_above, low=-40.0, high=40.0, steps=80):
    """The score where the monotone predicate ``is_above`` (of a float64 tensor) turns true."""
    # On the CPU whatever the default device: the bisection reads its scalars back.
    low = torch.tensor(low, dtype=torch.float64, device="cpu")
    high = torch.tensor(high, dtype=torch.float64, device="cpu")
    for _ in range(steps):
        middle = (low + high) / 2
        if bool(is_above(middle)):
            high = middle
        else:
            low = middle
    return float(high)
