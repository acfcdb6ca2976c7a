"""Regression tests for issue 25 ("hardening, round two"): each failed before its fix."""

import threading
import warnings

import numpy as np
import pytest
import torch
from sklearn.datasets import load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.multioutput import MultiOutputClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from sk_sointer import (EnergyNet, HardKumaExplainer, L2XExplainer, MEEDExplainer,
                        RealXExplainer, SOInterExplainer, as_black_box)
from sk_sointer.metrics import posthoc_accuracy

torch.set_num_threads(1)

FAST = {"max_epochs": 2, "batch_size": 32, "random_state": 0, "device": "cpu"}


@pytest.fixture(scope="module")
def rows():
    rng = np.random.RandomState(0)
    X = rng.randn(80, 5).astype(np.float32)
    labels = np.c_[X[:, 0] > 0, X[:, 1] + X[:, 2] > 0].astype(int)
    single = LogisticRegression().fit(X, labels[:, 0])
    multi = MultiOutputClassifier(LogisticRegression()).fit(X, labels)
    return X, single, multi


def _fitted(name, rows):
    X, single, multi = rows
    if name == "SOInterExplainer":
        return SOInterExplainer(target=0, k=2, energy=EnergyNet(max_epochs=1), energy_masks=1,
                                **{**FAST, "max_epochs": 1}).fit(X, black_box=multi)
    make = {"L2XExplainer": L2XExplainer, "MEEDExplainer": MEEDExplainer,
            "RealXExplainer": RealXExplainer, "HardKumaExplainer": HardKumaExplainer}[name]
    params = {"predictor_epochs": 1} if name in ("RealXExplainer", "HardKumaExplainer") else {}
    return make(k=2, **params, **FAST).fit(X, black_box=single)


EXPLAINERS = ["L2XExplainer", "RealXExplainer", "MEEDExplainer", "SOInterExplainer",
              "HardKumaExplainer"]
# Refused by fit: k=None where the method has no threshold for it.
NEEDS_K = {"L2XExplainer", "MEEDExplainer", "SOInterExplainer"}


@pytest.fixture(scope="module")
def fitted(rows):
    return {name: _fitted(name, rows) for name in EXPLAINERS}


# -- item 3: set_params(k=...) after fit, checked as fit checks it -------------------------


@pytest.mark.parametrize("name", EXPLAINERS)
@pytest.mark.parametrize("k, message", [
    (0, r"'k' parameter of {name} must be an int in the range \[1, inf\)( or None)?\. Got 0"),
    (-2, r"'k' parameter of {name} must be an int in the range \[1, inf\)( or None)?\. Got -2"),
    (2.5, r"'k' parameter of {name} must be .*Got 2.5"),
    ("3", r"'k' parameter of {name} must be .*Got '3'"),
    (True, r"'k' parameter of {name} must be an int, not a bool; got True"),
    (np.bool_(True), r"'k' parameter of {name} must be an int, not a bool"),
])
def test_k_set_after_fit_is_checked_where_it_is_read(name, k, message, fitted, rows):
    X = rows[0]
    explainer = fitted[name]
    try:
        explainer.set_params(k=k)
        for method in (explainer.transform, explainer.score):
            with pytest.raises(ValueError, match=message.format(name=name)):
                method(X)
    finally:
        explainer.set_params(k=2)
    np.testing.assert_array_equal(explainer.transform(X).sum(axis=1), 2)


@pytest.mark.parametrize("name", EXPLAINERS)
def test_k_none_after_fit_only_where_fit_takes_it(name, fitted, rows):
    X = rows[0]
    explainer = fitted[name]
    try:
        explainer.set_params(k=None)
        if name in NEEDS_K:
            with pytest.raises(ValueError, match=f"'k' parameter of {name} must be .*Got None"):
                explainer.transform(X)
        else:  # thresholded masks, at least one group per row
            assert explainer.transform(X).sum(axis=1).min() >= 1
        explainer.set_params(k=3)
        np.testing.assert_array_equal(explainer.transform(X).sum(axis=1), 3)
    finally:
        explainer.set_params(k=2)


# -- item 9: booleans for k and patch_size -------------------------------------------------


@pytest.mark.parametrize("name", EXPLAINERS)
def test_fit_refuses_a_boolean_k(name, rows):
    X, single, multi = rows
    from sk_sointer import explainers

    explainer = getattr(explainers, name)(k=True, **{**FAST, "max_epochs": 1})
    if name == "SOInterExplainer":
        explainer.set_params(energy=EnergyNet(max_epochs=1))  # once torch's topk on a bool
    elif name in ("RealXExplainer", "HardKumaExplainer"):
        explainer.set_params(max_epochs=2, predictor_epochs=1)
    model = multi if name == "SOInterExplainer" else single
    with pytest.raises(ValueError, match=f"'k' parameter of {name} must be an int, not a bool"):
        explainer.fit(X, black_box=model)


@pytest.mark.parametrize("patch_size", [True, (2, 3, 4), (2, False), (0, 2)])
def test_patch_size_must_be_one_or_two_positive_ints(patch_size):
    images = np.random.RandomState(0).rand(20, 6, 6).astype(np.float32)
    with pytest.raises(ValueError, match="patch_size should be a positive integer or a pair"):
        L2XExplainer(k=1, patch_size=patch_size, max_epochs=1).fit(images, images[:, 0, 0] > 0.5)


# -- item 10: non-finite selector scores -----------------------------------------------------


def test_nan_selector_weights_are_refused_not_turned_into_masks(rows):
    X, single, _ = rows
    explainer = L2XExplainer(k=2, **FAST).fit(X, black_box=single)
    with torch.no_grad():
        next(explainer.net_.module_.parameters())[0, 0] = float("nan")
    for method in (explainer.explain, explainer.transform):
        with pytest.raises(ValueError, match="gave NaN or infinite scores: its weights"):
            method(X)


# -- item 7: a black box with no output columns -----------------------------------------------


def test_a_black_box_with_no_outputs_is_named(rows):
    X = rows[0]
    with pytest.raises(ValueError, match=r"returned no outputs \(shape \(80, 0\)\)"):
        L2XExplainer(k=1, **FAST).fit(X, black_box=lambda x: np.zeros((len(x), 0)))


def test_outputs_with_no_columns_are_named_not_a_torch_error(rows):
    pd = pytest.importorskip("pandas")
    X = rows[0]
    for y in (np.ones((len(X), 0)), pd.DataFrame(index=range(len(X)))):
        with pytest.raises(ValueError, match=r"The outputs y have no columns \(shape \(80, 0\)\)"):
            L2XExplainer(k=1, **FAST).fit(X, y)


def test_a_model_that_answers_every_row_alike_is_warned_of(rows):
    """A dummy model keeps its answer under any mask: fidelity 1 says nothing of it."""
    from sklearn.dummy import DummyClassifier, DummyRegressor

    X = rows[0]
    labels = (X[:, 0] > 0).astype(int)
    for model in (DummyClassifier().fit(X, labels), DummyRegressor().fit(X, X[:, 1])):
        with pytest.warns(UserWarning, match=r"gives every row of X the same outputs: any "
                          r"mask keeps them"):
            explainer = L2XExplainer(k=1, **FAST).fit(X, black_box=model)
        assert explainer.score(X) == 1.0
    with pytest.warns(UserWarning, match="The outputs y give every row"):
        L2XExplainer(k=1, **FAST).fit(X, np.full(len(X), 2.5))
    # One output that moves is enough: no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        L2XExplainer(k=1, **FAST).fit(X, np.column_stack([np.full(len(X), 2.5), X[:, 0]]))


# -- item 6: a torch black box in training mode, from several threads ---------------------------


class _Noisy(torch.nn.Module):
    """Dropout that only evaluation mode turns off, and a part kept in the other mode."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.body = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.ReLU(),
                                        torch.nn.Dropout(0.5), torch.nn.Linear(16, 2))
        self.frozen = torch.nn.BatchNorm1d(16)

    def forward(self, x):
        return self.body(x)


def test_modes_of_the_users_module_are_restored_exactly(rows):
    X = rows[0]
    module = _Noisy().train()
    module.frozen.eval()  # a part the user keeps in evaluation mode
    before = {name: part.training for name, part in module.named_modules()}
    black_box = as_black_box(module, output="logits")
    first, second = black_box.predict(X), black_box.predict(X)
    np.testing.assert_array_equal(first, second)  # dropout off during the calls
    assert {name: part.training for name, part in module.named_modules()} == before


def test_threads_scoring_with_a_module_in_training_mode_agree_with_one_thread(rows):
    X = rows[0]
    module = _Noisy().train()
    explainer = L2XExplainer(k=2, **FAST).fit(X, black_box=as_black_box(module, output="logits"))
    serial = [explainer.score(X[i * 5 : i * 5 + 40]) for i in range(8)]
    results = [None] * 16

    def work(i):
        results[i] = explainer.score(X[(i % 8) * 5 : (i % 8) * 5 + 40])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == serial + serial
    assert module.training and all(part.training for part in module.body)


# -- item 11: score is the model's own predict ---------------------------------------------------


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


# -- item 12: posthoc_accuracy with the explainer's baseline ---------------------------------------


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


# -- item 4: token ids bounded before the embeddings are sized --------------------------------


def test_a_stray_huge_token_id_is_named_before_any_embedding_is_built():
    from sk_sointer import TokenCNN, TokenCNNSelector

    rng = np.random.RandomState(0)
    ids = rng.randint(1, 30, size=(30, 6))
    ids[3, 2] = 2_000_000  # once 4.2 GB at fit
    explainer = L2XExplainer(k=1, tokens=True, selector=TokenCNNSelector(filters=4),
                             approximator=TokenCNN(filters=4, hidden_units=(4,)), **FAST)
    with pytest.raises(ValueError, match="token id 2000000, .* ids below 65536 for these 180 "
                                         "tokens .*TokenSequencer"):
        explainer.fit(ids, ids[:, 0] % 2)
    ids[3, 2] = 10**12  # once a raw allocator error (float32 rounds the id)
    with pytest.raises(ValueError, match=r"token id 99999999\d+, "):
        explainer.fit(ids, ids[:, 0] % 2)
    ids[3, 2] = 65_535  # at the bound: fits, the embedding sized by it
    explainer.set_params(max_epochs=1).fit(ids, ids[:, 0] % 2)
    assert explainer.n_tokens_ == 65_536


# -- item 9: other raw errors ---------------------------------------------------------------------


def test_training_that_diverges_says_so(rows):
    X, single, _ = rows
    with pytest.raises(ValueError, match=r"L2XExplainer's training diverged: .*NaN or infinite "
                                         r"\(lr=1e\+12\); lower lr"):
        L2XExplainer(k=2, lr=1e12, max_epochs=5, batch_size=32, refine=None,
                     random_state=0).fit(X, single.predict(X))


@pytest.mark.parametrize("n_rows", [2, 3])
def test_a_train_split_leaving_one_training_row_is_named(n_rows, rows):
    X = rows[0][:n_rows]
    with pytest.raises(ValueError, match=f"train_split=0.5 leaves 1 of {n_rows} rows for "
                                         "training, which needs 2"):
        L2XExplainer(k=1, train_split=0.5, **FAST).fit(X, np.arange(n_rows) % 2)


def test_pandas_output_of_image_masks_is_refused_with_the_way_out():
    pytest.importorskip("pandas")
    images = np.random.RandomState(0).rand(40, 6, 6).astype(np.float32)
    explainer = L2XExplainer(k=2, **FAST).set_output(transform="pandas")
    explainer.fit(images, images[:, 0, 0] > 0.5)
    with pytest.raises(ValueError, match=r"set_output\(transform='pandas'\) makes tables, .* "
                                         r"images of shape \(6, 6\)"):
        explainer.transform(images)
    # Flat rows with image_shape: one column per pixel.
    flat = L2XExplainer(k=2, image_shape=(6, 6), **FAST).set_output(transform="pandas")
    masks = flat.fit(images.reshape(40, 36), images[:, 0, 0] > 0.5).transform(
        images.reshape(40, 36))
    assert list(masks.columns) == [f"x{i}" for i in range(36)]
    assert (masks.sum(axis=1) == 2).all()


def test_dask_transform_refuses_text_columns_before_computing(rows):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    from sk_sointer.parallel import dask_transform

    X, single, _ = rows
    explainer = L2XExplainer(k=1, **FAST).fit(X[:, :3], single.predict(X))
    frame = pd.DataFrame(X[:, :3], columns=["a", "b", "c"]).astype({"c": str})
    columns = r"numbers only; its columns \{'c': '(object|str|string)'\}"
    with pytest.raises(ValueError, match=columns):
        dask_transform(explainer, dd.from_pandas(frame, npartitions=2))


def test_selected_words_refuses_ids_outside_the_vocabulary():
    from sk_sointer.text import TokenSequencer

    sequencer = TokenSequencer(max_length=4).fit(["alpha beta gamma", "beta gamma delta"])
    n_words = len(sequencer.words_)
    ids = sequencer.transform(["alpha gamma"])
    assert sequencer.selected_words(ids, np.ones_like(ids)) == [["alpha", "gamma"]]
    for bad in (n_words, 99, -2):  # once an IndexError, and a negative id silently a word
        wrong = ids.copy()
        wrong[0, 1] = bad
        with pytest.raises(ValueError, match=f"ids holds {bad}, which is not a token id"):
            sequencer.selected_words(wrong, np.ones_like(wrong))


def test_a_refit_refused_before_training_is_not_called_divergence(rows):
    X, single, _ = rows
    explainer = L2XExplainer(k=2, lr=1e12, max_epochs=5, batch_size=32, refine=None,
                             random_state=0)
    with pytest.raises(ValueError, match="training diverged"):
        explainer.fit(X, single.predict(X))
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        explainer.fit(bad, single.predict(X))
