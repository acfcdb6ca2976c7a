"""``python -m sk_sointer demo``: explain an MLP on a synthetic set with known answers."""

import math
import sys
import time
import warnings

from ._common import (_InputError, _build_explainer, _defaults, _k_text, _method, _per_row,
                      _random_label, _random_mask_fidelity)


_DEMO_SETS = {
    # name: (generator name in sk_sointer.datasets, true features per row)
    "xor": ("make_xor", 2),
    "orange_skin": ("make_orange_skin", 4),
    "nonlinear_additive": ("make_nonlinear_additive", 4),
    "switch": ("make_switch", 5),
}


# SOInter explains one output of a model with several: its demo explains a multi-label
# MLP on SOInter's own structured-output sets (name: energy, outputs), against L2X fitted
# on the explained output alone.
_STRUCTURED_SETS = {"E1": ("E1", 2), "E2": ("E2", 4)}

# The output the demo explains on each set (0-based): the second of E1, the third of E2,
# among those the SOInter paper explains.
_STRUCTURED_TARGET = {"E1": 1, "E2": 2}

_DEMO_TEST_ROWS = 1_000


_DEMO_MIN_ROWS = 50


def _run_demo(args):
    from sklearn.model_selection import train_test_split

    from .. import datasets
    from ..metrics import false_discovery_rate, median_rank, true_positive_rate

    method, cls = _method(args.method)
    structured = args.dataset in _STRUCTURED_SETS
    if method == "sointer" or structured:
        if method not in ("sointer", "l2x") or (args.dataset is not None and not structured):
            raise _InputError(
                "--method sointer explains one output of a multi-output model: its demo runs "
                f"on the structured-output sets {', '.join(sorted(_STRUCTURED_SETS))}, which "
                "no other method explains (l2x is shown next to it); got --method "
                f"{method} with --dataset {args.dataset}."
            )
        return _run_structured_demo(args)
    dataset = "orange_skin" if args.dataset is None else args.dataset
    n_samples = 10_000 if args.n_samples is None else args.n_samples
    generator, n_true = _DEMO_SETS[dataset]
    X, y, relevant = getattr(datasets, generator)(n_samples, random_state=args.random_state)
    n_features = X.shape[1]
    k = args.k
    if k is None and _defaults(cls).get("k") is not None:
        k = n_true
    if k is not None and k > n_features:
        raise _InputError(f"k should be <= n_features = {n_features}; got {k}.")
    explainer = _build_explainer(method, cls, args, n_features=n_features, k=k, verbose=1)

    n_test = min(_DEMO_TEST_ROWS, n_samples // 2)
    X_train, X_test, y_train, y_test, _, relevant_test = train_test_split(
        X, y, relevant, test_size=n_test, random_state=args.random_state
    )

    print(f"sk_sointer demo: {dataset}, {n_features} features of which {n_true} matter "
          f"in each row; {len(X_train):,} training rows, {n_test:,} held out.")
    model, bb_seconds = _demo_model((200, 200), X_train, y_train, args.random_state)

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


def _run_structured_demo(args):
    """SOInter on one output of a multi-label MLP (the whole model in hand) against L2X
    fitted on that output alone, both judged by post-hoc accuracy on the output."""
    import numpy as np
    from sklearn.model_selection import train_test_split

    import sk_sointer

    from ..datasets import make_structured_output
    from ..metrics import true_positive_rate

    dataset = "E2" if args.dataset is None else args.dataset
    energy, n_outputs = _STRUCTURED_SETS[dataset]
    target = _STRUCTURED_TARGET[dataset]
    n_samples = 3_000 if args.n_samples is None else args.n_samples
    X, Y, relevant = make_structured_output(n_samples, energy=energy,
                                            random_state=args.random_state)
    n_features, n_true = X.shape[1], 4
    k = n_true if args.k is None else args.k
    if k > n_features:
        raise _InputError(f"k should be <= n_features = {n_features}; got {k}.")
    sointer = _build_explainer("sointer", sk_sointer.SOInterExplainer, args,
                               n_features=n_features, k=k, target=target,
                               budget_if_refined=True)
    l2x = _build_explainer("l2x", sk_sointer.L2XExplainer, args, n_features=n_features, k=k)

    n_test = min(_DEMO_TEST_ROWS, n_samples // 2)
    X_train, X_test, Y_train, Y_test, _, relevant_test = train_test_split(
        X, Y, relevant, test_size=n_test, random_state=args.random_state
    )
    print(f"sk_sointer demo: {dataset}, SOInter's structured outputs: {n_outputs} binary "
          f"outputs of {n_features} features, the first {n_true} of which matter; "
          f"{len(X_train):,} training rows, {n_test:,} held out.")
    model, bb_seconds = _demo_model((100, 100), X_train, Y_train, args.random_state)
    accuracy = np.mean(model.predict(X_test) == Y_test, axis=0)
    print(f"  black box   multi-label MLPClassifier(100, 100), trained in {bb_seconds:.1f} s: "
          f"accuracy {', '.join(f'{a:.3f}' for a in accuracy)} on the outputs' held-out "
          "labels")

    def one_output(rows):
        # L2X explains a single-output model: the target's probability as a class vector.
        p = model.predict_proba(rows)[:, target]
        return np.column_stack([1 - p, p])

    print(f"Explaining output y{target + 1} of the {n_test:,} held-out rows with "
          f"k={k} features per row:")
    fitted = {}
    for name, explainer, black_box in (("SOInterExplainer", sointer, model),
                                       ("L2XExplainer", l2x, one_output)):
        start = time.perf_counter()
        try:
            explainer.fit(X_train, black_box=black_box)
        except (TypeError, ValueError) as exc:
            raise _InputError(str(exc)) from None
        fitted[name] = time.perf_counter() - start
    masks = sointer.transform(X_test)
    chance = _random_mask_fidelity(model, X_test, masks.sum(axis=1),
                                   sointer.masker_.baseline_, args.random_state, target=target)
    reference = _random_label(masks.sum(axis=1))
    width = max(len(reference), len("SOInterExplainer"))
    for name, explainer, what in (
        ("SOInterExplainer", sointer, "the whole model, target output"),
        ("L2XExplainer", l2x, "the target output alone"),
    ):
        tpr = true_positive_rate(relevant_test[:, target], explainer.transform(X_test))
        print(f"  {name:<{width}}  post-hoc accuracy {explainer.score(X_test):.3f}   "
              f"TPR {100 * tpr:5.1f} %   fitted on {what} in {fitted[name]:.1f} s")
    print(f"  {reference:<{width}}  post-hoc accuracy {chance:.3f}")
    print("Post-hoc accuracy: the share of rows on which the black box keeps its label for "
          f"y{target + 1} with only the selected features (the others at their mean), "
          "averaged over its two labels.")
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


def _demo_model(hidden, X, y, random_state):
    """The demo's black box, an MLP of ``hidden`` units fitted on ``X`` and ``y`` (one label
    or several), and the seconds its fit took."""
    from sklearn.neural_network import MLPClassifier

    start = time.perf_counter()
    model = MLPClassifier(hidden_layer_sizes=hidden, max_iter=200, early_stopping=True,
                          random_state=random_state)
    with warnings.catch_warnings():
        # Tiny demo sets may stop before converging; the report shows the accuracy anyway.
        warnings.simplefilter("ignore", category=_convergence_warning())
        model.fit(X, y)
    return model, time.perf_counter() - start
