"""scikit-learn's estimator checks, run on every public explainer."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from .conftest import fast_explainers

# Checks that cannot pass, with the reason. Keyed by check name.
EXPECTED_FAILED_CHECKS = {}


def _expected_failed_checks(estimator):
    return EXPECTED_FAILED_CHECKS


@parametrize_with_checks(fast_explainers(), expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_every_public_explainer_is_checked():
    import sk_sointer

    public = {name for name in sk_sointer.__all__ if name.endswith("Explainer")}
    assert public == {type(estimator).__name__ for estimator in fast_explainers()}
