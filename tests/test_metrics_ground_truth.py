import numpy as np
import pytest
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.model_selection import GridSearchCV, cross_val_score

from sk_sointer.datasets import make_control_flow
from sk_sointer.metrics import (
    control_flow_selection_rate,
    false_discovery_rate,
    fdr_scorer,
    median_rank,
    median_rank_scorer,
    tpr_scorer,
    true_positive_rate,
)


def _random_relevant(n_samples, n_features, k, seed):
    rng = np.random.RandomState(seed)
    relevant = np.zeros((n_samples, n_features), dtype=bool)
    for row in relevant:
        row[rng.choice(n_features, k, replace=False)] = True
    return relevant


@pytest.mark.parametrize("k", [1, 2, 4, 5])
@pytest.mark.parametrize("random_state", [0, 1])
def test_median_rank_of_a_perfect_mask_is_optimal(k, random_state):
    relevant = _random_relevant(300, 10, k, seed=k)
    masks = relevant.astype(np.float32)
    assert median_rank(relevant, masks, random_state=random_state) == (k + 1) / 2


def test_median_rank_of_real_valued_scores_without_ties():
    scores = [[0.9, 0.1, 0.5, 0.3], [0.9, 0.1, 0.5, 0.3]]
    # Ranks are 1, 4, 2, 3. Row 0: median(1, 4) = 2.5; row 1: median(1, 2, 3) = 2.
    relevant = [[1, 1, 0, 0], [1, 0, 1, 1]]
    assert median_rank(relevant, scores) == pytest.approx(2.25)
    assert median_rank(relevant, scores, random_state=5) == pytest.approx(2.25)


def test_median_rank_of_a_mask_missing_a_feature():
    # Relevant {0, 1}; the mask selects {0, 2}: feature 0 ranks 1 or 2 and feature 1
    # ranks 3 or 4, each with probability 1/2, so the row median is 2, 2.5 or 3
    # (expected value 2.5, above the optimum 1.5).
    relevant = np.array([[1, 1, 0, 0]])
    masks = np.array([[1, 0, 1, 0]])
    values = {median_rank(relevant, masks, random_state=s) for s in range(40)}
    assert values == {2.0, 2.5, 3.0}
    many = median_rank(np.repeat(relevant, 4000, 0), np.repeat(masks, 4000, 0))
    assert many == pytest.approx(2.5, abs=0.05)


def test_median_rank_breaks_ties_at_random_not_by_position():
    # All scores tie, so the one relevant feature has a uniform rank in 1..10 (mean 5.5,
    # sd 2.87); breaking ties by position would give rank 1.
    relevant = np.zeros((4000, 10), dtype=bool)
    relevant[:, 0] = True
    value = median_rank(relevant, np.zeros((4000, 10)))
    assert value == pytest.approx(5.5, abs=0.2)


def test_median_rank_is_reproducible():
    relevant = _random_relevant(200, 10, 3, seed=0)
    masks = _random_relevant(200, 10, 3, seed=1)
    first = median_rank(relevant, masks, random_state=3)
    assert median_rank(relevant, masks, random_state=3) == first
    rng = np.random.RandomState(3)
    assert median_rank(relevant, masks, random_state=rng) == first
    assert median_rank(relevant, masks, random_state=4) != first


def test_median_rank_rejects_rows_without_relevant_features():
    with pytest.raises(ValueError, match=r"rows \[1\] have none"):
        median_rank([[1, 0], [0, 0]], [[1, 0], [1, 0]])


# Three rows with hand-computed rates:
#   row 0: G = {0, 1}, S = {0, 2}  -> TPR 1/2, FDR 1/2
#   row 1: G = {1, 2}, S = {1, 2}  -> TPR 1,   FDR 0
#   row 2: G = {0, 3}, S = {}      -> TPR 0,   FDR 0 (empty selection)
RELEVANT = np.array([[1, 1, 0, 0], [0, 1, 1, 0], [1, 0, 0, 1]])
MASKS = np.array([[1, 0, 1, 0], [0, 1, 1, 0], [0, 0, 0, 0]])


def test_true_positive_rate_by_hand():
    assert true_positive_rate(RELEVANT, MASKS) == pytest.approx(0.5, abs=1e-7)
    assert true_positive_rate(RELEVANT, RELEVANT) == pytest.approx(1.0, abs=1e-7)
    assert true_positive_rate(RELEVANT, 1 - RELEVANT) == 0.0


def test_false_discovery_rate_by_hand():
    assert false_discovery_rate(RELEVANT, MASKS) == pytest.approx(1 / 6, abs=1e-7)
    assert false_discovery_rate(RELEVANT, RELEVANT) == 0.0
    assert false_discovery_rate(RELEVANT, 1 - RELEVANT) == pytest.approx(1.0, abs=1e-7)
    assert false_discovery_rate(RELEVANT, np.zeros((3, 4))) == 0.0


def test_positive_values_count_as_selected():
    scores = np.where(MASKS > 0, 0.7, np.array([-1.0, 0.0, -0.2, -3.0]))
    assert true_positive_rate(RELEVANT, scores) == true_positive_rate(RELEVANT, MASKS)
    assert false_discovery_rate(RELEVANT, scores) == false_discovery_rate(
        RELEVANT, MASKS
    )


def test_control_flow_selection_rate():
    masks = np.zeros((4, 11))
    masks[[0, 1, 3], 10] = 1
    masks[2, 9] = 1
    assert control_flow_selection_rate(masks) == 0.75
    assert control_flow_selection_rate(masks, feature=9) == 0.25
    assert control_flow_selection_rate(masks > 0, feature=np.int64(0)) == 0.0


@pytest.mark.parametrize("feature", [11, -1, 2.0, True])
def test_control_flow_selection_rate_rejects_bad_feature(feature):
    with pytest.raises(ValueError, match="feature must be an int"):
        control_flow_selection_rate(np.ones((2, 11)), feature=feature)


@pytest.mark.parametrize(
    "metric", [median_rank, true_positive_rate, false_discovery_rate]
)
def test_input_validation(metric):
    with pytest.raises(ValueError, match="same shape"):
        metric(np.ones((3, 4)), np.ones((3, 5)))
    with pytest.raises(ValueError, match="same shape"):
        metric(np.ones((3, 4)), np.ones((2, 4)))
    with pytest.raises(ValueError, match="2D"):
        metric(np.ones(4), np.ones(4))
    with pytest.raises(ValueError, match="NaN"):
        metric(np.ones((2, 2)), [[1.0, np.nan], [0.0, 1.0]])
    with pytest.raises(ValueError, match="infinity"):
        metric(np.ones((2, 2)), [[1.0, np.inf], [0.0, 1.0]])
    with pytest.raises(ValueError, match="binary mask"):
        metric([[2, 0], [1, 1]], np.ones((2, 2)))


def test_control_flow_selection_rate_validation():
    with pytest.raises(ValueError, match="2D"):
        control_flow_selection_rate(np.ones(11))
    with pytest.raises(ValueError, match="NaN"):
        control_flow_selection_rate(np.full((2, 11), np.nan))


class _FixedColumns(TransformerMixin, BaseEstimator):
    """Selects the same columns in every row."""

    def __init__(self, columns=(0, 1)):
        self.columns = columns

    def fit(self, X, y=None):
        self.n_features_in_ = np.asarray(X).shape[1]
        return self

    def transform(self, X):
        masks = np.zeros(np.asarray(X).shape)
        masks[:, list(self.columns)] = 1.0
        return masks


def test_scorers_call_transform():
    X, _, relevant = make_control_flow(400, setting="S1", random_state=0)
    explainer = _FixedColumns(columns=(0, 1, 10)).fit(X)
    masks = explainer.transform(X)
    low = X[:, 10] < 0
    # Rows with x10 < 0 are explained perfectly (TPR 1); the others share only x10 with
    # their truth {2, 3, 4, 5, 10} (TPR 1/5, FDR 2/3).
    expected_tpr = low.mean() + 0.2 * (~low).mean()
    expected_fdr = (2 / 3) * (~low).mean()
    assert tpr_scorer(explainer, X, relevant) == pytest.approx(expected_tpr, abs=1e-6)
    assert fdr_scorer(explainer, X, relevant) == pytest.approx(-expected_fdr, abs=1e-6)
    assert median_rank_scorer(explainer, X, relevant) == -median_rank(relevant, masks)
    assert "greater_is_better=False" in repr(fdr_scorer)
    with pytest.raises(ValueError, match="ground-truth mask"):
        tpr_scorer(explainer, X, None)


def test_scorers_in_model_selection():
    X, _, relevant = make_control_flow(300, setting="S1", random_state=0)
    search = GridSearchCV(
        _FixedColumns(),
        {"columns": [(0, 1, 10), (2, 3, 4, 5, 10), (6, 7)]},
        scoring=tpr_scorer,
        cv=3,
    ).fit(X, relevant)
    assert search.best_params_["columns"] in [(0, 1, 10), (2, 3, 4, 5, 10)]
    fdr = cross_val_score(_FixedColumns((6, 7)), X, relevant, scoring=fdr_scorer, cv=3)
    assert fdr == pytest.approx(-np.ones(3), abs=1e-6)
