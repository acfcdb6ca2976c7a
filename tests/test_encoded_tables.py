"""Tables with text or category columns: a clear error where the explainers take numbers
only, and the groups under which the model behind an encoder is explained column by column."""

import numpy as np
import pytest
from sklearn.compose import make_column_transformer
from sklearn.ensemble import RandomForestRegressor
from sklearn.exceptions import NotFittedError
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import (FunctionTransformer, OneHotEncoder, PolynomialFeatures,
                                   StandardScaler)

from sk_sointer import EvalXEvaluator, L2XExplainer, encoded_groups
from sk_sointer.metrics import posthoc_accuracy

pd = pytest.importorskip("pandas")

CITIES = np.array(["Oslo", "Rome", "Lima", "Pune"])


def _table(n_rows=400, seed=0):
    """Sales that depend on the city (a category) and on the price; the age is noise."""
    rng = np.random.default_rng(seed)
    city = CITIES[rng.integers(0, 4, n_rows)]
    X = pd.DataFrame({"age": rng.integers(18, 80, n_rows),
                      "city": pd.Categorical(city, categories=CITIES),
                      "price": rng.uniform(5.0, 50.0, n_rows).round(2)})
    effect = pd.Series(city).map({"Oslo": 0.0, "Rome": 40.0, "Lima": 80.0, "Pune": 120.0})
    return X, effect.to_numpy() - 1.5 * X["price"].to_numpy()


def _encoder(**one_hot):
    return make_column_transformer((OneHotEncoder(**one_hot), ["city"]),
                                   (StandardScaler(), ["age", "price"]))


@pytest.mark.parametrize("where", ["transform", "posthoc_accuracy"])
def test_columns_that_are_not_numbers_are_named(where):
    """Where numbers are expected (an explainer fitted on numbers, raw masks); a table
    given to fit is read as one (tests/test_tables.py)."""
    X, y = _table(60)
    text = X.assign(shop=np.where(y > 0, "big", "small"))
    message = r"'city' \(category\), 'shop' \(.*\)\. Rows of numbers are masked with numbers"
    with pytest.raises(ValueError, match=message):
        if where == "fit":
            L2XExplainer(k=1, max_epochs=1).fit(text, y)
        elif where == "transform":
            numeric = X[["age", "price"]].assign(city=0, shop=0)
            L2XExplainer(k=1, max_epochs=1, random_state=0).fit(numeric, y).transform(text)
        elif where == "posthoc_accuracy":
            posthoc_accuracy(lambda rows: rows[:, 0], text, np.ones(text.shape))
        else:
            EvalXEvaluator(max_epochs=1).fit(text, y)


def test_an_array_of_text_names_its_column_and_numbers_as_objects_pass():
    X, y = _table(60)
    with pytest.raises(ValueError, match=r"X has columns that are not numbers: column 1 "
                                         r"\(text\)\..*encoded_groups"):
        L2XExplainer(k=1, max_epochs=1).fit(X.to_numpy(dtype=object), y)
    frame = X.assign(city=X["city"].cat.codes.astype(object))  # numbers held as objects
    assert L2XExplainer(k=1, max_epochs=1, random_state=0).fit(frame, y).n_features_in_ == 3
    numbers = X.assign(city=X["city"].cat.codes).to_numpy(dtype=object)
    masks = L2XExplainer(k=1, max_epochs=1, random_state=0).fit(numbers, y).transform(numbers)
    assert masks.shape == (60, 3) and np.all(masks.sum(axis=1) == 1)


@pytest.mark.parametrize("one_hot, expected", [
    ({}, [1, 1, 1, 1, 0, 2]),
    ({"sparse_output": True, "drop": "first"}, [1, 1, 1, 0, 2]),
])
def test_encoded_groups_give_each_encoded_feature_its_column(one_hot, expected):
    X, _ = _table(50)
    encoder = _encoder(**one_hot).fit(X)
    assert np.asarray(encoded_groups(encoder, X)).tolist() == expected


def test_encoded_groups_of_a_pipeline_with_frames_out_and_a_dropped_column():
    X, _ = _table(50)
    encoder = make_pipeline(
        make_column_transformer((OneHotEncoder(sparse_output=False), ["city"]),
                                remainder="drop"),
        FunctionTransformer(lambda Z: Z * 2.0),
    ).set_output(transform="pandas").fit(X)
    # age and price are dropped: only city's four one-hot features come out
    assert encoded_groups(encoder, X).tolist() == [1, 1, 1, 1]


def test_a_missing_value_indicator_falls_in_its_columns_group():
    X, _ = _table(50)
    X = X[["age", "price"]].astype(float)
    X.iloc[::5, 1] = np.nan
    imputer = SimpleImputer(add_indicator=True).fit(X)
    assert encoded_groups(imputer, X).tolist() == [0, 1, 1]


def test_an_output_constant_over_the_rows_is_a_group_of_its_own():
    X = np.c_[np.arange(6.0), np.full(6, 3.0), -np.arange(6.0)]
    assert encoded_groups(StandardScaler().fit(X), X).tolist() == [0, 3, 2]


def test_encoded_groups_refuse_what_has_no_groups():
    X = np.c_[np.arange(5.0), np.arange(5.0) ** 2]
    with pytest.raises(ValueError, match="output 4 moves with columns 0 and 1 of X"):
        encoded_groups(PolynomialFeatures(2).fit(X), X)
    with pytest.raises(TypeError, match=r"a fitted transformer.*got RandomForestRegressor "
                                        r"\(a model: for a pipeline, pass pipe\[:-1\]\)"):
        encoded_groups(RandomForestRegressor(), X)
    pipe = make_pipeline(StandardScaler(), RandomForestRegressor(5, random_state=0))
    with pytest.raises(TypeError, match=r"got Pipeline \(a model: for a pipeline, pass pipe"):
        encoded_groups(pipe.fit(X, X[:, 0]), X)
    with pytest.raises(NotFittedError):
        encoded_groups(StandardScaler(), X)
    with pytest.raises(ValueError, match="at least 2 rows"):
        encoded_groups(StandardScaler().fit(X), X[:1])
    with pytest.raises(ValueError, match="should be a table"):
        encoded_groups(StandardScaler().fit(X), X[:, 0])


def test_the_model_behind_an_encoder_is_explained_column_by_column():
    """The user guide's recipe: the sales depend on the city (four one-hot features, one
    group) and the price, not on the age. At k = 1 every mask keeps one whole group, and
    on nearly every row the one that best keeps the model's answer (the others at the
    training mean): 99 % of the rows here; the age on rows whose answer the mean fill
    already keeps, where the forest's splits on it decide."""
    X, y = _table(400)
    pipe = make_pipeline(_encoder(sparse_output=False),
                         RandomForestRegressor(30, random_state=0)).fit(X, y)
    encoder, model = pipe[:-1], pipe[-1]
    groups = encoded_groups(encoder, X)
    rows = encoder.transform(X)
    explainer = L2XExplainer(k=1, groups=groups, random_state=0).fit(rows, model)
    masks = explainer.transform(rows)
    kept = np.array([np.unique(groups[mask > 0]) for mask in masks])
    assert kept.shape == (400, 1)
    assert np.all(masks.sum(axis=1) == np.bincount(groups)[kept[:, 0]])

    full = model.predict(rows)
    errors = []
    for column in range(3):
        masked = np.where(groups == column, rows, rows.mean(axis=0))
        errors.append(np.abs(model.predict(masked) - full))
    best = np.argmin(errors, axis=0)
    assert np.mean(kept[:, 0] == best) >= 0.95, np.mean(kept[:, 0] == best)
