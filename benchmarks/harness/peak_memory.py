"""Peak memory of ``transform``, measured in a fresh process.

    python -m harness.peak_memory JOBS.json RESULTS.json    (benchmarks/ on the path)

Each job names a pickled fitted explainer and the rows it explains, drawn again here from
their seed (no table goes through the disk). The host number is the rise of the process's
resident set size (RSS) during a ``transform`` call: the high-water mark ``VmHWM``, reset
just before the call by writing 5 to ``/proc/self/clear_refs``, minus ``VmRSS`` at that
moment; the smaller of two calls. RSS counts every page the process touches, whoever allocated it: numpy's arrays
and torch's CPU tensors alike, where ``tracemalloc`` would see numpy's and miss torch's.
Before the baseline the explainer has explained a few rows (lazy initialisation, the CUDA
context) and freed heap memory has been handed back to the system (``malloc_trim``), so
memory the call reuses counts as new. The rows themselves are resident before the call and
are not in the rise; the returned masks are. For reference the same is measured for a bare
forward pass of the selector on the rows (a tensor sharing their memory on the CPU; on
CUDA a copy on the device made beforehand), its returned scores included: the activations
any forward pass needs, which on narrow tables outweigh the rows.

Where the high-water mark cannot be reset (no ``/proc/self/clear_refs``), the caller runs
each job in a process of its own and the rise is ``ru_maxrss`` after the call minus
``VmRSS`` before it: the process's peak since it started, an upper bound that the rows,
drawn directly in float32, keep close. On CUDA the device's peak is
``torch.cuda.max_memory_allocated`` over the call, above what was allocated before it.
"""

import ctypes
import gc
import json
import pickle
import resource
import sys

import torch

from .data import make_rows

RESET_METHOD = "VmHWM reset by /proc/self/clear_refs, minus VmRSS before the call"
MAXRSS_METHOD = "ru_maxrss after the call (peak since the process started), minus VmRSS before"


def peak_resettable():
    """Whether this process can reset its RSS high-water mark (Linux 4.0 and later)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear_refs:
            clear_refs.write("5")
        return _status_bytes("VmHWM") is not None
    except OSError:
        return False


def _status_bytes(field):
    """A ``kB`` field of ``/proc/self/status`` in bytes; None where there is none."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _trim_heap():
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: freed memory may be reused unseen
        pass


def measure(explainer, X):
    """Memory of ``explainer.transform(X)`` and, for reference, of a bare forward pass of
    its selector on the same rows: ``{"extra_bytes", "forward_extra_bytes",
    "device_peak_bytes", "memory_method"}``."""
    module = explainer.net_.module_.eval()
    device = explainer._inference_device()
    X_device = torch.as_tensor(X).to(device)  # on the CPU, the rows themselves

    def forward():
        with torch.inference_mode():
            return module(X_device)

    explainer.transform(X[:64])
    with torch.inference_mode():
        module(X_device[:64])
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        device_before = torch.cuda.memory_allocated(device)
    extra, reset = _rise(lambda: explainer.transform(X))
    device_peak = torch.cuda.max_memory_allocated(device) - device_before if cuda else None
    if not reset:  # a second peak in the same process needs the reset
        return {"extra_bytes": extra, "device_peak_bytes": device_peak,
                "memory_method": MAXRSS_METHOD, "forward_extra_bytes": None}
    # The smaller of two calls each: a first call can still grow the allocator's pools
    # (a few MB, which matter on small tables only).
    return {
        "extra_bytes": min(extra, _rise(lambda: explainer.transform(X))[0]),
        "device_peak_bytes": device_peak,
        "memory_method": RESET_METHOD + ", smaller of two calls",
        "forward_extra_bytes": min(_rise(forward)[0], _rise(forward)[0]),
    }


def _rise(func):
    """How far resident memory rises above its level before ``func()`` while it runs (its
    result included), and whether the high-water mark could be reset for it."""
    gc.collect()
    _trim_heap()
    before = _status_bytes("VmRSS")
    if before is None:
        raise RuntimeError("Measuring the peak memory needs Linux's /proc/self/status.")
    reset = peak_resettable()
    func()
    if reset:
        peak = _status_bytes("VmHWM")
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux
    return max(peak - before, 0), reset


def main(argv=None):
    jobs_path, results_path = argv or sys.argv[1:]
    with open(jobs_path, encoding="utf-8") as file:
        jobs = json.load(file)
    results, rows = [], {}
    for job in jobs:
        torch.set_num_threads(job["threads"])
        key = (job["n_rows"], job["n_features"], job["seed"])
        if key not in rows:
            rows.clear()  # one table at a time: the jobs come grouped by table
            gc.collect()
            rows[key] = make_rows(*key)[0]
        try:
            with open(job["explainer"], "rb") as file:
                results.append(measure(pickle.load(file), rows[key]))
        except Exception as exc:  # noqa: BLE001 - recorded in the job's record
            results.append({"error": f"{type(exc).__name__}: {exc}"})
        gc.collect()
    with open(results_path, "w", encoding="utf-8") as file:
        json.dump(results, file)


if __name__ == "__main__":
    main()
