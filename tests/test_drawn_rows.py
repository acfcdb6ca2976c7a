"""The refinement judges masks in distribution by the model itself
(``ModelRefinement(drawn_rows=)``): left-out features taken from other training rows, not
only the fill."""

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

import sk_sointer
from sk_sointer import L2XExplainer, ModelRefinement
from sk_sointer._masking import Masker
from sk_sointer._outputs import output_agreement, spec_of
from sk_sointer._model_judge import ModelJudge

from .test_tables import LoanModel, _table

pd = pytest.importorskip("pandas")


def _sign_of_first(X):
    """Class of sign(x0 + x1 / 2), sure of it far from 0."""
    X = np.asarray(X, dtype=np.float64)
    p = 1 / (1 + np.exp(-3 * (X[:, 0] + X[:, 1] / 2)))
    return np.column_stack([1 - p, p])


def test_the_plan_pays_for_the_drawn_fidelity_of_every_evaluation():
    refine = ModelRefinement(max_queries=100_000, n_eval_rows=500)
    alone = refine.plan(1_000, 2, 5)
    drawn = refine.plan(1_000, 2, 5, judged_queries=5)
    assert alone.epoch_queries == 1_000 * 8 + 500
    assert drawn.epoch_queries == 1_000 * 8 + 5 * 500
    assert drawn.max_epochs < alone.max_epochs
    # the answers, the first evaluation, the greedy search and the epochs within the budget
    assert (500 + 5 * 500 + drawn.n_imitated * 2 * 5
            + drawn.max_epochs * drawn.epoch_queries) <= 100_000


def test_the_drawn_fidelity_is_the_models_over_training_rows_and_steps_cost_one_query():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    masker = Masker("mean").fit(X)
    spec = spec_of(("categorical",), (2,))
    full = _sign_of_first(X)
    judge = ModelJudge(sk_sointer.as_black_box(_sign_of_first), masker, spec, X, full,
                       log_weight=0.1, drawn_rows=0.5, n_drawn=3, n_partners=200,
                       random_state=0)
    assert judge.judged_queries == 4
    index = np.arange(100)
    masks = np.zeros((100, 4), dtype=np.float32)
    masks[:, 0] = 1  # x0 kept: at the fill (x1 = its mean) it nearly always holds
    value, fidelity = judge.judged(index, masks)
    partners = judge._partners[index]
    assert partners.shape == (100, 3) and partners.max() < 200  # training rows only
    outputs = np.mean([_sign_of_first(np.where(masks > 0, X[index], X[partners[:, d]]))
                       for d in range(3)], axis=0)
    drawn = float(output_agreement(full[index], outputs, spec, multioutput="raw_values",
                                   by_answer=True)[0])
    assert value == pytest.approx(0.5 * fidelity + 0.5 * drawn)
    assert fidelity > drawn  # x1 drawn from other rows moves the answer where x0 is small
    before = judge.n_queries
    costs = judge.costs(np.repeat(index, 2), np.repeat(masks, 2, axis=0))
    assert judge.n_queries - before == 200 and costs.shape == (200,)


def test_a_table_is_refined_in_distribution_by_default_within_its_budget():
    X = _table()
    params = dict(k=2, max_epochs=4, batch_size=32, random_state=0)
    fits = {}
    for drawn, imitate in (("auto", "auto"), (0.5, 20), (0.0, "auto")):
        refine = ModelRefinement(max_queries=20_000, max_extensions=0, drawn_rows=drawn,
                                 imitate_epochs=imitate)
        fits[drawn] = L2XExplainer(refine=refine, **params).fit(X, black_box=LoanModel())
        assert fits[drawn].n_model_queries_ <= 20_000
    # "auto": drawn rows and 20 epochs of imitation of their greedy targets on a table
    np.testing.assert_array_equal(fits["auto"].transform(X), fits[0.5].transform(X))
    # each evaluation pays for the drawn fidelity: fewer epochs for the same budget
    assert (len(fits["auto"].refinement_fidelity_)
            < len(fits[0.0].refinement_fidelity_))


def test_rows_of_numbers_are_refined_at_the_fill_by_default():
    X = np.random.default_rng(0).normal(size=(300, 5)).astype(np.float32)
    params = dict(k=1, max_epochs=2, batch_size=32, random_state=0)
    masks = [L2XExplainer(refine=ModelRefinement(max_queries=20_000, drawn_rows=drawn),
                          **params).fit(X, black_box=_sign_of_first).transform(X)
             for drawn in ("auto", 0.0)]
    np.testing.assert_array_equal(*masks)


@pytest.mark.parametrize("drawn", [1.5, -0.1, "always", True])
def test_drawn_rows_out_of_range_is_refused(drawn):
    refine = ModelRefinement(drawn_rows=drawn)
    with pytest.raises(InvalidParameterError, match="drawn_rows"):
        L2XExplainer(k=1, refine=refine).fit(np.zeros((10, 3)), black_box=_sign_of_first)


def _judge(X, drawn_rows=0.5, n_drawn=3):
    masker = Masker("mean").fit(X)
    return ModelJudge(sk_sointer.as_black_box(_sign_of_first), masker,
                      spec_of(("categorical",), (2,)), X, _sign_of_first(X), log_weight=0.1,
                      drawn_rows=drawn_rows, n_drawn=n_drawn, random_state=0)


def test_the_greedy_search_in_distribution_mixes_the_fill_and_the_partner_rows():
    from sk_sointer._model_judge._reward import _DrawnValue

    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 4))
    judge = _judge(X)
    partners = rng.integers(0, 40, (5, 3))
    value = _DrawnValue(_sign_of_first, judge.masker, X, partners, 0.25)
    masks = np.tile([1.0, 0, 0, 0], (10, 1))
    rows = np.repeat(X[:5], 2, axis=0)  # each row twice, as the search asks about it
    fill = np.where(masks > 0, rows, X.mean(axis=0))
    drawn = np.mean([_sign_of_first(np.where(masks > 0, rows,
                                             X[np.repeat(partners[:, d], 2)]))
                     for d in range(3)], axis=0)
    np.testing.assert_allclose(value.masked_groups(rows, masks),
                               0.75 * _sign_of_first(fill) + 0.25 * drawn)
    np.testing.assert_array_equal(value.rows(slice(1, 3)).partners, partners[1:3])
    # k rounds over the groups left, each masked row at the fill and at 3 partners
    before = judge.n_queries
    chosen = judge.greedy(np.arange(40), 2)
    assert judge.n_queries - before == 40 * (4 + 3) * 4 and judge.greedy_queries == 4
    assert (chosen.sum(axis=1) == 2).all() and chosen[:, 0].mean() >= 0.75  # x0 answers


def test_every_answer_is_searched_alike_with_drawn_rows():
    X = np.random.default_rng(2).normal(size=(500, 4))
    X[:, 0] -= 1.3  # about one row in ten answers 1
    judge = _judge(X)
    answers = _sign_of_first(X).argmax(axis=1)
    order = np.random.default_rng(3).permutation(500)
    chosen = judge.imitated(order, 60)
    assert answers[chosen].sum() == 30 and len(set(chosen)) == 60
    rare = np.flatnonzero(answers == 1)
    assert set(judge.imitated(order, 2 * len(rare) + 10)) >= set(rare)
    # at the fill alone, the first rows of the order, as ever
    np.testing.assert_array_equal(_judge(X, drawn_rows=0.0).imitated(order, 60), order[:60])
