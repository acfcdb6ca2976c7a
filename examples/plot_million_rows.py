"""
Explaining a million rows
=========================

Per-row explainers such as KernelSHAP solve a new problem for every row, so their cost
grows with the rows explained: tens to hundreds of milliseconds each. An amortized explainer
pays once, in ``fit``; after that ``transform`` is one forward pass of a small network, a
few microseconds a row on one CPU thread. Here an :class:`~sk_sointer.L2XExplainer` explains
a million rows in about the time KernelSHAP takes for a handful (when ``shap`` is
installed; ``pip install shap``).
"""

# %%
# Fit once
# --------
import os
import time

import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.neural_network import MLPClassifier

from sk_sointer import L2XExplainer
from sk_sointer.datasets import make_orange_skin

# The test suite sets SK_SOINTER_FAST_EXAMPLES=1 to run this on a small budget.
FAST = os.environ.get("SK_SOINTER_FAST_EXAMPLES") == "1"
n_rows, n_shap_rows, max_epochs = (100_000, 1, 5) if FAST else (1_000_000, 5, 50)

torch.set_num_threads(1)
X, y, _ = make_orange_skin(n_samples=5000, random_state=0)
model = MLPClassifier((100, 100), early_stopping=True, random_state=0).fit(X, y)
start = time.perf_counter()
explainer = L2XExplainer(k=4, max_epochs=max_epochs, random_state=0).fit(X, black_box=model)
print(f"fit: {time.perf_counter() - start:.1f} s")

# %%
# Explain every row, and a few with KernelSHAP
# --------------------------------------------
# ``transform`` works through the rows in chunks, so memory stays bounded by the input, the
# masks and one chunk.
X_many = np.random.default_rng(1).standard_normal((n_rows, 10), dtype=np.float32)
start = time.perf_counter()
masks = explainer.transform(X_many)
seconds = time.perf_counter() - start
per_row = {"L2X transform": seconds / n_rows}
print(f"transform of {n_rows:,} rows: {seconds:.2f} s, {1e6 * per_row['L2X transform']:.2f} µs a row")

try:
    import shap
except ImportError:
    print("shap is not installed: KernelSHAP left out")
else:
    background = shap.kmeans(X, 10)
    kernel = shap.KernelExplainer(model.predict_proba, background)
    start = time.perf_counter()
    kernel.shap_values(X_many[:n_shap_rows], silent=True)
    per_row["KernelSHAP"] = (time.perf_counter() - start) / n_shap_rows
    print(f"KernelSHAP: {1e3 * per_row['KernelSHAP']:.0f} ms a row")

# %%
# Cost per row
# ------------
fig, ax = plt.subplots(figsize=(6, 2.4))
ax.barh(list(per_row), [1e6 * t for t in per_row.values()], color=["C1", "C0"][: len(per_row)])
ax.set_xscale("log")
ax.set_xlabel("microseconds per explained row (log scale)")
for i, t in enumerate(per_row.values()):
    ax.text(1e6 * t, i, f"  {1e6 * t:,.1f} µs", va="center")
ax.set_xlim(right=ax.get_xlim()[1] * 20)
fig.tight_layout()
plt.show()
