"""What the commands share: errors, warnings, the methods, building an explainer from
options, the random masks' reference."""

import contextlib
import sys
import warnings

import numpy as np

# Estimator parameters that have an option of their own; --param must not set them too.
_OPTION_PARAMS = {"k": "-k", "max_epochs": "--max-epochs", "baseline": "--baseline",
                  "device": "--device", "random_state": "--random-state"}

# explain's options about fitting, which make no sense with --explainer: (dest, option).
_FIT_OPTIONS = [("method", "--method"), ("k", "-k"), ("param", "--param"),
                ("max_epochs", "--max-epochs"), ("baseline", "--baseline"),
                ("fit_rows", "--fit-rows"), ("save_explainer", "--save-explainer"),
                ("max_queries", "--max-queries"), ("max_seconds", "--max-seconds")]

# The refinement's budget options: (dest, option, ModelRefinement's parameter).
_BUDGET_OPTIONS = [("max_queries", "--max-queries", "max_queries"),
                   ("max_seconds", "--max-seconds", "max_seconds")]


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


@contextlib.contextmanager
def _one_line_warnings(command):
    """Print every warning raised inside as one line on stderr, ``sk_sointer COMMAND:
    warning: MESSAGE``, once per message: a user of the command line reads what to do, not
    the source line of the library (or of scikit-learn, pandas) that warned. Filters set
    inside still apply."""
    seen = set()

    def show(message, category, filename, lineno, file=None, line=None):
        text = _one_line(str(message))
        if text in seen:
            return
        seen.add(text)
        print(f"sk_sointer {command}: warning: {text}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


# The explainers the CLI can use: --method's name -> the class's public name. New methods
# plug in here and in _HELP_DEFAULTS.
_METHOD_CLASSES = {"l2x": "L2XExplainer", "realx": "RealXExplainer",
                   "hardkuma": "HardKumaExplainer", "meed": "MEEDExplainer",
                   "sointer": "SOInterExplainer"}

# The defaults that --help quotes, written out because printing the help must not import
# the classes (and torch with them); tests/test_cli.py keeps them equal to the classes'
# signatures. A method lists predictor_epochs or selection_rate only if it has them.
_HELP_DEFAULTS = {
    "l2x": {"k": 4, "max_epochs": 100},
    "realx": {"k": None, "max_epochs": 160, "predictor_epochs": 100},
    "hardkuma": {"k": None, "max_epochs": 100, "predictor_epochs": None,
                 "selection_rate": None},
    "meed": {"k": 4, "max_epochs": 100},
    "sointer": {"k": 4, "max_epochs": 50},
}


def _methods():
    """Explainer classes the CLI can use, by name (imports them, and torch)."""
    import sk_sointer

    return {name: getattr(sk_sointer, cls) for name, cls in _METHOD_CLASSES.items()}


def _method(name):
    """``(name, class)`` of the method asked for with --method (default: l2x)."""
    methods = _methods()
    name = "l2x" if name is None else name
    if name not in methods:
        raise _InputError(f"unknown --method {name!r}; choose from "
                          + ", ".join(sorted(methods)) + ".")
    return name, methods[name]


def _defaults(cls):
    """The parameters' defaults, read from the signature of ``__init__`` (which stores each
    unchanged, scikit-learn's contract) without building an estimator."""
    import inspect

    return {name: param.default
            for name, param in inspect.signature(cls.__init__).parameters.items()
            if name != "self"
            and param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY)}


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


def _build_explainer(method, cls, args, *, n_features, budget_if_refined=False, **options):
    """The explainer asked for: ``options`` (unset ones, None, left at the class's defaults),
    then --param. Names and values are checked here, before any data or model reach it, so
    that a mistake is reported as bad input. With ``budget_if_refined``, --max-queries and
    --max-seconds are ignored by an explainer that does not refine (the demo's SOInter next
    to an L2X that does) rather than refused."""
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
    if not (budget_if_refined and getattr(explainer, "refine", None) is None):
        _set_budget(explainer, method, args)
    try:
        explainer._validate_params()
    except (TypeError, ValueError) as exc:
        raise _InputError(f"invalid parameter value: {exc}") from None
    _check_networks(explainer, user, n_features)
    return explainer


def _set_budget(explainer, method, args):
    """--max-queries and --max-seconds, set on the explainer's refinement against the
    model (``refine="model"`` being the default ModelRefinement)."""
    budget = {param: getattr(args, dest) for dest, _, param in _BUDGET_OPTIONS
              if getattr(args, dest, None) is not None}
    if not budget:
        return
    from sklearn.base import clone

    from .._model_judge import ModelRefinement

    refine = getattr(explainer, "refine", None)
    options = " and ".join(option for dest, option, _ in _BUDGET_OPTIONS
                           if getattr(args, dest, None) is not None)
    if refine is None:
        raise _InputError(f"{options} bound{'s' if ' and ' not in options else ''} the "
                          f"refinement against the model, which {method} does not do here "
                          "(refine=None); add --param refine=model to refine.")
    if isinstance(refine, str):
        refine = ModelRefinement()
    if "max_queries" in budget:  # a bound, as the option says: never extended
        budget["max_extensions"] = 0
    explainer.set_params(refine=clone(refine).set_params(**budget))


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

    from .._networks import build_network

    for prefix in sorted({name.split("__", 1)[0] for name in user if "__" in name}):
        names = ", ".join(name for name in user if name.startswith(prefix + "__"))
        # The throw-away weights must not draw from the caller's torch generator.
        with torch.random.fork_rng(devices=[]):
            try:
                build_network(getattr(explainer, prefix), n_features, n_features,
                              (n_features,))
            except (TypeError, ValueError) as exc:
                raise _InputError(f"invalid parameter value ({names}): {exc}") from None


def _random_mask_fidelity(black_box, X, counts, baseline, seed, target=None):
    """Fidelity of random masks keeping as many features per row as the explanations (a
    fixed k, or a thresholded selection's varying numbers): the level to beat. With a
    ``target`` output (SOInter's), its fidelity alone, as the explainer's score is."""
    from ..metrics import posthoc_accuracy, random_masks

    masks = random_masks(len(counts), X.shape[1], counts, random_state=seed)
    # By answer, as the explainer's score: the two are printed side by side.
    if target is None:
        return posthoc_accuracy(black_box, X, masks, baseline=baseline, by_answer=True)
    return posthoc_accuracy(black_box, X, masks, baseline=baseline,
                            multioutput="raw_values", by_answer=True)[target]


def _random_label(counts, unit="features"):
    if len(np.unique(counts)) == 1:
        return f"random {int(counts[0])}-{unit[:-1]} masks"
    return f"random masks with as many {unit} per row"


def _per_row(counts, n_features, unit="features"):
    """``unit`` is "features" for rows of numbers, "columns" for a table's."""
    if len(np.unique(counts)) == 1:
        return f"{int(counts[0])} of {n_features} {unit} per row"
    return f"{counts.mean():.1f} of {n_features} {unit} per row on average"


def _k_text(explainer, k):
    if k is not None:
        return f"k={k}"
    rate = getattr(explainer, "selection_rate_", None)
    if rate is not None:
        return f"k=None: the open test-time gates, {100 * rate:.0f} % of the features trained for"
    return "k=None: selection probability above 0.5"
