"""
Explaining a scikit-learn Pipeline on a real table
==================================================

The black box is an ordinary scikit-learn :class:`~sklearn.pipeline.Pipeline` (scaling and
a neural network) trained on the breast-cancer table that ships with scikit-learn: 30
measurements of cell nuclei in their own units (micrometres, counts, ratios). The explainer
is fitted on the DataFrame, so it knows the column names, and for each patient it keeps the
three measurements the pipeline relied on. Kept alone, with the other 27 set to their
means, they reproduce the pipeline's answer far more often than three random columns do.
"""

# %%
# Fit the pipeline and the explainer on the DataFrame
# ---------------------------------------------------
import os

import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sk_sointer import L2XExplainer, as_black_box
from sk_sointer.display import MaskDisplay, SelectionFrequencyDisplay
from sk_sointer.metrics import posthoc_accuracy

# The test suite sets SK_SOINTER_FAST_EXAMPLES=1 to run this on a small budget.
FAST = os.environ.get("SK_SOINTER_FAST_EXAMPLES") == "1"
max_epochs = 5 if FAST else 200

torch.set_num_threads(1)
X, y = load_breast_cancer(return_X_y=True, as_frame=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0)
pipeline = make_pipeline(StandardScaler(), MLPClassifier((50,), max_iter=500, random_state=0))
pipeline.fit(X_train, y_train)
explainer = L2XExplainer(k=3, max_epochs=max_epochs, batch_size=50, random_state=0)
explainer.fit(X_train, black_box=pipeline)

# %%
# Fidelity against random columns
# -------------------------------
masks = explainer.transform(X_test)
rng = np.random.default_rng(0)
random_masks = np.zeros_like(masks)
np.put_along_axis(random_masks, rng.random(masks.shape).argsort(axis=1)[:, :3], 1.0, axis=1)
black_box, baseline = as_black_box(pipeline), explainer.masker_.baseline_
print(f"pipeline accuracy: {pipeline.score(X_test, y_test):.3f}")
print(f"post-hoc accuracy, 3 explained columns: "
      f"{posthoc_accuracy(black_box, X_test, masks, baseline=baseline):.3f}")
print(f"post-hoc accuracy, 3 random columns:    "
      f"{posthoc_accuracy(black_box, X_test, random_masks, baseline=baseline):.3f}")

# %%
# Which measurements, for which patients
# --------------------------------------
# Names come from the explainer's ``feature_names_in_``; the bars split the patients by the
# pipeline's answer.
predicted = np.where(pipeline.predict(X_test) == 1, "benign", "malignant")
fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 9.5))
MaskDisplay.from_explainer(explainer, X_test, row_labels=predicted, max_rows=20, ax=top)
top.set_title("kept measurements of the first 20 patients")
SelectionFrequencyDisplay.from_masks(masks, explainer=explainer, by=predicted, top=10, ax=bottom)
bottom.set_title("the ten most kept measurements")
fig.tight_layout()
plt.show()
