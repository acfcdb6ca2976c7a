"""Wall-clock timing and the rise of host memory during a call (Linux's ``/proc``)."""

import ctypes
import gc
import math
import resource
import time

import numpy as np
import torch


def elapsed(func, device=None):
    """``(result, seconds)`` of ``func()``; with a ``device``, its queued work included."""
    start = time.perf_counter()
    result = synced(func, device)()
    return result, time.perf_counter() - start


def synced(func, device):
    """``func`` and then a wait for the device's queued work, so that a timer sees it done."""
    def call():
        result = func()
        if device is not None and device.type == "cuda":
            torch.cuda.synchronize(device)
        return result
    return call


def best_time(func, repeats, *, warmup=2):
    """Smallest wall time of ``repeats`` calls after ``warmup`` untimed ones, in seconds."""
    return best_times([func], repeats, warmup=warmup)[0]


def best_times(funcs, repeats, *, warmup=2):
    """Smallest wall time of each function, timed in turns (the same drift of a shared load)."""
    for _ in range(warmup):
        for func in funcs:
            func()
    best = [math.inf] * len(funcs)
    for _ in range(repeats):
        for i, func in enumerate(funcs):
            start = time.perf_counter()
            func()
            best[i] = min(best[i], time.perf_counter() - start)
    return best


def throughput_ratio(explainer, X, *, repeats=7):
    """Time of a bare selector forward pass (a tensor on its device) over that of ``transform``
    (the rows as numpy), and both: 1.0 when validation, transfers and top-k cost nothing."""
    module, device = selector_network(explainer)
    X32 = read = np.ascontiguousarray(X, dtype=np.float32)
    # What the selector reads: MEED with feedback also reads the black box's outputs after
    # the row (zeros here: their values do not change the time of a forward pass).
    if getattr(explainer, "feedback", None) is not None:
        read = np.hstack([X32, np.zeros((len(X32), explainer.output_spec_.n_columns),
                                        dtype=np.float32)])
    X_t = torch.as_tensor(read, device=device)
    forward = torch.inference_mode()(synced(lambda: module(X_t), device))
    forward_s, transform_s = best_times([forward, lambda: explainer.transform(X32)], repeats)
    return forward_s / transform_s, forward_s, transform_s


def selector_network(explainer):
    """The fitted explainer's network in eval mode and the device its weights are on."""
    module = explainer.net_.module_.eval()
    param = next(module.parameters(), None)
    return module, param.device if param is not None else torch.device("cpu")


def available_memory():
    """Bytes of host memory available to a new allocation; None where /proc says nothing."""
    return proc_bytes("/proc/meminfo", "MemAvailable")


def proc_bytes(path, field):
    """A ``kB`` field of a ``/proc`` file in bytes; None where there is none."""
    try:
        with open(path, encoding="ascii") as lines:
            return next((int(line.split()[1]) * 1024 for line in lines
                         if line.startswith(field + ":")), None)
    except OSError:
        return None


def rise(func):
    """How far the resident set rises during ``func()``, and whether its high-water mark could
    be reset (else the process's peak, an upper bound); freed heap memory is handed back
    first, so that memory the call reuses counts as new."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: freed memory may be reused unseen
        pass
    before = proc_bytes("/proc/self/status", "VmRSS")
    if before is None:
        raise RuntimeError("Measuring the peak memory needs Linux's /proc/self/status.")
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear_refs:
            clear_refs.write("5")
        reset = proc_bytes("/proc/self/status", "VmHWM") is not None
    except OSError:
        reset = False
    func()
    peak = (proc_bytes("/proc/self/status", "VmHWM") if reset
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)  # kB on Linux
    return max(peak - before, 0), reset
