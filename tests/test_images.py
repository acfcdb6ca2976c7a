"""Images: rows given as (n, H, W) or (n, C, H, W) arrays, or flat with image_shape; patches
as feature groups; the convolutional factories; image masks refused as tables."""

import pickle

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression

import sk_sointer
from sk_sointer import CNN, CNNSelector, L2XExplainer, ModelRefinement, RealXExplainer, load, save
from sk_sointer._layout import image_shape_of, patch_groups
from sk_sointer.metrics import posthoc_accuracy

from .conftest import CountingModel

torch.set_num_threads(1)

FAST = dict(random_state=0, device="cpu")
FAST_FIT = {"max_epochs": 2, "batch_size": 32, "random_state": 0, "device": "cpu"}


class _Probabilities(torch.nn.Module):
    """A CNN on raw pixel intensities (0-16) answering class probabilities."""

    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
            torch.nn.Linear(8 * 8 * 8, 2),
        )

    def forward(self, x):
        assert x.shape[1:] == (1, 8, 8), "the black box gets the images' own shape"
        return torch.softmax(self.net(x / 16), dim=-1)


@pytest.fixture(scope="module")
def digits_3_vs_8():
    """sklearn's 8 x 8 digits 3 and 8 (pixels 0-16) as (n, 1, 8, 8), and a CNN on them."""
    X, y = load_digits(return_X_y=True)
    keep = (y == 3) | (y == 8)
    X = X[keep].astype(np.float32).reshape(-1, 1, 8, 8)
    y = torch.as_tensor((y[keep] == 8).astype(np.int64))
    torch.manual_seed(0)
    model = _Probabilities()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(150):
        optimizer.zero_grad()
        loss = torch.nn.functional.nll_loss(torch.log(model(torch.as_tensor(X))), y)
        loss.backward()
        optimizer.step()
    return X, model.eval()


def _random_patch_masks(n_rows, image_shape, patch_size, k, seed=0):
    groups = patch_groups(image_shape, patch_size)
    n_groups = groups.max() + 1
    order = np.random.default_rng(seed).random((n_rows, n_groups)).argsort(axis=1)[:, :k]
    masks = np.zeros((n_rows, n_groups))
    np.put_along_axis(masks, order, 1, axis=1)
    return masks[:, groups].reshape(n_rows, *image_shape)


def test_patch_groups_number_patches_row_by_row_across_channels():
    groups = patch_groups((2, 4, 6), (2, 3))
    expected = np.array([[0, 0, 0, 1, 1, 1]] * 2 + [[2, 2, 2, 3, 3, 3]] * 2)
    np.testing.assert_array_equal(groups.reshape(2, 4, 6), [expected, expected])
    # A size that does not divide the image leaves smaller patches at the edges.
    np.testing.assert_array_equal(patch_groups((1, 3, 3), 2).reshape(3, 3),
                                  [[0, 0, 1], [0, 0, 1], [2, 2, 3]])


def test_image_shape_from_the_rows_or_the_parameter():
    assert image_shape_of(None, 10) is None
    assert image_shape_of((28, 28), 784) == (1, 28, 28)
    assert image_shape_of(None, 784, (28, 28)) == (1, 28, 28)
    assert image_shape_of((3, 4, 5), 60, (3, 4, 5)) == (3, 4, 5)
    with pytest.raises(ValueError, match=r"holds 756 values, but a row of X has 784"):
        image_shape_of(None, 784, (28, 27))
    with pytest.raises(ValueError, match="differs from the shape of X's rows"):
        image_shape_of((28, 28), 784, (1, 14, 56))
    with pytest.raises(ValueError, match=r"got rows of shape \(2, 3, 4, 5\)"):
        image_shape_of((2, 3, 4, 5), 120)


def test_l2x_on_image_arrays_keeps_k_whole_patches_and_the_cnn_s_answer(digits_3_vs_8):
    X, model = digits_3_vs_8
    explainer = L2XExplainer(k=4, patch_size=2, max_epochs=40, batch_size=64, **FAST)
    explainer.fit(X, black_box=model)
    masks = explainer.transform(X)
    assert masks.shape == X.shape and explainer.masker_.n_groups_ == 16
    # Exactly 4 whole 2 x 2 patches per image.
    patches = masks[:, 0].reshape(len(X), 4, 2, 4, 2)
    assert np.all(patches.min(axis=(2, 4)) == patches.max(axis=(2, 4)))
    np.testing.assert_array_equal(patches[:, :, 0, :, 0].sum(axis=(1, 2)), 4)
    assert explainer.explain(X[:3]).shape == (3, 1, 8, 8)
    # The CNN keeps its answer on the selected patches far more often than on random ones.
    fidelity = explainer.score(X)
    random = posthoc_accuracy(model, X, _random_patch_masks(len(X), (1, 8, 8), 2, 4),
                              baseline=explainer.masker_.baseline_)
    assert fidelity == pytest.approx(posthoc_accuracy(model, X, masks,
                                                      baseline=explainer.masker_.baseline_))
    assert fidelity > random + 0.1, (fidelity, random)


def test_cnn_selector_and_judge_explain_images(digits_3_vs_8):
    X, model = digits_3_vs_8
    explainer = L2XExplainer(
        k=4, patch_size=2, max_epochs=40, batch_size=64,
        selector=CNNSelector(channels=(8, 8)), approximator=CNN(channels=(8,), hidden_units=(16,)),
        **FAST,
    ).fit(X, black_box=model)
    random = posthoc_accuracy(model, X, _random_patch_masks(len(X), (1, 8, 8), 2, 4),
                              baseline=explainer.masker_.baseline_)
    assert explainer.score(X) > random + 0.05
    assert isinstance(explainer.net_.approximator_[-1], torch.nn.Sequential)  # the dense head


def test_flat_rows_with_image_shape_and_a_model_on_flat_rows():
    X, y = load_digits(return_X_y=True)
    model = LogisticRegression(max_iter=500).fit(X, y)
    explainer = L2XExplainer(k=3, image_shape=(8, 8), patch_size=4, max_epochs=2, **FAST)
    masks = explainer.fit(X[:200], black_box=model).transform(X[:5])
    assert masks.shape == (5, 64)
    # Three of the four 4 x 4 quadrants, whole.
    quadrants = masks.reshape(5, 2, 4, 2, 4)
    assert np.all(quadrants.min(axis=(2, 4)) == quadrants.max(axis=(2, 4)))
    np.testing.assert_array_equal(quadrants[:, :, 0, :, 0].sum(axis=(1, 2)), 3)


def test_group_scores_are_the_mean_of_pixel_logits():
    groups = patch_groups((2, 4, 4), 2)
    torch.manual_seed(0)
    net = CNNSelector(channels=(3,), zero_output=False)(32, 4, input_shape=(2, 4, 4), groups=groups)
    x = torch.randn(5, 32)
    pixels = net.pixels(x).reshape(5, 2, 2, 2, 2)  # (n, patch row, row, patch col, col)
    expected = pixels.mean(dim=(2, 4)).reshape(5, 4)
    torch.testing.assert_close(net(x), expected)
    # Without groups: one logit per value, every channel of every pixel.
    assert CNNSelector()(32, 32, input_shape=(2, 4, 4))(x).shape == (5, 32)


def test_realx_with_append_mask_reads_the_mask_as_channels(digits_3_vs_8):
    X, model = digits_3_vs_8
    explainer = RealXExplainer(k=None, patch_size=4, max_epochs=3, predictor_epochs=2,
                               predictor=CNN(channels=(4,), hidden_units=(8,)), **FAST)
    masks = explainer.fit(X, black_box=model).transform(X[:4])
    assert masks.shape == (4, 1, 8, 8)
    assert explainer.net_.predictor_[1].in_channels == 2  # image and mask


def test_image_explainers_pickle_and_save_with_identical_masks(digits_3_vs_8, tmp_path):
    X, model = digits_3_vs_8
    explainer = L2XExplainer(k=2, patch_size=4, max_epochs=2, selector=CNNSelector(channels=(4,)),
                             **FAST).fit(X, black_box=model)
    masks = explainer.transform(X)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(explainer)).transform(X), masks)
    save(explainer, tmp_path / "images.safetensors")
    loaded = load(tmp_path / "images.safetensors", black_box=model)
    np.testing.assert_array_equal(loaded.transform(X), masks)
    assert loaded.score(X) == explainer.score(X)


def test_image_errors_name_the_problem(digits_3_vs_8):
    X, model = digits_3_vs_8
    flat = X.reshape(len(X), -1)
    probabilities = model(torch.as_tensor(X)).detach().numpy()
    with pytest.raises(ValueError, match="patch_size needs images"):
        L2XExplainer(patch_size=2, **FAST).fit(flat, probabilities)
    with pytest.raises(ValueError, match="groups or patch_size, not both"):
        L2XExplainer(patch_size=2, groups=np.arange(64), **FAST).fit(X, probabilities)
    with pytest.raises(ValueError, match="patch_size=9 is larger than the images"):
        L2XExplainer(patch_size=9, **FAST).fit(X, probabilities)
    with pytest.raises(ValueError, match="CNNSelector needs images"):
        L2XExplainer(selector=CNNSelector(), max_epochs=1, **FAST).fit(flat, probabilities)
    explainer = L2XExplainer(k=2, patch_size=4, max_epochs=1, **FAST).fit(X, probabilities)
    with pytest.raises(ValueError, match=r"rows of shape \(1, 8, 8\), as in fit; got an array "
                                         r"of shape \(357, 64\)"):
        explainer.transform(flat)
    with pytest.raises(ValueError, match="masks should hold rows of shape"):
        explainer.predict_masked(X, np.ones((len(X), 64)))
    nan = X.copy()
    nan[3, 0, 2, 2] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        explainer.transform(nan)


def test_grid_search_over_k_and_tau_on_images(digits_3_vs_8):
    from sklearn.model_selection import GridSearchCV

    X, model = digits_3_vs_8
    # Nine fits: the refinement against the model is brief (its quality is tested apart).
    search = GridSearchCV(L2XExplainer(patch_size=2, max_epochs=2, batch_size=64,
                                       refine=ModelRefinement(max_epochs=2), **FAST),
                          {"k": [2, 4], "tau": [0.1, 0.5]}, cv=2).fit(X, black_box=model)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    masks = search.best_estimator_.transform(X[:3])
    assert masks.shape == (3, 1, 8, 8)
    assert masks.reshape(3, -1).sum(axis=1).tolist() == [4 * search.best_params_["k"]] * 3


def test_sointer_explains_one_label_of_a_multi_label_cnn_on_images():
    from sk_sointer import EnergyNet, SOInterExplainer, as_black_box

    X, y = load_digits(return_X_y=True)
    X = X.astype(np.float32).reshape(-1, 8, 8)
    labels = np.c_[y == 3, y == 8, y % 2 == 0].astype(np.float32)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 32), torch.nn.ReLU(),
                              torch.nn.Linear(32, 3))
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
    for _ in range(300):
        optimizer.zero_grad()
        torch.nn.functional.binary_cross_entropy_with_logits(
            net(torch.as_tensor(X) / 16), torch.as_tensor(labels)).backward()
        optimizer.step()
    model = as_black_box(torch.nn.Sequential(_Scale(16.0), net), output="multilabel_logits")
    explainer = SOInterExplainer(target=2, k=4, patch_size=2, max_epochs=10, refine=None,
                                 energy=EnergyNet(max_epochs=10), **FAST)
    masks = explainer.fit(X, black_box=model).transform(X)
    assert masks.shape == X.shape
    np.testing.assert_array_equal(masks.reshape(len(X), -1).sum(axis=1), 16)
    random = posthoc_accuracy(model, X, _random_patch_masks(len(X), (1, 8, 8), 2, 4)[:, 0],
                              baseline=explainer.masker_.baseline_, multioutput="raw_values")
    assert explainer.score(X) > random[2] + 0.1


class _Scale(torch.nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return x / self.scale


@pytest.mark.parametrize("patch_size", [True, (2, 3, 4), (2, False), (0, 2)])
def test_patch_size_must_be_one_or_two_positive_ints(patch_size):
    images = np.random.RandomState(0).rand(20, 6, 6).astype(np.float32)
    with pytest.raises(ValueError, match="patch_size should be a positive integer or a pair"):
        L2XExplainer(k=1, patch_size=patch_size, max_epochs=1).fit(images, images[:, 0, 0] > 0.5)


def test_pandas_output_of_image_masks_is_refused_with_the_way_out():
    pytest.importorskip("pandas")
    images = np.random.RandomState(0).rand(40, 6, 6).astype(np.float32)
    explainer = L2XExplainer(k=2, **FAST_FIT).set_output(transform="pandas")
    explainer.fit(images, images[:, 0, 0] > 0.5)
    with pytest.raises(ValueError, match=r"set_output\(transform='pandas'\) makes tables, .* "
                                         r"images of shape \(6, 6\)"):
        explainer.transform(images)
    # Flat rows with image_shape: one column per pixel.
    flat = L2XExplainer(k=2, image_shape=(6, 6), **FAST_FIT).set_output(transform="pandas")
    masks = flat.fit(images.reshape(40, 36), images[:, 0, 0] > 0.5).transform(
        images.reshape(40, 36))
    assert list(masks.columns) == [f"x{i}" for i in range(36)]
    assert (masks.sum(axis=1) == 2).all()


@pytest.mark.parametrize("cls", [sk_sointer.MEEDExplainer, sk_sointer.L2XExplainer],
                         ids=lambda c: c.__name__)
@pytest.mark.parametrize("container", ["pandas"])
def test_tables_of_image_masks_are_refused_by_every_explainer(cls, container):
    pytest.importorskip(container)
    images = np.random.RandomState(0).randn(20, 6, 6).astype(np.float32)
    model = CountingModel()
    explainer = cls(k=3, max_epochs=1, refine=None).set_output(transform=container)
    explainer.fit(images.reshape(20, 6, 6), black_box=lambda rows: model(
        np.asarray(rows).reshape(len(rows), -1)))
    with pytest.raises(ValueError, match=f"set_output\\(transform='{container}'\\) makes "
                                         "tables, but this .* was fitted on images"):
        explainer.transform(images)
