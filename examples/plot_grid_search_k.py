"""
Choosing k and tau with GridSearchCV
====================================

How many features does the model rely on in each row? The explainers' ``score`` is their
fidelity to the black box (post-hoc accuracy for a classifier), so scikit-learn's
:class:`~sklearn.model_selection.GridSearchCV` can choose ``k`` and the temperature
``tau`` like any other hyperparameters. On the nonlinear-additive data set the label
depends on four of ten features: fidelity climbs until ``k`` reaches four and then levels
off, and the curve shows where keeping more features stops paying.
"""

# %%
# Search over k and tau
# ---------------------
import os

import matplotlib.pyplot as plt
import torch
from sklearn.model_selection import GridSearchCV
from sklearn.neural_network import MLPClassifier

from sk_sointer import L2XExplainer
from sk_sointer.datasets import make_nonlinear_additive
from sk_sointer.plotting import plot_fidelity_vs_k

# The test suite sets SK_SOINTER_FAST_EXAMPLES=1 to run this on a small budget.
FAST = os.environ.get("SK_SOINTER_FAST_EXAMPLES") == "1"
n_train, max_epochs, ks = (600, 2, [1, 4]) if FAST else (2000, 30, [1, 2, 3, 4, 5, 6])

torch.set_num_threads(1)
X, y, _ = make_nonlinear_additive(n_samples=n_train, random_state=0)
model = MLPClassifier((100, 100), early_stopping=True, random_state=0).fit(X, y)
# The search refits the explainer on every fold; passed by keyword, the model reaches
# each fit whole (its outputs on the fold's rows are computed there).
search = GridSearchCV(
    L2XExplainer(max_epochs=max_epochs, batch_size=100, random_state=0),
    {"k": ks, "tau": [0.1, 1.0]},
    cv=3,
).fit(X, black_box=model)
print("best:", search.best_params_, f"fidelity {search.best_score_:.3f}")

# %%
# Fidelity against k
# ------------------
ax = plot_fidelity_vs_k(search)
ax.set_ylabel("post-hoc accuracy (3-fold mean)")
ax.set_title("fidelity levels off at the four relevant features")
ax.figure.tight_layout()
plt.show()
