"""Shared fixtures: one torch thread, small float32 data, fast explainer instances."""

import numpy as np
import pytest
import torch

from sklearn.base import clone

import sk_sointer

# On a 2-core machine torch's default intra-op threading makes tiny networks far slower.
torch.set_num_threads(1)


# The refinement runs on the training rows alone (``ModelRefinement(min_rows=0)``) unless
# a test is marked ``synthetic_rows`` or sets ``min_rows`` itself. The default completes a
# small table to 5,000 rows, which makes every fit on a test's few hundred rows two to three
# times slower and the suite minutes longer; the tests of the synthetic rows
# (tests/test_model_judge.py) and the marked ones run the default, the real-tables benchmark
# measures it. Set here, at import, so that fixtures of every scope fit alike.
_DEFAULTS = sk_sointer.ModelRefinement.__init__.__kwdefaults__
_MIN_ROWS = _DEFAULTS["min_rows"]
_DEFAULTS["min_rows"] = 0


@pytest.fixture(autouse=True)
def _synthetic_rows_where_marked(request, monkeypatch):
    if request.node.get_closest_marker("synthetic_rows") is not None:
        monkeypatch.setitem(_DEFAULTS, "min_rows", _MIN_ROWS)


def fast_explainers():
    """One quickly trained instance of every public explainer, for the shared checks."""
    instances = [sk_sointer.L2XExplainer(k=1, max_epochs=3, batch_size=32, random_state=0)]
    if hasattr(sk_sointer, "RealXExplainer"):
        instances.append(
            sk_sointer.RealXExplainer(
                k=1, max_epochs=4, predictor_epochs=2, batch_size=32, random_state=0
            )
        )
    if hasattr(sk_sointer, "HardKumaExplainer"):
        instances.append(
            sk_sointer.HardKumaExplainer(
                k=1, max_epochs=4, predictor_epochs=2, batch_size=32, random_state=0
            )
        )
    instances.append(sk_sointer.MEEDExplainer(k=1, max_epochs=3, batch_size=32, random_state=0))
    # SOInter explains one output of a multi-output model, which it needs in hand: the
    # shared tests fit it through fit_explainer.
    instances.append(sk_sointer.SOInterExplainer(
        k=1, max_epochs=2, batch_size=32, energy=sk_sointer.EnergyNet(max_epochs=2),
        energy_masks=1, random_state=0))
    return instances


def fit_explainer(explainer, X, y, **params):
    """``explainer`` (a clone, with ``params``) fitted on ``X`` and ``y``, the outputs or
    the model. A method that needs a multi-output model (SOInter) is fitted with one
    whose first output is ``y`` (or the model's predictions) and whose second is
    ``X[:, 1] > 0``, and explains the first."""
    explainer = clone(explainer).set_params(**params)
    if not explainer._requires_model:
        return explainer.fit(X, y)
    return explainer.fit(X, black_box=multi_output_model(X, y))


def multi_output_model(X, y):
    from sklearn.linear_model import LogisticRegression
    from sklearn.multioutput import MultiOutputClassifier

    labels = y.predict(X) if hasattr(y, "predict") else np.asarray(y)
    both = np.c_[labels, X[:, 1] > 0].astype(int)
    return MultiOutputClassifier(LogisticRegression()).fit(X, both)


def explainer_id(explainer):
    return type(explainer).__name__


@pytest.fixture
def xor_data():
    """Rows whose label depends on the first two of six features."""
    rng = np.random.RandomState(0)
    X = rng.randn(600, 6).astype(np.float32)
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    return X, y


@pytest.fixture
def linear_data():
    """A logistic model on features 0 and 3 of eight, fitted as the black box."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.RandomState(1)
    X = rng.randn(400, 8).astype(np.float32)
    y = (2 * X[:, 0] - 3 * X[:, 3] + 0.1 * rng.randn(400) > 0).astype(int)
    model = LogisticRegression().fit(X, y)
    return X, y, model
