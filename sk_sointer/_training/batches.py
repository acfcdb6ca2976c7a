"""Mini-batches sliced from whole tensors: :func:`index_batches` turns a skorch dataset of
arrays into :class:`_IndexBatches` (the rows moved to the net's device once, one gather a
batch), the batches torch's ``DataLoader(shuffle=True)`` would draw."""

import math
import warnings

import numpy as np
import torch
from skorch.dataset import Dataset
from torch.utils.data import Subset


def index_batches(net, dataset, training, *, on_device=True):
    """:class:`_IndexBatches` over a skorch net's dataset of arrays (rows moved to the net's
    device once when ``on_device`` and they fit there), or None for any other dataset."""
    tensors = _dataset_tensors(dataset)
    if tensors is None:
        return None
    X, y = tensors
    if on_device:
        try:
            X, y = X.to(net.device), y.to(net.device)
        except torch.OutOfMemoryError:
            warnings.warn(
                f"The training rows do not fit in {net.device}'s memory; they stay on "
                "the host and each batch is copied (set data_on_device=False to skip "
                "the attempt).",
                UserWarning,
            )
            X, y = tensors
    return _IndexBatches(X, y, net.batch_size, shuffle=training, skip_single_last=training)


class _IndexBatches:
    """Mini-batches sliced from two aligned tensors by shuffled index blocks.

    skorch's default path indexes a dataset row by row and collates every batch; slicing
    whole tensors (resident on the training device) does the same in one gather per batch.
    The random draws are those of torch's ``DataLoader(shuffle=True)`` on the global
    generator, so a fit gives the same batches through either path. In training, a last
    batch of a single row is skipped: batch normalisation cannot normalise one row, and
    the row is trained on in other epochs, the order being shuffled every epoch.
    """

    def __init__(self, X, y, batch_size, *, shuffle, skip_single_last):
        self.X, self.y = X, y
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.skip_single_last = skip_single_last

    def __len__(self):
        return math.ceil(len(self.X) / self.batch_size)

    def __iter__(self):
        n_rows = len(self.X)
        torch.empty((), dtype=torch.int64).random_()  # the DataLoader iterator's base seed
        order = None
        if self.shuffle:
            generator = torch.Generator()
            generator.manual_seed(int(torch.empty((), dtype=torch.int64).random_().item()))
            order = torch.randperm(n_rows, generator=generator).to(self.X.device)
        for start in range(0, n_rows, self.batch_size):
            stop = min(start + self.batch_size, n_rows)
            if self.skip_single_last and start > 0 and stop - start == 1:
                return
            if order is None:
                yield self.X[start:stop], self.y[start:stop]
            else:
                index = order[start:stop]
                yield self.X[index], self.y[index]


def _dataset_tensors(dataset):
    """``(X, y)`` tensors of a skorch dataset of arrays (or a subset of one), else None."""
    if isinstance(dataset, Subset):
        inner = _dataset_tensors(dataset.dataset)
        if inner is None:
            return None
        index = torch.as_tensor(np.asarray(dataset.indices), dtype=torch.long)
        return inner[0][index], inner[1][index]
    if (type(dataset) is Dataset and isinstance(dataset.X, np.ndarray)
            and isinstance(dataset.y, np.ndarray)):
        return torch.as_tensor(dataset.X), torch.as_tensor(dataset.y)
    return None
