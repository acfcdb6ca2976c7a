"""Behaviour every explainer shares, parametrized over all public explainers."""

import pickle

import joblib
import numpy as np
import pytest
import torch
from sklearn import config_context
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sk_sointer import L2XExplainer, ModelRefinement, as_black_box

from .conftest import explainer_id, fast_explainers, fit_explainer, multi_output_model

EXPLAINERS = fast_explainers()
parametrize_explainers = pytest.mark.parametrize("explainer", EXPLAINERS, ids=explainer_id)
# The explainers that can also learn from the model's outputs alone (SOInter re-queries the
# model, so it needs it in hand).
parametrize_output_explainers = pytest.mark.parametrize(
    "explainer", [e for e in EXPLAINERS if not e._requires_model], ids=explainer_id)

_fit = fit_explainer


@parametrize_explainers
def test_masks_are_exactly_k_hot_and_deterministic(explainer, xor_data):
    X, y = xor_data
    expl = _fit(explainer, X, y, k=3)
    masks = expl.transform(X)
    assert masks.shape == X.shape
    assert masks.dtype == X.dtype
    assert set(np.unique(masks)) <= {0.0, 1.0}
    np.testing.assert_array_equal(masks.sum(axis=1), 3)
    np.testing.assert_array_equal(expl.transform(X), masks)
    # Row-wise: explaining a subset gives the same rows.
    np.testing.assert_array_equal(expl.transform(X[::7]), masks[::7])


@parametrize_explainers
def test_masks_are_the_top_k_of_the_scores(explainer, xor_data):
    X, y = xor_data
    expl = _fit(explainer, X, y, k=2)
    scores = expl.explain(X[:50])
    masks = expl.transform(X[:50])
    assert scores.shape == (50, X.shape[1])
    kth = np.sort(scores, axis=1)[:, -2]
    assert np.all(scores[masks == 1] >= np.repeat(kth, 2))


@parametrize_explainers
def test_same_random_state_same_explainer(explainer, xor_data):
    X, y = xor_data
    state = torch.get_rng_state()
    first = _fit(explainer, X, y).explain(X)
    np.testing.assert_array_equal(_fit(explainer, X, y).explain(X), first)
    # Training draws from a forked generator: the caller's torch RNG is untouched.
    assert torch.equal(torch.get_rng_state(), state)
    other = _fit(explainer, X, y, random_state=1).explain(X)
    assert not np.array_equal(other, first)


@parametrize_output_explainers
def test_model_and_outputs_are_both_accepted(explainer, linear_data):
    X, _, model = linear_data
    by_model = _fit(explainer, X, model)
    by_keyword = clone(by_model).fit(X, black_box=model)
    np.testing.assert_array_equal(by_model.explain(X), by_keyword.explain(X))
    # The model's outputs train the same explainer as the model, but for the refinement
    # against the model itself, which only the model allows.
    by_outputs = clone(by_model).fit(X, model.predict_proba(X))
    unrefined = clone(by_model).set_params(refine=None).fit(X, black_box=model)
    np.testing.assert_allclose(unrefined.explain(X), by_outputs.explain(X), rtol=1e-5, atol=1e-6)
    assert by_model.n_model_queries_ > 0 and by_outputs.n_model_queries_ == 0
    assert by_model.black_box_ is not None and by_outputs.black_box_ is None


@parametrize_explainers
def test_pickle_and_joblib_round_trip(explainer, linear_data, tmp_path):
    X, _, model = linear_data
    expl = _fit(explainer, X, model)
    restored = pickle.loads(pickle.dumps(expl))
    np.testing.assert_array_equal(restored.transform(X), expl.transform(X))
    assert restored.score(X) == expl.score(X)
    joblib.dump(expl, tmp_path / "expl.joblib")
    np.testing.assert_array_equal(joblib.load(tmp_path / "expl.joblib").transform(X), expl.transform(X))


@parametrize_output_explainers
def test_unpicklable_black_box_is_left_out_with_a_warning(explainer, linear_data):
    X, _, model = linear_data
    expl = _fit(explainer, X, lambda rows: model.predict_proba(rows))
    with pytest.warns(UserWarning, match="cannot be pickled"):
        restored = pickle.loads(pickle.dumps(expl))
    assert restored.black_box_ is None
    np.testing.assert_array_equal(restored.transform(X), expl.transform(X))
    with pytest.raises(ValueError, match="outputs"):
        restored.score(X)
    assert 0 <= restored.score(X, model.predict_proba(X)) <= 1


@parametrize_output_explainers
def test_pipeline_with_outputs(explainer, linear_data):
    X, _, model = linear_data
    outputs = model.predict_proba(X)
    pipe = make_pipeline(StandardScaler(), clone(explainer).set_params(k=2)).fit(X, outputs)
    masks = pipe.transform(X)
    np.testing.assert_array_equal(masks.sum(axis=1), 2)
    assert 0 <= pipe.score(X, outputs) <= 1


@parametrize_output_explainers
def test_set_output_pandas_keeps_feature_names(explainer, linear_data):
    pd = pytest.importorskip("pandas")
    X, _, model = linear_data
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    expl = clone(explainer).set_output(transform="pandas").fit(frame, model.predict(X))
    masks = expl.transform(frame)
    assert list(masks.columns) == list(frame.columns)
    assert list(expl.get_feature_names_out()) == list(frame.columns)
    np.testing.assert_array_equal(masks.to_numpy().sum(axis=1), expl.k)


def _grid(explainer):
    """k and the relaxation's temperature; HardKuma's gates have no temperature, its
    quadratic rate penalty takes its place."""
    if "tau" in explainer.get_params():
        return {"k": [1, 2], "tau": [0.1, 0.5]}
    return {"k": [1, 2], "lagrange_rho": [1.0, 10.0]}


@parametrize_explainers
@pytest.mark.parametrize("routing", [False, True])
def test_grid_search_with_a_model(explainer, linear_data, routing):
    X, _, model = linear_data
    grid = _grid(explainer)
    with config_context(enable_metadata_routing=routing):
        if explainer._requires_model:
            model = multi_output_model(X, model)
        # The search's plumbing is under test, not the refinement: a short one (the same
        # for every candidate, on the training rows alone) keeps its 13 fits quick.
        candidate = clone(explainer).set_params(refine=ModelRefinement(max_epochs=5, min_rows=0))
        search = GridSearchCV(candidate, grid, cv=3).fit(X, black_box=as_black_box(model))
    assert set(search.cv_results_["param_k"]) == {1, 2}
    # Fidelity grows with the number of kept features; the search must see that.
    assert search.best_params_["k"] == 2
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


@parametrize_output_explainers
def test_grid_search_with_outputs(explainer, linear_data):
    X, _, model = linear_data
    search = GridSearchCV(clone(explainer), _grid(explainer), cv=3)
    search.fit(X, model.predict(X))
    assert search.best_params_["k"] == 2
    np.testing.assert_array_equal(search.transform(X).sum(axis=1), 2)


@parametrize_explainers
def test_nested_network_parameters_do_not_leak_between_instances(explainer):
    first, second = clone(explainer), clone(explainer)
    name = "selector"
    first.set_params(**{f"{name}__hidden_units": (7,)})
    assert first.get_params()[f"{name}__hidden_units"] == (7,)
    assert second.get_params()[f"{name}__hidden_units"] != (7,)
    assert type(explainer)().get_params()[f"{name}__hidden_units"] != (7,)


# -- bad input --------------------------------------------------------------------------


@parametrize_explainers
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_X_is_rejected(explainer, xor_data, bad):
    X, y = xor_data
    X_bad = X.copy()
    X_bad[3, 2] = bad
    with pytest.raises(ValueError, match="NaN|infinity"):
        clone(explainer).fit(X_bad, black_box=multi_output_model(X, y))
    expl = _fit(explainer, X, y)
    with pytest.raises(ValueError, match="NaN|infinity"):
        expl.transform(X_bad)


@parametrize_explainers
def test_wrong_width_at_transform(explainer, xor_data):
    X, y = xor_data
    expl = _fit(explainer, X, y)
    with pytest.raises(ValueError, match="X has 5 features, but .* is expecting 6"):
        expl.transform(X[:, :5])


@parametrize_explainers
def test_k_of_zero_is_rejected(explainer, xor_data):
    X, y = xor_data
    with pytest.raises(ValueError, match="'k' parameter"):
        _fit(explainer, X, y, k=0)


@parametrize_explainers
def test_k_beyond_the_features_selects_them_all_with_a_warning(explainer, xor_data):
    # As SelectKBest does, so that the default k works on a narrow table.
    X, y = xor_data
    with pytest.warns(UserWarning, match="k=7 is greater than n_features=6. All the features"):
        expl = _fit(explainer, X, y, k=7)
    assert expl.k_ == 6
    np.testing.assert_array_equal(expl.transform(X), 1.0)


@parametrize_output_explainers
def test_outputs_of_the_wrong_length(explainer, xor_data):
    X, y = xor_data
    with pytest.raises(ValueError, match="599 rows but X has 600 samples"):
        clone(explainer).fit(X, y[:-1])


@parametrize_explainers
def test_empty_X(explainer):
    with pytest.raises(ValueError, match="0 sample"):
        clone(explainer).fit(np.zeros((0, 4)), black_box=lambda rows: np.zeros((len(rows), 2)))


@parametrize_output_explainers
def test_missing_outputs(explainer, xor_data):
    X, _ = xor_data
    with pytest.raises(ValueError, match="requires y to be passed"):
        clone(explainer).fit(X)


@parametrize_explainers
def test_both_model_and_outputs(explainer, linear_data):
    X, y, model = linear_data
    with pytest.raises(ValueError, match="both y and black_box"):
        clone(explainer).fit(X, y, black_box=model)


@parametrize_explainers
@pytest.mark.parametrize(
    "black_box, message",
    [
        (lambda X: np.ones((X.shape[0] + 1, 2)), r"one row of outputs per sample"),
        (lambda X: np.ones((X.shape[0], 2, 2)), r"one row of outputs per sample"),
        (lambda X: np.full((X.shape[0], 2), np.nan), "NaN or infinite"),
        (lambda X: "nonsense", "not an array of numbers"),
    ],
)
def test_black_box_returning_bad_outputs(explainer, xor_data, black_box, message):
    X, _ = xor_data
    with pytest.raises((ValueError, TypeError), match=message):
        clone(explainer).fit(X, black_box=black_box)


@parametrize_output_explainers
def test_score_without_model_or_outputs(explainer, xor_data):
    X, y = xor_data
    expl = _fit(explainer, X, y)
    with pytest.raises(ValueError, match="needs the black box's outputs"):
        expl.score(X)


@parametrize_explainers
def test_early_stopping_and_progress_bar(explainer, xor_data):
    from skorch.callbacks import EarlyStopping

    X, y = xor_data
    expl = _fit(
        explainer, X, y, max_epochs=50, train_split=0.25, verbose=1,
        callbacks=[EarlyStopping(patience=1, threshold=10.0)],
    )
    history = expl.net_.history
    assert len(history) < 50
    assert "valid_loss" in history[-1]
    assert "epoch_progress" in dict(expl.net_.callbacks_)
    np.testing.assert_array_equal(expl.transform(X).sum(axis=1), expl.k)


@pytest.mark.parametrize("device", ["meta", "xla", "cuda:9"])
def test_a_device_the_networks_cannot_train_on_is_refused_before_fit(device, xor_data):
    # "meta" holds shapes without values: a fit there failed deep in torch ("Tensor.item()
    # cannot be called on meta tensors"); "xla" failed in torch too.
    X, y = xor_data
    explainer = L2XExplainer(k=2, max_epochs=1, device=device)
    with pytest.raises(ValueError, match=f"device='{device}'") as caught:
        explainer.fit(X, y)
    assert "Tensor" not in str(caught.value) and not hasattr(explainer, "net_")


@parametrize_explainers
def test_cuda_requested_without_cuda(explainer, xor_data):
    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    X, y = xor_data
    with pytest.raises(ValueError, match="CUDA is not available"):
        _fit(explainer, X, y, device="cuda")
