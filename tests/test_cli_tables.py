"""The command line on tables as users have them: ``explain pipeline.joblib table.csv`` with
text columns and empty cells, run in-process."""

import csv
import re
import warnings

import joblib
import numpy as np
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler

from sk_sointer._cli import main

pd = pytest.importorskip("pandas")

N_ROWS = 160
COLUMNS = ["age", "income", "city", "grade", "debt"]
NUMBERS, TEXTS = ["age", "income", "debt"], ["city", "grade"]
FAST = ["--max-epochs", "2", "--max-queries", "2000"]


def mixed_frame(n_rows=N_ROWS, seed=0):
    """Numbers, a text column, a category column and empty cells; the model's answer
    depends on income and grade."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "age": rng.integers(20, 70, n_rows).astype(float),
        "income": rng.normal(50, 20, n_rows).round(1),
        "city": rng.choice(["paris", "lyon", "nice"], n_rows, p=[0.5, 0.3, 0.2]),
        "grade": pd.Categorical(rng.choice(["A", "B", "C", "D"], n_rows,
                                           p=[0.4, 0.3, 0.2, 0.1])),
        "debt": rng.normal(10, 5, n_rows).round(2),
    })
    frame.loc[rng.random(n_rows) < 0.15, "income"] = np.nan
    frame.loc[rng.random(n_rows) < 0.1, "city"] = np.nan
    return frame


def answers(frame):
    return ((frame["income"].fillna(50) > 60) | (frame["grade"] == "D")).astype(int)


def encoder(numbers=NUMBERS, texts=TEXTS):
    return ColumnTransformer([
        ("numbers", make_pipeline(SimpleImputer(), StandardScaler()), numbers),
        ("texts", make_pipeline(SimpleImputer(strategy="most_frequent"),
                                OneHotEncoder(handle_unknown="ignore")), texts),
    ])


def warn_and_pass(X):
    warnings.warn("the encoder\nsays so", UserWarning)
    return X


@pytest.fixture(scope="module")
def frame():
    return mixed_frame()


@pytest.fixture(scope="module")
def pipe(frame):
    return Pipeline([("encode", encoder()), ("model", LogisticRegression())]).fit(
        frame, answers(frame))


@pytest.fixture
def files(tmp_path, frame, pipe):
    model, table = tmp_path / "pipe.joblib", tmp_path / "table.csv"
    joblib.dump(pipe, model)
    frame.to_csv(table, index=False)
    return str(model), str(table)


def read_rows(path):
    with open(path, newline="") as handle:
        return list(csv.reader(handle))


def run_error(capsys, argv, code=2):
    assert main(argv) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("sk_sointer ")]
    assert len(lines) == 1 and lines[0].startswith("sk_sointer explain: error: "), err
    return lines[0]


def kept_filled(frame, masks):
    """The frame with each row's left-out columns at the explainer's fill: the training
    mean of a number column (over its cells that are not empty), the most frequent value
    of a text or category column."""
    filled = frame.copy()
    for j, name in enumerate(frame.columns):
        column = frame[name]
        fill = column.mean() if name in NUMBERS else column.value_counts().index[0]
        filled.loc[masks[:, j] == 0, name] = fill
    return filled


def test_a_pipeline_explains_the_raw_table_under_its_header(capsys, tmp_path, files, frame,
                                                           pipe):
    model, table = files
    out = tmp_path / "masks.csv"
    argv = ["explain", model, table, "-k", "2", "--out", str(out), "--check", *FAST]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    rows = read_rows(out)
    assert rows[0] == [*COLUMNS, "holds"]
    written = np.array(rows[1:], dtype=int)
    masks, holds = written[:, :-1], written[:, -1]
    assert masks.shape == (N_ROWS, len(COLUMNS)) and set(np.unique(masks)) <= {0, 1}
    np.testing.assert_array_equal(masks.sum(axis=1), 2)
    # 'holds' is the pipeline's own verdict on each row, in the file's order, with the
    # left-out columns filled: the masks are the table's columns, row by row.
    expected = pipe.predict(kept_filled(frame, masks)) == pipe.predict(frame)
    np.testing.assert_array_equal(holds, expected)
    assert f"Wrote {N_ROWS} masks (2 of 5 columns per row) to {out}" in printed
    # The rows that hold by the model's answer first, then over all rows.
    answer = pipe.predict(frame)
    by_answer = " and ".join(f"{label} {holds[answer == label].mean():.1%}"
                             for label in np.unique(answer))
    assert (f"by the model's answer on the full row, {by_answer} of the masked rows keep it "
            f"({holds.mean():.1%} of all rows)") in printed
    assert "random 2-column masks" in printed


def test_reasons_rank_each_rows_kept_columns_with_its_values(capsys, tmp_path, files, frame):
    model, table = files
    out, reasons_path = tmp_path / "masks.csv", tmp_path / "reasons.csv"
    argv = ["explain", model, table, "-k", "3", "--out", str(out), "--reasons",
            str(reasons_path), *FAST]
    assert main(argv) == 0
    assert f"{3 * N_ROWS:,} reasons to {reasons_path}" in capsys.readouterr().out
    masks = np.array(read_rows(out)[1:], dtype=int)
    reasons = pd.read_csv(reasons_path, keep_default_na=False, na_values=[""])
    assert list(reasons.columns) == ["row", "rank", "column", "value", "effect", "direction",
                                     "by"]
    assert list(reasons["row"].unique()) == list(range(N_ROWS))  # the file's order
    assert set(reasons["by"]) == {"model"}
    for i, rows in reasons.groupby("row"):
        assert list(rows["rank"]) == [1, 2, 3]
        # The kept columns, by name, ranked by the size of their effect.
        assert set(rows["column"]) == {COLUMNS[j] for j in np.flatnonzero(masks[i])}
        effects = np.abs(rows["effect"].to_numpy())
        assert np.all(np.diff(effects) <= 1e-12)
        for name, value in zip(rows["column"], rows["value"]):
            cell = frame.loc[i, name]
            if pd.isna(cell):
                assert pd.isna(value)
            elif name in NUMBERS:
                assert float(value) == pytest.approx(cell)
            else:
                assert str(value) == cell
    # A pushing column says which way.
    signs = np.sign(reasons["effect"])
    assert set(reasons.loc[signs > 0, "direction"]) <= {"for"}
    assert set(reasons.loc[signs < 0, "direction"]) <= {"against"}


def test_scores_and_repair_carry_the_tables_header(capsys, tmp_path, files):
    model, table = files
    out, scores = tmp_path / "masks.csv", tmp_path / "scores.csv"
    argv = ["explain", model, table, "-k", "1", "--out", str(out), "--scores", str(scores),
            "--repair", *FAST]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert read_rows(out)[0] == [*COLUMNS, "holds"]
    score_rows = read_rows(scores)
    assert score_rows[0] == COLUMNS and len(score_rows) == N_ROWS + 1
    assert np.isfinite(np.array(score_rows[1:], dtype=float)).all()
    assert "rows that failed the check repaired" in printed


def test_without_a_header_the_columns_take_the_models_names(capsys, tmp_path, files, frame):
    model, _ = files
    table = tmp_path / "plain.csv"
    frame.to_csv(table, index=False, header=False)
    out = tmp_path / "masks.csv"
    argv = ["explain", model, str(table), "-k", "2", "--no-header", "--out", str(out), *FAST]
    assert main(argv) == 0
    rows = read_rows(out)
    assert len(rows) == N_ROWS  # no header written, every row explained
    np.testing.assert_array_equal(np.array(rows, dtype=int).sum(axis=1), 2)


def test_a_model_of_numbers_that_takes_empty_cells(capsys, tmp_path, frame):
    # Fitted on an array: it takes no frame of its own accord, but answers on empty cells.
    numbers = frame[NUMBERS]
    model = HistGradientBoostingClassifier(max_iter=30).fit(numbers.to_numpy(),
                                                            answers(frame))
    model_path, table = tmp_path / "hgb.joblib", tmp_path / "numbers.csv"
    joblib.dump(model, model_path)
    numbers.to_csv(table, index=False)
    out = tmp_path / "masks.csv"
    argv = ["explain", str(model_path), str(table), "-k", "1", "--out", str(out), *FAST]
    assert main(argv) == 0
    assert read_rows(out)[0] == NUMBERS
    assert f"Wrote {N_ROWS} masks (1 of 3 columns per row)" in capsys.readouterr().out


@pytest.mark.parametrize("cell_kind", ["text", "empty"])
def test_a_model_of_numbers_refuses_text_and_empty_cells_saying_what_to_do(
        capsys, tmp_path, frame, cell_kind):
    numbers = frame[NUMBERS].fillna(0.0)
    model = LogisticRegression().fit(numbers.to_numpy(), answers(frame))
    model_path, table = tmp_path / "lr.joblib", tmp_path / "table.csv"
    joblib.dump(model, model_path)
    rows = numbers.copy().astype(object)
    rows.iloc[2, 1] = "high" if cell_kind == "text" else np.nan
    rows.to_csv(table, index=False)
    line = run_error(capsys, ["explain", str(model_path), str(table), "-k", "1",
                              "--out", str(tmp_path / "m.csv"), *FAST])
    cell = "'high'" if cell_kind == "text" else "''"
    what = "text" if cell_kind == "text" else "empty cells"
    assert f"row 4, column 2 ('income') of {str(table)!r} is not a number: {cell}" in line
    assert f"does not take a table with {what} (it raised ValueError: " in line
    assert "a Pipeline with a ColumnTransformer" in line
    assert "https://" not in line  # scikit-learn's advice after its first sentence is cut


def test_columns_other_than_the_models_are_named(capsys, tmp_path, files, frame):
    model, _ = files
    table = tmp_path / "other.csv"
    frame.drop(columns=["grade", "city"]).assign(zip=75000).to_csv(table, index=False)
    line = run_error(capsys, ["explain", model, str(table), "-k", "2", "--out", "m.csv"])
    assert (f"{str(table)!r} lacks the model's columns 'city', 'grade' and has a column the "
            "model was not fitted on: 'zip'; give the CSV file the model's 5 columns, named as "
            "in the model: 'age', 'income', 'city', 'grade', 'debt'.") in line


def test_columns_in_another_order_are_refused_with_the_models_order(capsys, tmp_path, files,
                                                                     frame):
    model, _ = files
    table = tmp_path / "reordered.csv"
    frame[["income", *[c for c in COLUMNS if c != "income"]]].to_csv(table, index=False)
    line = run_error(capsys, ["explain", model, str(table), "-k", "2", "--out", "m.csv"])
    assert "column 1 is 'income'" in line and "'age' in the model" in line
    assert "in the model's order: 'age', 'income', 'city', 'grade', 'debt'." in line


def test_a_baseline_other_than_the_mean_is_refused_for_a_table(capsys, files):
    model, table = files
    line = run_error(capsys, ["explain", model, table, "-k", "2", "--baseline", "zero",
                              "--out", "m.csv"])
    assert "--baseline zero fills numbers only" in line and "leave --baseline out" in line


def test_a_ragged_row_of_a_table_is_named(capsys, tmp_path, files):
    model, table = files
    lines = open(table).read().splitlines()
    lines[6] += ",extra"
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("\n".join(lines) + "\n")
    line = run_error(capsys, ["explain", model, str(ragged), "-k", "2", "--out", "m.csv"])
    assert "row 7 of" in line and "has 6 cells; expected 5" in line


def test_warnings_print_as_one_line_without_a_source_path(capsys, tmp_path, frame):
    pipe = Pipeline([("warn", FunctionTransformer(warn_and_pass)), ("encode", encoder()),
                     ("model", LogisticRegression())])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe.fit(frame, answers(frame))
    model, table = tmp_path / "pipe.joblib", tmp_path / "table.csv"
    joblib.dump(pipe, model)
    frame.to_csv(table, index=False)
    argv = ["explain", str(model), str(table), "-k", "2", "--out", str(tmp_path / "m.csv"),
            *FAST]
    assert main(argv) == 0
    err = capsys.readouterr().err
    # Once, on one line, however often the model is asked.
    assert err.count("sk_sointer explain: warning: the encoder says so\n") == 1, err
    assert not re.search(r"\.py:\d+", err), err
    assert "warnings.warn" not in err
