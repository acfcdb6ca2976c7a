"""How well two sets of a model's outputs agree, output by output."""

from .._outputs import output_agreement as _output_agreement


def output_agreement(reference, other, spec, *, multioutput="uniform_average",
                     by_answer=False):
    """Agreement of ``other`` outputs with ``reference`` outputs of one model: higher is better.

    The score :func:`posthoc_accuracy` and ``score`` give, for outputs already computed: a
    categorical output scores the fraction of rows with the same class (argmax), a
    Bernoulli output the fraction on the same side of 0.5, a real output the R² of
    ``other`` against ``reference``. Use it to compare a model's answers on masked rows
    with its answers on full rows, or its answers with encoded labels.

    Parameters
    ----------
    reference : array-like of shape (n_samples, n_columns)
        The outputs taken as the truth, in the columns of ``spec`` (e.g.
        ``BlackBox.predict(X)``, or ``spec.encode(y, n_samples)`` for labels).
    other : array-like of shape (n_samples, n_columns)
        The outputs compared with them, in the same columns.
    spec : OutputSpec
        What the columns hold: ``as_black_box(model).spec``, or a fitted explainer's
        ``output_spec_``.
    multioutput : {"uniform_average", "raw_values"}, default="uniform_average"
        Average over the outputs, or one score per output.
    by_answer : bool, default=False
        A discrete output scores the mean, over the answers of ``reference``, of the
        fraction of their rows with the same answer (each answer's rows weigh alike, as
        in balanced accuracy).

    Returns
    -------
    score : float or ndarray of shape (n_outputs,)
        The agreement, averaged over the outputs or one per output.

    See Also
    --------
    posthoc_accuracy : The same agreement, the model queried on masked rows.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sk_sointer import as_black_box
    >>> from sk_sointer.metrics import output_agreement
    >>> X = np.random.RandomState(0).randn(200, 3)
    >>> black_box = as_black_box(LogisticRegression().fit(X, X[:, 0] > 0))
    >>> full = black_box.predict(X)
    >>> float(output_agreement(full, full, black_box.spec))
    1.0
    """
    return _output_agreement(reference, other, spec, multioutput=multioutput,
                             by_answer=by_answer)
