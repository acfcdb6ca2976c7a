"""A study: a declaration of what to measure, the one run loop and the long-format record.

A :class:`Study` names its data sets, its methods (registry keys, or names of its own for
references such as random masks), how to prepare a data set (rows, black box, evaluator),
how to measure one method with one seed on it, its metrics and tables, and two profiles
(``fast`` for CI, ``full`` for doc/benchmarks.rst) as plain dictionaries. :func:`run` goes over data
sets x methods x seeds and turns every measurement into long records (:func:`records_of`):
one per metric, with the study, data set, method, seed, metric, value and unit, plus free
context (k, parameters, an error). :func:`.report.render` draws the tables from them.
"""

import traceback
from dataclasses import dataclass, field
from typing import Callable

import torch
from threadpoolctl import threadpool_limits

from sk_sointer._utils import resolve_device

from .registry import METHODS, available_methods

RECORD_KEYS = ("study", "dataset", "method", "seed", "metric", "value", "unit")


class Profile(dict):
    """A profile: plain values by name, also read as attributes (``profile.n_train``).

    ``explainer_params`` (a dict by registry ``params_key``) holds what a profile changes in
    our explainers; :meth:`params_for` reads it.
    """

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
    """How a metric is shown: its column label, unit, the factor from the recorded value to
    the shown one and the format of the shown one (a format spec, or a function of the shown
    value that gives its text); ``cell(values)``, if given, the text of a cell from its
    values (one a seed) instead of their mean ± spread."""

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
    """A pivot of the records: one row per distinct value of the ``rows`` fields, one column
    per metric (``columns="metric"``) or per distinct value of the field ``columns`` (one
    metric then). ``where`` keeps the records whose fields have the given values (or, a
    function, those it is true of); ``labels``
    names row fields and metrics in this table's header where the study's names do not fit.
    The values of data sets themselves (``method=None``) are shown only where ``where`` names
    the method. ``mean_row`` adds the mean over rows of each column; the title is formatted
    with the profile's values. ``spread=False`` shows the means alone (a table whose cells
    pool several data sets, where the study's spread over seeds would mean nothing)."""

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
    """What a study measures; see the module docstring.

    ``datasets(profile)`` gives the data set names; ``prepare(dataset, profile, device)``
    what every method shares on one (data sets with the same ``share(dataset)`` share one
    preparation, of that name); ``measure(data, dataset, method, seed, profile, device,
    **context)`` a dict whose numbers are metrics and whose other values are context.
    ``cases(dataset, methods, profile)`` gives the ``(method, context)`` pairs run on a data
    set (every method by default), ``seeds(method, profile)`` the seeds of a method
    (``None``: a single run), ``dataset_values(data)`` metrics of the data set itself
    (recorded with ``method=None``). ``options`` are command-line options that override a
    profile value (``{"widths": {"type": int, "nargs": "+"}}``). ``spread`` is ``"sd"``
    (sample standard deviation), ``"std"`` (population), ``"range"`` (max - min) or ``None``
    (the mean alone).
    ``default_methods`` run when none are asked for (default: all of ``methods``).
    ``readme`` holds the lines that mark its table in doc/benchmarks.rst, the page of every
    study's tables (and optionally the title of the section whose end takes them when the
    page has none), ``readme_tables`` the
    titles of the tables that go there (default: the whole report).
    ``results_name`` names its results file (without ``.json``), formatted with the
    ``study``, the ``profile`` and the ``device`` it ran on. ``method_cell(record)``,
    if given, names a row's method from its first record in the tables whose rows hold the
    data set (the others show the method's label).
    ``caption(records, machine, profile)`` gives the text above the tables, ``notes`` (same
    arguments) lines below them. ``postprocess(records)`` gives the records the tables and
    notes are drawn from (metrics derived from others, an order of its own).
    """

    name: str
    profiles: dict
    datasets: Callable
    methods: tuple
    prepare: Callable
    measure: Callable
    metrics: dict
    tables: tuple
    caption: Callable
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
    """A study's ``seeds``: ``random_state`` 0 to ``profile.seeds`` - 1 for the methods that
    ``ours(method)`` holds for, one run (``None``) for the others."""
    return lambda dataset, method, profile: (list(range(profile.seeds)) if ours(method)
                                             else [None])


def records_of(study, dataset, method, seed, values, **context):
    """The long records of one measurement: one per number in ``values``; its other values
    join the context. ``None`` values are left out (nothing was measured)."""
    context = {**context, **{key: value for key, value in values.items()
                             if not _is_number(value)}}
    return [{"study": study.name, "dataset": dataset, "method": method, "seed": seed,
             "metric": metric, "value": value, "unit": study.unit(metric), **context}
            for metric, value in values.items() if _is_number(value) and value is not None]


def error_record(study, dataset, method, seed, exc, **context):
    """The record of a failed measurement: metric ``"error"``, its type and message, the
    last 8 lines of its traceback."""
    return {"study": study.name, "dataset": dataset, "method": method, "seed": seed,
            "metric": "error", "value": None, "unit": "", **context,
            "error": f"{type(exc).__name__}: {exc}", "traceback": "\n".join(
                "".join(traceback.format_exception(exc)).rstrip().splitlines()[-8:])}


def _is_number(value):
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def run(study, profile, *, methods=None, device="auto", threads=1, on_record=None, log=None):
    """Every (data set, method, seed) of ``study`` under ``profile``, as long records.

    Registry methods whose package is missing are skipped. A data set that cannot be
    prepared fails its methods; a failing measurement is recorded (:func:`error_record`) and
    the run goes on. ``on_record(records)`` is called after every measurement (to save
    progress), ``log(line)`` with one line of progress at a time.
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
                            records += records_of(study, dataset, method, seed, values,
                                                  **context)
                        except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
                            records.append(error_record(study, dataset, method, seed, exc,
                                                        **context))
                        if on_record is not None:
                            on_record(records)
    finally:
        torch.set_num_threads(previous_threads)
    return records


def merge(kept, new, order=()):
    """``kept`` with the records of the (data set, method) pairs of ``new`` in place of
    theirs; a new pair goes after the last pair of its data set, the data sets of ``order``
    first, in that order, the others in the order they first appear."""
    redone = {(r["dataset"], r["method"]) for r in new}
    pairs = list(dict.fromkeys((r["dataset"], r["method"]) for r in [*kept, *new]))
    datasets = list(dict.fromkeys([*order, *(dataset for dataset, _ in pairs)]))
    rank = {pair: (datasets.index(pair[0]), i) for i, pair in enumerate(pairs)}
    merged = [r for r in kept if (r["dataset"], r["method"]) not in redone] + list(new)
    return sorted(merged, key=lambda r: rank[(r["dataset"], r["method"])])


def summarize(records):
    """``{(dataset, method): {metric: mean, metric + "_seeds": [values in seed order]}}``
    plus the ``error`` of a failed pair; what tests and captions read."""
    out = {}
    for r in records:
        entry = out.setdefault((r["dataset"], r["method"]), {"error": None})
        if r["metric"] == "error":
            entry["error"] = r["error"]
            continue
        entry.setdefault(r["metric"] + "_seeds", []).append(r["value"])
    for entry in out.values():
        for key in [key for key in entry if key.endswith("_seeds")]:
            values = entry[key]
            entry[key[: -len("_seeds")]] = sum(values) / len(values)
    return out
