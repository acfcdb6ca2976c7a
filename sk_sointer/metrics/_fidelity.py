"""Fidelity to the black box: does the model keep its answer on the selected features?

MEED's four fidelity numbers (Liang et al. 2020, §4.1) are, for masks from an explainer:

- FS-M, FU-M: :func:`posthoc_accuracy` of the black box on the selected features, and on
  the features left out (``features="unselected"``);
- FS-A, FU-A: :func:`approximator_accuracy`, the same agreement for a network trained
  afresh on rows masked that way (it can read what the model cannot, such as which
  features were kept).
"""

import numpy as np
import torch
from sklearn.utils import check_array

from .._layout import check_numeric_columns, flatten_rows, image_shape_of
from .._masking import Masker
from .._networks import MLP
from .._outputs import output_agreement
from .._training.random_masks import JudgeNet
from .._utils import in_chunks, resolve_device, seeded
from ..black_box import as_black_box, model_agreement


def posthoc_accuracy(black_box, X, masks, *, baseline=None, multioutput="uniform_average",
                     features="selected", by_answer=False):
    """Agreement of the black box on masked rows with the black box on full rows.

    Left-out features take the ``baseline`` value, in the data's units. For a categorical
    output, the score is the fraction of rows whose predicted class on ``m(x, mask)``
    equals the predicted class on ``x``: L2X's post-hoc accuracy (Chen et al. 2018,
    §4.2.1), where the reference is the model's own prediction, not a label. A
    classifier's prediction is its own ``predict`` (which may disagree with the argmax of
    its ``predict_proba``, as ``SVC(probability=True)``'s does), one per output or label;
    for other models, the argmax of a categorical output and the side of 0.5 of a
    Bernoulli one. A real output scores the R² of the masked predictions against the full
    ones. Baseline-filled rows may still lie outside the data the model was trained on;
    EVAL-X (:class:`EvalXEvaluator`) avoids that.

    Given a fitted explainer instead of masks, its masks of ``X`` are scored with its own
    baseline (the training mean by default), exactly as its ``score`` does; raw masks are
    filled with ``baseline``, by default the mean of ``X`` itself, which differs from an
    explainer's training mean (scores of the same masks moved by up to 9 points).

    Parameters
    ----------
    black_box : model
        Anything :func:`~sk_sointer.as_black_box` accepts.
    X : array-like of shape (n_samples, n_features)
        Or images, ``(n_samples, height, width)`` or ``(n_samples, channels, height, width)``:
        the black box is queried with rows of that shape.
    masks : array-like of the shape of X, or fitted explainer
        Selections, 1 (or any value > 0) for a kept feature; or the explainer whose
        ``transform(X)`` gives them and whose baseline fills the left-out features.
    baseline : {"mean", "zero"}, float or array-like of shape (n_features,), default=None
        The value of a left-out feature for raw masks: ``None`` or ``"mean"``, the mean of
        ``X`` over the rows given (pass the training mean, e.g. an explainer's
        ``masker_.baseline_``, to match its ``score``, or pass the explainer as ``masks``),
        0 (``"zero"``: the papers' metric on their N(0, 1) data), one number, or one per
        feature. With an explainer as ``masks`` it must be ``None``: the explainer's own
        baseline is used, so the two cannot disagree.
    multioutput : {"uniform_average", "raw_values"}, default="uniform_average"
        For a model with several outputs: their average, or one score per output.
    features : {"selected", "unselected"}, default="selected"
        Keep the selected features (MEED's FS-M) or the ones left out (FU-M: lower is
        better there, the explanation having taken what the model needs).
    by_answer : bool, default=False
        For a discrete output, the mean over the model's answers of the share of their
        rows that keep it (as ``balanced_accuracy_score`` is to accuracy), which is what
        an explainer's ``score`` reports; by default the share of all rows.

    Returns
    -------
    score : float or ndarray of shape (n_outputs,)
        Higher is better with the selected features; 1 is perfect.

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
    explainer = masks if hasattr(masks, "masker_") and hasattr(masks, "transform") else None
    if explainer is not None:
        if baseline is not None:
            raise ValueError(
                f"posthoc_accuracy was given the explainer {type(explainer).__name__} and a "
                "baseline: the explainer's own baseline fills the left-out features (its "
                "masker_.baseline_); pass its masks instead to fill them with another."
            )
        masks = explainer.transform(X)
        baseline = explainer.masker_.baseline_
        if explainer._table_codec is not None:  # a table: its rows as the explainer codes them
            rows = explainer._validate_transform_input(X)
            kept = _rows_and_masks(np.zeros(rows.shape), masks, features)[1]
            black_box = as_black_box(black_box).with_table(explainer._table_codec)
            return model_agreement(black_box, rows, explainer.masker_.mask_raw(rows, kept),
                                   multioutput=multioutput, by_answer=by_answer)
    X, masks, row_shape = _rows_and_masks(X, masks, features)
    masker = Masker("mean" if baseline is None else baseline).fit(X)
    black_box = as_black_box(black_box).with_row_shape(row_shape)
    return model_agreement(black_box, X, masker.mask_raw(X, masks), multioutput=multioutput,
                           by_answer=by_answer)


def approximator_accuracy(black_box, X_train, masks_train, X_test, masks_test, *,
                          features="selected", approximator=None, baseline="mean",
                          max_epochs=20, batch_size=128, lr=1e-3, random_state=0,
                          device="cpu"):
    """Agreement with the black box of a network trained afresh on masked rows (FS-A, FU-A).

    A new ``approximator`` learns the black box's outputs from the training rows masked
    by ``masks_train`` (left-out features at the baseline); the score is its agreement
    with the black box on the test rows masked by ``masks_test``, measured as in
    :func:`posthoc_accuracy`. Unlike the black box, the network can learn to read which
    features were kept: a high FS-A with a low FS-M is the signature of a selection that
    encodes the answer in its pattern (MEED, Table 2).

    Parameters
    ----------
    black_box : model
        Anything :func:`~sk_sointer.as_black_box` accepts.
    X_train, X_test : array-like of shape (n_samples, n_features), or images
    masks_train, masks_test : array-like of the shapes of ``X_train`` and ``X_test``
        An explainer's masks of those rows (its ``transform``).
    features : {"selected", "unselected"}, default="selected"
        Train and judge on the selected features (FS-A) or the ones left out (FU-A).
    approximator : callable, default=None
        Network factory; ``None`` gives ``MLP(hidden_units=(200, 200), batch_norm=True)``
        (pass :class:`~sk_sointer.CNN` for images, as the paper trains the black box's
        architecture).
    baseline : {"mean", "zero"}, float or array-like, default="mean"
        The value of a left-out feature (the mean over ``X_train``).
    max_epochs, batch_size, lr : int, int, float
        Adam's training budget.
    random_state : int, RandomState instance or None, default=0
    device : str, default="cpu"

    Returns
    -------
    score : float
        Averaged over the black box's outputs; higher is better with the selected
        features.
    """
    for name, rows in (("X_train", X_train), ("X_test", X_test)):
        check_numeric_columns(rows, name, advice=(
            "The approximator is a network trained on rows of numbers: give it the model "
            "behind the encoder (pipeline[-1]), the rows as the encoder writes them "
            "(pipeline[:-1].transform(X)) and the masks of the table's columns spread over "
            "their encoded features (masks[:, sk_sointer.encoded_groups(pipeline[:-1], X)])."))
    X_train, masks_train, row_shape = _rows_and_masks(X_train, masks_train, features, "masks_train")
    X_test, masks_test, _ = _rows_and_masks(X_test, masks_test, features, "masks_test")
    if X_test.shape[1] != X_train.shape[1]:
        raise ValueError(f"X_test has {X_test.shape[1]} features, X_train {X_train.shape[1]}.")
    black_box = as_black_box(black_box).with_row_shape(row_shape)
    targets = in_chunks(black_box.predict, X_train)
    reference = in_chunks(black_box.predict, X_test)
    spec = black_box.spec.fitted(targets)
    masker = Masker(baseline).fit(X_train)
    device = resolve_device(device)
    with seeded(random_state, device):
        judge = JudgeNet(
            approximator or MLP(hidden_units=(200, 200), batch_norm=True), masks="given",
            masker=masker, output_spec=spec,
            input_shape=image_shape_of(row_shape, X_train.shape[1]) or (X_train.shape[1],),
            max_epochs=max_epochs, batch_size=min(batch_size, len(X_train)), lr=lr,
            optimizer=torch.optim.Adam, train_split=None, device=device, verbose=0,
        )
        judge.fit(np.hstack([masker.standardize(X_train), masks_train]).astype(np.float32),
                  spec.standardize(targets))
        predicted = judge.predict_masked(torch.as_tensor(masker.standardize(X_test)),
                                         torch.as_tensor(masks_test, dtype=torch.float32))
    return output_agreement(reference, predicted.cpu().numpy(), spec)


def _rows_and_masks(X, masks, features, masks_name="masks"):
    """Flat float rows, the 0/1 masks of the ``features`` to keep, and the rows' shape."""
    if features not in ("selected", "unselected"):
        raise ValueError(f"features should be 'selected' or 'unselected'; got {features!r}.")
    X, row_shape = flatten_rows(X)
    X = check_array(X, dtype=[np.float64, np.float32])
    if row_shape is not None:
        if np.shape(masks) != (len(X), *row_shape):
            raise ValueError(f"{masks_name} should have the shape of X {(len(X), *row_shape)}; "
                             f"got {np.shape(masks)}.")
        masks = np.reshape(masks, X.shape)
    masks = check_array(masks, dtype=np.float32, input_name=masks_name)
    if masks.shape != X.shape:
        raise ValueError(f"{masks_name} should have the shape of X {X.shape}; got {masks.shape}.")
    kept = masks > 0
    return X, (kept if features == "selected" else ~kept), row_shape
