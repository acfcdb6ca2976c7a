"""Small helpers shared across the package: devices, seeding, chunked inference."""

from contextlib import contextmanager

import numpy as np
import torch
from sklearn.utils import check_random_state

# Rows per forward pass at explanation time: large enough that a forward pass dominates the
# per-call overhead, small enough to bound memory on wide data.
INFERENCE_CHUNK = 65_536

# On the CPU, chunks of a few thousand rows (and at most a few million values) keep the
# selector's activations in cache and reuse the same memory from chunk to chunk: one forward
# pass over 2,048 rows at a time is faster than one over 10,000 rows at once.
CPU_INFERENCE_CHUNK = 2_048
CPU_INFERENCE_VALUES = 1 << 21

# On an accelerator, narrow rows go in chunks of up to this many values (and never fewer
# than INFERENCE_CHUNK rows): every chunk pays its launches and two waits for copies, which
# at 100,000 x 10 made two chunks of 65,536 rows cost 3.4 ms where one cost 2.6 (H200).
DEVICE_INFERENCE_VALUES = 1 << 22


class PortableNet:
    """Mixed into the package's skorch nets, before ``NeuralNet``: a net pickled on a CUDA
    machine unpickles on one without CUDA onto the CPU, silently.

    skorch does the same move but warns twice (loading to the CPU, then resetting
    ``device``); the explainers promise that a model trained on a GPU serves anywhere, so
    there is nothing for the user to act on.
    """

    def __setstate__(self, state):
        device = state.get("device")
        if device is not None and torch.device(device).type == "cuda" \
                and not torch.cuda.is_available():
            state["device"] = "cpu"
        super().__setstate__(state)


def device_copies(owner, name="_on_device"):
    """The dict in which ``owner`` keeps its tensors' device copies (its attribute
    ``name``), made on first use. Read and set as a plain attribute, past any
    ``__setattr__`` (a frozen dataclass, a skorch net): ``torch.compile`` traces that, and
    in some torch releases (2.11) not ``__dict__.setdefault``."""
    copies = getattr(owner, name, None)
    if copies is None:
        copies = {}
        object.__setattr__(owner, name, copies)
    return copies


def inference_chunk(device, n_columns):
    """Rows per chunk at explanation time on ``device`` for rows of ``n_columns`` values."""
    if device.type != "cpu":
        return max(INFERENCE_CHUNK, DEVICE_INFERENCE_VALUES // max(n_columns, 1))
    return max(1, min(CPU_INFERENCE_CHUNK, CPU_INFERENCE_VALUES // max(n_columns, 1)))


def resolve_device(device):
    """A :class:`torch.device` from ``"auto"`` (CUDA when present), ``"cpu"``, ``"cuda[:N]"``.

    A device this machine cannot train on is a ``ValueError`` that says so: CUDA on a
    machine without it, a CUDA index beyond its devices, ``"mps"`` where torch has no MPS
    backend, and any other kind of device (``"meta"`` holds shapes without values, and
    the networks run on no other backend).
    """
    if isinstance(device, torch.device):
        device = str(device)
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"device should be 'auto', 'cpu', 'cuda' or 'cuda:N'; got {device!r}.") from None
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device={str(resolved)!r} was requested but CUDA is not available.")
        if (resolved.index or 0) >= torch.cuda.device_count():
            raise ValueError(f"device={str(resolved)!r} does not exist: this machine has "
                             f"{torch.cuda.device_count()} CUDA device(s).")
    elif resolved.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError("device='mps' was requested but torch has no MPS backend here.")
    elif resolved.type not in ("cpu", "mps"):
        raise ValueError(f"device={device!r} is not a device the networks can train on: use "
                         "'auto', 'cpu', 'cuda' or 'cuda:N'.")
    return resolved


@contextmanager
def seeded(random_state, device):
    """Seed torch for the duration of a block without touching the caller's RNG state;
    yields the integer seed drawn from ``random_state``."""
    seed = int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
    devices = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield seed


def in_chunks(func, *arrays, chunk=INFERENCE_CHUNK):
    """``func`` applied to aligned row chunks of ``arrays``; the results concatenated.

    Results may be tensors or ndarrays (of the same kind for every chunk).
    """
    n_rows = len(arrays[0])
    results = [func(*(array[start : start + chunk] for array in arrays))
               for start in range(0, max(n_rows, 1), chunk)]
    if isinstance(results[0], torch.Tensor):
        return torch.cat(results)
    return np.concatenate(results)


def set_mode(module, training):
    """``module.train(training)``, skipped when the module and every submodule are already
    in that mode: ``train`` re-sets each submodule through the slow ``nn.Module.__setattr__``
    even when nothing changes, and training steps set modes on every batch (as
    ``transform`` does on every call: a fifth of its time on one row)."""
    if any(sub.training != training for sub in module.modules()):
        module.train(training)
