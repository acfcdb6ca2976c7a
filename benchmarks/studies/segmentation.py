"""SOInter at the paper's segmentation scale: one pixel of a 24 x 24 segmentation model.

A fully convolutional network (one logit per pixel) trained on ``load_digit_segmentation``;
per target pixel and k, SOInter explains that output of the whole network, L2X its probability
alone, next to k random pixels, the k nearest and (small k) a greedy search against the network.

    python benchmarks/bench.py segmentation --profile full --update-doc
"""

from types import SimpleNamespace

import numpy as np
import torch

from sk_sointer import as_black_box, metrics
from sk_sointer.datasets import load_digit_segmentation

from ..harness.data import TRAIN_SEED, one_logit
from ..harness.ours import build
from ..harness.registry import METHODS as REGISTRY
from ..harness.study import Metric, Study, Table, percent, seeded
from ..harness.timing import elapsed

SIDE = 24
METHODS = ("sointer", "l2x", "random", "nearest", "greedy")
GREEDY_MAX_K = 10  # the greedy search's cost grows with k (k passes over the field's pixels)
FIELD_RADIUS = 5  # the target's output reads the 11 x 11 pixels around it
# SOInter queries the model at the baseline the masks are judged with (black left-out pixels
# keep the label far less often); both methods run without the refinement, as in their papers.
_SOINTER = dict(gradient="relaxed", fill="baseline", refine=None)
_PROFILE = dict(targets=((12, 12), (8, 14), (16, 9)), ks=(5, 10, 50, 100), seeds=3,
                n_black_box=3000, n_train=2000, n_explain=1500, black_box_epochs=15,
                explainer_params={"sointer": {**_SOINTER, "max_epochs": 20},
                                  "l2x": {"max_epochs": 20, "refine": None}})
PROFILES = {
    "fast": {**_PROFILE, "targets": ((12, 12),), "ks": (10,), "seeds": 1, "n_black_box": 1000,
             "n_train": 300, "n_explain": 100, "black_box_epochs": 4,
             "explainer_params": {
                 "sointer": {**_SOINTER, "max_epochs": 2, "energy__max_epochs": 1},
                 "l2x": {"max_epochs": 2, "refine": None}}},
    "full": _PROFILE,
}


class SegmentationFCN(torch.nn.Module):
    """The black box: 5 x 5, 5 x 5 and 3 x 3 convolutions (an 11 x 11 field), a logit a pixel."""

    def __init__(self, channels=16):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Conv2d(1, channels, 5, padding=2), torch.nn.ReLU(),
            torch.nn.Conv2d(channels, channels, 5, padding=2), torch.nn.ReLU(),
            torch.nn.Conv2d(channels, 1, 3, padding=1))

    def forward(self, x):
        return self.body(x.reshape(len(x), 1, SIDE, SIDE)).reshape(len(x), SIDE * SIDE)


def train_fcn(X, Y, epochs, seed=TRAIN_SEED):
    """The network trained by per-pixel cross-entropy, Adam at 1e-2 on 100-image batches."""
    torch.manual_seed(seed)
    model = SegmentationFCN()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    X_t, Y_t = (torch.as_tensor(a, dtype=torch.float32) for a in (X, Y))
    for _ in range(epochs):
        for batch in torch.randperm(len(X)).split(100):
            optimizer.zero_grad()
            torch.nn.functional.binary_cross_entropy_with_logits(
                model(X_t[batch]), Y_t[batch]).backward()
            optimizer.step()
    return model.eval()


def greedy_masks(model, X, fill, row, col, k, chunk=100):
    """k pixels per row of the target's field, added one at a time, each the one that best
    keeps the network's own label of the target (its logit's margin), the others at ``fill``;
    the network runs on the 11 x 11 crop around the target, whose centre output is the whole
    image's."""
    top, left = row - FIELD_RADIUS, col - FIELD_RADIUS
    side = 2 * FIELD_RADIUS + 1
    if top < 0 or left < 0 or top + side > SIDE or left + side > SIDE:
        raise ValueError(f"The greedy reference needs the target's {side} x {side} field "
                         f"inside the image; got ({row}, {col}).")

    def crop(rows):
        images = torch.as_tensor(rows, dtype=torch.float32).reshape(-1, SIDE, SIDE)
        return images[:, top:top + side, left:left + side].reshape(len(images), side * side)

    def centre_logit(images):
        with torch.inference_mode():
            logits = model.body(images.reshape(-1, 1, side, side))
        return logits[:, 0, FIELD_RADIUS, FIELD_RADIUS]

    rows, background = crop(X), crop(fill[None])[0]
    sign = torch.where(centre_logit(rows) > 0, 1.0, -1.0)
    kept = torch.zeros(rows.shape, dtype=torch.bool)
    one_more = torch.eye(side * side, dtype=torch.bool)
    for _ in range(k):
        choice = torch.empty(len(rows), dtype=torch.long)
        for part in torch.arange(len(rows)).split(chunk):
            base = torch.where(kept[part], rows[part], background)
            trials = torch.where(one_more[None], rows[part, None, :], base[:, None, :])
            margin = centre_logit(trials.reshape(-1, side * side)).reshape(len(part), -1)
            margin = (margin * sign[part, None]).masked_fill(kept[part], -torch.inf)
            choice[part] = margin.argmax(dim=1)
        kept[torch.arange(len(rows)), choice] = True
    masks = np.zeros((len(X), SIDE, SIDE), dtype=bool)
    masks[:, top:top + side, left:left + side] = kept.reshape(-1, side, side).numpy()
    return masks.reshape(len(X), SIDE * SIDE)


def pixel_labels(model, X, index):
    """The network's 0/1 label of pixel ``index`` on rows ``X``."""
    with torch.inference_mode():
        return (model(torch.as_tensor(X, dtype=torch.float32))[:, index] > 0).numpy()


def prepare(dataset, profile, device):
    """The digits split once (explained rows, explainers' rows, black box's) and the network."""
    X, Y = load_digit_segmentation()
    order = np.random.default_rng(0).permutation(len(X))
    explain = order[: profile.n_explain]
    train = order[profile.n_explain : profile.n_explain + profile.n_train]
    black_box = order[len(order) - profile.n_black_box :]
    model, fit_s = elapsed(lambda: train_fcn(X[black_box], Y[black_box],
                                             profile.black_box_epochs))
    return SimpleNamespace(X_train=X[train], X_explain=X[explain], Y_explain=Y[explain],
                           fill=X[train].mean(axis=0), model=model, black_box_fit_s=fit_s)


def _target(dataset):
    row, col = (int(part) for part in dataset.split("_")[1:])
    return row, col, row * SIDE + col


def dataset_values(data, dataset):
    index = _target(dataset)[2]
    labels = pixel_labels(data.model, data.X_explain, index)
    truth = data.Y_explain[:, index]
    empty = np.tile(data.fill, (len(data.X_explain), 1))
    return {"model_acc": float(np.mean(labels == truth)), "foreground": float(np.mean(truth)),
            "predicted_1": float(np.mean(labels)), "black_box_fit_s": data.black_box_fit_s,
            "posthoc_acc_empty": float(np.mean(pixel_labels(data.model, empty, index)
                                               == labels))}


def measure(data, dataset, method, seed, profile, device, k):
    row, col, index = _target(dataset)
    X, out = data.X_explain, {}
    rows, cols = np.divmod(np.arange(SIDE * SIDE), SIDE)
    distance = np.hypot(rows - row, cols - col)
    if method == "random":
        masks = metrics.random_masks(len(X), SIDE * SIDE, k, random_state=seed)
    elif method == "greedy":
        masks = greedy_masks(data.model, X, data.fill, row, col, k)
    elif method == "nearest":
        masks = np.zeros((len(X), SIDE * SIDE))
        masks[:, np.argsort(distance, kind="stable")[:k]] = 1.0
    else:
        explainer = build(REGISTRY[method], profile, seed=seed, device="cpu", target=(row, col),
                          k=k, image_shape=(SIDE, SIDE), baseline="mean")
        black_box = (as_black_box(data.model, output="multilabel_logits") if method == "sointer"
                     else as_black_box(one_logit(data.model, index), output="proba"))
        out["fit_s"] = elapsed(lambda: explainer.fit(data.X_train, black_box=black_box))[1]
        masks = explainer.transform(X)
    masks = masks.reshape(len(X), SIDE * SIDE) > 0
    kept = pixel_labels(data.model, np.where(masks, X, data.fill), index)
    return {**out, "post_acc": float(np.mean(kept == data.Y_explain[:, index])),
            "posthoc_acc": float(np.mean(kept == pixel_labels(data.model, X, index))),
            "distance": float((masks * distance).sum() / masks.sum()),
            "target_kept": float(np.mean(masks[:, index]))}


_BY = dict(rows=("dataset", "k"), columns="method")
_TABLES = (
    Table("The network on each target pixel",
          ("model_acc", "foreground", "predicted_1", "posthoc_acc_empty"), rows=("dataset",),
          where={"method": None}),
    Table("Post-accuracy % on the target pixel", ("post_acc",), **_BY),
    Table("Post-hoc accuracy % on the target pixel", ("posthoc_acc",), **_BY),
    Table("Mean distance (pixels) of the selected pixels to the target", ("distance",), **_BY),
    Table("Fit seconds", ("fit_s",), **_BY))

STUDY = Study(
    name="segmentation", profiles=PROFILES, methods=METHODS,
    datasets=lambda profile: [f"pixel_{row}_{col}" for row, col in profile.targets],
    cases=lambda dataset, methods, profile: [
        (method, {"k": k}) for k in profile.ks for method in methods
        if method != "greedy" or k <= GREEDY_MAX_K],
    seeds=seeded(lambda method: method not in ("nearest", "greedy")),
    share=lambda dataset: "digits",
    prepare=prepare, dataset_values=dataset_values, measure=measure,
    metrics={"post_acc": percent("Post-acc."), "posthoc_acc": percent("Post-hoc acc."),
             "model_acc": percent("Model acc."), "foreground": percent("Foreground"),
             "predicted_1": percent("Predicted 1"), "posthoc_acc_empty": percent("No pixel"),
             "distance": Metric("Distance", "px", fmt=".2f"),
             "target_kept": percent("Target kept"), "fit_s": Metric("Fit s")},
    tables=_TABLES,
    fields=lambda records, machine, profile: {"greedy_max_k": GREEDY_MAX_K},
    labels={"sointer": "SOInter (whole network)", "l2x": "L2X (target pixel alone)",
            "random": "Random k pixels", "nearest": "Nearest k pixels",
            "greedy": "Greedy per row (reference)"},
    readme=(".. segmentation-table-start", ".. segmentation-table-end"),
    readme_tables=tuple(table.title for table in _TABLES  # the page: all but post-hoc
                        if table.metrics != ("posthoc_acc",)),
    options={"n_train": {"type": int, "help": "explainers' training images"},
             "ks": {"type": int, "nargs": "+", "metavar": "K", "help": "k values"}},
)
