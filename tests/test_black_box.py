"""The black-box adapter: what counts as a model, and what its outputs mean."""

import copy
import threading
import warnings

import numpy as np
import pytest
import torch
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.metrics import r2_score
from sklearn.multioutput import MultiOutputClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import sk_sointer
from sk_sointer import BlackBox, L2XExplainer, as_black_box
from sk_sointer.black_box import check_outputs, output_agreement
from sk_sointer.metrics import posthoc_accuracy

FAST = {"max_epochs": 2, "batch_size": 32, "random_state": 0, "device": "cpu"}


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


# -- multi-output black boxes, end to end -------------------------------------------------


def _softmax(scores):
    scores = np.exp(scores - scores.max(axis=1, keepdims=True))
    return scores / scores.sum(axis=1, keepdims=True)


def _bernoulli_agreement(full, masked):
    return list(np.mean((full > 0.5) == (masked > 0.5), axis=0))


def _categorical_agreement(full_blocks, masked_blocks):
    return [np.mean(full.argmax(axis=1) == masked.argmax(axis=1))
            for full, masked in zip(full_blocks, masked_blocks)]


def _mlp(X, Y):
    from sklearn.neural_network import MLPClassifier

    model = MLPClassifier(hidden_layer_sizes=(16,), solver="lbfgs", max_iter=300, random_state=0)
    model.fit(X, Y)
    return model, lambda rows: model.predict_proba(rows)


def _multioutput_classifier(X, Y):
    Y = Y.copy()
    Y[:, 2] = np.digitize(X[:, 3], [-0.5, 0.5])  # a three-class output
    model = MultiOutputClassifier(LogisticRegression()).fit(X, Y)
    return model, lambda rows: model.predict_proba(rows)


def _multioutput_regressor(X, Y):
    from sklearn.multioutput import MultiOutputRegressor

    targets = X[:, :3] @ np.array([[2.0, 0.0], [-1.0, 1.0], [0.5, 3.0]]) + 100.0
    model = MultiOutputRegressor(LinearRegression()).fit(X, targets)
    return model, lambda rows: model.predict(rows)


def _classifier_chain(X, Y):
    from sklearn.multioutput import ClassifierChain

    model = ClassifierChain(LogisticRegression()).fit(X, Y)
    return model, lambda rows: model.predict_proba(rows)


def _torch_logits(X, Y):
    torch.manual_seed(0)
    module = torch.nn.Linear(X.shape[1], 3)

    def logits(rows):
        with torch.no_grad():
            return module(torch.as_tensor(rows, dtype=torch.float32)).numpy()

    # sigmoid(logit) > 0.5 exactly when logit > 0
    return as_black_box(module, output="multilabel_logits"), lambda rows: logits(rows) + 0.5


def _callable_proba(X, Y):
    weights = np.random.RandomState(1).randn(X.shape[1], 3)
    model = lambda rows: _softmax(rows @ weights)  # noqa: E731
    return model, model


MULTI_OUTPUT = {
    # name: (build, kinds, blocks, per-output agreement of the model's own outputs)
    "mlp_multilabel": (_mlp, ("bernoulli",) * 3, ((0, 1), (1, 2), (2, 3)), _bernoulli_agreement),
    "multioutput_classifier": (
        _multioutput_classifier, ("categorical",) * 3, ((0, 2), (2, 4), (4, 7)),
        _categorical_agreement,
    ),
    "multioutput_regressor": (
        _multioutput_regressor, ("real",) * 2, ((0, 1), (1, 2)),
        lambda full, masked: [r2_score(full[:, j], masked[:, j]) for j in range(2)],
    ),
    "classifier_chain": (
        _classifier_chain, ("bernoulli",) * 3, ((0, 1), (1, 2), (2, 3)), _bernoulli_agreement,
    ),
    "torch_multilabel_logits": (
        _torch_logits, ("bernoulli",) * 3, ((0, 1), (1, 2), (2, 3)), _bernoulli_agreement,
    ),
    "callable_proba": (
        _callable_proba, ("categorical",), ((0, 3),),
        lambda full, masked: _categorical_agreement([full], [masked]),
    ),
}


@pytest.mark.parametrize("name", list(MULTI_OUTPUT))
def test_multi_output_black_boxes_score_by_hand(name):
    from sk_sointer import L2XExplainer

    build, kinds, blocks, agreement = MULTI_OUTPUT[name]
    rng = np.random.RandomState(0)
    X = rng.randn(300, 6)
    Y = np.c_[X[:, 0] > 0, X[:, 1] + X[:, 2] > 0, X[:, 3] > 0.5].astype(int)
    model, outputs = build(X, Y)
    bb = as_black_box(model)
    bb.predict(X[:5])
    assert bb.spec.kinds == kinds and bb.spec.blocks == blocks

    expl = L2XExplainer(k=2, max_epochs=5, batch_size=64, random_state=0).fit(X, black_box=model)
    assert expl.output_spec_.kinds == kinds and expl.output_spec_.blocks == blocks
    masks = expl.transform(X)
    np.testing.assert_array_equal(masks.sum(axis=1), 2)
    masked = np.where(masks > 0, X, X.mean(axis=0))
    expected = np.asarray(agreement(outputs(X), outputs(masked)))
    assert expected.shape == (len(kinds),)
    per_output = posthoc_accuracy(model, X, masks, baseline=X.mean(axis=0),
                                  multioutput="raw_values")
    np.testing.assert_allclose(per_output, expected, atol=1e-5)
    # score weighs each output's answers alike (by_answer); a real output is its R² still.
    balanced = posthoc_accuracy(model, X, masks, baseline=X.mean(axis=0), by_answer=True)
    assert expl.score(X) == pytest.approx(balanced, abs=1e-5)
    if "real" in kinds:
        assert balanced == pytest.approx(expected.mean(), abs=1e-5)


def test_multioutput_classifier_blocks_hold_its_classes():
    rng = np.random.RandomState(0)
    X = rng.randn(60, 3)
    Y = np.c_[np.where(X[:, 0] > 0, "yes", "no"), np.digitize(X[:, 1], [-0.5, 0.5])]
    bb = as_black_box(MultiOutputClassifier(LogisticRegression()).fit(X, Y))
    bb.predict(X)
    assert [list(c) for c in bb.spec.classes] == [["no", "yes"], ["0", "1", "2"]]


# -- classifiers without probabilities, float64 rows, declared outputs --------------------


def test_classifier_without_predict_proba_gives_its_labels_one_hot():
    from sklearn.svm import LinearSVC

    rng = np.random.RandomState(0)
    X = rng.randn(80, 3)
    y = np.where(X[:, 0] > 0, "yes", "no")
    model = LinearSVC().fit(X, y)
    bb = as_black_box(model)
    out = bb.predict(X)
    assert bb.spec.kinds == ("categorical",) and list(bb.spec.classes[0]) == ["no", "yes"]
    np.testing.assert_array_equal(out, np.c_[model.predict(X) == "no", model.predict(X) == "yes"])
    # Multi-output: one block per output, with every class it was fitted on.
    Y = np.c_[X[:, 0] > 0, np.digitize(X[:, 1], [-0.5, 0.5])].astype(int)
    multi = MultiOutputClassifier(LinearSVC()).fit(X, Y)
    bb = as_black_box(multi)
    labels = multi.predict(X[:1])
    out = bb.predict(X[:1])
    assert bb.spec.blocks == ((0, 2), (2, 5))
    np.testing.assert_array_equal(out[0], np.r_[np.eye(2)[labels[0, 0]], np.eye(3)[labels[0, 1]]])


def test_float64_rows_reach_the_model_unrounded():
    from sklearn.preprocessing import FunctionTransformer

    rng = np.random.RandomState(0)
    seconds = np.sort(rng.rand(200)) * 100  # near 1.7e9, float32 rounds to 128 s
    X = np.c_[1.7e9 + seconds, rng.randn(200)]
    shift = FunctionTransformer(lambda rows: rows - [1.7e9, 0.0])
    model = make_pipeline(shift, LogisticRegression()).fit(X, seconds > 50)
    np.testing.assert_allclose(as_black_box(model).predict(X), model.predict_proba(X), atol=1e-6)
    # Float32 rows stay float32; callables get float32 (they may feed a torch module).
    seen = []

    class Recorder(LinearRegression):
        def predict(self, rows):
            seen.append(rows.dtype)
            return super().predict(rows)

    as_black_box(Recorder().fit(X, seconds)).predict(X.astype(np.float32))
    callable_bb = as_black_box(lambda rows: seen.append(rows.dtype) or rows[:, :1])
    callable_bb.predict(X)
    callable_bb(torch.as_tensor(X))
    assert seen == [np.float32, np.float32, np.float32]


def test_declared_probabilities_are_checked(data):
    X, _ = data
    positive = as_black_box(lambda rows: 1 / (1 + np.exp(-rows[:, 0])), output="proba")
    out = positive.predict(X)
    p = 1 / (1 + np.exp(-X[:, 0]))
    np.testing.assert_allclose(out, np.c_[1 - p, p], rtol=1e-5)
    assert positive.spec.kinds == ("categorical",) and positive.spec.blocks == ((0, 2),)
    with pytest.raises(ValueError, match="output='proba' but its rows are not probability"):
        as_black_box(lambda rows: rows[:, :2], output="proba").predict(X)
    with pytest.raises(ValueError, match="outside \\[0, 1\\]; use output='multilabel_logits'"):
        as_black_box(lambda rows: rows[:, :2], output="multilabel_proba").predict(X)
    labels = as_black_box(lambda rows: 1 / (1 + np.exp(-rows[:, :2])), output="multilabel_proba")
    labels.predict(X)
    assert labels.spec.kinds == ("bernoulli", "bernoulli")


# -- a real data set in raw units ---------------------------------------------------------


@pytest.mark.parametrize("kind", ["forest", "scaled_logistic"])
def test_breast_cancer_in_raw_units_beats_random_masks(kind):
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import RandomForestClassifier

    from sk_sointer import L2XExplainer

    X, y = load_breast_cancer(return_X_y=True)  # areas in the thousands, smoothness ~0.1
    if kind == "forest":
        model = RandomForestClassifier(n_estimators=50, random_state=0).fit(X, y)
    else:
        model = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    expl = L2XExplainer(k=5, max_epochs=20, random_state=0).fit(X, black_box=model)
    fidelity = expl.score(X)
    rng = np.random.RandomState(0)
    random_masks = np.zeros_like(X)
    for row in random_masks:
        row[rng.choice(X.shape[1], 5, replace=False)] = 1
    random_fidelity = posthoc_accuracy(model, X, random_masks, baseline=X.mean(axis=0))
    assert fidelity >= 0.92
    assert fidelity >= random_fidelity + 0.05


def _two_groups(n_rows=240):
    """Two groups of rows apart on feature 0 only; feature 2 is wide noise (it would
    dominate a squared distance between cluster ids read as numbers)."""
    rng = np.random.RandomState(0)
    X = rng.randn(n_rows, 4)
    X[: n_rows // 2, 0] += 8.0
    X[:, 2] *= 3.0
    return X


def test_clustering_models_are_read_as_labels_not_numbers():
    """KMeans' predict gives cluster ids: they are kept or not, one-hot over the clusters
    (its training rows' labels_), not values whose differences count."""
    from sklearn.cluster import KMeans

    X = _two_groups()
    kmeans = KMeans(3, n_init=3, random_state=0).fit(X)
    bb = as_black_box(kmeans)
    out = bb.predict(X)
    assert bb.spec.task == "classification" and bb.spec.blocks == ((0, 3),)
    np.testing.assert_array_equal(out.argmax(axis=1), kmeans.predict(X))
    np.testing.assert_array_equal(out.sum(axis=1), 1.0)
    pipe = make_pipeline(StandardScaler(), KMeans(2, n_init=3, random_state=0)).fit(X)
    assert as_black_box(pipe).predict(X).shape == (240, 2)
    # A row's cluster is kept when the row keeps its group's side of feature 0.
    masks = np.zeros_like(X)
    masks[:, 0] = 1
    pipe_labels = pipe.predict(X)
    assert posthoc_accuracy(pipe, X, masks) == np.mean(
        pipe.predict(np.where(masks > 0, X, X.mean(axis=0))) == pipe_labels)


def test_outlier_detectors_and_mixtures_answer_labels():
    from sklearn.ensemble import IsolationForest
    from sklearn.mixture import GaussianMixture

    X = _two_groups()
    forest = IsolationForest(random_state=0).fit(X)
    bb = as_black_box(forest)
    out = bb.predict(X)
    assert bb.spec.blocks == ((0, 2),) and list(bb.spec.classes[0]) == [-1, 1]
    np.testing.assert_array_equal(np.where(out[:, 1] > 0, 1, -1), forest.predict(X))
    mixture = GaussianMixture(2, random_state=0).fit(X)
    bb = as_black_box(mixture)
    np.testing.assert_allclose(bb.predict(X), mixture.predict_proba(X), rtol=1e-5, atol=1e-6)
    assert bb.spec.task == "classification" and list(bb.spec.classes[0]) == [0, 1]


def test_a_clustering_model_is_explained_by_the_feature_that_splits_its_clusters():
    from sklearn.cluster import KMeans

    from sk_sointer import L2XExplainer

    X = _two_groups()
    kmeans = KMeans(2, n_init=3, random_state=0).fit(X)
    explainer = L2XExplainer(k=1, random_state=0, max_epochs=20).fit(X, kmeans)
    masks = explainer.transform(X)
    assert np.mean(masks[:, 0]) >= 0.95
    assert explainer.score(X) >= 0.95


def test_a_function_answering_text_labels_is_told_to_pass_the_classifier(data):
    X, y = data
    names = np.array(["ham", "spam"])
    with pytest.raises(TypeError, match=r"not an array of numbers \(labels such as text\): .*"
                                        "pass the classifier itself"):
        as_black_box(lambda rows: names[(rows[:, 0] > 0).astype(int)]).predict(X)


def _torch_classifier():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


def test_a_module_in_double_or_half_precision_gets_rows_of_its_own_type(data):
    X, _ = data
    module = _torch_classifier()
    single = as_black_box(module, output="logits").predict(X)
    double = as_black_box(copy.deepcopy(module).double(), output="logits").predict(X)
    np.testing.assert_allclose(double, single, rtol=1e-5, atol=1e-6)
    half = as_black_box(copy.deepcopy(module).half(), output="logits").predict(X)
    assert half.dtype == np.float32
    np.testing.assert_allclose(half, single, atol=1e-2)


def test_a_module_answering_a_tuple_or_dict_is_told_to_be_wrapped(data):
    X, _ = data
    module = _torch_classifier()

    class Pair(torch.nn.Module):
        def forward(self, x):
            return module(x), x

    class Named(torch.nn.Module):
        def forward(self, x):
            return {"logits": module(x)}

    for wrapped in (Pair(), Named()):
        with pytest.raises(TypeError, match=r"not one array or tensor of outputs: wrap it, "
                                            r"e.g. lambda x: module\(x\)\[0\]"):
            as_black_box(wrapped).predict(X)


def test_a_module_whose_outputs_read_as_values_warns_that_logits_need_saying(data):
    X, _ = data
    module = _torch_classifier()
    with pytest.warns(UserWarning, match=r"2 output column\(s\) are read as real values.*"
                                         r"output='logits'"):
        bb = as_black_box(module)
        bb.predict(X)
    assert bb.spec.kinds == ("real", "real")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert as_black_box(module, output="logits").predict(X).shape == (50, 2)
        assert as_black_box(module, output="values").predict(X).shape == (50, 2)
        proba = torch.nn.Sequential(module, torch.nn.Softmax(dim=1))
        assert as_black_box(proba).spec is None and as_black_box(proba).predict(X).shape == (50, 2)


# -- outputs without columns, or the same on every row ------------------------------------


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


# -- a torch module in training mode, from several threads --------------------------------


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


# -- a classifier's NaN labels ------------------------------------------------------------


@pytest.fixture(scope="module")
def evaluated():
    from sklearn.linear_model import LogisticRegression

    X = np.random.RandomState(1).randn(120, 4).astype(np.float32)
    model = LogisticRegression().fit(X, X[:, 0] > 0)
    explainer = sk_sointer.L2XExplainer(k=2, max_epochs=1, random_state=0,
                                        refine=None).fit(X, black_box=model)
    return X, model, explainer


def test_nan_labels_from_a_classifier_are_refused_everywhere_they_are_read(evaluated):
    from sklearn.linear_model import LogisticRegression

    class NanLabels(LogisticRegression):
        def predict(self, X):
            return np.full(len(X), np.nan)

    X, _, _ = evaluated
    model = NanLabels().fit(X, X[:, 0] > 0)
    uses = [
        lambda: sk_sointer.L2XExplainer(k=2, max_epochs=1).fit(X, black_box=model),
        lambda: sk_sointer.metrics.posthoc_accuracy(model, X, np.ones_like(X)),
        lambda: sk_sointer.metrics.evaluate(np.ones_like(X), model, X, baseline="mean",
                                            entries=["fidelity_kept"]),
    ]
    for use in uses:
        with pytest.raises(ValueError, match="answered NaN or infinite labels"):
            use()
