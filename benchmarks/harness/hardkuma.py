"""HardKuma's benchmark: the selection rate it is asked for, and L2X's k at a matched rate.

Two parts, on the synthetic sets of :mod:`.data` (rows, black box and ground truth shared
with ``bench_synthetic.py``):

- **rate control**: ``HardKumaExplainer(selection_rate=r)`` for every ``r`` of
  ``profile.rates`` on ``profile.rate_datasets`` (the nonlinear additive set, code
  variant, and S2 in the full profile); the achieved rate is the mean of the
  thresholded masks of :meth:`transform` (``k=None``, the deterministic test-time gates)
  over the explained rows; the expected rate, the mean open probability
  (:meth:`explain`). Acceptance: within 2 points of ``r``.
- **matched rate**: on every set of ``profile.matched_datasets``, L2X with the set's k and
  HardKuma with ``selection_rate = k / n_features`` in the same run, their true positive
  rates (HardKuma's both for its thresholded gates and for its top-k).

Every fit is repeated over ``profile.seeds`` seeds; the records keep each seed's values and
the tables their mean and standard deviation.
"""

import time
from dataclasses import dataclass

import numpy as np

from sk_sointer import HardKumaExplainer, L2XExplainer, metrics

from . import data as synthetic
from .data import DATASETS, TRAIN_SEED


@dataclass(frozen=True)
class HardKumaProfile:
    """Rows per set (``n_train``, ``n_explain``, ``n_black_box`` as in
    :class:`.data.Profile`), the sets and rates of each part, the seeds, and extra
    parameters of both explainers."""

    name: str
    n_train: int
    n_explain: int
    n_black_box: int = None
    rates: tuple = (0.1, 0.3, 0.5)
    rate_datasets: tuple = ("additive_code", "S2")
    matched_datasets: tuple = ("xor", "orange_skin", "additive_code", "switch_code", "S1",
                               "S2", "S3")
    seeds: int = 3
    params: tuple = ()

    # What data.prepare reads of a profile.
    n_timing: int = 1_000
    timing_repeats: int = 1

    def params_for(self, key):
        return dict(self.params)


PROFILES = {
    "fast": HardKumaProfile("fast", n_train=2_000, n_explain=200, rates=(0.3,),
                            rate_datasets=("additive_code",),
                            matched_datasets=("orange_skin",), seeds=1,
                            params=(("max_epochs", 40), ("batch_size", 100))),
    "full": HardKumaProfile("full", n_train=10_000, n_explain=1_000, n_black_box=50_000),
}

METHODS = ("rate", "matched")


def _fit(estimator, prepared):
    start = time.perf_counter()
    estimator.fit(prepared.X_train, black_box=prepared.model)
    return time.perf_counter() - start


def _quality(prepared, masks):
    relevant = prepared.relevant_explain
    return {
        "tpr": metrics.true_positive_rate(relevant, masks),
        "fdr": metrics.false_discovery_rate(relevant, masks),
        "mean_selected": float(np.mean(masks.sum(axis=1))),
        "posthoc_acc": float(metrics.posthoc_accuracy(prepared.model, prepared.X_explain,
                                                      masks, baseline="zero")),
    }


def rate_record(name, rate, prepared, profile, device):
    """HardKuma asked for ``rate`` on the set ``name``, one fit per seed."""
    runs = []
    for seed in range(profile.seeds):
        explainer = HardKumaExplainer(selection_rate=rate, random_state=TRAIN_SEED + seed,
                                      device=str(device), **profile.params_for("hardkuma"))
        fit_s = _fit(explainer, prepared)
        masks = explainer.transform(prepared.X_explain)
        runs.append({
            "achieved_rate": float(masks.mean()),
            "expected_rate": float(explainer.explain(prepared.X_explain).mean()),
            "fit_s": fit_s,
            **_quality(prepared, masks),
        })
    return {"part": "rate", "dataset": name, "target_rate": rate, "runs": runs,
            **_summary(runs)}


def matched_record(name, prepared, profile, device):
    """L2X with the set's k and HardKuma at the rate k / n_features, one fit per seed."""
    k = DATASETS[name].k
    n_features = prepared.X_explain.shape[1]
    runs = []
    for seed in range(profile.seeds):
        params = {"random_state": TRAIN_SEED + seed, "device": str(device),
                  **profile.params_for("hardkuma")}
        l2x = L2XExplainer(k=k, **params)
        l2x_fit_s = _fit(l2x, prepared)
        hardkuma = HardKumaExplainer(k=k, **params)  # selection_rate: k / n_features
        hardkuma_fit_s = _fit(hardkuma, prepared)
        top_k = hardkuma.transform(prepared.X_explain)
        gates = hardkuma.set_params(k=None).transform(prepared.X_explain)
        runs.append({
            "l2x_tpr": _quality(prepared, l2x.transform(prepared.X_explain))["tpr"],
            "l2x_fit_s": l2x_fit_s,
            "hardkuma_fit_s": hardkuma_fit_s,
            "achieved_rate": float(gates.mean()),
            "tpr": _quality(prepared, gates)["tpr"],
            "fdr": _quality(prepared, gates)["fdr"],
            "tpr_top_k": _quality(prepared, top_k)["tpr"],
        })
    return {"part": "matched", "dataset": name, "k": k, "target_rate": k / n_features,
            "runs": runs, **_summary(runs)}


def _summary(runs):
    keys = [key for key, value in runs[0].items() if isinstance(value, float)]
    out = {}
    for key in keys:
        values = [run[key] for run in runs]
        out[key] = float(np.mean(values))
        out[key + "_std"] = float(np.std(values))
    return out


def run_benchmark(profile, *, methods=None, device="cpu", on_record=None, log=print):
    """Every record of the parts in ``methods`` (``"rate"``, ``"matched"``; default both)."""
    parts = methods or METHODS
    names = []
    if "rate" in parts:
        names += profile.rate_datasets
    if "matched" in parts:
        names += profile.matched_datasets
    records, prepared = [], {}
    for name in dict.fromkeys(names):
        log(f"{name}: black box")
        prepared[name] = synthetic.prepare(DATASETS[name], profile, device, False)
    for part in parts:
        for name in (profile.rate_datasets if part == "rate" else profile.matched_datasets):
            for rate in (profile.rates if part == "rate" else (None,)):
                log(f"{part}: {name}" + (f" at {rate}" if rate is not None else ""))
                record = (rate_record(name, rate, prepared[name], profile, device)
                          if part == "rate"
                          else matched_record(name, prepared[name], profile, device))
                record["black_box_acc"] = prepared[name].black_box_acc
                records.append(record)
                if on_record is not None:
                    on_record(records)
    return records


def _cell(record, key, scale=100, fmt=".1f"):
    if record.get(key) is None:
        return "–"
    cell = format(scale * record[key], fmt)
    std = record.get(key + "_std")
    return cell + (f" ± {format(scale * std, fmt)}" if std else "")


def _table(title, header, rows):
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    rule = "  ".join("=" * w for w in widths)
    lines = [f".. table:: {title}", "", "   " + rule,
             "   " + "  ".join(h.ljust(w) for h, w in zip(header, widths)), "   " + rule]
    lines += ["   " + "  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in rows]
    return lines + ["   " + rule, ""]


def render_rst(records, machine, profile):
    lines = [
        f"HardKuma's benchmark, profile ``{profile.name}``: run on {machine.get('date', '?')} "
        f"on {machine.get('cpu', '?')}, {machine.get('device', '?')}, "
        f"{machine.get('threads', 1)} thread(s); {profile.n_train} training and "
        f"{profile.n_explain} explained rows per set, HardKuma and L2X at their defaults; "
        f"mean ± standard deviation over {profile.seeds} seed(s). Rates and TPR in %.",
        "",
    ]
    rate = [r for r in records if r["part"] == "rate"]
    if rate:
        rows = [[DATASETS[r["dataset"]].label, f"{100 * r['target_rate']:.0f}",
                 _cell(r, "achieved_rate"), _cell(r, "expected_rate"), _cell(r, "tpr"),
                 _cell(r, "fdr"), _cell(r, "posthoc_acc"), _cell(r, "fit_s", 1)]
                for r in rate]
        lines += _table("HardKuma: the selection rate asked for and achieved",
                        ["Data set", "Target", "Achieved", "Expected", "TPR", "FDR",
                         "Post-hoc acc.", "Fit s"], rows)
    matched = [r for r in records if r["part"] == "matched"]
    if matched:
        rows = [[DATASETS[r["dataset"]].label, str(r["k"]), f"{100 * r['target_rate']:.1f}",
                 _cell(r, "achieved_rate"), _cell(r, "l2x_tpr"), _cell(r, "tpr"),
                 _cell(r, "tpr_top_k"),
                 f"{100 * (r['tpr'] - r['l2x_tpr']):+.1f}"]
                for r in matched]
        lines += _table("HardKuma at the rate k / d against L2X with k features (TPR %)",
                        ["Data set", "k", "Rate", "Achieved", "L2X", "HardKuma",
                         "HardKuma top-k", "HardKuma - L2X"], rows)
    return "\n".join(lines)
