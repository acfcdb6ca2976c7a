"""Every row known to hold: the per-row check, the repair of the rows that fail it, and
the background rows that judge masks in distribution."""

import copy
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_diabetes
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.model_selection import GridSearchCV

import sk_sointer
from sk_sointer import HardKumaExplainer, L2XExplainer, RowRepair
from sk_sointer._masking import Masker
from sk_sointer._outputs import output_agreement, spec_of
from sk_sointer._model_judge import MaskedValue, row_check


def _switch_proba(X):
    """Class of sign(x0) where x2 > 0, else of sign(x1)."""
    X = np.asarray(X, dtype=np.float64)
    logit = np.where(X[:, 2] > 0, 4 * X[:, 0], 4 * X[:, 1])
    p = 1 / (1 + np.exp(-logit))
    return np.column_stack([1 - p, p]).astype(np.float32)


class _Counting:
    """A black box (a function) that counts the rows it is asked about."""

    def __init__(self, function):
        self.function = function
        self.rows = 0

    def __call__(self, X):
        self.rows += len(X)
        return self.function(X)


@pytest.fixture(scope="module")
def switch():
    X = np.random.RandomState(0).randn(300, 6).astype(np.float32)
    return X, _switch_proba


@pytest.fixture(scope="module")
def weak(switch):
    """An L2X trained too briefly to explain the switch, without refinement."""
    X, model = switch
    return L2XExplainer(k=2, max_epochs=1, batch_size=64, refine=None,
                        random_state=0).fit(X, black_box=model)


# row_check ------------------------------------------------------------------------------



def _by_answer(holds, outputs):
    """The mean over the answers (the argmax of ``outputs``) of the share of their rows
    that hold: what ``score`` reports."""
    answers = np.asarray(outputs).argmax(axis=1)
    return np.mean([holds[answers == a].mean() for a in np.unique(answers)])

def test_row_check_reads_each_kind_of_output():
    spec = spec_of(("categorical", "bernoulli", "real"), (3, 1, 1)).fitted(
        np.array([[1, 0, 0, 0.2, 0.0], [0, 1, 0, 0.9, 4.0]]))  # real spread: 2
    full = np.array([[0.7, 0.2, 0.1, 0.8, 1.0],
                     [0.1, 0.8, 0.1, 0.8, 1.0],
                     [0.1, 0.8, 0.1, 0.8, 1.0]])
    masked = np.array([[0.6, 0.3, 0.1, 0.9, 1.1],    # all kept, value moved 0.05 spreads
                       [0.5, 0.4, 0.1, 0.7, 1.0],    # class lost
                       [0.1, 0.8, 0.1, 0.8, 2.0]])   # value moved 0.5 spreads
    check = row_check(full, masked, spec, tol=0.1)
    np.testing.assert_array_equal(check.holds, [True, False, False])
    np.testing.assert_allclose(check.proba_kept, [0.6, 0.4, 0.8])  # lowest over outputs
    np.testing.assert_allclose(check.change, [0.05, 0.0, 0.5])
    # Judged on one output alone (the target), the value's move does not count.
    target = row_check(full, masked, spec.select(0), tol=0.1)
    np.testing.assert_array_equal(target.holds, [True, False, True])
    assert np.isnan(target.change).all()


def test_check_agrees_with_score_and_costs_two_queries_a_row(switch, weak):
    X, _ = switch
    counting = _Counting(_switch_proba)
    explainer = clone(weak).set_params(max_epochs=1).fit(X, black_box=counting)
    counting.rows = 0
    check = explainer.check(X)
    assert counting.rows == check.n_queries == 2 * len(X)
    assert _by_answer(check.holds, _switch_proba(X)) == pytest.approx(explainer.score(X))
    # The outputs it judged come back: the model's on the rows, and on the masked rows
    # (the left-out features at the baseline), in the columns of output_spec_.
    np.testing.assert_allclose(check.outputs, _switch_proba(X), rtol=1e-6)
    masks = explainer.transform(X)
    masked_rows = np.where(masks > 0, X, explainer.masker_.baseline_)
    np.testing.assert_allclose(check.masked_outputs, _switch_proba(masked_rows), rtol=1e-6)
    # Masks given explicitly: all features kept always holds, with the full probability.
    check = explainer.check(X, np.ones_like(X))
    assert check.holds.all()
    np.testing.assert_allclose(check.proba_kept, _switch_proba(X).max(axis=1), rtol=1e-6)


# Repair ----------------------------------------------------------------------------------


def test_repair_makes_failing_rows_hold_and_counts_its_queries(switch, weak):
    X, _ = switch
    before = weak.check(X).holds
    assert before.mean() < 0.9  # the weak selector fails on many rows
    counting = _Counting(_switch_proba)
    explainer = copy.deepcopy(weak).set_params(repair="model")  # the same fitted selector
    explainer.black_box_ = sk_sointer.as_black_box(counting)
    report = explainer.repair_masks(X)
    masks = report.masks
    np.testing.assert_array_equal(masks.sum(axis=1), 2)
    assert report.n_failed == int((~before).sum())
    assert report.n_queries == counting.rows
    # On the switch two features always suffice: nearly every failing row is repaired.
    assert report.n_repaired >= 0.95 * report.n_failed
    np.testing.assert_array_equal(explainer.check(X, masks).holds, report.holds)
    assert explainer.score(X) >= 0.98
    # Rows that held keep the selector's mask; transform gives the same masks, and sets no
    # attribute.
    np.testing.assert_array_equal(masks[before], weak.transform(X)[before])
    state = dict(vars(explainer))
    np.testing.assert_array_equal(explainer.transform(X), masks)
    assert vars(explainer).keys() == state.keys()


def test_repair_masks_repairs_with_the_default_settings_when_repair_is_off(switch, weak):
    X, _ = switch
    assert weak.repair is None
    report = weak.repair_masks(X)
    repaired = copy.deepcopy(weak).set_params(repair="model")
    np.testing.assert_array_equal(report.masks, repaired.transform(X))
    assert report.n_repaired > 0 and report.holds.mean() > weak.check(X).holds.mean()


def test_repair_budget_bounds_the_search(switch, weak):
    X, _ = switch
    explainer = copy.deepcopy(weak).set_params(repair=RowRepair(max_queries=0))
    report = explainer.repair_masks(X)
    np.testing.assert_array_equal(report.masks, weak.transform(X))
    assert report.n_queries == 2 * len(X)  # the check alone
    assert report.n_repaired == 0
    # One round (2 groups taken out in turn, the 4 others put in) a failing row at most.
    explainer.repair = RowRepair(max_queries=6)
    report = explainer.repair_masks(X)
    assert report.n_queries == 2 * len(X) + 6 * report.n_failed



def test_the_repair_report_prints_its_counts_and_a_repairing_explainer_saves(switch, weak,
                                                                               tmp_path):
    X, _ = switch
    explainer = copy.deepcopy(weak).set_params(repair="model")
    report = explainer.repair_masks(X)
    text = repr(report)
    # The counts, and how many rows hold and the masks' shape rather than every row's.
    assert f"n_failed={report.n_failed}, n_repaired={report.n_repaired}" in text
    assert f"holds=<{len(X)} rows, {int(report.holds.sum())} hold>" in text
    assert f"masks=<{len(X)} x {X.shape[1]}>" in text
    assert "True" not in text and len(text) < 220
    # Saved and loaded (or pickled), the explainer repairs as before.
    path = tmp_path / "repaired.skx"
    sk_sointer.save(explainer, path)
    loaded = sk_sointer.load(path, black_box=_switch_proba)
    np.testing.assert_array_equal(loaded.transform(X), report.masks)
    assert repr(loaded.repair_masks(X)) == text
    assert repr(pickle.loads(pickle.dumps(explainer)).repair_masks(X)) == text

@pytest.mark.parametrize("seed", [0, 1])
def test_repair_without_k_adds_groups_until_the_answer_holds(switch, seed):
    X, model = switch
    # A budget that pays for additions from one group up to all six (5 + 4 + ... + 1
    # queries): every row can then grow until its answer holds. The default (n_groups a
    # row) pays for about one addition.
    explainer = HardKumaExplainer(k=None, max_epochs=2, predictor_epochs=1, batch_size=64,
                                  repair=RowRepair(max_queries=15),
                                  random_state=seed).fit(X, black_box=model)
    report = explainer.repair_masks(X)
    masks = report.masks
    assert masks.sum(axis=1).min() >= 1 and report.n_failed > 0
    assert explainer.check(X, masks).holds.mean() >= report.holds.mean()
    assert report.holds.all()  # with every feature, the answer is kept
    # Rows that held keep the selector's mask; the others only grew.
    plain = clone(explainer).set_params(repair=None).fit(X, black_box=model).transform(X)
    held = explainer.check(X, plain).holds
    np.testing.assert_array_equal(masks[held], plain[held])
    assert (masks >= plain).all() and (masks.sum(axis=1) > plain.sum(axis=1))[~held].all()


def test_repaired_regression_masks_get_near_the_greedy_search():
    X, y = load_diabetes(return_X_y=True, scaled=False)
    model = GradientBoostingRegressor(n_estimators=30, random_state=0).fit(X[:300], y[:300])
    explainer = L2XExplainer(k=3, max_epochs=3, batch_size=64, refine=None,
                             random_state=0).fit(X[:300], black_box=model)
    X_test = X[300:]
    plain = explainer.score(X_test)
    explainer.set_params(repair="model")
    repaired = explainer.score(X_test)
    from sk_sointer._model_judge import greedy_subsets
    greedy = greedy_subsets(explainer.black_box_.predict, X_test, explainer.masker_,
                            explainer.output_spec_, 3)
    predict = explainer.black_box_.predict
    oracle = output_agreement(predict(X_test), predict(explainer.masker_.mask_raw(
        X_test, greedy)), explainer.output_spec_)
    assert repaired > plain + 0.05
    assert repaired >= oracle - 0.03
    assert explainer.repair_masks(X_test).queries_per_row < 3 * 10  # the greedy's 1 + 27


# Background rows -------------------------------------------------------------------------


def test_background_value_averages_the_model_over_background_rows():
    X = np.random.RandomState(1).randn(50, 3)
    masker = Masker().fit(X)
    background = X[:4]
    counting = _Counting(lambda rows: np.c_[rows.sum(axis=1)].astype(np.float32))
    value = MaskedValue(sk_sointer.as_black_box(counting).predict, masker, background)
    masks = np.array([[1, 0, 0], [0, 1, 1]])
    out = value.masked(X[10:12], masks)
    expected = [X[10, 0] + background[:, 1:].sum(axis=1).mean(),
                X[11, 1:].sum() + background[:, 0].mean()]
    np.testing.assert_allclose(out[:, 0], expected, rtol=1e-5)
    assert value.n_queries == counting.rows == 2 * 4


def test_background_reaches_score_check_and_repair(switch):
    X, model = switch
    explainer = L2XExplainer(k=2, max_epochs=1, batch_size=64, refine=None, background=8,
                             random_state=0).fit(X, black_box=model)
    assert explainer.background_.shape == (8, 6)
    # The background rows are training rows, drawn with random_state.
    assert all((row == X).all(axis=1).any() for row in explainer.background_)
    again = clone(explainer).fit(X, black_box=model)
    np.testing.assert_array_equal(again.background_, explainer.background_)
    check = explainer.check(X)
    assert check.n_queries == len(X) * (1 + 8)
    assert _by_answer(check.holds, explainer._masked_value().full(X)) == pytest.approx(
        explainer.score(X))
    explainer.set_params(repair="model")
    assert explainer.repair_masks(X).n_repaired > 0
    # Rows given as the background.
    given = clone(explainer).set_params(background=X[:3]).fit(X, black_box=model)
    np.testing.assert_array_equal(given.background_, X[:3])


@pytest.mark.parametrize("params, message", [
    ({"repair": "model"}, "repair=...) checks and repairs masks with the model"),
    ({"background": 10}, "background=...) fills left-out features"),
])
def test_repair_and_background_need_the_model(switch, params, message):
    X, model = switch
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        L2XExplainer(k=2, max_epochs=1, **params).fit(X, model(X).argmax(axis=1))


@pytest.mark.parametrize("background, message", [
    (np.zeros((3, 5)), r"rows of 6 features; got an array of shape \(3, 5\)"),
    (np.full((2, 6), np.nan), "background contains NaN"),
    ("rows", "background' parameter"),
    (0, "background' parameter"),
])
def test_bad_background_is_named(switch, background, message):
    X, model = switch
    with pytest.raises(ValueError, match=message):
        L2XExplainer(k=2, max_epochs=1, background=background).fit(X, black_box=model)


def test_bad_repair_settings_are_named(switch, weak):
    X, _ = switch
    explainer = copy.deepcopy(weak).set_params(repair=RowRepair(tol=-1))
    with pytest.raises(ValueError, match="'tol' parameter of RowRepair"):
        explainer.transform(X)
    explainer.repair = "model"
    explainer.black_box_ = None
    with pytest.raises(ValueError, match="holds no black box"):
        explainer.transform(X)


def test_repairing_explainer_pickles_and_searches(switch):
    X, model = switch
    explainer = L2XExplainer(k=2, max_epochs=1, batch_size=64, refine=None,
                             repair=RowRepair(max_queries=12), random_state=0)
    search = GridSearchCV(explainer, {"k": [1, 2]}, cv=2).fit(X, black_box=model)
    assert search.best_params_ == {"k": 2}
    fitted = search.best_estimator_
    copy = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(copy.transform(X), fitted.transform(X))


def test_background_reaches_the_refinement_within_its_budget(switch):
    X, model = switch
    counting = _Counting(_switch_proba)
    refine = sk_sointer.ModelRefinement(max_queries=20_000, max_epochs=2)
    explainer = L2XExplainer(k=2, max_epochs=2, batch_size=64, refine=refine, background=5,
                             random_state=0).fit(X, black_box=counting)
    assert 0 < explainer.n_model_queries_ <= 20_000
    # Every masked row of the refinement costs the 5 background rows.
    assert explainer.n_model_queries_ % 5 == 0
    assert len(explainer.refinement_fidelity_) >= 2


def test_every_explainer_repairs_through_transform(switch):
    X, model = switch
    from sklearn.multioutput import MultiOutputClassifier
    from sklearn.linear_model import LogisticRegression
    two_outputs = MultiOutputClassifier(LogisticRegression()).fit(
        X, np.c_[model(X).argmax(axis=1), X[:, 3] > 0].astype(int))
    for explainer in [
        sk_sointer.MEEDExplainer(k=2, max_epochs=1, batch_size=64, refine=None),
        sk_sointer.RealXExplainer(k=2, max_epochs=2, predictor_epochs=1, batch_size=64,
                                  refine=None),
        sk_sointer.SOInterExplainer(k=2, max_epochs=1, batch_size=64, refine=None,
                                    energy=sk_sointer.EnergyNet(max_epochs=1), energy_masks=1),
    ]:
        black_box = two_outputs if explainer._requires_model else model
        explainer.set_params(random_state=0).fit(X, black_box=black_box)
        plain = explainer.score(X)
        explainer.set_params(repair="model")
        masks = explainer.transform(X)
        np.testing.assert_array_equal(masks.sum(axis=1), 2)
        assert explainer.score(X) >= plain
        assert explainer.repair_masks(X).n_failed == round((1 - plain) * len(X))


def test_evaluate_reports_the_rows_that_hold(switch, weak):
    from sk_sointer.metrics import evaluate

    X, _ = switch
    report = evaluate(weak, X=X, entries=["rows_holding", "fidelity_kept"])
    np.testing.assert_array_equal(report.row_holds, weak.check(X).holds)
    assert report.rows_holding == pytest.approx(report.fidelity_kept)
    # Raw masks are checked at the baseline given.
    masks = weak.transform(X)
    raw = evaluate(masks, _switch_proba, X, baseline=weak.masker_.baseline_,
                   entries=["rows_holding"])
    np.testing.assert_array_equal(raw.row_holds, report.row_holds)


def test_the_greedy_search_asks_about_the_groups_left_only(switch):
    from sk_sointer._model_judge import greedy_subsets

    X, _ = switch
    counting = _Counting(_switch_proba)
    masker = Masker().fit(X)
    chosen = greedy_subsets(counting, X[:50], masker, spec_of(("categorical",), (2,)), 3,
                            full=_switch_proba(X[:50]))
    assert counting.rows == 50 * (6 + 5 + 4)
    np.testing.assert_array_equal(chosen.sum(axis=1), 3)
    # The switch's own features: x2 decides, then the feature it picks.
    assert chosen[:, 2].mean() > 0.9


def test_mask_display_marks_the_rows_that_hold(switch, weak):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from sk_sointer.display import MaskDisplay

    X, _ = switch
    display = MaskDisplay.from_explainer(weak, X, check=True, max_rows=12)
    holds = weak.check(X[:12]).holds
    np.testing.assert_array_equal(display.holds, holds)
    ticks = display.ax_.get_yticklabels()
    assert [tick.get_text().endswith("✓") for tick in ticks] == holds.tolist()
    assert {tick.get_color() for tick, held in zip(ticks, holds) if not held} == {"tab:red"}
    with pytest.raises(ValueError, match="one bool per row"):
        MaskDisplay.from_masks(np.ones((3, 2)), holds=[True])
