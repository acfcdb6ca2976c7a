"""Real tables: our explainers against the best global subset, KernelSHAP, LIME and a
per-row greedy search, on tables that ship with scikit-learn and river.

See :mod:`harness.tables`. Writes ``benchmarks/results/tables_<profile>.json`` (machine,
profile and one record per table, black box, k and method, saved after every pair) and the
RST tables ``tables_<profile>.rst`` next to it (the README embeds the full profile's).
``--methods`` picks among our explainers and the peers (the random, global and per-row
references always run).

    python benchmarks/bench_tables.py --profile fast    # smoke run, seconds
    python benchmarks/bench_tables.py --profile full    # every explainer at its defaults
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

if __package__:  # imported as ``benchmarks.bench_tables`` (the tests)
    from .harness import report, tables  # noqa: E402
else:  # run as a script: the harness package lies next to this file
    from harness import report, tables  # noqa: E402


def parse_args(argv=None):
    harness, name = tables, "tables"
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=sorted(harness.PROFILES), default="fast")
    parser.add_argument("--methods", nargs="+", choices=harness.METHODS, metavar="NAME",
                        help=f"among {', '.join(harness.METHODS)} (default: all; the random "
                        "reference always runs)")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None,
                        help=f"JSON file (default: benchmarks/results/{name}_<profile>.json)")
    return parser.parse_args(argv)


def main(argv=None):
    import torch

    from sk_sointer._utils import resolve_device

    args = parse_args(argv)
    harness = tables
    torch.set_num_threads(args.threads)
    profile = harness.PROFILES[args.profile]
    device = resolve_device(args.device)
    out = args.out or report.RESULTS_DIR / f"tables_{profile.name}.json"
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
