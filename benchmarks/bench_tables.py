"""Real tables: our explainers against the best global subset, KernelSHAP, LIME and a
per-row greedy search, on tables that ship with scikit-learn and river.

See :mod:`harness.tables`. Writes ``benchmarks/results/tables_<profile>.json`` (machine,
profile and one record per table, black box, k and method, saved after every pair) and the
RST tables ``tables_<profile>.rst`` next to it (the README embeds the full profile's). The
command line is bench_images.py's: ``--methods`` picks among our explainers and the peers
(the random, global and per-row references always run).

    python benchmarks/bench_tables.py --profile fast    # smoke run, seconds
    python benchmarks/bench_tables.py --profile full    # every explainer at its defaults
"""

import os

# Small networks on a small shared CPU run far slower with several BLAS/OpenMP threads.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

if __package__:  # imported as ``benchmarks.bench_tables`` (the tests)
    from . import bench_images  # noqa: E402
    from .harness import tables  # noqa: E402
else:  # run as a script: the harness package lies next to this file
    import bench_images  # noqa: E402
    from harness import tables  # noqa: E402


def main(argv=None):
    bench_images.main(argv, harness=tables, name="tables",
                      description=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
