"""HardKuma: the selection rate asked for against the rate achieved, and TPR against L2X.

On the synthetic sets of :mod:`harness.data`: ``rate`` fits HardKuma at each ``selection_rate``
of ``rates`` and compares its gates' rate (``k=None``) and mean open probability with it;
``matched`` fits L2X with the set's k and HardKuma at the rate k / d with the same seed.

    python benchmarks/bench.py hardkuma --profile full
"""

from sk_sointer import HardKumaExplainer, L2XExplainer, metrics

from ..harness.data import DATASETS, prepare
from ..harness.ours import fit_and_explain
from ..harness.quality import mask_quality
from ..harness.study import Metric, Study, Table, percent, seeded

PROFILES = {
    "fast": dict(n_train=2_000, n_explain=200, n_black_box=None, n_timing=1_000, rates=(0.3,),
                 rate_datasets=("additive_code",), matched_datasets=("orange_skin",), seeds=1,
                 params={"max_epochs": 40, "batch_size": 100}),
    "full": dict(n_train=10_000, n_explain=1_000, n_black_box=50_000, n_timing=1_000,
                 rates=(0.1, 0.3, 0.5), rate_datasets=("additive_code", "S2"),
                 matched_datasets=("xor", "orange_skin", "additive_code", "switch_code", "S1",
                                   "S2", "S3"), seeds=3, params={}),
}


def measure(data, dataset, method, seed, profile, device, target_rate=None, k=None):
    params = {"random_state": seed, "device": str(device), **profile.params}

    def fit(explainer):  # masks of the explained rows, fit and explain times
        return fit_and_explain(explainer, data.X_train, data.model, data.X_explain)

    if method == "rate":
        hardkuma = HardKumaExplainer(selection_rate=target_rate, **params)
        masks, timing = fit(hardkuma)
        return {"achieved_rate": float(masks.mean()),
                "expected_rate": float(hardkuma.explain(data.X_explain).mean()),
                **timing, **mask_quality(DATASETS[dataset], data, masks, None)}
    l2x_masks, l2x_timing = fit(L2XExplainer(k=k, **params))
    hardkuma = HardKumaExplainer(k=k, **params)  # selection_rate: k / n_features
    top_k, timing = fit(hardkuma)
    gates = hardkuma.set_params(k=None).transform(data.X_explain)
    relevant = data.relevant_explain
    l2x_tpr = metrics.true_positive_rate(relevant, l2x_masks)
    tpr = metrics.true_positive_rate(relevant, gates)
    return {"target_rate": k / data.X_explain.shape[1], "l2x_tpr": l2x_tpr,
            "l2x_fit_s": l2x_timing["fit_s"], "hardkuma_fit_s": timing["fit_s"],
            "achieved_rate": float(gates.mean()), "tpr": tpr,
            "fdr": metrics.false_discovery_rate(relevant, gates),
            "tpr_top_k": metrics.true_positive_rate(relevant, top_k), "tpr_gain": tpr - l2x_tpr}


def cases(dataset, methods, profile):
    out = []
    if "rate" in methods and dataset in profile.rate_datasets:
        out += [("rate", {"target_rate": rate}) for rate in profile.rates]
    if "matched" in methods and dataset in profile.matched_datasets:
        out.append(("matched", {"k": DATASETS[dataset].k}))
    return out


_RATES = {"target_rate": "Rate", "achieved_rate": "Achieved", "expected_rate": "Expected",
          "tpr": "TPR", "fdr": "FDR", "posthoc_acc": "Post-hoc acc.", "l2x_tpr": "L2X",
          "tpr_top_k": "HardKuma top-k", "black_box_acc": "Black box acc."}  # in %, no unit

STUDY = Study(
    name="hardkuma", profiles=PROFILES, methods=("rate", "matched"),
    datasets=lambda profile: list(dict.fromkeys([*profile.rate_datasets,
                                                 *profile.matched_datasets])),
    cases=cases, seeds=seeded(lambda method: True),
    prepare=lambda dataset, profile, device: prepare(DATASETS[dataset], profile, device, False),
    dataset_values=lambda data, dataset: {"black_box_acc": data.black_box_acc},
    measure=measure,
    metrics={**{name: percent(label, "") for name, label in _RATES.items()},
             "fit_s": Metric("Fit s", fmt=".1f"),
             "tpr_gain": Metric("HardKuma - L2X", scale=100, fmt="+.1f"),
             "l2x_fit_s": Metric("L2X fit s", fmt=".1f"),
             "hardkuma_fit_s": Metric("HardKuma fit s", fmt=".1f")},
    tables=(
        Table("HardKuma: the selection rate asked for and achieved",
              ("achieved_rate", "expected_rate", "tpr", "fdr", "posthoc_acc", "fit_s"),
              rows=("dataset", "target_rate"), where={"method": "rate"},
              labels={"target_rate": "Target"}),
        Table("HardKuma at the rate k / d against L2X with k features (TPR %)",
              ("target_rate", "achieved_rate", "l2x_tpr", "tpr", "tpr_top_k", "tpr_gain"),
              rows=("dataset", "k"), where={"method": "matched"},
              labels={"tpr": "HardKuma"}),
    ),
    dataset_labels={name: spec.label for name, spec in DATASETS.items()},
    spread="std",
)
