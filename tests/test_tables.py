"""Tables as users have them: a DataFrame of numbers, text, categories, booleans, dates and
empty cells, explained column by column, the model asked on frames in the table's own
columns and dtypes."""

import pickle

import numpy as np
import pytest
from sklearn.compose import make_column_selector, make_column_transformer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import sk_sointer
from sk_sointer import L2XExplainer, MEEDExplainer, ModelRefinement
from sk_sointer._table import TableCodec, is_table
from sk_sointer.metrics import evaluate

pd = pytest.importorskip("pandas")

GRADES = list("ABCDE")
FAST = dict(k=2, max_epochs=4, batch_size=32, random_state=0,
            refine=ModelRefinement(max_queries=20_000))


def _table(n_rows=300, seed=0):
    """Loan applications: the answer (denied, about 15 % of rows) depends on the grade (a
    category) and on the debt ratio (numbers, some empty); the rest is noise."""
    rng = np.random.default_rng(seed)
    income = rng.lognormal(10.5, 0.4, n_rows).round(-2)
    ratio = rng.uniform(0.0, 0.6, n_rows)
    grade = rng.choice(GRADES, n_rows, p=[0.3, 0.3, 0.2, 0.12, 0.08])
    X = pd.DataFrame({
        "income": income,
        "debt": (income * ratio).round(2),
        "grade": pd.Categorical(grade, categories=GRADES),
        "purpose": rng.choice(["car", "home", "study"], n_rows),
        "owns_home": rng.random(n_rows) < 0.4,
        "opened": pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 900, n_rows),
                                                                 unit="D"),
        "age": rng.integers(19, 80, n_rows),
    })
    X.loc[rng.random(n_rows) < 0.1, "debt"] = np.nan
    X.loc[rng.random(n_rows) < 0.05, "purpose"] = None
    return X


class LoanModel:
    """A model of the raw frame (a function of a DataFrame), fast to query: denies when the
    grade is D or E, or the debt is over 40 % of the income; an empty debt counts as 0. It
    records every frame it is given."""

    def __init__(self):
        self.frames = []

    def __call__(self, frame):
        self.frames.append(frame)
        ratio = (frame["debt"].fillna(0.0) / frame["income"]).to_numpy(dtype=float)
        risky = frame["grade"].isin(["D", "E"]).to_numpy() | (ratio > 0.4)
        p = np.where(risky, 0.9, 0.1)
        return np.column_stack([1 - p, p])


def _pipeline(X):
    model = LoanModel()
    encoder = make_column_transformer(
        (make_pipeline(SimpleImputer(), StandardScaler()),
         make_column_selector(dtype_include="number")),
        (make_pipeline(SimpleImputer(strategy="most_frequent"),
                       OneHotEncoder(handle_unknown="ignore")), ["grade", "purpose"]))
    return make_pipeline(encoder, LogisticRegression(max_iter=500)).fit(
        X, model(X).argmax(axis=1))


@pytest.fixture(scope="module")
def fitted():
    X = _table()
    model = LoanModel()
    return X, model, L2XExplainer(**FAST).fit(X, black_box=model)


def test_a_frame_with_text_dates_or_empty_cells_is_a_table():
    X = _table(20)
    assert is_table(X)
    numbers = X[["income", "age"]]
    assert not is_table(numbers)
    assert is_table(numbers.assign(income=np.where(np.arange(20) == 3, np.nan, 1.0)))
    assert not is_table(X.to_numpy(dtype=object))  # an array: the numeric route names columns


def test_the_codes_give_the_frame_back_exactly():
    X = _table(50)
    X["note"] = pd.array(["a", None, "b"] * 16 + ["c", "a"], dtype="string")
    X["flag"] = pd.array([True, None, False] * 16 + [True, True], dtype="boolean")
    X["when"] = X["opened"].dt.tz_localize("Europe/Oslo")
    codec = TableCodec().fit(X)
    back = codec.decode(codec.encode(X))
    pd.testing.assert_frame_equal(back, X, check_dtype=True)
    # A value fit did not see goes to the model as it is.
    new = X.iloc[:3].assign(purpose=["yacht", "car", "yacht"])
    assert codec.decode(codec.encode(new))["purpose"].tolist() == ["yacht", "car", "yacht"]


def test_masks_are_by_column_with_the_tables_names(fitted):
    X, _, expl = fitted
    masks = expl.transform(X)
    assert masks.shape == (len(X), X.shape[1])
    assert np.all(masks.sum(axis=1) == 2)
    assert list(expl.get_feature_names_out()) == list(X.columns)
    framed = sk_sointer.L2XExplainer(**FAST).set_output(transform="pandas")
    framed.__dict__.update({k: v for k, v in expl.__dict__.items() if k.endswith("_")})
    out = framed.transform(X.iloc[:5])
    assert list(out.columns) == list(X.columns) and list(out.index) == list(X.index[:5])


def test_the_masks_keep_the_columns_the_model_reads(fitted):
    X, _, expl = fitted
    masks = expl.transform(X)
    share = pd.Series(masks.mean(axis=0), index=X.columns)
    # grade and debt (with income, which the ratio needs) decide; the rest is noise.
    assert share[["purpose", "owns_home", "opened", "age"]].max() < 0.1, share
    # the grade is kept where it decides (D or E: denied whatever the debt)
    decides = X["grade"].isin(["D", "E"]).to_numpy()
    assert masks[decides, 2].mean() > 0.9 and masks[~decides, 2].mean() < 0.2, share


def test_the_model_is_asked_on_frames_in_the_tables_dtypes(fitted):
    X, model, expl = fitted
    model.frames.clear()
    row = X.iloc[[0]].copy()
    row["debt"] = np.nan  # a kept empty cell stays empty
    keep = np.zeros((1, X.shape[1]))
    keep[0, [1, 2]] = 1  # debt and grade kept
    expl.check(row, keep)
    masked = model.frames[-1]
    assert list(masked.columns) == list(X.columns)
    assert (masked.dtypes == X.dtypes).all(), masked.dtypes
    assert np.isnan(masked["debt"].iloc[0])
    assert masked["grade"].iloc[0] == row["grade"].iloc[0]
    # Left out: a number takes its training mean, text its most frequent value.
    assert masked["income"].iloc[0] == pytest.approx(X["income"].mean())
    counts = X["purpose"].value_counts()
    assert counts[masked["purpose"].iloc[0]] == counts.max()
    assert masked["owns_home"].iloc[0] == X["owns_home"].mode()[0]
    assert masked["age"].iloc[0] == round(X["age"].mean())  # a whole number stays one


def test_background_rows_are_matched_by_name():
    X = _table(200)
    model = LoanModel()
    params = dict(FAST, refine=None, max_epochs=2)
    by_order = L2XExplainer(background=X.iloc[:8], **params).fit(X, black_box=model)
    by_name = L2XExplainer(background=X.iloc[:8, ::-1], **params).fit(X, black_box=model)
    np.testing.assert_array_equal(by_order.background_, by_name.background_)
    with pytest.raises(ValueError, match="background lacks the columns 'age'"):
        L2XExplainer(background=X.iloc[:8].drop(columns="age"), **params).fit(
            X, black_box=model)


def test_score_weighs_every_answer_alike(fitted):
    X, model, expl = fitted
    answers = model(X).argmax(axis=1)
    expl.set_params(k=1)  # one column a row: some rows of an answer lose it
    try:
        holds = expl.check(X).holds
        by_answer = [holds[answers == a].mean() for a in (0, 1)]
        assert expl.score(X) == pytest.approx(np.mean(by_answer))
        assert abs(expl.score(X) - holds.mean()) > 1e-6  # the plain share differs here
    finally:
        expl.set_params(k=2)


def test_reasons_rank_the_kept_columns_by_effect(fitted):
    X, _, expl = fitted
    rows = X.iloc[:40]
    reasons = expl.reasons(rows)
    assert list(reasons.columns) == ["row", "rank", "column", "value", "effect",
                                     "direction", "by"]
    assert len(reasons) == 2 * len(rows) and set(reasons["by"]) == {"model"}
    masks = expl.transform(rows)
    for label, part in reasons.groupby("row", sort=False):
        effects = part.sort_values("rank")["effect"].abs().to_numpy()
        assert np.all(np.diff(effects) <= 1e-12)  # the first moves the model the most
        i = X.index.get_loc(label)
        assert sorted(part["column"]) == sorted(X.columns[masks[i] > 0])
        for column, value in zip(part["column"], part["value"]):
            cell = X.loc[label, column]
            assert (pd.isna(value) and pd.isna(cell)) or value == cell
    assert set(reasons["direction"]) <= {"for", "against", "none"}
    without = pickle.loads(pickle.dumps(expl))
    without.black_box_ = None
    ranked = without.reasons(rows.iloc[:3])
    assert set(ranked["by"]) == {"selector"} and ranked["effect"].isna().all()


def test_a_pipeline_on_the_raw_frame_and_the_repair():
    X = _table(300, seed=1)
    pipe = _pipeline(X)
    expl = L2XExplainer(**dict(FAST, repair="model")).fit(X, black_box=pipe)
    masks = expl.transform(X)
    assert masks.shape == (300, X.shape[1]) and np.all(masks.sum(axis=1) == 2)
    assert expl.repair_masks(X).holds.mean() >= expl.check(X, expl.set_params(
        repair=None).transform(X)).holds.mean()
    report = evaluate(expl, X=X, entries=["rows_holding", "features_per_row"])
    assert report.features_per_row == 2
    assert set(report.rows_holding_by_answer) == set(np.unique(pipe.predict(X)))


@pytest.mark.parametrize("explainer", [
    MEEDExplainer(**FAST),
    sk_sointer.RealXExplainer(**dict(FAST, predictor_epochs=2)),
    sk_sointer.HardKumaExplainer(**dict(FAST, predictor_epochs=2)),
], ids=lambda e: type(e).__name__)
def test_every_method_takes_the_table(explainer):
    X = _table(200)
    expl = explainer.fit(X, black_box=LoanModel())
    masks = expl.transform(X)
    assert masks.shape == (200, X.shape[1])
    assert np.all(masks.sum(axis=1) == 2)
    assert pickle.loads(pickle.dumps(expl)).transform(X).tolist() == masks.tolist()


def test_a_table_with_a_parameter_it_cannot_use_is_refused():
    X = _table(50)
    model = LoanModel()
    with pytest.raises(ValueError, match="baseline='mean'"):
        L2XExplainer(k=2, baseline="zero").fit(X, black_box=model)
    with pytest.raises(ValueError, match="tokens=True"):
        L2XExplainer(k=2, tokens=True).fit(X, black_box=model)
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match="torch module"):
        L2XExplainer(k=2).fit(X, black_box=torch.nn.Linear(7, 2))


def test_rows_without_a_fitted_column_are_refused_by_name(fitted):
    X, _, expl = fitted
    with pytest.raises(ValueError, match="lacks the columns 'age' seen in fit"):
        expl.transform(X.drop(columns="age"))
    with pytest.raises(ValueError, match="has columns 'extra' not seen in fit"):
        expl.transform(X.assign(extra=1))
    same = expl.transform(X[X.columns[::-1]])  # by name, in any order
    np.testing.assert_array_equal(same, expl.transform(X))


def test_a_table_explainer_is_saved_loaded_and_inspected(fitted, tmp_path, capsys):
    X, model, expl = fitted
    path = str(tmp_path / "table.safetensors")
    sk_sointer.save(expl, path)
    loaded = sk_sointer.load(path, black_box=model)
    np.testing.assert_array_equal(loaded.transform(X), expl.transform(X))
    assert loaded.score(X) == expl.score(X)
    assert list(loaded.get_feature_names_out()) == list(X.columns)
    from sk_sointer._cli import main

    assert main(["inspect", path]) == 0
    assert "Data: a table of 7 columns (3 number, 2 category, 1 boolean, 1 datetime)" in (
        capsys.readouterr().out)


def test_dask_and_spark_helpers_take_the_table(fitted, tmp_path):
    X, _, expl = fitted
    expected = expl.transform(X.iloc[:20])
    path = str(tmp_path / "table.safetensors")
    sk_sointer.save(expl, path)
    from sk_sointer.parallel import spark_predict_fn

    predict = spark_predict_fn(path)()  # what a Spark worker runs, one array a column
    columns = [X.iloc[:20][name].to_numpy() for name in X.columns]
    np.testing.assert_array_equal(predict(*columns), expected)
    dd = pytest.importorskip("dask.dataframe")
    from sk_sointer.parallel import dask_transform

    out = dask_transform(expl, dd.from_pandas(X.iloc[:20], npartitions=2)).compute()
    assert list(out.columns) == list(X.columns)
    np.testing.assert_array_equal(out.to_numpy(), expected)


def test_a_table_explainer_fitted_on_the_models_outputs_scores_with_its_judge():
    X = _table(200)
    outputs = LoanModel()(X)
    expl = L2XExplainer(**dict(FAST, refine=None, max_epochs=6)).fit(X, outputs)
    masks = expl.transform(X)
    judged = expl.predict_masked(X, masks)
    assert judged.shape == (200, 2) and np.allclose(judged.sum(axis=1), 1, atol=1e-5)
    answers = outputs.argmax(axis=1)
    kept = judged.argmax(axis=1) == answers
    assert expl.score(X, outputs) == pytest.approx(
        np.mean([kept[answers == a].mean() for a in np.unique(answers)]))
    with pytest.raises(ValueError, match="fitted on outputs only"):
        expl.score(X)


def test_a_series_is_one_row_matched_by_name(fitted):
    X, _, expl = fitted
    row = X.iloc[3]
    np.testing.assert_array_equal(expl.transform(row[X.columns[::-1]]), expl.transform(X.iloc[[3]]))
    with pytest.raises(ValueError, match="lacks the columns 'age'"):
        expl.transform(row.drop("age"))


def test_sointer_explains_one_output_of_a_multi_label_model_of_the_frame():
    X = _table(300)

    def two_labels(frame):  # denied (LoanModel's answer), and owns a home
        owns = np.where(frame["owns_home"].to_numpy(dtype=bool), 0.9, 0.1)
        return np.column_stack([LoanModel()(frame)[:, 1], owns])

    model = sk_sointer.as_black_box(two_labels, output="multilabel_proba")
    params = dict(k=2, target=0, max_epochs=3, energy_masks=1,
                  energy=sk_sointer.EnergyNet(max_epochs=3), random_state=0)
    own = sk_sointer.SOInterExplainer(refine=None, **params).fit(X, black_box=model)
    share = pd.Series(own.transform(X).mean(axis=0), index=X.columns)
    assert share["owns_home"] == 0 and share[["debt", "grade"]].min() > 0.9, share
    # Refined against the model (the default), each row keeps two of the three columns the
    # denial reads, never the other label's.
    refined = sk_sointer.SOInterExplainer(**params).fit(X, black_box=model)
    masks = pd.DataFrame(refined.transform(X), columns=X.columns)
    assert (masks[["income", "debt", "grade"]].sum(axis=1) == 2).all(), masks.mean()
    assert refined.score(X) >= own.score(X)


def test_a_search_over_k_on_the_table():
    from sklearn.model_selection import GridSearchCV

    X = _table(200)
    search = GridSearchCV(L2XExplainer(max_epochs=2, refine=None, random_state=0),
                          {"k": [1, 3]}, cv=2)
    search.fit(X, black_box=sk_sointer.as_black_box(LoanModel()))
    assert search.best_params_ == {"k": 3}  # three columns keep more answers than one
    assert list(search.best_estimator_.get_feature_names_out()) == list(X.columns)


def test_the_metrics_of_an_explainer_take_its_raw_frame(fitted):
    from sk_sointer.metrics import EvalXEvaluator, encoding_gap, max_sensitivity
    from sk_sointer.metrics import output_agreement

    X, model, expl = fitted
    rows = X.iloc[:30]
    # The number columns move (in their units), the text, category, boolean and date ones
    # stay: no noise, no change.
    assert max_sensitivity(expl, rows, radius=0.0, n_samples=2) == 0.0
    assert 0.0 < max_sensitivity(expl, rows, radius=5_000.0, n_samples=3) < np.inf
    meed = MEEDExplainer(**dict(FAST, refine=None)).fit(X, black_box=model)
    assert max_sensitivity(meed, rows, radius=0.0, n_samples=2) == 0.0
    # The explainer's own predictor against EVAL-X's on the same masks of the frame.
    evaluator = EvalXEvaluator(max_epochs=2, batch_size=32, random_state=0).fit(
        X, black_box=model)
    masks = expl.transform(rows)
    own = output_agreement(model(rows), expl.predict_masked(rows, masks), expl.output_spec_)
    assert encoding_gap(evaluator, expl, rows) == pytest.approx(
        own - evaluator.score_masks(rows, masks)["eACC"])
    # Reference rows for ROAD are not read where ROAD cannot run (the frame's text).
    report = evaluate(expl, X=rows, X_reference=X.iloc[100:200],
                      entries=["fidelity_kept", "road_kept"])
    assert "road_kept" in report.notes and report.fidelity_kept == expl.check(rows).holds.mean()


def test_a_network_trained_on_masked_rows_asks_for_the_encoded_rows(fitted):
    from sk_sointer.metrics import approximator_accuracy

    X, model, expl = fitted
    masks = expl.transform(X.iloc[:40])
    with pytest.raises(ValueError, match=r"'purpose' \(.*pipeline\[:-1\]\.transform\(X\)"):
        approximator_accuracy(model, X.iloc[:40], masks, X.iloc[:40], masks, max_epochs=1)
