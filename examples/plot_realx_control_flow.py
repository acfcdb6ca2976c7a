"""
Keeping the feature that decides which features matter
======================================================

In REAL-X's S1 data set, feature 11 decides whether the label follows an XOR of features
1-2 or an orange-skin function of features 3-6. A jointly trained selector such as L2X
can leave feature 11 out: its approximator learns the regime from *which* features were
kept. :class:`~sk_sointer.RealXExplainer` trains its predictor on random masks only, so
leaving the control-flow feature out never pays. An :class:`~sk_sointer.metrics.EvalXEvaluator`
then judges both methods' masks without feeding the model zero-filled rows.
"""

# %%
# Fit both explainers on the same data
# ------------------------------------
import os

import matplotlib.pyplot as plt
import torch

from sk_sointer import L2XExplainer, RealXExplainer
from sk_sointer.datasets import make_control_flow
from sk_sointer.metrics import EvalXEvaluator, control_flow_selection_rate, true_positive_rate

# The test suite sets SK_SOINTER_FAST_EXAMPLES=1 to run this on a small budget.
FAST = os.environ.get("SK_SOINTER_FAST_EXAMPLES") == "1"
n_train = 1000 if FAST else 5000
budget = {"max_epochs": 3} if FAST else {}
realx_budget = {"max_epochs": 4, "predictor_epochs": 2} if FAST else {}

torch.set_num_threads(1)
X, y, relevant = make_control_flow(n_samples=n_train + 1000, setting="S1", random_state=0)
X_train, y_train, X_test, y_test = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
explainers = {
    "L2X (k = 4)": L2XExplainer(k=4, random_state=0, **budget),
    "REAL-X": RealXExplainer(random_state=0, **realx_budget),
}
evaluator = EvalXEvaluator(random_state=0, **budget).fit(X_train, y_train)

# %%
# Compare control-flow selection, true-positive rate and EVAL-X accuracy
# ----------------------------------------------------------------------
rows = {}
for name, explainer in explainers.items():
    masks = explainer.fit(X_train, y_train).transform(X_test)
    rows[name] = (
        control_flow_selection_rate(masks, feature=10),
        true_positive_rate(relevant[n_train:], masks),
        evaluator.score_masks(X_test, masks, y_test)["eACC"],
    )
    print(name, "CFSR {:.2f}  TPR {:.2f}  eACC {:.3f}".format(*rows[name]))

fig, ax = plt.subplots(figsize=(6, 3))
for offset, (name, values) in zip((-0.2, 0.2), rows.items()):
    ax.bar([i + offset for i in range(3)], values, width=0.4, label=name)
ax.set_xticks(range(3), ["control-flow selected", "TPR", "eACC"])
ax.set_ylim(0, 1.05)
ax.legend()
fig.tight_layout()
plt.show()
