"""Shared fixtures: one torch thread, small float32 data, fast explainer instances, a model
that counts its queries, pyplot on the Agg backend."""

import time

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
        energy_masks=1, refine=None, random_state=0))
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


@pytest.fixture(scope="module")
def rows():
    """80 rows of five features, a logistic regression on one label and a multi-output
    model on two labels (SOInter's)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.multioutput import MultiOutputClassifier

    rng = np.random.RandomState(0)
    X = rng.randn(80, 5).astype(np.float32)
    labels = np.c_[X[:, 0] > 0, X[:, 1] + X[:, 2] > 0].astype(int)
    single = LogisticRegression().fit(X, labels[:, 0])
    multi = MultiOutputClassifier(LogisticRegression()).fit(X, labels)
    return X, single, multi


@pytest.fixture
def linear_rows():
    """Rows labelled by the sign of x0 - x2, and a logistic regression fitted to them."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.RandomState(0)
    X = rng.randn(400, 5).astype(np.float32)
    y = (X[:, 0] - X[:, 2] > 0).astype(int)
    return X, y, LogisticRegression().fit(X, y)


class CountingModel:
    """A classifier-like function that counts the rows it is asked about, and can fail
    from its ``fail_at``-th call on or sleep ``delay`` seconds a call."""

    def __init__(self, fail_at=None, delay=0.0):
        self.rows = 0
        self.calls = 0
        self.fail_at = fail_at
        self.delay = delay

    def __call__(self, rows):
        self.calls += 1
        if self.fail_at is not None and self.calls >= self.fail_at:
            raise RuntimeError("the model is down")
        time.sleep(self.delay)
        rows = np.asarray(rows, dtype=np.float64)
        self.rows += len(rows)
        p = 1 / (1 + np.exp(-(3 * rows[:, 0] - 2 * rows[:, 1])))
        return np.column_stack([1 - p, p]).astype(np.float32)


@pytest.fixture(scope="module")
def plt():
    """matplotlib's pyplot on the non-interactive Agg backend; skips without matplotlib."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot

    yield pyplot
    pyplot.close("all")
