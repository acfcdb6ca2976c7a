"""Command-line interface: ``python -m sk_sointer {demo,explain,inspect}``.

``demo`` trains a black box on one of the built-in synthetic sets, explains it and reports
fidelity, agreement with the ground truth and timings. ``explain`` explains a saved model on
the rows of a CSV file and writes the masks (and, if asked, the scores behind them) to CSV
files; it can save the fitted explainer, or load a saved one instead of fitting.
``inspect`` prints what a file written by :func:`sk_sointer.save` holds, before one loads a
file someone sent: the class and the sk_sointer version that wrote it, the parameters (those
differing from the defaults first, marked ``*``), the data (features, groups, row or image
shape, tokens, feature names), k, the outputs (kinds, classes, SOInter's target) and the
tensors (count, values and bytes, and each part's shapes), from the file's header alone: no
estimator or torch module is built and no tensor data is read. ``--json`` prints the same as
one JSON object::

    python -m sk_sointer inspect explainer.safetensors
    python -m sk_sointer inspect explainer.safetensors --json

Exit status: 2 for bad input (options, files, parameter names and values: whatever the
CLI's or the estimator's validation rejects), with a one-line message on stderr and never a
traceback; 1 when the user's model raises, with one line naming the model and its error
(the traceback too with ``--debug``). Warnings print once each as one line on stderr.
A CSV file of numbers is read with the standard library; one that a model taking a
DataFrame (a Pipeline with its encoder) is given, with pandas: its text and empty cells as
``pandas.read_csv`` reads them, the masks (and ``--reasons``) under the table's header.
"""

import argparse
import json
import math
import sys
import traceback

from ._common import _HELP_DEFAULTS, _InputError, _ModelError, _one_line_warnings
from .demo import _DEMO_MIN_ROWS, _DEMO_SETS, _STRUCTURED_SETS, _run_demo
from .explain import _run_explain
from .inspect import _run_inspect, printable


def _number(convert, accepts, expected):
    """An argparse ``type``: ``convert(text)``, refused unless ``accepts`` it, with a message
    saying what was ``expected``."""

    def parse(text):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}; got {text!r}") from None
        if not accepts(value):
            raise argparse.ArgumentTypeError(f"expected {expected}; got {text!r}")
        return value

    return parse


_positive_int = _number(int, lambda value: value >= 1, "a positive integer")
_non_negative_int = _number(int, lambda value: value >= 0, "an integer >= 0")
_non_negative_float = _number(float, lambda value: math.isfinite(value) and value >= 0,
                              "a finite number >= 0")
_positive_float = _number(float, lambda value: math.isfinite(value) and value > 0,
                          "a finite number > 0")


def _demo_rows(text):
    value = _positive_int(text)
    if value < _DEMO_MIN_ROWS:
        raise argparse.ArgumentTypeError(f"needs at least {_DEMO_MIN_ROWS} rows; got {value}")
    return value


def _device(text):
    import torch

    try:
        if text != "auto":
            torch.device(text)
    except (RuntimeError, TypeError):
        raise argparse.ArgumentTypeError(
            f"expected auto, cpu, cuda or cuda:N; got {text!r}"
        ) from None
    return text


def _baseline(text):
    if text in ("mean", "zero"):
        return text
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected mean, zero or a number; got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number; got {text!r}")
    return value


def _param(text):
    """``NAME=VALUE`` as ``(name, value)``, the value read as JSON where it parses."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE; got {text!r}")
    try:
        return name, json.loads(value)
    except ValueError:
        return name, value


def _max_epochs_help():
    text = "training epochs of the explainer (default: the method's own)"
    for name, defaults in sorted(_HELP_DEFAULTS.items()):
        if defaults.get("predictor_epochs") is not None:
            text += (
                f". {name} trains its predictor alone for its first predictor_epochs epochs: "
                "unless --param predictor_epochs=N is given, --max-epochs scales them in the "
                f"default proportion ({defaults['predictor_epochs']} of "
                f"{defaults['max_epochs']} epochs, rounded)"
            )
    return text


def _k_defaults_help():
    parts = []
    for name, defaults in sorted(_HELP_DEFAULTS.items()):
        k = defaults["k"]
        if k is not None:
            parts.append(f"{name} {k}, or every feature of narrower data")
        elif "selection_rate" in defaults:
            parts.append(f"{name} none: every feature whose test-time gate is open, a "
                         "selection_rate share of them on average (--param selection_rate=R)")
        else:
            parts.append(f"{name} none: every feature with selection probability above "
                         "0.5, so the number varies per row")
    return "; ".join(parts)


def _build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m sk_sointer",
        description="Amortized instance-wise feature selection for black-box models.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--method", default=None,
                        help="explainer: " + ", ".join(sorted(_HELP_DEFAULTS)) + " (default: l2x)")
    common.add_argument("--param", type=_param, action="append", default=[],
                        metavar="NAME=VALUE",
                        help="set any parameter of the explainer, nested ones included, e.g. "
                        "lr=0.01 or selector__hidden_units=[50,50] (repeatable). VALUE is read "
                        "as JSON where it parses (numbers, true, false, null, lists) and as "
                        "text otherwise")
    common.add_argument("--max-epochs", type=_positive_int, default=None,
                        help=_max_epochs_help())
    common.add_argument("--max-queries", type=_non_negative_int, default=None,
                        help="most rows the refinement against the model sends to it, "
                        "every query included (default: the refinement's own, 1000000, "
                        "extended up to 3 times while the fidelity still rises; given, "
                        "a bound); 0 leaves the selector as the method trained it")
    common.add_argument("--max-seconds", type=_positive_float, default=None,
                        help="time budget of the refinement against the model, in seconds "
                        "(default: none)")
    common.add_argument("--random-state", type=int, default=0, help="seed (default: 0)")
    common.add_argument("--device", type=_device, default="auto",
                        help="torch device: auto, cpu or cuda (default: auto)")
    common.add_argument("--threads", type=_positive_int, default=1,
                        help="torch CPU threads (default: 1, fastest for these small networks)")

    demo = commands.add_parser(
        "demo", parents=[common],
        help="explain a neural network on a built-in synthetic set with known answers",
        description="Train an MLP on a synthetic set whose relevant features are known, "
        "fit an explainer to it (L2X unless --method says otherwise) and report fidelity "
        "next to random masks', ground-truth agreement and timings.",
    )
    demo.add_argument("--dataset", choices=sorted([*_DEMO_SETS, *_STRUCTURED_SETS]),
                      default=None,
                      help="synthetic set (default: orange_skin; for --method sointer, E2). "
                      "E1 and E2 are SOInter's structured outputs (2 and 4 binary outputs): "
                      "SOInter explains one output of the whole model and L2X that output "
                      "alone")
    demo.add_argument("--n-samples", type=_demo_rows, default=None,
                      help="rows generated, of which up to 1,000 are held out (default: "
                      "10000; 3000 on E1 and E2)")
    demo.add_argument("-k", "--k", type=_positive_int, default=None,
                      help="features selected per row (default: the set's true number, or "
                      "for a method whose own default is none, such as realx, every feature "
                      "with selection probability above 0.5; hardkuma: its open gates)")
    demo.set_defaults(handler=_run_demo)

    explain = commands.add_parser(
        "explain", parents=[common],
        help="explain a saved model on the rows of a CSV file",
        description="Fit an explainer to a joblib-saved model on the rows of a CSV file (or "
        "load a saved one with --explainer) and write one 0/1 mask per row to another CSV "
        "file, under the file's header. A model that takes a DataFrame (a Pipeline or "
        "ColumnTransformer, an estimator fitted on one), or a file with text or empty cells "
        "that the model answers on, is given the table as pandas.read_csv reads it (text, "
        "empty cells), and the masks select among its columns; other files are read as "
        "numbers. Loading a joblib file runs code from it: only load files you "
        "trust. Exit status: 2 for bad input, 1 when the model itself raises.",
    )
    explain.add_argument("model", metavar="MODEL.joblib", help="fitted model saved with joblib")
    explain.add_argument("data", metavar="DATA.csv",
                         help="one row per sample: numbers, or a table (text, empty cells) "
                         "for a model that takes a DataFrame")
    explain.add_argument("-k", "--k", type=int, default=None,
                         help="features selected per row (default: the method's own: "
                         + _k_defaults_help() + ")")
    explain.add_argument("--out", required=True, metavar="MASKS.csv", help="where to write masks")
    explain.add_argument("--scores", default=None, metavar="SCORES.csv",
                         help="also write the real-valued scores behind the masks (higher "
                         "means more relied on), laid out like the masks")
    explain.add_argument("--reasons", default=None, metavar="REASONS.csv",
                         help="also write each row's kept columns ranked by how much "
                         "leaving each out alone moves the model's answer, with the row's "
                         "value and the direction (columns row, rank, column, value, effect, "
                         "direction, by; k + 1 model queries a row)")
    explain.add_argument("--baseline", type=_baseline, default=None,
                         help="value of a left-out feature: mean (the column's mean over the "
                         "fit rows), zero, or a number (default: mean). A table's left-out "
                         "columns take their mean (numbers) or most frequent value (text) "
                         "and refuse the others")
    explain.add_argument("--fit-rows", type=_positive_int, default=None,
                         help="fit on N rows drawn at random (seeded by --random-state); "
                         "every row is still explained (default: all rows)")
    explain.add_argument("--check", action="store_true",
                         help="ask the model whether each row's mask keeps its answer (two "
                         "queries a row) and add a column 'holds' (1 or 0) to the masks")
    explain.add_argument("--repair", action="store_true",
                         help="check every row's mask and search further, within a query "
                         "budget a row, where it does not hold (repair='model'); adds the "
                         "column 'holds' too")
    explain.add_argument("--repair-max-queries", type=_non_negative_int, default=None,
                         metavar="N",
                         help="with --repair, masked rows a failing row may send to the "
                         "model (default: k times the number of features, about what a "
                         "per-row greedy search costs); 0 checks the rows without searching")
    explain.add_argument("--tol", type=_non_negative_float, default=None,
                         help="with --check or --repair, how far a regression output may "
                         "move, in units of its spread on the fit rows, and still be kept "
                         "(default: 0.1)")
    explain.add_argument("--save-explainer", default=None, metavar="PATH",
                         help="save the fitted explainer (a safetensors file, no pickle)")
    explain.add_argument("--explainer", default=None, metavar="PATH",
                         help="load an explainer saved with --save-explainer instead of "
                         "fitting one; MODEL is still needed, for the fidelity")
    header = explain.add_mutually_exclusive_group()
    header.add_argument("--header", dest="header", action="store_const", const=True,
                        default=None, help="the first row holds column names")
    header.add_argument("--no-header", dest="header", action="store_const", const=False,
                        help="the first row is data. Default: detect. The first row is a "
                        "header when the model was fitted on named columns, when some cell is "
                        "not a number, or when its numbers differ "
                        "in kind from the rows below: consecutive integers (0,1,2,...; "
                        "2019,2020,...) where no row below is such a run, or integers where "
                        "every column below holds fractions. A note on stderr says how a "
                        "first row of numbers was read")
    explain.add_argument("--debug", action="store_true",
                         help="when the model raises, print the full traceback too")
    explain.set_defaults(handler=_run_explain)

    inspect = commands.add_parser(
        "inspect",
        help="show what a file saved by sk_sointer.save holds, without loading it",
        description="Print what a file written by sk_sointer.save (or explain "
        "--save-explainer) holds: the class and the sk_sointer version that wrote it, the "
        "parameters (those differing from the defaults first, marked *), the data (features, "
        "groups, row or image shape, tokens, feature names), k, the outputs (kinds, classes, "
        "SOInter's target) and the tensors (count, values, bytes and each part's shapes). "
        "Only the file's header is read: no estimator or network is built and no weight is "
        "loaded, so a file from anyone can be looked at before loading it. The black box is "
        "never stored: give it to sk_sointer.load. Exit status: 2 if the file is missing or "
        "not one sk_sointer.save wrote.",
    )
    inspect.add_argument("file", metavar="FILE", help="a .safetensors file saved by sk_sointer")
    inspect.add_argument("--json", action="store_true",
                         help="print the summary as one JSON object")
    inspect.set_defaults(handler=_run_inspect)
    return parser


def main(argv=None):
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse has printed the usage and the error
        return exc.code if isinstance(exc.code, int) else 2
    if args.command is None:  # nothing asked: what there is to ask
        parser.print_help()
        return 0

    if hasattr(args, "threads"):
        import torch

        torch.set_num_threads(args.threads)
    try:
        with _one_line_warnings(args.command):
            return args.handler(args)
    except _InputError as exc:
        print(printable(f"sk_sointer {args.command}: error: {exc}"), file=sys.stderr)
        return 2
    except _ModelError as exc:
        if getattr(args, "debug", False):
            traceback.print_exception(exc)
        print(printable(f"sk_sointer {args.command}: error: {exc.describe()}"),
              file=sys.stderr)
        return 1
