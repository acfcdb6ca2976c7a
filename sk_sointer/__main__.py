"""Command-line interface: ``python -m sk_sointer {demo,explain}``.

``demo`` trains a black box on one of the built-in synthetic sets, explains it and reports
fidelity, agreement with the ground truth and timings. ``explain`` explains a saved model on
the rows of a CSV file and writes the masks to another CSV file.

Bad input ends with a one-line message on stderr and exit status 2, never a traceback.
The CSV files are read and written with the standard library, so pandas is not needed.
"""

import argparse
import csv
import math
import os
import sys
import time
import warnings

import numpy as np

_DEMO_SETS = {
    # name: (generator name in sk_sointer.datasets, true features per row)
    "xor": ("make_xor", 2),
    "orange_skin": ("make_orange_skin", 4),
    "nonlinear_additive": ("make_nonlinear_additive", 4),
    "switch": ("make_switch", 5),
}

_DEMO_TEST_ROWS = 1_000
_DEMO_MIN_ROWS = 50

# Below this many rows the output is written in one go; above it, with a progress bar.
_PROGRESS_ROWS = 50_000
_WRITE_CHUNK = 10_000


class _InputError(Exception):
    """Bad input from the user: reported as one line on stderr, exit status 2."""


def _methods():
    """Explainer classes the CLI can use, by name; new methods plug in here."""
    import sk_sointer

    methods = {"l2x": sk_sointer.L2XExplainer}
    realx = getattr(sk_sointer, "RealXExplainer", None)
    if realx is not None:
        methods["realx"] = realx
    return methods


def _make_explainer(cls, **params):
    # Methods differ in their parameters (REAL-X has no temperature, for one): pass only the
    # ones this class accepts, and leave unset ones (None) at the class's defaults.
    accepted = cls().get_params(deep=False)
    return cls(**{name: value for name, value in params.items()
                  if name in accepted and value is not None})


# -- argument parsing ----------------------------------------------------------------------

def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer; got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer; got {value}")
    return value


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


def _build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m sk_sointer",
        description="Amortized instance-wise feature selection for black-box models.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--max-epochs", type=_positive_int, default=None,
                        help="training epochs of the explainer (default: the method's own)")
    common.add_argument("--random-state", type=int, default=0, help="seed (default: 0)")
    common.add_argument("--device", type=_device, default="auto",
                        help="torch device: auto, cpu or cuda (default: auto)")
    common.add_argument("--threads", type=_positive_int, default=1,
                        help="torch CPU threads (default: 1, fastest for these small networks)")

    demo = commands.add_parser(
        "demo", parents=[common],
        help="explain a neural network on a built-in synthetic set with known answers",
        description="Train an MLP on a synthetic set whose relevant features are known, "
        "fit an L2X explainer to it and report fidelity, ground-truth agreement and timings.",
    )
    demo.add_argument("--dataset", choices=sorted(_DEMO_SETS), default="orange_skin",
                      help="synthetic set (default: orange_skin)")
    demo.add_argument("--n-samples", type=_demo_rows, default=10_000,
                      help="rows generated, of which up to 1,000 are held out (default: 10000)")
    demo.add_argument("-k", "--k", type=_positive_int, default=None,
                      help="features selected per row (default: the set's true number)")
    demo.set_defaults(handler=_run_demo)

    explain = commands.add_parser(
        "explain", parents=[common],
        help="explain a saved model on the rows of a CSV file",
        description="Fit an explainer to a joblib-saved model on the rows of a numeric CSV "
        "file and write one 0/1 mask per row to another CSV file. Loading a joblib file runs "
        "code from it: only load files you trust.",
    )
    explain.add_argument("model", metavar="MODEL.joblib", help="fitted model saved with joblib")
    explain.add_argument("data", metavar="DATA.csv", help="numeric features, one row per sample")
    explain.add_argument("--method", default="l2x",
                         help="explainer: " + ", ".join(sorted(_methods())) + " (default: l2x)")
    explain.add_argument("-k", "--k", type=int, required=True, help="features selected per row")
    explain.add_argument("--out", required=True, metavar="MASKS.csv", help="where to write masks")
    explain.add_argument("--baseline", type=_baseline, default="mean",
                         help="value of a left-out feature: mean (the column's mean over the "
                         "fit rows), zero, or a number (default: mean)")
    explain.add_argument("--fit-rows", type=_positive_int, default=None,
                         help="fit on the first N rows only (default: all rows)")
    header = explain.add_mutually_exclusive_group()
    header.add_argument("--header", dest="header", action="store_const", const=True,
                        default=None, help="the first row holds column names")
    header.add_argument("--no-header", dest="header", action="store_const", const=False,
                        help="the first row is data (default: detect)")
    explain.set_defaults(handler=_run_explain)
    return parser


def main(argv=None):
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse has printed the usage and the error
        return exc.code if isinstance(exc.code, int) else 2

    import torch

    torch.set_num_threads(args.threads)
    try:
        return args.handler(args)
    except _InputError as exc:
        print(f"sk_sointer {args.command}: error: {exc}", file=sys.stderr)
        return 2


# -- demo ----------------------------------------------------------------------------------

def _run_demo(args):
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier

    from . import datasets
    from .metrics import false_discovery_rate, median_rank, true_positive_rate

    generator, n_true = _DEMO_SETS[args.dataset]
    X, y, relevant = getattr(datasets, generator)(args.n_samples, random_state=args.random_state)
    n_features = X.shape[1]
    k = n_true if args.k is None else args.k
    if k > n_features:
        raise _InputError(f"k should be <= n_features = {n_features}; got {k}.")

    n_test = min(_DEMO_TEST_ROWS, args.n_samples // 2)
    X_train, X_test, y_train, y_test, _, relevant_test = train_test_split(
        X, y, relevant, test_size=n_test, random_state=args.random_state
    )

    print(f"sk_sointer demo: {args.dataset}, {n_features} features of which {n_true} matter "
          f"in each row; {len(X_train):,} training rows, {n_test:,} held out.")
    start = time.perf_counter()
    model = MLPClassifier(hidden_layer_sizes=(200, 200), max_iter=200, early_stopping=True,
                          random_state=args.random_state)
    with warnings.catch_warnings():
        # Tiny demo sets may stop before converging; the report shows the accuracy anyway.
        warnings.simplefilter("ignore", category=_convergence_warning())
        model.fit(X_train, y_train)
    bb_seconds = time.perf_counter() - start

    explainer = _make_explainer(
        _methods()["l2x"], k=k, max_epochs=args.max_epochs, device=args.device,
        random_state=args.random_state, verbose=1,
    )
    start = time.perf_counter()
    try:
        explainer.fit(X_train, black_box=model)
    except ValueError as exc:  # a device without CUDA, for one
        raise _InputError(str(exc)) from None
    fit_seconds = time.perf_counter() - start

    us_per_row = _time_per_row(explainer.transform, X_test) * 1e6
    scores = explainer.explain(X_test)
    masks = explainer.transform(X_test)
    fidelity = explainer.score(X_test)
    rank = median_rank(relevant_test, scores, random_state=args.random_state)
    tpr = true_positive_rate(relevant_test, masks)
    fdr = false_discovery_rate(relevant_test, masks)

    mu = _micro()
    print(f"  black box   MLPClassifier(200, 200), trained in {bb_seconds:.1f} s: "
          f"accuracy {model.score(X_test, y_test):.3f} on held-out labels")
    print(f"  explainer   {type(explainer).__name__}(k={k}), fitted in {fit_seconds:.1f} s "
          f"({explainer.net_.device}, torch threads: {args.threads})")
    print(f"Explanations of the {n_test:,} held-out rows:")
    print(f"  fidelity      {fidelity:.3f}   black box keeps its answer on x * mask")
    print(f"  median rank   {rank:.2f}    of the true features (optimum (k+1)/2 = "
          f"{(k + 1) / 2:.2f}; lower is better)")
    print(f"  TPR           {100 * tpr:5.1f} %  true features selected")
    print(f"  FDR           {100 * fdr:5.1f} %  selected features that are noise")
    print(f"  explain time  {us_per_row:.1f} {mu}s per row")
    return 0


def _convergence_warning():
    from sklearn.exceptions import ConvergenceWarning

    return ConvergenceWarning


def _time_per_row(func, X, repeats=3):
    """Best of a few timed calls, in seconds per row."""
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        func(X)
        best = min(best, time.perf_counter() - start)
    return best / len(X)


def _micro():
    encoding = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        "\u00b5".encode(encoding)
    except (LookupError, UnicodeEncodeError):
        return "u"
    return "\u00b5"


# -- explain -------------------------------------------------------------------------------

def _run_explain(args):
    methods = _methods()
    if args.method not in methods:
        raise _InputError(f"unknown --method {args.method!r}; choose from "
                          + ", ".join(sorted(methods)) + ".")
    model = _load_model(args.model)
    names, X = _read_csv(args.data, header=args.header)
    n_rows, n_features = X.shape
    _check_model_fits_data(model, names, n_features, args.data)
    if not 1 <= args.k <= n_features:
        raise _InputError(f"k should be between 1 and n_features = {n_features}; got {args.k}.")

    from .black_box import as_black_box

    try:
        black_box = as_black_box(model)
    except (TypeError, ValueError) as exc:
        raise _InputError(f"{args.model} does not hold a usable model: {exc}") from None

    X_fit = X[: args.fit_rows] if args.fit_rows is not None else X
    explainer = _make_explainer(
        methods[args.method], k=args.k, max_epochs=args.max_epochs, device=args.device,
        baseline=args.baseline, random_state=args.random_state, verbose=1,
    )
    with warnings.catch_warnings():
        # Column names were checked against the model's above.
        warnings.filterwarnings("ignore", message=".*feature names.*", category=UserWarning)
        try:
            explainer.fit(X_fit, black_box=black_box)
        except (TypeError, ValueError) as exc:
            raise _InputError(f"could not fit the explainer to {args.model}: {exc}") from None
        masks = explainer.transform(X)
        fidelity = explainer.score(X_fit)
        chance = _random_mask_fidelity(black_box, X_fit, args.k, explainer.masker_.baseline_,
                                       args.random_state)

    _write_masks(args.out, names, masks)
    print(f"Wrote {n_rows:,} masks ({args.k} of {n_features} features per row) to {args.out}; "
          f"fidelity on the {len(X_fit):,} fit rows: {fidelity:.3f} (higher is better; random "
          f"{args.k}-feature masks: {chance:.3f}).")
    return 0


def _random_mask_fidelity(black_box, X, k, baseline, seed):
    """Fidelity of uniformly random k-feature masks: the level an explanation must beat."""
    from .metrics import posthoc_accuracy

    rng = np.random.default_rng(seed)
    order = np.argsort(rng.random(X.shape), axis=1)
    masks = (order < k).astype(np.float32)
    return posthoc_accuracy(black_box, X, masks, baseline=baseline)


def _check_file(path, what):
    if not os.path.exists(path):
        raise _InputError(f"{what} file {path!r} does not exist.")
    if not os.path.isfile(path):
        raise _InputError(f"{what} path {path!r} is not a file.")


def _load_model(path):
    import joblib

    _check_file(path, "model")
    try:
        return joblib.load(path)
    except Exception as exc:  # noqa: BLE001 - unpickling can fail in any way
        raise _InputError(
            f"cannot load a model from {path!r} with joblib ({type(exc).__name__}: {exc})."
        ) from None


def _check_model_fits_data(model, names, n_features, data_path):
    expected = getattr(model, "n_features_in_", None)
    if expected is not None and expected != n_features:
        raise _InputError(
            f"the model expects {expected} features but {data_path!r} has {n_features} columns."
        )
    model_names = getattr(model, "feature_names_in_", None)
    if model_names is not None and names is not None and list(model_names) != list(names):
        # The model is called with its own column order, so a reordered file would be
        # explained silently wrong.
        first = next(i for i, (a, b) in enumerate(zip(model_names, names)) if a != b)
        raise _InputError(
            f"the CSV's column names differ from the model's feature names: column "
            f"{first + 1} is {names[first]!r} in {data_path!r} but {model_names[first]!r} "
            "in the model."
        )


def _is_number(cell):
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _read_csv(path, *, header=None):
    """Read a numeric CSV file; return ``(column names or None, float64 array)``.

    ``header=None`` detects a header: the first row is one unless all its cells are numbers.
    """
    _check_file(path, "data")
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            rows, lines = [], []
            for row in reader:
                if not row or all(not cell.strip() for cell in row):
                    continue  # blank lines, such as a trailing one
                rows.append(row)
                lines.append(reader.line_num)
    except UnicodeDecodeError:
        raise _InputError(f"{path!r} is not a UTF-8 text CSV file.") from None
    except csv.Error as exc:
        raise _InputError(f"{path!r} is not a valid CSV file: {exc}.") from None

    if not rows:
        raise _InputError(f"{path!r} is empty.")
    if header is None:
        header = not all(_is_number(cell) for cell in rows[0])
    names = [cell.strip() for cell in rows[0]] if header else None
    width = len(rows[0])
    data, data_lines = (rows[1:], lines[1:]) if header else (rows, lines)
    if not data:
        raise _InputError(f"{path!r} has a header row but no data rows.")

    for row, line in zip(data, data_lines):
        if len(row) != width:
            raise _InputError(
                f"row {line} of {path!r} has {len(row)} cells; expected {width} "
                f"(the width of row {lines[0]})."
            )
    try:
        X = np.array(data, dtype=np.float64)
    except ValueError:
        # Slow path: name the first cell that is not a number.
        for row, line in zip(data, data_lines):
            for col, cell in enumerate(row):
                if not _is_number(cell):
                    raise _InputError(
                        f"row {line}, column {_column_label(col, names)} of {path!r} is not a "
                        f"number: {cell!r}."
                    )
        X = np.array([[float(cell) for cell in row] for row in data], dtype=np.float64)
    bad = np.argwhere(~np.isfinite(X))
    if len(bad):
        row, col = bad[0]
        raise _InputError(
            f"row {data_lines[row]}, column {_column_label(col, names)} of {path!r} is "
            f"{X[row, col]}; the explainer needs finite numbers."
        )
    return names, X


def _column_label(col, names):
    return f"{col + 1} ({names[col]!r})" if names is not None else f"{col + 1}"


def _write_masks(path, names, masks):
    from tqdm.auto import tqdm

    masks = masks.astype(np.int8)
    try:
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            if names is not None:
                writer.writerow(names)
            with tqdm(total=len(masks), unit="rows", desc="writing masks", leave=False,
                      disable=len(masks) < _PROGRESS_ROWS) as bar:
                for start in range(0, len(masks), _WRITE_CHUNK):
                    chunk = masks[start : start + _WRITE_CHUNK]
                    writer.writerows(chunk.tolist())
                    bar.update(len(chunk))
    except OSError as exc:
        raise _InputError(f"cannot write {path!r}: {exc.strerror or exc}.") from None


if __name__ == "__main__":
    sys.exit(main())
