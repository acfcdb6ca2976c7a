"""The k-subset Concrete relaxation: shapes, limits, gradients, mode."""

import numpy as np
import pytest
import torch

import itertools

from sk_sointer.distributions import (
    SubsetConcrete,
    gumbel_topk,
    plackett_luce_log_prob,
    topk_mask,
)


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
    log_prob = plackett_luce_log_prob(logits.expand(len(orders), 4), orders)
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
    order = gumbel_topk(logits, 2)
    assert order.shape == (40_000, 2)
    assert (order[:, 0] != order[:, 1]).all()
    pairs = torch.tensor(list(itertools.permutations(range(4), 2)))
    expected = plackett_luce_log_prob(logits[: len(pairs)], pairs).exp()
    observed = torch.stack([((order == pair).all(dim=1)).float().mean() for pair in pairs])
    np.testing.assert_allclose(observed.numpy(), expected.numpy(), atol=0.01)
