"""MEED, its ablations, L2X and REAL-X against per-row peers: k pixels of MNIST 3 vs 8 (MEED, Table 3).

See :mod:`harness.meed`. Writes ``benchmarks/results/meed_<profile>.json`` (machine,
profile, one record per method and the sanity check's, saved after every record) and the
RST table next to it. The command line is bench_images.py's.

    python benchmarks/bench_meed.py --profile fast    # sklearn's 8 x 8 digits, seconds
    python benchmarks/bench_meed.py --profile full    # MNIST 3 vs 8, k = 25 pixels
"""

import os

# Small networks on a small shared CPU run far slower with several BLAS/OpenMP threads.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

if __package__:  # imported as ``benchmarks.bench_meed`` (the tests)
    from . import bench_images  # noqa: E402
    from .harness import meed  # noqa: E402
else:  # run as a script: the harness package lies next to this file
    import bench_images  # noqa: E402
    from harness import meed  # noqa: E402


def main(argv=None):
    bench_images.main(argv, harness=meed, name="meed", description=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
