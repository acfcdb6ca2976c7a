"""A fit that fails leaves the explainer as it was: a model that fails part-way through a
refit leaves the previous fit whole, and part-way through a first fit leaves the explainer
unfitted; a training whose loss turns NaN or infinite says that it diverged, and a refit
refused before training is not called a divergence. Every fit records its time."""

import time

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

import sk_sointer
from sk_sointer import L2XExplainer

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


@pytest.mark.parametrize("explainer", _explainers(), ids=_IDS)
@pytest.mark.parametrize("fail_at", [1, 3, 8])
def test_a_failed_refit_restores_the_previous_fit(table, explainer, fail_at):
    fitted = clone(explainer).fit(table, black_box=CountingModel())
    masks, state = fitted.transform(table), dict(vars(fitted))
    with pytest.raises(RuntimeError, match="the model is down"):
        fitted.set_params(random_state=1).fit(table, black_box=CountingModel(fail_at=fail_at))
    assert set(vars(fitted)) == set(state)
    assert all(vars(fitted)[name] is value for name, value in state.items()
               if name.endswith("_"))
    np.testing.assert_array_equal(fitted.transform(table), masks)


@pytest.mark.parametrize("explainer", _explainers(), ids=_IDS)
def test_a_failed_first_fit_leaves_the_explainer_unfitted(table, explainer):
    explainer = clone(explainer)
    with pytest.raises(RuntimeError, match="the model is down"):
        explainer.fit(table, black_box=CountingModel(fail_at=3))
    assert not [name for name in vars(explainer) if name.endswith("_")]
    with pytest.raises(NotFittedError):
        explainer.transform(table)


def test_training_that_diverges_says_so(rows):
    X, single, _ = rows
    with pytest.raises(ValueError, match=r"L2XExplainer's training diverged: .*NaN or infinite "
                                         r"\(lr=1e\+12\); lower lr"):
        L2XExplainer(k=2, lr=1e12, max_epochs=5, batch_size=32, refine=None,
                     random_state=0).fit(X, single.predict(X))


def test_a_refit_refused_before_training_is_not_called_divergence(rows):
    X, single, _ = rows
    explainer = L2XExplainer(k=2, lr=1e12, max_epochs=5, batch_size=32, refine=None,
                             random_state=0)
    with pytest.raises(ValueError, match="training diverged"):
        explainer.fit(X, single.predict(X))
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        explainer.fit(bad, single.predict(X))


@pytest.mark.parametrize("explainer", _explainers(), ids=_IDS)
def test_every_explainer_records_its_fit_time(table, explainer):
    start = time.perf_counter()
    fitted = clone(explainer).fit(table, black_box=CountingModel())
    assert 0 < fitted.fit_time_ <= time.perf_counter() - start
