"""FastSHAP (Jethani et al., ICLR 2022), the amortized Shapley peer, written from the paper.

A network ``phi(x)`` (an attribution a feature and output column) is trained so that
``1_S . phi(x)`` matches ``v_x(S) - v_x(empty)``, the model on ``x`` with the features
outside ``S`` at the training mean, for ``n_subsets`` paired subsets a training row drawn
from the Shapley kernel. The efficiency normalisation makes the attributions sum to
``v_x(all) - v_x(empty)``. A row costs one forward pass and one query of the model.
"""

import time

import numpy as np
import torch
from torch import nn

from .data import EXPLAIN_SEED
from .peers import combine_outputs, explained_outputs

N_SUBSETS, EPOCHS, BATCH_SIZE, HIDDEN = 32, 200, 64, 128


def fastshap(data, profile, device):
    """FastSHAP's attributions of the explained rows, of each output's explained column."""
    X_train, X = data.X_train, data.X_explain
    outputs = explained_outputs(data.model, X)

    def values(rows):
        return np.hstack([np.asarray(output.values(rows), dtype=np.float64)
                          for output in outputs])

    rng = np.random.RandomState(EXPLAIN_SEED)
    torch.manual_seed(EXPLAIN_SEED)
    start = time.perf_counter()
    mean = X_train.mean(axis=0)
    scale = np.where(X_train.std(axis=0) > 0, X_train.std(axis=0), 1.0)
    n_rows, n_features = X_train.shape
    # Pairs of subsets a row: a size drawn with p(s) ∝ (d - 1) / (s (d - s)), a uniform
    # subset of that size, then its complement.
    sizes = np.arange(1, n_features)
    weights = (n_features - 1) / (sizes * (n_features - sizes))
    drawn = rng.choice(sizes, size=(n_rows, N_SUBSETS // 2), p=weights / weights.sum())
    ranks = rng.rand(n_rows, N_SUBSETS // 2, n_features).argsort(axis=2).argsort(axis=2)
    subsets = ranks < drawn[..., None]
    subsets = np.concatenate([subsets, ~subsets], axis=1)
    filled = np.where(subsets, X_train[:, None, :], mean).reshape(-1, n_features)
    empty = values(mean[None])[0]
    gains = (values(filled).reshape(n_rows, N_SUBSETS, -1) - empty)
    totals = values(X_train) - empty
    # The value gains in units of their spread, so that a regressor trains as a classifier.
    unit = max(float(np.abs(totals).std()), 1e-12)
    n_columns = totals.shape[1]
    net = nn.Sequential(nn.Linear(n_features, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN),
                        nn.ReLU(), nn.Linear(HIDDEN, n_features * n_columns)).to(device)

    def phi(rows, total):
        """The attributions plus an equal share a feature of what they leave of ``total``."""
        out = net(rows).view(len(rows), n_features, n_columns)
        return out + ((total - out.sum(dim=1)) / n_features).unsqueeze(1)

    tensors = [torch.as_tensor(a, dtype=torch.float32, device=device) for a in
               ((X_train - mean) / scale, subsets, gains / unit, totals / unit)]
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    for _ in range(EPOCHS):
        for batch in torch.randperm(n_rows, device=device).split(BATCH_SIZE):
            rows, kept, gain, total = (t[batch] for t in tensors)
            loss = ((kept @ phi(rows, total) - gain) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    setup_s = time.perf_counter() - start
    start = time.perf_counter()
    with torch.no_grad():
        rows = torch.as_tensor((X - mean) / scale, dtype=torch.float32, device=device)
        total = torch.as_tensor((values(X) - empty) / unit, dtype=torch.float32, device=device)
        attributions = phi(rows, total).cpu().numpy()
    explain_s = time.perf_counter() - start
    per_output, first = [], 0
    for output in outputs:
        per_output.append(attributions[np.arange(len(X)), :, first + output.columns])
        first += np.asarray(output.values(X[:1])).shape[1]
    return combine_outputs(per_output), setup_s, explain_s
