"""MEED: output feedback, the two approximators' alternating objectives, the prior warm
start, and its contract (the model at fit and at transform)."""

import pickle

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from sklearn.linear_model import LogisticRegression
from torch import nn

from sk_sointer import MLP, CNNSelector, MEEDExplainer, load, save
from sk_sointer._outputs import OutputSpec
from sk_sointer.explainers._meed import infidelity_loss, log_prior, model_gradient_scores
from sk_sointer.metrics import posthoc_accuracy
import sk_sointer._training.updates as updates_module

FAST = dict(max_epochs=25, batch_size=100, device="cpu", random_state=0)
FEEDBACK = MLP(hidden_units=(100,))


class Linear2(nn.Module):
    """Class probabilities of a logistic model on the first two features of ``width``."""

    def __init__(self, width=6, weights=(3.0, -2.0)):
        super().__init__()
        self.linear = nn.Linear(width, 1)
        with torch.no_grad():
            self.linear.weight.zero_()
            self.linear.weight[0, : len(weights)] = torch.tensor(weights)
            self.linear.bias.zero_()

    def forward(self, x):
        p = torch.sigmoid(self.linear(x))
        return torch.cat([1 - p, p], dim=1)


@pytest.fixture
def data():
    rng = np.random.RandomState(0)
    return rng.randn(1000, 6).astype(np.float32)


@pytest.mark.parametrize("model", ["torch", "sklearn"])
def test_selects_the_features_the_model_uses(data, model):
    # The torch model gets its prior from the model's gradients, the sklearn one from the
    # surrogate approximator.
    black_box = Linear2() if model == "torch" else LogisticRegression().fit(
        data, 3 * data[:, 0] - 2 * data[:, 1] > 0)
    expl = MEEDExplainer(k=2, **FAST).fit(data, black_box=black_box)
    masks = expl.transform(data[:300])
    assert masks.sum(axis=1).tolist() == [2.0] * 300
    assert masks[:, :2].mean() > 0.95
    assert posthoc_accuracy(black_box, data[:300], masks) > 0.95
    # the features left out carry nothing: the model's answer is a coin toss there
    assert posthoc_accuracy(black_box, data[:300], masks, features="unselected") < 0.7


def test_fits_on_outputs_alone_with_a_warning(data):
    # Once refused, which failed 26 of scikit-learn's 48 checks at the defaults.
    labels = (3 * data[:, 0] - 2 * data[:, 1] > 0).astype(int)
    with pytest.warns(UserWarning, match="fitted on the model's outputs only: the prior comes "
                                         "from the surrogate, score needs the outputs as y;"):
        expl = MEEDExplainer(k=2, **FAST).fit(data, labels)
    masks = expl.transform(data[:300])
    assert masks.sum(axis=1).tolist() == [2.0] * 300
    assert masks[:, :2].mean() > 0.9
    assert expl.black_box_ is None
    with pytest.raises(ValueError, match="score needs the black box's outputs on X as y"):
        expl.score(data[:300])
    assert expl.score(data[:300], labels[:300]) > 0.9
    with pytest.raises(ValueError, match="prior='model' needs a differentiable black box .*got "
                                         "only its outputs"):
        MEEDExplainer(k=2, prior="model", **FAST).fit(data, labels)
    with pytest.warns(UserWarning, match="transform and explain need the outputs as outputs="):
        MEEDExplainer(k=2, feedback=FEEDBACK, **{**FAST, "max_epochs": 1}).fit(data, labels)


def test_the_selector_reads_the_output(data):
    expl = MEEDExplainer(k=2, feedback=FEEDBACK, **FAST).fit(data, black_box=Linear2())
    first = expl.net_.module_.feedback[0]
    assert first.in_features == 2  # the two class probabilities
    proba = Linear2()(torch.as_tensor(data[:50])).detach().numpy()
    same = expl.explain(data[:50], outputs=proba)
    np.testing.assert_allclose(same, expl.explain(data[:50]), rtol=1e-5, atol=1e-5)
    assert not np.allclose(expl.explain(data[:50], outputs=proba[:, ::-1]), same, atol=1e-3)
    # class labels work as outputs too, as they would for fit's y
    assert expl.transform(data[:5], outputs=proba[:5].argmax(axis=1)).shape == (5, 6)


def test_without_feedback_the_model_is_not_needed_to_explain(data):
    expl = MEEDExplainer(k=2, **FAST).fit(data, black_box=Linear2())  # feedback=None
    expl.black_box_ = None
    assert expl.transform(data[:300])[:, :2].mean() > 0.95


def test_transform_without_model_or_outputs_says_what_to_pass(data, tmp_path):
    def model(X):  # a local function: cannot be pickled
        return Linear2()(torch.as_tensor(np.asarray(X, dtype=np.float32))).detach().numpy()

    expl = MEEDExplainer(k=2, feedback=FEEDBACK, max_epochs=3, batch_size=100, device="cpu",
                         random_state=0)
    expl.fit(data, black_box=model)
    with pytest.warns(UserWarning, match="cannot be pickled"):
        loaded = pickle.loads(pickle.dumps(expl))
    with pytest.raises(ValueError, match="pass the model's outputs on X as outputs="):
        loaded.transform(data[:5])
    np.testing.assert_array_equal(loaded.transform(data[:5], outputs=model(data[:5])),
                                  expl.transform(data[:5]))


def test_save_and_load_with_the_model(data, tmp_path):
    expl = MEEDExplainer(k=2, feedback=FEEDBACK, max_epochs=3, batch_size=100, device="cpu",
                         random_state=0)
    expl.fit(data, black_box=Linear2())
    save(expl, tmp_path / "meed.safetensors")
    loaded = load(tmp_path / "meed.safetensors", black_box=Linear2())
    np.testing.assert_array_equal(loaded.transform(data), expl.transform(data))
    np.testing.assert_allclose(loaded.explain(data), expl.explain(data), rtol=1e-6)


def test_the_optimizers_keep_the_objectives_apart(data, monkeypatch):
    expl = MEEDExplainer(k=2, feedback=FEEDBACK, max_epochs=1, batch_size=100, device="cpu", random_state=0)
    expl.fit(data, black_box=Linear2())
    net = expl.net_

    def ids(params):
        return {id(p) for p in params}

    selector = ids(net.module_.parameters())
    approximators = ids(net.approximator_.parameters()) | ids(net.adversary_.parameters())
    assert ids(p for g in net.optimizer_.param_groups for p in g["params"]) == selector
    assert ids(p for g in net.approximators_optimizer_.param_groups
               for p in g["params"]) == approximators
    gradients, steps = [], []
    monkeypatch.setattr(net, "set_grads", lambda loss, modules: gradients.append(
        ids(p for m in modules for p in m.parameters())))
    monkeypatch.setattr(updates_module, "_step_each", lambda optimizer: steps.append(
        (optimizer, gradients[-1])))
    X = torch.as_tensor(expl._selector_input(expl.masker_.standardize(data[:100]), data[:100],
                                             expl._outputs_of(data[:100], None)))
    targets = torch.cat([torch.as_tensor(expl._outputs_of(data[:100], None)),
                         torch.zeros(100, 6)], dim=1)
    net.train_step((X, targets))
    assert steps == [(net.approximators_optimizer_, approximators), (net.optimizer_, selector)]


def test_the_prior_fades_over_epochs(data):
    expl = MEEDExplainer(k=2, max_epochs=1, batch_size=100, device="cpu", random_state=0)
    net = expl.fit(data, black_box=Linear2()).net_
    logits, prior = torch.randn(4, 6), torch.log_softmax(torch.randn(4, 6), dim=1)
    net.history.record("epoch", 1)  # one epoch recorded: the 0-based epoch m is 0
    assert len(net.history) == 1
    torch.testing.assert_close(net._sampler_logits(logits, prior), prior)
    net.history.new_epoch()
    net.history.new_epoch()  # m = 2
    torch.testing.assert_close(net._sampler_logits(logits, prior), (2 * logits + prior) / 3)
    assert net._sampler_logits(logits, None) is logits


def test_gradient_times_input_prior():
    model = Linear2(width=4, weights=(2.0, -1.0))
    from sk_sointer import as_black_box

    black_box = as_black_box(model)
    X = np.array([[1.0, 1.0, 5.0, 0.0], [0.0, 2.0, 1.0, 1.0]], dtype=np.float32)
    black_box.predict(X)  # learns the spec
    baseline = np.array([0.0, 1.0, 0.0, 0.0], dtype=np.float32)
    scores = model_gradient_scores(black_box, X, baseline)
    p = torch.sigmoid(torch.as_tensor(X) @ torch.tensor([2.0, -1.0, 0, 0]))
    # d max(p, 1 - p) / dx = +-p (1 - p) w; times (x - baseline)
    slope = (p * (1 - p)).numpy()[:, None] * np.array([2.0, 1.0, 0.0, 0.0])
    np.testing.assert_allclose(scores, slope * np.abs(X - baseline), rtol=1e-5, atol=1e-7)
    log_r = log_prior(scores, None, 4)
    np.testing.assert_allclose(np.exp(log_r).sum(axis=1), 1.0, rtol=1e-6)
    # row 0: all of the gradient's share on feature 0, the floor (0.1 / 4) elsewhere
    np.testing.assert_allclose(np.exp(log_r[0]), [0.9 + 0.025, 0.025, 0.025, 0.025], rtol=1e-5)
    grouped = log_prior(scores, np.array([0, 0, 1, 1]), 2)
    np.testing.assert_allclose(np.exp(grouped[0]), [0.95, 0.05], rtol=1e-5)
    # a row with no gradient at all gets the uniform prior
    np.testing.assert_allclose(np.exp(log_prior(np.zeros((1, 4)), None, 4)), 0.25)


def test_model_prior_needs_a_differentiable_model(data):
    model = LogisticRegression().fit(data, data[:, 0] > 0)
    with pytest.raises(ValueError, match="prior='model' needs a differentiable black box"):
        MEEDExplainer(k=2, prior="model", **FAST).fit(data, black_box=model)


def test_adversarial_targets_are_flipped():
    spec = OutputSpec(kinds=("categorical", "bernoulli", "real"), blocks=((0, 3), (3, 4), (4, 5)))
    predicted = torch.randn(5, 5)
    targets = torch.cat([torch.softmax(torch.randn(5, 3), 1), torch.rand(5, 1),
                         torch.randn(5, 1)], dim=1)
    flipped = (1 - targets[:, :3]) / 2
    expected = (
        -(flipped * F.log_softmax(predicted[:, :3], 1)).sum(1)
        + F.binary_cross_entropy_with_logits(predicted[:, 3], 1 - targets[:, 3], reduction="none")
        - (predicted[:, 4] - targets[:, 4]) ** 2
    ).mean()
    torch.testing.assert_close(infidelity_loss(predicted, targets, spec), expected)


def test_images_give_the_selector_one_more_channel():
    rng = np.random.RandomState(0)
    X = rng.rand(200, 1, 6, 6).astype(np.float32)

    def model(images):
        images = torch.as_tensor(np.asarray(images, dtype=np.float32))
        p = torch.sigmoid(10 * (images[:, 0, 2, 3] - 0.5))[:, None]
        return torch.cat([1 - p, p], dim=1).numpy()

    # A fully convolutional selector learns where the pixel is only through the feedback
    # channel (and the padding): slower to learn than a dense selector.
    expl = MEEDExplainer(k=1, selector=CNNSelector(channels=(8,)), feedback=FEEDBACK,
                         baseline="zero", lr=1e-2,
                         max_epochs=100, batch_size=50, device="cpu", random_state=0)
    masks = expl.fit(X, black_box=model).transform(X)
    assert expl.net_.module_.body[1].in_channels == 2  # the pixels and the feedback
    assert masks.shape == X.shape
    assert masks[:, 0, 2, 3].mean() > 0.9


@pytest.mark.parametrize("check", [
    "check_parameters_default_constructible", "check_get_params_invariance", "check_set_params",
    "check_no_attributes_set_in_init",
])
def test_sklearn_checks_that_do_not_fit(check):
    from sklearn.utils import estimator_checks

    getattr(estimator_checks, check)("MEEDExplainer", MEEDExplainer())
