"""The scale benchmark: what fit and transform cost as tables grow, next to plain torch.

For every table size (rows x features) and every amortized method of the registry, one
record holds:

- fit: seconds of the explainer's ``fit`` and of its anchor (:mod:`.anchor`: the same
  networks and budget as a plain torch loop), and their ratio, the package's overhead;
- transform: seconds of ``transform`` on every row of the table (a host float32 array)
  against a bare forward pass of the selector on a tensor already on the device, and on
  CUDA against copying the host array in, the forward pass and copying the scores out;
- memory: the host memory ``transform`` holds at its peak, measured in a fresh process
  (:mod:`.peak_memory`), against the bytes of its input and output; on CUDA also the
  device's peak.

The rows are N(0, 1) and the explainers are given the outputs directly (the probabilities
of a label that depends on four features), so no black box is trained at any size. The
per-row peers are not run here: their cost per row is read from the synthetic benchmark's
results.
"""

import gc
import json
import os
import pickle
import subprocess
import sys
import tempfile
import textwrap
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from sk_sointer._utils import resolve_device

from . import report
from .anchor import ANCHORS
from .data import DATA_SEED, N_RELEVANT, DatasetSpec, make_rows
from .registry import METHODS, method_names
from .timing import best_times, sync

BENCHMARKS_DIR = Path(__file__).resolve().parents[1]
SYNTHETIC_RESULTS = report.RESULTS_DIR / "synthetic_full.json"

README_START = ".. scale-table-start"
README_END = ".. scale-table-end"
README_SECTION = "Benchmarks"

# Host copies of the table that a cell may hold at once, an estimate: the rows, Masker.fit's
# float64 spread (two), the standardised rows, and transform's scores and masks. A cell that
# needs more than the free memory is skipped rather than sent into swap or the OOM killer.
HOST_COPIES = 6


# What the registry's methods read to choose their k: the four relevant features.
SCALE_DATA = DatasetSpec("scale", "N(0, 1) rows, a label from 4 features", make_rows, {},
                         N_RELEVANT)


# Profiles
# --------


@dataclass(frozen=True)
class ScaleProfile:
    """A grid of table sizes and the training budget of each fit.

    ``epochs`` overrides the explainers' epochs (``max_epochs``, REAL-X's
    ``predictor_epochs``) by registry ``params_key``; every other parameter is the
    package's default. With ``reference_rows`` the epochs are those of a table of that
    many rows, scaled down by ``reference_rows / n_rows`` on larger tables so that every
    fit takes about the same number of optimisation steps; the anchor always gets the
    same epochs as the package.
    """

    name: str
    rows: tuple
    widths: tuple
    epochs: dict = field(default_factory=dict)
    reference_rows: int = None
    fit_repeats: int = 1
    timing_repeats: int = 3

    def budget(self, method, n_rows):
        """``max_epochs`` (and ``predictor_epochs``) of ``method`` on ``n_rows`` rows."""
        defaults = method.estimator().get_params()
        epochs = {name: defaults[name] for name in ("max_epochs", "predictor_epochs")
                  if name in defaults}
        epochs.update(self.epochs.get(method.params_key, {}))
        if self.reference_rows and n_rows > self.reference_rows:
            factor = self.reference_rows / n_rows
            predictor = epochs.get("predictor_epochs")
            if predictor is None:
                epochs["max_epochs"] = max(1, round(epochs["max_epochs"] * factor))
            else:
                total = max(2, round(epochs["max_epochs"] * factor))
                epochs.update(max_epochs=total,
                              predictor_epochs=min(max(1, round(predictor * factor)), total - 1))
        return epochs


PROFILES = {
    "fast": ScaleProfile(
        name="fast",
        rows=(10_000,),
        widths=(10, 100),
        epochs={"l2x": {"max_epochs": 2}, "realx": {"max_epochs": 2, "predictor_epochs": 1}},
        fit_repeats=2,
        timing_repeats=3,
    ),
    # The package's defaults on 10,000 rows (L2X: 1,000 steps of 1,000 rows; REAL-X: 160
    # epochs of 256-row batches, 100 of them predictor-only), the same number of steps on
    # the larger tables.
    "full": ScaleProfile(
        name="full",
        rows=(10_000, 100_000, 1_000_000),
        widths=(10, 100, 1_000),
        reference_rows=10_000,
    ),
}


# The run
# -------

RECORD_FIELDS = (
    "profile", "method", "method_label", "device", "n_rows", "n_features", "k", "budget",
    "n_steps", "anchor_n_steps", "fit_s", "anchor_fit_s", "fit_ratio", "fit_loss",
    "anchor_loss", "fit_timing", "transform_s", "forward_s", "throughput_ratio",
    "copy_forward_s", "gpu_ratio", "transform_timing", "input_bytes", "output_bytes",
    "extra_bytes", "peak_bytes", "memory_ratio", "forward_peak_bytes", "device_peak_bytes",
    "memory_method", "memory_error", "skipped", "error", "traceback",
)


def run_scale(profile, *, methods=None, rows=None, widths=None, device="auto", threads=1,
              on_record=None, log=None):
    """One record (a dict) per (table size, method), for every size of the profile's grid.

    Parameters
    ----------
    profile : ScaleProfile or str
        A profile or a key of :data:`PROFILES`.
    methods : list of str, default=None
        Amortized methods of the registry; all that have an anchor by default.
    rows, widths : list of int, default=None
        Override the profile's grid.
    device : {"auto", "cpu", "cuda"}, default="auto"
        Where the explainers, the anchors and the bare forward passes run.
    threads : int, default=1
        torch and BLAS threads, in this process and in the memory measurement's.
    on_record : callable, default=None
        Called with the list of records so far after each one, e.g. to save progress.
    log : callable, default=None
        Called with one line of progress text at a time.
    """
    if isinstance(profile, str):
        profile = PROFILES[profile]
    log = log or (lambda line: None)
    device = resolve_device(device)
    names = methods or method_names(amortized=True)
    for name in names:
        if name not in ANCHORS:
            log(f"skipping {name}: no anchor in harness/anchor.py")
    methods = [METHODS[name] for name in names if name in ANCHORS]
    records, jobs = [], []
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with threadpool_limits(limits=threads), tempfile.TemporaryDirectory() as tmp:
            warmed = set()
            for n_rows in rows or profile.rows:
                for n_features in widths or profile.widths:
                    cell = [new_record(profile, method, device, n_rows, n_features)
                            for method in methods]
                    short = _memory_shortfall(n_rows, n_features)
                    if short:
                        log(f"{n_rows:,} x {n_features:,}: skipped ({short})")
                        for record in cell:
                            record["skipped"] = short
                    else:
                        X, outputs = make_rows(n_rows, n_features)
                        for method, record in zip(methods, cell):
                            log(f"{n_rows:,} x {n_features:,}: {method.name}")
                            if method.name not in warmed:
                                _warm_up(method, device, X, outputs)
                                warmed.add(method.name)
                            job = run_cell(method, record, profile, device, X, outputs, tmp)
                            if job is not None:
                                jobs.append({**job, "threads": threads, "record": record})
                        del X, outputs
                        _release(device)
                    records += cell
                    if on_record is not None:
                        on_record(records)
            if jobs:
                log(f"peak memory of transform: {len(jobs)} measurement(s) in a fresh process")
                for job, result in zip(jobs, measure_memory(jobs)):
                    add_memory(job["record"], result)
                if on_record is not None:
                    on_record(records)
    finally:
        torch.set_num_threads(previous_threads)
    return records


def new_record(profile, method, device, n_rows, n_features):
    record = dict.fromkeys(RECORD_FIELDS)
    record.update(profile=profile.name, method=method.name, method_label=method.label,
                  device=device.type, n_rows=n_rows, n_features=n_features,
                  k=method.k_for(SCALE_DATA), budget=profile.budget(method, n_rows))
    return record


def build_explainer(method, record, device):
    """The method's explainer at the package's defaults, with the record's k and epochs."""
    return method.estimator(k=record["k"], random_state=0, device=str(device),
                            **record["budget"])


def run_cell(method, record, profile, device, X, outputs, tmp):
    """Fill ``record`` with fit and transform timings; the memory job of the fitted
    explainer, or None when the method failed (the error is in the record)."""
    try:
        explainer = build_explainer(method, record, device)
        record.update(time_fit(method, explainer, X, outputs, device, profile.fit_repeats))
        record.update(time_transform(explainer, X, device, profile.timing_repeats))
        record["input_bytes"] = X.nbytes
        record["output_bytes"] = X.nbytes  # one mask value per feature, in the dtype of X
        path = Path(tmp) / f"{method.name}_{len(X)}_{X.shape[1]}.pkl"
        path.write_bytes(pickle.dumps(explainer))
        return {"explainer": str(path), "n_rows": len(X), "n_features": X.shape[1],
                "seed": DATA_SEED}
    except Exception as exc:  # noqa: BLE001 - one failed cell must not end the run
        record.update(error=f"{type(exc).__name__}: {exc}", traceback=_short_traceback(exc))
        return None


def time_fit(method, explainer, X, outputs, device, repeats):
    """Best-of-``repeats`` seconds of ``fit`` and of the method's anchor, taken in turns."""
    anchor = ANCHORS[method.name]
    anchor_fits = []

    def fit_package():
        explainer.fit(X, outputs)
        sync(device)

    def fit_anchor():
        anchor_fits.append(anchor(explainer, X, outputs, device))
        sync(device)

    fit_s, anchor_s = best_times([fit_package, fit_anchor], repeats, warmup=0)
    history = explainer.net_.history
    return {
        "n_steps": sum(len(epoch["batches"]) for epoch in history),
        "anchor_n_steps": anchor_fits[-1].n_steps,
        "fit_s": fit_s,
        "anchor_fit_s": anchor_s,
        "fit_ratio": fit_s / anchor_s,
        "fit_loss": float(history[-1, "train_loss"]),
        "anchor_loss": anchor_fits[-1].loss,
        "fit_timing": f"best of {repeats}" if repeats > 1 else "single run",
    }


def time_transform(explainer, X, device, repeats):
    """Seconds of ``transform`` and of the bare forward pass (and on CUDA of copy-in,
    forward and copy-out), best of ``repeats`` taken in turns."""
    module = explainer.net_.module_.eval()
    X_device = torch.as_tensor(X, device=device)

    def forward():
        with torch.inference_mode():
            module(X_device)
        sync(device)

    def copy_forward_copy():
        with torch.inference_mode():
            module(torch.as_tensor(X).to(device)).cpu()
        sync(device)

    funcs = [forward, lambda: explainer.transform(X)]
    if device.type == "cuda":
        funcs.append(copy_forward_copy)
    times = best_times(funcs, repeats, warmup=1)
    del X_device
    out = {
        "forward_s": times[0],
        "transform_s": times[1],
        "throughput_ratio": times[0] / times[1],
        "transform_timing": f"best of {repeats}",
    }
    if device.type == "cuda":
        out.update(copy_forward_s=times[2], gpu_ratio=times[2] / times[1])
    return out


def _warm_up(method, device, X, outputs):
    """Fit the package and the anchor once on a few rows, untimed: the first fit of a
    process pays one-time costs (lazy imports, kernel selection) that are no one's
    overhead."""
    rows = slice(0, min(len(X), 512))
    explainer = method.estimator(k=method.k_for(SCALE_DATA), random_state=0,
                                 device=str(device), max_epochs=2)
    if "predictor_epochs" in explainer.get_params():
        explainer.set_params(predictor_epochs=1)
    explainer.fit(X[rows], outputs[rows]).transform(X[rows])
    ANCHORS[method.name](explainer, X[rows], outputs[rows], device)


def measure_memory(jobs):
    """Results of :func:`.peak_memory.measure` for every job, in fresh processes: one for
    all jobs where the peak can be reset between them, else one per job."""
    from .peak_memory import peak_resettable

    batches = [jobs] if peak_resettable() else [[job] for job in jobs]
    results = []
    for batch in batches:
        results += _memory_process(batch)
    return results


def _memory_process(jobs):
    with tempfile.TemporaryDirectory() as tmp:
        jobs_path, results_path = Path(tmp) / "jobs.json", Path(tmp) / "results.json"
        jobs_path.write_text(json.dumps([{key: value for key, value in job.items()
                                          if key != "record"} for job in jobs]))
        path = [str(BENCHMARKS_DIR), str(BENCHMARKS_DIR.parent), os.environ.get("PYTHONPATH")]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
        done = subprocess.run(
            [sys.executable, "-m", "harness.peak_memory", str(jobs_path), str(results_path)],
            env=env, capture_output=True, text=True, check=False,
        )
        if done.returncode != 0:
            tail = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
            return [{"error": f"memory process failed: {tail[0]}"}] * len(jobs)
        return json.loads(results_path.read_text())


def add_memory(record, result):
    """Put one memory measurement into its record, with the peak and its ratio."""
    if "error" in result:
        record["memory_error"] = result["error"]
        return
    # The rows are resident before the call, so the peak that transform needs is the rows
    # plus what it adds; 1.0 would be nothing beyond its input and its output.
    peak = record["input_bytes"] + result["extra_bytes"]
    forward = result["forward_extra_bytes"]
    record.update(extra_bytes=result["extra_bytes"], peak_bytes=peak,
                  memory_ratio=peak / (record["input_bytes"] + record["output_bytes"]),
                  forward_peak_bytes=None if forward is None else record["input_bytes"] + forward,
                  device_peak_bytes=result["device_peak_bytes"],
                  memory_method=result["memory_method"])


def _memory_shortfall(n_rows, n_features):
    """Why a table is too large for this machine's free memory, or ``""``."""
    needed = HOST_COPIES * n_rows * n_features * 4
    available = _available_memory()
    if available is None or needed <= available:
        return ""
    return (f"needs about {needed / 2**30:.0f} GiB of host memory "
            f"({HOST_COPIES} copies of the rows), {available / 2**30:.0f} GiB available")


def _available_memory():
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _release(device):
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def _short_traceback(exc, lines=8):
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return "\n".join(text.rstrip().splitlines()[-lines:])


# The per-row peers, from the synthetic benchmark
# -----------------------------------------------


def peer_costs(path=SYNTHETIC_RESULTS):
    """The per-row peers' milliseconds per explained row, from the synthetic benchmark.

    One entry per peer: the median over the data sets it explained without error, with
    the range, the widths of those data sets and the settings and machine of that run.
    ``None`` when the results file is missing.
    """
    path = Path(path)
    if not path.exists():
        return None
    payload = json.loads(path.read_text(encoding="utf-8"))
    peers = []
    for name in method_names(amortized=False):
        rows = [r for r in payload["records"]
                if r["method"] == name and r["error"] is None and r["explain_ms_per_row"]]
        if not rows:
            continue
        costs = [r["explain_ms_per_row"] for r in rows]
        peers.append({
            "method": name,
            "method_label": METHODS[name].label,
            "ms_per_row": float(np.median(costs)),
            "ms_per_row_range": [float(min(costs)), float(max(costs))],
            "n_datasets": len(rows),
            "n_features": sorted({r["n_features"] for r in rows}),
            "n_explain": rows[0]["n_explain"],
        })
    machine = payload["machine"]
    profile = payload["profile"]
    return {
        "source": str(path.relative_to(BENCHMARKS_DIR.parent)
                      if path.is_relative_to(BENCHMARKS_DIR.parent) else path),
        "date": machine.get("date"),
        "hardware": machine.get("gpu") or machine.get("cpu"),
        "threads": machine.get("threads"),
        "settings": {key: profile.get(key) for key in
                     ("shap_nsamples", "lime_num_samples", "captum_kernel_shap_samples")},
        "methods": peers,
    }


# Results
# -------


def save_results(path, records, machine, profile, peers):
    """Write ``{"machine", "profile", "peers", "records"}`` as strict JSON, atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"machine": machine, "profile": _profile_dict(profile), "peers": peers,
               "records": records}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(report._jsonable(payload), indent=1, allow_nan=False) + "\n",
                   encoding="utf-8")
    os.replace(tmp, path)


def _profile_dict(profile):
    return {key: getattr(profile, key) for key in profile.__dataclass_fields__}


_DASH = "–"


def _num(value, fmt):
    return _DASH if value is None else format(value, fmt)


def _ratio(value):
    # Two decimals, but the two first digits of a ratio far below 1 (0.0017, not 0.00).
    return _DASH if value is None else format(value, ".2f" if value >= 0.1 else ".2g")


def _megabytes(value):
    return _DASH if value is None else f"{value / 1e6:.3g}"


def _steps(record):
    budget = record["budget"]
    epochs = (f"{budget['predictor_epochs']}+{budget['max_epochs'] - budget['predictor_epochs']}"
              if "predictor_epochs" in budget else str(budget["max_epochs"]))
    return _DASH if record["n_steps"] is None else f"{record['n_steps']:,} ({epochs})"


def render_rst(records, machine, profile, peers=None):
    """RST text: a caption, the scale table and, with ``peers``, the per-row peers' costs."""
    if isinstance(profile, str):
        profile = PROFILES[profile]
    cuda = machine["device"] == "cuda"
    threads = f"{machine['threads']} thread" + ("s" if machine["threads"] != 1 else "")
    hardware = f"{machine['gpu']} (CUDA)" if cuda else f"{machine['cpu']} CPU, {threads}"
    fit_timing = {r["fit_timing"] for r in records if r["fit_timing"]}
    caption = (
        f"Scale, profile ``{profile.name}``: run on {machine['date'][:10]} on {hardware}, "
        f"torch {machine['torch']}. Rows N(0, 1); the explainers are fitted on the "
        f"probabilities of a label from {N_RELEVANT} features and keep k = {N_RELEVANT}. "
        "Fit s: ``fit``, and the anchor: the same training as a plain torch loop (same "
        "networks and initial weights, epochs, batch size, optimizer and learning rate; "
        "rows resident on the device, batches by ``torch.randperm``), "
        f"{' / '.join(sorted(fit_timing)) or 'not run'}; Steps: optimisation steps "
        "(epochs; REAL-X: predictor+selector). "
        + (f"Epochs are those of {profile.reference_rows:,} rows, scaled down on larger "
           "tables to about the same number of steps. " if profile.reference_rows else "")
        + "Fit ratio: package over anchor (1.0 = no overhead). Transform: ``transform`` of "
        "every row from a host float32 array; throughput: a bare forward pass of the "
        "selector on a tensor already on the device over ``transform`` (1.0 = no overhead)"
        + ("; GPU ratio: copying the host array in, the forward pass and copying the "
           "scores out, over ``transform``" if cuda else "")
        + ". Peak MB: host memory ``transform`` holds at its peak, its input counted: the "
        "rows plus the rise of resident memory (VmHWM) during the call, in a fresh "
        "process; over input + output (1.0 = nothing beyond them). Forward peak MB: the "
        "same for the bare forward pass, its scores included (on narrow tables the "
        "selector's hidden activations, 100 units a row, outweigh the rows)"
        + ("; GPU MB: ``torch.cuda.max_memory_allocated`` over the call" if cuda else "")
        + "."
    )
    header = ["Method", "Rows", "Features", "Steps", "Fit s", "Anchor s", "Fit ratio",
              "Transform\nms", "Forward\nms", "Through-\nput"]
    if cuda:
        header += ["Copy+fwd\n+copy ms", "GPU\nratio"]
    header += ["Peak MB", "In+out\nMB", "Peak /\n(in+out)", "Forward\npeak MB"]
    if cuda:
        header += ["GPU MB"]
    rows = []
    for r in records:
        if r["skipped"] or r["error"]:
            row = [r["method_label"], f"{r['n_rows']:,}", f"{r['n_features']:,}",
                   "skipped" if r["skipped"] else "failed"]
            rows.append(row + [_DASH] * (len(header) - len(row)))
            continue
        row = [r["method_label"], f"{r['n_rows']:,}", f"{r['n_features']:,}", _steps(r),
               _num(r["fit_s"], ".3g"), _num(r["anchor_fit_s"], ".3g"),
               _ratio(r["fit_ratio"]), _num(1000 * r["transform_s"], ".3g"),
               _num(1000 * r["forward_s"], ".3g"), _ratio(r["throughput_ratio"])]
        if cuda:
            row += [_num(1000 * r["copy_forward_s"], ".3g"), _ratio(r["gpu_ratio"])]
        row += [_megabytes(r["peak_bytes"]),
                _megabytes(r["input_bytes"] + r["output_bytes"]),
                _ratio(r["memory_ratio"]), _megabytes(r["forward_peak_bytes"])]
        if cuda:
            row += [_megabytes(r["device_peak_bytes"])]
        rows.append(row)
    lines = [*textwrap.wrap(caption, width=92), ""]
    lines += report._grid_table("Fit and transform against table size", header, rows)
    skipped = [r for r in records if r["skipped"] or r["error"]]
    if skipped:
        lines += [""]
        lines += [f"- {r['method_label']}, {r['n_rows']:,} x {r['n_features']:,}: "
                  f"{r['skipped'] or r['error']}" for r in skipped]
    if peers:
        lines += ["", *_peers_rst(peers, records)]
    return "\n".join(lines) + "\n"


def _peers_rst(peers, records):
    settings = peers["settings"]
    widths = sorted({w for p in peers["methods"] for w in p["n_features"]})
    caption = (
        f"Per-row peers, from the synthetic benchmark ({peers['source']}, "
        f"{peers['date'][:10]}, {peers['hardware']}, {peers['threads']} thread(s), "
        f"{' and '.join(str(w) for w in widths)} features, {peers['methods'][0]['n_explain']:,} "
        f"rows per data set; KernelSHAP {settings['shap_nsamples']} samples, LIME "
        f"{settings['lime_num_samples']}, captum's KernelSHAP "
        f"{settings['captum_kernel_shap_samples']}): median milliseconds per row over the "
        "data sets, not rerun here, and the hours a million rows would take at that rate. "
        "Next to them, this run's ``transform`` per row on its narrowest table with the "
        "most rows."
    )
    header = ["Method", "ms / row", "Hours per\n1M rows"]
    rows = [[p["method_label"], f"{p['ms_per_row']:.3g}", _hours_per_million(p["ms_per_row"])]
            for p in peers["methods"]]
    done = [r for r in records if r["transform_s"] is not None]
    if done:
        width = min(r["n_features"] for r in done)
        n_rows = max(r["n_rows"] for r in done if r["n_features"] == width)
        for r in done:
            if (r["n_features"], r["n_rows"]) == (width, n_rows):
                per_row = 1000 * r["transform_s"] / n_rows
                rows.append([f"{r['method_label']} ``transform`` (this run, {n_rows:,} x "
                             f"{width})", f"{per_row:.3g}", _hours_per_million(per_row)])
    return [*textwrap.wrap(caption, width=92), "",
            *report._grid_table("Per-row peers (from the synthetic benchmark)", header, rows)]


def _hours_per_million(ms_per_row):
    return f"{ms_per_row * 1e6 / 1e3 / 3600:.3g}"


# The README block
# ----------------


def update_readme(path, block):
    """Put ``block`` between the scale markers of the README at ``path``; where it has no
    markers yet, add them with the block at the end of its Benchmarks section."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    path.write_text(replace_or_insert_block(text, block), encoding="utf-8")


def replace_or_insert_block(text, block):
    """``text`` with ``block`` between :data:`README_START` and :data:`README_END`.

    Without the markers, they are inserted with the block at the end of the
    :data:`README_SECTION` section (before the next title); a ``ValueError`` says so
    when there is no such section.
    """
    lines = text.splitlines(keepends=True)
    stripped = [line.rstrip("\r\n") for line in lines]
    marked = "\n" + block.rstrip("\n") + "\n\n"
    if README_START in stripped:
        start = stripped.index(README_START)
        try:
            end = stripped.index(README_END, start + 1)
        except ValueError:
            raise ValueError(f"The README has a line {README_START!r} but no line "
                             f"{README_END!r} after it.") from None
        return "".join(lines[: start + 1]) + marked + "".join(lines[end:])
    titles = [i for i in range(len(stripped) - 1) if _is_title(stripped, i)]
    section = next((i for i in titles if stripped[i].strip() == README_SECTION), None)
    if section is None:
        raise ValueError(f"The README has no {README_START!r} marker and no "
                         f"{README_SECTION!r} section to add it to.")
    end = next((i for i in titles if i > section), len(lines))
    body = "".join(lines[:end]).rstrip("\n") + "\n\n"
    rest = "".join(lines[end:])
    return body + f"{README_START}\n{marked}{README_END}\n" + ("\n" + rest if rest else "")


def _is_title(lines, i):
    """Whether line ``i`` is a section title: text underlined by one punctuation mark."""
    title, under = lines[i], lines[i + 1]
    return (bool(title.strip()) and not title.startswith(" ") and len(under) >= len(title)
            and len(set(under)) == 1 and under[0] in "=-~^\"'`#*+")
