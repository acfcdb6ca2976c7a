"""Continuous relaxations of discrete feature selections, in ``torch.distributions`` style.

No training logic lives here: a relaxation turns per-feature logits into a differentiable
sample of a (nearly) discrete mask, and, where it has one, a mode used at explanation time.
"""

from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
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


def topk_mask(scores, k, *, out=None, overwrite_scores=False):
    """k-hot mask of the ``k`` largest scores along the last axis; ties go to lower indices.

    ``scores`` is a tensor (the mask is a tensor of its dtype, on its device) or an ndarray
    (the mask is float32, or written into ``out``, a float array of the scores' shape, and
    returned). The fast path keeps every score at least as large as the k-th largest; rows
    where a tie at that boundary would keep more than k fall back to a stable sort, which
    makes the tie-break deterministic (``torch.topk`` does not promise which of two equal
    scores it returns). On an ndarray NumPy's partition finds the k-th largest score, faster
    than a sort (and on the CPU than ``torch.topk``): this runs on every explained row. On
    wide rows with a small ``k``, ``k`` rounds of argmax are faster still; they knock each
    winner out of a copy of the scores, or of the scores themselves with
    ``overwrite_scores=True`` (an ndarray the caller no longer needs).
    """
    if isinstance(scores, np.ndarray):
        if out is None:
            out = np.empty(scores.shape, dtype=np.float32)
        return _topk_mask_numpy(scores, k, out, overwrite_scores)
    if out is not None:
        raise TypeError("out is only supported for ndarray scores.")
    kth = torch.topk(scores, k, dim=-1).values[..., -1:]
    mask = scores >= kth
    tied = mask.sum(-1) != k
    if bool(tied.any()):
        order = torch.sort(scores[tied], dim=-1, descending=True, stable=True).indices[..., :k]
        mask[tied] = torch.zeros_like(mask[tied]).scatter_(-1, order, True)
    return mask.to(scores.dtype)


def _topk_mask_numpy(scores, k, out, overwrite=False):
    n_features = scores.shape[-1]
    if _rounds_of_argmax_pay(n_features, k) and _topk_by_argmax(scores, k, out, overwrite):
        return out
    kth = np.partition(scores, n_features - k, axis=-1)[..., n_features - k, None]
    mask = scores >= kth
    # Every row keeps at least k, so one count over the whole array finds whether any row
    # kept more; the per-row count (slower than the partition itself) runs only then.
    if np.count_nonzero(mask) != k * (mask.size // max(n_features, 1)):
        tied = np.flatnonzero(np.count_nonzero(mask, axis=-1) != k)
        order = np.argsort(-scores[tied], axis=-1, kind="stable")[:, :k]
        mask[tied] = False
        mask[tied[:, None], order] = True
    # Counting a boolean mask and copying it into ``out`` is faster than comparing into a
    # float ``out`` and counting that.
    np.copyto(out, mask)
    return out


def _rounds_of_argmax_pay(n_features, k):
    """Whether ``k`` rounds of a row-wise argmax beat one partition of each row.

    Measured on one CPU thread (NumPy 2): a partition costs about 50 ns a row plus 2.5 ns a
    score, a round of argmax (with its two scatters) about 60 ns a row plus 0.1 ns a score.
    So the rounds win on wide rows with a small k (k <= 4 of 100 scores, k <= 16 of 1,000)
    and never on rows of ten.
    """
    return k * (60 + 0.1 * n_features) < 50 + 2.5 * n_features


def _topk_by_argmax(scores, k, out, overwrite_scores=False):
    """Top-k into ``out`` by ``k`` rounds of argmax, each knocking its winner out of the
    scores (a scratch copy unless ``overwrite_scores``); whether that worked.

    ``argmax`` returns the first of equal maxima, so ties go to the lower index as in the
    partition path. A row with fewer than ``k`` scores above -inf would pick a knocked-out
    score again: then this gives up (``out`` half written, the scores restored) and the
    caller falls back.
    """
    n_features = scores.shape[-1]
    if not np.issubdtype(scores.dtype, np.floating):
        scores, overwrite_scores = scores.astype(np.float64), True
    if overwrite_scores and scores.flags.c_contiguous and scores.flags.writeable:
        rest = scores.reshape(-1, n_features)
    else:
        rest = np.array(scores, order="C").reshape(-1, n_features)
    mask = out if out.flags.c_contiguous else np.empty(out.shape, dtype=out.dtype)
    flat_mask, flat_rest = mask.reshape(-1), rest.reshape(-1)
    flat_mask[...] = 0
    row_starts = np.arange(0, rest.size, n_features)
    knocked = []
    for _ in range(k):
        winners = rest.argmax(axis=-1)
        winners += row_starts
        values = flat_rest[winners]
        if np.isneginf(values).any():
            for winners, values in reversed(knocked):  # the scores as they were
                flat_rest[winners] = values
            return False
        knocked.append((winners, values))
        flat_mask[winners] = 1
        flat_rest[winners] = -np.inf
    if mask is not out:
        np.copyto(out, mask)
    return True


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

    arg_constraints = {"temperature": constraints.positive, "logits": constraints.real_vector}
    support = constraints.independent(constraints.boolean, 1)
    has_rsample = True

    def __init__(self, temperature, logits, validate_args=None):
        if logits.dim() < 1:
            raise ValueError("logits should have at least one dimension (the features).")
        self.logits = logits
        self.temperature, _ = broadcast_all(temperature, logits)
        super().__init__(logits.shape[:-1], logits.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RebarBernoulli, _instance)
        shape = torch.Size(batch_shape) + self.event_shape
        new.logits = self.logits.expand(shape)
        new.temperature = self.temperature.expand(shape)
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


def gumbel_topk(logits, k):
    """A k-subset drawn without replacement with probabilities proportional to
    ``exp(logits)`` (Gumbel top-k), as the indices in the order drawn, ``(..., k)``."""
    gumbel = -torch.log(-torch.log(torch.rand_like(logits).clamp(1e-20, 1.0 - 1e-7)))
    return (logits.detach() + gumbel).topk(k, dim=-1).indices


def plackett_luce_log_prob(logits, order):
    r"""Log-probability of drawing the features ``order`` (``(..., k)`` indices), one after
    the other without replacement, each with probability proportional to ``exp(logits)``
    among those left:

    .. math:: \log p = \sum_{j=1}^{k} \Big(\ell_{o_j} - \log \sum_{i \notin
              \{o_1, \dots, o_{j-1}\}} e^{\ell_i}\Big).

    Differentiable in ``logits``; the score-function (REINFORCE) gradient of a loss of the
    unordered subset is unbiased with the order of a :func:`gumbel_topk` draw.
    """
    chosen = logits.gather(-1, order)
    left = logits
    total = torch.zeros_like(chosen[..., 0])
    for j in range(order.shape[-1]):
        total = total + chosen[..., j] - torch.logsumexp(left, dim=-1)
        left = left.scatter(-1, order[..., j : j + 1], float("-inf"))
    return total
