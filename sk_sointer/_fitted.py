"""What scikit-learn's checks and a fit that fails need of an estimator: the estimator
checks it is known to fail, carried in its tags (:class:`ExplainerTags`,
:func:`expected_failed_checks`), its fitted state taken and put back, and whether its
training diverged.
"""

import pickle
from dataclasses import dataclass, field, fields

import torch
from sklearn.utils import Tags, get_tags

# The estimator checks that fit: an explainer that needs the model fails them (see
# BaseExplainer.__sklearn_tags__).
_CHECKS_THAT_FIT = (
    "check_fit_score_takes_y", "check_estimators_overwrite_params",
    "check_dont_overwrite_parameters", "check_estimators_fit_returns_self",
    "check_readonly_memmap_input", "check_n_features_in_after_fitting",
    "check_positive_only_tag_during_fit", "check_estimators_dtypes", "check_dtype_object",
    "check_pipeline_consistency", "check_estimators_nan_inf", "check_estimators_pickle",
    "check_f_contiguous_array_estimator", "check_transformer_data_not_an_array",
    "check_transformer_general", "check_transformer_preserve_dtypes",
    "check_methods_sample_order_invariance", "check_methods_subset_invariance",
    "check_fit2d_1feature", "check_dict_unchanged", "check_fit_idempotent",
    "check_fit_check_is_fitted", "check_n_features_in", "check_fit2d_predict1d",
)


_DIVERGED = (
    "{name}'s training diverged: its networks' weights became NaN or infinite (lr={lr:g}); "
    "lower lr, or standardise extreme outputs."
)


def _diverged(net):
    """Whether a (partly) trained net holds non-finite weights."""
    if net is None or not getattr(net, "initialized_", False):
        return False
    return any(
        not bool(torch.isfinite(param).all())
        for module in net.state_modules().values() if isinstance(module, torch.nn.Module)
        for param in module.parameters()
    )


@dataclass(slots=True)
class ExplainerTags(Tags):
    """sklearn's :class:`~sklearn.utils.Tags` and the estimator checks that an explainer is
    known to fail, ``{check name: reason}``: what ``check_estimator`` and
    ``parametrize_with_checks`` take as ``expected_failed_checks`` (scikit-learn 1.6
    removed the ``_xfail_checks`` tag that carried them; this field carries them again,
    under that name). Read it with :func:`expected_failed_checks`."""

    _xfail_checks: dict = field(default_factory=dict)


def _with_expected_failures(tags, checks):
    """``tags`` as :class:`ExplainerTags` holding the expected failures ``checks``."""
    return ExplainerTags(**{f.name: getattr(tags, f.name) for f in fields(Tags)},
                         _xfail_checks=dict(checks))


def expected_failed_checks(estimator):
    """The estimator checks ``estimator`` is declared to fail, with the reason of each
    (its tags' ``_xfail_checks``; none for most): pass them to ``check_estimator(estimator,
    expected_failed_checks=...)`` or to ``parametrize_with_checks``."""
    return dict(getattr(get_tags(estimator), "_xfail_checks", {}))


def _fitted_state(estimator):
    """The estimator's fitted attributes (those ending in ``_``, as ``check_is_fitted``
    reads them), by name: what :func:`_restore_fitted_state` puts back."""
    return {name: value for name, value in vars(estimator).items()
            if name.endswith("_") and not name.startswith("__")}


def _restore_fitted_state(estimator, fitted):
    """Put back the fitted attributes ``fitted`` and remove any other one."""
    for name in list(_fitted_state(estimator)):
        if name not in fitted:
            delattr(estimator, name)
    for name, value in fitted.items():
        setattr(estimator, name, value)


def _picklable(obj):
    try:
        pickle.dumps(obj)
    except Exception:  # noqa: BLE001 - any failure means "cannot be stored"
        return False
    return True
