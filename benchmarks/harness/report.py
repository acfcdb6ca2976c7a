"""The machine description, the JSON results files and the one renderer: the records pivoted
into the RST tables of doc/benchmarks.rst, mean ± spread over seeds."""

import datetime
import importlib.metadata
import itertools
import json
import math
import os
import platform
import textwrap
from pathlib import Path

import numpy as np
import sklearn
import torch

from sk_sointer import __version__ as sk_sointer_version

from .registry import peer_packages
from .study import Profile, resolve_device

RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"
TEMPLATES_DIR = Path(__file__).resolve().parents[1] / "templates"
README_START, README_END = ".. results-table-start", ".. results-table-end"
_DASH = "–"
_ROW_HEADERS = {"dataset": "Data set", "method": "Method"}


def _version(package):
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def machine_info(device="auto", threads=1):
    """Versions, hardware and date of a run, stored next to its records."""
    device = resolve_device(device)
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo
                        if line.startswith("model name")), None)
    except OSError:
        cpu = None
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "scikit_learn": sklearn.__version__,
        "sk_sointer": sk_sointer_version,
        "threads": threads,
        "cpu": cpu or platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "device": device.type,
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        **{package: _version(package) for package in peer_packages()},
    }


def hardware(machine):
    """The GPU of a run, or its CPU and threads, for a caption."""
    threads = f"{machine['threads']} thread" + ("s" if machine["threads"] != 1 else "")
    return machine["gpu"] or f"{machine['cpu']} CPU, {threads}"


def text(study, block, **fields):
    """The paragraph after the line ``.. block`` of ``benchmarks/templates/<study>.rst`` (up
    to the next such line, joined by spaces), its placeholders filled."""
    blocks, name = {}, None
    for line in (TEMPLATES_DIR / f"{study}.rst").read_text(encoding="utf-8").splitlines():
        if line.startswith(".. ") and line[3:].isidentifier():
            name = line[3:]
        elif name is not None and line.strip():
            blocks[name] = f"{blocks[name]} {line}" if name in blocks else line
    return blocks[block].format(**fields)


def wrap(text):
    """Caption and note lines: at most 92 characters, broken between words only."""
    return textwrap.wrap(text, width=92, break_on_hyphens=False)


def _jsonable(value):
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return repr(value) if hasattr(value, "get_params") else value  # an estimator: its repr


def save_results(path, records, machine, profile, study):
    """Write the study, machine, profile and records as JSON, a record a line, atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    head = {"study": study, "machine": machine, "profile": dict(profile), "records": []}
    text = json.dumps(_jsonable(head), indent=1, allow_nan=False)
    lines = ",\n".join("  " + json.dumps(_jsonable(r), allow_nan=False) for r in records)
    text = text[: text.rindex("[]")] + ("[\n" + lines + "\n ]" if records else "[]") + "\n}"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, path)


def load_study_results(path):
    """The long records, machine and profile of a study's results file."""
    payload = json.loads(Path(path).read_text(encoding="utf-8"))
    return payload["records"], payload["machine"], Profile(payload["profile"])


def grid_table(title, header, rows):
    """An RST grid table under a ``table`` directive; a newline in a cell starts a new line."""
    split = [[cell.split("\n") for cell in row] for row in [header, *rows]]
    widths = [max(len(text) for cell in column for text in cell) for column in zip(*split)]
    rule = "+" + "+".join("-" * (width + 2) for width in widths) + "+"
    body = [rule]
    for i, cells in enumerate(split):
        body += ["|" + "|".join(f" {text:<{width}} " for text, width in zip(texts, widths)) + "|"
                 for texts in itertools.zip_longest(*cells, fillvalue="")]
        body.append(rule.replace("-", "=") if i == 0 else rule)  # "=" under the header
    return [f".. table:: {title}", "", *("   " + text for text in body)]


def replace_between_markers(text, block, start_marker=README_START, end_marker=README_END,
                            section=None):
    """``text`` with ``block`` between the marker lines, which go at the end of the section
    titled ``section`` (if given) where ``text`` has none."""
    lines = text.splitlines(keepends=True)
    stripped = [line.rstrip("\r\n") for line in lines]
    if section is not None and start_marker not in stripped:
        # Titles: text underlined by one punctuation mark at least as long.
        titles = [i for i, (title, under) in enumerate(zip(stripped, stripped[1:]))
                  if title.strip() and not title.startswith(" ") and len(under) >= len(title)
                  and len(set(under)) == 1 and under[0] in "=-~^\"'`#*+"]
        at = next((i for i in titles if stripped[i].strip() == section), None)
        if at is None:
            raise ValueError(f"The README has no {start_marker!r} marker and no {section!r} "
                             "section to add it to.")
        end = next((i for i in titles if i > at), len(lines))
        rest = "".join(lines[end:])
        text = ("".join(lines[:end]).rstrip("\n") + f"\n\n{start_marker}\n{end_marker}\n"
                + ("\n" + rest if rest else ""))
        return replace_between_markers(text, block, start_marker, end_marker)
    try:
        start = stripped.index(start_marker)
        end = stripped.index(end_marker, start + 1)
    except ValueError:
        raise ValueError(f"The README needs a line {start_marker!r} followed by a line "
                         f"{end_marker!r}.") from None
    return "".join(lines[: start + 1]) + "\n" + block.rstrip("\n") + "\n\n" + "".join(lines[end:])


def update_readme(path, block, start_marker=README_START, end_marker=README_END,
                  section=None):
    path = Path(path)
    path.write_text(replace_between_markers(path.read_text(encoding="utf-8"), block,
                                            start_marker, end_marker, section),
                    encoding="utf-8")


def render(study, records, machine, profile, titles=None):
    """RST text of a study's records: its caption, tables and notes, or only the tables of
    ``titles``."""
    if study.postprocess is not None:
        records = study.postprocess(records)
    lines = []
    if not titles:
        fields = study.fields(records, machine, profile) if study.fields else {}
        run_on = f"run on {machine['date'][:10]} on {hardware(machine)}, torch {machine['torch']}"
        ran_on = (f"run on {machine.get('date', '?')} on {machine.get('cpu', '?')}, "
                  f"{machine.get('device', '?')}, {machine.get('threads', 1)} thread(s)")
        lines += [*wrap(text(study.name, "caption", profile=profile, machine=machine,
                             run_on=run_on, ran_on=ran_on, date=machine.get("date", "?")[:10],
                             **fields)), ""]
    for table in study.tables:
        if not titles or table.title in titles:
            pivot = _pivot(study, table, records, profile)
            lines += [*pivot, ""] if pivot else []
    if study.notes is not None and not titles:
        lines += study.notes(records, machine, profile)
    return "\n".join(lines)


def _pivot(study, table, records, profile):
    by_metric = table.columns == "metric"
    wanted = {"error", *(table.metrics if by_metric else table.metrics[:1])}
    where = table.where if callable(table.where) else (
        lambda r: all(r.get(key) == value for key, value in table.where.items()))
    of_data = isinstance(table.where, dict) and "method" in table.where
    chosen = [r for r in records if (r["method"] is not None or of_data)
              and r["metric"] in wanted and where(r)]
    if not chosen:
        return []
    columns = list(table.metrics) if by_metric else list(dict.fromkeys(
        r[table.columns] for r in chosen))
    metric_of = {column: column if by_metric else table.metrics[0] for column in columns}
    cells, firsts = {}, {}
    for r in chosen:
        row = tuple(r.get(key) for key in table.rows)
        firsts.setdefault(row, r)
        by_column = cells.setdefault(row, {})
        by_column.setdefault(r["metric"] if by_metric else r[table.columns], []).append(r)
        if r["metric"] == "error" and by_metric:
            for metric in columns:
                by_column.setdefault(metric, []).append(r)
    # A method's cell may depend on the data set (its k there): only in rows of one.
    own_cell = study.method_cell and "dataset" in table.rows
    body, previous = [], None
    for row, by_column in cells.items():
        shown = [study.method_cell(firsts[row]) if key == "method" and own_cell
                 else _row_label(study, key, value) for key, value in zip(table.rows, row)]
        if previous is not None and row[0] == previous:
            shown[0] = ""
        previous = row[0]
        body.append([*shown, *[_format_cell(study, by_column.get(column, []), metric_of[column],
                                            table.spread) for column in columns]])
    if table.mean_row:  # the mean over rows of every column's cell means, all present
        means = []
        for column in columns:
            row_means = [np.mean([r["value"] for r in by_column.get(column, [])
                                  if r["metric"] == metric_of[column] and r["value"] is not None]
                                 or [np.nan]) for by_column in cells.values()]
            means.append(_DASH if np.isnan(row_means).any() else _shown(
                study.metrics[metric_of[column]], float(np.mean(row_means))))
        body.append(["Mean", *[""] * (len(table.rows) - 1), *means])
    header = [table.labels.get(key, _ROW_HEADERS.get(key, key)) for key in table.rows]
    header += ([table.labels.get(name, study.metrics[name].header) for name in columns]
               if by_metric else [study.label(column) for column in columns])
    return grid_table(table.title.format(**profile), header, body)


def _row_label(study, key, value):
    if key == "method":
        return study.label(value)
    if key == "dataset":
        return study.dataset_labels.get(value, str(value))
    if value is None:
        return _DASH
    return _shown(study.metrics[key], value) if key in study.metrics else str(value)


def _format_cell(study, records, name, spread=True):
    if any(r["metric"] == "error" for r in records):
        return "failed"  # the cause is in the record: a long message would widen the column
    values = [r["value"] for r in records if r["metric"] == name and r["value"] is not None]
    if not values:
        return _DASH
    metric = study.metrics[name]
    if metric.cell is not None:
        return metric.cell(values)
    text = _shown(metric, float(np.mean(values)))
    if len(set(values)) > 1 and study.spread and spread:
        text += " ± " + _shown(metric, _spread(values, study.spread), spread=True)
    return text


def _spread(values, kind):
    if kind == "range":
        return float(np.ptp(values))
    return float(np.std(values, ddof=1 if kind == "sd" else 0))


def _shown(metric, value, spread=False):
    """The text of a recorded ``value`` of ``metric`` (a spread has no sign)."""
    value = metric.scale * value
    if callable(metric.fmt):
        return metric.fmt(value)
    return format(value, metric.fmt.lstrip("+") if spread else metric.fmt)
