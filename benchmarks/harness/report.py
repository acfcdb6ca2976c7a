"""Results: the machine description, JSON files of records, and the README's RST tables."""

import datetime
import importlib.metadata
import json
import math
import os
import platform
import textwrap
from pathlib import Path

import numpy as np
import sklearn
import torch

import sk_sointer
from sk_sointer._utils import resolve_device

from .data import DATASETS, PROFILES
from .registry import METHODS, peer_packages

RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"

README_START = ".. results-table-start"
README_END = ".. results-table-end"


# Machine description and saving
# ------------------------------


def _cpu_name():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info(device="auto", threads=1):
    """Versions, hardware and date of a run, stored next to its records."""
    device = resolve_device(device)
    info = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "scikit_learn": sklearn.__version__,
        "sk_sointer": sk_sointer.__version__,
        "threads": threads,
        "cpu": _cpu_name(),
        "cpu_count": os.cpu_count(),
        "device": device.type,
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
    }
    for package in peer_packages():
        try:
            info[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            info[package] = None
    return info


def _jsonable(value):
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    if hasattr(value, "get_params"):  # an estimator among a profile's parameters
        return repr(value)
    return value


def save_results(path, records, machine, profile, study=None):
    """Write ``{"machine", "profile", "records"}`` as JSON, atomically (a crash keeps the
    previous complete file); a study's long records also name the ``study``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"machine": machine, "profile": _profile_dict(profile), "records": records}
    if study is not None:
        payload = {"study": study, **payload}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(_jsonable(payload), indent=1, allow_nan=False) + "\n",
                   encoding="utf-8")
    os.replace(tmp, path)


def load_records(path):
    """The records of a results file written by :func:`save_results`."""
    return json.loads(Path(path).read_text(encoding="utf-8"))["records"]


def load_study_results(path, study):
    """The long records, machine and profile of a study's results file; the records of a
    file in the study's former wide format go through ``study.legacy``."""
    from .study import Profile

    payload = json.loads(Path(path).read_text(encoding="utf-8"))
    records = payload["records"]
    if "study" not in payload:
        records = [long for record in records for long in study.legacy(record)]
        # Every former record repeated the values of its data set: keep them once.
        seen = set()
        records = [r for r in records if r["method"] is not None or (
            (r["dataset"], r["metric"]) not in seen and not seen.add((r["dataset"], r["metric"])))]
    return records, payload["machine"], Profile(payload["profile"])


def merge_records(kept, new):
    """``kept`` records not redone in ``new``, then ``new``, in data set order."""
    redone = {(record["dataset"], record["method"]) for record in new}
    merged = [r for r in kept if (r["dataset"], r["method"]) not in redone] + list(new)
    order = {name: i for i, name in enumerate(DATASETS)}
    return sorted(merged, key=lambda record: order.get(record["dataset"], len(order)))


def _profile_dict(profile):
    if isinstance(profile, dict):
        return dict(profile)
    return {key: getattr(profile, key) for key in profile.__dataclass_fields__}


# Reports
# -------

_DASH = "–"


def _pct(value):
    return _DASH if value is None else f"{100 * value:.1f}"


def _num(value, fmt):
    return _DASH if value is None else format(value, fmt)


def _method_cell(record):
    label = record["method_label"]
    if METHODS[record["method"]].amortized:
        label += " (thresholded)" if record["k"] is None else f" (k = {record['k']})"
    return label


def _grid_table(title, header, rows):
    """An RST grid table under a ``table`` directive; a newline in a cell starts a new line."""
    split = [[cell.split("\n") for cell in row] for row in [header, *rows]]
    widths = [max(len(text) for cell in column for text in cell) for column in zip(*split)]

    def border(char):
        return "+" + "+".join(char * (width + 2) for width in widths) + "+"

    def lines(cells):
        height = max(len(cell) for cell in cells)
        padded = [cell + [""] * (height - len(cell)) for cell in cells]
        return ["|" + "|".join(f" {text:<{width}} " for text, width in zip(texts, widths)) + "|"
                for texts in zip(*padded)]

    body = [border("-"), *lines(split[0]), border("=")]
    for cells in split[1:]:
        body += [*lines(cells), border("-")]
    return [f".. table:: {title}", "", *("   " + text for text in body)]


# The cause is in the JSON record; a long message would widen the whole column.
_FAILED = "failed"


def render_rst(records, machine, profile):
    """RST text for the README: a caption, the main table and the encoding-probe table."""
    if isinstance(profile, str):
        profile = PROFILES[profile]
    main = [r for r in records if not DATASETS[r["dataset"]].probe]
    probe = [r for r in records if DATASETS[r["dataset"]].probe]
    threads = f"{machine['threads']} thread" + ("s" if machine["threads"] != 1 else "")
    hardware = machine["gpu"] or f"{machine['cpu']} CPU, {threads}"
    caption = (
        f"Profile ``{profile.name}``: black boxes (MLP 200-200-200) trained on "
        f"{profile.n_black_box or profile.n_train:,} rows, explainers and EVAL-X on "
        f"{profile.n_train:,}, {profile.n_explain:,} explained rows per data set; run on {machine['date'][:10]} "
        f"on {hardware}, torch {machine['torch']}. Median rank: lower is better, the optimum "
        "in parentheses. TPR, FDR, CFSR (control-flow selection rate) and eACC (EVAL-X "
        "accuracy against the sampled labels) in %; eACC (p): the same accuracy in "
        "expectation over the labels (the generator's probability of EVAL-X's class), "
        "free of label noise; eAUROC: EVAL-X's AUROC. Peers select the k largest absolute attributions, with the k of "
        "L2X; IG: integrated gradients. Explain: milliseconds per row. Throughput: time of a bare "
        f"forward pass of the selector over time of ``transform``, on {profile.n_timing:,} "
        "rows (1.0 = no overhead)."
    )
    lines = [*textwrap.wrap(caption, width=92), ""]
    header = ["Data set", "Method", "Median rank\n(optimum)", "TPR %", "FDR %", "CFSR %",
              "eACC %", "eACC (p)\n%", "eAUROC", "Fit s", "Explain\nms/row", "Throughput"]
    rows = []
    for i, r in enumerate(main):
        # The data set is named on the first of its rows only.
        dataset = r["dataset_label"] if i == 0 or main[i - 1]["dataset"] != r["dataset"] else ""
        if r["error"] is not None:
            rows.append([dataset, _method_cell(r), _FAILED, *[_DASH] * 9])
            continue
        rows.append([
            dataset,
            _method_cell(r),
            f"{r['median_rank']:.2f} ({r['median_rank_optimum']:.2f})",
            _pct(r["tpr"]),
            _pct(r["fdr"]),
            _pct(r["cfsr"]),
            _pct(r["eacc"]),
            _pct(r.get("eacc_expected")),
            _num(r["eauroc"], ".3f"),
            _num(r["fit_s"], ".3g"),
            _num(r["explain_ms_per_row"], ".3g"),
            _num(r["throughput_ratio"], ".2f"),
        ])
    lines += _grid_table("Synthetic data sets", header, rows)
    spread = [r for r in main if r.get("median_rank_seeds")]
    if spread:
        lines += ["", "Median rank over explainer seeds (the table shows seed 0):", ""]
        for r in spread:
            ranks = r["median_rank_seeds"]
            lines.append(
                f"- {r['method_label']} on {r['dataset_label']}: mean {np.mean(ranks):.2f} "
                f"over {len(ranks)} seeds ({', '.join(f'{rank:.2f}' for rank in ranks)})"
            )
    if probe:
        probe_caption = (
            "Encoding probe: XOR with k = 1. One feature alone says nothing about the XOR "
            "label, so an honest 1-feature explanation leaves an evaluator trained on random "
            "masks (EVAL-X) near 50 %; a method's own predictor that does better reads the "
            "label from *which* feature was chosen (REAL-X, Lemma 1)."
        )
        lines += ["", *textwrap.wrap(probe_caption, width=92), ""]
        header = ["Method", "Own predictor\nacc. %", "Own predictor\n= black box %", "eACC %",
                  "Post-hoc\nacc. %", "TPR %"]
        rows = []
        for r in probe:
            if r["error"] is not None:
                rows.append([_method_cell(r), _FAILED, *[_DASH] * 4])
                continue
            rows.append([_method_cell(r), _pct(r["own_acc"]), _pct(r["own_agreement"]),
                         _pct(r["eacc"]), _pct(r["posthoc_acc"]), _pct(r["tpr"])])
        lines += _grid_table("Encoding probe (XOR, k = 1)", header, rows)
    return "\n".join(lines) + "\n"


def replace_between_markers(text, block):
    """``text`` with the lines between README_START and README_END replaced by ``block``."""
    lines = text.splitlines(keepends=True)
    stripped = [line.rstrip("\r\n") for line in lines]
    try:
        start = stripped.index(README_START)
        end = stripped.index(README_END, start + 1)
    except ValueError:
        raise ValueError(
            f"The README needs a line {README_START!r} followed by a line {README_END!r}."
        ) from None
    return "".join(lines[: start + 1]) + "\n" + block.rstrip("\n") + "\n\n" + "".join(lines[end:])


def update_readme(path, block):
    path = Path(path)
    path.write_text(replace_between_markers(path.read_text(encoding="utf-8"), block),
                    encoding="utf-8")



# The one renderer of studies (harness/study.py)
# ----------------------------------------------


def _spread(values, kind):
    if kind == "range":
        return float(np.ptp(values))
    return float(np.std(values, ddof=1 if kind == "sd" else 0))


def render(study, records, machine, profile):
    """RST text of a study's records: its caption, then each of its tables (a pivot of the
    records, mean ± spread over seeds in every cell)."""
    lines = [*textwrap.wrap(study.caption(records, machine, profile), width=92), ""]
    for table in study.tables:
        lines += [*_pivot(study, table, records), ""]
    if study.notes is not None:
        lines += study.notes(records, machine, profile)
    return "\n".join(lines)


def _pivot(study, table, records):
    wanted = {"error", *(table.metrics if table.columns == "metric" else table.metrics[:1])}
    chosen = [r for r in records if r["method"] is not None and r["metric"] in wanted
              and all(r.get(key) == value for key, value in table.where.items())]
    if not chosen:
        return []
    by_metric = table.columns == "metric"
    columns = list(table.metrics) if by_metric else list(dict.fromkeys(
        r[table.columns] for r in chosen))
    cells = {}
    for r in chosen:
        row = tuple(r.get(key) for key in table.rows)
        column = r["metric"] if by_metric else r[table.columns]
        cells.setdefault(row, {}).setdefault(column, []).append(r)
        if r["metric"] == "error" and by_metric:
            for metric in columns:
                cells[row].setdefault(metric, []).append(r)
    body, previous = [], None
    for row, by_column in cells.items():
        shown = [_row_label(study, key, value) for key, value in zip(table.rows, row)]
        if previous is not None and row[0] == previous:
            shown[0] = ""
        previous = row[0]
        body.append([*shown, *[_format_cell(study, by_column.get(column, []),
                                            column if by_metric else table.metrics[0])
                               for column in columns]])
    header = [table.labels.get(key, _ROW_HEADERS.get(key, key)) for key in table.rows]
    header += ([table.labels.get(metric, _metric_header(study, metric)) for metric in columns]
               if by_metric
               else [study.label(column) for column in columns])
    return _grid_table(table.title, header, body)


_ROW_HEADERS = {"dataset": "Data set", "method": "Method"}


def _row_label(study, key, value):
    if key == "method":
        return study.label(value)
    if key == "dataset":
        return study.dataset_labels.get(value, str(value))
    if value is None:
        return _DASH
    if key in study.metrics:
        metric = study.metrics[key]
        return format(metric.scale * value, metric.fmt)
    return str(value)


def _metric_header(study, name):
    metric = study.metrics[name]
    return metric.label + (f"\n{metric.unit}" if metric.unit else "")


def _format_cell(study, records, name):
    if any(r["metric"] == "error" for r in records):
        return _FAILED
    values = [r["value"] for r in records if r["metric"] == name and r["value"] is not None]
    if not values:
        return _DASH
    metric = study.metrics[name]
    text = format(metric.scale * float(np.mean(values)), metric.fmt)
    if len(set(values)) > 1:
        spread = _spread(values, study.spread)
        text += " ± " + format(metric.scale * spread, metric.fmt.lstrip("+"))
    return text
