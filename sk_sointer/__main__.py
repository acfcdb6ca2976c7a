"""Command-line interface: ``python -m sk_sointer {demo,explain}``.

``demo`` trains a black box on one of the built-in synthetic sets, explains it and reports
fidelity, agreement with the ground truth and timings. ``explain`` explains a saved model on
the rows of a CSV file and writes the masks (and, if asked, the scores behind them) to CSV
files; it can save the fitted explainer, or load a saved one instead of fitting.

Exit status: 2 for bad input (options, files, parameter names and values: whatever the
CLI's or the estimator's validation rejects), with a one-line message on stderr and never a
traceback; 1 when the user's model raises, with one line naming the model and its error
(the traceback too with ``--debug``). The CSV files are read and written with the standard
library, so pandas is not needed.
"""

import argparse
import csv
import json
import math
import os
import sys
import time
import traceback
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

# Estimator parameters that have an option of their own; --param must not set them too.
_OPTION_PARAMS = {"k": "-k", "max_epochs": "--max-epochs", "baseline": "--baseline",
                  "device": "--device", "random_state": "--random-state"}

# explain's options about fitting, which make no sense with --explainer: (dest, option).
_FIT_OPTIONS = [("method", "--method"), ("k", "-k"), ("param", "--param"),
                ("max_epochs", "--max-epochs"), ("baseline", "--baseline"),
                ("fit_rows", "--fit-rows"), ("save_explainer", "--save-explainer")]


class _InputError(Exception):
    """Bad input from the user: reported as one line on stderr, exit status 2."""


class _ModelError(Exception):
    """An exception raised inside the user's model (its ``__cause__``): reported as one line
    on stderr, exit status 1."""

    def __init__(self, model):
        super().__init__(model)
        self.model = model

    def describe(self):
        cause = self.__cause__
        text = f"the model {_one_line(repr(self.model))} raised {type(cause).__name__}"
        message = _one_line(str(cause))
        return f"{text}: {message}" if message else text


class _Blamed:
    """The user's model, with any exception out of a call into it re-raised as
    :class:`_ModelError`, so that a failing model (exit 1) is told apart from bad input
    (exit 2) wherever the explainer happens to query it. Other attributes (``classes_``,
    ``feature_names_in_``, a torch module's ``parameters``) are the model's own."""

    _CALLS = ("predict", "predict_proba")

    def __init__(self, model):
        self._model = model

    def __getattr__(self, name):
        # Dunders and the wrapped model itself are never forwarded: copying or unpickling
        # looks them up before _model exists.
        if name.startswith("__") or name == "_model":
            raise AttributeError(name)
        value = getattr(self._model, name)
        return self._guard(value) if name in self._CALLS and callable(value) else value

    def __call__(self, *args, **kwargs):
        return self._guard(self._model)(*args, **kwargs)

    def __repr__(self):
        return repr(self._model)

    def _guard(self, func):
        def call(*args, **kwargs):
            try:
                return func(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - whatever the model raises is its own
                raise _ModelError(self._model) from exc

        return call


def _one_line(text):
    return " ".join(text.split())


def _methods():
    """Explainer classes the CLI can use, by name; new methods plug in here."""
    import sk_sointer

    methods = {"l2x": sk_sointer.L2XExplainer}
    realx = getattr(sk_sointer, "RealXExplainer", None)
    if realx is not None:
        methods["realx"] = realx
    hardkuma = getattr(sk_sointer, "HardKumaExplainer", None)
    if hardkuma is not None:
        methods["hardkuma"] = hardkuma
    return methods


def _method(name):
    """``(name, class)`` of the method asked for with --method (default: l2x)."""
    methods = _methods()
    name = "l2x" if name is None else name
    if name not in methods:
        raise _InputError(f"unknown --method {name!r}; choose from "
                          + ", ".join(sorted(methods)) + ".")
    return name, methods[name]


def _defaults(cls):
    return cls().get_params(deep=False)


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


def _max_epochs_help(methods):
    text = "training epochs of the explainer (default: the method's own)"
    for name, cls in sorted(methods.items()):
        defaults = _defaults(cls)
        if defaults.get("predictor_epochs") is not None:
            text += (
                f". {name} trains its predictor alone for its first predictor_epochs epochs: "
                "unless --param predictor_epochs=N is given, --max-epochs scales them in the "
                f"default proportion ({defaults['predictor_epochs']} of "
                f"{defaults['max_epochs']} epochs, rounded)"
            )
    return text


def _k_defaults_help(methods):
    parts = []
    for name, cls in sorted(methods.items()):
        k = _defaults(cls).get("k")
        if k is not None:
            parts.append(f"{name} {k}, or every feature of narrower data")
        elif "selection_rate" in _defaults(cls):
            parts.append(f"{name} none: every feature whose test-time gate is open, a "
                         "selection_rate share of them on average (--param selection_rate=R)")
        else:
            parts.append(f"{name} none: every feature with selection probability above "
                         "0.5, so the number varies per row")
    return "; ".join(parts)


def _build_parser():
    methods = _methods()
    parser = argparse.ArgumentParser(
        prog="python -m sk_sointer",
        description="Amortized instance-wise feature selection for black-box models.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--method", default=None,
                        help="explainer: " + ", ".join(sorted(methods)) + " (default: l2x)")
    common.add_argument("--param", type=_param, action="append", default=[],
                        metavar="NAME=VALUE",
                        help="set any parameter of the explainer, nested ones included, e.g. "
                        "lr=0.01 or selector__hidden_units=[50,50] (repeatable). VALUE is read "
                        "as JSON where it parses (numbers, true, false, null, lists) and as "
                        "text otherwise")
    common.add_argument("--max-epochs", type=_positive_int, default=None,
                        help=_max_epochs_help(methods))
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
    demo.add_argument("--dataset", choices=sorted(_DEMO_SETS), default="orange_skin",
                      help="synthetic set (default: orange_skin)")
    demo.add_argument("--n-samples", type=_demo_rows, default=10_000,
                      help="rows generated, of which up to 1,000 are held out (default: 10000)")
    demo.add_argument("-k", "--k", type=_positive_int, default=None,
                      help="features selected per row (default: the set's true number, or "
                      "for a method whose own default is none, such as realx, every feature "
                      "with selection probability above 0.5; hardkuma: its open gates)")
    demo.set_defaults(handler=_run_demo)

    explain = commands.add_parser(
        "explain", parents=[common],
        help="explain a saved model on the rows of a CSV file",
        description="Fit an explainer to a joblib-saved model on the rows of a numeric CSV "
        "file (or load a saved one with --explainer) and write one 0/1 mask per row to "
        "another CSV file. Loading a joblib file runs code from it: only load files you "
        "trust. Exit status: 2 for bad input, 1 when the model itself raises.",
    )
    explain.add_argument("model", metavar="MODEL.joblib", help="fitted model saved with joblib")
    explain.add_argument("data", metavar="DATA.csv", help="numeric features, one row per sample")
    explain.add_argument("-k", "--k", type=int, default=None,
                         help="features selected per row (default: the method's own: "
                         + _k_defaults_help(methods) + ")")
    explain.add_argument("--out", required=True, metavar="MASKS.csv", help="where to write masks")
    explain.add_argument("--scores", default=None, metavar="SCORES.csv",
                         help="also write the real-valued scores behind the masks (higher "
                         "means more relied on), laid out like the masks")
    explain.add_argument("--baseline", type=_baseline, default=None,
                         help="value of a left-out feature: mean (the column's mean over the "
                         "fit rows), zero, or a number (default: mean)")
    explain.add_argument("--fit-rows", type=_positive_int, default=None,
                         help="fit on N rows drawn at random (seeded by --random-state); "
                         "every row is still explained (default: all rows)")
    explain.add_argument("--save-explainer", default=None, metavar="PATH",
                         help="save the fitted explainer (a safetensors file, no pickle)")
    explain.add_argument("--explainer", default=None, metavar="PATH",
                         help="load an explainer saved with --save-explainer instead of "
                         "fitting one; MODEL is still needed, for the fidelity")
    header = explain.add_mutually_exclusive_group()
    header.add_argument("--header", dest="header", action="store_const", const=True,
                        default=None, help="the first row holds column names")
    header.add_argument("--no-header", dest="header", action="store_const", const=False,
                        help="the first row is data (default: detect)")
    explain.add_argument("--debug", action="store_true",
                         help="when the model raises, print the full traceback too")
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
    except _ModelError as exc:
        if getattr(args, "debug", False):
            traceback.print_exception(exc)
        print(f"sk_sointer {args.command}: error: {exc.describe()}", file=sys.stderr)
        return 1


# -- the explainer -------------------------------------------------------------------------

def _user_params(args):
    """--param's values by name, refusing names given twice or set by an option of their own."""
    params = {}
    for name, value in args.param:
        if name in params:
            raise _InputError(f"--param {name} is given twice.")
        if name in _OPTION_PARAMS and name in vars(args):
            raise _InputError(f"set {name} with {_OPTION_PARAMS[name]}, not --param.")
        params[name] = value
    return params


def _build_explainer(method, cls, args, *, n_features, **options):
    """The explainer asked for: ``options`` (unset ones, None, left at the class's defaults),
    then --param. Names and values are checked here, before any data or model reach it, so
    that a mistake is reported as bad input."""
    user = _user_params(args)
    explainer = cls()
    known = explainer.get_params(deep=True)
    for name in user:
        if name not in known:
            raise _InputError(f"{cls.__name__} has no parameter {name!r} (--param); its "
                              "parameters are: " + ", ".join(sorted(known)) + ".")
    options.update(max_epochs=args.max_epochs, device=args.device,
                   random_state=args.random_state)
    # Methods differ in their parameters (REAL-X has no temperature, for one).
    params = {name: value for name, value in options.items()
              if name in known and value is not None}
    params.update(_scaled_predictor_epochs(method, cls, args.max_epochs, user))
    params.update(user)
    for name in ("callbacks", "train_split"):
        # JSON gives data, and these hold code (skorch callbacks, a split function); a
        # fraction for train_split is data and passes.
        value = user.get(name)
        if isinstance(value, (list, dict, str)) and value not in ([], "null"):
            raise _InputError(f"--param {name} cannot be set on the command line: it takes "
                              f"Python objects, not {value!r}.")
    explainer.set_params(**params)
    try:
        explainer._validate_params()
    except (TypeError, ValueError) as exc:
        raise _InputError(f"invalid parameter value: {exc}") from None
    _check_networks(explainer, user, n_features)
    return explainer


def _scaled_predictor_epochs(method, cls, max_epochs, user):
    """A method that trains a predictor alone first (REAL-X) keeps the default share of its
    epochs for it when only --max-epochs is given: its default predictor_epochs would
    otherwise exceed a small max_epochs."""
    defaults = _defaults(cls)
    # A default of None (HardKuma) already follows max_epochs.
    if (max_epochs is None or defaults.get("predictor_epochs") is None
            or "predictor_epochs" in user):
        return {}
    if max_epochs < 2:
        raise _InputError(
            f"{method} trains its predictor alone for its first predictor_epochs epochs, then "
            f"its selector, so --max-epochs should be >= 2; got {max_epochs}."
        )
    share = defaults["predictor_epochs"] / defaults["max_epochs"]
    return {"predictor_epochs": min(max(round(max_epochs * share), 1), max_epochs - 1)}


def _check_networks(explainer, user, n_features):
    """Build each network whose options --param changed once, so that a bad nested value
    is named now rather than failing inside ``fit``."""
    import torch

    from ._networks import build_network

    for prefix in sorted({name.split("__", 1)[0] for name in user if "__" in name}):
        names = ", ".join(name for name in user if name.startswith(prefix + "__"))
        # The throw-away weights must not draw from the caller's torch generator.
        with torch.random.fork_rng(devices=[]):
            try:
                build_network(getattr(explainer, prefix), n_features, n_features,
                              (n_features,))
            except (TypeError, ValueError) as exc:
                raise _InputError(f"invalid parameter value ({names}): {exc}") from None


def _random_mask_fidelity(black_box, X, counts, baseline, seed):
    """Fidelity of random masks keeping as many features per row as the explanations (a
    fixed k, or a thresholded selection's varying numbers): the level to beat."""
    from .metrics import posthoc_accuracy, random_masks

    masks = random_masks(len(counts), X.shape[1], counts, random_state=seed)
    return posthoc_accuracy(black_box, X, masks, baseline=baseline)


def _random_label(counts):
    if len(np.unique(counts)) == 1:
        return f"random {int(counts[0])}-feature masks"
    return "random masks with as many features per row"


def _per_row(counts, n_features):
    if len(np.unique(counts)) == 1:
        return f"{int(counts[0])} of {n_features} features per row"
    return f"{counts.mean():.1f} of {n_features} features per row on average"


def _k_text(explainer, k):
    if k is not None:
        return f"k={k}"
    rate = getattr(explainer, "selection_rate_", None)
    if rate is not None:
        return f"k=None: the open test-time gates, {100 * rate:.0f} % of the features trained for"
    return "k=None: selection probability above 0.5"


# -- demo ----------------------------------------------------------------------------------

def _run_demo(args):
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier

    from . import datasets
    from .metrics import false_discovery_rate, median_rank, true_positive_rate

    method, cls = _method(args.method)
    generator, n_true = _DEMO_SETS[args.dataset]
    X, y, relevant = getattr(datasets, generator)(args.n_samples, random_state=args.random_state)
    n_features = X.shape[1]
    k = args.k
    if k is None and _defaults(cls).get("k") is not None:
        k = n_true
    if k is not None and k > n_features:
        raise _InputError(f"k should be <= n_features = {n_features}; got {k}.")
    explainer = _build_explainer(method, cls, args, n_features=n_features, k=k, verbose=1)

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

    start = time.perf_counter()
    try:
        explainer.fit(X_train, black_box=model)
    except (TypeError, ValueError) as exc:  # a device without CUDA, for one
        raise _InputError(str(exc)) from None
    fit_seconds = time.perf_counter() - start

    us_per_row = _time_per_row(explainer.transform, X_test) * 1e6
    scores = explainer.explain(X_test)
    masks = explainer.transform(X_test)
    counts = masks.sum(axis=1)
    fidelity = explainer.score(X_test)
    chance = _random_mask_fidelity(model, X_test, counts, explainer.masker_.baseline_,
                                   args.random_state)
    rank = median_rank(relevant_test, scores, random_state=args.random_state)
    tpr = true_positive_rate(relevant_test, masks)
    fdr = false_discovery_rate(relevant_test, masks)

    mu = _micro()
    print(f"  black box   MLPClassifier(200, 200), trained in {bb_seconds:.1f} s: "
          f"accuracy {model.score(X_test, y_test):.3f} on held-out labels")
    print(f"  explainer   {type(explainer).__name__}({_k_text(explainer, k)}), fitted in "
          f"{fit_seconds:.1f} s ({explainer.net_.device}, torch threads: {args.threads})")
    print(f"Explanations of the {n_test:,} held-out rows ({_per_row(counts, n_features)}):")
    print(f"  fidelity      {fidelity:.3f}   black box keeps its answer on the selected features "
          "(the others at their mean)")
    print(f"  random masks  {chance:.3f}   the same for {_random_label(counts)}")
    print(f"  median rank   {rank:.2f}    of the {n_true} true features (optimum "
          f"{(n_true + 1) / 2:.2f}; lower is better)")
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
    loading = args.explainer is not None
    if loading:
        given = [option for dest, option in _FIT_OPTIONS if getattr(args, dest) not in (None, [])]
        if given:
            raise _InputError(", ".join(given) + " cannot be used with --explainer, which "
                              "loads an explainer fitted already.")
    else:
        method, cls = _method(args.method)
    for path in (args.out, args.scores, args.save_explainer):
        _check_folder(path)
    model = _load_model(args.model)
    names, X = _read_csv(args.data, header=args.header)
    n_rows, n_features = X.shape
    _check_model_fits_data(model, names, n_features, args.data)
    black_box = _user_black_box(model, args.model)

    if loading:
        explainer = _load_explainer(args.explainer, black_box, args.device, n_features,
                                    args.data)
        rows = None
    else:
        grouped = any(name == "groups" for name, _ in args.param)
        k = _explain_k(method, cls, args.k, n_features, args.data, grouped)
        explainer = _build_explainer(method, cls, args, n_features=n_features, k=k,
                                     baseline=args.baseline, verbose=1)
        rows = _fit_rows(n_rows, args.fit_rows, args.random_state)
    X_fit = X if rows is None else X[rows]

    with warnings.catch_warnings():
        # Column names were checked against the model's above.
        warnings.filterwarnings("ignore", message=".*feature names.*", category=UserWarning)
        if not loading:
            try:
                explainer.fit(X_fit, black_box=black_box)
            except (TypeError, ValueError) as exc:
                raise _InputError(f"could not fit the explainer to {args.model}: "
                                  f"{_one_line(str(exc))}") from None
            if args.save_explainer is not None:
                _save_explainer(explainer, args.save_explainer)
        try:
            masks = explainer.transform(X)
            scores = None if args.scores is None else explainer.explain(X)
            fidelity = explainer.score(X_fit)
            fit_counts = masks.sum(axis=1) if rows is None else masks[rows].sum(axis=1)
            chance = _random_mask_fidelity(black_box, X_fit, fit_counts,
                                           explainer.masker_.baseline_, args.random_state)
        except (TypeError, ValueError) as exc:
            # The model's answers on masked rows are checked as in fit (finite, one row per
            # row, the same width): an answer that fails is bad input, as it is in fit.
            raise _InputError(f"could not explain with {args.model}: {_one_line(str(exc))}"
                              ) from None

    _write_rows(args.out, names, masks.astype(np.int8), "masks")
    wrote = f"Wrote {n_rows:,} masks ({_per_row(masks.sum(axis=1), n_features)}) to {args.out}"
    if args.scores is not None:
        # The shortest text that reads back as the same float32.
        _write_rows(args.scores, names, scores.astype(str), "scores")
        wrote += f" and their scores to {args.scores}"
    where = f"the {n_rows:,} rows" if loading else f"the {len(X_fit):,} fit rows"
    print(f"{wrote}; fidelity on {where}: {fidelity:.3f} (higher is better; "
          f"{_random_label(fit_counts)}: {chance:.3f}).")
    return 0


def _explain_k(method, cls, k, n_features, data_path, grouped):
    """-k, or the method's default; checked against the width unless k counts groups
    (the estimator checks it against the groups then)."""
    if k is None:
        k = _defaults(cls).get("k")
        if k is not None and k > n_features and not grouped:
            # A default k beyond the data keeps every feature, as the estimator does; said
            # here in one line rather than as the estimator's warning.
            print(f"sk_sointer explain: warning: {method}'s default k={k} is more than the "
                  f"{n_features} columns of {data_path!r}, so every feature is selected; give "
                  "-k to select fewer.", file=sys.stderr)
            k = n_features
    elif k < 1 or (k > n_features and not grouped):
        raise _InputError(f"k should be between 1 and n_features = {n_features}; got {k}.")
    return k


def _fit_rows(n_rows, n_fit, seed):
    """Indices of ``n_fit`` rows drawn at random without replacement, in file order;
    ``None`` for all rows."""
    if n_fit is None or n_fit >= n_rows:
        return None
    return np.sort(np.random.default_rng(seed).choice(n_rows, size=n_fit, replace=False))


def _user_black_box(model, path):
    """The model as a black box whose exceptions surface as :class:`_ModelError`. How it is
    queried (classifier, regressor, torch module, callable) is read from the model itself."""
    from .black_box import BlackBox, as_black_box

    try:
        adapted = as_black_box(model)
    except (TypeError, ValueError) as exc:
        raise _InputError(f"{path} does not hold a usable model: {exc}") from None
    return BlackBox(_Blamed(adapted.model), kind=adapted.kind, output=adapted.output)


def _save_explainer(explainer, path):
    import sk_sointer

    save = sk_sointer.save
    try:
        save(explainer, path)
    except Exception as exc:  # noqa: BLE001 - the file format's writer has errors of its own
        raise _InputError(
            f"cannot save the explainer to {path!r} ({type(exc).__name__}: {_one_line(str(exc))})."
        ) from None


def _load_explainer(path, black_box, device, n_features, data_path):
    import sk_sointer

    from ._utils import resolve_device

    load = sk_sointer.load
    _check_file(path, "explainer")
    try:
        device = str(resolve_device(device))
    except ValueError as exc:
        raise _InputError(str(exc)) from None
    try:
        explainer = load(path, device=device, black_box=black_box)
    except _ModelError:
        raise
    except Exception as exc:  # noqa: BLE001 - a damaged or foreign file can fail in any way
        raise _InputError(
            f"cannot load an explainer from {path!r} ({type(exc).__name__}: {exc})."
        ) from None
    expected = getattr(explainer, "n_features_in_", None)
    if expected is not None and expected != n_features:
        raise _InputError(
            f"the explainer in {path!r} was fitted on {expected} features but {data_path!r} "
            f"has {n_features} columns."
        )
    return explainer


def _check_file(path, what):
    if not os.path.exists(path):
        raise _InputError(f"{what} file {path!r} does not exist.")
    if not os.path.isfile(path):
        raise _InputError(f"{what} path {path!r} is not a file.")


def _check_folder(path):
    """Refuse an output path whose folder is missing before any time goes into fitting."""
    if path is None:
        return
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise _InputError(f"cannot write {path!r}: the folder {folder!r} does not exist.")


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


def _is_default_header(row):
    """Whether ``row`` is the header pandas writes for unnamed columns: 0, 1, ..., d - 1
    (with two columns at least: a lone 0 is as likely a value)."""
    return len(row) >= 2 and [cell.strip() for cell in row] == [str(i) for i in range(len(row))]


def _read_csv(path, *, header=None):
    """Read a numeric CSV file; return ``(column names or None, float64 array)``.

    ``header=None`` detects a header: the first row is one unless all its cells are numbers,
    or when it is pandas' header of unnamed columns, ``0,1,...,d-1``.
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
        if not header and _is_default_header(rows[0]):
            # pandas' to_csv writes the column numbers 0, 1, 2, ... as the header of a
            # frame without column names: numbers, yet not a row of data.
            header = True
            print(f"sk_sointer explain: note: the first row of {path!r} is 0, 1, ..., "
                  f"{len(rows[0]) - 1} (the header pandas writes for unnamed columns), so it "
                  "is read as a header; --no-header reads it as data.", file=sys.stderr)
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


def _write_rows(path, names, rows, what):
    """Write ``rows`` (an array of numbers or texts) as CSV, under the input's header."""
    from tqdm.auto import tqdm

    try:
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            if names is not None:
                writer.writerow(names)
            with tqdm(total=len(rows), unit="rows", desc=f"writing {what}", leave=False,
                      disable=len(rows) < _PROGRESS_ROWS) as bar:
                for start in range(0, len(rows), _WRITE_CHUNK):
                    chunk = rows[start : start + _WRITE_CHUNK]
                    writer.writerows(chunk.tolist())
                    bar.update(len(chunk))
    except OSError as exc:
        raise _InputError(f"cannot write {path!r}: {exc.strerror or exc}.") from None


if __name__ == "__main__":
    sys.exit(main())
