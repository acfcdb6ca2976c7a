"""The command line: ``python -m sk_sointer demo`` and ``explain``, run in-process."""

import csv
import json
import os
import re
import subprocess
import sys

import joblib
import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression

import sk_sointer
from sk_sointer._cli import _common, demo, explain
from sk_sointer._cli import _param as cli_param
from sk_sointer._cli._common import _HELP_DEFAULTS, _defaults, _methods
from sk_sointer._cli import main
from sk_sointer._topk import topk_mask
from sk_sointer import metrics
from sk_sointer.metrics import posthoc_accuracy

N_ROWS, N_FEATURES = 120, 5
NAMES = ["a", "b", "c", "d", "e"]
FAST = ["--max-epochs", "2"]

needs_persist = pytest.mark.skipif(
    not hasattr(sk_sointer, "save"), reason="sk_sointer.save and load are not there yet"
)


class ColumnStrictModel(LogisticRegression):
    """A model that fails when called, as one expecting other columns would."""

    def predict_proba(self, X):
        raise ValueError("columns are missing:\n  'age', 'income'")


class ZeroAllergicModel(LogisticRegression):
    """A model that fails only on rows holding an exact 0, such as masked ones."""

    def predict_proba(self, X):
        if np.any(np.asarray(X) == 0):
            raise ZeroDivisionError("a feature is 0")
        return super().predict_proba(X)


class NanOnMaskedRowsModel(LogisticRegression):
    """A model that answers NaN only on rows holding an exact 0, such as masked ones."""

    def predict_proba(self, X):
        proba = super().predict_proba(X)
        proba[np.any(np.asarray(X) == 0, axis=1)] = np.nan
        return proba


class ShortOnMaskedRowsModel(LogisticRegression):
    """A model that answers one row too few when some row holds an exact 0."""

    def predict_proba(self, X):
        proba = super().predict_proba(X)
        return proba[1:] if np.any(np.asarray(X) == 0) else proba


class NanModel(LogisticRegression):
    """A model that answers, but with NaN: its output fails the explainer's validation."""

    def predict_proba(self, X):
        return np.full((len(X), 2), np.nan)


def failing_function(X):
    raise KeyError("age")


def positive_first_feature(X):
    """A model as a plain function, which declares no number of features."""
    p = 1 / (1 + np.exp(-np.asarray(X)[:, 0]))
    return np.column_stack([1 - p, p])


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


def cli_lines(err):
    """The CLI's own lines of ``err`` (notes, warnings, errors), without the progress that
    the explainer's ``verbose=1`` writes."""
    return [line for line in err.splitlines() if line.startswith("sk_sointer ")]


def run_error(capsys, argv):
    """Run a command expected to fail on bad input; return its stderr."""
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return captured.err


def printed_fidelities(out):
    """The fidelity and the random masks' fidelity from explain's summary line."""
    fidelity, chance = map(float, re.findall(r": ([0-9.]+)", out)[:2])
    return fidelity, chance


@pytest.fixture
def built(monkeypatch):
    """The explainers the CLI builds, in order, to read their parameters after a run."""
    explainers = []
    original = _common._build_explainer

    def spy(*args, **kwargs):
        explainers.append(original(*args, **kwargs))
        return explainers[-1]

    for command in (demo, explain):
        monkeypatch.setattr(command, "_build_explainer", spy)
    return explainers


def save_model(path, model, data, columns=N_FEATURES):
    X, y = data
    joblib.dump(model.fit(X[:, :columns], y) if hasattr(model, "fit") else model, path)
    return str(path)


# -- demo ----------------------------------------------------------------------------------

def test_demo_reports_ground_truth_metrics(capsys):
    code = main(["demo", "--dataset", "xor", "--n-samples", "300", *FAST])
    out = capsys.readouterr().out
    assert code == 0
    rank = re.search(r"median rank\s+([0-9.]+)", out)
    assert rank is not None, out
    assert 1.0 <= float(rank.group(1)) <= 10.0
    assert "of the 2 true features (optimum 1.50;" in out  # xor: (2 + 1) / 2
    assert "(2 of 10 features per row)" in out  # k defaults to the set's 2 true features
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


@pytest.mark.parametrize("method", ["l2x", "realx"])
def test_demo_runs_every_method_next_to_random_masks(capsys, monkeypatch, built, method):
    calls = []
    original = _common._random_mask_fidelity

    def spy(black_box, X, counts, baseline, seed):
        calls.append((X, counts, baseline, original(black_box, X, counts, baseline, seed)))
        return calls[-1][-1]

    monkeypatch.setattr(demo, "_random_mask_fidelity", spy)
    argv = ["demo", "--dataset", "xor", "--n-samples", "300", "--method", method, *FAST]
    assert main(argv) == 0
    out = capsys.readouterr().out
    (explainer,) = built
    (X, counts, baseline, chance), = calls
    assert type(explainer) is _common._methods()[method]
    # The reference keeps as many random features per row as the explanations of the same
    # held-out rows, with the explainer's baseline.
    assert len(X) == 150
    np.testing.assert_array_equal(counts, explainer.transform(X).sum(axis=1))
    np.testing.assert_array_equal(baseline, explainer.masker_.baseline_)
    assert re.search(rf"random masks\s+{chance:.3f}\s", out), out
    fidelity = float(re.search(r"fidelity\s+([0-9.]+)", out).group(1))
    assert fidelity == pytest.approx(explainer.score(X), abs=6e-4)
    if method == "l2x":
        assert explainer.k == 2 and "random 2-feature masks" in out
    else:  # REAL-X's own default: the features with selection probability above 0.5
        assert explainer.k is None and "RealXExplainer(k=None" in out
        assert explainer.predictor_epochs == 1  # scaled with --max-epochs 2


def test_demo_unknown_method(capsys):
    err = run_error(capsys, ["demo", "--method", "shap", *FAST])
    assert "unknown --method 'shap'" in err and "realx" in err


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


@pytest.mark.parametrize("flag", ["--check", "--repair"])
def test_explain_adds_whether_each_row_holds(capsys, tmp_path, model_path, csv_path, data,
                                            flag):
    out = tmp_path / "masks.csv"
    argv = ["explain", model_path, csv_path, "-k", "1", "--out", str(out), flag, *FAST]
    assert main(argv) == 0
    rows = read_csv(out)
    assert rows[0] == [*NAMES, "holds"]
    table = np.array(rows[1:], dtype=float)
    masks, holds = table[:, :-1], table[:, -1]
    np.testing.assert_array_equal(masks.sum(axis=1), 1)
    # The column is the model's own verdict on each masked row (mean fill).
    model = joblib.load(model_path)
    X = data[0]
    filled = np.where(masks > 0, X, X.mean(axis=0))
    np.testing.assert_array_equal(holds, model.predict(filled) == model.predict(X))
    text = capsys.readouterr().out
    assert f"the model keeps its answer on {holds.mean():.1%} of the masked rows" in text
    # And by the model's answer on the full row, as evaluate's rows_holding_by_answer.
    answer = model.predict(X)
    by_answer = ", ".join(f"{label} {holds[answer == label].mean():.1%}"
                          for label in np.unique(answer))
    assert f"masked rows (by its answer on the full row: {by_answer})" in text
    if flag == "--repair":
        # The label needs both features: one feature a row keeps it on fewer rows, and
        # the repair says how many of the failing rows it could fix.
        assert "rows that failed the check repaired" in text


def test_explain_without_header(tmp_path, model_path, data):
    path = write_csv(tmp_path / "plain.csv", data[0].tolist())
    out = tmp_path / "masks.csv"
    assert main(["explain", model_path, path, "-k", "3", "--out", str(out), *FAST]) == 0
    masks = np.array(read_csv(out), dtype=float)  # no header row: every row parses
    assert masks.shape == (N_ROWS, N_FEATURES)
    np.testing.assert_array_equal(masks.sum(axis=1), 3)


def test_pandas_default_header_is_a_header(capsys, tmp_path, model_path, data):
    pd = pytest.importorskip("pandas")
    path = tmp_path / "pandas.csv"
    pd.DataFrame(data[0]).to_csv(path, index=False)  # header 0,1,2,3,4
    out = tmp_path / "masks.csv"
    assert main(["explain", model_path, str(path), "-k", "2", "--out", str(out), *FAST]) == 0
    captured = capsys.readouterr()
    rows = read_csv(out)
    assert rows[0] == ["0", "1", "2", "3", "4"] and len(rows) == N_ROWS + 1
    assert f"Wrote {N_ROWS} masks" in captured.out
    assert "is read as a header: its numbers are consecutive integers" in captured.err
    assert "--no-header" in captured.err
    # Asked for, the row is data.
    argv = ["explain", model_path, str(path), "-k", "2", "--no-header", "--out", str(out), *FAST]
    assert main(argv) == 0
    assert len(read_csv(out)) == N_ROWS + 1 and rows[0] != read_csv(out)[0]
    assert f"Wrote {N_ROWS + 1} masks" in capsys.readouterr().out


FLOATS = [["0.25", "1.5", "-2.0"], ["3.75", "0.5", "1e-3"]]


@pytest.mark.parametrize("rows, rule", [
    ([["0", "1", "2"], *FLOATS], "consecutive integers"),
    ([[" 0", "1 ", "2"], *FLOATS], "consecutive integers"),
    ([["2019", "2020", "2021"], ["5", "7", "9"], ["1", "2", "4"]], "consecutive integers"),
    ([["0.0", "1.0", "2.0"], *FLOATS], "consecutive integers"),
    ([["10", "20", "40"], *FLOATS], "written as integers"),
    # Data: a run with runs below, integers above integers, fractions on the first row.
    ([["0", "1", "2"], ["1", "2", "3"], ["5", "0", "1"]], None),
    ([["0", "1", "3"], ["4", "2", "2"]], None),
    ([["10", "20", "40"], ["1", "2", "3.5"], ["1", "2", "4"]], None),
    ([["0.5", "1.5", "2.5"], *FLOATS], None),
    ([["0"], ["1.5"]], None),
    ([["0", "1", "2"]], None),
])
def test_numeric_header_rule(rows, rule):
    found = explain._numeric_header_rule(rows)
    assert (found is None) if rule is None else (rule in found)


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
        assert fidelity == pytest.approx(posthoc_accuracy(model, X, masks, baseline=value,
                                                          by_answer=True), abs=1e-3)
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


# -- explain: k and the method's defaults ---------------------------------------------------

def test_l2x_k_defaults_to_the_methods_own(capsys, tmp_path, model_path, csv_path):
    out = tmp_path / "masks.csv"
    assert main(["explain", model_path, csv_path, "--out", str(out), *FAST]) == 0
    masks = np.array(read_csv(out)[1:], dtype=float)
    np.testing.assert_array_equal(masks.sum(axis=1), sk_sointer.L2XExplainer().k)  # 4
    assert "(4 of 5 features per row)" in capsys.readouterr().out


def test_l2x_default_k_wider_than_the_data_keeps_every_feature(capsys, recwarn, tmp_path,
                                                                  data):
    model = save_model(tmp_path / "model.joblib", LogisticRegression(), data, columns=3)
    path = write_csv(tmp_path / "data.csv", data[0][:, :3].tolist(), header=NAMES[:3])
    out = tmp_path / "m.csv"
    assert main(["explain", model, path, "--out", str(out), *FAST]) == 0
    captured = capsys.readouterr()
    assert cli_lines(captured.err) == [
        f"sk_sointer explain: warning: l2x's default k=4 is more than the 3 columns of "
        f"{path!r}, so every feature is selected; give -k to select fewer."
    ]
    np.testing.assert_array_equal(np.array(read_csv(out)[1:], dtype=float), 1.0)
    assert "(3 of 3 features per row)" in captured.out
    assert not [w for w in recwarn if "greater than" in str(w.message)]  # said once, above


def test_realx_without_k_thresholds_the_scores(capsys, tmp_path, model_path, csv_path, data):
    X = data[0]
    model = joblib.load(model_path)
    out, scores_out = tmp_path / "masks.csv", tmp_path / "scores.csv"
    argv = ["explain", model_path, csv_path, "--method", "realx", "--out", str(out),
            "--scores", str(scores_out), *FAST]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    masks = np.array(read_csv(out)[1:], dtype=float)
    scores = np.array(read_csv(scores_out)[1:], dtype=np.float32)
    # k=None: a feature is kept when its selection probability exceeds 0.5, and a row
    # where none does keeps its most probable feature.
    expected = (scores > 0.5).astype(float)
    empty = expected.sum(axis=1) == 0
    expected[empty, scores[empty].argmax(axis=1)] = 1.0
    np.testing.assert_array_equal(masks, expected)
    counts = masks.sum(axis=1)
    fidelity, chance = printed_fidelities(printed)
    baseline = X.mean(axis=0)
    # The printed fidelity is score's: the mean over the model's answers.
    assert fidelity == pytest.approx(posthoc_accuracy(model, X, masks, baseline=baseline,
                                                      by_answer=True), abs=6e-4)
    # The reference keeps as many random features in each row as the explanation does.
    random_masks = metrics.random_masks(len(counts), N_FEATURES, counts, random_state=0)
    np.testing.assert_array_equal(random_masks.sum(axis=1), counts)
    assert chance == pytest.approx(posthoc_accuracy(model, X, random_masks, baseline=baseline,
                                                    by_answer=True), abs=6e-4)
    if len(np.unique(counts)) > 1:
        assert f"({counts.mean():.1f} of 5 features per row on average)" in printed
        assert "random masks with as many features per row" in printed


# -- explain: --param and epochs -------------------------------------------------------------

@pytest.mark.parametrize(
    "text, expected",
    [
        ("selector__hidden_units=[50,50]", ("selector__hidden_units", [50, 50])),
        ("lr=1e-3", ("lr", 0.001)),
        ("batch_size=32", ("batch_size", 32)),
        ("append_mask=false", ("append_mask", False)),
        ("groups=null", ("groups", None)),
        ("schedule=alternating", ("schedule", "alternating")),
        ("optimizer=\"sgd\"", ("optimizer", "sgd")),
        ("name=a=b", ("name", "a=b")),
        ("name=", ("name", "")),
    ],
)
def test_param_values_are_read_as_json_where_they_parse(text, expected):
    assert cli_param(text) == expected


def test_params_reach_the_estimator(tmp_path, built, model_path, csv_path):
    argv = ["explain", model_path, csv_path, "-k", "2", "--out", str(tmp_path / "m.csv"),
            "--param", "selector__hidden_units=[7]", "--param", "lr=0.01",
            "--param", "optimizer=sgd", "--param", "batch_size=32", *FAST]
    assert main(argv) == 0
    (explainer,) = built
    assert (explainer.lr, explainer.optimizer, explainer.batch_size) == (0.01, "sgd", 32)
    assert explainer.selector.hidden_units == [7]
    assert explainer.net_.module_[0].out_features == 7  # the selector was built with it
    assert sk_sointer.L2XExplainer().selector.hidden_units == (100, 100)  # default untouched


@pytest.mark.parametrize(
    "params, expected",
    [
        (["hiden_units=3"], "L2XExplainer has no parameter 'hiden_units'"),
        (["selector__width=3"], "L2XExplainer has no parameter 'selector__width'"),
        (["lr=-1"], "The 'lr' parameter of L2XExplainer must be"),
        (["batch_size=many"], "The 'batch_size' parameter of L2XExplainer must be"),
        (["selector__activation=swish"], "(selector__activation): activation should be one of"),
        (["k=3"], "set k with -k, not --param"),
        (["random_state=3"], "set random_state with --random-state, not --param"),
        (["lr=0.1", "lr=0.2"], "--param lr is given twice"),
        (["lr"], "argument --param: expected NAME=VALUE; got 'lr'"),
        # Once a skorch AttributeError with a traceback at fit.
        (['callbacks=["os.system"]'], "--param callbacks cannot be set on the command line"),
        (["train_split=os.system"], "--param train_split cannot be set on the command line"),
    ],
)
def test_bad_params_are_named(capsys, model_path, csv_path, params, expected):
    argv = ["explain", model_path, csv_path, "--out", "m.csv", *FAST]
    for param in params:
        argv += ["--param", param]
    err = run_error(capsys, argv)
    assert expected in err
    if not expected.startswith("argument"):  # argparse prints its usage first
        assert err.count("\n") == 1, err


def test_realx_max_epochs_scales_predictor_epochs(capsys, tmp_path, built, model_path,
                                                   csv_path):
    argv = ["explain", model_path, csv_path, "--method", "realx", "--max-epochs", "50",
            "--out", str(tmp_path / "m.csv")]
    assert main(argv) == 0
    (explainer,) = built
    defaults = sk_sointer.RealXExplainer()
    share = defaults.predictor_epochs / defaults.max_epochs  # 100 of 160
    assert explainer.max_epochs == 50 and explainer.predictor_epochs == round(50 * share) == 31
    assert len(explainer.net_.history) == 50


def test_realx_keeps_predictor_epochs_given_by_param(tmp_path, built, model_path, csv_path):
    argv = ["explain", model_path, csv_path, "--method", "realx", "--max-epochs", "5",
            "--param", "predictor_epochs=3", "--out", str(tmp_path / "m.csv")]
    assert main(argv) == 0
    assert built[0].predictor_epochs == 3


def test_realx_needs_two_epochs(capsys, model_path, csv_path):
    err = run_error(capsys, ["explain", model_path, csv_path, "--method", "realx",
                             "--max-epochs", "1", "--out", "m.csv"])
    assert "--max-epochs should be >= 2; got 1" in err


def test_help_says_how_max_epochs_scales_realx(capsys):
    assert main(["explain", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "realx trains its predictor alone" in text and "(100 of 160 epochs" in text


# -- explain: scores and fit rows ------------------------------------------------------------

def test_scores_file_has_the_masks_layout(capsys, tmp_path, model_path, csv_path):
    out, scores_out = tmp_path / "masks.csv", tmp_path / "scores.csv"
    argv = ["explain", model_path, csv_path, "-k", "2", "--out", str(out),
            "--scores", str(scores_out), *FAST]
    assert main(argv) == 0
    assert f"and their scores to {scores_out}" in capsys.readouterr().out
    mask_rows, score_rows = read_csv(out), read_csv(scores_out)
    assert score_rows[0] == mask_rows[0] == NAMES
    cells = [cell for row in score_rows[1:] for cell in row]
    assert all(cell == str(np.float32(cell)) for cell in cells)  # exact float32, shortest
    scores = np.array(score_rows[1:], dtype=np.float32)
    assert scores.shape == (N_ROWS, N_FEATURES) and len(np.unique(scores)) > N_FEATURES
    # The masks are the top 2 of these scores.
    np.testing.assert_array_equal(topk_mask(scores, 2), np.array(mask_rows[1:], dtype=float))


def test_scores_without_header(tmp_path, model_path, data):
    path = write_csv(tmp_path / "plain.csv", data[0].tolist())
    scores_out = tmp_path / "scores.csv"
    argv = ["explain", model_path, path, "-k", "2", "--out", str(tmp_path / "m.csv"),
            "--scores", str(scores_out), *FAST]
    assert main(argv) == 0
    assert np.array(read_csv(scores_out), dtype=float).shape == (N_ROWS, N_FEATURES)


def test_fit_rows_are_drawn_at_random(capsys, tmp_path, model_path, csv_path, data):
    X = data[0]
    model = joblib.load(model_path)
    rows = explain._fit_rows(N_ROWS, 60, 3)
    assert len(np.unique(rows)) == 60 and not np.array_equal(rows, np.arange(60))
    np.testing.assert_array_equal(rows, explain._fit_rows(N_ROWS, 60, 3))
    assert not np.array_equal(rows, explain._fit_rows(N_ROWS, 60, 4))
    assert explain._fit_rows(N_ROWS, N_ROWS, 3) is None  # all rows

    out = tmp_path / "masks.csv"
    saved = tmp_path / "explainer.safetensors"
    argv = ["explain", model_path, csv_path, "-k", "2", "--fit-rows", "60",
            "--random-state", "3", "--out", str(out), "--save-explainer", str(saved), *FAST]
    assert main(argv) == 0
    fidelity, chance = printed_fidelities(capsys.readouterr().out)
    masks = np.array(read_csv(out)[1:], dtype=float)
    # Fidelity is measured on the drawn rows, left-out features at the drawn rows' mean.
    X_fit, baseline = X[rows], X[rows].mean(axis=0)
    expected = posthoc_accuracy(model, X_fit, masks[rows], baseline=baseline, by_answer=True)
    assert fidelity == pytest.approx(expected, abs=6e-4)
    # The explainer learnt its standardisation on the drawn rows, not on the first 60.
    fitted = sk_sointer.load(str(saved)).masker_.mean_
    np.testing.assert_allclose(fitted, X_fit.mean(axis=0), rtol=1e-6)
    assert not np.allclose(fitted, X[:60].mean(axis=0), rtol=1e-3)
    reference = posthoc_accuracy(model, X_fit, metrics.random_masks(60, 5, 2, random_state=3),
                                 baseline=baseline, by_answer=True)
    assert chance == pytest.approx(reference, abs=6e-4)


# -- explain: errors inside the model -------------------------------------------------------

@pytest.mark.parametrize(
    "model, expected",
    [
        (ColumnStrictModel(), "the model ColumnStrictModel() raised ValueError: columns are "
                              "missing: 'age', 'income'"),
        (failing_function, "raised KeyError: 'age'"),
    ],
)
def test_a_failing_model_is_one_line_and_exit_1(capsys, tmp_path, csv_path, data, model,
                                                expected):
    path = save_model(tmp_path / "model.joblib", model, data)
    argv = ["explain", path, csv_path, "-k", "2", "--out", str(tmp_path / "m.csv"), *FAST]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("sk_sointer explain: error: the model ")
    assert expected in err and err.count("\n") == 1, err
    if model is failing_function:
        assert "the model <function failing_function" in err


def test_a_model_failing_on_masked_rows_is_exit_1(capsys, tmp_path, csv_path, data):
    # Fitting needs only the full rows; the fidelity puts zeros into the left-out features.
    path = save_model(tmp_path / "model.joblib", ZeroAllergicModel(), data)
    out = tmp_path / "m.csv"
    argv = ["explain", path, csv_path, "-k", "2", "--baseline", "zero", "--out", str(out),
            *FAST]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "ZeroAllergicModel() raised ZeroDivisionError: a feature is 0" in err
    assert not out.exists()


def test_debug_prints_the_models_traceback(capsys, tmp_path, csv_path, data):
    path = save_model(tmp_path / "model.joblib", failing_function, data)
    argv = ["explain", path, csv_path, "-k", "2", "--out", str(tmp_path / "m.csv"),
            "--debug", *FAST]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback") and 'raise KeyError("age")' in err
    assert err.splitlines()[-1].endswith("raised KeyError: 'age'")


def test_an_invalid_model_output_stays_bad_input(capsys, tmp_path, csv_path, data):
    path = save_model(tmp_path / "model.joblib", NanModel(), data)
    err = run_error(capsys, ["explain", path, csv_path, "-k", "2",
                             "--out", str(tmp_path / "m.csv"), *FAST])
    assert "NaN or infinite outputs" in err


@pytest.mark.parametrize("model, expected", [
    (NanOnMaskedRowsModel(), "NaN or infinite outputs"),
    (ShortOnMaskedRowsModel(), "one row of outputs per sample"),
])
def test_an_invalid_answer_on_masked_rows_is_one_line_and_exit_2(capsys, tmp_path, csv_path,
                                                                 data, model, expected):
    # Masked rows hold the zero baseline: the fidelity (and a fit that queries the model on
    # masked rows) meets the bad answers, once a traceback in score.
    path = save_model(tmp_path / "model.joblib", model, data)
    out = tmp_path / "m.csv"
    err = run_error(capsys, ["explain", path, csv_path, "-k", "2", "--baseline", "zero",
                             "--out", str(out), *FAST])
    (line,) = cli_lines(err)  # one line, after the training's progress
    assert re.match(f"sk_sointer explain: error: could not (fit the explainer to|explain "
                    f"with) {re.escape(path)}: ", line), err
    assert expected in line and err.endswith(line + "\n"), err
    assert not out.exists()


# -- explain: saved explainers ---------------------------------------------------------------

@needs_persist
@pytest.mark.parametrize("method", ["l2x", "realx"])
def test_saved_explainer_explains_without_fitting(capsys, monkeypatch, tmp_path, model_path,
                                                  csv_path, method):
    saved = str(tmp_path / "explainer.safetensors")
    first = {"out": tmp_path / "m1.csv", "scores": tmp_path / "s1.csv"}
    argv = ["explain", model_path, csv_path, "--method", method, "--out", str(first["out"]),
            "--scores", str(first["scores"]), "--save-explainer", saved, *FAST]
    assert main(argv) == 0
    fitted = printed_fidelities(capsys.readouterr().out)

    def no_fit(self, *args, **kwargs):
        raise AssertionError("--explainer must not fit")

    monkeypatch.setattr(sk_sointer.base.BaseExplainer, "fit", no_fit)
    second = {"out": tmp_path / "m2.csv", "scores": tmp_path / "s2.csv"}
    argv = ["explain", model_path, csv_path, "--explainer", saved,
            "--out", str(second["out"]), "--scores", str(second["scores"])]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert read_csv(second["out"]) == read_csv(first["out"])
    assert read_csv(second["scores"]) == read_csv(first["scores"])
    assert printed_fidelities(printed) == fitted  # both measured on all 120 rows
    assert f"fidelity on the {N_ROWS} rows" in printed


@pytest.mark.parametrize(
    "extra, named",
    [
        (["--method", "realx"], "--method"),
        (["-k", "2"], "-k"),
        (["--param", "lr=0.1"], "--param"),
        (["--max-epochs", "3"], "--max-epochs"),
        (["--fit-rows", "10", "--baseline", "zero"], "--baseline, --fit-rows"),
        (["--save-explainer", "again.safetensors"], "--save-explainer"),
    ],
)
def test_explainer_refuses_fitting_options(capsys, model_path, csv_path, extra, named):
    err = run_error(capsys, ["explain", model_path, csv_path, "--explainer", "x.safetensors",
                             "--out", "m.csv", *extra])
    assert f"{named} cannot be used with --explainer" in err


def test_missing_explainer_file(capsys, tmp_path, model_path, csv_path):
    err = run_error(capsys, ["explain", model_path, csv_path, "--out", "m.csv",
                             "--explainer", str(tmp_path / "none.safetensors")])
    assert "explainer file" in err and "does not exist" in err


@needs_persist
def test_unreadable_explainer_file(capsys, tmp_path, model_path, csv_path):
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"not a safetensors file")
    err = run_error(capsys, ["explain", model_path, csv_path, "--out", "m.csv",
                             "--explainer", str(bad)])
    assert f"cannot load an explainer from {str(bad)!r}" in err


@needs_persist
def test_saved_explainer_of_another_width(capsys, tmp_path, model_path, csv_path, data):
    saved = str(tmp_path / "explainer.safetensors")
    argv = ["explain", model_path, csv_path, "-k", "2", "--out", str(tmp_path / "m.csv"),
            "--save-explainer", saved, *FAST]
    assert main(argv) == 0
    model = save_model(tmp_path / "four.joblib", positive_first_feature, data)
    path = write_csv(tmp_path / "four.csv", data[0][:, :4].tolist(), header=NAMES[:4])
    err = run_error(capsys, ["explain", model, path, "--explainer", saved,
                             "--out", str(tmp_path / "m.csv")])
    assert "was fitted on 5 features" in err and "has 4 columns" in err


@needs_persist
def test_unwritable_saved_explainer(capsys, tmp_path, model_path, csv_path):
    saved = str(tmp_path / "explainer.safetensors")
    folder = str(tmp_path / "no_such_dir")
    argv = ["explain", model_path, csv_path, "-k", "2", "--out", str(tmp_path / "m.csv"), *FAST]
    err = run_error(capsys, [*argv, "--save-explainer", os.path.join(folder, "e.safetensors")])
    assert f"the folder {folder!r} does not exist" in err
    os.mkdir(saved)  # a folder where the file should go
    err = run_error(capsys, [*argv, "--save-explainer", saved])
    assert f"cannot save the explainer to {saved!r}" in err


# -- SOInter through the command line -------------------------------------------------------

def test_explain_serves_sointer_on_one_output_of_a_multi_label_model(capsys, tmp_path, data,
                                                                     csv_path):
    from sklearn.multioutput import MultiOutputClassifier

    X, y = data
    labels = np.c_[y, X[:, 2] > 0].astype(int)
    model = MultiOutputClassifier(LogisticRegression()).fit(X, labels)
    model_file = str(tmp_path / "multilabel.joblib")
    joblib.dump(model, model_file)
    out, again = tmp_path / "masks.csv", tmp_path / "again.csv"
    saved = str(tmp_path / "sointer.safetensors")
    argv = ["explain", model_file, csv_path, "--method", "sointer", "--param", "target=1",
            "-k", "1", "--out", str(out), "--save-explainer", saved, *FAST]
    assert main(argv) == 0
    fidelity, chance = printed_fidelities(capsys.readouterr().out)
    masks = np.array(read_csv(out)[1:], dtype=float)
    explainer = sk_sointer.load(saved, black_box=model)
    np.testing.assert_array_equal(explainer.transform(X), masks)
    # Fidelity and its random reference are both on the explained output, the second label.
    assert fidelity == pytest.approx(explainer.score(X), abs=6e-4)
    random = metrics.random_masks(len(X), N_FEATURES, 1, random_state=0)
    reference = posthoc_accuracy(model, X, random, baseline=explainer.masker_.baseline_,
                                 multioutput="raw_values", by_answer=True)[1]
    assert chance == pytest.approx(reference, abs=6e-4)
    # The saved explainer explains again without fitting, with the same masks.
    assert main(["explain", model_file, csv_path, "--explainer", saved, "--out", str(again)]) == 0
    np.testing.assert_array_equal(np.array(read_csv(again)[1:], dtype=float), masks)


def test_demo_refuses_sointer_on_its_single_output_sets_with_one_line(capsys):
    # Without --dataset, SOInter's demo runs on its own structured outputs (issue 40).
    err = run_error(capsys, ["demo", "--method", "sointer", "--dataset", "xor",
                             "--n-samples", "100", *FAST])
    assert "--method sointer explains one output of a multi-output model" in err
    assert len(cli_lines(err)) == 1


# -- inspect -------------------------------------------------------------------------------

SMALL = {"max_epochs": 1, "batch_size": 64, "random_state": 0, "device": "cpu"}
GROUPS = np.array([0, 0, 1, 1, 2])


def _inspected_cases():
    from sklearn.multioutput import MultiOutputClassifier

    return {
        "l2x-groups-names": (lambda: sk_sointer.L2XExplainer(k=2, groups=GROUPS, **SMALL),
                             "names"),
        "realx": (lambda: sk_sointer.RealXExplainer(k=2, predictor_epochs=1, max_epochs=2,
                                                   batch_size=64, random_state=0,
                                                   device="cpu"), "model"),
        "meed": (lambda: sk_sointer.MEEDExplainer(k=1, **SMALL), "model"),
        "hardkuma": (lambda: sk_sointer.HardKumaExplainer(selection_rate=0.4, predictor_epochs=1,
                                                         max_epochs=2, batch_size=64,
                                                         random_state=0, device="cpu"),
                     "outputs"),
        "sointer": (lambda: sk_sointer.SOInterExplainer(
            target=1, k=2, energy=sk_sointer.EnergyNet(max_epochs=1), energy_masks=1,
            refine=None, **SMALL), MultiOutputClassifier),
        "evalx": (lambda: metrics.EvalXEvaluator(baseline="zero", **SMALL), "model"),
    }


@pytest.fixture(scope="module")
def inspected(data, tmp_path_factory):
    """Every class save supports, fitted briefly and saved: {case: (estimator, path)}."""
    pd = pytest.importorskip("pandas")  # the test extra

    X, y = data
    folder = tmp_path_factory.mktemp("inspect")
    model = LogisticRegression().fit(X, y)
    saved = {}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    for case, (make, fit_on) in _inspected_cases().items():
        estimator = make()
        if fit_on == "names":
            estimator.fit(pd.DataFrame(X, columns=NAMES), X[:, 0] + X[:, 2])
        elif fit_on == "model":
            estimator.fit(X, black_box=model)
        elif fit_on == "outputs":
            estimator.fit(X, y)
        else:
            labels = np.c_[y, X[:, 2] > 0].astype(int)
            estimator.fit(X, black_box=fit_on(LogisticRegression()).fit(X, labels))
        path = str(folder / f"{case}.safetensors")
        sk_sointer.save(estimator, path)
        saved[case] = (estimator, path)
    torch.set_num_threads(threads)
    return saved


def inspect_json(capsys, path):
    assert main(["inspect", path, "--json"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return json.loads(captured.out)


@needs_persist
@pytest.mark.parametrize("case", list(_inspected_cases()))
def test_inspect_json_gives_what_the_saved_estimator_has(case, inspected, capsys):
    from safetensors.torch import load_file

    estimator, path = inspected[case]
    summary = inspect_json(capsys, path)
    assert summary["class"] == type(estimator).__name__
    assert summary["format_version"] == 1
    assert summary["sk_sointer_version"] == sk_sointer.__version__
    assert summary["version_differs"] is False
    assert summary["black_box"]["stored"] is False
    assert summary["selection"]["k"] == getattr(estimator, "k_", None)
    if case == "hardkuma":
        assert summary["selection"]["selection_rate"] == estimator.selection_rate_
    data = summary["data"]
    assert data["n_features"] == estimator.n_features_in_ == N_FEATURES
    assert data["n_groups"] == estimator.masker_.n_groups_
    assert data["tokens"] is False and data["n_tokens"] is None
    spec = estimator.output_spec_
    outputs = summary["outputs"]
    assert outputs["kinds"] == list(spec.kinds)
    assert outputs["n_outputs"] == len(spec.blocks)
    assert outputs["n_columns"] == spec.n_columns
    assert outputs["target"] == spec.target
    # The parameters: every one, plain JSON, the non-default ones named.
    params = estimator.get_params(deep=False)
    assert set(summary["params"]) == set(params)
    assert summary["params"]["random_state"] == 0
    assert summary["params"]["device"] == "cpu"
    assert {"random_state", "device"} <= set(summary["non_default_params"])
    assert "verbose" not in summary["non_default_params"]
    # The tensors: as many, as large, as the file holds, each part's shapes as the nets'.
    tensors = load_file(path)
    assert summary["tensors"]["count"] == len(tensors)
    assert summary["tensors"]["parameters"] == sum(value.numel() for value in tensors.values())
    assert summary["tensors"]["bytes"] == sum(value.numel() * value.element_size()
                                              for value in tensors.values())
    parts = {part["prefix"]: part for part in summary["tensors"]["parts"]}
    assert sum(part["count"] for part in parts.values()) == len(tensors)
    selector = parts["net_.module_"]
    assert selector["role"] == ("evaluator" if case == "evalx" else "selector")
    assert selector["tensors"] == {
        name: {"shape": list(value.shape), "dtype": selector["tensors"][name]["dtype"]}
        for name, value in estimator.net_.module_.state_dict().items()
    }
    assert parts["masker_"]["tensors"]["mean_"] == {"shape": [N_FEATURES], "dtype": "F64"}


@needs_persist
def test_inspect_json_details_of_groups_names_classes_and_the_target(inspected, capsys):
    l2x = inspect_json(capsys, inspected["l2x-groups-names"][1])
    assert l2x["data"]["n_groups"] == 3
    assert l2x["data"]["feature_names"] == NAMES
    assert l2x["params"]["groups"] == GROUPS.tolist()
    assert l2x["params"]["selector"]["factory"] == "MLP"
    assert l2x["params"]["selector"]["params"]["hidden_units"] == [100, 100]
    assert set(l2x["non_default_params"]) == {"k", "groups", "max_epochs", "batch_size",
                                              "random_state", "device"}
    assert l2x["outputs"]["kinds"] == ["real"] and l2x["outputs"]["classes"] is None
    sointer = inspect_json(capsys, inspected["sointer"][1])
    assert sointer["outputs"]["classes"] == [[0, 1], [0, 1]]
    assert sointer["outputs"]["target"] == 1
    assert sointer["params"]["energy"]["factory"] == "EnergyNet"
    roles = [part["role"] for part in sointer["tensors"]["parts"]]
    assert roles == ["selector", "energy network", "masker (feature means, scales and baseline)",
                     "output standardisation"]
    energy = inspected["sointer"][0].energy_net_.net_.module_
    assert sointer["tensors"]["parts"][1]["count"] == len(energy.state_dict())


@needs_persist
def test_inspect_prints_a_readable_summary(inspected, capsys):
    estimator, path = inspected["sointer"]
    assert main(["inspect", path]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == (f"{path}: a fitted SOInterExplainer saved by sk_sointer.save "
                        "(format version 1)")
    assert f"written by sk_sointer {sk_sointer.__version__} (the installed version)" in out
    assert "Data: 5 features" in lines
    assert "Selection: k = 2" in lines
    assert "Outputs: 2 outputs (4 columns): categorical, categorical" in lines
    assert "  target: output 1 (the one explained)" in lines
    assert any(line.startswith("Black box: not stored") for line in lines)
    # The parameters set are listed first, marked; the defaults after.
    params = [line for line in lines if line.startswith(("  * ", "    ")) and " = " in line]
    marked = [line.split()[1] for line in params if line.startswith("  * ")]
    assert set(marked) == {"target", "k", "energy", "energy_masks", "refine", "max_epochs",
                           "batch_size", "random_state", "device"}
    assert params[:len(marked)] == [line for line in params if line.startswith("  * ")]
    assert "  * target = 1" in lines
    from safetensors.torch import load_file

    tensors = load_file(path)
    total = sum(value.numel() for value in tensors.values())
    assert f"Tensors: {len(tensors)}, {total:,} values, " in out
    weight = estimator.net_.module_.state_dict()["0.weight"]
    assert f"    0.weight: ({weight.shape[0]}, {weight.shape[1]}) F32" in lines
    l2x = inspected["l2x-groups-names"][1]
    assert main(["inspect", l2x]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "Data: 5 features in 3 groups" in lines
    assert "  feature names: a, b, c, d, e" in lines


@needs_persist
def test_inspect_builds_nothing_and_reads_no_tensor_data(inspected, capsys, monkeypatch):
    import functools

    import safetensors

    from sk_sointer import _persist

    def refuse(*args, **kwargs):
        raise AssertionError("inspect built or read something")

    monkeypatch.setattr(torch.nn.Module, "__init__", refuse)
    for cls in _persist._public_estimators().values():
        monkeypatch.setattr(cls, "__init__", functools.wraps(cls.__init__)(refuse))
    monkeypatch.setattr(_persist, "load_file", refuse)
    monkeypatch.setattr(_persist, "_small_tensors", refuse)
    opened = []
    real_open = safetensors.safe_open

    class HeaderOnly:
        """safe_open, refusing to read a tensor's data."""

        def __init__(self, *args, **kwargs):
            self._file = real_open(*args, **kwargs)
            opened.append(args[0])

        def __enter__(self):
            self._file.__enter__()
            return self

        def __exit__(self, *exc):
            return self._file.__exit__(*exc)

        def get_tensor(self, name):
            refuse()

        def __getattr__(self, name):
            return getattr(self._file, name)

    monkeypatch.setattr(safetensors, "safe_open", HeaderOnly)
    for estimator, path in inspected.values():
        summary = inspect_json(capsys, path)
        assert summary["class"] == type(estimator).__name__
        assert main(["inspect", path]) == 0
        capsys.readouterr()
    assert len(opened) == 2 * len(inspected)
    # The patches bite: loading would need what inspect does not use.
    with pytest.raises(AssertionError, match="inspect built or read something"):
        sk_sointer.load(inspected["l2x-groups-names"][1])


def _rewritten(path, new_path, edit):
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    with safe_open(path, framework="pt") as file:
        document = json.loads(file.metadata()["sk_sointer"])
    edit(document)
    save_file(load_file(path), new_path, metadata={"sk_sointer": json.dumps(document)})
    return str(new_path)


@needs_persist
def test_inspect_says_when_the_writing_version_differs(inspected, capsys, tmp_path):
    path = _rewritten(inspected["meed"][1], tmp_path / "old.safetensors",
                      lambda doc: doc.update(sk_sointer_version="0.0.1"))
    summary = inspect_json(capsys, path)
    assert summary["sk_sointer_version"] == "0.0.1"
    assert summary["version_differs"] is True
    assert main(["inspect", path]) == 0
    assert (f"Version: written by sk_sointer 0.0.1; installed: {sk_sointer.__version__} "
            "(differs)") in capsys.readouterr().out.splitlines()


@needs_persist
def test_inspect_refuses_what_load_refuses_in_one_line(inspected, capsys, tmp_path):
    from safetensors.torch import save_file

    def one_line(argv):
        err = run_error(capsys, argv)
        assert err.count("\n") == 1 and err.startswith("sk_sointer inspect: error: ")
        return err

    missing = str(tmp_path / "missing.safetensors")
    assert f"No such file: {missing}." in one_line(["inspect", missing])
    assert "is not a file (a folder?)" in one_line(["inspect", str(tmp_path)])
    pickled = tmp_path / "model.pkl"
    pickled.write_bytes(b"\x80\x04\x95 not a safetensors file")
    assert f"{pickled} is not a safetensors file" in one_line(["inspect", str(pickled)])
    foreign = str(tmp_path / "foreign.safetensors")
    save_file({"weight": torch.zeros(2, 2)}, foreign, metadata={"format": "pt"})
    assert "was not written by sk_sointer.save" in one_line(["inspect", foreign, "--json"])
    newer = _rewritten(inspected["meed"][1], tmp_path / "newer.safetensors",
                       lambda doc: doc.update(format_version=2))
    assert "written in format version 2" in one_line(["inspect", newer])
    assert "upgrade sk_sointer" in one_line(["inspect", newer])
    unknown = _rewritten(inspected["meed"][1], tmp_path / "unknown.safetensors",
                         lambda doc: doc.update({"class": "os.system"}))
    assert "estimator class 'os.system' is not one" in one_line(["inspect", unknown])
    broken = _rewritten(inspected["meed"][1], tmp_path / "broken.safetensors",
                        lambda doc: doc.update(output_spec=[1, 2]))
    assert "document is malformed" in one_line(["inspect", broken])


@pytest.mark.parametrize("separator, name", [(";", "';'"), ("\t", "tabs")])
def test_a_file_separated_by_another_character_is_told_so(capsys, tmp_path, model_path, data,
                                                           separator, name):
    path = tmp_path / "data.csv"
    lines = [separator.join(NAMES)] + [separator.join(map(str, row)) for row in data[0]]
    path.write_text("\n".join(lines) + "\n")
    err = run_error(capsys, ["explain", model_path, str(path), "-k", "2", "--out", "m.csv"])
    assert f"seems to separate its values with {name}" in err and "save it with commas" in err


# -- the help and the SOInter demo --------------------------------------------------------


@pytest.mark.parametrize("argv", [["--help"], ["demo", "--help"], ["explain", "--help"],
                                  ["inspect", "--help"], []])
def test_the_help_imports_no_torch(argv):
    script = ("import runpy, sys\n"
              "sys.argv = ['sk_sointer', *sys.argv[1:]]\n"
              "try:\n"
              "    runpy.run_module('sk_sointer', run_name='__main__')\n"
              "except SystemExit as exc:\n"
              "    code = exc.code\n"
              "print('torch imported:', 'torch' in sys.modules, 'exit:', code)\n")
    done = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True,
                          text=True, timeout=120)
    assert done.stdout.rstrip().endswith("torch imported: False exit: 0"), done.stderr
    assert "usage: python -m sk_sointer" in done.stdout


def test_the_helps_defaults_are_the_classes():
    for name, cls in _methods().items():
        defaults = _defaults(cls)
        listed = _HELP_DEFAULTS[name]
        assert {key: defaults[key] for key in listed} == listed, name
        for key in ("predictor_epochs", "selection_rate"):
            assert (key in defaults) == (key in listed), (name, key)


def test_demo_sointer_shows_sointer_and_l2x_on_one_output(capsys):
    argv = ["demo", "--method", "sointer", "--dataset", "E1", "--n-samples", "600",
            "--max-epochs", "2", "--max-queries", "1000"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "Explaining output y2 of the 300 held-out rows" in out
    for name in ("SOInterExplainer", "L2XExplainer", "random 4-feature masks"):
        line = next(line for line in out.splitlines() if line.strip().startswith(name))
        accuracy = float(line.split("post-hoc accuracy")[1].split()[0])
        assert 0 <= accuracy <= 1


def test_demo_sointer_refuses_single_output_sets(capsys):
    assert main(["demo", "--method", "sointer", "--dataset", "xor"]) == 2
    assert "structured-output sets E1, E2" in capsys.readouterr().err
