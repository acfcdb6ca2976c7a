"""The refinement's budget (``ModelRefinement``): ``max_queries`` bounds every query the
refinement sends to the model, for every explainer (each of MEED's two refinements), and a budget of no queries refines
nothing; ``max_seconds`` ends the refinement and keeps the best selector; the refinement's
parameters are validated when the explainer fits, before the model is asked anything."""

import time

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils._param_validation import InvalidParameterError

import sk_sointer
from sk_sointer import ModelRefinement

from .conftest import CountingModel


@pytest.fixture(scope="module")
def table():
    return np.random.RandomState(0).randn(300, 6).astype(np.float32)


def _explainers():
    return [
        sk_sointer.L2XExplainer(k=2, max_epochs=1, batch_size=64, random_state=0),
        sk_sointer.RealXExplainer(k=2, max_epochs=2, predictor_epochs=1, batch_size=64,
                                  random_state=0),
        sk_sointer.HardKumaExplainer(k=2, max_epochs=2, predictor_epochs=1, batch_size=64,
                                     random_state=0),
        sk_sointer.MEEDExplainer(k=2, max_epochs=1, batch_size=64, random_state=0),
    ]


_IDS = lambda e: type(e).__name__  # noqa: E731


def _refinement_queries(explainer, X, refine):
    """Rows the model is really asked by the refinement: the fit's own queries (the same
    without refinement) taken away."""
    plain, refined = CountingModel(), CountingModel()
    clone(explainer).set_params(refine=None).fit(X, black_box=plain)
    fitted = clone(explainer).set_params(refine=refine).fit(X, black_box=refined)
    return refined.rows - plain.rows, fitted


@pytest.mark.parametrize("max_queries", [0, 7, 100, 2_000, 20_000])
@pytest.mark.parametrize("imitate_share", [0.0, 0.5, 1.0])
def test_max_queries_bounds_every_query_of_the_refinement(table, max_queries, imitate_share):
    explainer = sk_sointer.L2XExplainer(k=2, max_epochs=1, batch_size=64, random_state=0)
    refine = ModelRefinement(max_queries=max_queries, imitate_share=imitate_share,
                             batch_size=32)
    sent, fitted = _refinement_queries(explainer, table, refine)
    assert sent == fitted.n_model_queries_ <= max_queries
    if max_queries < 8:  # cannot judge the selector once: nothing is refined
        assert sent == 0 and fitted.refinement_fidelity_ is None
    if max_queries >= 2_000:  # enough to be spent in part at least
        assert sent > max_queries / 4


@pytest.mark.parametrize("explainer", _explainers(), ids=_IDS)
def test_every_explainer_refines_within_the_budget(table, explainer):
    sent, fitted = _refinement_queries(explainer, table, ModelRefinement(max_queries=3_000))
    if explainer._removed_weight():
        # MEED refines twice, each within the budget, then compares the two on the
        # training rows: each selector's masks and their complements
        assert 3_000 < sent == fitted.n_model_queries_ <= 2 * 3_000 + 2 * 2 * len(table)
    else:
        assert 0 < sent == fitted.n_model_queries_ <= 3_000


def test_a_budget_of_no_queries_refines_nothing(table, capsys):
    """max_queries=0 (the CLI's --max-queries 0): no refinement is announced, and the
    masks are refine=None's."""
    model = CountingModel()
    params = dict(k=2, max_epochs=2, batch_size=64, random_state=0)
    plain = sk_sointer.L2XExplainer(refine=None, **params).fit(table, black_box=model)
    capsys.readouterr()
    none = sk_sointer.L2XExplainer(refine=ModelRefinement(max_queries=0), verbose=1,
                                   **params).fit(table, black_box=model)
    assert "refining" not in capsys.readouterr().err
    assert none.n_model_queries_ == 0 and none.refinement_fidelity_ is None
    np.testing.assert_array_equal(none.transform(table), plain.transform(table))


def test_max_seconds_ends_the_refinement_and_keeps_the_best_selector(table):
    model = CountingModel(delay=0.02)
    refine = ModelRefinement(max_seconds=0.5, imitate_share=0.0, batch_size=16,
                             n_eval_rows=50)
    explainer = sk_sointer.L2XExplainer(k=2, max_epochs=1, batch_size=64, random_state=0,
                                        refine=refine)
    start = time.perf_counter()
    explainer.fit(table, black_box=model)
    # Without the time budget: 100 epochs of 19 steps at 20 ms each, at least 38 s.
    assert time.perf_counter() - start < 5
    assert 1 <= len(explainer.refinement_fidelity_) - 1 <= 3
    assert explainer.fit_time_ < 5


@pytest.mark.parametrize("params, name", [
    ({"lr": 0.0}, "lr"), ({"lr": np.nan}, "lr"), ({"max_epochs": 0}, "max_epochs"),
    ({"n_samples": 0}, "n_samples"), ({"batch_size": 1}, "batch_size"),
    ({"batch_size": True}, "batch_size"), ({"max_queries": -1}, "max_queries"),
    ({"max_queries": 1.5}, "max_queries"), ({"log_weight": -0.1}, "log_weight"),
    ({"n_eval_rows": 0}, "n_eval_rows"), ({"n_iter_no_change": 0}, "n_iter_no_change"),
    ({"imitate_share": 1.5}, "imitate_share"), ({"max_seconds": 0}, "max_seconds"),
    ({"max_seconds": "1"}, "max_seconds"),
])
def test_refinement_parameters_are_validated_when_the_explainer_fits(table, params, name):
    model = CountingModel()
    explainer = sk_sointer.L2XExplainer(k=2, max_epochs=1, refine=ModelRefinement(**params))
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter of ModelRefinement"):
        explainer.fit(table, black_box=model)
    assert model.calls == 0  # refused before anything was trained or asked
