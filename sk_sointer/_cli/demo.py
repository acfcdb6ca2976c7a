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


_DEMO_TEST_ROWS = 1_000


_DEMO_MIN_ROWS = 50


def _run_demo(args):
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier

    from .. import datasets
    from ..metrics import false_discovery_rate, median_rank, true_positive_rate

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
