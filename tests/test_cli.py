"""The command line: ``python -m sk_sointer demo`` and ``explain``, run in-process."""

import csv
import re

import joblib
import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression

from sk_sointer.__main__ import main

N_ROWS, N_FEATURES = 120, 5
NAMES = ["a", "b", "c", "d", "e"]
FAST = ["--max-epochs", "2"]


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    X = rng.randn(N_ROWS, N_FEATURES)
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    return X, y


@pytest.fixture
def model_path(tmp_path, data):
    path = tmp_path / "model.joblib"
    joblib.dump(LogisticRegression().fit(*data), path)
    return str(path)


def write_csv(path, rows, header=None):
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        if header is not None:
            writer.writerow(header)
        writer.writerows(rows)
    return str(path)


def read_csv(path):
    with open(path, newline="") as handle:
        return list(csv.reader(handle))


@pytest.fixture
def csv_path(tmp_path, data):
    return write_csv(tmp_path / "data.csv", data[0].tolist(), header=NAMES)


def run_error(capsys, argv):
    """Run a command expected to fail on bad input; return its stderr."""
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return captured.err


# -- demo ----------------------------------------------------------------------------------

def test_demo_reports_ground_truth_metrics(capsys):
    code = main(["demo", "--dataset", "xor", "--n-samples", "300", *FAST])
    out = capsys.readouterr().out
    assert code == 0
    rank = re.search(r"median rank\s+([0-9.]+)", out)
    assert rank is not None, out
    assert 1.0 <= float(rank.group(1)) <= 10.0
    assert "optimum (k+1)/2 = 1.50" in out  # xor: k defaults to its 2 true features
    for name in ("TPR", "FDR"):
        percent = float(re.search(rf"{name}\s+([0-9.]+) %", out).group(1))
        assert 0.0 <= percent <= 100.0
    fidelity = float(re.search(r"fidelity\s+([0-9.]+)", out).group(1))
    assert 0.0 <= fidelity <= 1.0
    assert re.search(r"explain time\s+[0-9.]+ .s per row", out)
    assert "150 held out" in out  # min(1000, n_samples // 2)


def test_demo_rejects_k_larger_than_the_data(capsys):
    err = run_error(capsys, ["demo", "--n-samples", "100", "--k", "11", *FAST])
    assert "k should be <= n_features = 10; got 11" in err


def test_demo_rejects_too_few_samples(capsys):
    err = run_error(capsys, ["demo", "--n-samples", "10"])
    assert "at least 50 rows" in err


# -- explain: results ----------------------------------------------------------------------

def test_explain_writes_k_hot_masks_with_the_header(capsys, tmp_path, model_path, csv_path):
    out = tmp_path / "masks.csv"
    code = main(["explain", model_path, csv_path, "-k", "2", "--out", str(out), *FAST])
    assert code == 0
    rows = read_csv(out)
    assert rows[0] == NAMES
    masks = np.array(rows[1:], dtype=float)
    assert masks.shape == (N_ROWS, N_FEATURES)
    assert set(np.unique(masks)) <= {0.0, 1.0}
    np.testing.assert_array_equal(masks.sum(axis=1), 2)
    assert f"Wrote {N_ROWS} masks (2 of 5 features per row)" in capsys.readouterr().out


def test_explain_without_header(tmp_path, model_path, data):
    path = write_csv(tmp_path / "plain.csv", data[0].tolist())
    out = tmp_path / "masks.csv"
    assert main(["explain", model_path, path, "-k", "3", "--out", str(out), *FAST]) == 0
    masks = np.array(read_csv(out), dtype=float)  # no header row: every row parses
    assert masks.shape == (N_ROWS, N_FEATURES)
    np.testing.assert_array_equal(masks.sum(axis=1), 3)


def test_explain_forced_header_on_numeric_first_row(tmp_path, model_path, data):
    path = write_csv(tmp_path / "plain.csv", data[0].tolist())
    out = tmp_path / "masks.csv"
    argv = ["explain", model_path, path, "-k", "1", "--header", "--out", str(out), *FAST]
    assert main(argv) == 0
    rows = read_csv(out)
    assert rows[0] == read_csv(path)[0]
    assert len(rows) == N_ROWS  # the first row became the header


def test_explain_fit_rows_still_explains_every_row(capsys, tmp_path, model_path, csv_path):
    out = tmp_path / "masks.csv"
    argv = ["explain", model_path, csv_path, "-k", "2", "--fit-rows", "60", "--out", str(out)]
    assert main([*argv, *FAST]) == 0
    assert len(read_csv(out)) == N_ROWS + 1
    assert "fidelity on the 60 fit rows" in capsys.readouterr().out


def test_explain_reports_fidelity_next_to_random_masks_with_the_baseline(
    capsys, tmp_path, model_path, csv_path, data
):
    from sk_sointer.metrics import posthoc_accuracy

    X = data[0]
    model = joblib.load(model_path)
    out = tmp_path / "masks.csv"
    for baseline in ("mean", "zero", "0.5"):
        argv = ["explain", model_path, csv_path, "-k", "2", "--baseline", baseline,
                "--out", str(out), *FAST]
        assert main(argv) == 0
        printed = capsys.readouterr().out
        fidelity, chance = map(float, re.findall(r": ([0-9.]+)", printed)[:2])
        masks = np.array(read_csv(out)[1:], dtype=float)
        value = {"mean": X.mean(axis=0), "zero": 0.0, "0.5": 0.5}[baseline]
        # The CLI's fidelity is the model on the kept features, the others at the baseline.
        assert fidelity == pytest.approx(posthoc_accuracy(model, X, masks, baseline=value), abs=1e-3)
        assert 0.0 <= chance <= 1.0 and "random 2-feature masks" in printed


def test_explain_rejects_a_bad_baseline(capsys, model_path, csv_path, tmp_path):
    argv = ["explain", model_path, csv_path, "-k", "2", "--baseline", "median",
            "--out", str(tmp_path / "m.csv")]
    assert main(argv) == 2
    assert "expected mean, zero or a number; got 'median'" in capsys.readouterr().err


# -- explain: bad input --------------------------------------------------------------------

def test_missing_files(capsys, tmp_path, model_path, csv_path):
    out = str(tmp_path / "masks.csv")
    missing = str(tmp_path / "nope.joblib")
    err = run_error(capsys, ["explain", missing, csv_path, "-k", "2", "--out", out])
    assert "model file" in err and "does not exist" in err
    missing = str(tmp_path / "nope.csv")
    err = run_error(capsys, ["explain", model_path, missing, "-k", "2", "--out", out])
    assert "data file" in err and "does not exist" in err


def test_unreadable_joblib(capsys, tmp_path, csv_path):
    bad = tmp_path / "bad.joblib"
    bad.write_bytes(b"this is not a pickle")
    err = run_error(capsys, ["explain", str(bad), csv_path, "-k", "2", "--out", "m.csv"])
    assert "cannot load a model" in err


def test_joblib_without_a_model(capsys, tmp_path, csv_path):
    path = tmp_path / "dict.joblib"
    joblib.dump({"not": "a model"}, path)
    err = run_error(capsys, ["explain", str(path), csv_path, "-k", "2",
                             "--out", str(tmp_path / "m.csv")])
    assert "does not hold a usable model" in err


@pytest.mark.parametrize(
    "cell, expected",
    [
        ("abc", "row 4, column 3 ('c') of .* is not a number: 'abc'"),
        ("", "row 4, column 3 ('c') of .* is not a number: ''"),
        ("nan", "row 4, column 3 ('c') of .* is nan; the explainer needs finite numbers"),
        ("-inf", "row 4, column 3 ('c') of .* is -inf; the explainer needs finite numbers"),
    ],
)
def test_bad_cells_are_named(capsys, tmp_path, model_path, data, cell, expected):
    rows = data[0].tolist()
    rows[2][2] = cell  # file line 4: the header is line 1
    path = write_csv(tmp_path / "data.csv", rows, header=NAMES)
    err = run_error(capsys, ["explain", model_path, path, "-k", "2", "--out", "m.csv"])
    assert re.search(re.escape(expected).replace(r"\.\*", ".*"), err), err


def test_ragged_row(capsys, tmp_path, model_path, data):
    rows = data[0].tolist()
    rows[5] = rows[5][:4]
    path = write_csv(tmp_path / "data.csv", rows, header=NAMES)
    err = run_error(capsys, ["explain", model_path, path, "-k", "2", "--out", "m.csv"])
    assert "row 7" in err and "has 4 cells; expected 5" in err


def test_forced_no_header_names_the_header_cell(capsys, model_path, csv_path):
    err = run_error(capsys, ["explain", model_path, csv_path, "-k", "2", "--no-header",
                             "--out", "m.csv"])
    assert "row 1, column 1" in err and "not a number: 'a'" in err


@pytest.mark.parametrize("content, expected", [("", "is empty"), ("\n\n", "is empty"),
                                               ("a,b,c,d,e\n", "no data rows")])
def test_empty_csv(capsys, tmp_path, model_path, content, expected):
    path = tmp_path / "data.csv"
    path.write_text(content)
    err = run_error(capsys, ["explain", model_path, str(path), "-k", "2", "--out", "m.csv"])
    assert expected in err


def test_width_differs_from_the_model(capsys, tmp_path, model_path, data):
    path = write_csv(tmp_path / "data.csv", data[0][:, :4].tolist(), header=NAMES[:4])
    err = run_error(capsys, ["explain", model_path, path, "-k", "2", "--out", "m.csv"])
    assert "model expects 5 features" in err and "has 4 columns" in err


def test_column_names_differ_from_the_model(capsys, tmp_path, data):
    pd = pytest.importorskip("pandas")
    X, y = data
    model = LogisticRegression().fit(pd.DataFrame(X, columns=NAMES), y)
    model_path = tmp_path / "model.joblib"
    joblib.dump(model, model_path)
    path = write_csv(tmp_path / "data.csv", X.tolist(), header=["b", "a", "c", "d", "e"])
    err = run_error(capsys, ["explain", str(model_path), path, "-k", "2", "--out", "m.csv"])
    assert "column 1 is 'b'" in err and "'a' in the model" in err


@pytest.mark.parametrize("k", ["0", "6"])
def test_k_out_of_range(capsys, model_path, csv_path, k):
    err = run_error(capsys, ["explain", model_path, csv_path, "-k", k, "--out", "m.csv"])
    assert f"k should be between 1 and n_features = 5; got {k}" in err


def test_unknown_method(capsys, model_path, csv_path):
    err = run_error(capsys, ["explain", model_path, csv_path, "--method", "shap", "-k", "2",
                             "--out", "m.csv"])
    assert "unknown --method 'shap'" in err and "l2x" in err


def test_unwritable_output(capsys, tmp_path, model_path, csv_path):
    out = str(tmp_path / "no_such_dir" / "masks.csv")
    err = run_error(capsys, ["explain", model_path, csv_path, "-k", "2", "--out", out, *FAST])
    assert "cannot write" in err


def test_unknown_device(capsys, model_path, csv_path):
    err = run_error(capsys, ["explain", model_path, csv_path, "-k", "2", "--device", "gpu0",
                             "--out", "m.csv"])
    assert "argument --device" in err and "'gpu0'" in err
