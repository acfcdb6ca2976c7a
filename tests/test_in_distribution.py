"""The refinement's in-distribution judge (``ModelRefinement(in_distribution=...)``)."""

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier

import sk_sointer
from sk_sointer import ModelRefinement
from sk_sointer._masking import Masker
from sk_sointer._outputs import spec_of
from sk_sointer._model_judge import ModelJudge, keep_reward
from sk_sointer.metrics import EvalXEvaluator


def _judge(weight, judged):
    rng = np.random.RandomState(0)
    X = rng.randn(6, 3).astype(np.float32)
    model = sk_sointer.as_black_box(
        lambda rows: np.column_stack([1 / (1 + np.exp(rows[:, 0])),
                                      1 - 1 / (1 + np.exp(rows[:, 0]))]))
    spec = spec_of(("categorical",), (2,))
    masker = Masker("zero").fit(X)
    return ModelJudge(model, masker, spec, X, model.predict(X), log_weight=0.1,
                      in_distribution=lambda index, group_masks: judged[index],
                      in_distribution_weight=weight), model, X, spec


def test_rewards_and_fidelity_mix_the_model_and_the_in_distribution_judge():
    judged = np.tile([[0.9, 0.1]], (6, 1)).astype(np.float32)  # class 0 on every row
    judge, model, X, spec = _judge(0.25, judged)
    index, masks = np.arange(6), np.tile([[0.0, 1.0, 0.0]], (6, 1)).astype(np.float32)
    full = model.predict(X)
    by_model = keep_reward(full, model.predict(np.where(masks > 0, X, 0)), spec)
    by_judge = keep_reward(full, judged, spec)
    np.testing.assert_allclose(judge.costs(index, masks), -(0.75 * by_model + 0.25 * by_judge),
                               rtol=1e-5)
    # The model keeps every answer on x0 = 0 (class 0 at p = 0.5: argmax 0) only where the
    # full row says class 0; the judge says class 0 everywhere.
    kept = np.mean(full.argmax(axis=1) == 0)
    assert judge.fidelity(index, masks) == pytest.approx(0.75 * kept + 0.25 * kept)
    # Without a weight the judge is not asked.
    plain, *_ = _judge(0.0, None)
    np.testing.assert_allclose(plain.costs(index, masks), -by_model, rtol=1e-5)


def _ternary_votes():
    rng = np.random.RandomState(0)
    X = rng.choice([-1.0, 0.0, 1.0], size=(1_200, 6), p=[0.45, 0.1, 0.45])
    y = (X[:, :3].sum(axis=1) > 0).astype(int)
    return X[:800], X[800:], DecisionTreeClassifier(random_state=0).fit(X[:800], y[:800])


def test_the_in_distribution_judge_makes_masks_that_hold_on_real_rows():
    # Three votes of -1, 0 or +1 decide the class. At the mean fill (about 0) a left-out
    # vote abstains, so keeping the votes that agree with the answer is enough; in
    # distribution, where a left-out vote is any of the three, the masks must keep the
    # votes that settle it. Judged by an EVAL-X evaluator trained apart.
    X, X_test, model = _ternary_votes()
    evaluator = EvalXEvaluator(max_epochs=30, random_state=1).fit(X, black_box=model)
    scores = {}
    for weight in (0.0, 1.0):
        explainer = sk_sointer.L2XExplainer(
            k=2, max_epochs=10, batch_size=64, random_state=0,
            refine=ModelRefinement(in_distribution=weight, judge_epochs=30,
                                   max_queries=100_000, max_extensions=0)
        ).fit(X, black_box=model)
        assert explainer.n_model_queries_ <= 100_000  # the judge asks the model nothing
        masks = explainer.transform(X_test)
        assert masks[:, 3:].sum() == 0  # never the features the model does not read
        scores[weight] = evaluator.score_masks(X_test, masks)["eACC"]
    assert scores[1.0] >= 0.95
    assert scores[1.0] >= scores[0.0] + 0.05


@pytest.mark.parametrize("params, name", [({"in_distribution": 1.5}, "in_distribution"),
                                          ({"in_distribution": -0.1}, "in_distribution"),
                                          ({"judge_epochs": 0}, "judge_epochs")])
def test_in_distribution_parameters_are_validated(params, name):
    X, _, model = _ternary_votes()
    explainer = sk_sointer.L2XExplainer(k=2, max_epochs=1, refine=ModelRefinement(**params))
    with pytest.raises(ValueError, match=f"'{name}' parameter of ModelRefinement"):
        explainer.fit(X, black_box=model)
