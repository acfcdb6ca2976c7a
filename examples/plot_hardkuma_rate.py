"""
Asking HardKuma for a share of the features
===========================================

Other explainers ask for ``k`` or for a penalty whose effect depends on the data;
:class:`~sk_sointer.HardKumaExplainer` asks for the share of features to keep. Its gates
can be exactly open or exactly closed, and an augmented Lagrangian holds the share of open
gates at ``selection_rate`` during training. Here a neural network is trained on L2X's
nonlinear-additive set, code variant (the label's logit is
``-100 sin(0.2 x1) + |x2| + x3 + exp(-x4) - 2.4``; x5-x10 are noise), and HardKuma is
fitted at the rates 10 %, 30 % and 50 %. The left panel follows the share of open gates
batch by batch while the selector trains (the first half of the epochs trains the
predictor alone, on random masks), next to the share kept by ``transform`` on held-out
rows: it settles at each target, within two points. The right panel shows which features
are kept at 30 %, about three of the ten a row: x1, x3 and x4, the true features without
the weakest one, ``|x2|``.
"""

# %%
# Train the black box and fit HardKuma at three rates
# ---------------------------------------------------
import os

# The test suite sets SK_SOINTER_FAST_EXAMPLES=1 to run this on a small budget.
FAST = os.environ.get("SK_SOINTER_FAST_EXAMPLES") == "1"

import matplotlib.pyplot as plt
import torch
from sklearn.neural_network import MLPClassifier

from sk_sointer import HardKumaExplainer
from sk_sointer.datasets import make_nonlinear_additive
from sk_sointer.display import SelectionFrequencyDisplay
from sk_sointer.metrics import true_positive_rate

torch.set_num_threads(1)
n_model = 1000 if FAST else 10_000
n_explainer = 500 if FAST else 6000
max_epochs = 4 if FAST else 50

X, y, relevant = make_nonlinear_additive(n_samples=n_model + n_explainer + 1000,
                                         variant="code", random_state=0)
X_model, y_model = X[:n_model], y[:n_model]
X_explainer = X[n_model : n_model + n_explainer]
X_test, relevant_test = X[-1000:], relevant[-1000:]
model = MLPClassifier((100, 100), early_stopping=True, random_state=0).fit(X_model, y_model)

rates = (0.1, 0.3, 0.5)
explainers, masks = {}, {}
for rate in rates:
    explainer = HardKumaExplainer(selection_rate=rate, max_epochs=max_epochs, batch_size=256,
                                  random_state=0)
    explainers[rate] = explainer.fit(X_explainer, black_box=model)
    masks[rate] = explainer.transform(X_test)  # k=None: the open gates, a count per row
    print(f"target {rate:.0%}: kept {masks[rate].mean():.1%} of the features "
          f"({masks[rate].sum(axis=1).min():.0f} to {masks[rate].sum(axis=1).max():.0f} "
          f"a row), true positive rate {true_positive_rate(relevant_test, masks[rate]):.1%}")

# %%
# The share of open gates during training and on held-out rows
# ------------------------------------------------------------
# ``net_.history`` records, for every batch of the selector's epochs, the share of
# open test-time gates on that batch (``selection_rate``).
fig, (ax_rate, ax_features) = plt.subplots(1, 2, figsize=(10, 3.6),
                                           gridspec_kw={"width_ratios": (1.2, 1)})
for n, rate in enumerate(rates):
    # One list per selector epoch (the predictor's epochs record no rate).
    epochs = explainers[rate].net_.history[:, "batches", :, "selection_rate"]
    per_batch = [value for epoch in epochs for value in epoch]
    ax_rate.plot(per_batch, color=f"C{n}", linewidth=0.8, label=f"target {rate:.0%}")
    ax_rate.axhline(rate, color=f"C{n}", linestyle="--", linewidth=0.8)
    ax_rate.plot([len(per_batch) + 5], [masks[rate].mean()], marker="o", color=f"C{n}",
                 linestyle="none", clip_on=False)
ax_rate.set_xlabel("selector step (dot: transform on held-out rows)")
ax_rate.set_ylabel("share of open gates")
ax_rate.set_ylim(0, 0.7)
ax_rate.legend(fontsize="small", ncol=3, loc="upper center")

# %%
# Which features are kept at 30 %
# -------------------------------
names = [f"x{j + 1}" for j in range(X.shape[1])]  # x1-x4 decide the label
SelectionFrequencyDisplay.from_masks(masks[0.3], feature_names=names, ax=ax_features)
ax_features.set_title("selected at a target of 30 %")
fig.tight_layout()
plt.show()
