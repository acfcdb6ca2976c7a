"""
Which features did the model use, row by row?
=============================================

A neural network is trained on the orange-skin data set, whose label depends on the first
four of ten features. An :class:`~sk_sointer.L2XExplainer` is fitted once on the model and
then explains each held-out row with a single forward pass. The heat map shows the mask of
each of the first rows, the bar chart how often each feature is selected, per predicted
class; the median rank compares the masks with the ground truth. Last, the insertion and
deletion curves follow the model's answer as each row's top-ranked features are put back
into the baseline, or taken out of the row.
"""

# %%
# Train the black box and the explainer
# -------------------------------------
import os

import matplotlib.pyplot as plt
import torch
from sklearn.neural_network import MLPClassifier

from sk_sointer import L2XExplainer
from sk_sointer.datasets import make_orange_skin
from sk_sointer.display import (
    InsertionDeletionDisplay,
    MaskDisplay,
    SelectionFrequencyDisplay,
)
from sk_sointer.metrics import median_rank

# The test suite sets SK_SOINTER_FAST_EXAMPLES=1 to run this on a small budget.
FAST = os.environ.get("SK_SOINTER_FAST_EXAMPLES") == "1"
n_train, max_epochs = (1000, 5) if FAST else (5000, 100)

torch.set_num_threads(1)
X, y, relevant = make_orange_skin(n_samples=n_train + 1000, random_state=0)
X_train, y_train = X[:n_train], y[:n_train]
X_test, relevant_test = X[n_train:], relevant[n_train:]
model = MLPClassifier((100, 100), early_stopping=True, random_state=0).fit(X_train, y_train)
explainer = L2XExplainer(k=4, max_epochs=max_epochs, random_state=0).fit(X_train, black_box=model)

# %%
# Explain held-out rows
# ---------------------
# ``transform`` returns one k-hot row per sample: the features the model relied on there.
masks = explainer.transform(X_test)
print(f"median rank of the true features: {median_rank(relevant_test, masks):.2f} (optimum 2.50)")
print(f"post-hoc fidelity: {explainer.score(X_test):.3f}")

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6), width_ratios=(1, 1.3))
MaskDisplay.from_masks(masks, max_rows=25, ax=left)
left.set_title("masks of the first 25 rows")
SelectionFrequencyDisplay.from_masks(masks, by=model.predict(X_test), ax=right)
right.set_title("the four true features are selected")
fig.tight_layout()
plt.show()

# %%
# Insertion and deletion curves
# -----------------------------
# The explainer's scores (``explain``) rank each row's features. Keeping only the top
# ``j`` of them (the rest at the baseline) should bring the model back to its own answer
# quickly, and removing them should lose it quickly: a large area under insertion, a small
# one under deletion. Where every feature is at the baseline, both curves meet at the share
# of rows of the model's answer on the mean row.
display = InsertionDeletionDisplay.from_explainer(explainer, X_test, name="L2X")
print(f"insertion AUC: {display.insertion_auc:.3f}, deletion AUC: {display.deletion_auc:.3f}")
display.ax_.set_title("L2X's ranking of the features")
display.figure_.tight_layout()
plt.show()
