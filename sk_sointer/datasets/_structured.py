"""SOInter's structured-output sets E1 and E2: several binary outputs, the arg-min of an
energy over all output configurations, and one ground-truth mask per output."""

import itertools
import numbers

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions, validate_params

from ._synthetic import _fill_doc


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
