"""Regression tests for the defects a new user hit: each failed before its fix."""

import copy
import pickle
import warnings

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression

from sk_sointer import EvalXEvaluator, L2XExplainer, RealXExplainer


@pytest.fixture
def linear_rows():
    rng = np.random.RandomState(0)
    X = rng.randn(400, 5).astype(np.float32)
    y = (X[:, 0] - X[:, 2] > 0).astype(int)
    return X, y, LogisticRegression().fit(X, y)


def _unpicklable(model):
    return lambda rows: model.predict_proba(rows)  # noqa: E731 - lambdas do not pickle


def test_pickling_leaves_the_live_explainer_its_black_box(linear_rows):
    X, y, model = linear_rows
    expl = L2XExplainer(k=2, max_epochs=2, random_state=0).fit(X, black_box=_unpicklable(model))
    before = expl.score(X)
    with pytest.warns(UserWarning, match="cannot be pickled and is left out"):
        loaded = pickle.loads(pickle.dumps(expl))
    with pytest.warns(UserWarning, match="cannot be pickled"):
        copy.deepcopy(expl)
    assert expl.black_box_ is not None and expl.score(X) == before
    assert loaded.black_box_ is None
    np.testing.assert_array_equal(loaded.transform(X), expl.transform(X))


def test_evalx_with_an_unpicklable_black_box_pickles_with_a_warning(linear_rows):
    X, y, model = linear_rows
    evaluator = EvalXEvaluator(max_epochs=2, random_state=0).fit(X, black_box=_unpicklable(model))
    with pytest.warns(UserWarning, match="cannot be pickled and is left out"):
        loaded = pickle.loads(pickle.dumps(evaluator))
    assert evaluator.black_box_ is not None and loaded.black_box_ is None
    masks = np.ones_like(X)
    np.testing.assert_allclose(loaded.predict_masked(X, masks), evaluator.predict_masked(X, masks))


def test_scores_on_a_subset_with_one_class_use_the_classes_of_fit(linear_rows):
    X, y, model = linear_rows
    positive = y == 1
    evaluator = EvalXEvaluator(max_epochs=20, random_state=0).fit(X, y)
    keep = np.zeros_like(X)
    keep[:, [0, 2]] = 1
    with_labels = evaluator.score_masks(X[positive], keep[positive], y[positive])["eACC"]
    predicted = evaluator.predict_masked(X[positive], keep[positive]).argmax(axis=1)
    assert with_labels == pytest.approx(np.mean(predicted == 1)) and with_labels > 0.8

    # Fitted on probabilities (no class names): labels given to score are column indices.
    expl = L2XExplainer(k=2, max_epochs=20, random_state=0).fit(X, model.predict_proba(X))
    own = expl.predict_masked(X[positive], expl.transform(X[positive])).argmax(axis=1)
    assert expl.score(X[positive], y[positive]) == pytest.approx(np.mean(own == 1))
    assert expl.score(X[positive], y[positive]) > 0.8


def test_batch_size_of_one_is_a_parameter_error(linear_rows):
    X, y, _ = linear_rows
    with pytest.raises(ValueError, match="'batch_size' parameter"):
        L2XExplainer(batch_size=1, max_epochs=1).fit(X, y)


@pytest.mark.parametrize("n_rows, train_split", [(21, None), (26, 0.2), (41, None)])
def test_a_last_training_batch_of_one_row_is_skipped(n_rows, train_split):
    # Batch normalisation cannot normalise a batch of one row; the split leaves 21 rows
    # for training in the second case, whatever the fraction rounds to.
    rng = np.random.RandomState(0)
    X = rng.randn(n_rows, 4).astype(np.float32)
    y = np.arange(n_rows) % 2
    for explainer in (L2XExplainer(k=1, batch_size=10, max_epochs=2, train_split=train_split),
                      RealXExplainer(batch_size=10, max_epochs=2, predictor_epochs=1,
                                     train_split=train_split)):
        masks = explainer.fit(X, y).transform(X)
        assert masks.shape == X.shape and np.isfinite(explainer.explain(X)).all()


def test_values_beyond_float32_work_or_give_a_clear_error():
    rng = np.random.RandomState(0)
    X = rng.randn(50, 3)
    X[0, 1] = 1e39  # finite in float64, infinite in float32
    y = (X[:, 0] > 0).astype(int)
    # Standardised in float64 first, the outlier fits in float32: fitting works.
    expl = L2XExplainer(k=1, max_epochs=1).fit(X, y)
    assert np.isfinite(expl.explain(X)).all()
    assert (expl.transform(X).sum(axis=1) == 1).all()
    # Fitted without it, the same row is beyond float32 once standardised.
    expl = L2XExplainer(k=1, max_epochs=1).fit(X[1:], y[1:])
    with pytest.raises(ValueError, match="overflow float32"):
        expl.transform(X[:2])
    X[0, 1] = np.finfo(np.float64).max
    X[1, 1] = -np.finfo(np.float64).max
    with pytest.raises(ValueError, match="too large to standardise"):
        L2XExplainer(k=1, max_epochs=1).fit(X, y)


def test_huge_regression_targets_are_standardised():
    rng = np.random.RandomState(0)
    X = rng.randn(300, 4).astype(np.float32)
    values = 1e20 * X[:, 1]
    expl = RealXExplainer(k=1, max_epochs=25, predictor_epochs=20, batch_size=50,
                          random_state=0)
    expl.fit(X, values)
    assert np.isfinite(expl.explain(X)).all()
    predicted = expl.predict_masked(X, np.ones_like(X))[:, 0]
    # Reported back in the target's own units.
    assert np.corrcoef(predicted, values)[0, 1] > 0.9 and np.abs(predicted).max() > 1e19


def test_a_metric_the_outputs_lack_names_the_valid_ones(linear_rows):
    X, y, _ = linear_rows
    evaluator = EvalXEvaluator(max_epochs=1).fit(X, y)
    with pytest.raises(ValueError, match=r"'eMSE' is not defined .* choose one of \["):
        evaluator.make_scorer("eMSE")
    unfitted = EvalXEvaluator(max_epochs=1).make_scorer("eMSE")
    unfitted.evaluator.fit(X, y)
    expl = L2XExplainer(k=1, max_epochs=1).fit(X, y)
    with pytest.raises(ValueError, match="eACC"):
        unfitted(expl, X, y)


def test_default_k_on_a_narrow_table_keeps_every_feature():
    rng = np.random.RandomState(0)
    X = rng.randn(100, 3).astype(np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        expl = L2XExplainer(max_epochs=1).fit(X, (X[:, 0] > 0).astype(int))
    assert any("k=4 is greater than n_features=3" in str(w.message) for w in caught)
    np.testing.assert_array_equal(expl.transform(X), 1.0)
    assert torch.get_num_threads() >= 1
