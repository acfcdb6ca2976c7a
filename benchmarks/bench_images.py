"""L2X and REAL-X against per-row peers, explaining a CNN on MNIST 3 vs 8.

See :mod:`harness.images`. Writes ``benchmarks/results/images_<profile>.json`` (machine,
profile, one record per method, saved after every record) and the RST table next to it.

    python benchmarks/bench_images.py --profile fast    # sklearn's 8 x 8 digits, seconds
    python benchmarks/bench_images.py --profile full    # MNIST 3 vs 8, the issue's numbers
"""

import argparse
import os
import sys
import time
from pathlib import Path

# Small networks on a small shared CPU run far slower with several BLAS/OpenMP threads.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

if __package__:  # imported as ``benchmarks.bench_images`` (the tests)
    from .harness import images, report  # noqa: E402
else:  # run as a script: the harness package lies next to this file
    from harness import images, report  # noqa: E402


def parse_args(argv=None, harness=images, name="images", description=None):
    parser = argparse.ArgumentParser(description=description or __doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=sorted(harness.PROFILES), default="fast")
    parser.add_argument("--methods", nargs="+", choices=harness.METHODS, metavar="NAME",
                        help=f"among {', '.join(harness.METHODS)} (default: all; the random "
                        "reference always runs)")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None,
                        help=f"JSON file (default: benchmarks/results/{name}_<profile>.json)")
    return parser.parse_args(argv)


def main(argv=None, harness=images, name="images", description=None):
    """Run ``harness`` (a module with ``PROFILES``, ``METHODS``, ``run_benchmark`` and
    ``render_rst``: :mod:`harness.images`, or :mod:`harness.meed` for bench_meed.py)."""
    import torch

    from sk_sointer._utils import resolve_device

    args = parse_args(argv, harness, name, description)
    torch.set_num_threads(args.threads)
    profile = harness.PROFILES[args.profile]
    device = resolve_device(args.device)
    out = args.out or report.RESULTS_DIR / f"{name}_{profile.name}.json"
    machine = report.machine_info(args.device, args.threads)
    start = time.perf_counter()

    def save(records):
        machine["wall_s"] = round(time.perf_counter() - start, 1)
        report.save_results(out, records, machine, profile)

    def log(line):
        print(f"[{time.perf_counter() - start:7.1f} s] {line}", file=sys.stderr, flush=True)

    records = harness.run_benchmark(profile, methods=args.methods, device=device,
                                    on_record=save, log=log)
    save(records)
    table = harness.render_rst(records, machine, profile)
    out.with_suffix(".rst").write_text(table, encoding="utf-8")
    print(table)


if __name__ == "__main__":
    main()
