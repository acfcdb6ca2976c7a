"""SOInter against L2X and the per-row peers, explaining one output of a multi-label model.

SOInter's synthetic sets E1 (targets y1, y2) and E2 (targets y3, y4) at several widths, with
the paper's ground truth, and the yeast data bundled with river (every label as a target,
post-hoc accuracy only); see :mod:`harness.structured`. Writes
``benchmarks/results/sointer_<profile>.json`` (machine, profile and one record per task and
method, saved after every record) and the matching RST tables ``sointer_<profile>.rst``.

    python benchmarks/bench_sointer.py --profile fast    # smoke run, seconds
    python benchmarks/bench_sointer.py --profile full    # the issue's numbers
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

if __package__:  # imported as ``benchmarks.bench_sointer`` (the tests)
    from .harness import report, structured  # noqa: E402
else:  # run as a script: the harness package lies next to this file
    from harness import report, structured  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=sorted(structured.PROFILES), default="fast",
                        help="fast: a smoke run; full: the issue's sizes (default: fast)")
    parser.add_argument("--sets", nargs="+", choices=structured.SETS,
                        default=list(structured.SETS), help="data sets (default: all)")
    parser.add_argument("--widths", nargs="+", type=int, metavar="D",
                        help="input widths of E1 and E2 (default: the profile's)")
    names = structured.method_names(target_output=None)
    parser.add_argument("--methods", nargs="+", choices=names, metavar="NAME",
                        help=f"methods, among {', '.join(names)} (default: "
                        f"{', '.join(structured.default_methods())}, those available; the "
                        "random reference always runs)")
    parser.add_argument("--no-peers", action="store_true",
                        help="run only sk_sointer's explainers (and the random reference)")
    parser.add_argument("--seeds", type=int, default=None,
                        help="seeds of our explainers on E1 and E2 (default: the profile's)")
    parser.add_argument("--n-train", type=int, default=None,
                        help="explainers' training rows on E1 and E2 (default: the profile's)")
    parser.add_argument("--n-explain", type=int, default=None,
                        help="explained rows on E1 and E2 (default: the profile's)")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                        help="device of our explainers and the captum model (default: auto)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch and BLAS threads (default: 1)")
    parser.add_argument("--out", type=Path, default=None,
                        help="JSON file to write (default: benchmarks/results/"
                        "sointer_<profile>.json); the RST tables go next to it")
    parser.add_argument("--merge", action="store_true",
                        help="keep the records of --out that this run does not redo (same "
                        "data set, width, target and method), so a partial rerun updates a "
                        "full table")
    parser.add_argument("--add", nargs="+", type=Path, metavar="JSON",
                        help="run nothing: merge the records of these results files into "
                        "--out (as --merge would) and render its tables")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    profile = structured.PROFILES[args.profile]
    sizes = {"n_train": args.n_train, "n_explain": args.n_explain}
    sizes = {key: value for key, value in sizes.items() if value is not None}
    if sizes:  # a smaller run than the profile's is recorded as such in its JSON
        import dataclasses

        profile = dataclasses.replace(profile, **sizes)
    methods = args.methods or structured.default_methods()
    if args.no_peers:
        methods = [name for name in methods if structured.METHODS[name].amortized]
    out = args.out or report.RESULTS_DIR / f"sointer_{profile.name}.json"
    if args.add:
        return add_results(out, args.add, profile)
    machine = report.machine_info(args.device, args.threads)
    start = time.perf_counter()
    kept = report.load_records(out) if args.merge and out.exists() else []

    def save(records):
        machine["wall_s"] = round(time.perf_counter() - start, 1)
        report.save_results(out, structured.merge_records(kept, records), machine, profile)

    def log(line):
        print(f"[{time.perf_counter() - start:7.1f} s] {line}", file=sys.stderr, flush=True)

    records = structured.run_benchmark(
        profile, sets=args.sets, widths=args.widths, methods=methods, device=args.device,
        threads=args.threads, seeds=args.seeds, on_record=save, log=log)
    save(records)
    records = structured.merge_records(kept, records)
    table = structured.render_rst(records, machine, profile)
    out.with_suffix(".rst").write_text(table, encoding="utf-8")
    print(table)
    failed = [f"{r['dataset']} {r['target_label']} d={r['n_features']}/{r['method']}: "
              f"{r['error']}" for r in records if r["error"]]
    for line in failed:
        log(f"failed {line}")
    log(f"done: {len(records)} records ({len(failed)} failed), wall time "
        f"{machine['wall_s']:.0f} s; results in {out}")


def add_results(out, paths, profile):
    """Merge the records of the results files ``paths`` into ``out``; the machine entry
    keeps ``out``'s and lists the added files, each with its own machine entry."""
    import json

    payload = json.loads(out.read_text(encoding="utf-8"))
    records, machine = payload["records"], payload["machine"]
    for path in paths:
        added = json.loads(Path(path).read_text(encoding="utf-8"))
        records = structured.merge_records(records, added["records"])
        machine.setdefault("merged", []).append({"file": Path(path).name, **added["machine"]})
    report.save_results(out, records, machine, profile)
    table = structured.render_rst(records, machine, profile)
    out.with_suffix(".rst").write_text(table, encoding="utf-8")
    print(table)


if __name__ == "__main__":
    main()
