"""scikit-learn's estimator checks, run on every public estimator with its default parameters.

No check is expected to fail: the defaults must work on sklearn's small test sets too (a
default ``k`` beyond the number of features keeps them all, with a warning).
"""

from sklearn.utils.estimator_checks import parametrize_with_checks

import sk_sointer

PUBLIC_ESTIMATORS = [sk_sointer.L2XExplainer(), sk_sointer.RealXExplainer(),
                     sk_sointer.HardKumaExplainer(), sk_sointer.EvalXEvaluator()]


@parametrize_with_checks(PUBLIC_ESTIMATORS)
def test_sklearn_compatible(estimator, check):
    check(estimator)


# sklearn's fitting checks pass outputs of one target as y; SOInter needs a multi-output
# model itself and MEED the model (it reads the model's output on every row), so
# tests/test_sointer.py and tests/test_meed.py run the checks that do not fit.
NEEDS_THE_MODEL = {"SOInterExplainer", "MEEDExplainer"}


def test_every_public_estimator_is_checked():
    public = {name for name in sk_sointer.__all__ if name.endswith(("Explainer", "Evaluator"))}
    checked = {type(estimator).__name__ for estimator in PUBLIC_ESTIMATORS}
    assert public == checked | NEEDS_THE_MODEL
