"""Quality and speed of every explainer on the synthetic data sets with known answers.

An MLP black box per set of :data:`harness.data.DATASETS`, explained on held-out rows by every
method of the registry; ours refitted with seeds 1, 2, ... also record their median rank and
agreement with the earlier seeds' masks.

    python benchmarks/bench.py synthetic --profile full --update-doc
"""

import numpy as np

from sk_sointer import metrics

from ..harness import report
from ..harness.data import DATASETS, TRAIN_SEED, prepare as prepare_data
from ..harness.ours import masks_with_seed
from ..harness.quality import (BREAK_EVEN, CURVE_ENTRIES, EVALUATION_METRICS, MASK_ENTRIES,
                               OUR_ENTRIES, evaluation, mask_quality, seed_agreement)
from ..harness.registry import METHODS, method_names
from ..harness.study import Metric, Study, Table, percent, records_of, seeded, summarize

# evaluate's curves take eval_steps steps, its mask_change n_perturbations noisy copies.
COMMON = dict(n_timing=10_000, timing_repeats=7, seeds=1, shap_nsamples=200,
              captum_kernel_shap_samples=200, eval_steps=10, n_perturbations=5)
EPOCHS = {"max_epochs": 30, "batch_size": 200}
PROFILES = {
    "fast": dict(n_train=2_000, n_explain=200, n_black_box=None, lime_num_samples=500,
                 **COMMON, explainer_params={
                     "l2x": EPOCHS, "meed": EPOCHS, "hardkuma": EPOCHS,
                     "realx": {"max_epochs": 30, "predictor_epochs": 15},
                     "evalx": {"max_epochs": 30}}),
    # The package's defaults. The black box learns from more rows than the explainers see:
    # one fitted on 10,000 noisy labels blurs the switch of the control-flow sets.
    "full": dict(n_train=10_000, n_explain=1_000, n_black_box=50_000, lime_num_samples=5000,
                 **COMMON, explainer_params={}),
}


def prepare(dataset, profile, device):
    """The rows and black box of ``dataset`` (shared by its encoding probe) and its EVAL-X
    evaluator on the control-flow sets, and on XOR when its probe runs."""
    names = profile.get("datasets") or list(DATASETS)
    evaluated = any(DATASETS[name].data_key == dataset
                    and (DATASETS[name].control_flow or DATASETS[name].probe) for name in names)
    return prepare_data(DATASETS[dataset], profile, device, evaluated)


def data_values(data, dataset):
    return {"n_train": len(data.X_train), "n_explain": len(data.X_explain),
            "n_features": data.X_explain.shape[1], "black_box_acc": data.black_box_acc,
            "black_box_fit_s": data.black_box_fit_s, "evalx_fit_s": data.evaluator_fit_s,
            # A failed evaluator is context of the data set's records (the methods still run).
            **({"evalx_error": data.evaluator_error} if data.evaluator_error else {})}


def cases(dataset, methods, profile):
    """Every method with the k it is judged with; the probe runs ours only."""
    spec = DATASETS[dataset]
    return [(name, {"k": METHODS[name].k_for(spec)}) for name in methods
            if METHODS[name].amortized or not spec.probe]


def measure(data, dataset, name, seed, profile, device, k):
    spec, method = DATASETS[dataset], METHODS[name]
    if seed not in (None, TRAIN_SEED):
        masks = masks_with_seed(method, spec, data, profile, device, seed)
        return {"median_rank": metrics.median_rank(data.relevant_explain, masks),
                **seed_agreement(data.cache, (dataset, name), seed, masks)}
    masks, timing, explanation = method.run(spec, data, profile, device)
    if method.amortized:
        seed_agreement(data.cache, (dataset, name), seed, masks)  # kept for the later seeds
        entries = (*OUR_ENTRIES, "features_per_row_std") if k is None else OUR_ENTRIES
        evaluated = evaluation(data, profile, explanation, entries)
    else:  # raw masks, left out at the training mean (our explainers' default baseline)
        evaluated = evaluation(data, profile, masks, (*MASK_ENTRIES, *CURVE_ENTRIES),
                               baseline=data.X_train.mean(axis=0), scores=np.abs(explanation))
    return {**timing, **mask_quality(spec, data, masks, data.evaluator), **evaluated}


def with_break_even(records):
    """The records, and for each of our runs the rows from which fitting it costs less than
    KernelSHAP (shap) a row on the same data set."""
    records = [r for r in records if r["metric"] != BREAK_EVEN]
    summary = summarize(records)
    derived = []
    for (dataset, name), entry in summary.items():
        peer = summary.get((dataset, "shap_kernel"), {})
        if (name in METHODS and METHODS[name].amortized and entry.get("fit_s")
                and peer.get("explain_ms_per_row")):
            rows = metrics.break_even_rows(entry["fit_s"], 1000 * entry["explain_ms_per_row"],
                                           peer["explain_ms_per_row"])
            derived += records_of(STUDY, dataset, name, None, {BREAK_EVEN: rows})
    return records + derived


def method_cell(record):
    label = STUDY.label(record["method"])
    if METHODS[record["method"]].amortized:
        label += " (thresholded)" if record["k"] is None else f" (k = {record['k']})"
    return label


def notes(records, machine, profile):
    # Ours refitted with several seeds (the peers run once).
    seeds = {key: entry["median_rank_seeds"] for key, entry in summarize(records).items()
             if len(entry.get("median_rank_seeds", ())) > 1}
    lines = ["Median rank over explainer seeds:", "", *[
        f"- {STUDY.label(method)} on {DATASETS[dataset].label}: mean {np.mean(values):.2f} "
        f"over {len(values)} seeds ({', '.join(f'{rank:.2f}' for rank in values)})"
        for (dataset, method), values in seeds.items()], ""] if seeds else []
    if any(r["dataset"] == "xor_probe" for r in records):
        lines += report.wrap(report.text("synthetic", "xor_probe"))
    return lines


def _main(record):
    return not DATASETS[record["dataset"]].probe


STUDY = Study(
    name="synthetic", profiles=PROFILES, datasets=lambda profile: list(DATASETS),
    methods=tuple(method_names()), cases=cases,
    seeds=seeded(lambda method: METHODS[method].amortized),
    share=lambda dataset: DATASETS[dataset].data_key,
    prepare=prepare, dataset_values=data_values, measure=measure,
    metrics={
        "median_rank": Metric("Median rank", fmt=".2f"),
        "median_rank_optimum": Metric("Optimum", fmt=".2f"),
        "tpr": percent("TPR"), "fdr": percent("FDR"),
        "cfsr": percent("CFSR"), "eacc": percent("eACC"),
        "eacc_expected": percent("eACC (p)"), "eauroc": Metric("eAUROC", fmt=".3f"),
        "fit_s": Metric("Fit s"), "explain_ms_per_row": Metric("Explain", "ms/row"),
        "throughput_ratio": Metric("Throughput", fmt=".2f"),
        "own_acc": Metric("Own predictor", "acc. %", 100, ".1f"),
        "own_agreement": Metric("Own predictor", "= black box %", 100, ".1f"),
        "posthoc_acc": Metric("Post-hoc", "acc. %", 100, ".1f"),
        **EVALUATION_METRICS,  # evaluate's entries (sk_sointer.metrics.evaluate)
    },
    tables=(
        Table("Synthetic data sets",
              ("median_rank", "median_rank_optimum", "tpr", "fdr", "cfsr", "eacc",
               "eacc_expected", "eauroc", "fit_s", "explain_ms_per_row", "throughput_ratio"),
              where=_main),
        Table("Encoding probe (XOR, k = 1)",
              ("own_acc", "own_agreement", "eacc", "posthoc_acc", "tpr"),
              rows=("method",), where={"dataset": "xor_probe"}),
        # evaluate's entries, then the costs recorded beside them
        Table("Evaluation (points; mean over the data sets)",
              ("fidelity_kept", "fidelity_removed", "road_kept", "road_removed",
               "deletion_auc", "insertion_auc", "seed_agreement", "mask_change",
               "features_per_row", "explain_ms_per_row", BREAK_EVEN),
              rows=("method",), where=_main, spread=False),
    ),
    postprocess=with_break_even,
    fields=lambda records, machine, profile: {
        "n_black_box": profile.n_black_box or profile.n_train},
    notes=notes,
    method_cell=method_cell,
    dataset_labels={name: spec.label for name, spec in DATASETS.items()},
    readme=(".. results-table-start", ".. results-table-end"),
)
