"""
Choosing k and tau with GridSearchCV
====================================

How many features does the model rely on in each row? The explainers' ``score`` is their
fidelity to the black box (post-hoc accuracy for a classifier), so scikit-learn's
:class:`~sklearn.model_selection.GridSearchCV` can search ``k`` and the temperature
``tau`` like any other hyperparameters. Fidelity alone prefers more features: keeping
more of each row brings the model's answer on it closer to the answer on the whole row, so
on the nonlinear-additive data set (the label depends on four of ten features, the model
also leans a little on the others) the score keeps rising with ``k``. The search therefore
needs a rule for how much fidelity a shorter explanation may cost: a ``refit`` callable
takes the smallest ``k`` within two points of the best score, as one takes the simplest
model within a standard error of the best.
"""

# %%
# Search over k and tau
# ---------------------
import os

import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.model_selection import GridSearchCV
from sklearn.neural_network import MLPClassifier

from sk_sointer import L2XExplainer
from sk_sointer.datasets import make_nonlinear_additive
from sk_sointer.display import FidelityVsKDisplay

# The test suite sets SK_SOINTER_FAST_EXAMPLES=1 to run this on a small budget.
FAST = os.environ.get("SK_SOINTER_FAST_EXAMPLES") == "1"
n_train, max_epochs, ks = (600, 2, [1, 4]) if FAST else (1000, 15, [1, 2, 3, 4, 6, 8])

torch.set_num_threads(1)
X, y, _ = make_nonlinear_additive(n_samples=n_train, random_state=0)
model = MLPClassifier((100, 100), early_stopping=True, random_state=0).fit(X, y)


def smallest_k_near_best(results, tolerance=0.02):
    """Index of the setting with the fewest features among those scoring within
    ``tolerance`` of the best mean score."""
    scores = np.asarray(results["mean_test_score"])
    near = np.flatnonzero(scores >= scores.max() - tolerance)
    return int(near[np.argmin(np.asarray(results["param_k"])[near])])


# The search refits the explainer on every fold; passed by keyword, the model reaches
# each fit whole (its outputs on the fold's rows are computed there).
search = GridSearchCV(
    L2XExplainer(max_epochs=max_epochs, batch_size=100, random_state=0),
    {"k": ks, "tau": [0.1, 1.0]},
    cv=3,
    refit=smallest_k_near_best,
).fit(X, black_box=model)
best = search.cv_results_["mean_test_score"].max()
print(f"best fidelity {best:.3f}; chosen {search.best_params_} with "
      f"{search.cv_results_['mean_test_score'][search.best_index_]:.3f}")

# %%
# Fidelity against k
# ------------------
# The star marks the setting the refit rule chose.
display = FidelityVsKDisplay.from_search(search, param="k")
display.ax_.set_ylabel("post-hoc accuracy (3-fold mean)")
display.ax_.set_title("the shortest explanation within two points of the best")
display.figure_.tight_layout()
plt.show()
