"""Background rows read as fit reads X, files whose fitted arrays cannot be the explainer's,
and the repair's switches read and checked where they act (issue 59, items 1 to 3)."""

import csv
import json
import os
import warnings

import joblib
import numpy as np
import pandas as pd
import pytest
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.multioutput import MultiOutputClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.utils._param_validation import InvalidParameterError

import sk_sointer
from sk_sointer import L2XExplainer, RowRepair, load, save
from sk_sointer._cli import main

from .conftest import explainer_id, fast_explainers

NAMES = ["a", "b", "c", "d", "e"]


def _quiet(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit()


@pytest.fixture(scope="module")
def frame():
    X = np.random.RandomState(0).randn(80, 5).astype(np.float32)
    return pd.DataFrame(X, columns=NAMES)


def _model_for(explainer, X):
    """A model of ``X`` (a frame or rows): two outputs for SOInter, which explains one of
    a structured model's, one for the others."""
    values = np.asarray(X)
    labels = np.c_[values[:, 0] > 0, values[:, 1] > 0].astype(int)
    if explainer._requires_model:
        return MultiOutputClassifier(LogisticRegression()).fit(X, labels)
    return LogisticRegression().fit(X, labels[:, 0])


def _fit(explainer, X, **params):
    explainer = clone(explainer).set_params(refine=None, **params) \
        if "refine" in explainer.get_params() else clone(explainer).set_params(**params)
    return _quiet(lambda: explainer.fit(X, black_box=_model_for(explainer, X)))


EXPLAINERS = [pytest.param(e, id=explainer_id(e)) for e in fast_explainers()]


# Item 1: background rows as fit reads X -----------------------------------------------------


@pytest.mark.parametrize("explainer", EXPLAINERS)
def test_a_background_frame_is_matched_to_the_fitted_columns_by_name(explainer, frame):
    reordered = frame.iloc[:5][NAMES[::-1]]
    fitted = _fit(explainer, frame, background=reordered)
    np.testing.assert_array_equal(fitted.background_, frame.to_numpy()[:5])
    # One row given as a Series is matched by its index the same way.
    row = _fit(explainer, frame, background=frame.iloc[3][NAMES[::-1]])
    np.testing.assert_array_equal(row.background_, frame.to_numpy()[3:4])


def _renamed(frame):
    return frame.set_axis(["v", "w", "x", "y", "z"], axis=1)


# (background, the words its refusal must hold)
_REFUSED_FRAMES = {
    "no name of X": (lambda f: _renamed(f.iloc[:5]), ["lacks the columns 'a'", "'v'"]),
    "a column missing": (lambda f: f.iloc[:5][NAMES[:4]], ["lacks the columns 'e'"]),
    "a column extra": (lambda f: f.iloc[:5].assign(f=1.0), ["has columns 'f' not seen"]),
    "a column twice": (lambda f: f.iloc[:5][[*NAMES, "a"]], ["'a' more than once"]),
    "names of mixed types": (lambda f: f.iloc[:5].set_axis(["a", "b", "c", "d", 4], axis=1),
                             ["should all be strings"]),
    "no rows": (lambda f: f.iloc[:0], ["shape (0, 5)"]),
    "text": (lambda f: f.iloc[:5].assign(a="x"), ["not numbers"]),
    "NaN": (lambda f: f.iloc[:5].assign(a=np.nan), ["NaN"]),
}


@pytest.mark.parametrize("case", list(_REFUSED_FRAMES))
@pytest.mark.parametrize("explainer", EXPLAINERS)
def test_a_background_frame_that_is_not_x_s_columns_is_refused(explainer, case, frame):
    make, words = _REFUSED_FRAMES[case]
    with pytest.raises(ValueError) as error:
        _fit(explainer, frame, background=make(frame))
    message = str(error.value)
    assert "\n" not in message and len(message) < 300
    for word in words:
        assert word in message


@pytest.mark.parametrize("explainer", EXPLAINERS)
def test_rows_and_names_that_do_not_meet_are_read_by_position_with_sklearn_s_warning(
        explainer, frame):
    rows = frame.to_numpy()
    # Rows without names, given to an explainer fitted on a frame.
    with pytest.warns(UserWarning, match="background does not have valid feature names"):
        fitted = clone(explainer).set_params(background=rows[:4][:, ::-1])
        fitted.fit(frame, black_box=_model_for(explainer, frame))
    np.testing.assert_array_equal(fitted.background_, rows[:4][:, ::-1])
    # A frame, given to an explainer fitted on rows without names.
    with pytest.warns(UserWarning, match="background has feature names, but"):
        fitted = clone(explainer).set_params(background=frame.iloc[:4][NAMES[::-1]])
        fitted.fit(rows, black_box=_model_for(explainer, rows))
    np.testing.assert_array_equal(fitted.background_, rows[:4][:, ::-1])


@pytest.mark.parametrize("value", [True, False, np.bool_(True)])
@pytest.mark.parametrize("explainer", EXPLAINERS)
def test_a_bool_background_is_refused_not_read_as_a_count(explainer, value, frame):
    # True passes scikit-learn's Interval(Integral, 1, None), False and np.True_ do not.
    with pytest.raises(InvalidParameterError, match=r"background.*(not a bool|Got)"):
        _fit(explainer, frame, background=value)


@pytest.fixture(scope="module")
def table():
    rng = np.random.RandomState(0)
    X = pd.DataFrame({"income": rng.randn(80), "city": rng.choice(["x", "y", "z"], 80),
                      "age": rng.randint(20, 60, 80).astype(float)})
    X.loc[::7, "age"] = np.nan
    encoder = ColumnTransformer([("city", OneHotEncoder(), ["city"])], remainder="drop")
    y = (X.city == "x") | (X.income > 0)
    model = make_pipeline(encoder, LogisticRegression()).fit(X, y)
    return X, model


def test_a_table_s_background_frame_is_matched_by_name_and_its_bools_refused(table):
    X, model = table
    explainer = L2XExplainer(k=1, max_epochs=1, refine=None, random_state=0)
    fitted = _quiet(lambda: clone(explainer).set_params(
        background=X.iloc[:6][["age", "city", "income"]]).fit(X, black_box=model))
    in_order = _quiet(lambda: clone(explainer).set_params(background=X.iloc[:6]).fit(
        X, black_box=model))
    np.testing.assert_array_equal(fitted.background_, in_order.background_)
    assert np.isnan(fitted.background_).any()  # the empty cells of the rows
    with pytest.raises(InvalidParameterError, match="not a bool"):
        clone(explainer).set_params(background=True).fit(X, black_box=model)


def test_save_stores_a_background_frame_as_rows_in_the_fitted_order(frame, tmp_path):
    explainer = L2XExplainer(k=2, max_epochs=1, refine=None, random_state=0)
    fitted = _fit(explainer, frame, background=frame.iloc[:50][NAMES[::-1]])
    save(fitted, tmp_path / "e.safetensors")
    loaded = load(tmp_path / "e.safetensors", black_box=_model_for(explainer, frame))
    np.testing.assert_array_equal(loaded.background, frame.to_numpy()[:50])
    np.testing.assert_array_equal(loaded.background_, fitted.background_)
    assert loaded.score(frame) == fitted.score(frame)


def test_save_refuses_a_table_s_background_frame_in_one_short_line(table, tmp_path):
    X, model = table
    fitted = _quiet(lambda: L2XExplainer(k=1, max_epochs=1, refine=None,
                                         background=X.iloc[:50]).fit(X, black_box=model))
    with pytest.raises(ValueError) as error:
        save(fitted, tmp_path / "e.safetensors")
    message = str(error.value)
    assert len(message) < 400 and "\n" not in message
    assert "DataFrame of shape (50, 3)" in message and "set_params(background=None)" in message
    # As the message says: the fitted rows are kept, and the file loads and scores alike.
    fitted.set_params(background=None)
    save(fitted, tmp_path / "e.safetensors")
    loaded = load(tmp_path / "e.safetensors", black_box=model)
    np.testing.assert_array_equal(loaded.background_, fitted.background_)
    assert loaded.score(X) == fitted.score(X)


def test_save_describes_any_value_it_cannot_store_in_a_few_words(frame, tmp_path):
    fitted = _fit(L2XExplainer(k=2, max_epochs=1), frame)
    fitted.set_params(baseline=pd.Series(np.zeros(5), index=NAMES))
    with pytest.raises(ValueError) as error:
        save(fitted, tmp_path / "e.safetensors")
    assert "a Series of shape (5,)" in str(error.value) and len(str(error.value)) < 300


# Item 2: a file's fitted arrays checked as fit makes them -----------------------------------


def _rewrite(path, new_path, edit):
    with safe_open(os.fspath(path), framework="pt") as handle:
        document = json.loads(handle.metadata()["sk_sointer"])
    edit(document["attributes"])
    save_file(load_file(os.fspath(path)), os.fspath(new_path),
              metadata={"sk_sointer": json.dumps(document)})
    return new_path


def _array(values):
    values = np.asarray(values)
    return {"ndarray": values.ravel().tolist(), "dtype": values.dtype.str,
            "shape": list(values.shape)}


def _set(name, value):
    def edit(attributes):
        attributes[name] = value
    return edit


_TAMPERED = {
    "background_ too wide": (_set("background_", _array(np.zeros((3, 7), "f4"))),
                             "background_ (an array of shape (3, 7)"),
    "background_ of no rows": (_set("background_", _array(np.zeros((0, 5), "f4"))),
                               "at least one row"),
    "background_ all NaN": (_set("background_", _array(np.full((3, 5), np.nan, "f4"))),
                            "background_ holds NaN or infinite"),
    "background_ infinite": (_set("background_", _array(np.full((3, 5), np.inf))),
                             "background_ holds NaN or infinite"),
    "background_ one row flat": (_set("background_", _array(np.zeros(5, "f4"))),
                                 "background_ (an array of shape (5,)"),
    "background_ of ints": (_set("background_", _array(np.zeros((3, 5), int))),
                            "at least one row"),
    "background_ a number": (_set("background_", 3), "background_ (3)"),
    "refinement_fidelity_ 2-D": (_set("refinement_fidelity_", _array(np.zeros((2, 2)))),
                                 "refinement_fidelity_"),
    "refinement_fidelity_ NaN": (_set("refinement_fidelity_", _array([0.5, np.nan])),
                                 "refinement_fidelity_"),
    "n_model_queries_ negative": (_set("n_model_queries_", -1), "n_model_queries_=-1"),
    "n_model_queries_ a bool": (_set("n_model_queries_", True), "n_model_queries_=True"),
    "fit_time_ text": (_set("fit_time_", "soon"), "fit_time_='soon'"),
}


@pytest.fixture(scope="module")
def saved(frame, tmp_path_factory):
    model = LogisticRegression().fit(frame, frame.a > 0)
    fitted = _quiet(lambda: L2XExplainer(k=2, max_epochs=1, background=4, repair="model",
                                         random_state=0).fit(frame, black_box=model))
    path = tmp_path_factory.mktemp("saved") / "e.safetensors"
    save(fitted, path)
    return path, model


@pytest.mark.parametrize("case", list(_TAMPERED))
def test_load_and_inspect_refuse_fitted_arrays_that_cannot_be_the_explainer_s(
        case, saved, tmp_path, capsys):
    path, model = saved
    edit, words = _TAMPERED[case]
    bad = _rewrite(path, tmp_path / "bad.safetensors", edit)
    with pytest.raises(ValueError, match="The file's") as error:
        load(bad, black_box=model)
    assert words in str(error.value)
    assert main(["inspect", str(bad)]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_the_untampered_file_loads_and_repairs(saved, frame):
    path, model = saved
    loaded = load(path, black_box=model)
    assert loaded.background_.shape == (4, 5)
    assert loaded.repair_masks(frame).n_rows == 80


def test_a_file_with_the_report_of_an_earlier_transform_loads_without_it(saved, frame,
                                                                         tmp_path):
    """Files of 0.1 kept the last repaired transform's report as a fitted attribute."""
    path, model = saved
    report = {"dict": {"n_rows": 80, "n_failed": 3, "n_repaired": 2, "n_queries": 170,
                       "queries_per_row": 2.1, "holds": _array(np.ones(80, bool))}}
    older = _rewrite(path, tmp_path / "older.safetensors", _set("repair_report_", report))
    loaded = load(older, black_box=model)
    assert not hasattr(loaded, "repair_report_")
    np.testing.assert_array_equal(loaded.transform(frame), load(path, black_box=model)
                                  .transform(frame))


def test_a_table_s_background_codes_may_hold_empty_cells_but_not_infinity(table, tmp_path):
    X, model = table
    fitted = _quiet(lambda: L2XExplainer(k=1, max_epochs=1, refine=None,
                                         background=20, random_state=0).fit(X, black_box=model))
    assert np.isnan(fitted.background_).any()
    save(fitted, tmp_path / "t.safetensors")
    np.testing.assert_array_equal(load(tmp_path / "t.safetensors").background_,
                                  fitted.background_)
    codes = fitted.background_.copy()
    codes[0, 0] = np.inf
    bad = _rewrite(tmp_path / "t.safetensors", tmp_path / "bad.safetensors",
                   _set("background_", _array(codes)))
    with pytest.raises(ValueError, match="background_ holds infinite values"):
        load(bad)


# Item 3: the repair's switches ---------------------------------------------------------------


@pytest.fixture(scope="module")
def repaired(frame):
    model = LogisticRegression().fit(frame, frame.a + frame.b > 0)
    fitted = _quiet(lambda: L2XExplainer(k=1, max_epochs=1, refine=None, repair="model",
                                         random_state=0).fit(frame, black_box=model))
    return fitted, model


# Every way masks are made or checked with the explainer's own repair settings.
_READERS = {
    "transform": lambda e, X: e.transform(X),
    "check": lambda e, X: e.check(X),
    "check of given masks": lambda e, X: e.check(X, np.ones(X.shape)),
    "reasons": lambda e, X: e.reasons(X),
}

_BAD_REPAIRS = {
    "any string": "bogus",
    "an empty string": "",
    "True": True,
    "a number": 1,
    "max_queries=True": RowRepair(max_queries=True),
    "tol=True": RowRepair(tol=True),
    "log_weight=np.True_": RowRepair(log_weight=np.bool_(True)),
    "max_queries=-1": RowRepair(max_queries=-1),
    "tol=-0.5": RowRepair(tol=-0.5),
}


@pytest.mark.parametrize("reader", list(_READERS))
@pytest.mark.parametrize("case", list(_BAD_REPAIRS))
def test_a_repair_set_after_fit_is_checked_where_it_is_read(case, reader, repaired, frame):
    fitted = clone(repaired[0])
    fitted.__dict__.update({k: v for k, v in vars(repaired[0]).items() if k.endswith("_")})
    fitted.set_params(repair=_BAD_REPAIRS[case])
    with pytest.raises(InvalidParameterError) as error:
        _READERS[reader](fitted, frame)
    assert "repair" in str(error.value) or "RowRepair" in str(error.value)


def test_a_repaired_transform_changes_nothing_on_the_explainer(repaired, frame):
    fitted = clone(repaired[0])
    fitted.__dict__.update({k: v for k, v in vars(repaired[0]).items() if k.endswith("_")})
    before = dict(vars(fitted))
    masks = fitted.transform(frame)
    report = fitted.repair_masks(frame)
    assert vars(fitted).keys() == before.keys()
    assert all(vars(fitted)[name] is value for name, value in before.items())
    np.testing.assert_array_equal(np.asarray(masks), report.masks)
    assert report.n_rows == 80


@pytest.mark.parametrize("tol", [True, False, np.bool_(True), -0.1, np.nan, "0.1", None])
def test_check_refuses_a_tol_that_is_not_a_number(tol, repaired, frame):
    fitted = repaired[0]
    if tol is None:  # the repair's tol is read, and checked, when none is given
        fitted = clone(fitted).set_params(repair=RowRepair(tol=True))
        fitted.__dict__.update({k: v for k, v in vars(repaired[0]).items() if k.endswith("_")})
    with pytest.raises(ValueError, match="tol"):
        fitted.check(frame, np.ones(frame.shape), tol=tol)


@pytest.mark.parametrize("name", ["max_queries", "tol", "log_weight"])
@pytest.mark.parametrize("value", [True, np.bool_(False)])
def test_row_repair_refuses_bools_for_its_numbers(name, value):
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter of RowRepair must "
                       "be a number, not a bool"):
        RowRepair(**{name: value}).validate()


def test_the_repair_s_tol_and_budget_act(repaired, frame):
    fitted, _ = repaired
    fitted = clone(fitted)
    fitted.__dict__.update({k: v for k, v in vars(repaired[0]).items() if k.endswith("_")})
    fitted.set_params(repair=RowRepair(max_queries=0))
    report = fitted.repair_masks(frame)
    assert report.n_failed > 0 and report.n_repaired == 0
    assert report.n_queries == 2 * len(frame)  # the check alone


# The CLI: the repair's budget and tol -------------------------------------------------------


@pytest.fixture
def regression_files(tmp_path, frame):
    X = frame.to_numpy(dtype=np.float64)
    model_path = tmp_path / "model.joblib"
    joblib.dump(LinearRegression().fit(X, X[:, 0] + 0.5 * X[:, 1]), model_path)
    data_path = tmp_path / "data.csv"
    with open(data_path, "w", newline="") as handle:
        csv.writer(handle).writerows(X.tolist())
    return str(model_path), str(data_path)


def _holds_column(path):
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    return np.array([row[-1] for row in rows], dtype=float)


def test_cli_tol_sets_what_the_check_keeps(regression_files, tmp_path, capsys):
    model, data = regression_files
    out = str(tmp_path / "masks.csv")
    base = ["explain", model, data, "-k", "1", "--out", out, "--check", "--max-epochs", "1",
            "--no-header"]
    assert main([*base, "--tol", "1000"]) == 0
    assert _holds_column(out).all()
    assert main([*base, "--tol", "0"]) == 0
    assert not _holds_column(out).any()


def test_cli_repair_max_queries_sets_the_budget(regression_files, tmp_path, capsys, frame):
    model, data = regression_files
    out = str(tmp_path / "masks.csv")
    argv = ["explain", model, data, "-k", "1", "--out", out, "--repair", "--max-epochs", "1",
            "--no-header", "--repair-max-queries", "0", "--tol", "0.01"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "0 of the" in text and "2.0 model queries a row" in text


@pytest.mark.parametrize("options, words", [
    (["--repair-max-queries", "5"], "--repair-max-queries sets the repair's budget"),
    (["--tol", "0.2"], "--tol sets how far"),
    (["--repair", "--tol", "-1"], "expected a finite number >= 0"),
    (["--repair", "--tol", "nan"], "expected a finite number >= 0"),
    (["--repair", "--tol", "true"], "expected a finite number >= 0"),
    (["--repair", "--repair-max-queries", "-1"], "expected an integer >= 0"),
    (["--repair", "--repair-max-queries", "2.5"], "expected an integer >= 0"),
])
def test_cli_refuses_bad_repair_options_in_one_line(options, words, regression_files,
                                                     tmp_path, capsys):
    model, data = regression_files
    argv = ["explain", model, data, "--out", str(tmp_path / "m.csv"), "--no-header",
            *options]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and words in err


@pytest.mark.parametrize("name", ["max_epochs", "batch_size", "lr", "weight_decay",
                                  "train_split", "tau"])
def test_a_bool_is_refused_wherever_a_number_is_asked_for(name):
    from sklearn.utils._param_validation import InvalidParameterError

    X = np.random.RandomState(0).randn(40, 3).astype(np.float32)
    explainer = sk_sointer.L2XExplainer(k=1, refine=None, max_epochs=1).set_params(
        **{name: True})
    # A number's own range refuses True where 1 is out of it (batch_size, train_split).
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter of L2XExplainer "
                                                    "must be (a number|an int), not a bool|"
                                                    "must be an? "):
        explainer.fit(X, black_box=lambda rows: np.asarray(rows)[:, :1] > 0)
