"""Fidelity to the black box: does the model keep its answer on the selected features?"""

import numpy as np
from sklearn.utils import check_array

from .._masking import Masker, flatten_rows
from .._outputs import output_agreement
from .._utils import in_chunks
from ..black_box import as_black_box


def posthoc_accuracy(black_box, X, masks, *, baseline="mean", multioutput="uniform_average"):
    """Agreement of the black box on masked rows with the black box on full rows.

    Left-out features take the ``baseline`` value, in the data's units. For a categorical
    output, the score is the fraction of rows whose predicted class on ``m(x, mask)``
    equals the predicted class on ``x``: L2X's post-hoc accuracy (Chen et al. 2018,
    §4.2.1), where the reference is the model's own prediction, not a label. A Bernoulli
    output (one label of a multi-label model) scores the fraction of rows on the same side
    of 0.5, a real output the R² of the masked predictions against the full ones.
    Baseline-filled rows may still lie outside the data the model was trained on; EVAL-X
    (:class:`EvalXEvaluator`) avoids that.

    Parameters
    ----------
    black_box : model
        Anything :func:`~sk_sointer.as_black_box` accepts.
    X : array-like of shape (n_samples, n_features)
        Or images, ``(n_samples, height, width)`` or ``(n_samples, channels, height, width)``:
        the black box is queried with rows of that shape.
    masks : array-like of the shape of X
        Selections, 1 (or any value > 0) for a kept feature.
    baseline : {"mean", "zero"}, float or array-like of shape (n_features,), default="mean"
        The value of a left-out feature: the mean of ``X`` over the rows given (pass the
        training mean, e.g. an explainer's ``masker_.baseline_``, to match its ``score``),
        0 (``"zero"``: the papers' metric on their N(0, 1) data), one number, or one per
        feature.
    multioutput : {"uniform_average", "raw_values"}, default="uniform_average"
        For a model with several outputs: their average, or one score per output.

    Returns
    -------
    score : float or ndarray of shape (n_outputs,)
        Higher is better; 1 is perfect.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sk_sointer.metrics import posthoc_accuracy
    >>> X = np.random.RandomState(0).randn(200, 3)
    >>> model = LogisticRegression().fit(X, X[:, 0] > 0)
    >>> keep_first = np.tile([1.0, 0.0, 0.0], (200, 1))
    >>> posthoc_accuracy(model, X, keep_first) > 0.95
    True
    """
    X, row_shape = flatten_rows(X)
    X = check_array(X, dtype=[np.float64, np.float32])
    if row_shape is not None:
        if np.shape(masks) != (len(X), *row_shape):
            raise ValueError(f"masks should have the shape of X {(len(X), *row_shape)}; got "
                             f"{np.shape(masks)}.")
        masks = np.reshape(masks, X.shape)
    masks = check_array(masks, dtype=np.float32, input_name="masks")
    if masks.shape != X.shape:
        raise ValueError(f"masks should have the shape of X {X.shape}; got {masks.shape}.")
    masker = Masker(baseline).fit(X)
    black_box = as_black_box(black_box).with_row_shape(row_shape)
    full = in_chunks(black_box.predict, X)
    masked = in_chunks(black_box.predict, masker.mask_raw(X, masks > 0))
    return output_agreement(full, masked, black_box.spec, multioutput=multioutput)
