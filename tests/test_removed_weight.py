"""MEED's refinement pays for both halves of its objective: the selected features keep the
model's answer, and the features left out alone do not (``ModelJudge(removed_weight=)``,
MEED's ``w_u``)."""

import copy

import numpy as np
import pytest

import sk_sointer
from sk_sointer import L2XExplainer, MEEDExplainer, ModelRefinement
from sk_sointer._masking import Masker
from sk_sointer._outputs import spec_of
from sk_sointer._model_judge import ModelJudge, keep_reward

from .test_drawn_rows import _sign_of_first


def _judge(removed_weight, n_rows=200):
    X = np.random.default_rng(0).normal(size=(n_rows, 4))
    masker = Masker("mean").fit(X)
    spec = spec_of(("categorical",), (2,))
    return ModelJudge(sk_sointer.as_black_box(_sign_of_first), masker, spec, X,
                      _sign_of_first(X), log_weight=0.1, removed_weight=removed_weight)


def test_the_cost_subtracts_the_weighted_reward_of_the_complement_at_one_query_more():
    plain, both = _judge(0.0), _judge(0.7)
    assert (plain.cost_queries, both.cost_queries) == (1, 2)
    index = np.arange(50)
    masks = np.zeros((50, 4), dtype=np.float32)
    masks[:, 1] = 1  # x1 kept: the answer is mostly x0's, left out with it at the fill
    complement = plain.masker.mask_raw(plain.X[index], 1 - masks)
    removed = keep_reward(plain.full[index], _sign_of_first(complement), plain.spec,
                          log_weight=0.1)
    empty = plain.masker.mask_raw(plain.X[index], np.zeros_like(masks))
    nothing = keep_reward(plain.full[index], _sign_of_first(empty), plain.spec, log_weight=0.1)
    np.testing.assert_allclose(both.costs(index, masks),
                               plain.costs(index, masks) + 0.7 * np.maximum(removed - nothing,
                                                                            0), rtol=1e-6)
    # the 200 rows with nothing kept once, then each masked row and its complement
    assert (both.n_queries, plain.n_queries) == (200 + 100, 50)
    # keeping x0, the row's answer, costs more than keeping x1 once the rest must not tell it
    keep_x0 = np.roll(masks, -1, axis=1)
    gap_plain = plain.costs(index, masks).mean() - plain.costs(index, keep_x0).mean()
    gap_both = both.costs(index, masks).mean() - both.costs(index, keep_x0).mean()
    assert gap_both > gap_plain > 0


def test_the_plan_pays_for_the_complements_of_every_step():
    refine = ModelRefinement(max_queries=200_000, n_eval_rows=500)
    alone = refine.plan(1_000, 2, 5)
    both = refine.plan(1_000, 2, 5, cost_queries=2)
    assert both.epoch_queries == 2 * 1_000 * 8 + 500
    assert both.max_epochs < alone.max_epochs
    assert 500 + 500 + both.n_imitated * 2 * 5 + both.max_epochs * both.epoch_queries \
        <= 200_000


def test_meed_refines_with_its_own_infidelity_weight_and_l2x_without():
    assert MEEDExplainer()._removed_weight() == 1.0
    assert MEEDExplainer(w_u=0.25)._removed_weight() == 0.25
    assert MEEDExplainer(w_u=0.0)._removed_weight() == 0.0
    assert L2XExplainer()._removed_weight() == 0.0



def test_a_complement_is_charged_only_for_what_it_tells_beyond_no_features():
    X = np.random.default_rng(1).normal(size=(100, 3))

    def model(rows):  # a regressor of x0 alone
        return 4.0 * np.asarray(rows)[:, :1]

    masker = Masker("mean").fit(X)
    spec = spec_of(("real",), (1,))  # no scale: a spread of 1
    plain, both = (ModelJudge(sk_sointer.as_black_box(model, output="values"), masker, spec, X,
                              model(X), log_weight=0.1, removed_weight=weight)
                   for weight in (0.0, 2.0))
    index = np.arange(100)
    keep_x0 = np.zeros((100, 3), dtype=np.float32)
    keep_x0[:, 0] = 1
    # the complement (x0 at its mean) tells what no feature tells: no charge
    np.testing.assert_allclose(both.costs(index, keep_x0), plain.costs(index, keep_x0),
                               atol=1e-5)
    # keeping x1 leaves x0 to the complement, which tells the answer exactly: charged the
    # squared distance of the empty row's prediction to the full one
    keep_x1 = np.roll(keep_x0, 1, axis=1)
    moved = 4.0 * (X[:, 0] - X[:, 0].mean())
    np.testing.assert_allclose(both.costs(index, keep_x1),
                               plain.costs(index, keep_x1) + 2.0 * moved**2, rtol=1e-5,
                               atol=1e-5)


def test_meed_keeps_whichever_refinement_earns_more_of_its_objective(monkeypatch):
    # MEED refines twice (the kept groups' reward alone, and charged for the complement)
    # and keeps the selector whose masks earn more of the charged reward.
    from sk_sointer._model_judge import _refine

    chosen, compare = [], _refine._charged_is_better

    def spy(fitted, judge, net_input, k, sizes, other_state):
        charged = fitted.group_masks(net_input, k)
        own = copy.deepcopy(fitted.module_.state_dict())
        fitted.module_.load_state_dict(other_state)
        plain = fitted.group_masks(net_input, k)
        fitted.module_.load_state_dict(own)
        rows = np.arange(len(net_input))
        earned = [-judge.costs(rows, masks).mean() for masks in (charged, plain)]
        better = compare(fitted, judge, net_input, k, sizes, other_state)
        chosen.append((better, earned, charged, plain))
        return better

    monkeypatch.setattr(_refine, "_charged_is_better", spy)
    X = np.random.default_rng(0).normal(size=(300, 4))
    refine = ModelRefinement(max_queries=40_000, max_epochs=10)
    meed = MEEDExplainer(k=1, max_epochs=5, refine=refine, random_state=0)
    meed.fit(X, black_box=_three_of_four)
    (better, (charged, plain), charged_masks, plain_masks), = chosen
    assert better == (charged > plain)
    assert not np.array_equal(charged_masks, plain_masks)  # the choice decides something
    np.testing.assert_array_equal(meed.transform(X), charged_masks if better else plain_masks)
    # both refinements are paid for
    assert meed.n_model_queries_ > refine.max_queries // 2
    L2XExplainer(k=1, max_epochs=5, refine=refine, random_state=0).fit(
        X, black_box=_three_of_four)
    assert len(chosen) == 1  # a method without an infidelity term refines once


def _three_of_four(rows):
    rows = np.asarray(rows)
    p = 1 / (1 + np.exp(-3 * (rows[:, 0] + rows[:, 1] + 0.5 * rows[:, 2])))
    return np.column_stack([1 - p, p])
