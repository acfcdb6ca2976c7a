"""evaluate: one report of an explanation, each entry checked against a hand computation on a
tiny case; its options and the model it is given checked, each refusal in one line; its
report on one or two rows and as a printed table; and break_even_rows."""

import numpy as np
import pytest
import torch
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV

import sk_sointer
from sk_sointer import L2XExplainer, as_black_box
from sk_sointer.datasets import make_orange_skin
from sk_sointer.metrics import (
    posthoc_accuracy,
    ENTRIES,
    EvalXEvaluator,
    evaluate,
    evaluation_scorer,
    mask_similarity,
    relative_input_stability,
)
from sk_sointer.metrics._evaluate import _Gaussian

torch.set_num_threads(1)

# The model answers the side of x0: feature 0 decides, feature 1 does nothing. At the zero
# baseline x0 = 0 gives p = 0.5, which counts as the negative answer.
SIGN = as_black_box(lambda rows: 1 / (1 + np.exp(-10 * rows[:, 0])), output="proba")
X = np.array([[1.0, 5.0], [-1.0, 5.0], [2.0, -3.0], [-2.0, -3.0]])
KEEP_X0 = np.tile([1.0, 0.0], (4, 1))
KEEP_X1 = np.tile([0.0, 1.0], (4, 1))


def test_fidelity_kept_and_removed_by_hand():
    # Keeping x0: every answer stays. Removing it: the two positive rows flip to negative.
    report = evaluate(KEEP_X0, SIGN, X, baseline="zero",
                      entries=["fidelity_kept", "fidelity_removed"])
    assert (report.fidelity_kept, report.fidelity_removed) == (1.0, 0.5)
    report = evaluate(KEEP_X1, SIGN, X, baseline="zero",
                      entries=["fidelity_kept", "fidelity_removed"])
    assert (report.fidelity_kept, report.fidelity_removed) == (0.5, 1.0)


def test_insertion_and_deletion_curves_and_areas_by_hand():
    scores = np.tile([2.0, 1.0], (4, 1))  # x0 first
    report = evaluate(KEEP_X0, SIGN, X, baseline="zero", scores=scores,
                      entries=["insertion_auc", "deletion_auc"])
    np.testing.assert_array_equal(report.fraction, [0.0, 0.5, 1.0])
    # Insertion: nothing kept (all negative: half agree), x0 kept, both kept.
    np.testing.assert_array_equal(report.insertion, [0.5, 1.0, 1.0])
    # Deletion: nothing removed, x0 removed, both removed.
    np.testing.assert_array_equal(report.deletion, [1.0, 0.5, 0.5])
    assert report.insertion_auc == pytest.approx(0.5 * (0.5 + 1.0) / 2 + 0.5 * (1.0 + 1.0) / 2)
    assert report.deletion_auc == pytest.approx(0.5 * (1.0 + 0.5) / 2 + 0.5 * (0.5 + 0.5) / 2)
    # The reverse ranking is worse on both curves.
    worse = evaluate(KEEP_X1, SIGN, X, baseline="zero", scores=scores[:, ::-1],
                     entries=["insertion_auc", "deletion_auc"])
    assert worse.insertion_auc < report.insertion_auc
    assert worse.deletion_auc > report.deletion_auc


def test_road_imputes_left_out_features_from_the_kept_ones():
    rng = np.random.RandomState(0)
    x0 = rng.randn(400)
    reference = np.c_[x0, 2 * x0 + 0.01 * rng.randn(400)]
    gaussian = _Gaussian(reference)
    kept = np.tile([False, True], (400, 1))
    imputed = gaussian.impute(reference, kept, np.random.RandomState(1))
    np.testing.assert_array_equal(imputed[:, 1], reference[:, 1])  # kept: untouched
    # The conditional mean is x1 / 2 (up to the noise of 0.01 / 2), its noise that small.
    np.testing.assert_allclose(imputed[:, 0], reference[:, 1] / 2, atol=0.03)
    # Nothing kept: draws from the marginal, with its mean and spread.
    marginal = gaussian.impute(reference, ~np.ones_like(kept), np.random.RandomState(2))
    assert abs(marginal[:, 0].mean()) < 0.15 and 0.8 < marginal[:, 0].std() < 1.2
    # Through evaluate: keeping x1 alone loses the answer at the baseline but keeps it once
    # x0 is imputed from x1 (the signs agree).
    report = evaluate(np.tile([0.0, 1.0], (400, 1)), SIGN, reference, baseline="zero",
                      entries=["fidelity_kept", "road_kept", "road_removed"])
    assert report.fidelity_kept == pytest.approx(np.mean(x0 <= 0), abs=0.01)
    assert report.road_kept > 0.97
    # Removing x1 and keeping x0 keeps every answer either way.
    assert report.road_removed == 1.0


def test_relative_input_stability_by_hand():
    X = np.array([[1.0, 2.0]])
    moved = np.array([[1.1, 2.0]])
    scores = np.array([[0.5, 0.25]])
    moved_scores = np.array([[0.5, 0.5]])
    # Explanation: ||(0, -0.25) / (0.5, 0.25)|| = 1; input: ||(-0.1, 0) / (1, 2)|| = 0.1.
    np.testing.assert_allclose(relative_input_stability(X, moved, scores, moved_scores), [10.0])
    # No input change: eps_min in place of the zero keeps the ratio finite.
    assert relative_input_stability(X, X, scores, scores)[0] == 0.0


def test_sparsity_counts_features_per_row():
    masks = np.array([[1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=float)
    rows = np.random.RandomState(0).randn(3, 3)
    model = as_black_box(lambda r: 1 / (1 + np.exp(-r[:, 0])), output="proba")
    report = evaluate(masks, model, rows, baseline="mean",
                      entries=["features_per_row", "features_per_row_std"])
    assert report.features_per_row == 2.0
    assert report.features_per_row_std == pytest.approx(np.sqrt(2 / 3))


@pytest.fixture(scope="module")
def orange():
    X, y, _ = make_orange_skin(n_samples=800, random_state=0)
    model = LogisticRegression().fit(X, y)
    explainer = L2XExplainer(k=4, max_epochs=3, batch_size=100, random_state=0,
                             device="cpu").fit(X[:600], model)
    return X, model, explainer


def test_an_explainer_brings_its_masks_baseline_scores_and_model(orange):
    X, model, explainer = orange
    rows = X[600:]
    report = evaluate(explainer, X=rows, entries=["fidelity_kept", "insertion_auc"])
    # the same baseline, the same model (score weighs each answer alike; evaluate's
    # fidelity is the share of all rows)
    assert report.fidelity_kept == posthoc_accuracy(model, rows, explainer)
    by_hand = evaluate(explainer.transform(rows), model, rows,
                       baseline=explainer.masker_.baseline_, scores=explainer.explain(rows),
                       entries=["fidelity_kept", "insertion_auc"])
    assert by_hand.fidelity_kept == report.fidelity_kept
    np.testing.assert_array_equal(by_hand.insertion, report.insertion)
    with pytest.raises(ValueError, match="own baseline"):
        evaluate(explainer, X=rows, baseline="zero")
    with pytest.raises(ValueError, match="needs the baseline"):
        evaluate(explainer.transform(rows), model, rows)
    with pytest.raises(ValueError, match="Unknown entries"):
        evaluate(explainer, X=rows, entries=["accuracy"])


def test_seed_agreement_is_one_for_the_same_seed_and_the_mask_cosine_otherwise(orange):
    X, model, explainer = orange
    rows, fit_rows = X[600:], X[:600]
    same = evaluate(explainer, X=rows, entries=["seed_agreement"], refit_seeds=[0],
                    X_fit=fit_rows)
    assert same.seed_agreement == 1.0
    other = evaluate(explainer, X=rows, entries=["seed_agreement"], refit_seeds=[1],
                     X_fit=fit_rows)
    refit = L2XExplainer(k=4, max_epochs=3, batch_size=100, random_state=1,
                         device="cpu").fit(fit_rows, model)
    assert other.seed_agreement == mask_similarity(explainer.transform(rows),
                                                   refit.transform(rows))
    assert "seed_agreement" in evaluate(explainer, X=rows, entries=["seed_agreement"]).notes


def test_stability_under_perturbation_is_zero_without_noise_and_grows_with_it(orange):
    X, _, explainer = orange
    rows = X[600:700]
    still = evaluate(explainer, X=rows, entries=["mask_change", "relative_input_stability"],
                     noise=0.0, n_perturbations=2)
    assert (still.mask_change, still.relative_input_stability) == (0.0, 0.0)
    moved = evaluate(explainer, X=rows, entries=["mask_change"], noise=1.0, n_perturbations=3)
    assert 0.0 < moved.mask_change <= 1.0


def test_cost_and_break_even_rows(orange):
    X, _, explainer = orange
    report = evaluate(explainer, X=X[600:], entries=["us_per_row", "fit_s", "break_even_rows"],
                      fit_seconds=2.0, peer_ms_per_row=10.0)
    assert report.us_per_row > 0 and report.fit_s == 2.0
    assert report.break_even_rows == pytest.approx(2.0 / (0.01 - report.us_per_row * 1e-6))


def test_eacc_is_the_evaluators(orange):
    X, model, explainer = orange
    evaluator = EvalXEvaluator(max_epochs=2, batch_size=100, random_state=0,
                               device="cpu").fit(X[:600], model)
    rows = X[600:]
    report = evaluate(explainer, X=rows, entries=["eacc"], evaluator=evaluator)
    assert report.eacc == evaluator.score_masks(rows, explainer.transform(rows))["eACC"]


def test_every_entry_is_reported_or_explained(orange):
    X, _, explainer = orange
    report = evaluate(explainer, X=X[600:650], n_perturbations=2)
    assert set(ENTRIES) <= set(report) | set(report.notes)
    assert set(report.notes) == {"eacc", "seed_agreement", "break_even_rows"}
    assert report.fit_s == explainer.fit_time_  # every explainer records its fit time


def test_an_entry_as_a_grid_search_scorer(orange):
    X, model, explainer = orange
    search = GridSearchCV(L2XExplainer(max_epochs=2, batch_size=100, random_state=0,
                                       device="cpu"),
                          {"k": [1, 4]}, scoring=evaluation_scorer("fidelity_kept"),
                          cv=2).fit(X[:400], black_box=as_black_box(model))
    assert search.best_params_ == {"k": 4}  # orange skin's four features keep the answer
    # Where lower is better, the scorer gives minus the entry.
    rows = X[600:]
    removed = evaluate(explainer, X=rows, entries=["fidelity_removed"]).fidelity_removed
    assert evaluation_scorer("fidelity_removed")(explainer, rows) == -removed


def test_relative_input_stability_is_quantus_objective():
    quantus = pytest.importorskip(
        "quantus", reason="Quantus is in the bench extra only: it pulls in OpenCV")
    rng = np.random.RandomState(0)
    X = rng.randn(20, 5)
    X[0, 1] = 0.0  # zeros take eps_min in both
    moved = X + 0.1 * rng.randn(20, 5)
    scores, moved_scores = rng.randn(20, 5), rng.randn(20, 5)
    scores[3, 2] = 0.0
    metric = quantus.RelativeInputStability(nr_samples=1, disable_warnings=True)
    expected = metric.relative_input_stability_objective(X.copy(), moved.copy(), scores,
                                                         moved_scores)
    np.testing.assert_allclose(relative_input_stability(X, moved, scores, moved_scores),
                               expected)


def test_rows_holding_by_answer_splits_the_rows_by_the_models_class():
    """A rare answer shows: at the mean fill the common answer holds on every row and the
    rare one on a few. Counted by hand per class the model answers, with its own labels."""
    rng = np.random.RandomState(0)
    rows = rng.randn(200, 3)
    labels = np.where(rows[:, 0] + rows[:, 1] > 1.6, "rare", "common")
    model = LogisticRegression().fit(rows, labels)
    masks = np.tile([1.0, 0.0, 0.0], (200, 1))
    report = evaluate(masks, model, rows, baseline="mean", entries=["rows_holding"])
    answer = model.predict(rows)
    masked = model.predict(np.where(masks > 0, rows, rows.mean(axis=0)))
    expected = {label: np.mean(masked[answer == label] == label) for label in ("common", "rare")}
    assert report.rows_holding_by_answer == pytest.approx(expected)
    assert expected["common"] > 0.95 > 0.6 > expected["rare"]
    assert "rows_holding_by_answer  {'common': " in repr(report)
    regression = evaluate(masks, lambda r: r[:, 0] * 2.0, rows, baseline="mean",
                          entries=["rows_holding"])
    assert "rows_holding" in regression and "rows_holding_by_answer" not in regression


def test_a_frame_is_perturbed_as_a_frame(orange):
    """mask_change and relative_input_stability moved a DataFrame's rows as arrays: the
    explainer, fitted with feature names, warned three times that X had none."""
    import warnings

    pd = pytest.importorskip("pandas")
    X = pd.DataFrame(orange[0][:300], columns=[f"f{i}" for i in range(orange[0].shape[1])])
    model = LogisticRegression().fit(X, orange[1].predict(orange[0][:300]))
    explainer = L2XExplainer(k=4, max_epochs=2, refine=None, random_state=0).fit(X, model)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        report = evaluate(explainer, X=X[:50], entries=["mask_change",
                                                        "relative_input_stability"],
                          n_perturbations=2)
    assert 0 <= report.mask_change <= 1 and np.isfinite(report.relative_input_stability)


@pytest.fixture(scope="module")
def evaluated():
    from sklearn.linear_model import LogisticRegression

    X = np.random.RandomState(1).randn(120, 4).astype(np.float32)
    model = LogisticRegression().fit(X, X[:, 0] > 0)
    explainer = sk_sointer.L2XExplainer(k=2, max_epochs=1, random_state=0,
                                        refine=None).fit(X, black_box=model)
    return X, model, explainer


@pytest.mark.parametrize("kwargs, error, message", [
    ({"n_perturbations": 0}, ValueError, "n_perturbations should be an integer > 0"),
    ({"n_perturbations": 2.5}, ValueError, "n_perturbations should be an integer"),
    ({"noise": -0.1}, ValueError, "noise should be a finite number >= 0"),
    ({"noise": np.inf}, ValueError, "noise should be a finite number >= 0"),
    ({"peer_ms_per_row": np.nan}, ValueError, "peer_ms_per_row should be a finite number"),
    ({"peer_ms_per_row": -3.0}, ValueError, "peer_ms_per_row should be a finite number"),
    ({"fit_seconds": -1.0}, ValueError, "fit_seconds should be a finite number >= 0"),
    ({"refit_seeds": "01"}, ValueError, "refit_seeds should be integers"),
    ({"scores": np.full((120, 4), np.nan)}, ValueError, "scores should be finite"),
    ({"scores": np.ones((120, 3))}, ValueError, r"scores should have the shape of X \(120, 4\)"),
    ({"X_reference": np.ones((10, 3))}, ValueError, r"X_reference should have the width of X"),
    ({"X_reference": np.ones((1, 4))}, ValueError, "X_reference should have 2 rows at least"),
    ({"evaluator": sk_sointer.EvalXEvaluator}, TypeError, "not the class EvalXEvaluator"),
    ({"evaluator": object()}, TypeError, "evaluator should be a fitted EvalXEvaluator"),
])
def test_evaluate_refuses_bad_options_in_one_line(evaluated, kwargs, error, message):
    X, model, explainer = evaluated
    for explanation, options in ((explainer, {}),
                                 (explainer.transform(X), {"baseline": "mean", "model": model})):
        with pytest.raises(error, match=message) as info:
            sk_sointer.metrics.evaluate(explanation, X=X, **options, **kwargs)
        assert "\n" not in str(info.value)


@pytest.mark.parametrize("fit_seconds, us_per_row, peer_ms_per_row, expected", [
    (30.0, 2.0, 12.0, pytest.approx(2500.4, abs=0.1)),
    (0.0, 2.0, 12.0, 0.0),
    (30.0, 20_000.0, 12.0, np.inf),  # not cheaper a row: never pays off
    (-30.0, 2.0, 12.0, ValueError), (30.0, np.nan, 12.0, ValueError),
    (30.0, 2.0, np.nan, ValueError), (np.inf, 2.0, 12.0, ValueError),
    (30.0, 2.0, 0.0, ValueError), (30.0, -2.0, 12.0, ValueError),
])
def test_break_even_rows_values_and_refusals(fit_seconds, us_per_row, peer_ms_per_row,
                                             expected):
    compute = lambda: sk_sointer.metrics.break_even_rows(  # noqa: E731
        fit_seconds, us_per_row, peer_ms_per_row)
    if expected is ValueError:
        with pytest.raises(ValueError, match="should be a finite number"):
            compute()
    else:
        assert compute() == expected


@pytest.mark.parametrize("rows", [slice(0, 1), slice(0, 2)])
def test_evaluate_on_one_or_two_rows_reports_or_says_why_not(evaluated, rows):
    X, model, explainer = evaluated
    report = sk_sointer.metrics.evaluate(explainer, X=X[rows], peer_ms_per_row=12.0)
    assert report.fidelity_kept in (0.0, 0.5, 1.0)
    assert report.features_per_row == 2.0 and report.fit_s == explainer.fit_time_
    assert np.isfinite(report.break_even_rows)
    if X[rows].shape[0] == 1:
        assert "2 rows" in report.notes["road_kept"] and "2 rows" in report.notes["mask_change"]
        assert "road_kept" not in report and "mask_change" not in report
        with_reference = sk_sointer.metrics.evaluate(explainer, X=X[rows], X_reference=X,
                                                     entries=["road_kept", "road_removed"])
        assert set(with_reference) == {"notes", "road_kept", "road_removed"}
    else:
        assert 0.0 <= report.mask_change <= 1.0 and np.isfinite(report.road_kept)


def test_evaluate_takes_the_model_first_too_and_refuses_a_model_alone(evaluated):
    X, model, explainer = evaluated
    entries = ["fidelity_kept", "fidelity_removed", "features_per_row"]
    expected = sk_sointer.metrics.evaluate(explainer, model, X, entries=entries)
    swapped = sk_sointer.metrics.evaluate(model, explainer, X, entries=entries)
    assert dict(swapped) == dict(expected)
    masks = explainer.transform(X)
    raw = sk_sointer.metrics.evaluate(model, masks, X, baseline=explainer.masker_.baseline_,
                                      entries=entries)
    assert raw.fidelity_kept == expected.fidelity_kept
    with pytest.raises(TypeError, match="should be a fitted explainer or 0/1 masks"):
        sk_sointer.metrics.evaluate(model, X=X)
    with pytest.raises(NotFittedError):
        sk_sointer.metrics.evaluate(sk_sointer.L2XExplainer(), model, X)


def test_evaluate_refuses_a_model_without_the_explained_output(evaluated):
    from sklearn.linear_model import LogisticRegression
    from sklearn.multioutput import MultiOutputClassifier

    X, model, _ = evaluated
    labels = np.column_stack([X[:, 0] > 0, X[:, 1] > 0, X[:, 2] > 0])
    multi = MultiOutputClassifier(LogisticRegression()).fit(X, labels)
    soi = sk_sointer.SOInterExplainer(k=2, target=2, max_epochs=1,
                                      refine=None, random_state=0).fit(X, black_box=multi)
    with pytest.raises(ValueError, match="explains output 2 of its model, but the model given "
                                         "has 1 output"):
        sk_sointer.metrics.evaluate(soi, model, X, entries=["fidelity_kept"])
    assert 0.0 <= sk_sointer.metrics.evaluate(soi, X=X, entries=["fidelity_kept"]).fidelity_kept


def test_evaluate_report_prints_as_a_table_and_stays_a_bunch(evaluated):
    from sklearn.utils import Bunch

    X, _, explainer = evaluated
    report = sk_sointer.metrics.evaluate(
        explainer, X=X, entries=["fidelity_kept", "insertion_auc", "eacc", "fit_s"])
    assert isinstance(report, Bunch) and report["fit_s"] == report.fit_s
    text = str(report)
    assert text == repr(report)
    lines = text.splitlines()
    assert lines[0] == "evaluate report"
    assert any(line.split() == ["fidelity_kept", f"{report.fidelity_kept:.4g}"]
               for line in lines)
    assert any(line.split()[0] == "fraction" and line.split()[1].startswith("[")
               for line in lines)
    assert "    eacc: needs evaluator=" in lines


def test_evaluate_and_score_ask_the_model_through_the_explainers_background_rows():
    # With background rows the model's answer on a masked row is its outputs averaged over
    # them: evaluate's kept fidelity is then the share of rows whose class survives that
    # (check's), and score the same agreement with each answer's rows weighing alike. At
    # the fill the same masks score otherwise, so evaluate does not ask there.
    rng = np.random.RandomState(0)
    rows = rng.randn(300, 4).astype(np.float32)
    model = LogisticRegression().fit(rows, rows[:, 0] + 0.8 * rows[:, 1] > 0.5)
    explainer = L2XExplainer(k=1, max_epochs=3, batch_size=64, refine=None, background=16,
                             random_state=0).fit(rows, black_box=model)
    report = evaluate(explainer, X=rows, entries=["fidelity_kept", "rows_holding"])
    holds = explainer.check(rows).holds
    assert report.fidelity_kept == pytest.approx(holds.mean())
    assert report.rows_holding == pytest.approx(holds.mean())
    value = explainer._masked_value()
    assert value.queries_per_row == 16
    np.testing.assert_array_equal(value.background, explainer.background_)
    full, masked = value.full(rows), value.masked(rows, explainer.transform(rows))
    answers, kept = full.argmax(axis=1), masked.argmax(axis=1) == full.argmax(axis=1)
    balanced = np.mean([kept[answers == answer].mean() for answer in np.unique(answers)])
    assert explainer.score(rows) == pytest.approx(balanced)
    at_fill = evaluate(explainer.transform(rows), model, rows,
                       baseline=explainer.masker_.baseline_, entries=["fidelity_kept"])
    assert at_fill.fidelity_kept != pytest.approx(report.fidelity_kept)
