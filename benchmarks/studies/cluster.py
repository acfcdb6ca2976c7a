"""Rows per second of one L2X explainer (k=4, an MLP on orange-skin rows of 10 features):
``transform`` in memory, ``sk_sointer.parallel.dask_transform`` on a local Dask cluster of
1, 2, ... single-threaded worker processes (rows persisted there, masks left there, checked
equal to the in-memory ones), and shap's KernelExplainer mapped over such a cluster.

    python benchmarks/bench.py cluster --profile full
"""

import importlib.util
import warnings
from contextlib import contextmanager
from types import SimpleNamespace

import numpy as np
import torch

from sk_sointer import L2XExplainer
from sk_sointer.datasets import make_orange_skin

from ..harness.data import fit_mlp
from ..harness.study import Metric, Study, Table
from ..harness.timing import best_time

PROFILES = {
    "fast": dict(n_rows=100_000, workers=(1, 2), shap_rows=4, repeats=2),
    "full": dict(n_rows=1_000_000, workers=(1, 2), shap_rows=16, repeats=3),
}
ENGINES = {"in_memory": "in memory", "dask_transform": "dask_transform",
           "kernel_shap_dask": "KernelSHAP on dask"}


def prepare(dataset, profile, device):
    """The fitted explainer, its black box and the rows every engine explains."""
    torch.set_num_threads(1)
    X, y, _ = make_orange_skin(n_samples=5000, random_state=0)
    model = fit_mlp(X, y, (100, 100))[0]
    explainer = L2XExplainer(k=4, max_epochs=20, random_state=0).fit(X, black_box=model)
    rows = np.random.default_rng(1).standard_normal((profile.n_rows, 10)).astype(np.float32)
    return SimpleNamespace(X_train=X, model=model, explainer=explainer, rows=rows,
                           expected=None, one_worker={})


@contextmanager
def _client(workers):
    import distributed

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                           processes=True, dashboard_address=None)
        client = distributed.Client(cluster)
    with cluster, client:
        client.wait_for_workers(workers)
        yield client


def _dask_transform(data, profile, workers):
    """The explainer scattered once, the rows persisted in four blocks a worker (every
    worker busy, little scheduling), the masks persisted as a job writing them out would."""
    import dask.array as da
    import distributed

    from sk_sointer.parallel import dask_transform

    if data.expected is None:
        data.expected = data.explainer.transform(data.rows)
    with _client(workers) as client:
        X = client.persist(da.from_array(data.rows,
                                         chunks=(-(-profile.n_rows // (4 * workers)), 10)))
        distributed.wait(X)

        def transform():
            data.masks = client.persist(dask_transform(data.explainer, X, client=client))
            distributed.wait(data.masks)

        seconds = best_time(transform, profile.repeats, warmup=0)
        identical = bool(np.array_equal(client.compute(data.masks).result(), data.expected))
    return {"rows": profile.n_rows, "seconds": seconds, "identical_to_in_memory": identical}


def _kernel_shap_block(block, model, background):
    import shap

    explainer = shap.KernelExplainer(model.predict_proba, background)
    values = explainer.shap_values(block, silent=True)
    return np.asarray(values)[..., 0].reshape(len(block), -1).astype(np.float32)


def _kernel_shap(data, profile, workers):
    """One KernelExplainer a block, the best of two runs (the first imports shap there)."""
    import dask.array as da
    import shap

    background = shap.kmeans(data.X_train, 10)
    with _client(workers):
        few = da.from_array(data.rows[: profile.shap_rows],
                            chunks=(max(1, profile.shap_rows // workers), 10))
        seconds = best_time(lambda: few.map_blocks(_kernel_shap_block, data.model, background,
                                                   dtype=np.float32).compute(), 2, warmup=0)
    return {"rows": profile.shap_rows, "seconds": seconds}


def measure(data, dataset, engine, seed, profile, device, workers):
    if engine == "in_memory":
        def transform():
            data.expected = data.explainer.transform(data.rows)

        values = {"rows": profile.n_rows,
                  "seconds": best_time(transform, profile.repeats, warmup=0)}
    else:
        values = {"dask_transform": _dask_transform,
                  "kernel_shap_dask": _kernel_shap}[engine](data, profile, workers)
    values["rows_per_s"] = values["rows"] / values["seconds"]
    if workers == 1:
        data.one_worker[engine] = values["rows_per_s"]
    base = data.one_worker.get(engine)
    values["speedup_vs_1_worker"] = None if base is None else values["rows_per_s"] / base
    return values


def cases(dataset, methods, profile):
    """In memory once, then each engine on a cluster of each size, in the order asked
    (KernelSHAP where shap is installed)."""
    if importlib.util.find_spec("shap") is None:
        methods = [engine for engine in methods if engine != "kernel_shap_dask"]
    return [(engine, {"workers": 1}) for engine in methods if engine == "in_memory"] + [
        (engine, {"workers": workers}) for workers in profile.workers for engine in methods
        if engine != "in_memory"]


STUDY = Study(
    name="cluster", profiles=PROFILES, datasets=lambda profile: ["orange_skin"],
    methods=tuple(ENGINES), cases=cases, prepare=prepare, measure=measure,
    metrics={"rows": Metric("Rows", fmt=",.0f"), "seconds": Metric("Seconds"),
             "rows_per_s": Metric("Rows / s", fmt=",.0f"),
             "speedup_vs_1_worker": Metric("vs 1 worker", fmt=".2f")},
    tables=(Table("Rows per second by engine and workers",
                  ("rows", "rows_per_s", "speedup_vs_1_worker"), rows=("method", "workers"),
                  labels={"method": "Engine", "workers": "Workers"}),),
    labels=ENGINES,
    readme=(".. cluster-table-start", ".. cluster-table-end"),
    readme_tables=("Rows per second by engine and workers",),
)
