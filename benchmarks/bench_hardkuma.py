"""HardKuma: the selection rate asked for against the rate achieved, and TPR against L2X.

See :mod:`harness.hardkuma`. Writes ``benchmarks/results/hardkuma_<profile>.json`` (machine,
profile, one record per data set and rate, saved after every record) and the RST table
next to it. The command line is bench_images.py's (``--methods`` picks the parts,
``rate`` and ``matched``).

    python benchmarks/bench_hardkuma.py --profile fast    # seconds
    python benchmarks/bench_hardkuma.py --profile full    # the README's numbers
"""

import os

# Small networks on a small shared CPU run far slower with several BLAS/OpenMP threads.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

if __package__:  # imported as ``benchmarks.bench_hardkuma`` (the tests)
    from . import bench_images  # noqa: E402
    from .harness import hardkuma  # noqa: E402
else:  # run as a script: the harness package lies next to this file
    import bench_images  # noqa: E402
    from harness import hardkuma  # noqa: E402


def main(argv=None):
    bench_images.main(argv, harness=hardkuma, name="hardkuma",
                      description=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
