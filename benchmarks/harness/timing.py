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
    """Smallest wall time of each function, timed in turn within every repeat, so that the
    functions compared see the same drift of a shared machine's load."""
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
    """Time of a bare selector forward pass (a float32 tensor already on its device) over
    time of ``transform`` (the same rows as a numpy array), with both times: what
    validation, transfers and top-k cost on top of the network (1.0: nothing)."""
    module = explainer.net_.module_.eval()
    param = next(module.parameters(), None)
    device = param.device if param is not None else torch.device("cpu")
    X32 = np.ascontiguousarray(X, dtype=np.float32)
    # What the selector reads (MEED's: the black box's outputs after the row; their values
    # do not change the time of a forward pass).
    X_t = torch.as_tensor(explainer._selector_input(X32, X32), device=device)

    def forward():
        with torch.inference_mode():
            module(X_t)
        sync(device)

    forward_s, transform_s = best_times([forward, lambda: explainer.transform(X32)], repeats)
    return forward_s / transform_s, forward_s, transform_s
