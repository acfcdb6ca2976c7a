"""MEED, its ablations, L2X and REAL-X against per-row peers: k pixels of MNIST 3 vs 8 (MEED,
Table 3).

The images, the CNN black box and the peers are the image study's (:mod:`.images`); every
method keeps ``k`` pixels of each held-out image, left-out pixels at 0. Metrics (MEED §4.1):
FS-M / FU-M, the black box's agreement with itself with the k pixels kept / removed; FS-A /
FU-A, the same for an MLP trained afresh on the masked training images; SEN, max-sensitivity
under uniform noise of ``sen_radius``; ms per image. The sanity check refits MEED on the
black box with random weights and compares its masks with the original ones.

    python benchmarks/bench.py meed --profile full
"""

import numpy as np

from sk_sointer import MLP
from sk_sointer.metrics import (approximator_accuracy, mask_similarity, max_sensitivity,
                                posthoc_accuracy, randomized_model)

from ..harness import report
from ..harness.ours import fit_and_explain
from ..harness.study import (Metric, Study, Table, percent, seeded, summarize,
                             with_references)
from .images import (SOURCES, TRAIN_SEED, attributions, build, data_values, load_data,
                     peer_masks, random_patches, run_peer)

PROFILES = {
    "fast": dict(source="digits", n_explain=40, k=6, black_box_epochs=30, seeds=2,
                 approximator_epochs=5, sen_rows=10, sen_samples=5, sen_radius=0.2 * 16,
                 ig_steps=8,
                 explainer_params={"meed": {"max_epochs": 6},
                                   "l2x": {"max_epochs": 6, "tau": 0.5},
                                   "realx": {"max_epochs": 6, "predictor_epochs": 3,
                                             "alpha": 3.0}}),
    # sen_radius: the paper's 0.2 on [0, 1], in the pixels' units.
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


def explainer(name, profile, device, seed):
    if name in ABLATIONS:
        return build("meed", profile, device, seed, k=profile.k, **ABLATIONS[name])
    return build(name, profile, device, seed, k=profile.k)


def run_ours(name, data, profile, device, seed):
    """Masks of the explained and of the training images, SEN and timings of one fit."""
    fitted = explainer(name, profile, device, seed)
    masks, timing = fit_and_explain(fitted, data.X_train, data.model, data.X_explain)
    timing["sen"] = max_sensitivity(fitted, data.X_explain[: profile.sen_rows],
                                    radius=profile.sen_radius, n_samples=profile.sen_samples,
                                    random_state=seed)
    return masks, fitted.transform(data.X_train), timing


def run_gradients(name, data, profile, device):
    masks, timing = run_peer(name, data, profile, device)
    if name == "saliency":  # cheap enough to perturb 50 times (IG is 50 times dearer)
        timing["sen"] = max_sensitivity(lambda X: attributions(name, data, X, profile, device),
                                        data.X_explain[: profile.sen_rows],
                                        radius=profile.sen_radius,
                                        n_samples=profile.sen_samples)
    return masks, peer_masks(name, data, data.X_train, profile, device), timing


def fidelity(masks, train_masks, data, profile, seed):
    """FS-M, FU-M, FS-A and FU-A of a method's masks (the MLP of FS-A / FU-A seeded so)."""
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
    fitted = explainer("meed", profile, device, TRAIN_SEED)
    other = fitted.fit(data.X_train, black_box=randomized).transform(data.X_explain)
    return {"sanity_cosine": mask_similarity(masks, other),
            "sanity_pearson": mask_similarity(masks, other, metric="pearson"),
            "chance_cosine": profile.k / int(np.prod(data.X_explain.shape[1:]))}


def measure(data, dataset, method, seed, profile, device):
    if method == SANITY:  # needs MEED's masks: nothing to check when MEED did not run
        masks = getattr(data, "meed_masks", None)
        return {} if masks is None else sanity_check(data, profile, device, masks)
    if method in OURS:
        masks, train_masks, timing = run_ours(method, data, profile, device, seed)
        if method == "meed" and seed == 0:  # for the sanity check
            data.meed_masks = masks
    elif method == RANDOM:
        masks, train_masks, timing = (random_patches(data, data.X_explain, profile.k),
                                      random_patches(data, data.X_train, profile.k, 1), {})
    else:
        masks, train_masks, timing = run_gradients(method, data, profile, device)
    return {**timing, **fidelity(masks, train_masks, data, profile,
                                 TRAIN_SEED if seed is None else seed)}


def fields(records, machine, profile):
    data = summarize(records)[(profile.source, None)]
    return {"data": data, "source": SOURCES[profile.source],
            "accuracy": 100 * data["black_box_acc"]}


def notes(records, machine, profile):
    sanity = {r["metric"]: r["value"] for r in records if r["method"] == SANITY}
    if "sanity_cosine" not in sanity:
        return []
    return [report.text("meed", "sanity", cosine=100 * sanity["sanity_cosine"],
                        pearson=100 * sanity["sanity_pearson"],
                        chance=100 * sanity["chance_cosine"]), ""]


STUDY = Study(
    name="meed",
    profiles=PROFILES,
    datasets=lambda profile: [profile.source],
    methods=(*OURS, *PEERS, RANDOM),
    cases=with_references(RANDOM, SANITY),
    seeds=seeded(lambda method: method in OURS),
    prepare=lambda dataset, profile, device: load_data(profile),
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
    fields=fields,
    notes=notes,
    labels={"meed_no_output": "MEED w/o output (the default)", "meed_no_ail": "MEED w/o AIL",
            "meed_no_prior": "MEED w/o prior", "realx": "REAL-X (k pixels)",
            RANDOM: "Random k pixels", SANITY: "MEED on a randomised black box"},
    dataset_labels=SOURCES,
)
