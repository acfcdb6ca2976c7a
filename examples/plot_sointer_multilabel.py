"""
Which features does each label of a multi-label model rely on?
==============================================================

SOInter's synthetic set E1 has two binary labels, the configuration of least energy
``(x1 y1 + x4)(1 - y2) + (x2 (1 - y1) + x3) y2``: both labels depend on x1-x4 and on
nothing else, and on each other. A multi-label neural network is trained on it, with the
columns shuffled so that the four true features are not simply the first ones. One
:class:`~sk_sointer.SOInterExplainer` per label (``target=0`` and ``target=1``) learns
which 4 features of a row decide that label; its energy network, trained on the model's
joint outputs, tells it how the two labels hang together. The panels show how often each
feature is selected for each label, split by the label's predicted value; the ground truth
is printed next to what was found.
"""

# %%
# Train a multi-label network on E1
# ---------------------------------
import os

# The test suite sets SK_SOINTER_FAST_EXAMPLES=1 to run this on a small budget.
FAST = os.environ.get("SK_SOINTER_FAST_EXAMPLES") == "1"

import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.neural_network import MLPClassifier

from sk_sointer import EnergyNet, SOInterExplainer
from sk_sointer.datasets import make_structured_output
from sk_sointer.display import TargetsDisplay
from sk_sointer.metrics import true_positive_rate

torch.set_num_threads(1)
n_model = 1000 if FAST else 5000
n_explainer = 300 if FAST else 1000
mlp_iter = 20 if FAST else 300
max_epochs = 2 if FAST else 30

X, Y, relevant = make_structured_output(n_model + n_explainer + 1000, energy="E1",
                                        n_features=10, random_state=0)
# Shuffle the columns: the paper's x1-x4 land at random places among the 10 columns.
columns = np.random.default_rng(0).permutation(10)
X, relevant = X[:, columns], relevant[:, :, columns]
names = [f"x{j + 1}" for j in columns]
X_model, Y_model = X[:n_model], Y[:n_model]
X_explainer = X[n_model : n_model + n_explainer]
X_test, relevant_test = X[-1000:], relevant[-1000:]

model = MLPClassifier((100, 100), max_iter=mlp_iter, random_state=0).fit(X_model, Y_model)
predicted = model.predict(X_test)  # (1000, 2): one 0/1 column per label
print("network accuracy per label on 1000 held-out rows:",
      np.round((predicted == Y[-1000:]).mean(axis=0), 3))

# %%
# One SOInter explainer per label
# -------------------------------
# The explainers need the model itself: they query it on masked rows between epochs.
masks = {}
for target in range(2):
    explainer = SOInterExplainer(target=target, k=4, max_epochs=max_epochs,
                                 energy=EnergyNet(max_epochs=max_epochs), random_state=0)
    explainer.fit(X_explainer, black_box=model)
    masks[f"label y{target + 1}"] = explainer.transform(X_test)
    print(f"label y{target + 1}: post-hoc accuracy {explainer.score(X_test):.3f}")

# %%
# Expected and found
# ------------------
expected = [names[j] for j in np.flatnonzero(relevant_test[0, 0])]
for target, (label, selected) in enumerate(masks.items()):
    found = [names[j] for j in np.argsort(-selected.mean(axis=0), kind="stable")[:4]]
    exact = np.mean((selected == relevant_test[:, target]).all(axis=1))
    print(f"{label}: expected {sorted(expected)}, most often selected {sorted(found)}; "
          f"rows with exactly the true four: {exact:.1%}, "
          f"TPR {true_positive_rate(relevant_test[:, target], selected):.1%}")

by = {label: [f"y{t + 1} = {value}" for value in predicted[:, t]]
      for t, label in enumerate(masks)}
display = TargetsDisplay.from_masks(masks, feature_names=names, by=by, n_cols=2)
display.figure_.suptitle("SOInter on E1: the 4 features selected for each label")
display.figure_.tight_layout()
plt.show()
