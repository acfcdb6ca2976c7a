"""MEED, its ablations, L2X and REAL-X against per-row peers: k pixels of MNIST 3 vs 8 (MEED,
Table 3).

The images and black box are those of the image study (:mod:`.images`: a small CNN trained
on pixel intensities 0-255; sklearn's 8 x 8 digits, 0-16, in the fast profile). Every method
keeps ``k`` pixels (25 of 784 in the paper) of each held-out image:

- ours: the paper's MEED (with output feedback) and its three ablations (without output
  feedback, the package's default; without adversarial infidelity learning: ``w_u=0``;
  without the prior warm start), L2X and REAL-X, all with their default networks (MLPs)
  and left-out pixels at 0 (``baseline="zero"``);
- per-row peers: captum's Saliency and IntegratedGradients (the k pixels of largest
  absolute attribution), and k random pixels.

Metrics (MEED §4.1): FS-M / FU-M, the black box's agreement with itself with only the k
pixels kept / with them removed (left-out pixels 0); FS-A / FU-A, the same for an MLP
trained afresh on the training images masked by the method; SEN, max-sensitivity of the
scores under uniform noise of ``sen_radius`` (0.2 of the pixel range, as the paper's 0.2
on [0, 1]) on the first ``sen_rows`` images; milliseconds per explained image. The sanity
check fits MEED again on the black box with random weights (``randomized_model``) and
reports the cosine similarity of its masks with the original ones (chance is k / 784).
"""

import importlib

import numpy as np
import torch

from sk_sointer import MLP, L2XExplainer, MEEDExplainer, RealXExplainer
from sk_sointer.metrics import (
    approximator_accuracy,
    mask_similarity,
    max_sensitivity,
    posthoc_accuracy,
    randomized_model,
)

from ..harness.ours import fit_and_explain
from ..harness.peers import gradients, topk_of_abs
from ..harness.study import Metric, Study, Table, percent, seeded
from ..harness.timing import elapsed
from .images import (
    EXPLAIN_SEED, SOURCES, TRAIN_SEED, data_values, dataset_values, image_params, load_data,
)

PROFILES = {
    "fast": dict(source="digits", n_explain=40, k=6, black_box_epochs=30, seeds=2,
                 approximator_epochs=5, sen_rows=10, sen_samples=5, sen_radius=0.2 * 16,
                 ig_steps=8,
                 explainer_params={"meed": {"max_epochs": 6},
                                   "l2x": {"max_epochs": 6, "tau": 0.5},
                                   "realx": {"max_epochs": 6, "predictor_epochs": 3,
                                             "alpha": 3.0}}),
    "full": dict(source="mnist", n_explain=200, k=25, black_box_epochs=15, seeds=3,
                 approximator_epochs=30, sen_rows=50, sen_samples=50, sen_radius=0.2 * 255,
                 ig_steps=50,
                 explainer_params={"meed": {}, "l2x": {"tau": 0.5}, "realx": {"alpha": 3.0}}),
}

# The paper's MEED (output feedback on) and its ablations: the parameters each one sets.
# MEEDExplainer's defaults are those of "meed_no_output" (no output feedback).
FEEDBACK = MLP(hidden_units=(100,))
ABLATIONS = {"meed": {"feedback": FEEDBACK}, "meed_no_output": {"feedback": None},
             "meed_no_ail": {"feedback": FEEDBACK, "w_u": 0.0},
             "meed_no_prior": {"feedback": FEEDBACK, "prior": None}}
OURS = (*ABLATIONS, "l2x", "realx")
PEERS = ("saliency", "integrated_gradients")
RANDOM, SANITY = "random", "sanity"


def build(name, profile, device, seed):
    params = image_params("meed" if name.startswith("meed") else name, profile, device, seed)
    if name in ABLATIONS:
        return MEEDExplainer(k=profile.k, **params, **ABLATIONS[name])
    if name == "l2x":
        return L2XExplainer(k=profile.k, **params)
    return RealXExplainer(k=profile.k, **params)


def run_ours(name, data, profile, device, seed):
    """Masks of the explained and of the training images, SEN and timings of one fit."""
    explainer = build(name, profile, device, seed)
    masks, timing = fit_and_explain(explainer, data.X_train, data.model, data.X_explain)
    timing["sen"] = max_sensitivity(explainer, data.X_explain[: profile.sen_rows],
                                    radius=profile.sen_radius, n_samples=profile.sen_samples,
                                    random_state=seed)
    return masks, explainer.transform(data.X_train), timing


def run_peer(name, data, profile, device):
    model = data.model.to(device)

    def attribute(X):
        X_t = torch.as_tensor(X, device=device)
        with torch.no_grad():
            targets = model(X_t).argmax(dim=1)
        return gradients(name, model, X_t, targets, profile.ig_steps).detach().cpu().numpy()

    def masks_of(X):
        scores = attribute(X)
        return topk_of_abs(scores.reshape(len(X), -1), profile.k).reshape(X.shape)

    masks, explain_s = elapsed(lambda: masks_of(data.X_explain), torch.device(device))
    timing = {"explain_ms_per_row": 1000 * explain_s / len(masks)}
    if name == "saliency":  # cheap enough to perturb 50 times (IG is 50 times dearer)
        timing["sen"] = max_sensitivity(attribute, data.X_explain[: profile.sen_rows],
                                        radius=profile.sen_radius,
                                        n_samples=profile.sen_samples)
    return masks, masks_of(data.X_train), timing


def random_pixels(X, k, seed=EXPLAIN_SEED):
    scores = np.random.default_rng(seed).random((len(X), int(np.prod(X.shape[1:]))))
    return topk_of_abs(scores, k).reshape(X.shape)


def fidelity(masks, train_masks, data, profile, seed=TRAIN_SEED):
    """FS-M, FU-M, FS-A and FU-A of a method's masks."""
    record = {}
    for features, suffix in (("selected", "s"), ("unselected", "u")):
        record[f"f{suffix}_m"] = posthoc_accuracy(data.model, data.X_explain, masks,
                                                  baseline="zero", features=features)
        record[f"f{suffix}_a"] = approximator_accuracy(
            data.model, data.X_train, train_masks, data.X_explain, masks, features=features,
            baseline="zero", max_epochs=profile.approximator_epochs, random_state=seed)
    return record


def sanity_check(data, profile, device, masks):
    """Cosine and Pearson similarity of MEED's masks with those of MEED fitted on the
    black box with random weights."""
    randomized = randomized_model(data.model, random_state=TRAIN_SEED)
    explainer = build("meed", profile, device, TRAIN_SEED)  # the paper's, with feedback
    other = explainer.fit(data.X_train, black_box=randomized).transform(data.X_explain)
    return {"sanity_cosine": mask_similarity(masks, other),
            "sanity_pearson": mask_similarity(masks, other, metric="pearson"),
            "chance_cosine": profile.k / int(np.prod(data.X_explain.shape[1:]))}


def prepare(dataset, profile, device):
    data = load_data(profile)
    data.meed_masks = None  # MEED's masks with seed 0, for the sanity check
    return data


def measure(data, dataset, method, seed, profile, device):
    if method == SANITY:  # needs MEED's masks: nothing to check when MEED did not run
        return {} if data.meed_masks is None else sanity_check(data, profile, device,
                                                               data.meed_masks)
    if method in OURS:
        masks, train_masks, timing = run_ours(method, data, profile, device, seed)
        if method == "meed" and seed == 0:
            data.meed_masks = masks
        return {**fidelity(masks, train_masks, data, profile, seed), **timing}
    if method == RANDOM:
        masks, train_masks, timing = (random_pixels(data.X_explain, profile.k),
                                      random_pixels(data.X_train, profile.k, 1), {})
    else:
        importlib.import_module("captum")
        masks, train_masks, timing = run_peer(method, data, profile, device)
    return {**timing, **fidelity(masks, train_masks, data, profile)}


def caption(records, machine, profile):
    data = dataset_values(records)
    return (
        f"MEED's image benchmark, profile ``{profile.name}``: run on "
        f"{machine.get('date', '?')} on {machine.get('cpu', '?')}, {machine.get('device', '?')}, "
        f"{machine.get('threads', 1)} thread(s). {SOURCES[profile.source]}: "
        f"{data['n_train']:.0f} training and {data['n_explain']:.0f} explained images; CNN "
        f"black box accuracy {100 * data['black_box_acc']:.1f} %; k = {profile.k} pixels for "
        "every method. FS-M / FU-M: the black box with the k pixels kept / removed (others "
        "0); FS-A / FU-A: an MLP trained afresh on images masked so; SEN: max-sensitivity (%) "
        f"on {profile.sen_rows} images. Ours: mean ± standard deviation over "
        f"{profile.seeds} seeds; peers one run. ↑ higher is better, ↓ lower.")


def notes(records, machine, profile):
    sanity = {r["metric"]: r["value"] for r in records if r["method"] == SANITY}
    if "sanity_cosine" not in sanity:
        return []
    return [f"Sanity check (model randomisation): cosine similarity of MEED's masks with "
            f"those of MEED fitted on the black box with random weights "
            f"{100 * sanity['sanity_cosine']:.1f} % (Pearson "
            f"{100 * sanity['sanity_pearson']:.1f} %; chance "
            f"{100 * sanity['chance_cosine']:.1f} %).", ""]


STUDY = Study(
    name="meed",
    profiles=PROFILES,
    datasets=lambda profile: [profile.source],
    methods=(*OURS, *PEERS, RANDOM),
    cases=lambda dataset, methods, profile: [
        (method, {}) for method in dict.fromkeys([*methods, RANDOM, SANITY])],
    seeds=seeded(lambda method: method in OURS),
    prepare=prepare,
    dataset_values=data_values,  # the image study's, without EVAL-X (None: not recorded)
    measure=measure,
    metrics={"fs_m": percent("FS-M ↑"), "fu_m": percent("FU-M ↓"),
             "fs_a": percent("FS-A ↑"), "fu_a": percent("FU-A ↓"),
             "sen": percent("SEN ↓"), "fit_s": Metric("Fit s", fmt=".1f"),
             "explain_ms_per_row": Metric("ms / image", fmt=".3g"),
             "sanity_cosine": percent("Sanity cosine"),
             "sanity_pearson": percent("Sanity Pearson"),
             "chance_cosine": percent("Chance cosine"),
             "black_box_acc": percent("Black box acc.")},
    tables=(Table("MEED, its ablations and peers, k pixels of MNIST 3 vs 8",
                  ("fs_m", "fu_m", "fs_a", "fu_a", "sen", "fit_s", "explain_ms_per_row"),
                  rows=("method",)),),
    caption=caption,
    notes=notes,
    labels={"meed_no_output": "MEED w/o output (the default)", "meed_no_ail": "MEED w/o AIL",
            "meed_no_prior": "MEED w/o prior", "realx": "REAL-X (k pixels)",
            RANDOM: "Random k pixels", SANITY: "MEED on a randomised black box"},
    dataset_labels=SOURCES,
)
