"""Quality and speed of every explainer on the synthetic data sets with known answers.

Writes ``benchmarks/results/synthetic_<profile>.json`` (machine description, profile and one
record per data set and method, saved after every record) and the matching RST table
``synthetic_<profile>.rst``; ``--update-readme`` also puts the table into README.rst between
``.. results-table-start`` and ``.. results-table-end``.

    python benchmarks/bench_synthetic.py --profile fast    # smoke run, a few minutes
    python benchmarks/bench_synthetic.py --profile full    # the numbers in the README
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

if __package__:  # imported as ``benchmarks.bench_synthetic`` (the tests)
    from .harness import data, registry, report, run  # noqa: E402
else:  # run as a script: the harness package lies next to this file
    from harness import data, registry, report, run  # noqa: E402

README = Path(__file__).resolve().parents[1] / "README.rst"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=sorted(data.PROFILES), default="fast",
                        help="fast: a CI smoke run; full: the README's numbers (default: fast)")
    parser.add_argument("--datasets", nargs="+", choices=list(data.DATASETS), metavar="NAME",
                        help=f"data sets to run, among {', '.join(data.DATASETS)} "
                        "(default: all)")
    parser.add_argument("--methods", nargs="+", choices=registry.method_names(),
                        metavar="NAME",
                        help="methods to run, among "
                        f"{', '.join(registry.method_names())} (default: all available)")
    parser.add_argument("--no-peers", action="store_true",
                        help="run only sk_sointer's explainers (no "
                        f"{', '.join(registry.peer_packages())})")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                        help="device of our explainers, EVAL-X and the captum model "
                        "(default: auto, CUDA when available)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch and BLAS threads (default: 1)")
    parser.add_argument("--seeds", type=int, default=1,
                        help="fit our explainers with this many seeds and record each seed's "
                             "median rank (every other metric is seed 0's)")
    parser.add_argument("--out", type=Path, default=None,
                        help="JSON file to write (default: benchmarks/results/"
                        "synthetic_<profile>.json); the RST table goes next to it")
    parser.add_argument("--merge", action="store_true",
                        help="keep the records of --out that this run does not redo (same "
                        "data set and method), so a partial rerun updates a full table")
    parser.add_argument("--update-readme", action="store_true",
                        help="replace README.rst's results block with this run's table")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    profile = data.PROFILES[args.profile]
    methods = args.methods or registry.method_names()
    if args.no_peers:
        methods = [name for name in methods if registry.METHODS[name].amortized]
    out = args.out or report.RESULTS_DIR / f"synthetic_{profile.name}.json"
    machine = report.machine_info(args.device, args.threads)

    start = time.perf_counter()
    kept = report.load_records(out) if args.merge and out.exists() else []

    def save(records):
        machine["wall_s"] = round(time.perf_counter() - start, 1)
        report.save_results(out, report.merge_records(kept, records), machine, profile)

    def log(line):
        print(f"[{time.perf_counter() - start:7.1f} s] {line}", file=sys.stderr, flush=True)

    records = run.run_benchmark(profile, dataset_names=args.datasets, methods=methods,
                                device=args.device, threads=args.threads, seeds=args.seeds,
                                on_record=save, log=log)
    save(records)
    records = report.merge_records(kept, records)
    table = report.render_rst(records, machine, profile)
    out.with_suffix(".rst").write_text(table, encoding="utf-8")
    if args.update_readme:
        report.update_readme(README, table)
    print(table)
    failed = [f"{r['dataset']}/{r['method']}: {r['error']}" for r in records if r["error"]]
    for line in failed:
        log(f"failed {line}")
    log(f"done: {len(records)} records ({len(failed)} failed), wall time "
        f"{machine['wall_s']:.0f} s; results in {out}")


if __name__ == "__main__":
    main()
