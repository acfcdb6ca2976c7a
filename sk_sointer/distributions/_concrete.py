"""The relaxations of k-subsets and of Bernoulli selections: the k-subset Concrete (L2X,
MEED, SOInter), the REBAR Bernoulli helper (REAL-X) and exact Gumbel top-k subsets."""

from numbers import Real
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch.distributions import Distribution, constraints
from torch.distributions.utils import broadcast_all

from .._topk import topk_mask


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
        # image's pixels: one pass a pick costs 0.30 s a refinement step at 60 of 784
        # pixels, this 0.025 s. A fixed k keeps the loop above: another order of summation
        # moves its masks at round-off, and the stored records come from it.)
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
