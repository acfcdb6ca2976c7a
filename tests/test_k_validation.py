"""The number of features to keep, ``k``, is checked wherever it is read: ``fit`` refuses
a boolean, and a ``k`` set with ``set_params`` after fit is checked by ``transform`` and
``score`` as ``fit`` checks it; ``k=None`` is taken only by the methods that threshold
their scores."""

import numpy as np
import pytest

from sk_sointer import (EnergyNet, HardKumaExplainer, L2XExplainer, MEEDExplainer,
                        RealXExplainer, SOInterExplainer)

FAST = {"max_epochs": 2, "batch_size": 32, "random_state": 0, "device": "cpu"}


def _fitted(name, rows):
    X, single, multi = rows
    if name == "SOInterExplainer":
        return SOInterExplainer(target=0, k=2, energy=EnergyNet(max_epochs=1), energy_masks=1,
                                refine=None,
                                **{**FAST, "max_epochs": 1}).fit(X, black_box=multi)
    make = {"L2XExplainer": L2XExplainer, "MEEDExplainer": MEEDExplainer,
            "RealXExplainer": RealXExplainer, "HardKumaExplainer": HardKumaExplainer}[name]
    params = {"predictor_epochs": 1} if name in ("RealXExplainer", "HardKumaExplainer") else {}
    return make(k=2, **params, **FAST).fit(X, black_box=single)


EXPLAINERS = ["L2XExplainer", "RealXExplainer", "MEEDExplainer", "SOInterExplainer",
              "HardKumaExplainer"]
# Refused by fit: k=None where the method has no threshold for it.
NEEDS_K = {"L2XExplainer", "MEEDExplainer", "SOInterExplainer"}


@pytest.fixture(scope="module")
def fitted(rows):
    return {name: _fitted(name, rows) for name in EXPLAINERS}


@pytest.mark.parametrize("name", EXPLAINERS)
@pytest.mark.parametrize("k, message", [
    (0, r"'k' parameter of {name} must be an int in the range \[1, inf\)( or None)?\. Got 0"),
    (-2, r"'k' parameter of {name} must be an int in the range \[1, inf\)( or None)?\. Got -2"),
    (2.5, r"'k' parameter of {name} must be .*Got 2.5"),
    ("3", r"'k' parameter of {name} must be .*Got '3'"),
    (True, r"'k' parameter of {name} must be an int, not a bool; got True"),
    (np.bool_(True), r"'k' parameter of {name} must be an int, not a bool"),
])
def test_k_set_after_fit_is_checked_where_it_is_read(name, k, message, fitted, rows):
    X = rows[0]
    explainer = fitted[name]
    try:
        explainer.set_params(k=k)
        for method in (explainer.transform, explainer.score):
            with pytest.raises(ValueError, match=message.format(name=name)):
                method(X)
    finally:
        explainer.set_params(k=2)
    np.testing.assert_array_equal(explainer.transform(X).sum(axis=1), 2)


@pytest.mark.parametrize("name", EXPLAINERS)
def test_k_none_after_fit_only_where_fit_takes_it(name, fitted, rows):
    X = rows[0]
    explainer = fitted[name]
    try:
        explainer.set_params(k=None)
        if name in NEEDS_K:
            with pytest.raises(ValueError, match=f"'k' parameter of {name} must be .*Got None"):
                explainer.transform(X)
        else:  # thresholded masks, at least one group per row
            assert explainer.transform(X).sum(axis=1).min() >= 1
        explainer.set_params(k=3)
        np.testing.assert_array_equal(explainer.transform(X).sum(axis=1), 3)
    finally:
        explainer.set_params(k=2)


@pytest.mark.parametrize("name", EXPLAINERS)
def test_fit_refuses_a_boolean_k(name, rows):
    X, single, multi = rows
    from sk_sointer import explainers

    explainer = getattr(explainers, name)(k=True, **{**FAST, "max_epochs": 1})
    if name == "SOInterExplainer":
        explainer.set_params(energy=EnergyNet(max_epochs=1))  # refused before torch's topk
    elif name in ("RealXExplainer", "HardKumaExplainer"):
        explainer.set_params(max_epochs=2, predictor_epochs=1)
    model = multi if name == "SOInterExplainer" else single
    with pytest.raises(ValueError, match=f"'k' parameter of {name} must be an int, not a bool"):
        explainer.fit(X, black_box=model)
