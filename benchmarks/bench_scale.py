"""Fit and transform time and peak memory of our explainers against rows and features.

Every amortized method of the registry is fitted and run on N(0, 1) tables of each size of
the profile's grid, next to its anchor (the same training as a plain torch loop), a bare
forward pass of its selector and, on CUDA, a copy-in, forward and copy-out of the host
rows; the per-row peers' cost per row is read from the synthetic benchmark's results.
Writes ``benchmarks/results/scale_<profile>_<device>.json`` (machine, profile, peers and
one record per table size and method, saved after every table) and the matching RST table
``scale_<profile>_<device>.rst``; ``--update-readme`` also puts the table into README.rst
between ``.. scale-table-start`` and ``.. scale-table-end`` (adding the markers at the end
of the Benchmarks section when it has none).

    python benchmarks/bench_scale.py --profile fast --device cpu   # smoke run, seconds
    python benchmarks/bench_scale.py --profile full                 # 10k-1M rows, 10-1,000 features
"""

import argparse
import os
import sys
import time
from pathlib import Path

# Small networks on a small shared CPU run far slower with several BLAS/OpenMP threads; this
# must be set before numpy is imported. ``--threads`` raises the limits at run time.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

if __package__:  # imported as ``benchmarks.bench_scale`` (the tests)
    from .harness import registry, report, scale  # noqa: E402
else:  # run as a script: the harness package lies next to this file
    from harness import registry, report, scale  # noqa: E402

README = Path(__file__).resolve().parents[1] / "README.rst"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=sorted(scale.PROFILES), default="fast",
                        help="fast: 10,000 rows, 10 and 100 features, 2 epochs (CI smoke "
                        "run); full: 10k, 100k and 1M rows of 10, 100 and 1,000 features "
                        "(default: fast)")
    parser.add_argument("--methods", nargs="+", choices=registry.method_names(amortized=True),
                        metavar="NAME",
                        help="methods to run, among "
                        f"{', '.join(registry.method_names(amortized=True))} (default: all)")
    parser.add_argument("--rows", nargs="+", type=int, metavar="N",
                        help="row counts to run instead of the profile's")
    parser.add_argument("--widths", nargs="+", type=int, metavar="N",
                        help="feature counts to run instead of the profile's (at least "
                        f"{scale.N_RELEVANT})")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                        help="device of the explainers, anchors and forward passes "
                        "(default: auto, CUDA when available)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch and BLAS threads (default: 1)")
    parser.add_argument("--peers-from", type=Path, default=scale.SYNTHETIC_RESULTS,
                        help="results of the synthetic benchmark to read the per-row peers' "
                        "cost from (default: benchmarks/results/synthetic_full.json)")
    parser.add_argument("--out", type=Path, default=None,
                        help="JSON file to write (default: benchmarks/results/"
                        "scale_<profile>_<device>.json); the RST table goes next to it")
    parser.add_argument("--update-readme", action="store_true",
                        help="replace README.rst's scale block with this run's table")
    args = parser.parse_args(argv)
    if args.widths and min(args.widths) < scale.N_RELEVANT:
        parser.error(f"--widths should be at least {scale.N_RELEVANT}, the relevant features.")
    if args.rows and min(args.rows) < 2:
        parser.error("--rows should be at least 2.")
    return args


def main(argv=None):
    args = parse_args(argv)
    profile = scale.PROFILES[args.profile]
    machine = report.machine_info(args.device, args.threads)
    out = args.out or report.RESULTS_DIR / f"scale_{profile.name}_{machine['device']}.json"
    peers = scale.peer_costs(args.peers_from)
    start = time.perf_counter()

    def save(records):
        machine["wall_s"] = round(time.perf_counter() - start, 1)
        scale.save_results(out, records, machine, profile, peers)

    def log(line):
        print(f"[{time.perf_counter() - start:7.1f} s] {line}", file=sys.stderr, flush=True)

    records = scale.run_scale(profile, methods=args.methods, rows=args.rows,
                              widths=args.widths, device=args.device, threads=args.threads,
                              on_record=save, log=log)
    save(records)
    table = scale.render_rst(records, machine, profile, peers)
    out.with_suffix(".rst").write_text(table, encoding="utf-8")
    if args.update_readme:
        scale.update_readme(README, table)
    print(table)
    for r in records:
        if r["error"] or r["memory_error"]:
            log(f"failed {r['method']} at {r['n_rows']:,} x {r['n_features']:,}: "
                f"{r['error'] or r['memory_error']}")
    log(f"done: {len(records)} records, wall time {machine['wall_s']:.0f} s; results in {out}")


if __name__ == "__main__":
    main()
