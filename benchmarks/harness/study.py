"""A study's declaration, the one run loop over data sets x methods x seeds, and the long
record: one a metric (:data:`RECORD_KEYS`), plus free context (k, parameters, an error)."""

import traceback
from dataclasses import dataclass, field
from typing import Callable

import torch
from threadpoolctl import threadpool_limits

from .registry import METHODS, available_methods

RECORD_KEYS = ("study", "dataset", "method", "seed", "metric", "value", "unit")


def resolve_device(device):
    """``"auto"``: CUDA where this machine has it, else the CPU; otherwise the device named."""
    if str(device) == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(device)


class Profile(dict):
    """Values by name, also attributes; ``explainer_params`` by registry ``params_key``."""

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def params_for(self, key):
        return dict(self.get("explainer_params", {}).get(key, {}))

    def replace(self, **values):
        return Profile({**self, **values})


@dataclass(frozen=True)
class Metric:
    """How a metric is shown: ``scale`` times the value, by ``fmt`` (a format spec or a
    function); ``cell(values)`` draws a cell from the seeds' values instead of mean ± spread."""

    label: str
    unit: str = ""
    scale: float = 1.0
    fmt: object = ".3g"
    cell: Callable = None

    @property
    def header(self):
        return self.label + (f"\n{self.unit}" if self.unit else "")


def percent(label, unit="%", fmt=".1f"):
    """A fraction shown in points."""
    return Metric(label, unit, 100, fmt)


@dataclass(frozen=True)
class Table:
    """A pivot of the records: a row per value of the ``rows`` fields, a column per metric
    (``columns="metric"``) or per value of the field ``columns`` (one metric then).

    ``where``: the values of fields kept, or a predicate (records of a data set itself,
    ``method=None``, only where it names the method); ``labels`` override headers; the title
    is formatted with the profile; ``spread=False`` shows means alone."""

    title: str
    metrics: tuple
    rows: tuple = ("dataset", "method")
    columns: str = "metric"
    where: object = field(default_factory=dict)
    labels: dict = field(default_factory=dict)
    mean_row: bool = False
    spread: bool = True


@dataclass(frozen=True)
class Study:
    """What a study measures.

    - ``datasets(profile)``: data set names; ``prepare(name, profile, device)``: what the
      methods share on one (or on all of one ``share(dataset)``); ``measure(data, dataset,
      method, seed, profile, device, **context)``: a dict (numbers are metrics, the rest
      context) or a list of records;
    - ``cases(dataset, methods, profile)``: its ``(method, context)`` pairs; ``seeds(dataset,
      method, profile)``; ``dataset_values(data, dataset)``: metrics with ``method=None``;
    - ``options``: command-line options over profile values; ``spread``: ``"sd"``, ``"std"``,
      ``"range"`` or ``None``; ``results_name``: formatted with study, profile and device;
    - ``readme``: the marker lines (and optionally the section) of its tables in
      doc/benchmarks.rst, ``readme_tables`` the titles put there;
    - the tables (``method_cell(record)``: a method's cell in rows of one data set) go between
      ``benchmarks/templates/<name>.rst``'s ``caption`` (filled with ``fields(records,
      machine, profile)``) and ``notes(...)``, drawn from ``postprocess(records)``.
    """

    name: str
    profiles: dict
    datasets: Callable
    methods: tuple
    prepare: Callable
    measure: Callable
    metrics: dict
    tables: tuple
    fields: Callable = None
    cases: Callable = lambda dataset, methods, profile: [(method, {}) for method in methods]
    seeds: Callable = lambda dataset, method, profile: [None]
    dataset_values: Callable = lambda data, dataset: {}
    share: Callable = lambda dataset: dataset
    labels: dict = field(default_factory=dict)
    dataset_labels: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    default_methods: tuple = None
    method_cell: Callable = None
    readme: tuple = None
    readme_tables: tuple = None
    spread: str = "sd"
    notes: Callable = None
    results_name: str = "{study}_{profile}"
    postprocess: Callable = None

    def profile(self, name, **overrides):
        return Profile({"name": name, **self.profiles[name],
                        **{k: v for k, v in overrides.items() if v is not None}})

    def label(self, method):
        if method in self.labels:
            return self.labels[method]
        return METHODS[method].label if method in METHODS else str(method)

    def unit(self, metric):
        return self.metrics[metric].unit if metric in self.metrics else ""


def seeded(ours):
    """A study's ``seeds``: ``range(profile.seeds)`` where ``ours(method)``, else one run."""
    return lambda dataset, method, profile: (list(range(profile.seeds)) if ours(method)
                                             else [None])


def with_references(*references, context=lambda dataset, profile: {}):
    """A study's ``cases``: the methods asked for, then the ``references``, all with the
    data set's ``context(dataset, profile)``."""

    def cases(dataset, methods, profile):
        shared = context(dataset, profile)
        return [(method, shared) for method in dict.fromkeys([*methods, *references])]
    return cases


def _record(study, dataset, method, seed, metric, value, **context):
    fields = (study.name, dataset, method, seed, metric, value, study.unit(metric))
    return dict(zip(RECORD_KEYS, fields), **context)


def records_of(study, dataset, method, seed, values, **context):
    """A record per number of the dict ``values`` but ``None``, the other values joining the
    context; or of each entry of a list (a dict of ``metric``, ``value`` and context)."""
    if isinstance(values, list):
        return [_record(study, dataset, method, seed, **{**context, **entry})
                for entry in values]
    numbers = {key: value for key, value in values.items() if value is None
               or (isinstance(value, (int, float)) and not isinstance(value, bool))}
    context.update((key, value) for key, value in values.items() if key not in numbers)
    return [_record(study, dataset, method, seed, metric, value, **context)
            for metric, value in numbers.items() if value is not None]


def _error_record(study, dataset, method, seed, exc, prefix="", **context):
    lines = "".join(traceback.format_exception(exc)).rstrip().splitlines()
    return _record(study, dataset, method, seed, "error", None, **context,
                   error=f"{prefix}{type(exc).__name__}: {exc}",
                   traceback="\n".join(lines[-8:]))


def run(study, profile, *, methods=None, device="auto", threads=1, on_record=None, log=None):
    """Every (data set, method, seed) of ``study`` as long records, skipping registry methods
    whose package is missing and recording failures; ``on_record(records)`` follows every
    measurement, ``log(line)`` reports progress."""
    log = log or (lambda line: None)
    device = resolve_device(device)
    methods = list(methods or study.default_methods or study.methods)
    skipped = available_methods([name for name in methods if name in METHODS])[1]
    for name, reason in skipped.items():
        log(f"skipping {name}: {reason}")
    methods = [name for name in methods if name not in skipped]
    records, shared, wanted = [], {}, profile.get("datasets")
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with threadpool_limits(limits=threads):
            for dataset in study.datasets(profile):
                cases = (not wanted or dataset in wanted) and study.cases(dataset, methods,
                                                                          profile)
                if not cases:
                    continue
                log(f"{dataset}: data")
                key = study.share(dataset)
                try:
                    if key not in shared:
                        shared.clear()  # one data set's rows and models at a time
                        shared[key] = study.prepare(key, profile, device)
                except Exception as exc:  # noqa: BLE001 - every case of the set fails
                    records += [_error_record(study, dataset, method, None, exc, "data set: ",
                                              **context) for method, context in cases]
                    continue
                data = shared[key]
                records += records_of(study, dataset, None, None,
                                      study.dataset_values(data, dataset))
                for method, context in cases:
                    for seed in study.seeds(dataset, method, profile):
                        log(f"{dataset}: {method}" + ("" if seed is None else f", seed {seed}"))
                        try:
                            values = study.measure(data, dataset, method, seed, profile,
                                                   device, **context)
                            records += records_of(study, dataset, method, seed, values,
                                                  **context)
                        except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
                            records.append(_error_record(study, dataset, method, seed, exc,
                                                         **context))
                        if on_record is not None:
                            on_record(records)
    finally:
        torch.set_num_threads(previous_threads)
    return records


def merge(kept, new, order=()):
    """``kept`` with the (data set, method) pairs of ``new`` in place of theirs, a new one
    after its data set's last, the data sets of ``order`` first."""
    redone = {(r["dataset"], r["method"]) for r in new}
    pairs = list(dict.fromkeys((r["dataset"], r["method"]) for r in [*kept, *new]))
    datasets = list(dict.fromkeys([*order, *(dataset for dataset, _ in pairs)]))
    rank = {pair: (datasets.index(pair[0]), i) for i, pair in enumerate(pairs)}
    merged = [r for r in kept if (r["dataset"], r["method"]) not in redone] + list(new)
    return sorted(merged, key=lambda r: rank[(r["dataset"], r["method"])])


def summarize(records):
    """``{(dataset, method): {metric: mean, metric + "_seeds": values, "error": ...}}``."""
    out = {}
    for r in records:
        entry = out.setdefault((r["dataset"], r["method"]), {"error": None})
        if r["metric"] == "error":
            entry["error"] = r["error"]
            continue
        entry.setdefault(r["metric"] + "_seeds", []).append(r["value"])
    for entry in out.values():
        for key in [key for key in entry if key.endswith("_seeds")]:
            entry[key[: -len("_seeds")]] = sum(entry[key]) / len(entry[key])
    return out
