"""The training rows and their batches: a ``batch_size`` of one is refused as a parameter,
a last training batch of one row, which batch normalisation cannot normalise, is skipped,
and a ``train_split`` that leaves a single training row is named."""

import numpy as np
import pytest

from sk_sointer import L2XExplainer, RealXExplainer

FAST = {"max_epochs": 2, "batch_size": 32, "random_state": 0, "device": "cpu"}


def test_batch_size_of_one_is_a_parameter_error(linear_rows):
    X, y, _ = linear_rows
    with pytest.raises(ValueError, match="'batch_size' parameter"):
        L2XExplainer(batch_size=1, max_epochs=1).fit(X, y)


@pytest.mark.parametrize("n_rows, train_split", [(21, None), (26, 0.2), (41, None)])
def test_a_last_training_batch_of_one_row_is_skipped(n_rows, train_split):
    # Batch normalisation cannot normalise a batch of one row; the split leaves 21 rows
    # for training in the second case, whatever the fraction rounds to.
    rng = np.random.RandomState(0)
    X = rng.randn(n_rows, 4).astype(np.float32)
    y = np.arange(n_rows) % 2
    for explainer in (L2XExplainer(k=1, batch_size=10, max_epochs=2, train_split=train_split),
                      RealXExplainer(batch_size=10, max_epochs=2, predictor_epochs=1,
                                     train_split=train_split)):
        masks = explainer.fit(X, y).transform(X)
        assert masks.shape == X.shape and np.isfinite(explainer.explain(X)).all()


@pytest.mark.parametrize("n_rows", [2, 3])
def test_a_train_split_leaving_one_training_row_is_named(n_rows, rows):
    X = rows[0][:n_rows]
    with pytest.raises(ValueError, match=f"train_split=0.5 leaves 1 of {n_rows} rows for "
                                         "training, which needs 2"):
        L2XExplainer(k=1, train_split=0.5, **FAST).fit(X, np.arange(n_rows) % 2)
