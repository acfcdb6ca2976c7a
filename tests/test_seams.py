"""The seams a new method plugs into: the problem description, the hooks, the net base."""

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression

from sk_sointer import (HardKumaExplainer, L2XExplainer, MEEDExplainer, RealXExplainer,
                        SOInterExplainer)
from sk_sointer.black_box import BlackBox
from sk_sointer._training.nets import SelectorJudgeNet
from sk_sointer.metrics import EvalXEvaluator


@pytest.fixture
def table():
    rng = np.random.RandomState(0)
    # Everyday units: one feature in the thousands, one around 50.
    X = np.c_[rng.randn(300, 3), 1000 + 300 * rng.randn(300), 50 + 10 * rng.randn(300)]
    y = (X[:, 0] + (X[:, 3] - 1000) / 300 > 0).astype(int)
    return X, y


class _RecordingL2X(L2XExplainer):
    """L2X whose hooks record what fit handed them and whose selector also sees a column
    of ones (the shape of MEED's extra input)."""

    def _check_params(self, problem):
        super()._check_params(problem)
        type(self).checked = problem

    def _pretrain(self, problem, X, X_scaled, targets):
        type(self).pretrained = (problem, X_scaled.copy(), targets.copy())

    def _selector_input(self, X_scaled, X, outputs=None):
        if isinstance(X_scaled, torch.Tensor):  # explained on an accelerator: a tensor there
            return torch.cat([X_scaled, X_scaled.new_ones(len(X_scaled), 1)], dim=1)
        return np.c_[X_scaled, np.ones(len(X_scaled), dtype=np.float32)]


def test_hooks_receive_the_problem_and_the_selector_input_sets_its_width(table):
    X, y = table
    model = LogisticRegression(max_iter=1000).fit(X, y)
    expl = _RecordingL2X(k=2, max_epochs=2, random_state=0).fit(X, black_box=model)
    problem = _RecordingL2X.checked
    assert problem.n_features == 5 and problem.n_groups == 5 and problem.input_shape == (5,)
    assert isinstance(problem.black_box, BlackBox) and problem.black_box.model is model
    assert problem.output_spec.kinds == ("categorical",) and problem.target is None
    _, X_scaled, targets = _RecordingL2X.pretrained
    # The networks see standardised rows; the targets are the model's probabilities.
    np.testing.assert_allclose(X_scaled.mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(X_scaled.std(axis=0), 1, atol=1e-4)
    np.testing.assert_allclose(targets, model.predict_proba(X), atol=1e-6)
    assert expl.net_.module_[0].in_features == 6
    masks = expl.transform(X)
    assert masks.shape == X.shape and (masks.sum(axis=1) == 2).all()


def test_a_target_is_validated_against_the_outputs_before_training(table):
    X, y = table

    class _TargetL2X(L2XExplainer):
        target = 3  # a multi-output method's parameter, out of range for one output

    with pytest.raises(ValueError, match=r"target should be in \[0, n_outputs - 1\] = \[0, 0\]"):
        _TargetL2X(k=1, max_epochs=1).fit(X, y)


@pytest.mark.parametrize("make", [
    lambda: L2XExplainer(k=2, max_epochs=2, random_state=0),
    lambda: RealXExplainer(k=2, max_epochs=2, predictor_epochs=1, random_state=0),
    lambda: EvalXEvaluator(max_epochs=2, random_state=0),
], ids=["l2x", "realx", "evalx"])
def test_every_net_is_built_on_the_shared_base_and_predicts_masked_rows(table, make):
    X, y = table
    estimator = make().fit(X, y)
    net = estimator.net_
    assert isinstance(net, SelectorJudgeNet)
    masks = np.zeros_like(X)
    masks[:, [0, 3]] = 1
    outputs = estimator.predict_masked(X, masks)
    assert outputs.shape == (len(X), 2)
    np.testing.assert_allclose(outputs.sum(axis=1), 1, rtol=1e-5)
    # The public method is the judge on m(x, s) in standardised units: masked features at
    # the standardised baseline (0 for the mean baseline), the mask appended if asked.
    judge = getattr(net, net.judge + "_").eval()
    X_scaled = torch.as_tensor(estimator.masker_.standardize(X))
    masked = X_scaled * torch.as_tensor(masks, dtype=torch.float32)
    if net.append_mask:
        masked = torch.cat([masked, torch.as_tensor(masks, dtype=torch.float32)], dim=1)
    device = next(judge.parameters()).device
    with torch.no_grad():
        expected = torch.softmax(judge(masked.to(device)), dim=1).cpu().numpy()
    np.testing.assert_allclose(outputs, expected, rtol=1e-5, atol=1e-6)


def test_score_fills_left_out_features_with_the_training_mean(table):
    X, y = table
    model = LogisticRegression(max_iter=1000).fit(X, y)
    expl = L2XExplainer(k=2, max_epochs=2, random_state=0).fit(X, black_box=model)
    masks = expl.transform(X)
    filled = np.where(masks > 0, X, X.mean(axis=0))
    answers, kept = model.predict(X), model.predict(filled) == model.predict(X)
    # the mean over the model's answers of the share of their rows that keep it
    expected = np.mean([kept[answers == a].mean() for a in np.unique(answers)])
    assert expl.score(X) == pytest.approx(expected)
    zero = L2XExplainer(k=2, max_epochs=2, random_state=0, baseline="zero")
    zero.fit(X, black_box=model)
    filled = np.where(zero.transform(X) > 0, X, 0.0)
    kept = model.predict(filled) == answers
    assert zero.score(X) == pytest.approx(
        np.mean([kept[answers == a].mean() for a in np.unique(answers)]))


def test_shared_parameters_have_the_same_names_and_order_in_every_explainer():
    """Every explainer ends its signature with the same shared parameters, in one order:
    the refinement, the per-row repair and the background rows, the modality (what a row
    is; ``tokens`` where the method reads token ids) and skorch's training knobs. Their
    constraints are declared once, in the base."""
    import inspect

    from sk_sointer.base import TOKENS_CONSTRAINT, BaseExplainer

    shared = ["refine", "repair", "background", "baseline", "groups", "image_shape",
              "patch_size", "tokens", "max_epochs", "batch_size", "lr", "weight_decay", "optimizer", "callbacks",
              "train_split", "device", "data_on_device", "cuda_graphs", "random_state",
              "verbose"]
    for cls in (L2XExplainer, RealXExplainer, MEEDExplainer, SOInterExplainer,
                HardKumaExplainer):
        names = list(inspect.signature(cls).parameters)
        tail = names[names.index("refine"):]
        expected = [name for name in shared if name != "tokens" or "tokens" in names]
        assert tail == expected, cls.__name__
        for name in ("groups", "image_shape", "patch_size", "refine", *TOKENS_CONSTRAINT):
            if name in names:
                assert cls._parameter_constraints[name] is (
                    TOKENS_CONSTRAINT.get(name) or BaseExplainer._parameter_constraints[name])
