"""Fit and transform time and peak memory against rows and features, next to plain torch.

A data set is a table size (``"10000x10"``: N(0, 1) rows, a label from four features), a method
an amortized explainer with an anchor (:mod:`..harness.anchor`, the same training as a plain
torch loop). ``transform``'s peak memory is measured in a fresh process (``python -m
benchmarks.studies.scale``); the per-row peers' cost is read from the synthetic results.

    python benchmarks/bench.py scale --profile full    # 10k-1M rows, 10-1,000 features
"""

import argparse
import functools
import gc
import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch
from sklearn.base import clone

from ..harness import report
from ..harness.anchor import ANCHORS
from ..harness.data import N_RELEVANT, make_rows
from ..harness.registry import METHODS, method_names
from ..harness.study import Metric, Study, Table
from ..harness.timing import available_memory, best_times, rise, selector_network, synced

ROOT = Path(__file__).resolve().parents[2]
# The synthetic records whose peers were timed with both cores to themselves.
SYNTHETIC_RESULTS = "benchmarks/results/synthetic_full_paper.json"
# Host copies of the table a size may hold at once (the rows, Masker.fit's float64 spread,
# the standardised rows, the scores and masks): a size needing more memory is skipped.
HOST_COPIES = 6

# ``epochs`` by registry ``params_key``; with ``reference_rows`` the full profile keeps the
# package's defaults on 10,000 rows and the same number of steps on larger tables (budget).
PROFILES = {
    "fast": {"rows": (10_000,), "widths": (10, 100), "reference_rows": None, "fit_repeats": 2,
             "timing_repeats": 3, "peers_from": SYNTHETIC_RESULTS,
             "epochs": {"l2x": {"max_epochs": 2},
                        "realx": {"max_epochs": 2, "predictor_epochs": 1}}},
    "full": {"rows": (10_000, 100_000, 1_000_000), "widths": (10, 100, 1_000),
             "reference_rows": 10_000, "fit_repeats": 1, "timing_repeats": 3, "epochs": {},
             "peers_from": SYNTHETIC_RESULTS},
}


def budget(profile, method, n_rows):
    """``max_epochs`` (and REAL-X's ``predictor_epochs``) of ``method`` on ``n_rows`` rows."""
    defaults = method.estimator().get_params()
    epochs = {name: defaults[name] for name in ("max_epochs", "predictor_epochs")
              if name in defaults}
    epochs.update(profile.get("epochs", {}).get(method.params_key, {}))
    reference = profile.get("reference_rows")
    if reference and n_rows > reference:
        factor, predictor = reference / n_rows, epochs.get("predictor_epochs")
        if predictor is None:
            epochs["max_epochs"] = max(1, round(epochs["max_epochs"] * factor))
        else:
            total = max(2, round(epochs["max_epochs"] * factor))
            epochs.update(max_epochs=total,
                          predictor_epochs=min(max(1, round(predictor * factor)), total - 1))
    return epochs


def cases(dataset, methods, profile):
    n_rows, n_features = map(int, dataset.split("x"))
    return [(name, {"n_rows": n_rows, "n_features": n_features, "k": N_RELEVANT})
            for name in methods]


class TableTooLarge(Exception):
    """A table size this machine's free memory cannot hold."""


def prepare(dataset, profile, device):
    """The rows and outputs of a table size; the peers' costs go into the profile once."""
    profile.setdefault("peers", peer_costs(profile.get("peers_from", SYNTHETIC_RESULTS)))
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    n_rows, n_features = map(int, dataset.split("x"))
    needed, available = HOST_COPIES * n_rows * n_features * 4, available_memory()
    if available is not None and needed > available:
        raise TableTooLarge(f"skipped, needs about {needed / 2**30:.0f} GiB of host memory "
                            f"({HOST_COPIES} copies of the rows), "
                            f"{available / 2**30:.0f} GiB available")
    return make_rows(n_rows, n_features)


_WARMED = set()


def measure(data, dataset, name, seed, profile, device, n_rows, n_features, k):
    """Fit and anchor, transform and forward pass, and the peak memory of ``transform``."""
    method, (X, outputs) = METHODS[name], data
    epochs = budget(profile, method, n_rows)
    if (name, device.type) not in _WARMED:
        # A process's first fit pays one-time costs (lazy imports, kernel selection) that
        # are no one's overhead: fit the package and the anchor on a few rows first.
        few = slice(0, min(len(X), 512))
        warm = method.estimator(k=k, random_state=0, device=str(device), **{
            key: 2 if key == "max_epochs" else 1 for key in epochs})
        ANCHORS[name](warm.fit(X[few], outputs[few]), X[few], outputs[few], device)
        warm.transform(X[few])
        _WARMED.add((name, device.type))
    explainer = method.estimator(k=k, random_state=0, device=str(device), **epochs)
    fit = _time_fit(name, explainer, X, outputs, device, profile.fit_repeats)
    predictor = epochs.get("predictor_epochs")  # shown as predictor+selector epochs
    shown = (str(epochs["max_epochs"]) if predictor is None
             else f"{predictor}+{epochs['max_epochs'] - predictor}")
    values = {"device": device.type, "budget": epochs, **fit,
              **_time_transform(explainer, X, device, profile.timing_repeats),
              "input_bytes": X.nbytes, "output_bytes": X.nbytes,  # a mask value a feature
              "steps": f"{fit['n_steps']:,} ({shown})", "in_out_bytes": 2 * X.nbytes}
    if device.type == "cuda":  # the memory process's copy of the rows needs the room
        torch.cuda.empty_cache()
    memory = _memory_process(explainer, n_rows, n_features)
    if "error" in memory:
        return {**values, "memory_error": memory["error"]}
    # The rows are resident before the call: transform's peak is the rows plus its rise.
    peak, forward = X.nbytes + memory["extra_bytes"], memory["forward_extra_bytes"]
    return {**values, **memory, "peak_bytes": peak, "memory_ratio": peak / (2 * X.nbytes),
            "forward_peak_bytes": None if forward is None else X.nbytes + forward}


def _time_fit(name, explainer, X, outputs, device, repeats):
    """Best-of-``repeats`` seconds of ``fit`` and the anchor, in turns (CUDA: also eager)."""
    anchors, cuda = [], device.type == "cuda"
    eager = clone(explainer).set_params(cuda_graphs=False)
    funcs = [lambda: explainer.fit(X, outputs),
             lambda: anchors.append(ANCHORS[name](explainer, X, outputs, device)),
             *([lambda: eager.fit(X, outputs)] if cuda else [])]
    times = best_times([synced(func, device) for func in funcs], repeats, warmup=0)
    (fit_s, anchor_s), history, anchor = times[:2], explainer.net_.history, anchors[-1]
    n_steps = sum(len(epoch["batches"]) for epoch in history)
    values = {"n_steps": n_steps, "anchor_n_steps": anchor.n_steps, "fit_s": fit_s,
              "anchor_fit_s": anchor_s, "fit_ratio": fit_s / anchor_s,
              "fit_loss": float(history[-1, "train_loss"]), "anchor_loss": anchor.loss,
              "step_s": fit_s / n_steps, "anchor_step_s": anchor_s / anchor.n_steps,
              "fit_timing": f"best of {repeats}" if repeats > 1 else "single run"}
    if cuda:
        values.update(eager_fit_s=times[2], eager_step_s=times[2] / n_steps,
                      capture_speedup=times[2] / fit_s, anchor_speedup=anchor_s / fit_s)
    return values


def _time_transform(explainer, X, device, repeats):
    """Best-of-``repeats`` seconds of a bare forward pass, ``transform`` (CUDA: copy+fwd+copy)."""
    module, X_device = explainer.net_.module_.eval(), torch.as_tensor(X, device=device)
    inference = torch.inference_mode()
    funcs = [inference(synced(lambda: module(X_device), device)), lambda: explainer.transform(X)]
    if device.type == "cuda":
        funcs.append(inference(synced(lambda: module(torch.as_tensor(X).to(device)).cpu(),
                                       device)))
    times = best_times(funcs, repeats, warmup=1)
    return {"forward_s": times[0], "transform_s": times[1],
            "throughput_ratio": times[0] / times[1], "transform_timing": f"best of {repeats}",
            **({"copy_forward_s": times[2], "gpu_ratio": times[2] / times[1]}
               if device.type == "cuda" else {})}


def _memory_process(explainer, n_rows, n_features):
    """:func:`peak_memory` in a fresh process that draws the rows again; ``{"error"}``."""
    done = subprocess.run([sys.executable, "-m", "benchmarks.studies.scale", str(n_rows),
                           str(n_features), str(torch.get_num_threads())], cwd=ROOT,
                          input=pickle.dumps(explainer), capture_output=True, check=False)
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
        return {"error": "memory process failed: "
                + (tail[0] if tail else f"exit status {done.returncode}")}
    return json.loads(done.stdout.strip().splitlines()[-1])


def peak_memory(explainer, X):
    """The rise of host memory (:func:`rise`) during ``explainer.transform(X)`` and a bare
    forward pass of its selector, once a few rows are explained (lazy initialisation, the CUDA
    context); on CUDA also the device's peak allocation above the one before the call."""
    module, device = selector_network(explainer)
    X_device = torch.as_tensor(X).to(device)  # on the CPU, the rows themselves

    def forward(rows=X_device):
        with torch.inference_mode():
            return module(rows)

    explainer.transform(X[:64])
    forward(X_device[:64])
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        device_before = torch.cuda.memory_allocated(device)
    extra, reset = rise(lambda: explainer.transform(X))
    out = {"extra_bytes": extra, "forward_extra_bytes": None,
           "memory_method": "ru_maxrss after the call (peak since the process started), "
                            "minus VmRSS before",
           "device_peak_bytes": torch.cuda.max_memory_allocated(device) - device_before
           if cuda else None}
    if reset:  # a second peak in the same process needs the reset. The smaller of two
        # calls each: a first call can still grow the allocator's pools (a few MB).
        out.update(extra_bytes=min(extra, rise(lambda: explainer.transform(X))[0]),
                   memory_method="VmHWM reset by /proc/self/clear_refs, minus VmRSS before "
                                 "the call, smaller of two calls",
                   forward_extra_bytes=min(rise(forward)[0], rise(forward)[0]))
    return out


def peer_costs(path=SYNTHETIC_RESULTS):
    """Per peer of the synthetic results, the median ms per row over the data sets it explained,
    their widths, and that run's settings and machine; ``None`` without the file."""
    path = Path(path) if Path(path).exists() else ROOT / path
    if not path.exists():
        return None
    records, machine, profile = report.load_study_results(path)
    widths = {r["dataset"]: r["value"] for r in records
              if r["method"] is None and r["metric"] == "n_features"}
    failed = {(r["dataset"], r["method"]) for r in records if r["metric"] == "error"}
    peers = []
    for name in method_names(amortized=False):
        costs = {r["dataset"]: r["value"] for r in records
                 if r["method"] == name and r["metric"] == "explain_ms_per_row" and r["value"]
                 and (r["dataset"], name) not in failed}
        if costs:
            peers.append({"method": name, "method_label": METHODS[name].label,
                          "ms_per_row": float(np.median(list(costs.values()))),
                          "n_features": sorted({widths[d] for d in costs if d in widths})})
    return {"source": str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path),
            "date": machine.get("date"), "hardware": machine.get("gpu") or machine.get("cpu"),
            "threads": machine.get("threads"), "n_explain": profile.get("n_explain"),
            "settings": {key: profile.get(key) for key in
                         ("shap_nsamples", "lime_num_samples", "captum_kernel_shap_samples")},
            "methods": peers}


def _ratio(value):
    # Two decimals, but the two first digits of a ratio far below 1 (0.0017, not 0.00).
    return format(value, ".2f" if value >= 0.1 else ".2g")


def fields(records, machine, profile):
    cuda, reference = machine["device"] == "cuda", profile.get("reference_rows")
    fit_timing = " / ".join(sorted({r["fit_timing"] for r in records if r.get("fit_timing")}))
    text = functools.partial(report.text, "scale")
    return {
        "hardware": f"{machine['gpu']} (CUDA)" if cuda else report.hardware(machine),
        "n_relevant": N_RELEVANT, "fit_timing": fit_timing or "not run",
        "reference": text("reference", reference=reference) + " " if reference else "",
        "step": text("step", captured=" " + text("captured") if cuda else "") + " "
        if any(r["metric"] == "step_s" for r in records) else "",
        "gpu_ratio": text("gpu_ratio") if cuda else "", "gpu_mb": text("gpu_mb") if cuda else ""}


def notes(records, machine, profile):
    """The sizes skipped or failed, then the per-row peers next to this run's transform."""
    lines = [f"- {METHODS[r['method']].label}, {r['n_rows']:,} x {r['n_features']:,}: "
             f"{r.get('error') or r['memory_error']}" for r in records
             if r["metric"] == "error" or (r["metric"] == "fit_s" and r.get("memory_error"))]
    lines += [""] if lines else []
    peers = profile.get("peers") or peer_costs(profile.get("peers_from", SYNTHETIC_RESULTS))
    if not peers or not peers["methods"]:
        return lines
    settings = peers["settings"]
    widths = sorted({w for p in peers["methods"] for w in p["n_features"]})
    text = report.text("scale", "peers", peers=peers, settings=settings,
                       date=peers["date"][:10], widths=" and ".join(f"{w:.0f}" for w in widths))
    rows = [(p["method_label"], p["ms_per_row"]) for p in peers["methods"]]
    done = [r for r in records if r["metric"] == "transform_s"]
    if done:
        width = min(r["n_features"] for r in done)
        n_rows = max(r["n_rows"] for r in done if r["n_features"] == width)
        rows += [(f"{METHODS[r['method']].label} ``transform`` (this run, {n_rows:,} x {width})",
                  1000 * r["value"] / n_rows) for r in done
                 if (r["n_features"], r["n_rows"]) == (width, n_rows)]
    return [*lines, *report.wrap(text), "",
            *report.grid_table("Per-row peers (from the synthetic benchmark)",
                               ["Method", "ms / row", "Hours per\n1M rows"],
                               [[label, f"{ms:.3g}", f"{ms * 1e6 / 1e3 / 3600:.3g}"]
                                for label, ms in rows])]


def _at_least(smallest):
    def parse(text):
        if int(text) < smallest:
            raise argparse.ArgumentTypeError(f"should be at least {smallest}")
        return int(text)
    return parse


_S, _MS = Metric("Seconds", "s"), Metric("Milliseconds", "s", scale=1e3)
_RATIO, _MB = Metric("Ratio", fmt=_ratio), Metric("MB", "bytes", scale=1e-6)
# Every metric's column label (None: in no table) and how its values are shown.
_METRICS = {
    "fit_s": ("Fit s", _S), "anchor_fit_s": ("Anchor s", _S), "fit_ratio": ("Fit ratio", _RATIO),
    "transform_s": ("Transform\nms", _MS), "forward_s": ("Forward\nms", _MS),
    "throughput_ratio": ("Through-\nput", _RATIO), "copy_forward_s": ("Copy+fwd\n+copy ms", _MS),
    "gpu_ratio": ("GPU\nratio", _RATIO), "peak_bytes": ("Peak MB", _MB),
    "in_out_bytes": ("In+out\nMB", _MB), "memory_ratio": ("Peak /\n(in+out)", _RATIO),
    "forward_peak_bytes": ("Forward\npeak MB", _MB), "device_peak_bytes": ("GPU MB", _MB),
    "step_s": ("Step ms", _MS), "anchor_step_s": ("Anchor\nstep ms", _MS),
    "eager_step_s": ("Eager\nstep ms", _MS), "capture_speedup": ("Captured /\neager", _RATIO),
    "anchor_speedup": ("Anchor /\npackage", _RATIO), "eager_fit_s": (None, _S),
    **{name: (None, _MB) for name in ("input_bytes", "output_bytes", "extra_bytes")},
}
_LABELS = {"n_rows": "Rows", "n_features": "Features", "steps": "Steps",
           **{name: label for name, (label, _) in _METRICS.items() if label}}
_TIMES = ("fit_s", "anchor_fit_s", "fit_ratio", "transform_s", "forward_s", "throughput_ratio")
_MEMORY = ("peak_bytes", "in_out_bytes", "memory_ratio", "forward_peak_bytes")


def _table(title, metrics, cuda):
    """A table of the CPU runs' records, or of the CUDA runs' (``cuda``)."""
    return Table(title, metrics, rows=("method", "n_rows", "n_features", "steps"),
                 labels=_LABELS, where=lambda r: (r.get("device") == "cuda") == cuda)


STUDY = Study(
    name="scale", profiles=PROFILES,
    datasets=lambda profile: [f"{n_rows}x{n_features}" for n_rows in profile.rows
                              for n_features in profile.widths],
    methods=tuple(name for name in method_names(amortized=True) if name in ANCHORS),
    cases=cases, prepare=prepare, measure=measure,
    metrics={"n_rows": Metric("Rows", fmt=",.0f"), "n_features": Metric("Features", fmt=",.0f"),
             **{name: metric for name, (_, metric) in _METRICS.items()}},
    tables=(_table("Fit and transform against table size", (*_TIMES, *_MEMORY), cuda=False),
            _table("Fit and transform against table size",
                   (*_TIMES, "copy_forward_s", "gpu_ratio", *_MEMORY, "device_peak_bytes"),
                   cuda=True),
            _table("Training step against table size", ("step_s", "anchor_step_s"), cuda=False),
            # On CUDA the captured step (the package's default), the same fit eager, the
            # anchor, and the speed-ups of the captured fit over both.
            _table("Training step against table size",
                   ("step_s", "eager_step_s", "anchor_step_s", "capture_speedup",
                    "anchor_speedup"), cuda=True)),
    fields=fields, notes=notes,
    options={"rows": {"type": _at_least(2), "nargs": "+", "metavar": "N",
                      "help": "row counts instead of the profile's"},
             "widths": {"type": _at_least(N_RELEVANT), "nargs": "+", "metavar": "N",
                        "help": "feature counts instead of the profile's"},
             "peers_from": {"metavar": "JSON", "help": "the synthetic study's results to "
                            "read the per-row peers' cost from"}},
    readme=(".. scale-table-start", ".. scale-table-end", "Benchmarks"),
    results_name="{study}_{profile}_{device}",
)


def main(argv=None):
    """The memory process: ``N_ROWS N_FEATURES THREADS``, a pickled explainer on stdin;
    prints the :func:`peak_memory` of its ``transform`` on the table, as JSON."""
    n_rows, n_features, threads = argv or sys.argv[1:]
    torch.set_num_threads(int(threads))
    X = make_rows(int(n_rows), int(n_features))[0]
    print(json.dumps(peak_memory(pickle.load(sys.stdin.buffer), X)))


if __name__ == "__main__":
    main()
