"""scikit-learn's estimator checks, run on every public estimator with its default parameters.

The defaults must work on sklearn's small test sets too (a default ``k`` beyond the number
of features keeps them all, with a warning; MEED fits on outputs alone, with a warning).
Only SOInter's checks that fit are expected to fail, for the reason its tags give
(``_xfail_checks``, read by ``sk_sointer.base.expected_failed_checks``).
"""

import copy
import warnings

import numpy as np
import pytest
import torch
from sklearn.utils.estimator_checks import check_estimator, parametrize_with_checks

import sk_sointer
from sk_sointer import L2XExplainer
from sk_sointer.base import expected_failed_checks

PUBLIC_ESTIMATORS = [sk_sointer.L2XExplainer(), sk_sointer.RealXExplainer(),
                     sk_sointer.HardKumaExplainer(), sk_sointer.MEEDExplainer(),
                     sk_sointer.EvalXEvaluator(), sk_sointer.SOInterExplainer()]


# Each estimator declares, in its tags, the checks it fails and why (SOInter's that fit:
# it needs the model itself, see its module).
@parametrize_with_checks(PUBLIC_ESTIMATORS, expected_failed_checks=expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_every_public_estimator_is_checked():
    public = {name for name in sk_sointer.__all__ if name.endswith(("Explainer", "Evaluator"))}
    checked = {type(estimator).__name__ for estimator in PUBLIC_ESTIMATORS}
    assert public == checked


def test_expected_failures_are_declared_with_a_reason_in_the_tags():
    declared = {type(estimator).__name__: expected_failed_checks(estimator)
                for estimator in PUBLIC_ESTIMATORS}
    assert {name for name, checks in declared.items() if checks} == {"SOInterExplainer"}
    reasons = declared["SOInterExplainer"]
    assert len(reasons) >= 20 and all("needs the model itself" in why
                                      for why in reasons.values())


def test_check_estimator_passes_for_sointer_with_its_declared_failures():
    estimator = sk_sointer.SOInterExplainer()
    results = check_estimator(estimator, expected_failed_checks=expected_failed_checks(estimator),
                              on_fail=None)
    assert not [result["check_name"] for result in results if result["status"] == "failed"]
    assert {result["check_name"] for result in results if result["status"] == "xfail"} == set(
        expected_failed_checks(estimator))


def test_default_k_on_a_narrow_table_keeps_every_feature():
    rng = np.random.RandomState(0)
    X = rng.randn(100, 3).astype(np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        expl = L2XExplainer(max_epochs=1).fit(X, (X[:, 0] > 0).astype(int))
    assert any("k=4 is greater than n_features=3" in str(w.message) for w in caught)
    np.testing.assert_array_equal(expl.transform(X), 1.0)
    assert torch.get_num_threads() >= 1


def _repairing_explainers():
    small = dict(k=2, max_epochs=1, batch_size=64, refine=None, random_state=0)
    return [sk_sointer.L2XExplainer(**small), sk_sointer.MEEDExplainer(**small),
            sk_sointer.RealXExplainer(predictor_epochs=1, **{**small, "max_epochs": 2}),
            sk_sointer.HardKumaExplainer(predictor_epochs=1, **{**small, "max_epochs": 2}),
            sk_sointer.SOInterExplainer(energy=sk_sointer.EnergyNet(max_epochs=1),
                                        energy_masks=1, **small)]


@pytest.mark.parametrize("explainer", _repairing_explainers(), ids=lambda e: type(e).__name__)
def test_a_repairing_explainer_changes_nothing_on_itself_after_fit(explainer):
    """As sklearn's check_dict_unchanged asks, with repair="model" set: the masks of
    transform are repaired, the report comes from repair_masks, and no method called
    after fit writes to the explainer."""
    X = np.random.RandomState(0).randn(200, 5)

    def model(rows):  # two labels, the first read off x0 and x1
        p = 1 / (1 + np.exp(-3 * (rows[:, 0] - rows[:, 1])))
        return np.column_stack([p, 1 / (1 + np.exp(-rows[:, 2]))])

    multi = isinstance(explainer, sk_sointer.SOInterExplainer)
    black_box = sk_sointer.as_black_box(
        model if multi else (lambda rows: np.column_stack([1 - model(rows)[:, 0],
                                                           model(rows)[:, 0]])),
        output="multilabel_proba" if multi else "proba")
    explainer.set_params(repair="model").fit(X, black_box=black_box)
    before = {name: copy.deepcopy(value) for name, value in vars(explainer).items()
              if isinstance(value, (np.ndarray, int, float, str, type(None)))}
    names = set(vars(explainer))
    masks = explainer.transform(X)
    explainer.explain(X), explainer.score(X), explainer.check(X)
    report = explainer.repair_masks(X)
    assert set(vars(explainer)) == names
    for name, value in before.items():
        now = vars(explainer)[name]
        assert (np.array_equal(now, value) if isinstance(value, np.ndarray)
                else now == value), name
    np.testing.assert_array_equal(report.masks, masks)
    plain = explainer.set_params(repair=None).transform(X)
    assert report.holds.mean() >= explainer.check(X, plain).holds.mean()
