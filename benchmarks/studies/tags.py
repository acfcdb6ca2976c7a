"""SOInter on a many-label text model: one hashtag of a tweet tagger, explained by words.

The paper's Bibtex experiment on tweets (``load_tweet_hashtags``: hashtags as tags, the other
words as a binary bag of words): SOInter explains the tag of the whole multi-label MLP, L2X the
tag alone, KernelSHAP and LIME its probability row by row, a reference k of the tweet's own
words. A tweet has 4.9 words, so k = 2, not the paper's 30; a left-out word is absent.

    python benchmarks/bench.py tags --profile full --update-doc
"""

from types import SimpleNamespace

import numpy as np
import torch
from sklearn.base import BaseEstimator

from sk_sointer import MLP, EnergyNet
from sk_sointer.datasets import load_tweet_hashtags
from sk_sointer.metrics import posthoc_accuracy

from ..harness import report
from ..harness.data import EXPLAIN_SEED, TRAIN_SEED, OneLabel, fit_mlp
from ..harness.ours import build, fit_and_explain, recorded_params
from ..harness.peers import random_present, topk_of_abs
from ..harness.registry import METHODS
from ..harness.study import Metric, Study, Table, percent, seeded, with_references
from ..harness.timing import elapsed

RANDOM, SHAP, LIME = "random", "shap_kernel", "lime"
TOP_WORDS = "top_words"  # the derived records of the top-words table
METHOD_NAMES = ("sointer", "l2x", SHAP, LIME, RANDOM)

# Learns from the interpreter's own masks because uniform masks leave a bag of words empty;
# the unary encoding and pseudo-likelihood keep the tag's answer as well as the pairwise
# likelihood in a third of the time; the refinement keeps more answers (doc/tuning.rst).
_SOINTER = {"fill": "baseline", "energy_masks": 0, "requery": "batch", "energy_refit": True,
            "refine": "model"}
_PROFILE = dict(tags=10, k=2, seeds=3, n_explain=1000, n_train=1000, n_peer=200,
                black_box_hidden=(100,), top_tags=3, n_top_words=30, lime_num_samples=500,
                shap_nsamples="auto")
PROFILES = {
    "fast": {**_PROFILE, "tags": 2, "seeds": 1, "n_explain": 100, "n_train": 300, "n_peer": 20,
             "top_tags": 1, "n_top_words": 10, "lime_num_samples": 100,
             "explainer_params": {
                 "sointer": {**_SOINTER, "max_epochs": 2, "energy__max_epochs": 1,
                             "refine": None},
                 "l2x": {"max_epochs": 2, "refine": None}}},
    "full": {**_PROFILE, "explainer_params": {"sointer": {**_SOINTER, "max_epochs": 20},
                                              "l2x": {"max_epochs": 20}}},
}


class PresentWordsSelector(BaseEstimator):
    """Factory of a selector for a bag of words: an MLP's logits (zero at the start) plus
    ``gain`` for every word present in the row (above its training mean once standardised).
    With the package's MLP selector both explainers learnt to keep absent words: a hidden
    layer has to learn a near-identity of 2,000 inputs to find the present ones."""

    def __init__(self, hidden_units=(100,), gain=10.0):
        self.hidden_units = hidden_units
        self.gain = gain

    def __call__(self, in_features, out_features, input_shape=None):
        body = MLP(hidden_units=self.hidden_units, zero_output=True)(in_features, out_features)
        return _PresenceBonus(body, self.gain)

    def __sklearn_is_fitted__(self):
        return True  # a factory is a configuration, never fitted


class _PresenceBonus(torch.nn.Module):
    def __init__(self, body, gain):
        super().__init__()
        self.body = body
        self.gain = gain

    def forward(self, x):
        return self.body(x) + self.gain * (x > 0).to(x.dtype)


def prepare(dataset, profile, device):
    """The first ``n_explain`` tweets (seed :data:`~.data.EXPLAIN_SEED`) are explained, the
    others train the black box, the first ``n_train`` of those the explainers."""
    X, Y, words, tags = load_tweet_hashtags()
    order = np.random.RandomState(EXPLAIN_SEED).permutation(len(X))
    explain, rest = order[: profile.n_explain], order[profile.n_explain :]
    model, fit_s = fit_mlp(X[rest], Y[rest], profile.black_box_hidden)
    return SimpleNamespace(
        X=X, Y=Y, words=words, tags=list(tags), X_train=X[rest[: profile.n_train]],
        X_explain=X[explain], Y_explain=Y[explain], predicted=model.predict(X[explain]),
        model=model, black_box_fit_s=fit_s)


def dataset_values(data, dataset):
    j = data.tags.index(dataset)
    predicted = data.predicted[:, j]
    out = {"tag_rate": float(data.Y_explain[:, j].mean()),
           "black_box_rate": float(predicted.mean()),
           "black_box_acc": float(np.mean(predicted == data.Y_explain[:, j])),
           "n_positive": int(predicted.sum()),
           "posthoc_acc_empty": float(posthoc_accuracy(
               OneLabel(data.model, j), data.X_explain, np.zeros_like(data.X_explain),
               baseline="zero"))}
    if j == 0:  # the set and the black box once, with the first tag
        out.update(n_rows=len(data.X), n_words=data.X.shape[1], n_tags=data.Y.shape[1],
                   tags_per_row=float(data.Y.sum(axis=1).mean()),
                   words_per_row=float(data.X.sum(axis=1).mean()),
                   n_train=len(data.X_train), n_explain=len(data.X_explain),
                   black_box_exact=float(np.mean((data.predicted == data.Y_explain).all(1))),
                   black_box_fit_s=data.black_box_fit_s)
    return out


def shap_attributions(view, rows, profile):
    """KernelSHAP of the tag's probability, the empty tweet as background."""
    import shap

    explainer = shap.KernelExplainer(lambda batch: view.predict_proba(batch)[:, 1],
                                     np.zeros((1, rows.shape[1]), dtype=rows.dtype))
    np.random.seed(EXPLAIN_SEED)  # KernelExplainer samples coalitions from numpy's generator
    return np.stack([explainer.shap_values(row[None], nsamples=profile.shap_nsamples,
                                           silent=True)[0] for row in rows])


def lime_attributions(view, rows, words, profile):
    """LIME's text explainer of the tag's probability, a perturbed text read as a bag of words."""
    from lime.lime_text import LimeTextExplainer

    column = {word: j for j, word in enumerate(words)}

    def proba(texts):
        batch = np.zeros((len(texts), len(words)), dtype=rows.dtype)
        for i, text in enumerate(texts):
            batch[i, [column[word] for word in text.split()]] = 1
        return view.predict_proba(batch)

    explainer = LimeTextExplainer(split_expression=" ", bow=True, random_state=EXPLAIN_SEED)
    attributions = np.zeros(rows.shape)
    for i, present in enumerate(np.flatnonzero(row) for row in rows):
        if len(present):
            explanation = explainer.explain_instance(
                " ".join(words[present]), proba, labels=(1,), num_features=len(present),
                num_samples=profile.lime_num_samples)
            for word, weight in explanation.as_list(label=1):
                attributions[i, column[word]] = weight
    return attributions


def top_words(masks, rows_predicted, words, n):
    """The ``n`` words most selected in the rows given the tag, with the share of them kept."""
    chosen = masks[rows_predicted]
    counts = chosen.sum(axis=0)  # no row: no count above 0, no word
    order = np.argsort(-counts, kind="stable")[:n]
    return [[str(words[j]), round(float(counts[j] / len(chosen)), 3)] for j in order
            if counts[j] > 0]


def measure(data, dataset, method, seed, profile, device, k):
    j = data.tags.index(dataset)
    view = OneLabel(data.model, j)
    positive = data.predicted[:, j] == 1
    n_peer = min(profile.n_peer, len(data.X_explain))
    out = {}
    if method in ("sointer", "l2x"):
        explainer = build(METHODS[method], profile, seed=seed, device=device, target=j, k=k,
                          baseline=0.0, selector=PresentWordsSelector())
        masks, timing = fit_and_explain(explainer, data.X_train,
                                        data.model if method == "sointer" else view,
                                        data.X_explain)
        out.update(timing, params=recorded_params(explainer, seed=False))
        if method == "sointer" and seed == TRAIN_SEED and j < profile.top_tags:
            out["top_words"] = top_words(masks, positive, data.words, profile.n_top_words)
    elif method == RANDOM:
        masks = random_present(data.X_explain, k, seed)
    else:
        rows = data.X_explain[:n_peer]
        attributions, explain_s = elapsed(
            lambda: shap_attributions(view, rows, profile) if method == SHAP
            else lime_attributions(view, rows, data.words, profile))
        out["explain_ms_per_row"] = 1000 * explain_s / n_peer
        masks = topk_of_abs(attributions, k)

    def posthoc(rows):  # on the explained tweets ``rows``
        return float(posthoc_accuracy(view, data.X_explain[rows], masks[rows], baseline="zero"))

    out["posthoc_acc_peer_rows"] = posthoc(slice(n_peer))
    if len(masks) == len(data.X_explain):  # ours and the reference: every explained row
        out["posthoc_acc"] = posthoc(slice(None))
        if positive.any():
            out["posthoc_acc_positive"] = posthoc(positive)
    return out


def fields(records, machine, profile):
    """The set's numbers (with its first tag's) and SOInter's energy network and interpreter
    epochs; the network's "auto" settings as they resolve at the set's number of tags."""
    first = next((r["dataset"] for r in records if r["metric"] == "n_rows"), None)
    data = {r["metric"]: r["value"] for r in records
            if r["method"] is None and r["dataset"] == first}
    params = profile.params_for("sointer")
    energy = EnergyNet().set_params(**{key.removeprefix("energy__"): value
                                       for key, value in params.items()
                                       if key.startswith("energy__")})
    if data.get("n_tags") is not None:
        energy.build(1, (2,) * int(data["n_tags"]))
    loss, encoding, epochs = (getattr(energy, name + "_", getattr(energy, name))
                              for name in ("loss", "encoding", "max_epochs"))
    data_text = report.text(
        "tags", "data", data=data, hidden="-".join(map(str, profile.black_box_hidden)),
        n_black_box=data["n_rows"] - data["n_explain"],
        exact=100 * data["black_box_exact"]) + " " if data else ""
    return {"data_text": data_text, "encoding": encoding, "epochs": epochs,
            "loss": {"pseudolikelihood": "pseudo-likelihood"}.get(loss, loss),
            "interpreter_epochs": params.get("max_epochs")}


# Words the top-words table prints with their inner letters starred (the records keep them).
_STARRED = frozenset({"fuck", "fucking", "shit", "bitch", "cunt", "dick", "asshole"})


def with_top_words(records):
    """The records and one per (tag, rank) of SOInter's top words (seed 0), whose value is
    the text of its cell: the word and the share of the tweets given the tag that keep it."""
    return [*records, *(
        {"study": r["study"], "dataset": r["dataset"], "method": TOP_WORDS, "seed": None,
         "metric": "top_word", "unit": "", "rank": rank, "tag": "#" + r["dataset"],
         "value": f"{_starred(word)} ({100 * share:.0f} %)"}
        for r in records if r["method"] == "sointer" and r["metric"] == "fit_s"
        for rank, (word, share) in enumerate(r.get("top_words") or (), start=1))]


def _starred(word):
    return word[0] + "*" * (len(word) - 2) + word[-1] if word in _STARRED else word


_TAG = {"dataset": "Tag"}
_ACCURACY = {"posthoc_acc": "every explained tweet, k = {k}",
             "posthoc_acc_positive": "the tweets the black box gives it",
             "posthoc_acc_peer_rows": "the first {n_peer} explained tweets"}
_PAGE_TABLES = (
    *(Table("Post-hoc accuracy % on the tag, " + rows, (metric,), rows=("dataset",),
            columns="method", mean_row=True, labels=_TAG)
      for metric, rows in _ACCURACY.items()),
    Table("Top {n_top_words} words SOInter keeps for a tag, over the explained tweets the "
          "black box gives it (share of them that keep the word; seed 0)",
          ("top_word",), rows=("rank",), columns="tag", where={"method": TOP_WORDS},
          labels={"rank": "Rank"}))

STUDY = Study(
    name="tags", profiles=PROFILES, methods=METHOD_NAMES,
    datasets=lambda profile: list(load_tweet_hashtags()[3][: profile.tags]),  # most frequent
    cases=with_references(context=lambda dataset, profile: {"k": profile.k}),
    seeds=seeded(lambda method: method not in (SHAP, LIME)),
    share=lambda dataset: "tweet_hashtags",
    prepare=prepare, dataset_values=dataset_values, measure=measure,
    metrics={"posthoc_acc": percent("Post-hoc acc."),
             "posthoc_acc_peer_rows": percent("Post-hoc acc., peers' tweets"),
             "posthoc_acc_positive": percent("Post-hoc acc., tag predicted"),
             "posthoc_acc_empty": percent("No word"), "tag_rate": percent("Tag rate"),
             "black_box_rate": percent("Predicted"), "black_box_acc": percent("Black box acc."),
             "n_positive": Metric("Tweets predicted", fmt=".0f"),
             "top_word": Metric("Top word", cell=lambda values: values[0]),
             "fit_s": Metric("Fit s"), "explain_ms_per_row": Metric("ms / tweet")},
    tables=(
        *_PAGE_TABLES,
        Table("Time: fit seconds (ours, per seed) and milliseconds per tweet",
              ("fit_s", "explain_ms_per_row"), rows=("method",)),
        Table("The black box on each tag",
              ("tag_rate", "black_box_rate", "black_box_acc", "n_positive",
               "posthoc_acc_empty"), rows=("dataset",), where={"method": None},
              mean_row=True, labels=_TAG),
    ),
    fields=fields, postprocess=with_top_words,
    labels={RANDOM: "Random k words", SHAP: "KernelSHAP", LIME: "LIME (text)",
            "sointer": "SOInter", "l2x": "L2X"},
    readme=(".. tags-table-start", ".. tags-table-end"),
    readme_tables=tuple(table.title for table in _PAGE_TABLES),
    options={"tags": {"type": int, "help": "explain the TAGS most frequent tags"},
             "k": {"type": int, "help": "words kept a tweet (default: 2)"},
             "n_train": {"type": int, "help": "explainers' training tweets"}},
)
