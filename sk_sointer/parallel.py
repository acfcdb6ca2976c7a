"""Explaining data that lives on a cluster: Dask collections and Spark DataFrames.

A fitted explainer is a small network, and explaining rows is an embarrassingly parallel
map over them, which Dask and Spark already do well. Two helpers make the explainer behave
inside them:

- :func:`dask_transform`: ``transform`` (or ``explain``) of a Dask array or DataFrame,
  partition by partition, the explainer shipped to each worker once, lazily;
- :func:`spark_predict_fn`: the ``make_predict_fn`` that Spark's
  ``pyspark.ml.functions.predict_batch_udf`` (Spark 3.4 or newer) calls once per Python
  worker; it loads the explainer from a file written by :func:`sk_sointer.save` (no
  pickle), so a DataFrame gains a column of masks or scores.

Each worker runs torch on ``torch_threads`` threads (1 by default): with several workers
on one machine, torch's default of one thread per core makes them fight over the cores.
The masks are those of the in-memory ``transform``, row for row.
"""

import os

import numpy as np
from sklearn.utils.validation import check_is_fitted

__all__ = ["dask_transform", "spark_predict_fn"]

_METHODS = ("transform", "explain")


def _check_method(method):
    if method not in _METHODS:
        raise ValueError(f"method should be one of {_METHODS}; got {method!r}.")


def _set_torch_threads(threads):
    import torch

    if threads is not None and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def _output_dtype(dtypes, method):
    """What ``method`` returns for inputs of these dtypes: scores are float32, masks keep a
    float input's dtype (float32 only when every column is)."""
    if method == "explain":
        return np.dtype(np.float32)
    # pandas' own dtypes (Float32, Int64) name their NumPy dtype.
    dtypes = [np.dtype(getattr(dtype, "numpy_dtype", dtype)) for dtype in dtypes]
    return np.dtype(np.float32 if dtypes and all(d == np.float32 for d in dtypes) else np.float64)


def _explain_block(block, explainer, method, torch_threads):
    """``method`` of one partition of an array (rows along the first axis)."""
    if len(block) == 0:  # sklearn refuses zero rows; Dask asks for them when probing
        return np.zeros(block.shape, dtype=_output_dtype([block.dtype], method))
    _set_torch_threads(torch_threads)
    return getattr(explainer, method)(block)


def _explain_frame(frame, explainer, method, torch_threads, dtype):
    """``method`` of one partition of a DataFrame, as a DataFrame of the same labels."""
    import pandas as pd

    values = (np.zeros(frame.shape, dtype=dtype) if len(frame) == 0
              else _explain_block(frame, explainer, method, torch_threads))
    return pd.DataFrame(np.asarray(values, dtype=dtype), index=frame.index, columns=frame.columns)


def _ship(explainer, client):
    """The explainer as one piece of data every task refers to: scattered to every worker
    of ``client`` (or of the current distributed client), else one node of the graph."""
    if client is None:
        try:
            from distributed import default_client

            client = default_client()
        except (ImportError, ValueError):  # no distributed, or no client running
            client = None
    if client is not None:
        return client.scatter(explainer, broadcast=True, hash=False)
    import dask

    return dask.delayed(explainer, pure=False)


def dask_transform(explainer, X, *, method="transform", client=None, torch_threads=1):
    """``transform`` (or ``explain``) of a Dask array or DataFrame, partition by partition.

    Lazy: returns a Dask collection; ``.compute()`` (or writing it out) runs it. The
    explainer travels to each worker once, not with every task: scattered to every worker
    of a distributed client, or, with the local schedulers, one node of the graph.

    Parameters
    ----------
    explainer : fitted explainer
        Any explainer of this package (a ``transform`` that needs no model: MEED with the
        output feedback needs ``outputs=`` and is not supported here).
    X : dask.array.Array or dask.dataframe.DataFrame
        Rows along the first axis, as the explainer takes them in memory (images keep
        their shape). An array chunked along other axes is rechunked to whole rows.
    method : {"transform", "explain"}, default="transform"
        0/1 masks, or the scores behind them.
    client : distributed.Client, default=None
        Where to scatter the explainer; default: the current client, if any.
    torch_threads : int or None, default=1
        torch threads in each worker process (None leaves torch's setting).

    Returns
    -------
    result : dask.array.Array or dask.dataframe.DataFrame
        Of the shape (and, for a DataFrame, the index and columns) of ``X``; identical to
        ``explainer.transform(X.compute())``.

    Examples
    --------
    >>> import dask.array as da
    >>> from sk_sointer.datasets import make_xor
    >>> from sk_sointer import L2XExplainer
    >>> from sk_sointer.parallel import dask_transform
    >>> X, y, _ = make_xor(n_samples=400, random_state=0)
    >>> explainer = L2XExplainer(k=2, max_epochs=2, random_state=0).fit(X, y)
    >>> masks = dask_transform(explainer, da.from_array(X, chunks=100))
    >>> masks.chunks[0], bool((masks.compute() == explainer.transform(X)).all())
    ((100, 100, 100, 100), True)
    """
    check_is_fitted(explainer)
    _check_method(method)
    try:
        import dask.array as da
    except ImportError as error:
        raise ImportError('dask_transform needs dask: pip install "sk_sointer[dask]".') from error
    if isinstance(X, da.Array):
        if X.ndim < 2:
            raise ValueError(f"X should hold one row per sample (2-D or more); got {X.ndim}-D.")
        X = X.rechunk({axis: -1 for axis in range(1, X.ndim)})
        dtype = _output_dtype([X.dtype], method)
        return X.map_blocks(_explain_block, _ship(explainer, client), method, torch_threads,
                            dtype=dtype, meta=np.empty((0,) * X.ndim, dtype=dtype))
    try:
        import dask.dataframe as dd
    except ImportError:
        dd = None
    if dd is not None and isinstance(X, dd.DataFrame):
        import pandas as pd

        # Refused here, where the columns' dtypes are known without computing anything, as
        # the explainer's validation would refuse them in every partition.
        other = {str(column): str(dtype) for column, dtype in X.dtypes.items()
                 if not pd.api.types.is_numeric_dtype(dtype)}
        if explainer._table_codec is not None:  # a table's explainer reads any column
            other, dtypes = {}, [np.float64]  # its masks of a table's codes are float64
        else:
            dtypes = X.dtypes
        if other:
            raise ValueError(
                f"X should hold numbers only; its columns {other} (name: dtype) do not. "
                "Fit the explainer on the table itself (a pandas DataFrame of these "
                "columns, with a model that takes it) to explain such columns."
            )
        dtype = _output_dtype(dtypes, method)
        meta = pd.DataFrame({column: pd.Series(dtype=dtype) for column in X.columns})
        return X.map_partitions(_explain_frame, _ship(explainer, client), method, torch_threads,
                                dtype, meta=meta)
    raise TypeError(
        f"X should be a dask Array or DataFrame; got {type(X).__name__}. For data in memory "
        f"call explainer.{method}(X)."
    )


def _local_file(path):
    """``path``, or the copy Spark distributed with ``SparkContext.addFile``."""
    path = os.fspath(path)
    if os.path.exists(path):
        return path
    try:
        from pyspark import SparkFiles

        shipped = SparkFiles.get(os.path.basename(path))
    except Exception:  # not inside Spark, or no file added
        shipped = None
    if shipped is None or not os.path.exists(shipped):
        raise FileNotFoundError(
            f"{path} is not on this worker: put it on a file system every worker reads, or "
            "ship it with spark.sparkContext.addFile(path)."
        )
    return shipped


def spark_predict_fn(path, *, method="transform", device="cpu", torch_threads=1):
    """The ``make_predict_fn`` of ``pyspark.ml.functions.predict_batch_udf`` for a saved
    explainer.

    Spark calls it once per Python worker: it loads the explainer from ``path`` (a file of
    :func:`sk_sointer.save`; no pickle, so no code runs from the file) and returns a
    function from a batch of rows to their masks (or scores).

    Parameters
    ----------
    path : str or path-like
        The saved explainer, on a file system every worker reads, or shipped with
        ``spark.sparkContext.addFile(path)`` (found then by its name).
    method : {"transform", "explain"}, default="transform"
    device : str, default="cpu"
        Where each worker runs the networks (e.g. "cuda" on GPU executors).
    torch_threads : int or None, default=1
        torch threads in each Python worker.

    Returns
    -------
    make_predict_fn : callable
        Takes no argument; returns ``predict(rows)``, which takes a batch of rows as one
        2-D array (Spark's array column of the features, with
        ``input_tensor_shapes=[[n_features]]``; ``pyspark.sql.functions.array`` makes one
        from feature columns) and returns a float32 array of shape (batch, n_features).
        For an explainer fitted on a table (text, dates, empty cells), ``predict`` takes
        the table's columns, one array each in the fitted order (``predict_batch_udf``
        with one input column per table column), and returns one mask column per table
        column.

    Examples
    --------
    Spark itself is not needed to see what the workers will run:

    >>> import numpy as np
    >>> import sk_sointer
    >>> from sk_sointer import L2XExplainer
    >>> from sk_sointer.datasets import make_xor
    >>> from sk_sointer.parallel import spark_predict_fn
    >>> X, y, _ = make_xor(n_samples=400, random_state=0)
    >>> explainer = L2XExplainer(k=2, max_epochs=2, random_state=0).fit(X, y)
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "l2x.safetensors")
    >>> sk_sointer.save(explainer, path)
    >>> predict = spark_predict_fn(path)()
    >>> masks = predict(X[:5].astype(np.float64))   # a batch of five rows
    >>> masks.shape, masks.sum(axis=1)
    ((5, 10), array([2., 2., 2., 2., 2.], dtype=float32))
    """
    _check_method(method)

    def make_predict_fn():
        from ._persist import load

        _set_torch_threads(torch_threads)
        explainer = load(_local_file(path), device=device)
        explain = getattr(explainer, method)

        codec = explainer._table_codec

        def predict(*columns):
            if codec is not None and len(columns) > 1:
                # A table's columns, one array each (Spark's input columns, in the fitted
                # order): a frame of the table's names, read as fit read the table.
                import pandas as pd

                rows = pd.DataFrame(dict(zip(codec.columns_, columns)))
            else:
                rows = columns[0] if codec is not None else np.asarray(columns[0])
            return np.asarray(explain(rows), dtype=np.float32).reshape(len(rows), -1)

        return predict

    return make_predict_fn
