"""Wall-clock timing: best-of-n times, and the cost of ``transform`` over a bare forward pass."""

import math
import time

import numpy as np
import torch


def elapsed(func, device=None):
    """``(result, seconds)`` of ``func()``; with a ``device``, its queued work included."""
    start = time.perf_counter()
    result = func()
    if device is not None:
        sync(device)
    return result, time.perf_counter() - start


def sync(device):
    """Wait for the device's queued work, so that a timer sees it finished."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def best_time(func, repeats, *, warmup=2):
    """Smallest wall time of ``repeats`` calls after ``warmup`` untimed ones, in seconds."""
    return best_times([func], repeats, warmup=warmup)[0]


def best_times(funcs, repeats, *, warmup=2):
    """Smallest wall time of each function, timed in turn within every repeat.

    On a shared machine the load drifts during a run; taking turns exposes the functions
    being compared to the same drift, so their ratio is fairer than two separate series.
    """
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
    """Time of a bare selector forward pass over time of ``transform``, on the same rows.

    Both see float32 rows: the bare pass a tensor already on the selector's device under
    ``torch.inference_mode()``, ``transform`` the same rows as a numpy array, so the ratio
    measures what validation, device transfers and top-k/threshold cost on top of the
    network (for MEED also querying the black box for the outputs its selector reads). 1.0
    means the wrapper is free; values a little above 1 are timing noise.
    """
    module = explainer.net_.module_.eval()
    param = next(module.parameters(), None)
    device = param.device if param is not None else torch.device("cpu")
    X32 = np.ascontiguousarray(X, dtype=np.float32)
    # What the selector reads (MEED's has the black box's outputs after the row; the
    # values do not change the time of a forward pass).
    X_t = torch.as_tensor(explainer._selector_input(X32, X32), device=device)

    def forward():
        with torch.inference_mode():
            module(X_t)
        sync(device)

    forward_s, transform_s = best_times([forward, lambda: explainer.transform(X32)], repeats)
    return forward_s / transform_s, forward_s, transform_s
