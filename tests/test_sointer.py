"""SOInter: the energy network over joint outputs, the interpreter, and their contracts."""

import pickle
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from sklearn.model_selection import GridSearchCV
from sklearn.neural_network import MLPClassifier, MLPRegressor
from torch import nn

from sk_sointer import EnergyNet, L2XExplainer, MLP, SOInterExplainer, as_black_box
from sk_sointer.datasets import make_structured_output
from sk_sointer.explainers._energy import Configurations
from sk_sointer.explainers._sointer_queries import model_states

# SOInter's own training: without the refinement against the model (its default).
FAST = dict(max_epochs=6, batch_size=64, energy=EnergyNet(max_epochs=8), energy_masks=2,
            refine=None, device="cpu", random_state=0)


# The oracle test puts E1's four features last, so that a selector's ties (which go to the
# lower index) cannot pass for knowledge.
COLUMNS = [2, 3, 4, 5]


def _e1_energies(X):
    """E1's energy of the four configurations (product order) per row."""
    x1, x2, x3, x4 = (X[:, c] for c in COLUMNS)
    return np.stack([x4, x2 + x3, x1 + x4, x3], axis=1)


def e1_model(X):
    """The exact E1 labels as a multi-label 'probability' matrix (a callable black box)."""
    configurations = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=np.float32)
    return configurations[_e1_energies(np.asarray(X)).argmin(axis=1)]


class TrueE1Energy(nn.Module):
    """E1's own energy, on the encoding's two label columns (an oracle energy network)."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.tensor(3.0), requires_grad=False)
        self.unused = nn.Parameter(torch.zeros(1))  # gives the optimizer something to hold

    def _energy(self, x, y):
        x1, x2, x3, x4 = (x[..., c] for c in COLUMNS)
        y1, y2 = y[..., 0], y[..., 1]
        energy = (x1 * y1 + x4) * (1 - y2) + (x2 * (1 - y1) + x3) * y2
        return self.scale * energy + 0 * self.unused

    def forward(self, x, phi):
        if phi.dim() == 3:
            x = x.unsqueeze(1).expand(-1, phi.shape[1], -1)
        return self._energy(x, phi[..., :2])

    def table(self, x, phi):
        x = x.unsqueeze(1).expand(-1, phi.shape[0], -1)
        return self._energy(x, phi[None, :, :2].expand(x.shape[0], -1, -1))


@pytest.fixture(scope="module")
def e1():
    X, Y, relevant = make_structured_output(1500, energy="E1", n_features=6, random_state=0)
    return X.astype(np.float32), Y, relevant


@pytest.fixture(scope="module")
def multilabel_model(e1):
    X, Y, _ = e1
    return MLPClassifier((50,), max_iter=300, random_state=0).fit(X, Y)


# -- the configurations and the energy network -------------------------------------------


def test_configurations_enumerate_index_and_encode_pairs():
    configurations = Configurations((2, 3))
    table = configurations.all()
    assert table.tolist() == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
    np.testing.assert_array_equal(configurations.index(table), np.arange(6))
    # unary: the label of the binary output, one-hot of the 3-valued one; then the 3
    # products of the binary output's column with each of the other's.
    assert configurations.n_encoding == 1 + 3 + 3
    encoded = configurations.encode(torch.tensor([[1, 2], [0, 1]]))
    assert encoded.tolist() == [[1, 0, 0, 1, 0, 0, 1], [0, 0, 1, 0, 0, 0, 0]]
    assert configurations.neighbours(torch.tensor([[1, 2]])).tolist() == [[[0, 2], [1, 0], [1, 1]]]


def _coupled_labels(n=800, seed=0):
    X = np.random.RandomState(seed).randn(n, 3).astype(np.float32)
    first = (X[:, 0] > 0).astype(int)
    second = first ^ (X[:, 1] > 0).astype(int)  # depends on the first output
    return X, np.column_stack([first, second])


@pytest.mark.parametrize("params, accuracy", [
    ({}, 0.9),
    ({"max_configurations": 1}, 0.9),  # sampled candidates and coordinate descent
    # DVN's value regression ranks configurations less sharply (chance: 0.25)
    ({"loss": "value"}, 0.7),
])
def test_energy_net_learns_coupled_outputs(params, accuracy):
    torch.manual_seed(0)
    X, codes = _coupled_labels()
    net = EnergyNet(max_epochs=40, lr=1e-2, **params).fit(X, codes)
    assert (net.predict(X) == codes).all(axis=1).mean() > accuracy


def test_energy_net_fits_probabilities_through_its_marginals():
    torch.manual_seed(0)
    X, codes = _coupled_labels()
    proba = np.hstack([np.eye(2)[codes[:, 0]], np.eye(2)[codes[:, 1]]]) * 0.9 + 0.05
    net = EnergyNet(states=(2, 2), max_epochs=40, lr=1e-2).fit(X, proba)
    marginals = net.predict_proba(X)
    np.testing.assert_allclose(marginals[:, :2].sum(1), 1, atol=1e-5)
    np.testing.assert_allclose(marginals[:, 2:].sum(1), 1, atol=1e-5)
    assert (net.predict(X) == codes).all(axis=1).mean() > 0.9


def test_energy_net_rejects_bad_outputs():
    X = np.zeros((4, 2), dtype=np.float32)
    with pytest.raises(ValueError, match="rows"):
        EnergyNet().fit(X, np.zeros((3, 2), dtype=int))
    with pytest.raises(ValueError, match="set states"):
        EnergyNet().fit(X, np.full((4, 4), 0.5))
    with pytest.raises(ValueError, match="non-negative"):
        EnergyNet().fit(X, -np.ones((4, 2), dtype=int))


# -- the interpreter -----------------------------------------------------------------------


@pytest.mark.parametrize("gradient", ["score", "relaxed"])
def test_with_the_true_energy_the_marginal_hinge_recovers_e1(e1, gradient):
    X, _, relevant = e1
    order = [4, 5, 0, 1, 2, 3]  # the four relevant features last
    X, relevant = X[:, order], relevant[:, :, order]
    oracle = EnergyNet(module=lambda in_features, out_features: TrueE1Energy(), max_epochs=1,
                       lr=1e-12)
    expl = SOInterExplainer(
        target=1, k=4, objective="marginal", margin="all", baseline="zero", fill="baseline",
        gradient=gradient, selector=MLP((50,), zero_output=True), energy=oracle, max_epochs=10, batch_size=64,
        refine=None, device="cpu", random_state=0,
    ).fit(X, black_box=as_black_box(e1_model, output="multilabel_proba"))
    masks = expl.transform(X)
    exact = (masks.astype(bool) == relevant[:, 1]).all(axis=1).mean()
    assert exact > 0.9
    assert expl.score(X) > 0.97


def test_learned_energy_keeps_the_target_better_than_random_masks(e1, multilabel_model):
    X, _, _ = e1
    expl = SOInterExplainer(target=0, k=3, **FAST).fit(X, black_box=multilabel_model)
    rng = np.random.RandomState(0)
    random_masks = np.zeros_like(X)
    for row in random_masks:
        row[rng.choice(X.shape[1], 3, replace=False)] = 1
    full = multilabel_model.predict(X)[:, 0]
    masked = multilabel_model.predict(expl.masker_.mask_raw(X, random_masks))[:, 0]
    assert expl.score(X) > np.mean(full == masked) + 0.05


def test_by_default_the_interpreter_is_refined_against_the_model_on_its_target(
        e1, multilabel_model):
    """The default refine="model": the interpreter is trained further on the model's own
    answers on the target output, and keeps them better on held-out rows too."""
    X, _, _ = e1
    train, held_out = X[:1000], X[1000:]
    own = SOInterExplainer(target=0, k=2, **FAST).fit(train, black_box=multilabel_model)
    refined = SOInterExplainer(target=0, k=2, **{**FAST, "refine": "model"}).fit(
        train, black_box=multilabel_model)
    assert SOInterExplainer().refine == "model"
    assert own.refinement_fidelity_ is None and own.n_model_queries_ == 0
    assert refined.n_model_queries_ > 0
    curve = refined.refinement_fidelity_
    # the first point is the method's own interpreter, judged on the training rows
    assert curve[0] == pytest.approx(own.score(train), abs=0.01)
    assert refined.score(train) == pytest.approx(curve.max(), abs=0.01)
    # (seed 0: 0.89 -> 0.97 of 500 held-out rows)
    assert refined.score(held_out) > own.score(held_out) + 0.04


def test_history_records_flip_rates_and_the_kept_epoch(e1, multilabel_model):
    X, _, _ = e1
    expl = SOInterExplainer(target=1, k=2, **FAST).fit(X, black_box=multilabel_model)
    rates = expl.net_.history[:, "topk_flip_rate"]
    assert len(rates) == expl.n_iter_ <= FAST["max_epochs"]
    assert all(0 <= rate <= 1 for rate in rates + expl.net_.history[:, "flip_rate"])
    assert expl.flip_rate_ == min(rates)
    # the kept interpreter is the one whose top-k flips were fewest: score agrees with it
    assert expl.check(X).holds.mean() == pytest.approx(1 - expl.flip_rate_)
    masks = expl.transform(X)
    np.testing.assert_array_equal(masks.sum(1), 2)


@pytest.mark.parametrize("gradient", ["score", "relaxed"])
@pytest.mark.parametrize("requery", ["batch", "topk"])
def test_requery_modes_train(e1, multilabel_model, requery, gradient):
    X, _, _ = e1
    params = {**FAST, "max_epochs": 2}
    expl = SOInterExplainer(target=0, k=3, requery=requery, energy_refit=True, gradient=gradient,
                            straight_through=True, **params).fit(X, black_box=multilabel_model)
    assert expl.transform(X[:5]).sum() == 15
    assert 0 <= expl.flip_rate_ <= 1


def test_predict_masked_gives_the_energy_marginals_in_the_models_columns(e1, multilabel_model):
    X, _, _ = e1
    expl = SOInterExplainer(target=0, k=3, **FAST).fit(X, black_box=multilabel_model)
    out = expl.predict_masked(X[:20], np.ones_like(X[:20]))
    assert out.shape == (20, 2)
    assert ((out >= 0) & (out <= 1)).all()
    # the energy imitates the model on full rows
    agreement = ((out > 0.5) == multilabel_model.predict(X[:20])).mean()
    assert agreement > 0.8


# -- the contract --------------------------------------------------------------------------


def test_needs_a_multi_output_model_with_discrete_outputs(e1):
    X, Y, _ = e1
    single = MLPClassifier(hidden_layer_sizes=(5,), max_iter=50, random_state=0).fit(X, Y[:, 0])
    with pytest.raises(ValueError, match="several outputs.*L2XExplainer"):
        SOInterExplainer(**FAST).fit(X, black_box=single)
    regressor = MLPRegressor(hidden_layer_sizes=(5,), max_iter=50, random_state=0).fit(X, Y.astype(float))
    with pytest.raises(ValueError, match="discrete outputs"):
        SOInterExplainer(**FAST).fit(X, black_box=regressor)


def test_needs_the_model_not_its_outputs(e1):
    X, Y, _ = e1
    with pytest.raises(ValueError, match="needs the model itself"):
        SOInterExplainer(**FAST).fit(X, Y)


def test_target_is_checked_against_the_outputs(e1, multilabel_model):
    X, _, _ = e1
    with pytest.raises(ValueError, match=r"target should be in \[0, n_outputs - 1\] = \[0, 1\]"):
        SOInterExplainer(target=2, **FAST).fit(X, black_box=multilabel_model)


def test_grid_search_over_k_tau_and_target(e1, multilabel_model):
    X, _, _ = e1
    params = {**FAST, "max_epochs": 2, "energy": EnergyNet(max_epochs=2)}
    search = GridSearchCV(
        SOInterExplainer(**params), {"k": [2, 4], "tau": [0.5], "target": [0, 1]}, cv=2
    ).fit(X[:600], black_box=as_black_box(multilabel_model))
    assert search.best_params_["k"] in (2, 4)
    scores = search.cv_results_["mean_test_score"]
    assert ((scores >= 0) & (scores <= 1)).all()
    # k=4 of 6 keeps the target at least as often as k=2, on average over the targets
    by_k = {k: scores[search.cv_results_["param_k"] == k].mean() for k in (2, 4)}
    assert by_k[4] >= by_k[2] - 0.02


def test_pickles_with_identical_masks(e1, multilabel_model):
    X, _, _ = e1
    expl = SOInterExplainer(target=1, k=2, **{**FAST, "max_epochs": 2}).fit(
        X, black_box=multilabel_model
    )
    loaded = pickle.loads(pickle.dumps(expl))
    np.testing.assert_array_equal(loaded.transform(X), expl.transform(X))
    assert loaded.score(X) == expl.score(X)


def test_l2x_is_unaffected_by_the_target_machinery(e1, multilabel_model):
    # the base's score still averages over all outputs for a method without a target
    X, _, _ = e1
    expl = L2XExplainer(k=2, max_epochs=2, device="cpu", random_state=0).fit(
        X, black_box=multilabel_model
    )
    assert 0 <= expl.score(X) <= 1


def test_marginal_objective_needs_enumerable_configurations(e1, multilabel_model):
    X, _, _ = e1
    params = {**FAST, "energy": EnergyNet(max_configurations=2)}
    with pytest.raises(ValueError, match="has 4, more than energy__max_configurations=2"):
        SOInterExplainer(objective="marginal", **params).fit(X, black_box=multilabel_model)


@pytest.mark.parametrize("objective", ["joint", "marginal"])
def test_margin_on_every_row_trains(e1, multilabel_model, objective):
    X, _, _ = e1
    expl = SOInterExplainer(target=1, k=3, objective=objective, margin="all",
                            **{**FAST, "max_epochs": 2}).fit(X, black_box=multilabel_model)
    assert expl.transform(X[:4]).sum() == 12
    assert expl.net_.history[-1, "train_loss"] >= 0


@pytest.mark.parametrize("check", [
    "check_parameters_default_constructible", "check_get_params_invariance", "check_set_params",
    "check_no_attributes_set_in_init", "check_estimators_overwrite_params",
])
def test_sklearn_checks_that_do_not_fit(check):
    from sklearn.utils import estimator_checks

    if check == "check_estimators_overwrite_params":
        pytest.skip("fits on single-output y")
    getattr(estimator_checks, check)("SOInterExplainer", SOInterExplainer())


def test_nested_energy_parameters_do_not_touch_the_default(e1):
    default = EnergyNet()
    expl = SOInterExplainer(energy=default)
    expl.set_params(energy__max_epochs=3, energy__module__hidden_units=(7,))
    assert expl.get_params()["energy__max_epochs"] == 3
    assert expl.get_params()["energy__module__hidden_units"] == (7,)  # used when it is built
    assert default.max_epochs == "auto" and default.module.hidden_units == (100, 100)
    assert SOInterExplainer().energy is None


def test_energy_none_fits_the_default_energy_network(e1, multilabel_model):
    X, _, _ = e1
    params = {**FAST, "energy": None, "energy_masks": 1, "max_epochs": 1}
    expl = SOInterExplainer(target=0, k=2, **params).fit(X[:200], black_box=multilabel_model)
    assert isinstance(expl.energy_net_, EnergyNet) and expl.energy is None
    # E1's two labels: the likelihood on the pairwise encoding, for 50 epochs
    assert (expl.energy_loss_, expl.energy_encoding_, expl.energy_max_epochs_) == (
        "likelihood", "pairwise", 50)
    assert len(expl.energy_net_.net_.history) == 50
    assert (expl.transform(X[:5]).sum(axis=1) == 2).all()


@pytest.mark.parametrize("fill", ["draws", "baseline"])
def test_masked_queries_fill_left_out_features_with_draws_or_the_baseline(fill):
    # Label 0 is x0 > 0, label 1 is x1 > 0; x0 is positive in a quarter of the rows, so the
    # mean baseline is positive too but a draw of x0 is positive a quarter of the time.
    rng = np.random.RandomState(0)
    X = np.column_stack([np.where(rng.rand(4000) < 0.25, 3.0, -0.5), rng.randn(4000)])

    def model(rows):
        return (np.asarray(rows)[:, :2] > 0).astype(np.float32)

    expl = SOInterExplainer(k=1, fill=fill, n_draws=8, energy=EnergyNet(max_epochs=1),
                            energy_masks=0, max_epochs=1, device="cpu", random_state=0)
    expl.fit(X, black_box=as_black_box(model, output="multilabel_proba"))
    with torch.random.fork_rng():
        torch.manual_seed(0)
        proba = model_states(expl.black_box_, expl.masker_, expl.output_spec_, X,
                             np.array([[0, 1]] * len(X)), fill=fill, n_draws=8, pool=X)
    # columns: [x0 <= 0, x0 > 0, x1 <= 0, x1 > 0]; x1 is kept, so label 1 is exact
    np.testing.assert_array_equal(proba[:, 3], X[:, 1] > 0)
    if fill == "draws":
        assert proba[:, 1].mean() == pytest.approx(0.25, abs=0.01)
        assert len(np.unique(proba[:, 1])) > 2  # averages of 8 draws
    else:
        np.testing.assert_array_equal(proba[:, 1], 1.0)  # the mean, 0.375, is positive


def test_score_gradient_prefers_the_subsets_with_the_lower_hinge():
    """One step of the score-function estimate moves the logits toward the subset whose
    hinge is lower, with nothing to differentiate in the energy network."""
    torch.manual_seed(0)
    net = SimpleNamespace(n_samples=64, k=1, tau=1.0)
    logits = torch.zeros(8, 3, requires_grad=True)
    net.module_ = lambda X: logits
    # a hinge of 1 for feature 0 kept, 0 for the others: feature 0 should lose probability
    net.hinge_of = lambda X, codes, masks, hard: (hard[:, 0].clone(), None)
    from sk_sointer.explainers._sointer import SOInterNet

    loss, hinge, hard, _ = SOInterNet.score_function_loss(net, torch.zeros(8, 3), torch.zeros(8, 2))
    loss.backward()
    assert hinge.shape == (8, 64) and hard.shape == (8, 3)
    assert (logits.grad[:, 0] > 0).all() and (logits.grad[:, 1:] < 0).all()


def test_append_mask_widens_the_energy_input(e1, multilabel_model):
    X, _, _ = e1
    expl = SOInterExplainer(target=0, k=3, append_mask=True, **{**FAST, "max_epochs": 2})
    expl.fit(X, black_box=multilabel_model)
    assert expl.energy_net_.in_features_ == 2 * X.shape[1]
    assert expl.transform(X[:5]).sum() == 15
