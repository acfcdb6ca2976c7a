"""MEED's Table 3: MEED, its ablations, L2X and REAL-X against per-row peers on MNIST 3 vs 8.

Every method keeps k pixels of each held-out image of the image study (:mod:`.images`), others
at 0. FS-A / FU-A: an MLP trained afresh on the masked images; SEN: max-sensitivity under noise
of ``sen_radius``; the sanity check refits MEED on the black box with random weights.

    python benchmarks/bench.py meed --profile full
"""

import functools

import numpy as np

from sk_sointer import MLP
from sk_sointer.metrics import (approximator_accuracy, mask_similarity, max_sensitivity,
                                posthoc_accuracy, randomized_model)

from ..harness import report
from ..harness.ours import fit_and_explain
from ..harness.study import Metric, Study, Table, percent, seeded, summarize, with_references
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


def measure(data, dataset, method, seed, profile, device):
    if method == SANITY:  # needs MEED's masks: nothing to check when MEED did not run
        masks = getattr(data, "meed_masks", None)
        return {} if masks is None else sanity_check(data, profile, device, masks)
    seed = TRAIN_SEED if seed is None else seed  # of SEN's noise and of FS-A / FU-A's MLP
    sen = functools.partial(max_sensitivity, X=data.X_explain[: profile.sen_rows],
                            radius=profile.sen_radius, n_samples=profile.sen_samples,
                            random_state=seed)
    if method in OURS:
        explainer = build("meed" if method in ABLATIONS else method, profile, device, seed,
                          k=profile.k, **ABLATIONS.get(method, {}))
        masks, out = fit_and_explain(explainer, data.X_train, data.model, data.X_explain)
        out["sen"] = sen(explainer)
        train_masks = explainer.transform(data.X_train)
        if method == "meed" and seed == 0:  # for the sanity check
            data.meed_masks = masks
    elif method == RANDOM:
        masks, out = random_patches(data, data.X_explain, profile.k), {}
        train_masks = random_patches(data, data.X_train, profile.k, 1)
    else:
        masks, out = run_peer(method, data, profile, device)
        if method == "saliency":  # cheap enough to perturb 50 times (IG is 50 times dearer)
            out["sen"] = sen(lambda X: attributions(method, data, X, profile, device))
        train_masks = peer_masks(method, data, data.X_train, profile, device)
    for features, suffix in (("selected", "s"), ("unselected", "u")):
        out[f"f{suffix}_m"] = posthoc_accuracy(data.model, data.X_explain, masks,
                                               baseline="zero", features=features)
        out[f"f{suffix}_a"] = approximator_accuracy(
            data.model, data.X_train, train_masks, data.X_explain, masks, features=features,
            baseline="zero", max_epochs=profile.approximator_epochs, random_state=seed)
    return out


def sanity_check(data, profile, device, masks):
    """Cosine and Pearson similarity of MEED's masks with MEED's on a randomised black box."""
    randomized = randomized_model(data.model, random_state=TRAIN_SEED)
    explainer = build("meed", profile, device, TRAIN_SEED, k=profile.k, **ABLATIONS["meed"])
    other = explainer.fit(data.X_train, black_box=randomized).transform(data.X_explain)
    return {"sanity_cosine": mask_similarity(masks, other),
            "sanity_pearson": mask_similarity(masks, other, metric="pearson"),
            "chance_cosine": profile.k / int(np.prod(data.X_explain.shape[1:]))}


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
    name="meed", profiles=PROFILES, datasets=lambda profile: [profile.source],
    methods=(*OURS, *PEERS, RANDOM), cases=with_references(RANDOM, SANITY),
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
    fields=fields, notes=notes,
    labels={"meed_no_output": "MEED w/o output (the default)", "meed_no_ail": "MEED w/o AIL",
            "meed_no_prior": "MEED w/o prior", "realx": "REAL-X (k pixels)",
            RANDOM: "Random k pixels", SANITY: "MEED on a randomised black box"},
    dataset_labels=SOURCES,
)
