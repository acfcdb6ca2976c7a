"""The command line's ``explain`` on a CSV's first row and on the refinement's budget: a
header of numbers is read as column names, kept in the saved explainer, a first row of
data is said to be data; ``--max-queries`` and ``--max-seconds`` set the refinement's
budget and are refused where there is no refinement to bound."""

import csv
import json

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

import sk_sointer
from sk_sointer._cli import main

FAST = ["--max-epochs", "2", "--max-queries", "2000"]
N_ROWS = 100


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    X = rng.randn(N_ROWS, 5)
    return X, (X[:, 0] + X[:, 1] > 0).astype(int)


@pytest.fixture(scope="module")
def model(data):
    return LogisticRegression().fit(*data)


def write_rows(path, header, X):
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        if header is not None:
            writer.writerow(header)
        writer.writerows(X.tolist())
    return str(path)


@pytest.fixture
def model_file(tmp_path, model):
    import joblib

    path = tmp_path / "model.joblib"
    joblib.dump(model, path)
    return str(path)


@pytest.mark.parametrize("header, rule", [
    (["2019", "2020", "2021", "2022", "2023"], "consecutive integers"),
    (["1", "2", "3", "4", "5"], "consecutive integers"),
    (["0.0", "1.0", "2.0", "3.0", "4.0"], "consecutive integers"),
    (["10", "20", "30", "40", "50"], "written as integers"),
    (["a", "b", "c", "d", "e"], None),
])
def test_a_numeric_header_is_read_as_column_names(capsys, tmp_path, data, model_file,
                                                  header, rule):
    path = write_rows(tmp_path / "data.csv", header, data[0])
    saved = tmp_path / "explainer.safetensors"
    argv = ["explain", model_file, path, "-k", "2", "--out", str(tmp_path / "m.csv"),
            "--save-explainer", str(saved), *FAST]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert f"Wrote {N_ROWS} masks" in captured.out
    if rule is not None:
        assert f"is read as a header: its {'numbers are' if 'consec' in rule else 'cells are'}" \
            in captured.err and rule in captured.err
    # The column names are kept in the saved explainer, and inspect shows them.
    assert list(sk_sointer.load(saved).feature_names_in_) == header
    assert main(["inspect", "--json", str(saved)]) == 0
    assert json.loads(capsys.readouterr().out)["data"]["feature_names"] == header
    # --no-header reads the numbers as data.
    if rule is not None:
        argv = ["explain", model_file, path, "-k", "2", "--out", str(tmp_path / "m.csv"),
                "--no-header", *FAST]
        assert main(argv) == 0
        assert f"Wrote {N_ROWS + 1} masks" in capsys.readouterr().out


def test_a_first_row_of_data_is_said_to_be_data(capsys, tmp_path, data, model_file):
    path = write_rows(tmp_path / "data.csv", None, data[0])
    argv = ["explain", model_file, path, "-k", "2", "--out", str(tmp_path / "m.csv"), *FAST]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert f"Wrote {N_ROWS} masks" in captured.out
    assert "is read as data" in captured.err and "--header" in captured.err


@pytest.mark.parametrize("budget, expected", [
    (["--max-queries", "0"], {"max_queries": 0, "max_extensions": 0}),
    (["--max-queries", "500", "--max-seconds", "30"],
     {"max_queries": 500, "max_seconds": 30.0, "max_extensions": 0}),  # a bound: not extended
    (["--max-seconds", "30"], {"max_seconds": 30.0, "max_extensions": 3}),
])
def test_the_cli_sets_the_refinements_budget(capsys, tmp_path, data, model_file, budget,
                                             expected):
    path = write_rows(tmp_path / "data.csv", None, data[0])
    saved = tmp_path / "explainer.safetensors"
    argv = ["explain", model_file, path, "-k", "2", "--out", str(tmp_path / "m.csv"),
            "--max-epochs", "2", "--save-explainer", str(saved), *budget]
    assert main(argv) == 0
    loaded = sk_sointer.load(saved)
    assert {name: loaded.refine.get_params()[name] for name in expected} == expected
    assert loaded.n_model_queries_ <= expected.get("max_queries", 4 * 10**6)


@pytest.mark.parametrize("argv, message", [
    (["--param", "refine=null", "--max-queries", "10"], "--max-queries bounds the refinement"),
    (["--param", "refine=null", "--max-seconds", "5"], "which l2x does not do here"),
    (["--max-seconds", "0"], "expected a finite number > 0"),
    (["--max-queries", "-1"], "expected an integer >= 0"),
])
def test_a_budget_without_a_refinement_is_refused(capsys, tmp_path, data, model_file, argv,
                                                  message):
    path = write_rows(tmp_path / "data.csv", None, data[0])
    assert main(["explain", model_file, path, "--out", str(tmp_path / "m.csv"), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
