"""Transform throughput on a local Dask cluster against the in-memory transform, and
KernelSHAP distributed the same way.

One L2X explainer (k=4, orange-skin rows of 10 features, an MLP black box) is fitted once;
then rows per second of

- ``explainer.transform`` in this process (one torch thread),
- ``sk_sointer.parallel.dask_transform`` on a ``distributed.LocalCluster`` of 1, 2, ...
  worker processes with one thread each, the rows already on the workers (persisted) and
  the masks left there (persisted, as a job writing them out would), the explainer
  scattered once,
- shap's KernelExplainer mapped over the same kind of cluster (``map_blocks``, one
  explainer per block), on a few rows,

with a check that the cluster's masks equal the in-memory ones on every row.
"""

import time
import warnings
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ClusterProfile:
    name: str
    n_rows: int
    workers: tuple
    shap_rows: int
    repeats: int


PROFILES = {
    "fast": ClusterProfile("fast", n_rows=100_000, workers=(1, 2), shap_rows=4, repeats=2),
    "full": ClusterProfile("full", n_rows=1_000_000, workers=(1, 2), shap_rows=16, repeats=3),
}


def _fitted():
    import torch
    from sklearn.neural_network import MLPClassifier

    from sk_sointer import L2XExplainer
    from sk_sointer.datasets import make_orange_skin

    torch.set_num_threads(1)
    X, y, _ = make_orange_skin(n_samples=5000, random_state=0)
    model = MLPClassifier((100, 100), early_stopping=True, random_state=0).fit(X, y)
    explainer = L2XExplainer(k=4, max_epochs=20, random_state=0).fit(X, black_box=model)
    return X, model, explainer


def _best(seconds):
    return min(seconds)


def _kernel_shap_block(block, model, background):
    import shap

    explainer = shap.KernelExplainer(model.predict_proba, background)
    values = explainer.shap_values(block, silent=True)
    return np.asarray(values)[..., 0].reshape(len(block), -1).astype(np.float32)


def run_cluster(profile):
    """Records of rows per second, one per engine and number of workers."""
    import dask.array as da
    import distributed

    from sk_sointer.parallel import dask_transform

    X_train, model, explainer = _fitted()
    rows = np.random.default_rng(1).standard_normal((profile.n_rows, 10)).astype(np.float32)
    seconds = []
    for _ in range(profile.repeats):
        start = time.perf_counter()
        expected = explainer.transform(rows)
        seconds.append(time.perf_counter() - start)
    records = [{"engine": "in memory", "workers": 1, "rows": profile.n_rows,
                "seconds": _best(seconds), "rows_per_s": profile.n_rows / _best(seconds)}]
    try:
        import shap
    except ImportError:
        shap = None
    background = None if shap is None else shap.kmeans(X_train, 10)
    for workers in profile.workers:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                               processes=True, dashboard_address=None)
            client = distributed.Client(cluster)
        try:
            client.wait_for_workers(workers)
            # Four blocks per worker: every worker busy, little scheduling overhead.
            X = da.from_array(rows, chunks=(-(-profile.n_rows // (4 * workers)), 10))
            X = client.persist(X)
            distributed.wait(X)
            seconds = []
            for _ in range(profile.repeats):
                start = time.perf_counter()
                masks = client.persist(dask_transform(explainer, X, client=client))
                distributed.wait(masks)
                seconds.append(time.perf_counter() - start)
            identical = bool(np.array_equal(client.compute(masks).result(), expected))
            records.append({"engine": "dask_transform", "workers": workers,
                            "rows": profile.n_rows, "seconds": _best(seconds),
                            "rows_per_s": profile.n_rows / _best(seconds),
                            "identical_to_in_memory": identical})
            if shap is not None:
                few = da.from_array(rows[: profile.shap_rows],
                                    chunks=(max(1, profile.shap_rows // workers), 10))
                seconds = []
                for _ in range(2):  # the first run imports shap in the workers
                    start = time.perf_counter()
                    few.map_blocks(_kernel_shap_block, model, background,
                                   dtype=np.float32).compute()
                    seconds.append(time.perf_counter() - start)
                elapsed = _best(seconds)
                records.append({"engine": "KernelSHAP on dask", "workers": workers,
                                "rows": profile.shap_rows, "seconds": elapsed,
                                "rows_per_s": profile.shap_rows / elapsed})
        finally:
            client.close()
            cluster.close()
    one = {r["engine"]: r["rows_per_s"] for r in records if r["workers"] == 1}
    for record in records:
        base = one.get(record["engine"])
        record["speedup_vs_1_worker"] = None if base is None else record["rows_per_s"] / base
    return records


def render_rst(records, machine, profile):
    lines = [
        f"Transform throughput on a local Dask cluster ({profile.name} profile: "
        f"{profile.n_rows:,} rows of 10 features; {machine.get('cpu_count')} cores, "
        f"{machine.get('cpu')}; one torch thread per worker process).",
        "",
        ".. table::",
        "",
        "   +----------------------+---------+------------+--------------+------------+",
        "   | engine               | workers | rows       | rows / s     | vs 1 worker|",
        "   +======================+=========+============+==============+============+",
    ]
    for r in records:
        speedup = r.get("speedup_vs_1_worker")
        lines.append(
            f"   | {r['engine']:<20} | {r['workers']:>7} | {r['rows']:>10,} | "
            f"{r['rows_per_s']:>12,.0f} | "
            f"{'' if speedup is None else f'{speedup:.2f}x':>10} |")
        lines.append("   +----------------------+---------+------------+--------------+"
                     "------------+")
    return "\n".join(lines) + "\n"
