"""The public helpers the benchmarks use: output_agreement, greedy_masks, patch_groups."""

import types

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression, LogisticRegression

from sk_sointer import L2XExplainer, as_black_box, patch_groups
from sk_sointer.metrics import greedy_masks, output_agreement, posthoc_accuracy


@pytest.fixture(scope="module")
def rows():
    return np.random.RandomState(0).randn(300, 4)


def test_output_agreement_values(rows):
    black_box = as_black_box(LogisticRegression().fit(rows, rows[:, 0] > 0))
    full = black_box.predict(rows)
    flipped = 1 - full  # every answer on the other side of 0.5
    assert output_agreement(full, full, black_box.spec) == 1.0
    assert output_agreement(full, flipped, black_box.spec) == 0.0
    half = full.copy()
    half[:150] = flipped[:150]
    assert output_agreement(full, half, black_box.spec) == pytest.approx(0.5)
    # A real output scores the R² of the other outputs against the reference.
    regressor = as_black_box(LinearRegression().fit(rows, rows[:, 1]))
    predicted = regressor.predict(rows)
    assert output_agreement(predicted, predicted + 1, regressor.spec) == pytest.approx(
        1 - 300 / np.sum((predicted - predicted.mean()) ** 2))


def test_output_agreement_is_posthoc_accuracy_on_masked_rows(rows):
    model = LogisticRegression().fit(rows, rows[:, 0] + rows[:, 1] > 0)
    black_box = as_black_box(model)
    masks = np.zeros_like(rows)
    masks[:, 0] = 1
    masked = rows * masks  # left-out features at 0
    assert output_agreement(black_box.predict(rows), black_box.predict(masked),
                            black_box.spec) == pytest.approx(
        posthoc_accuracy(model, rows, masks, baseline="zero"))


def test_greedy_masks_finds_the_one_feature_the_model_reads(rows):
    model = LogisticRegression().fit(rows, rows[:, 2] > 0)
    explainer = L2XExplainer(k=1, max_epochs=1, refine=None, random_state=0).fit(
        rows, black_box=model)
    masks = greedy_masks(explainer, rows[:50], k=1)
    assert masks.shape == (50, 4) and masks.dtype == np.float32
    np.testing.assert_array_equal(masks.sum(axis=1), 1)
    assert masks[:, 2].mean() > 0.9
    two = greedy_masks(explainer, rows[:50], k=2)
    assert np.all(two[masks > 0] == 1)  # greedy: the first round's feature stays


class _Counting:
    """A black box (a function) that counts the rows it is asked about."""

    def __init__(self, function):
        self.function, self.rows = function, 0

    def __call__(self, X):
        self.rows += len(X)
        return self.function(X)


def test_greedy_masks_leaves_features_out_as_the_explainer_does(rows):
    model = LogisticRegression().fit(rows, rows[:, 2] > 0)
    counting = _Counting(model.predict_proba)
    for background, per_masked_row in ((None, 1), (8, 8)):
        explainer = L2XExplainer(k=1, max_epochs=1, refine=None, random_state=0,
                                 background=background).fit(rows, black_box=counting)
        counting.rows = 0
        masks = greedy_masks(explainer, rows[:20], k=2)
        # The full rows, then 4 + 3 candidates a row, each over the background rows.
        assert counting.rows == 20 + 20 * (4 + 3) * per_masked_row
        assert masks[:, 2].mean() > 0.9


def test_greedy_masks_takes_the_raw_table_and_returns_its_columns():
    pd = pytest.importorskip("pandas")
    from sklearn.compose import make_column_transformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"income": rng.normal(50, 10, 400), "grade": rng.choice(list("ABCD"), 400),
                      "age": rng.integers(20, 70, 400).astype(float),
                      "state": rng.choice(["CA", "NY", "TX"], 400)})
    X.loc[::7, "age"] = np.nan
    y = np.where((X.income > 52) & X.grade.isin(["A", "B"]), "ok", "deny")
    encoder = make_column_transformer((OneHotEncoder(), ["grade", "state"]),
                                      remainder=SimpleImputer())
    model = make_pipeline(encoder, HistGradientBoostingClassifier(random_state=0)).fit(X, y)
    explainer = L2XExplainer(k=2, max_epochs=1, refine=None, random_state=0).fit(
        X, black_box=model)
    masks = greedy_masks(explainer, X.iloc[:60], k=2)
    assert masks.shape == (60, 4)
    np.testing.assert_array_equal(masks.sum(axis=1), 2)
    # Every row keeps a column the answer depends on, and the model's answer holds.
    assert masks[:, :2].any(axis=1).all()
    assert explainer.check(X.iloc[:60], masks).holds.mean() > 0.95


def test_patch_groups_numbers_patches_row_by_row():
    groups = patch_groups((2, 3, 4), 2)
    assert groups.shape == (24,)
    expected = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 3, 3]])
    np.testing.assert_array_equal(groups.reshape(2, 3, 4), [expected, expected])
    with pytest.raises(ValueError, match="patch_size"):
        patch_groups((1, 4, 4), 0)


def test_the_package_lists_its_public_names_only():
    import sk_sointer

    public = [name for name in dir(sk_sointer) if not name.startswith("_")]
    # The public API, and the submodules imported so far (as after any import of one);
    # no name the package itself imported (the lazy loader's importlib).
    assert set(sk_sointer.__all__) - {"__version__"} <= set(public)
    others = set(public) - set(sk_sointer.__all__)
    assert all(isinstance(getattr(sk_sointer, name), types.ModuleType)
               and getattr(sk_sointer, name).__name__ == f"sk_sointer.{name}"
               for name in others), others
