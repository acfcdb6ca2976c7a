"""How fidelity is scored: ``score`` and ``posthoc_accuracy`` judge by the model's own
``predict``, and given the explainer by its baseline; labels given to ``score`` on rows of
one class are read with the classes of fit; a scorer of a metric the outputs lack names the
valid ones."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from sk_sointer import EvalXEvaluator, L2XExplainer, as_black_box
from sk_sointer.metrics import posthoc_accuracy

FAST = {"max_epochs": 2, "batch_size": 32, "random_state": 0, "device": "cpu"}


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


@pytest.fixture(scope="module")
def wine_svc():
    X, y = load_wine(return_X_y=True)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "The `probability` parameter", FutureWarning)
        svc = SVC(probability=True, random_state=0)
    model = make_pipeline(StandardScaler(), svc).fit(X, y)
    return X, model


# SVC(probability=True) is deprecated in recent scikit-learn, but it is the case at hand.
@pytest.mark.filterwarnings("ignore:The `probability` parameter:FutureWarning")
def test_score_and_posthoc_accuracy_judge_by_the_models_own_predict(wine_svc):
    X, model = wine_svc
    explainer = L2XExplainer(k=4, max_epochs=5, batch_size=32, random_state=0, device="cpu",
                             refine=None)  # masks that lose some answers: something to judge
    explainer.fit(X, black_box=as_black_box(model))
    masks = explainer.transform(X)
    masked = explainer.masker_.mask_raw(X, masks)
    own = np.mean(model.predict(X) == model.predict(masked))
    by_proba = np.mean(model.predict_proba(X).argmax(axis=1)
                       == model.predict_proba(masked).argmax(axis=1))
    assert own != by_proba  # Platt's probabilities disagree with predict on some rows
    answers, kept = model.predict(X), model.predict(X) == model.predict(masked)
    assert explainer.score(X) == pytest.approx(
        np.mean([kept[answers == a].mean() for a in np.unique(answers)]))
    assert posthoc_accuracy(model, X, explainer) == pytest.approx(own)


def test_posthoc_accuracy_takes_the_explainer_and_its_baseline(rows):
    X, single, _ = rows
    explainer = L2XExplainer(k=1, **FAST).fit(X[:40], black_box=single)
    X_test = X[40:] + 1.5  # a test set whose mean is far from the training mean
    assert posthoc_accuracy(single, X_test, explainer, by_answer=True) == explainer.score(X_test)
    masks = explainer.transform(X_test)
    assert posthoc_accuracy(single, X_test, explainer) == posthoc_accuracy(
        single, X_test, masks, baseline=explainer.masker_.baseline_)
    assert posthoc_accuracy(single, X_test, explainer, features="unselected") == (
        posthoc_accuracy(single, X_test, 1 - masks, baseline=explainer.masker_.baseline_))
    with pytest.raises(ValueError, match="given the explainer L2XExplainer and a baseline"):
        posthoc_accuracy(single, X_test, explainer, baseline="zero")
