"""Run one study of ``benchmarks/studies/`` and write its records and tables.

    python benchmarks/bench.py STUDY --profile fast    # a smoke run (CI)
    python benchmarks/bench.py STUDY --profile full    # the numbers of doc/benchmarks.rst
    python benchmarks/bench.py STUDY --render benchmarks/results/STUDY_full.json

Writes ``benchmarks/results/<study>_<profile>.json`` (machine, profile and the records,
saved after every measurement) and its RST tables next to it.
"""

import os
import sys

# Small networks on a shared CPU run far slower with several BLAS/OpenMP threads; set before
# numpy is imported (``--threads`` raises the limits at run time).
for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import importlib  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

if not __package__:  # run as a script: import the benchmarks package from the checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import report, study as studies  # noqa: E402
from benchmarks.harness.registry import METHODS  # noqa: E402

STUDIES = ("synthetic", "hardkuma", "images", "meed", "text", "structured", "cluster", "scale",
           "tables", "tags", "segmentation", "mixed_tables")
RESULTS_PAGE = Path(__file__).resolve().parents[1] / "doc" / "benchmarks.rst"


def parse_args(argv=None):
    # The study's options and choices join the parser once its name is known; --help too.
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], add_help=False)
    parser.add_argument("study", choices=STUDIES)
    study = importlib.import_module(
        f"benchmarks.studies.{parser.parse_known_args(argv)[0].study}").STUDY
    parser.add_argument("-h", "--help", action="help", help="show this help message and exit")
    parser.add_argument("--profile", choices=sorted(study.profiles), default="fast")
    parser.add_argument("--methods", nargs="+", choices=study.methods, metavar="NAME",
                        help=f"among {', '.join(study.methods)} (default: all)")
    parser.add_argument("--datasets", nargs="+", metavar="NAME",
                        help="run only these of the profile's data sets")
    parser.add_argument("--no-peers", action="store_true",
                        help="run only sk_sointer's explainers (and the references)")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    parser.add_argument("--threads", type=int, default=1, help="torch and BLAS threads")
    parser.add_argument("--seeds", type=int, default=None,
                        help="seeds of our explainers instead of the profile's")
    parser.add_argument("--out", type=Path, default=None,
                        help="JSON file (default: benchmarks/results/<study>_<profile>.json, "
                        "scale_<profile>_<device>.json for the scale study)")
    parser.add_argument("--merge", action="store_true",
                        help="keep the records of --out that this run does not redo (same "
                        "data set and method), so a partial rerun updates a full table")
    parser.add_argument("--render", type=Path, metavar="JSON",
                        help="run nothing: print the tables of this results file")
    if study.readme:
        parser.add_argument("--update-doc", action="store_true",
                            help="put the tables into doc/benchmarks.rst between "
                            f"{study.readme[0]!r} and {study.readme[1]!r}")
    for name, option in study.options.items():
        parser.add_argument("--" + name.replace("_", "-"), dest=name, default=None, **option)
    return study, parser.parse_args(argv)


def main(argv=None):
    """Run the study (or ``--render`` a results file), print its tables and return its
    records (the tables when rendering)."""
    study, args = parse_args(argv)
    if args.render:
        records, machine, profile = report.load_study_results(args.render)
    else:
        records, machine, profile, out = run(study, args)
    table = report.render(study, records, machine, profile)
    if not args.render:
        out.with_suffix(".rst").write_text(table, encoding="utf-8")
    if getattr(args, "update_doc", False):
        block = report.render(study, records, machine, profile, titles=study.readme_tables)
        report.update_readme(RESULTS_PAGE, block, *study.readme)
    print(table)
    return table if args.render else records


def run(study, args):
    """The records (with those ``--merge`` keeps), machine, profile and results file."""
    profile = study.profile(args.profile, seeds=args.seeds, datasets=args.datasets,
                            **{name: getattr(args, name) for name in study.options})
    methods = args.methods or list(study.default_methods or study.methods)
    if args.no_peers:
        methods = [name for name in methods if name not in METHODS or METHODS[name].amortized]
    machine = report.machine_info(args.device, args.threads)
    out = args.out or report.RESULTS_DIR / (study.results_name.format(
        study=study.name, profile=profile.name, device=machine["device"]) + ".json")
    kept = report.load_study_results(out)[0] if args.merge and out.exists() else []
    order = study.datasets(study.profile(args.profile))
    start = time.perf_counter()

    def save(records):
        machine["wall_s"] = round(time.perf_counter() - start, 1)
        report.save_results(out, studies.merge(kept, records, order), machine, profile,
                            study=study.name)

    def log(line):
        print(f"[{time.perf_counter() - start:7.1f} s] {line}", file=sys.stderr, flush=True)

    records = studies.run(study, profile, methods=methods, device=args.device,
                          threads=args.threads, on_record=save, log=log)
    save(records)
    for r in records:
        if r["metric"] == "error":
            log(f"failed {r['dataset']} / {r['method']}: {r['error']}")
    return studies.merge(kept, records, order), machine, profile, out


if __name__ == "__main__":
    main()
