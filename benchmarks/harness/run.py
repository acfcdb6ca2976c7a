"""The run: every (data set, method) pair, one record each; a failure is recorded, not raised."""

import traceback

import torch
from threadpoolctl import threadpool_limits

from sk_sointer._utils import resolve_device

from .data import DATASETS, PROFILES, TRAIN_SEED, prepare
from .ours import median_rank_with_seed
from .quality import mask_quality
from .registry import METHODS, available_methods

RECORD_FIELDS = (
    "profile", "dataset", "dataset_label", "method", "method_label", "k", "params",
    "n_features", "n_train", "n_black_box", "n_explain", "median_rank", "median_rank_optimum",
    "tpr", "fdr", "cfsr", "mean_selected", "posthoc_acc", "eacc", "eacc_expected", "eauroc",
    "enll", "own_agreement", "own_acc", "median_rank_seeds", "fit_s", "setup_s",
    "explain_ms_per_row", "explain_timing", "throughput_ratio", "forward_ms", "transform_ms",
    "n_timing", "black_box_acc", "black_box_fit_s", "evalx_fit_s", "evalx_error", "error",
    "traceback",
)


def run_benchmark(profile, *, dataset_names=None, methods=None, device="auto", threads=1,
                  seeds=1, on_record=None, log=None):
    """Run every (data set, method) pair and return one record (a dict) per pair.

    Parameters
    ----------
    profile : Profile or str
        A :class:`~.data.Profile` or a key of :data:`~.data.PROFILES`.
    dataset_names : list of str, default=None
        Keys of :data:`~.data.DATASETS`; all of them by default.
    methods : list of str, default=None
        Keys of :data:`~.registry.METHODS`; all that can run here by default. Peers do
        not run on the encoding probe.
    device : {"auto", "cpu", "cuda"}, default="auto"
        Where our explainers, the EVAL-X evaluator and the captum copy of the MLP run.
    threads : int, default=1
        torch and BLAS threads for the whole run.
    seeds : int, default=1
        Fit each of our explainers with this many seeds (0, 1, ...). Every metric comes
        from seed 0; the record also lists the median rank of every seed
        (``median_rank_seeds``), which shows how much one seed's number is a draw.
    on_record : callable, default=None
        Called with the list of records so far after each one, e.g. to save progress.
    log : callable, default=None
        Called with one line of progress text at a time.
    """
    if isinstance(profile, str):
        profile = PROFILES[profile]
    log = log or (lambda line: None)
    device = resolve_device(device)
    methods, skipped = available_methods(methods)
    for name, reason in skipped.items():
        log(f"skipping {name}: {reason}")
    specs = [DATASETS[name] for name in (dataset_names or DATASETS)]
    evaluated = {spec.data_key for spec in specs if spec.control_flow or spec.probe}

    records, prepared = [], {}
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with threadpool_limits(limits=threads):
            for spec in specs:
                if spec.data_key not in prepared:
                    log(f"{spec.data_key}: black box")
                    prepared[spec.data_key] = prepare_or_error(
                        DATASETS[spec.data_key], profile, device, spec.data_key in evaluated
                    )
                data, data_error = prepared[spec.data_key]
                for name in methods:
                    method = METHODS[name]
                    if spec.probe and not method.amortized:
                        continue
                    log(f"{spec.name}: {name}")
                    records.append(run_one(spec, method, data, data_error, profile, device, seeds))
                    if on_record is not None:
                        on_record(records)
    finally:
        torch.set_num_threads(previous_threads)
    return records


def prepare_or_error(spec, profile, device, needs_evaluator):
    """``(data, None)``, or ``(None, exception)``: every method of the set is then failed."""
    try:
        return prepare(spec, profile, device, needs_evaluator), None
    except Exception as exc:  # noqa: BLE001 - recorded in each of the set's records
        return None, exc


def new_record(spec, method, profile):
    """A record of ``method`` on ``spec`` with what is known before anything runs."""
    record = dict.fromkeys(RECORD_FIELDS)
    record.update(profile=profile.name, dataset=spec.name, dataset_label=spec.label,
                  method=method.name, method_label=method.label, k=method.k_for(spec),
                  n_train=profile.n_train, n_explain=profile.n_explain,
                  n_black_box=profile.n_black_box or profile.n_train)
    return record


def run_one(spec, method, data, data_error, profile, device, seeds=1):
    """The record of ``method`` (a registry entry) on ``spec``, with its error if it failed."""
    record = new_record(spec, method, profile)
    if data_error is not None:
        record.update(error=f"data set: {describe(data_error)}",
                      traceback=short_traceback(data_error))
        return record
    record.update(n_features=data.X_explain.shape[1], black_box_acc=data.black_box_acc,
                  black_box_fit_s=data.black_box_fit_s, evalx_fit_s=data.evaluator_fit_s,
                  evalx_error=data.evaluator_error)
    try:
        masks, timing = method.run(spec, data, profile, device)
        record.update(timing)
        record.update(mask_quality(spec, data, masks, data.evaluator))
        if method.amortized and seeds > 1:
            record["median_rank_seeds"] = [record["median_rank"]] + [
                median_rank_with_seed(method, spec, data, profile, device, TRAIN_SEED + seed)
                for seed in range(1, seeds)
            ]
    except Exception as exc:  # noqa: BLE001 - one failed method must not end the run
        record.update(error=describe(exc), traceback=short_traceback(exc))
    return record


def describe(exc):
    """One line naming a failure: its type and message."""
    return f"{type(exc).__name__}: {exc}"


def short_traceback(exc, lines=8):
    """The last ``lines`` lines of the traceback of ``exc``, for a record."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return "\n".join(text.rstrip().splitlines()[-lines:])
