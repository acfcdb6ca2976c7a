"""Continuous relaxations of discrete feature selections, in ``torch.distributions`` style.

No training logic lives here: a relaxation turns per-feature logits into a differentiable
sample of a (nearly) discrete mask, and, where it has one, a mode used at explanation time.
"""

import functools
import math
from numbers import Real
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch.distributions import Distribution, Kumaraswamy, constraints
from torch.distributions.utils import broadcast_all

from ._topk import topk_mask


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
        self.temperature = _temperature(temperature, logits[..., :1], validate_args)
        if isinstance(self.temperature, torch.Tensor):
            self.temperature = self.temperature.squeeze(-1)
        super().__init__(logits.shape[:-1], logits.shape[-1:], validate_args=validate_args)

    @property
    def arg_constraints(self):
        return _arg_constraints(self, {"temperature": constraints.positive,
                                       "logits": constraints.real_vector})

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(SubsetConcrete, _instance)
        batch_shape = torch.Size(batch_shape)
        new.k = self.k
        new.logits = self.logits.expand(batch_shape + self.event_shape)
        new.temperature = _expand_temperature(self.temperature, batch_shape)
        super(SubsetConcrete, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=torch.Size()):
        shape = self._extended_shape(sample_shape)
        gumbel = gumbel_noise(shape[:-1] + (self.k,) + shape[-1:], self.logits)
        temperature = _trailing(self.temperature, 2)
        concrete = torch.softmax((self.logits.unsqueeze(-2) + gumbel) / temperature, dim=-1)
        return concrete.amax(dim=-2)

    @property
    def mode(self):
        """The k-hot mask of the k largest logits (the explanation, L2X §3.4)."""
        return topk_mask(self.logits, self.k)


def _temperature(temperature, like, validate_args):
    """A relaxation's temperature: a Python number stays one (a kernel divides by it
    without a tensor copied to the device every step, and with nothing to check there); a
    tensor is broadcast against ``like``."""
    if isinstance(temperature, Real) and not isinstance(temperature, bool):
        temperature = float(temperature)
        validate = Distribution._validate_args if validate_args is None else validate_args
        if validate and not temperature > 0:
            raise ValueError(f"temperature should be positive; got {temperature}.")
        return temperature
    return broadcast_all(temperature, like)[0]


def _arg_constraints(distribution, all_constraints):
    """The constraints to validate: a number temperature was checked when given."""
    if isinstance(distribution.temperature, float):
        return {name: c for name, c in all_constraints.items() if name != "temperature"}
    return all_constraints


def _expand_temperature(temperature, shape):
    return temperature if isinstance(temperature, float) else temperature.expand(shape)


def _trailing(temperature, n_dims):
    """``temperature`` with ``n_dims`` trailing axes to broadcast against (a number as is)."""
    if isinstance(temperature, float):
        return temperature
    return temperature.reshape(temperature.shape + (1,) * n_dims)


class RebarSample(NamedTuple):
    """One REBAR draw: the hard sample and the two relaxed samples built from its noise.

    Attributes
    ----------
    hard : Tensor
        ``s = 1[z > 0]``, a Bernoulli(sigma(logits)) sample without gradient (eq. 9).
    relaxed : Tensor
        ``sigma(z / tau)``, the relaxed sample whose hard threshold is ``s`` (eq. 8).
    conditional : Tensor
        ``sigma(z_tilde / tau)``, a relaxed sample drawn from p(z | s) (eq. 10); it keeps
        its gradient with respect to the logits through the conditioning on ``s``.
    """

    hard: torch.Tensor
    relaxed: torch.Tensor
    conditional: torch.Tensor


class RebarBernoulli(Distribution):
    r"""Independent Bernoulli selections with the noise REBAR needs for its control variate.

    Each feature is selected with probability :math:`p_j = \sigma(\ell_j)`. A draw (REAL-X
    Algorithm 1, eqs. 8-10, after Tucker et al. 2017) is built from a Logistic variable

    .. math:: z_j = \ell_j + \log u_j - \log(1 - u_j), \qquad u_j \sim U(0, 1),

    its threshold :math:`s_j = 1[z_j > 0] \sim \mathrm{Bernoulli}(p_j)`, and a second
    Logistic variable drawn from :math:`p(z \mid s)` with fresh noise
    :math:`v'_j \sim U(0, 1)` and :math:`u^*_j = \sigma(-\ell_j) = 1 - p_j`:

    .. math:: v_j = s_j\,(u^*_j + v'_j (1 - u^*_j)) + (1 - s_j)\, v'_j u^*_j, \qquad
              \tilde z_j = \ell_j + \log v_j - \log(1 - v_j).

    The relaxed samples are :math:`\sigma(z / \tau)` and :math:`\sigma(\tilde z / \tau)`.
    Both are differentiable in the logits; for :math:`\tilde z` the gradient runs through
    :math:`u^*` (the conditioning on ``s``), and the estimator is biased without it.

    Parameters
    ----------
    temperature : float or Tensor
        Relaxation temperature :math:`\tau > 0` (REAL-X fixes 0.1).
    logits : Tensor of shape (..., n_features)
        Selection logits :math:`\ell`.
    validate_args : bool, optional
        Check the arguments, as in :class:`torch.distributions.Distribution`.

    See Also
    --------
    SubsetConcrete : The k-subset relaxation of L2X.

    Notes
    -----
    :math:`\log v` and :math:`\log(1 - v)` are computed from ``logsigmoid`` and
    ``log1p`` rather than from ``v`` itself: with ``s = 1`` and a small :math:`p_j`,
    ``v`` rounds to 1 in float32 and :math:`\log(1 - v)` to :math:`-\infty`, which would
    poison the gradient. The two forms are equal in exact arithmetic.

    References
    ----------
    .. [1] G. Tucker, A. Mnih, C. J. Maddison, D. Lawson and J. Sohl-Dickstein, "REBAR:
       Low-variance, unbiased gradient estimates for discrete latent variable models",
       NeurIPS 2017.
    .. [2] N. Jethani, M. Sudarshan, Y. Aphinyanaphongs and R. Ranganath, "Have We
       Learned to Explain?: How Interpretability Methods Can Learn to Encode Predictions
       in their Interpretations", AISTATS 2021.

    Examples
    --------
    >>> import torch
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> d = RebarBernoulli(0.1, torch.tensor([[4.0, -4.0, 0.5]], requires_grad=True))
    >>> draw = d.rebar_sample()
    >>> bool(((draw.conditional > 0.5) == (draw.hard > 0.5)).all())
    True
    >>> d.log_prob(draw.hard).shape
    torch.Size([1])
    """

    support = constraints.independent(constraints.boolean, 1)
    has_rsample = True

    def __init__(self, temperature, logits, validate_args=None):
        if logits.dim() < 1:
            raise ValueError("logits should have at least one dimension (the features).")
        self.logits = logits
        self.temperature = _temperature(temperature, logits, validate_args)
        super().__init__(logits.shape[:-1], logits.shape[-1:], validate_args=validate_args)

    @property
    def arg_constraints(self):
        return _arg_constraints(self, {"temperature": constraints.positive,
                                       "logits": constraints.real_vector})

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RebarBernoulli, _instance)
        shape = torch.Size(batch_shape) + self.event_shape
        new.logits = self.logits.expand(shape)
        new.temperature = _expand_temperature(self.temperature, shape)
        super(RebarBernoulli, new).__init__(
            torch.Size(batch_shape), self.event_shape, validate_args=False
        )
        new._validate_args = self._validate_args
        return new

    @property
    def probs(self):
        """Selection probabilities :math:`\\sigma(\\ell)`."""
        return torch.sigmoid(self.logits)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        """The most likely selection, ``1[logits > 0]``."""
        return (self.logits > 0).to(self.logits.dtype)

    @property
    def scores(self):
        """What an explainer's ``explain`` returns: the selection probabilities."""
        return self.probs

    @staticmethod
    def selection_threshold():
        """With ``k=None``, the scores above this are selected: the more likely than not."""
        return 0.5

    def sample(self, sample_shape=torch.Size()):
        with torch.no_grad():
            return self.rebar_sample(sample_shape).hard

    def rsample(self, sample_shape=torch.Size()):
        """The relaxed sample ``sigma(z / tau)`` of eq. 8."""
        shape = self._extended_shape(sample_shape)
        logistic = _logistic(self.logits.expand(shape), _uniform(shape, self.logits))
        return torch.sigmoid(logistic / self.temperature)

    def rebar_sample(self, sample_shape=torch.Size()):
        """Draw ``s``, ``sigma(z / tau)`` and ``sigma(z_tilde / tau)`` from shared noise.

        Parameters
        ----------
        sample_shape : torch.Size, default=()
            Extra leading dimensions, as for :meth:`sample`.

        Returns
        -------
        draw : RebarSample
            ``(hard, relaxed, conditional)``, each of shape ``sample_shape + logits.shape``.
        """
        shape = self._extended_shape(sample_shape)
        logits = self.logits.expand(shape)
        logistic = _logistic(logits, _uniform(shape, logits))
        hard = (logistic > 0).to(logits.dtype).detach()
        conditional = _conditional_logistic(logits, hard, _uniform(shape, logits))
        return RebarSample(
            hard,
            torch.sigmoid(logistic / self.temperature),
            torch.sigmoid(conditional / self.temperature),
        )

    def log_prob(self, value):
        """``log q(s | logits)``, summed over the features (the score function's argument)."""
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # The BCE form is exact and finite for any logit; the REAL-X code's log(p + 1e-5)
        # caps each term at about 11.5 nats.
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none").sum(-1)

    def entropy(self):
        probs = self.probs
        return F.binary_cross_entropy_with_logits(self.logits, probs, reduction="none").sum(-1)


def _uniform(shape, like):
    # u = 0 would make log(u), and so the logistic sample, -inf: clamping at the dtype's
    # smallest normal keeps it finite. torch.rand is < 1, so log1p(-u) is finite too.
    uniform = torch.rand(shape, device=like.device, dtype=like.dtype)
    return uniform.clamp_min(torch.finfo(like.dtype).tiny)


def _logistic(logits, uniform):
    """``z = logits + log u - log(1 - u)``: a Logistic(logits, 1) variable (eq. 8)."""
    return logits + torch.log(uniform) - torch.log1p(-uniform)


def _conditional_logistic(logits, hard, uniform):
    """``z_tilde = logits + logit(v)`` for the ``v`` of eq. 10, in log space.

    With ``u* = sigma(-l)`` and ``p = sigma(l)``:

    - ``s = 1``: ``v = u* + v' p``, so ``log v = logaddexp(log u*, log p + log v')`` and
      ``log(1 - v) = log p + log(1 - v')``;
    - ``s = 0``: ``v = v' u*``, so ``log v = log v' + log u*`` and
      ``log(1 - v) = logaddexp(log p, log u* + log(1 - v'))``.

    Every term stays finite, so no branch of ``torch.where`` can feed a NaN into the
    gradient, which flows from ``logits`` through ``u*`` and ``p``.
    """
    log_u_star = F.logsigmoid(-logits)
    log_p = F.logsigmoid(logits)
    log_v_prime = torch.log(uniform)
    log_1m_v_prime = torch.log1p(-uniform)
    log_v = torch.where(
        hard > 0,
        torch.logaddexp(log_u_star, log_p + log_v_prime),
        log_v_prime + log_u_star,
    )
    log_1m_v = torch.where(
        hard > 0,
        log_p + log_1m_v_prime,
        torch.logaddexp(log_p, log_u_star + log_1m_v_prime),
    )
    return logits + log_v - log_1m_v


class GumbelTopK(Distribution):
    r"""Ordered k-subsets drawn without replacement, each feature with probability
    proportional to ``exp(logits)`` among those left (Plackett-Luce).

    A draw is the ``k`` indices of the largest ``logits + G``, ``G ~ Gumbel(0, 1)`` (the
    Gumbel top-k trick), in the order drawn: ``(..., k)`` long indices. Its log-probability
    is differentiable in ``logits``,

    .. math:: \log p(o) = \sum_{j=1}^{k} \Big(\ell_{o_j} - \log \sum_{i \notin
              \{o_1, \dots, o_{j-1}\}} e^{\ell_i}\Big),

    so the score-function (REINFORCE) gradient of any cost of the unordered subset is
    unbiased with a draw's order. The mode is the k-hot mask of the largest logits.

    Parameters
    ----------
    logits : tensor of shape (..., n_features)
        Log-weights of the features.
    k : int
        Features per subset (the most, when :meth:`log_prob` and :meth:`as_mask` are given
        each draw's own size).
    """

    arg_constraints = {"logits": constraints.real_vector}
    has_rsample = False

    def __init__(self, logits, k, validate_args=None):
        self.logits = logits
        self.k = int(k)
        if not 1 <= self.k <= logits.shape[-1]:
            raise ValueError(f"k should be in [1, {logits.shape[-1]}]; got {k}.")
        super().__init__(logits.shape[:-1], torch.Size([self.k]), validate_args=validate_args)

    @property
    def support(self):
        return constraints.integer_interval(0, self.logits.shape[-1] - 1)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(GumbelTopK, _instance)
        batch_shape = torch.Size(batch_shape)
        new.logits = self.logits.expand(batch_shape + self.logits.shape[-1:])
        new.k = self.k
        super(GumbelTopK, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=torch.Size()):
        shape = torch.Size(sample_shape) + self.logits.shape
        with torch.no_grad():
            perturbed = self.logits.expand(shape) + gumbel_noise(shape, self.logits)
            return perturbed.topk(self.k, dim=-1).indices

    def log_prob(self, value, sizes=None):
        """The log-probability of the draws ``value``; with ``sizes`` (long, of the batch
        shape), of their first ``sizes`` indices alone: a draw of that many features."""
        logits = self.logits.expand(value.shape[:-1] + self.logits.shape[-1:])
        chosen = logits.gather(-1, value)
        if sizes is not None:
            return self._log_prob_of_sizes(logits, value, chosen, sizes)
        left = logits
        total = torch.zeros_like(chosen[..., 0])
        for j in range(self.k):
            total = total + chosen[..., j] - torch.logsumexp(left, dim=-1)
            left = left.scatter(-1, value[..., j : j + 1], float("-inf"))
        return total

    @staticmethod
    def _log_prob_of_sizes(logits, value, chosen, sizes):
        # All the steps at once: before the j-th pick, the features left are the draw's
        # picks from j on and those never drawn. (A thresholded selection keeps tens of an
        # image's pixels: one pass a pick made a refinement step of 60 pixels of 784 take
        # 0.30 s, against 0.025 s. The loop above stays for a fixed k: other sums would
        # move its fits' masks at round-off, and the stored results were made with it.)
        drawn = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, value, True)
        never = torch.logsumexp(logits.masked_fill(drawn, torch.finfo(logits.dtype).min),
                                dim=-1)
        later = torch.logcumsumexp(chosen.flip(-1), dim=-1).flip(-1)
        steps = chosen - torch.logaddexp(later, never.unsqueeze(-1))
        positions = torch.arange(value.shape[-1], device=value.device)
        return (steps * (positions < sizes.unsqueeze(-1)).to(steps.dtype)).sum(-1)

    def as_mask(self, value, sizes=None):
        """The 0/1 mask (of the logits' dtype) of the features in ``value``, a draw; with
        ``sizes``, of its first ``sizes`` indices alone."""
        shape = value.shape[:-1] + self.logits.shape[-1:]
        mask = torch.zeros(shape, dtype=self.logits.dtype, device=value.device)
        if sizes is None:
            return mask.scatter(-1, value, 1.0)
        positions = torch.arange(value.shape[-1], device=value.device)
        return mask.scatter(-1, value, (positions < sizes.unsqueeze(-1)).to(mask.dtype))

    @property
    def mode(self):
        """The k-hot mask of the k largest logits."""
        return topk_mask(self.logits, self.k)


def gumbel_noise(shape, like):
    """Standard Gumbel draws of ``shape``, of ``like``'s dtype and on its device.

    The one source of Gumbel noise for every relaxation. The uniform draws are float32 even
    under reduced precision (float16's smallest normal and its log are too coarse for the
    transform) and clamped at float32's smallest normal, which keeps every draw finite;
    ``torch.rand`` is below 1, so the outer log is finite too.
    """
    uniform = torch.rand(shape, device=like.device, dtype=torch.float32)
    uniform = uniform.clamp_min(torch.finfo(torch.float32).tiny)
    return -torch.log(-torch.log(uniform)).to(like.dtype)


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
