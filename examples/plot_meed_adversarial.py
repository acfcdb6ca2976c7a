"""
What MEED's adversary takes away from the pixels left out
=========================================================

A neural network reads scikit-learn's 8 x 8 handwritten digits (ten classes), and a
:class:`~sk_sointer.MEEDExplainer` keeps 10 of the 64 pixels of each held-out digit. Next to
the approximator that predicts the network from the selected pixels, MEED trains an
adversary that predicts it from the pixels *left out*, and the selector learns to defeat
it. Fitted again with the adversary's weight ``w_u`` set to 0 (the paper's ablation
"without adversarial infidelity learning"), the selector is trained on the selected pixels
alone. Two numbers judge each: FS-M, the network's agreement with itself when only the
selected pixels are kept, and FU-M, the same when they are removed (set to 0). With the
adversary, the pixels left out carry less of the network's answer: FU-M is lower, and here
FS-M is higher too.
"""

# %%
# Train the black box and fit MEED with and without the adversary
# ---------------------------------------------------------------
import os

# The test suite sets SK_SOINTER_FAST_EXAMPLES=1 to run this on a small budget.
FAST = os.environ.get("SK_SOINTER_FAST_EXAMPLES") == "1"

import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.neural_network import MLPClassifier

from sk_sointer import MEEDExplainer
from sk_sointer.display import ComparisonDisplay
from sk_sointer.metrics import posthoc_accuracy

torch.set_num_threads(1)
n_test = 400
mlp_iter = 50 if FAST else 500
max_epochs = 2 if FAST else 40
k = 10

X, y = load_digits(return_X_y=True)  # (1797, 64): 8 x 8 pixels, intensities 0-16
order = np.random.default_rng(0).permutation(len(X))
X_train, y_train = X[order[n_test:]], y[order[n_test:]]
X_test, y_test = X[order[:n_test]], y[order[:n_test]]
model = MLPClassifier((100,), max_iter=mlp_iter, random_state=0).fit(X_train, y_train)
print(f"network accuracy on {n_test} held-out digits: {model.score(X_test, y_test):.3f}")

# Flat rows of 64 pixels for the network; a left-out pixel is blank (``baseline="zero"``).
settings = {"MEED": 1.0, "w/o adversary": 0.0}  # w_u = 0: the ablation
masks = {}
for name, w_u in settings.items():
    explainer = MEEDExplainer(k=k, w_u=w_u, baseline="zero", image_shape=(8, 8),
                              max_epochs=max_epochs, batch_size=128, random_state=0)
    masks[name] = explainer.fit(X_train, black_box=model).transform(X_test)

# %%
# FS-M and FU-M
# -------------
# For reference, ``k`` random pixels of each digit.
rng = np.random.default_rng(0)
masks_random = np.zeros_like(X_test)
for row in masks_random:
    row[rng.choice(64, size=k, replace=False)] = 1.0
scores = {}
for name, selected in {**masks, f"{k} random pixels": masks_random}.items():
    scores[name] = [posthoc_accuracy(model, X_test, selected, baseline="zero", features=features)
                    for features in ("selected", "unselected")]
    print(f"{name:18s} FS-M {scores[name][0]:.3f}   FU-M {scores[name][1]:.3f}")

fig, ax = plt.subplots(figsize=(6.5, 3.2))
for offset, (name, values) in zip((-0.27, 0.0, 0.27), scores.items()):
    bars = ax.bar(np.arange(2) + offset, values, width=0.27, label=name)
    ax.bar_label(bars, fmt="%.2f", fontsize="small")
ax.set_xticks(range(2), ["FS-M: selected pixels kept\n(higher is better)",
                         "FU-M: selected pixels removed\n(lower is better)"])
ax.set_ylabel("agreement with the network")
ax.set_ylim(0, 1.2)
ax.legend(fontsize="small", loc="upper center", ncol=3)
fig.tight_layout()

# %%
# The selected pixels of a few held-out digits
# --------------------------------------------
# One digit of each of five classes.
shown = [np.flatnonzero(y_test == digit)[0] for digit in (2, 3, 5, 8, 9)]
display = ComparisonDisplay.from_masks(
    {name: selected[shown] for name, selected in masks.items()},
    images=X_test[shown].reshape(-1, 8, 8))
display.figure_.suptitle(f"{k} pixels kept of 64")
display.figure_.tight_layout()
plt.show()
