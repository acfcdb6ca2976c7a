"""Explaining on Dask and Spark gives the in-memory masks, row for row."""

import shutil
import warnings

import numpy as np
import pytest

import sk_sointer
from sk_sointer import L2XExplainer
from sk_sointer.datasets import make_orange_skin
from sk_sointer.parallel import dask_transform, spark_predict_fn

FAST = {"max_epochs": 2, "batch_size": 32, "random_state": 0, "device": "cpu"}


@pytest.fixture(scope="module")
def fitted():
    X, y, _ = make_orange_skin(n_samples=2000, random_state=0)
    explainer = L2XExplainer(k=4, max_epochs=3, batch_size=200, random_state=0).fit(X, y)
    rows = np.random.default_rng(1).standard_normal((20_000, 10)).astype(np.float32)
    return explainer, rows


def assert_same_scores(actual, explainer, rows):
    """Scores of other chunkings are bit-equal on a CPU; CUDA's kernels promise no exact
    equality across batch shapes, so there they are compared to float32 precision (the masks
    stay exact everywhere)."""
    desired = explainer.explain(rows)
    if explainer._inference_device().type == "cpu":
        np.testing.assert_array_equal(actual, desired)
    else:
        np.testing.assert_allclose(actual, desired, rtol=1e-5, atol=1e-6)


def test_dask_array_masks_and_scores_match_in_memory_with_the_local_scheduler(fitted):
    da = pytest.importorskip("dask.array")
    explainer, rows = fitted
    lazy = dask_transform(explainer, da.from_array(rows, chunks=(3000, 5)))
    assert lazy.chunks[1] == (10,)  # rechunked to whole rows
    masks = lazy.compute(scheduler="threads")
    assert masks.dtype == np.float32
    np.testing.assert_array_equal(masks, explainer.transform(rows))
    scores = dask_transform(explainer, da.from_array(rows, chunks=3000), method="explain")
    assert_same_scores(scores.compute(scheduler="sync"), explainer, rows)


def test_dask_dataframe_keeps_index_and_columns(fitted):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    explainer, rows = fitted
    columns = [f"x{j}" for j in range(10)]
    frame = pd.DataFrame(rows[:5000].astype(np.float64), columns=columns,
                         index=np.arange(5000) * 3)
    named = L2XExplainer(k=4, max_epochs=1, random_state=0).fit(frame, frame["x0"] > 0)
    result = dask_transform(named, dd.from_pandas(frame, npartitions=4)).compute(scheduler="sync")
    assert list(result.columns) == columns
    np.testing.assert_array_equal(result.index, frame.index)
    np.testing.assert_array_equal(result.to_numpy(), named.transform(frame))


def test_dask_transform_rejects_what_it_cannot_map(fitted):
    pytest.importorskip("dask.array")
    explainer, rows = fitted
    with pytest.raises(TypeError, match="dask Array or DataFrame; got ndarray.*transform"):
        dask_transform(explainer, rows)
    with pytest.raises(ValueError, match="method should be one of"):
        dask_transform(explainer, rows, method="predict")
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        dask_transform(L2XExplainer(), rows)


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    import dask

    # Without the memory manager, whose replica reduction would race the checks of where
    # the explainer is held.
    with warnings.catch_warnings(), dask.config.set(
            {"distributed.scheduler.active-memory-manager.start": False}):
        warnings.simplefilter("ignore")  # port and memory-limit notices of a local cluster
        local = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                         dashboard_address=None)
        client = distributed.Client(local)
        client.wait_for_workers(2)  # scatter broadcasts to the workers present
    yield client
    client.close()
    local.close()


def test_local_cluster_of_processes_gives_identical_masks(fitted, cluster):
    da = pytest.importorskip("dask.array")
    explainer, rows = fitted
    masks = dask_transform(explainer, da.from_array(rows, chunks=2500), client=cluster)
    np.testing.assert_array_equal(cluster.compute(masks).result(), explainer.transform(rows))
    # The explainer goes to every worker as one piece of data that the tasks refer to.
    from sk_sointer.parallel import _ship

    shipped = _ship(explainer, cluster)
    assert len(cluster.who_has(shipped)[shipped.key]) == 2
    # One torch thread in each worker process.
    threads = cluster.run(lambda: __import__("torch").get_num_threads())
    assert set(threads.values()) == {1}


def test_grid_search_runs_on_the_dask_joblib_backend(cluster):
    joblib = pytest.importorskip("joblib")
    from sklearn.model_selection import GridSearchCV

    X, y, _ = make_orange_skin(n_samples=600, random_state=0)
    grid = {"k": [2, 4], "tau": [0.1, 1.0]}

    def search(n_jobs):
        return GridSearchCV(L2XExplainer(max_epochs=2, batch_size=100, random_state=0), grid,
                            cv=2, n_jobs=n_jobs).fit(X, y)

    local = search(None)
    with joblib.parallel_backend("dask"):
        remote = search(-1)
    np.testing.assert_allclose(remote.cv_results_["mean_test_score"],
                               local.cv_results_["mean_test_score"])
    assert remote.best_params_ == local.best_params_


def test_spark_predict_fn_loads_once_and_explains_batches(fitted, tmp_path):
    explainer, rows = fitted
    path = tmp_path / "l2x.safetensors"
    sk_sointer.save(explainer, path)
    predict = spark_predict_fn(path)()
    expected = explainer.transform(rows[:300].astype(np.float64))
    np.testing.assert_array_equal(predict(rows[:300].astype(np.float64)), expected)
    scores = spark_predict_fn(path, method="explain")()(rows[:300])
    assert_same_scores(scores, explainer, rows[:300])
    with pytest.raises(FileNotFoundError, match="addFile"):
        spark_predict_fn(tmp_path / "missing.safetensors")()


def test_spark_predict_fn_serves_a_saved_sointer_explainer(tmp_path):
    """SOInter explains one output of a multi-label model; saved without pickle, it is
    served like any other explainer."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.multioutput import MultiOutputClassifier

    rng = np.random.RandomState(0)
    X = rng.randn(300, 6).astype(np.float32)
    labels = np.c_[X[:, 0] > 0, X[:, 0] + X[:, 1] > 0].astype(int)
    model = MultiOutputClassifier(LogisticRegression()).fit(X, labels)
    explainer = sk_sointer.SOInterExplainer(
        target=1, k=2, max_epochs=3, energy=sk_sointer.EnergyNet(max_epochs=3), energy_masks=1,
        refine=None, random_state=0, device="cpu").fit(X, black_box=model)
    path = tmp_path / "sointer.safetensors"
    sk_sointer.save(explainer, path)
    np.testing.assert_array_equal(spark_predict_fn(path)()(X), explainer.transform(X))
    np.testing.assert_array_equal(spark_predict_fn(path, method="explain")()(X),
                                  explainer.explain(X))


def _spark_or_skip():
    pytest.importorskip("pyspark", reason="pyspark is not installed (the spark extra)")
    if shutil.which("java") is None:
        pytest.skip("no Java runtime on this machine: Spark needs one")
    from pyspark.sql import SparkSession

    return (SparkSession.builder.master("local[2]").appName("sk_sointer-test")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate())


def test_spark_dataframe_gains_a_mask_column(fitted, tmp_path):
    explainer, rows = fitted
    spark = _spark_or_skip()
    try:
        from pyspark.ml.functions import predict_batch_udf
        from pyspark.sql.functions import array
        from pyspark.sql.types import ArrayType, FloatType

        path = tmp_path / "l2x.safetensors"
        sk_sointer.save(explainer, path)
        columns = [f"x{j}" for j in range(10)]
        data = rows[:2000].astype(np.float64)
        frame = spark.createDataFrame([tuple(map(float, row)) for row in data], columns)
        explain = predict_batch_udf(spark_predict_fn(str(path)),
                                    return_type=ArrayType(FloatType()), batch_size=500,
                                    input_tensor_shapes=[[10]])
        result = frame.withColumn("mask", explain(array(*columns))).toPandas()
        masks = np.stack(result["mask"].to_numpy())
        by_row = {tuple(row): mask for row, mask in zip(result[columns].to_numpy(), masks)}
        expected = explainer.transform(data)
        np.testing.assert_array_equal(np.stack([by_row[tuple(row)] for row in data]), expected)
    finally:
        spark.stop()


def test_dask_transform_refuses_text_columns_before_computing(rows):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    from sk_sointer.parallel import dask_transform

    X, single, _ = rows
    explainer = L2XExplainer(k=1, **FAST).fit(X[:, :3], single.predict(X))
    frame = pd.DataFrame(X[:, :3], columns=["a", "b", "c"]).astype({"c": str})
    columns = r"numbers only; its columns \{'c': '(object|str|string)'\}"
    with pytest.raises(ValueError, match=columns):
        dask_transform(explainer, dd.from_pandas(frame, npartitions=2))
