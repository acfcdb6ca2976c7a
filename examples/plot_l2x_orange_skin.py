"""
Which features did the model use, row by row?
=============================================

A neural network is trained on the orange-skin data set, whose label depends on the first
four of ten features. An :class:`~sk_sointer.L2XExplainer` is fitted once on the model and
then explains each held-out row with a single forward pass. The bar chart shows how often
each feature is selected, and the median rank compares the masks with the ground truth.
"""

# %%
# Train the black box and the explainer
# -------------------------------------
import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.neural_network import MLPClassifier

from sk_sointer import L2XExplainer
from sk_sointer.datasets import make_orange_skin
from sk_sointer.metrics import median_rank

torch.set_num_threads(1)
X, y, relevant = make_orange_skin(n_samples=6000, random_state=0)
X_train, y_train, X_test, relevant_test = X[:5000], y[:5000], X[5000:], relevant[5000:]
model = MLPClassifier((100, 100), early_stopping=True, random_state=0).fit(X_train, y_train)
explainer = L2XExplainer(k=4, random_state=0).fit(X_train, black_box=model)

# %%
# Explain held-out rows
# ---------------------
masks = explainer.transform(X_test)
print(f"median rank of the true features: {median_rank(relevant_test, masks):.2f} (optimum 2.50)")
print(f"post-hoc fidelity: {explainer.score(X_test):.3f}")

fig, ax = plt.subplots(figsize=(6, 3))
ax.bar(np.arange(1, 11), masks.mean(axis=0), color=["C1"] * 4 + ["C0"] * 6)
ax.set_xlabel("feature")
ax.set_ylabel("selected in this share of rows")
ax.set_xticks(np.arange(1, 11))
ax.set_title("L2X on orange skin: the four true features are selected")
fig.tight_layout()
plt.show()
