"""A study's declaration (:class:`Study`), the one run loop over data sets x methods x seeds,
and the long record: one a metric, with the study, data set, method, seed, metric, value and
unit, plus free context (k, parameters, an error)."""

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
    """Plain values by name, also read as attributes (``profile.n_train``);
    ``explainer_params`` holds our explainers' parameters by registry ``params_key``."""

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
    """How a metric is shown: ``scale`` takes the recorded value to the shown one, ``fmt`` is
    a format spec or a function of the shown value; ``cell(values)``, if given, draws a cell
    from its values (one a seed) instead of their mean ± spread."""

    label: str
    unit: str = ""
    scale: float = 1.0
    fmt: object = ".3g"
    cell: Callable = None


def percent(label, unit="%", fmt=".1f"):
    """A fraction shown in points."""
    return Metric(label, unit, 100, fmt)


@dataclass(frozen=True)
class Table:
    """A pivot of the records: a row per distinct value of the ``rows`` fields, a column per
    metric (``columns="metric"``) or per value of the field ``columns`` (one metric then).

    ``where`` keeps the records whose fields have the given values (or, a function, those it
    is true of); the values of data sets (``method=None``) are shown only where it names the
    method. ``labels`` overrides header names; the title is formatted with the profile.
    ``spread=False`` shows the means alone (cells that pool several data sets)."""

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

    - ``datasets(profile)``: data set names; ``prepare(name, profile, device)``: what every
      method shares on one (data sets of the same ``share(dataset)`` share one preparation);
    - ``measure(data, dataset, method, seed, profile, device, **context)``: a dict whose
      numbers are metrics and whose other values are context, or a list of records, each a
      dict of ``metric``, ``value`` and its own context (one metric several times);
    - ``cases(dataset, methods, profile)``: the ``(method, context)`` pairs run on a data set;
      ``seeds(dataset, method, profile)`` (``[None]``: one run); ``dataset_values(data,
      dataset)``: metrics of the data set itself (recorded with ``method=None``);
    - ``options``: command-line options that override a profile value; ``spread``: ``"sd"``,
      ``"std"`` (population), ``"range"`` or ``None``;
    - ``readme``: the marker lines of its tables in doc/benchmarks.rst (and optionally the
      section that takes them when the page has none), ``readme_tables`` the titles put there;
    - ``results_name``: formatted with ``study``, ``profile`` and ``device``;
      ``method_cell(record)``: a method's cell in the tables whose rows hold the data set;
    - the ``caption`` block of ``benchmarks/templates/<name>.rst`` goes above the tables,
      filled with ``fields(records, machine, profile)`` (see :func:`.report.caption`);
      ``notes(records, machine, profile)``: lines below them; ``postprocess(records)``: the
      records they are drawn from.
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
    """A study's ``seeds``: 0 to ``profile.seeds`` - 1 where ``ours(method)``, else one run."""
    return lambda dataset, method, profile: (list(range(profile.seeds)) if ours(method)
                                             else [None])


def with_references(*references, context=lambda dataset, profile: {}):
    """A study's ``cases``: every method asked for, then the ``references`` (run always),
    all with the data set's ``context(dataset, profile)``."""

    def cases(dataset, methods, profile):
        shared = context(dataset, profile)
        return [(method, shared) for method in dict.fromkeys([*methods, *references])]
    return cases


def _record(study, dataset, method, seed, metric, value, **context):
    return {"study": study.name, "dataset": dataset, "method": method, "seed": seed,
            "metric": metric, "value": value, "unit": study.unit(metric), **context}


def records_of(study, dataset, method, seed, values, **context):
    """A record per number of ``values`` that is not ``None``; its other values join the
    context."""
    context = {**context, **{key: value for key, value in values.items()
                             if not _is_number(value)}}
    return [_record(study, dataset, method, seed, metric, value, **context)
            for metric, value in values.items() if _is_number(value) and value is not None]


def error_record(study, dataset, method, seed, exc, **context):
    """The record of a failed measurement: its error and the last lines of its traceback."""
    lines = "".join(traceback.format_exception(exc)).rstrip().splitlines()
    return _record(study, dataset, method, seed, "error", None, **context,
                   error=f"{type(exc).__name__}: {exc}", traceback="\n".join(lines[-8:]))


def _is_number(value):
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def run(study, profile, *, methods=None, device="auto", threads=1, on_record=None, log=None):
    """Every (data set, method, seed) of ``study`` under ``profile``, as long records.

    Registry methods whose package is missing are skipped; a failure is recorded and the run
    goes on. ``on_record(records)`` follows every measurement, ``log(line)`` reports progress.
    """
    log = log or (lambda line: None)
    device = resolve_device(device)
    methods = list(methods or study.default_methods or study.methods)
    _, skipped = available_methods([name for name in methods if name in METHODS])
    for name, reason in skipped.items():
        log(f"skipping {name}: {reason}")
    methods = [name for name in methods if name not in skipped]
    records = []
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with threadpool_limits(limits=threads):
            wanted, shared = profile.get("datasets"), {}
            for dataset in [name for name in study.datasets(profile)
                            if not wanted or name in wanted]:
                cases = study.cases(dataset, methods, profile)
                if not cases:
                    continue
                log(f"{dataset}: data")
                key = study.share(dataset)
                try:
                    if key not in shared:
                        shared.clear()  # one data set's rows and models at a time
                        shared[key] = study.prepare(key, profile, device)
                    data = shared[key]
                except Exception as exc:  # noqa: BLE001 - every case of the set fails
                    failed = [error_record(study, dataset, method, None, exc, **context)
                              for method, context in cases]
                    records += [{**r, "error": "data set: " + r["error"]} for r in failed]
                    continue
                records += records_of(study, dataset, None, None,
                                      study.dataset_values(data, dataset))
                for method, context in cases:
                    for seed in study.seeds(dataset, method, profile):
                        log(f"{dataset}: {method}" + ("" if seed is None else f", seed {seed}"))
                        try:
                            values = study.measure(data, dataset, method, seed, profile,
                                                   device, **context)
                            records += ([_record(study, dataset, method, seed,
                                                 **{**context, **entry}) for entry in values]
                                        if isinstance(values, list)
                                        else records_of(study, dataset, method, seed, values,
                                                        **context))
                        except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
                            records.append(error_record(study, dataset, method, seed, exc,
                                                        **context))
                        if on_record is not None:
                            on_record(records)
    finally:
        torch.set_num_threads(previous_threads)
    return records


def merge(kept, new, order=()):
    """``kept`` with the (data set, method) pairs of ``new`` in place of theirs; a new pair
    goes after its data set's last, the data sets of ``order`` first."""
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
