"""The generators of L2X (XOR, orange skin, nonlinear additive, switch) and of INVASE /
REAL-X (S1-S3, chosen by a control-flow feature): standard normal features, binary labels
sampled from a logit of a few of them, and each row's ground-truth mask."""

import numbers

import numpy as np
from scipy.special import expit
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions, validate_params

from .._docstrings import doc_filler

CONTROL_FLOW_FEATURE = 10
"""Column of :func:`make_control_flow`'s control-flow feature (x11 in the papers)."""

# Coefficients (amplitude, frequency, weight of |.|, offset) of the additive logit
# -amplitude * sin(frequency * a) + weight * |b| + c + exp(-d) - offset.
_ADDITIVE_COEFS = {
    "paper": (100.0, 2.0, 2.0, 0.0),  # L2X paper, Sec. 4.1
    "code": (100.0, 0.2, 1.0, 2.4),  # L2X released make_data.py
    "invase": (10.0, 0.2, 1.0, 2.4),  # INVASE code = REAL-X paper (S1-S3)
}

_SETTINGS = {"S1": ("A", "B"), "S2": ("A", "C"), "S3": ("B", "C")}


# Docstring text shared by the generators, filled in by ``_fill_doc`` (see
# ``sk_sointer._docstrings``: stored unindented; a literal percent sign in a docstring
# that uses it must be written ``%%``).
_DOC = {
    "n_samples": """\
n_samples : int, default=10_000
    Number of rows.""",
    "random_state": """\
random_state : int, RandomState instance or None, default=None
    Seeds the draws of the features and of the labels (and of the regimes, where
    there are any). Pass an int for reproducible output. The features are drawn
    first, as one ``randn(n_samples, n_features)`` call (before any shift), the
    same draws as the reference code makes after ``np.random.seed(seed)``.""",
    "return_proba": """\
return_proba : bool, default=False
    Also return the true probabilities P(y = 1 | x).""",
    "returns": """\
X : ndarray of shape (n_samples, n_features), dtype=float64
    Features.

y : ndarray of shape (n_samples,), dtype=int64
    Labels in {0, 1}, sampled from ``proba`` (they are not thresholded).

relevant : ndarray of shape (n_samples, n_features), dtype=bool
    Ground truth: ``relevant[i, j]`` is True when the label of row ``i`` depends on
    feature ``j``.

proba : ndarray of shape (n_samples,), dtype=float64
    P(y = 1 | x) for every row. Only returned when ``return_proba=True``.""",
}

_fill_doc = doc_filler(_DOC)


# Logits. Each takes the full matrix and the columns it reads, and is computed in
# float64: L2X's additive logits reach about +-100 (the -100 sin term), past the ~88.7 at
# which exp overflows in float32.


def _xor_logit(X, cols=(0, 1)):
    return X[:, cols[0]] * X[:, cols[1]]


def _orange_skin_logit(X, cols=(0, 1, 2, 3)):
    return np.sum(X[:, list(cols)] ** 2, axis=1) - 4.0


def _additive_logit(X, cols=(0, 1, 2, 3), coefs="paper"):
    amplitude, frequency, weight, offset = _ADDITIVE_COEFS[coefs]
    a, b, c, d = (X[:, j] for j in cols)
    # An infinite exp(-d) gives a logit of +inf, which expit maps to 1 without a NaN.
    with np.errstate(over="ignore"):
        tail = np.exp(-d)
    return -amplitude * np.sin(frequency * a) + weight * np.abs(b) + c + tail - offset


def _rows_mask(n_samples, n_features, cols):
    relevant = np.zeros((n_samples, n_features), dtype=bool)
    relevant[:, list(cols)] = True
    return relevant


def _switch_paper(X, positive):
    """Logit and ground truth of the paper's switch set, given each row's component."""
    orange = _orange_skin_logit(X, (1, 2, 3, 4))
    additive = _additive_logit(X, (5, 6, 7, 8), "paper")
    logit = np.where(positive, orange, additive)
    relevant = np.zeros(X.shape, dtype=bool)
    relevant[:, 0] = True
    relevant[:, 1:5] = positive[:, None]
    relevant[:, 5:9] = ~positive[:, None]
    return logit, relevant


_PIECES = {
    "A": (_xor_logit, (0, 1)),
    "B": (_orange_skin_logit, (2, 3, 4, 5)),
    "C": (lambda X, cols: _additive_logit(X, cols, "invase"), (6, 7, 8, 9)),
}


def _control_flow(X, setting):
    """Logit g (with P(y = 1) = expit(-g)) and ground truth of S1, S2 or S3."""
    (first_logit, first_cols), (second_logit, second_cols) = (
        _PIECES[name] for name in _SETTINGS[setting]
    )
    # INVASE's convention: x11 < 0 picks the first function, x11 >= 0 the second.
    first = X[:, CONTROL_FLOW_FEATURE] < 0
    logit = np.where(first, first_logit(X, first_cols), second_logit(X, second_cols))
    relevant = np.zeros(X.shape, dtype=bool)
    relevant[:, CONTROL_FLOW_FEATURE] = True
    relevant[:, list(first_cols)] = first[:, None]
    relevant[:, list(second_cols)] |= ~first[:, None]
    return logit, relevant


def _finish(X, y, relevant, proba, return_proba):
    if return_proba:
        return X, y, relevant, proba
    return X, y, relevant


def _l2x_output(X, logit, relevant, rng, return_proba):
    # L2X's class convention: P(y = 1) = sigma(g).
    proba = expit(logit)
    y = rng.binomial(1, proba).astype(np.int64)
    return _finish(X, y, relevant, proba, return_proba)


_COMMON_CONSTRAINTS = {
    "n_samples": [Interval(numbers.Integral, 1, None, closed="left")],
    "random_state": ["random_state"],
    "return_proba": ["boolean"],
}


@validate_params(
    {
        **_COMMON_CONSTRAINTS,
        "n_features": [Interval(numbers.Integral, 2, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
@_fill_doc
def make_xor(n_samples=10_000, *, n_features=10, random_state=None, return_proba=False):
    """Generate L2X's XOR data set.

    P(y = 1 | x) = sigma(x0 * x1): the label depends on the first two features, through
    their product, for every row. The other columns are noise.

    Read more in the L2X paper, Section 4.1.

    Parameters
    ----------
    %(n_samples)s

    n_features : int, default=10
        Number of columns, at least 2.

    %(random_state)s

    %(return_proba)s

    Returns
    -------
    %(returns)s

    See Also
    --------
    make_orange_skin : Sum of squares of four features.
    make_control_flow : XOR as one branch of a control-flow set.

    Notes
    -----
    L2X's released code returns the probabilities as soft targets rather than labels;
    here labels are sampled so that any classifier can be fitted on ``(X, y)``. The
    class convention is L2X's: the paper's "Y = 1" (column 0 of the code's targets) is
    ``y = 1``.

    References
    ----------
    .. [1] J. Chen, L. Song, M. J. Wainwright and M. I. Jordan, "Learning to Explain: An
       Information-Theoretic Perspective on Model Interpretation", ICML 2018.

    Examples
    --------
    >>> from sk_sointer.datasets import make_xor
    >>> X, y, relevant = make_xor(n_samples=5, random_state=0)
    >>> X.shape, y.shape, relevant.shape
    ((5, 10), (5,), (5, 10))
    >>> relevant[0].nonzero()[0]
    array([0, 1])
    """
    rng = check_random_state(random_state)
    X = rng.standard_normal((n_samples, n_features))
    relevant = _rows_mask(n_samples, n_features, (0, 1))
    return _l2x_output(X, _xor_logit(X), relevant, rng, return_proba)


@validate_params(
    {
        **_COMMON_CONSTRAINTS,
        "n_features": [Interval(numbers.Integral, 4, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
@_fill_doc
def make_orange_skin(
    n_samples=10_000, *, n_features=10, random_state=None, return_proba=False
):
    """Generate L2X's orange-skin data set.

    P(y = 1 | x) = sigma(x0^2 + x1^2 + x2^2 + x3^2 - 4): the label depends on the first
    four features for every row. The other columns are noise.

    Read more in the L2X paper, Section 4.1.

    Parameters
    ----------
    %(n_samples)s

    n_features : int, default=10
        Number of columns, at least 4.

    %(random_state)s

    %(return_proba)s

    Returns
    -------
    %(returns)s

    See Also
    --------
    make_xor : Product of two features.
    make_switch : Orange skin as one regime of a mixture.

    Notes
    -----
    The class convention is L2X's: P(y = 1) = sigma(g). Labels are sampled; L2X's code
    used the probabilities as soft targets.

    References
    ----------
    .. [1] J. Chen, L. Song, M. J. Wainwright and M. I. Jordan, "Learning to Explain: An
       Information-Theoretic Perspective on Model Interpretation", ICML 2018.

    Examples
    --------
    >>> from sk_sointer.datasets import make_orange_skin
    >>> X, y, relevant, proba = make_orange_skin(
    ...     n_samples=5, random_state=0, return_proba=True)
    >>> relevant[0].nonzero()[0]
    array([0, 1, 2, 3])
    >>> proba.shape
    (5,)
    """
    rng = check_random_state(random_state)
    X = rng.standard_normal((n_samples, n_features))
    relevant = _rows_mask(n_samples, n_features, (0, 1, 2, 3))
    return _l2x_output(X, _orange_skin_logit(X), relevant, rng, return_proba)


@validate_params(
    {
        **_COMMON_CONSTRAINTS,
        "n_features": [Interval(numbers.Integral, 4, None, closed="left")],
        "variant": [StrOptions({"paper", "code"})],
    },
    prefer_skip_nested_validation=True,
)
@_fill_doc
def make_nonlinear_additive(
    n_samples=10_000,
    *,
    n_features=10,
    variant="paper",
    random_state=None,
    return_proba=False,
):
    """Generate L2X's nonlinear-additive data set.

    The logit of P(y = 1 | x) is a sum of one nonlinear function per feature of the
    first four; the other columns are noise.

    Read more in the L2X paper, Section 4.1.

    Parameters
    ----------
    %(n_samples)s

    n_features : int, default=10
        Number of columns, at least 4.

    variant : {"paper", "code"}, default="paper"
        Which of L2X's two formulas to use:

        - ``"paper"``: ``-100 sin(2 x0) + 2 |x1| + x2 + exp(-x3)``, as printed in the
          paper;
        - ``"code"``: ``-100 sin(0.2 x0) + |x1| + x2 + exp(-x3) - 2.4``, as in the
          released ``make_data.py``.

    %(random_state)s

    %(return_proba)s

    Returns
    -------
    %(returns)s

    See Also
    --------
    make_switch : Nonlinear additive as one regime of a mixture.

    Notes
    -----
    With the paper's ``-100 sin(2 x0)`` the label is almost a function of ``x0`` alone,
    so faithful explainers rank ``x1``-``x3`` close to the noise; the code's
    ``sin(0.2 x0)`` keeps the four features informative and makes the fairer benchmark.
    Both logits reach about +-100, so ``proba`` is computed with ``scipy.special.expit``
    in float64.

    References
    ----------
    .. [1] J. Chen, L. Song, M. J. Wainwright and M. I. Jordan, "Learning to Explain: An
       Information-Theoretic Perspective on Model Interpretation", ICML 2018.

    Examples
    --------
    >>> from sk_sointer.datasets import make_nonlinear_additive
    >>> X, y, relevant = make_nonlinear_additive(
    ...     n_samples=5, variant="code", random_state=0)
    >>> relevant.sum(axis=1)
    array([4, 4, 4, 4, 4])
    """
    rng = check_random_state(random_state)
    X = rng.standard_normal((n_samples, n_features))
    relevant = _rows_mask(n_samples, n_features, (0, 1, 2, 3))
    logit = _additive_logit(X, (0, 1, 2, 3), variant)
    return _l2x_output(X, logit, relevant, rng, return_proba)


@validate_params(
    {
        **_COMMON_CONSTRAINTS,
        "n_features": [Interval(numbers.Integral, 1, None, closed="left")],
        "variant": [StrOptions({"paper", "code"})],
    },
    prefer_skip_nested_validation=True,
)
@_fill_doc
def make_switch(
    n_samples=10_000,
    *,
    n_features=10,
    variant="paper",
    random_state=None,
    return_proba=False,
):
    """Generate L2X's switch data set: two regimes chosen by a switch feature.

    The switch feature is drawn from a mixture of N(+3, 1) and N(-3, 1). Rows of the +3
    component follow orange skin on four features, rows of the -3 component follow
    nonlinear additive on four others. The switch feature is relevant in every row.

    Read more in the L2X paper, Section 4.1.

    Parameters
    ----------
    %(n_samples)s

    n_features : int, default=10
        Number of columns, at least 9 for ``variant="paper"`` and 10 for
        ``variant="code"``.

    variant : {"paper", "code"}, default="paper"
        Which of L2X's two descriptions to follow:

        - ``"paper"``: column 0 is the switch; each row's component is an independent
          fair coin. The +3 rows follow orange skin on columns 1-4 (relevant
          {0, 1, 2, 3, 4}); the -3 rows follow nonlinear additive with the paper's
          formula on columns 5-8 (relevant {0, 5, 6, 7, 8}); column 9 is noise.
        - ``"code"``: L2X's released ``make_data.py``, bug included. Column 9 is the
          switch, +3 for the first ``n_samples // 2`` rows and -3 for the others. The
          first rows follow orange skin on columns 0-3; the others follow nonlinear
          additive with the code's formula on columns 0-3, after which columns 0-3 of
          those rows are copied into columns 4-7 (the intended swap, written as a tuple
          assignment between numpy views, copies instead of swapping). Finally the rows
          are shuffled. ``relevant`` is what the reference evaluation uses:
          {0, 1, 2, 3, 9} for orange-skin rows and {4, 5, 6, 7, 9} for additive rows,
          although in the additive rows columns 0-3 carry the same signal.

    %(random_state)s

    %(return_proba)s

    Returns
    -------
    %(returns)s

    See Also
    --------
    make_orange_skin : The +3 regime.
    make_nonlinear_additive : The -3 regime.
    make_control_flow : REAL-X's sets, where the switch is a hard threshold.

    Notes
    -----
    The paper is not consistent about which dimensions are true; the ``"paper"`` variant
    follows the first description of its Section 4.1 (X1 is the switch, orange skin on
    X2-X5, nonlinear additive on X6-X9). The ``"code"`` variant, with a given int
    ``random_state``, draws ``X`` and the row permutation in the order of the reference
    code, so it reproduces the reference ``X`` for that seed.

    References
    ----------
    .. [1] J. Chen, L. Song, M. J. Wainwright and M. I. Jordan, "Learning to Explain: An
       Information-Theoretic Perspective on Model Interpretation", ICML 2018.

    Examples
    --------
    >>> from sk_sointer.datasets import make_switch
    >>> X, y, relevant = make_switch(n_samples=4, random_state=0)
    >>> X[:, 0].round(1)
    array([ 4.8,  3.1, -5.6,  3.2])
    >>> relevant.astype(int)
    array([[1, 1, 1, 1, 1, 0, 0, 0, 0, 0],
           [1, 1, 1, 1, 1, 0, 0, 0, 0, 0],
           [1, 0, 0, 0, 0, 1, 1, 1, 1, 0],
           [1, 1, 1, 1, 1, 0, 0, 0, 0, 0]])
    """
    needed = 9 if variant == "paper" else 10
    if n_features < needed:
        raise ValueError(
            f"make_switch with variant={variant!r} needs n_features >= {needed}; "
            f"got n_features={n_features}."
        )
    rng = check_random_state(random_state)
    X = rng.standard_normal((n_samples, n_features))

    if variant == "paper":
        positive = rng.random_sample(n_samples) < 0.5
        X[:, 0] += np.where(positive, 3.0, -3.0)
        logit, relevant = _switch_paper(X, positive)
        return _l2x_output(X, logit, relevant, rng, return_proba)

    half = n_samples // 2
    X[:half, 9] += 3.0
    X[half:, 9] -= 3.0
    logit = np.concatenate(
        [
            _orange_skin_logit(X[:half], (0, 1, 2, 3)),
            _additive_logit(X[half:], (0, 1, 2, 3), "code"),
        ]
    )
    # The reference's failed swap: columns 0-3 overwrite 4-7 in the second half.
    X[half:, 4:8] = X[half:, 0:4]
    orange = np.arange(n_samples) < half
    perm = rng.permutation(n_samples)
    X, logit, orange = X[perm], logit[perm], orange[perm]

    relevant = np.zeros((n_samples, n_features), dtype=bool)
    relevant[:, 9] = True
    relevant[:, 0:4] = orange[:, None]
    relevant[:, 4:8] = ~orange[:, None]
    return _l2x_output(X, logit, relevant, rng, return_proba)


@validate_params(
    {
        **_COMMON_CONSTRAINTS,
        "setting": [StrOptions(set(_SETTINGS))],
        "n_features": [
            Interval(numbers.Integral, CONTROL_FLOW_FEATURE + 1, None, closed="left")
        ],
    },
    prefer_skip_nested_validation=True,
)
@_fill_doc
def make_control_flow(
    n_samples=10_000,
    *,
    setting="S1",
    n_features=11,
    random_state=None,
    return_proba=False,
):
    """Generate REAL-X's control-flow data sets S1, S2 and S3.

    Three logits on disjoint features:

    - g_A = x0 * x1,
    - g_B = x2^2 + x3^2 + x4^2 + x5^2 - 4,
    - g_C = ``-10 sin(0.2 x6) + |x7| + x8 + exp(-x9) - 2.4``.

    Column 10, the control-flow feature, picks one of a pair: the first when
    ``x10 < 0``, the second otherwise; S1 pairs (A, B), S2 (A, C) and S3 (B, C). The
    label follows P(y = 1 | x) = sigma(-g). The features of the active function and the
    control-flow feature are relevant; the control-flow feature is relevant in every row
    although it enters no logit, because without it the logit cannot be computed.

    Read more in the REAL-X paper, Section 5.1.

    Parameters
    ----------
    %(n_samples)s

    setting : {"S1", "S2", "S3"}, default="S1"
        Which pair of functions the control-flow feature chooses between.

    n_features : int, default=11
        Number of columns, at least 11. REAL-X uses 11; INVASE also uses 100.

    %(random_state)s

    %(return_proba)s

    Returns
    -------
    %(returns)s

    See Also
    --------
    CONTROL_FLOW_FEATURE : Column index of the control-flow feature (10).
    sk_sointer.metrics.control_flow_selection_rate : How often a mask keeps it.
    make_switch : L2X's softer version of the same idea.

    Notes
    -----
    These are INVASE's ``syn4``-``syn6``. The class convention is INVASE's and REAL-X's,
    P(y = 1) = sigma(-g) = 1 / (1 + exp(g)), the opposite of the L2X generators in this
    module. The labels are drawn as in INVASE's code, one binomial draw per row after
    ``X``, so an int ``random_state`` reproduces its data for that seed. g_C uses the
    coefficients of INVASE's code and the REAL-X paper (-10 sin(0.2 x)); INVASE's
    docstring prints ``-10 sin(2 x) + 2 |x|``.

    Averaged over x, P(y = 1) is about 0.528 (S1), 0.510 (S2) and 0.539 (S3).

    References
    ----------
    .. [1] N. Jethani, M. Sudarshan, Y. Aphinyanaphongs and R. Ranganath, "Have We
       Learned to Explain?: How Interpretability Methods Can Learn to Encode
       Predictions in their Interpretations", AISTATS 2021.
    .. [2] J. Yoon, J. Jordon and M. van der Schaar, "INVASE: Instance-wise Variable
       Selection using Neural Networks", ICLR 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from sk_sointer.datasets import make_control_flow, CONTROL_FLOW_FEATURE
    >>> X, y, relevant = make_control_flow(n_samples=200, setting="S2", random_state=0)
    >>> bool(relevant[:, CONTROL_FLOW_FEATURE].all())
    True
    >>> first = X[:, CONTROL_FLOW_FEATURE] < 0
    >>> np.unique(relevant[first], axis=0).nonzero()[1]
    array([ 0,  1, 10])
    """
    rng = check_random_state(random_state)
    X = rng.standard_normal((n_samples, n_features))
    logit, relevant = _control_flow(X, setting)
    proba = expit(-logit)
    # INVASE samples class 0 with probability sigma(g) and sets y = 1 - that draw.
    y = 1 - rng.binomial(1, expit(logit)).astype(np.int64)
    return _finish(X, y, relevant, proba, return_proba)
