"""Output specs: what the columns of a black box's outputs mean, how they are standardised
for the losses, encoded at score time and compared."""

import numpy as np
import pytest
import torch

from sk_sointer._outputs import (
    OutputSpec,
    check_outputs,
    output_agreement,
    output_loss,
    output_values,
    spec_of,
)


@pytest.fixture
def mixed():
    """A categorical output of three classes, a Bernoulli label and two real outputs."""
    return spec_of(["categorical", "bernoulli", "real", "real"], [3, 1, 1, 1])


def test_spec_of_lays_out_blocks(mixed):
    assert mixed.kinds == ("categorical", "bernoulli", "real", "real")
    assert mixed.blocks == ((0, 3), (3, 4), (4, 5), (5, 6))
    assert mixed.n_outputs == 4 and mixed.n_columns == 6 and mixed.task == "mixed"
    assert spec_of(["real"], [1]).task == "regression"
    assert spec_of(["bernoulli", "categorical"], [1, 2]).task == "classification"


@pytest.mark.parametrize(
    "kinds, blocks, message",
    [
        (("categorical",), ((0, 2), (2, 3)), "one kind per block"),
        (("ordinal",), ((0, 2),), "output kinds are"),
        (("bernoulli",), ((0, 2),), "a bernoulli output has one column"),
        (("real",), ((0, 3),), "a real output has one column"),
    ],
)
def test_inconsistent_specs_are_rejected(kinds, blocks, message):
    with pytest.raises(ValueError, match=message):
        OutputSpec(kinds, blocks)


# -- select -------------------------------------------------------------------------------


def test_select_validates_the_target(mixed):
    assert mixed.select(2).target == 2
    assert mixed.select(np.int64(1)).target == 1
    assert mixed.select(-1).target == 3  # counted from the end, stored as an index
    assert mixed.select(2).select(None).target is None
    for target in (4, -5):
        with pytest.raises(ValueError, match=r"\[0, n_outputs - 1\] = \[0, 3\] .* 4 outputs"):
            mixed.select(target)
    for target in (True, np.bool_(False), 1.0, "0"):
        with pytest.raises(ValueError, match="target should be an int"):
            mixed.select(target)


# -- standardisation of real columns ------------------------------------------------------


def test_fitted_standardises_real_columns_only(mixed):
    rng = np.random.RandomState(0)
    proba = rng.dirichlet(np.ones(3), 50)
    label = rng.rand(50, 1)
    values = rng.randn(50, 2) * [1e5, 0.01] + [3e5, -2.0]
    targets = np.hstack([proba, label, values])
    spec = mixed.fitted(targets)
    np.testing.assert_array_equal(spec.center[:4], 0.0)
    np.testing.assert_array_equal(spec.scale[:4], 1.0)
    np.testing.assert_allclose(spec.center[4:], values.mean(0))
    np.testing.assert_allclose(spec.scale[4:], values.std(0))
    standardised = spec.standardize(targets)
    assert standardised.dtype == np.float32
    np.testing.assert_allclose(standardised[:, :4], targets[:, :4], rtol=1e-6)
    np.testing.assert_allclose(standardised[:, 4:].mean(0), 0.0, atol=1e-6)
    np.testing.assert_allclose(standardised[:, 4:].std(0), 1.0, rtol=1e-5)
    # Back through output_values: the real columns come back in their units, and the raw
    # logits of the other outputs become the probabilities they encode.
    raw = torch.as_tensor(standardised).clone()
    raw[:, :3] = torch.log(torch.as_tensor(proba, dtype=torch.float32))
    raw[:, 3] = torch.logit(torch.as_tensor(label[:, 0], dtype=torch.float32))
    np.testing.assert_allclose(output_values(raw, spec).numpy(), targets, rtol=1e-5, atol=1e-5)


def test_constant_real_column_gets_scale_one():
    spec = spec_of(["real", "real"], [1, 1]).fitted(np.c_[np.full(10, 4.0), np.arange(10.0)])
    np.testing.assert_array_equal(spec.center, [4.0, 4.5])
    np.testing.assert_allclose(spec.scale, [1.0, np.arange(10.0).std()])


def test_unfitted_spec_leaves_targets_as_they_are(mixed):
    targets = np.arange(12.0).reshape(2, 6)
    np.testing.assert_array_equal(mixed.standardize(targets), targets)
    raw = torch.zeros(2, 6)
    raw[:, 4:] = torch.tensor([[1.5, -2.0], [3.0, 4.0]])
    values = output_values(raw, mixed)[:, 4:].numpy()
    np.testing.assert_array_equal(values, [[1.5, -2.0], [3.0, 4.0]])


def test_output_loss_per_kind(mixed):
    predicted = torch.tensor([[0.0, 1.0, 2.0, 0.5, 1.0, -1.0]])
    target = torch.tensor([[0.2, 0.3, 0.5, 1.0, 0.0, 1.0]])
    log_q = torch.log_softmax(predicted[:, :3], 1)
    expected = (
        -(target[:, :3] * log_q).sum()
        - torch.log(torch.sigmoid(torch.tensor(0.5)))
        + 1.0 ** 2
        + (-1.0 - 1.0) ** 2
    )
    assert output_loss(predicted, target, mixed).item() == pytest.approx(expected.item(), rel=1e-6)


# -- outputs given as arrays --------------------------------------------------------------


def test_check_outputs_reads_each_kind_of_array():
    _, spec = check_outputs(np.array([["a"], ["b"], ["a"]]), 3)
    assert spec.kinds == ("categorical",) and list(spec.classes[0]) == ["a", "b"]
    encoded, spec = check_outputs(np.array([[0], [2], [1], [2]]), 4)  # a column of labels
    assert spec.kinds == ("categorical",) and spec.blocks == ((0, 3),)
    np.testing.assert_array_equal(encoded, np.eye(3)[[0, 2, 1, 2]])
    indicator = np.array([[0, 1, 1], [1, 0, 0], [1, 1, 0]])
    encoded, spec = check_outputs(indicator, 3)
    assert spec.kinds == ("bernoulli",) * 3 and spec.blocks == ((0, 1), (1, 2), (2, 3))
    np.testing.assert_array_equal(encoded, indicator)
    labels = np.array([[0, 5], [2, 5], [1, 7]])
    encoded, spec = check_outputs(labels, 3)
    assert spec.kinds == ("categorical", "categorical") and spec.blocks == ((0, 3), (3, 5))
    np.testing.assert_array_equal(encoded, [[1, 0, 0, 1, 0], [0, 0, 1, 1, 0], [0, 1, 0, 0, 1]])
    proba = np.array([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]])
    encoded, spec = check_outputs(proba, 2)
    assert spec.kinds == ("categorical",) and spec.blocks == ((0, 3),)
    np.testing.assert_allclose(encoded, proba)
    _, spec = check_outputs(np.array([[0.3, 2.0], [1.5, -1.0]]), 2)
    assert spec.kinds == ("real", "real")


def test_two_valued_label_matrix_that_is_not_zero_one_is_classes():
    # scikit-learn calls it a multilabel indicator; 1 and 2 are classes, not label states.
    encoded, spec = check_outputs(np.array([[1, 2], [2, 1], [1, 1]]), 3)
    assert spec.kinds == ("categorical", "categorical") and spec.blocks == ((0, 2), (2, 4))
    np.testing.assert_array_equal(encoded, [[1, 0, 0, 1], [0, 1, 1, 0], [1, 0, 1, 0]])
    _, spec = check_outputs(np.array([["x", "y"], ["y", "y"], ["x", "x"]]), 3)
    assert spec.kinds == ("categorical", "categorical")


def test_single_class_labels_cannot_be_explained():
    with pytest.raises(ValueError, match=r"single class \('c'\)"):
        check_outputs(np.array(["c", "c", "c"]), 3)
    with pytest.raises(ValueError, match=r"single class \(1\)"):
        check_outputs(np.array([[1], [1]]), 2)


@pytest.mark.parametrize(
    "y, message",
    [
        (np.zeros(4), "have 4 rows but X has 3 samples"),
        (np.zeros((3, 2, 2)), "1-D or 2-D"),
        (np.array([0.5, np.inf, 1.0]), "NaN or infinity"),
    ],
)
def test_bad_outputs_are_named(y, message):
    with pytest.raises(ValueError, match=message):
        check_outputs(y, 3)


def test_encode_at_score_time_uses_the_classes_of_fit():
    _, spec = check_outputs(np.array(["a", "b", "c"]), 3)
    np.testing.assert_array_equal(spec.encode(np.array(["c", "c"]), 2), [[0, 0, 1], [0, 0, 1]])
    np.testing.assert_array_equal(spec.encode(np.array([["b"]]), 1), [[0, 1, 0]])
    np.testing.assert_array_equal(spec.encode(np.eye(3)[[2]], 1), [[0, 0, 1]])  # the columns
    encoded, _ = check_outputs(np.array(["c"]), 1, spec=spec)
    np.testing.assert_array_equal(encoded, [[0, 0, 1]])
    with pytest.raises(ValueError, match=r"labels \['d'\] unseen during fit"):
        spec.encode(np.array(["a", "d"]), 2)
    with pytest.raises(ValueError, match="have 2 columns, but the explainer was fitted on 3"):
        spec.encode(np.zeros((1, 2)), 1)
    # Several categorical outputs, one label per output.
    _, multi = check_outputs(np.array([[0, 5], [2, 5], [1, 7]]), 3)
    np.testing.assert_array_equal(multi.encode(np.array([[2, 7]]), 1), [[0, 0, 1, 0, 1]])


# -- agreement ----------------------------------------------------------------------------


def test_output_agreement_per_kind(mixed):
    reference = np.array([
        [0.7, 0.2, 0.1, 0.9, 1.0, 10.0],
        [0.1, 0.8, 0.1, 0.2, 2.0, 20.0],
        [0.2, 0.2, 0.6, 0.6, 3.0, 30.0],
        [0.3, 0.3, 0.4, 0.1, 4.0, 40.0],
    ])
    other = np.array([
        [0.5, 0.4, 0.1, 0.6, 1.0, 40.0],
        [0.5, 0.4, 0.1, 0.7, 2.0, 30.0],
        [0.1, 0.1, 0.8, 0.4, 3.0, 20.0],
        [0.1, 0.8, 0.1, 0.3, 5.0, 10.0],
    ])
    scores = output_agreement(reference, other, mixed, multioutput="raw_values")
    # argmax equal in rows 0 and 2; same side of 0.5 in rows 0 and 3; R² = 1 - SS_res/SS_tot.
    r2_first = 1 - 1.0 / 5.0
    r2_second = 1 - (30 ** 2 + 10 ** 2 + 10 ** 2 + 30 ** 2) / 500.0
    np.testing.assert_allclose(scores, [0.5, 0.5, r2_first, r2_second])
    assert output_agreement(reference, other, mixed) == pytest.approx(np.mean(scores))
    with pytest.raises(ValueError, match="multioutput should be"):
        output_agreement(reference, other, mixed, multioutput="variance_weighted")


def test_an_output_spec_rebuilt_from_its_state_is_the_same_spec():
    y = np.array([[0.2, 1.0], [3.0, 0.0], [1.5, 1.0]])
    spec = spec_of(["real", "bernoulli"], [1, 1]).select(1).fitted(y)
    rebuilt = OutputSpec.from_state(spec.state_dict())
    assert rebuilt == spec and rebuilt.target == 1
    np.testing.assert_array_equal(rebuilt.center, spec.center)
    np.testing.assert_array_equal(rebuilt.scale, spec.scale)
    np.testing.assert_array_equal(rebuilt.standardize(y), spec.standardize(y))
