"""The relaxations and the Gumbel top-k distribution: shapes, limits, gradients, mode."""

import numpy as np
import pytest
import torch

import itertools

from sk_sointer._topk import topk_mask, topk_masks_of_sizes
from sk_sointer.distributions import GumbelTopK, RebarBernoulli, SubsetConcrete, gumbel_noise


def test_samples_lie_in_the_unit_interval_and_have_the_batch_shape():
    torch.manual_seed(0)
    logits = torch.randn(7, 5)
    sample = SubsetConcrete(0.5, logits, k=2).rsample((3,))
    assert sample.shape == (3, 7, 5)
    assert torch.all((sample >= 0) & (sample <= 1))
    # Each of the k draws is on the simplex, so their maximum sums to between 1 and k.
    total = sample.sum(-1)
    assert torch.all(total >= 1 - 1e-5) and torch.all(total <= 2 + 1e-5)


def test_low_temperature_gives_nearly_k_hot_samples_following_the_logits():
    torch.manual_seed(0)
    logits = torch.tensor([4.0, 4.0, -4.0, -4.0, -4.0]).expand(2000, 5)
    sample = SubsetConcrete(0.01, logits, k=2).rsample()
    assert torch.mean(((sample < 0.01) | (sample > 0.99)).float()) > 0.99
    freq = (sample > 0.5).float().mean(0)
    # Draws are with replacement: both land on the same feature half of the time, so each
    # of two equally likely features is kept with probability 1 - 1/4.
    np.testing.assert_allclose(freq[:2], 0.75, atol=0.03)
    assert freq[2:].max() < 0.01


def test_inclusion_frequency_matches_the_gumbel_top_k_limit():
    # With k = 1 the maximum of one Concrete draw is a Gumbel-max sample: feature i wins
    # with probability softmax(logits)_i.
    torch.manual_seed(0)
    logits = torch.tensor([1.0, 0.0, -1.0])
    sample = SubsetConcrete(0.05, logits.expand(20000, 3), k=1).rsample()
    freq = (sample.argmax(-1)[:, None] == torch.arange(3)).float().mean(0)
    np.testing.assert_allclose(freq, torch.softmax(logits, 0), atol=0.015)


def test_gradients_reach_the_logits():
    logits = torch.zeros(4, 6, requires_grad=True)
    sample = SubsetConcrete(0.5, logits, k=3).rsample()
    (sample * torch.arange(6.0)).sum().backward()
    assert torch.isfinite(logits.grad).all() and logits.grad.abs().sum() > 0


def test_extreme_logits_stay_finite():
    logits = torch.tensor([[1e4, -1e4, 0.0, 3.0]])
    sample = SubsetConcrete(0.1, logits, k=2).rsample((100,))
    assert torch.isfinite(sample).all()


def test_mode_is_the_k_hot_top_k_with_stable_ties():
    d = SubsetConcrete(0.1, torch.tensor([[0.5, 2.0, 2.0, 2.0, -1.0]]), k=2)
    np.testing.assert_array_equal(d.mode, [[0, 1, 1, 0, 0]])
    np.testing.assert_array_equal(topk_mask(torch.zeros(2, 4), 3), [[1, 1, 1, 0]] * 2)


def test_expand_and_argument_checks():
    d = SubsetConcrete(torch.tensor(0.3), torch.zeros(5), k=2)
    expanded = d.expand((4,))
    assert expanded.batch_shape == (4,) and expanded.rsample().shape == (4, 5)
    with pytest.raises(ValueError, match=r"k should be in \[1, n_features = 5\]"):
        SubsetConcrete(0.3, torch.zeros(5), k=6)
    with pytest.raises(ValueError):
        SubsetConcrete(-1.0, torch.zeros(5), k=2, validate_args=True)


def test_plackett_luce_probabilities_of_every_order_sum_to_one():
    logits = torch.tensor([[1.5, -0.5, 0.0, 2.0]], requires_grad=True)
    orders = torch.tensor(list(itertools.permutations(range(4), 2)))
    log_prob = GumbelTopK(logits.expand(len(orders), 4), 2).log_prob(orders)
    assert log_prob.exp().sum().item() == pytest.approx(1.0, abs=1e-6)
    # the first draw follows the softmax; the second the softmax of those left
    p = torch.softmax(logits.detach()[0], 0)
    first = (orders[:, 0] == 3) & (orders[:, 1] == 0)
    assert log_prob[first].exp().item() == pytest.approx((p[3] * p[0] / (1 - p[3])).item(), rel=1e-5)
    log_prob.sum().backward()
    assert torch.isfinite(logits.grad).all() and logits.grad.abs().sum() > 0


def test_gumbel_top_k_draws_follow_plackett_luce():
    torch.manual_seed(0)
    logits = torch.tensor([1.0, 0.0, -1.0, 0.5]).expand(40_000, 4)
    subsets = GumbelTopK(logits, 2)
    order = subsets.sample()
    assert order.shape == (40_000, 2)
    assert (order[:, 0] != order[:, 1]).all()
    pairs = torch.tensor(list(itertools.permutations(range(4), 2)))
    expected = GumbelTopK(logits[: len(pairs)], 2).log_prob(pairs).exp()
    observed = torch.stack([((order == pair).all(dim=1)).float().mean() for pair in pairs])
    np.testing.assert_allclose(observed.numpy(), expected.numpy(), atol=0.01)


def test_gumbel_top_k_masks_shapes_mode_and_argument_checks():
    torch.manual_seed(0)
    subsets = GumbelTopK(torch.tensor([[0.0, 3.0, 1.0, 2.0]]), 2)
    draws = subsets.sample((5,))
    assert draws.shape == (5, 1, 2) and draws.dtype == torch.long
    masks = subsets.as_mask(draws)
    np.testing.assert_array_equal(masks.sum(-1), 2)
    np.testing.assert_array_equal(masks.gather(-1, draws), 1)
    np.testing.assert_array_equal(subsets.mode, [[0, 1, 0, 1]])
    assert subsets.expand((3,)).sample().shape == (3, 2)
    with pytest.raises(ValueError, match=r"k should be in \[1, 4\]; got 5"):
        GumbelTopK(torch.zeros(4), 5)


def test_top_k_masks_of_each_rows_own_size_break_ties_as_top_k():
    scores = torch.tensor([[0.2, 0.9, 0.9, 0.1], [1.0, 1.0, 1.0, 1.0], [0.3, 0.1, 0.2, 0.4]])
    masks = topk_masks_of_sizes(scores, torch.tensor([2, 3, 1]))
    np.testing.assert_array_equal(masks.numpy(), [[0, 1, 1, 0], [1, 1, 1, 0], [0, 0, 0, 1]])
    for k in (1, 2, 4):
        torch.testing.assert_close(topk_masks_of_sizes(scores, torch.full((3,), k)),
                                   topk_mask(scores, k))


def test_gumbel_top_k_of_each_draws_own_size():
    # The first ``sizes`` indices of a draw: the mask and log-probability of a draw of that
    # size.
    logits = torch.tensor([[0.5, -1.0, 2.0, 0.0], [0.3, 0.1, -0.2, 1.0]])
    order = torch.tensor([[2, 0, 3], [3, 1, 0]])
    sizes = torch.tensor([1, 3])
    subsets = GumbelTopK(logits, 3)
    np.testing.assert_array_equal(subsets.as_mask(order, sizes).numpy(),
                                  [[0, 0, 1, 0], [1, 1, 0, 1]])
    expected = [GumbelTopK(logits[:1], 1).log_prob(order[:1, :1]),
                GumbelTopK(logits[1:], 3).log_prob(order[1:])]
    torch.testing.assert_close(subsets.log_prob(order, sizes), torch.cat(expected))
    # Every feature drawn: the same log-probability and gradient as the draw of all four.
    logits = logits.clone().requires_grad_(True)
    every = torch.tensor([[2, 0, 3, 1], [3, 1, 0, 2]])
    of_sizes = GumbelTopK(logits, 4).log_prob(every, torch.tensor([4, 2]))
    (grad,) = torch.autograd.grad(of_sizes.sum(), logits)
    plain = torch.cat([GumbelTopK(logits[:1], 4).log_prob(every[:1]),
                       GumbelTopK(logits[1:], 2).log_prob(every[1:, :2])])
    torch.testing.assert_close(of_sizes, plain)
    torch.testing.assert_close(grad, torch.autograd.grad(plain.sum(), logits)[0])


def test_gumbel_noise_is_finite_standard_gumbel_of_the_given_dtype():
    torch.manual_seed(0)
    noise = gumbel_noise((200_000,), torch.zeros((), dtype=torch.float16))
    assert noise.dtype == torch.float16 and torch.isfinite(noise).all()
    noise = noise.float()
    # Gumbel(0, 1): mean Euler's gamma, variance pi^2 / 6.
    assert noise.mean().item() == pytest.approx(0.5772, abs=0.01)
    assert noise.var().item() == pytest.approx(np.pi**2 / 6, rel=0.02)


# Hard Kumaraswamy gates
# ----------------------

from sk_sointer.distributions import (  # noqa: E402
    HardKumaraswamy,
    open_gate_probability,
    open_logit,
)

# (a, b) -> P(h = 0), P(h = 1), E[L0] of one gate, mean of the unstretched Kumaraswamy: the
# closed forms at the paper's stretch (-0.1, 1.1), computed independently in float64.
ANCHORS = {
    (1.0, 1.0): (1 / 12, 1 / 12, 11 / 12, 0.5),
    (0.5, 0.5): (0.156599, 0.206332, 0.843401, 0.533333),
    (2.0, 2.0): (0.013841, 0.025511, 0.986159, 0.533333),
    (0.2, 0.2): (0.170958, 0.443983, 0.829042, 0.650391),
    (3.0, 0.5): (0.000289, 0.479318, 0.999711, 0.841309),
}


def _anchor_gates(dtype=torch.float64):
    a, b = (torch.tensor(values, dtype=dtype) for values in zip(*ANCHORS))
    return HardKumaraswamy(a, b)


def test_point_masses_expected_l0_and_kuma_mean_match_the_closed_forms():
    gates = _anchor_gates()
    expected = np.array(list(ANCHORS.values()))
    np.testing.assert_allclose(gates.prob_zero, expected[:, 0], atol=1e-6)
    np.testing.assert_allclose(gates.prob_one, expected[:, 1], atol=1e-6)
    np.testing.assert_allclose(gates.prob_nonzero, expected[:, 2], atol=1e-6)
    np.testing.assert_allclose(gates.kumaraswamy.mean, expected[:, 3], atol=1e-6)
    np.testing.assert_allclose(gates.expected_l0(), expected[:, 2].sum(), atol=1e-5)
    # the same in float32
    np.testing.assert_allclose(_anchor_gates(torch.float32).prob_zero, expected[:, 0],
                               atol=1e-5)


def test_hard_kuma_samples_follow_the_cdf_and_the_point_masses():
    torch.manual_seed(0)
    gates = _anchor_gates()
    samples = gates.rsample((40_000,))
    assert samples.shape == (40_000, len(ANCHORS))
    assert torch.all((samples >= 0) & (samples <= 1))
    for j in range(len(ANCHORS)):
        column = samples[:, j].numpy()
        # The point masses against Monte Carlo (4 standard errors).
        for value, mass in ((0.0, gates.prob_zero[j]), (1.0, gates.prob_one[j])):
            freq = np.mean(column == value)
            tolerance = 4 * np.sqrt(float(mass) * (1 - float(mass)) / len(column)) + 1e-4
            assert abs(freq - float(mass)) < tolerance
        # The whole distribution: a Kolmogorov-Smirnov distance against the cdf on a grid.
        grid = torch.linspace(0, 1, 201, dtype=torch.float64)
        cdf = gates.expand((201, len(ANCHORS))).cdf(grid[:, None].expand(201, len(ANCHORS)))
        empirical = np.searchsorted(np.sort(column), grid.numpy(), side="right") / len(column)
        assert np.max(np.abs(empirical - cdf[:, j].numpy())) < 0.01


def test_hard_kuma_log_prob_is_the_mixed_density():
    gates = _anchor_gates()
    np.testing.assert_allclose(gates.log_prob(torch.zeros(5, dtype=torch.float64)).exp(),
                               gates.prob_zero, rtol=1e-6)
    np.testing.assert_allclose(gates.log_prob(torch.ones(5, dtype=torch.float64)).exp(),
                               gates.prob_one, rtol=1e-6)
    # The continuous part integrates to 1 - P0 - P1 over (0, 1).
    grid = torch.linspace(1e-7, 1 - 1e-7, 400_001, dtype=torch.float64)
    density = gates.expand((len(grid), 5)).log_prob(grid[:, None].expand(len(grid), 5)).exp()
    mass = torch.trapezoid(density, grid, dim=0)
    np.testing.assert_allclose(mass, 1 - gates.prob_zero - gates.prob_one, atol=2e-3)
    # and its integral up to h is the cdf's rise from P0
    half = grid <= 0.5
    rise = torch.trapezoid(density[half], grid[half], dim=0)
    cdf_half = gates.cdf(torch.full((5,), 0.5, dtype=torch.float64))
    np.testing.assert_allclose(rise, cdf_half - gates.prob_zero, atol=2e-3)


@pytest.mark.parametrize("value", [1e-6, 1e-3, 1.0, 1e3])
def test_hard_kuma_stays_finite_with_finite_gradients_for_extreme_parameters(value):
    a = torch.full((4,), value, requires_grad=True)
    b = torch.tensor([1e-6, 1e-2, 1.0, 1e3], requires_grad=True)
    gates = HardKumaraswamy(a, b)
    sample = gates.rsample((50,))
    total = (sample.sum() + gates.prob_nonzero.sum() + gates.prob_one.sum()
             + gates.log_prob(sample).sum() + gates.log_prob(torch.zeros(4)).sum()
             + gates.log_prob(torch.ones(4)).sum() + gates.mode.sum())
    assert torch.isfinite(total)
    total.backward()
    assert torch.isfinite(a.grad).all() and torch.isfinite(b.grad).all()


def test_from_logits_gates_open_monotonically_and_keep_their_gradient():
    logits = torch.linspace(-12, 12, 49, dtype=torch.float64, requires_grad=True)
    gates = HardKumaraswamy.from_logits(logits)
    prob_nonzero, prob_one = gates.prob_nonzero, gates.prob_one
    assert torch.all(prob_nonzero[1:] > prob_nonzero[:-1])
    assert torch.all(prob_one[1:] >= prob_one[:-1])
    assert float(prob_nonzero[0]) < 1e-4 and float(gates.prob_zero[-1]) < 1e-9
    assert float(prob_one[-1]) > 0.999  # an open gate sits at exactly 1
    prob_nonzero.sum().backward()
    # The gradient decays exponentially (about exp(-2.24 l) on the open side), not faster
    # as with exp'd shape parameters: still there at +-8.
    assert torch.all(logits.grad[torch.abs(logits.detach()) <= 8] > 1e-8)


def test_test_time_gate_is_nonzero_exactly_above_the_open_probability_threshold():
    logits = torch.linspace(-30, 30, 200_001, dtype=torch.float64)
    gates = HardKumaraswamy.from_logits(logits)
    threshold = open_gate_probability()
    assert 0.5 < threshold < 0.55
    np.testing.assert_array_equal((gates.mode > 0).numpy(),
                                  (gates.prob_nonzero > threshold).numpy())
    # The mode's three regimes: closed, the Kumaraswamy mean in between, open.
    mode = gates.mode
    assert mode[0] == 0 and mode[-1] == 1
    assert torch.any((mode > 0) & (mode < 1))


@pytest.mark.parametrize("probability", [0.05, 0.3, 0.76, 0.99])
def test_open_logit_inverts_the_open_probability(probability):
    logit = open_logit(probability)
    gates = HardKumaraswamy.from_logits(torch.tensor(logit, dtype=torch.float64))
    assert float(gates.prob_nonzero) == pytest.approx(probability, abs=1e-9)
    with pytest.raises(ValueError, match="in \\(0, 1\\)"):
        open_logit(1.0)


def test_expected_transitions_match_monte_carlo():
    torch.manual_seed(0)
    gates = HardKumaraswamy.from_logits(torch.tensor([[2.0, -1.0, 0.0, 3.0, -2.0]]))
    pairs = torch.tensor([[0, 1], [1, 2], [2, 3], [3, 4]])
    samples = gates.rsample((100_000,))[:, 0] > 0
    changes = (samples[:, pairs[:, 0]] != samples[:, pairs[:, 1]]).float().sum(1).mean()
    assert float(gates.expected_transitions(pairs)) == pytest.approx(float(changes), abs=0.02)


def test_hard_kuma_checks_its_stretch_and_expands():
    with pytest.raises(ValueError, match="lower < 0 < 1 < upper"):
        HardKumaraswamy(1.0, 1.0, lower=0.1)
    gates = HardKumaraswamy(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 0.5])).expand((3, 2))
    assert gates.batch_shape == (3, 2) and gates.rsample().shape == (3, 2)


@pytest.mark.parametrize("build", [
    lambda logits: RebarBernoulli(0.5, logits),
    lambda logits: HardKumaraswamy.from_logits(logits),
], ids=["rebar", "hardkuma"])
def test_selections_above_the_threshold_are_those_the_mode_keeps(build):
    """The interface every per-feature selection shares: ``scores`` (what explain returns),
    ``selection_threshold()`` (k=None keeps the scores above it) and ``mode`` agree."""
    logits = torch.linspace(-6, 6, 2001)
    selections = build(logits)
    kept = selections.scores > type(selections).selection_threshold()
    # Away from the boundary itself (one logit's width), the two rules coincide.
    boundary = (selections.mode > 0).float().diff().nonzero()
    far = torch.ones_like(kept)
    for index in boundary.flatten():
        far[max(index - 1, 0): index + 3] = False
    assert torch.equal(kept[far], (selections.mode > 0)[far])
    assert torch.all(selections.scores.diff() >= 0)  # scores rise with the logits
