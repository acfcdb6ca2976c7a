"""The black-box adapter: what counts as a model, and what its outputs mean."""

import numpy as np
import pytest
import torch
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.multioutput import MultiOutputClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sk_sointer import BlackBox, as_black_box
from sk_sointer.black_box import check_outputs, output_agreement
from sk_sointer.metrics import posthoc_accuracy


@pytest.fixture
def data():
    rng = np.random.RandomState(0)
    X = rng.randn(50, 4).astype(np.float32)
    return X, (X[:, 0] > 0).astype(int)


def test_classifier_gives_float32_probabilities(data):
    X, y = data
    model = LogisticRegression().fit(X, y)
    bb = as_black_box(model)
    out = bb(torch.as_tensor(X))
    assert out.dtype == torch.float32 and out.shape == (50, 2)
    np.testing.assert_allclose(out.numpy(), model.predict_proba(X), rtol=1e-5)
    assert bb.spec.task == "classification" and bb.spec.blocks == ((0, 2),)


def test_pipeline_regressor_and_multioutput(data):
    X, y = data
    pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    assert as_black_box(pipe).predict(X).shape == (50, 2)
    reg = as_black_box(LinearRegression().fit(X, X[:, 1]))
    assert reg.predict(X).shape == (50, 1) and reg.spec.task == "regression"
    Y = np.c_[y, (X[:, 1] > 0).astype(int), (X[:, 2] > 1).astype(int)]
    multi = as_black_box(MultiOutputClassifier(LogisticRegression()).fit(X, Y))
    assert multi.predict(X).shape == (50, 6)
    assert multi.spec.blocks == ((0, 2), (2, 4), (4, 6))


def test_torch_module_is_differentiable(data):
    X, _ = data
    module = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Softmax(dim=1))
    bb = as_black_box(module)
    assert bb.differentiable and bb.spec is None
    X_t = torch.as_tensor(X).requires_grad_(True)
    bb(X_t, grad=True)[:, 0].sum().backward()
    assert X_t.grad is not None and X_t.grad.abs().sum() > 0
    assert bb.spec.task == "classification"
    assert module.training, "the module's own mode is restored"


def test_logits_and_values_are_read_as_told(data):
    X, _ = data
    logits = as_black_box(lambda rows: rows[:, :3] * 5, output="logits")
    proba = logits.predict(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1, rtol=1e-5)
    assert as_black_box(lambda rows: rows[:, :2], output="values").predict(X).shape == (50, 2)


def test_black_box_is_never_mistaken_for_an_array(data):
    X, y = data
    bb = as_black_box(make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y))
    assert isinstance(bb, BlackBox)
    assert not hasattr(bb, "__len__") and not hasattr(bb, "__array__")
    assert as_black_box(bb) is bb
    with pytest.raises(TypeError, match="needs a model; got an array"):
        as_black_box(np.zeros((3, 2)))
    with pytest.raises(TypeError, match="Cannot use"):
        as_black_box(object())


def test_output_width_must_not_change(data):
    X, _ = data
    calls = []

    def unstable(rows):
        calls.append(1)
        return np.ones((rows.shape[0], 2 if len(calls) == 1 else 3))

    bb = as_black_box(unstable)
    bb.predict(X)
    with pytest.raises(ValueError, match="returned 3 outputs per sample, but it returned 2"):
        bb.predict(X)


def test_check_outputs_encodes_labels_probabilities_and_values():
    labels, spec = check_outputs(np.array(["a", "b", "a", "c"]), 4)
    np.testing.assert_array_equal(labels, np.eye(3, dtype=np.float32)[[0, 1, 0, 2]])
    assert spec.task == "classification" and list(spec.classes[0]) == ["a", "b", "c"]
    binary, _ = check_outputs(np.array([0, 1, 1]), 3)
    np.testing.assert_array_equal(binary, [[1, 0], [0, 1], [0, 1]])
    proba, spec = check_outputs(np.array([[0.2, 0.8], [0.5, 0.5]]), 2)
    assert spec.task == "classification"
    values, spec = check_outputs(np.array([0.3, -2.0, 7.5]), 3)
    assert spec.task == "regression" and values.shape == (3, 1)
    # At score time the encoding of fit is reused, even if a split lacks a class.
    again, _ = check_outputs(np.array(["c", "c"]), 2, spec=check_outputs(np.array(["a", "b", "c"]), 3)[1])
    np.testing.assert_array_equal(again, [[0, 0, 1], [0, 0, 1]])
    with pytest.raises(ValueError, match="NaN or infinity"):
        check_outputs(np.array([0.5, np.nan]), 2)


def test_output_agreement_and_posthoc_accuracy(data):
    X, y = data
    model = LogisticRegression().fit(X, y)
    spec = as_black_box(model).spec or check_outputs(model.predict_proba(X), 50)[1]
    full = model.predict_proba(X)
    assert output_agreement(full, full, spec) == 1.0
    assert output_agreement(full, full[:, ::-1], spec) == 0.0
    keep_first = np.zeros_like(X)
    keep_first[:, 0] = 1
    assert posthoc_accuracy(model, X, keep_first) > 0.9
    assert posthoc_accuracy(model, X, np.zeros_like(X)) == pytest.approx(max(y.mean(), 1 - y.mean()), abs=0.1)
