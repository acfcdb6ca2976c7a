"""Encoders traced to columns, black boxes' answers read by their dtype and shape, and saved
files refused by ``load`` and ``inspect`` alike, each in one line naming what is wrong."""

import json
import os
import re
import warnings

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.preprocessing import FunctionTransformer, StandardScaler

from sk_sointer import L2XExplainer, as_black_box, encoded_groups, load, save
from sk_sointer._cli import main

X_TABLE = np.c_[np.arange(8.0), np.arange(8.0) ** 2 % 5, -np.arange(8.0)]


# Encoders
# --------

@pytest.mark.parametrize("transform, shape", [
    (lambda X: X[:, 0], "(8,)"),  # one-dimensional: a column as a vector
    (lambda X: X[:, :, None], "(8, 3, 1)"),
    (lambda X: X[:4], "(4, 3)"),  # fewer rows than X
])
def test_an_encoder_whose_output_is_not_a_table_is_named(transform, shape):
    encoder = FunctionTransformer(transform).fit(X_TABLE)
    with pytest.raises(ValueError, match=r"output should be a table, one row per row of X "
                                         rf"\(8, n_features\); got shape {re.escape(shape)}"
                       ) as info:
        encoded_groups(encoder, X_TABLE)
    assert "\n" not in str(info.value)


class _Noisy(TransformerMixin, BaseEstimator):
    """A fitted transformer adding fresh noise to some of its outputs at every call."""

    def __init__(self, columns):
        self.columns = columns

    def fit(self, X, y=None):
        self.n_features_in_, self.rng_ = X.shape[1], np.random.default_rng(0)
        return self

    def transform(self, X):
        out = np.array(X, dtype=float)
        out[:, self.columns] += self.rng_.normal(size=(len(X), len(self.columns)))
        return out


@pytest.mark.parametrize("columns", [[0], [2], [0, 1, 2]])
def test_an_encoder_with_noise_is_named_as_such_not_as_combining_columns(columns):
    expected = rf"outputs {re.escape(str(columns))} change between two calls on the same rows"
    with pytest.raises(ValueError, match=expected) as info:
        encoded_groups(_Noisy(columns).fit(X_TABLE), X_TABLE)
    assert "PolynomialFeatures" not in str(info.value)
    assert "\n" not in str(info.value)


def test_a_deterministic_encoder_still_gives_its_groups():
    assert encoded_groups(StandardScaler().fit(X_TABLE), X_TABLE).tolist() == [0, 1, 2]


# Black boxes
# -----------

def _softmax_module(dtype, n_classes=7):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(5, n_classes),
                               torch.nn.Softmax(dim=1)).to(dtype)


@pytest.mark.parametrize("output", ["auto", "proba"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_softmax_rows_in_a_low_precision_dtype_are_probabilities(dtype, output):
    torch.set_num_threads(1)
    X = np.random.RandomState(0).randn(300, 5).astype(np.float32)
    module = _softmax_module(dtype)
    with torch.no_grad():
        sums = module(torch.as_tensor(X, dtype=dtype)).float().sum(1)
    if dtype == torch.bfloat16:  # the reproduction: rows miss one by more than 1e-3
        assert float((sums - 1).abs().max()) > 1e-3
    black_box = as_black_box(module, output=output)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "read as real values ... logits" warning
        black_box.predict(X)
    assert black_box.spec.kinds == ("categorical",)
    assert black_box.spec.blocks == ((0, 7),)


@pytest.mark.parametrize("dtype, off, probabilities", [
    (torch.bfloat16, 0.006, True),  # within bfloat16's rounding
    (torch.float32, 0.006, False),  # float32 rows that miss one by as much are not
    (torch.float32, 0.0005, True),
])
def test_the_tolerance_of_a_probability_row_follows_the_dtype(dtype, off, probabilities):
    rows = torch.tensor([[0.25, 0.75 + off], [0.5, 0.5 + off]], dtype=dtype)
    black_box = as_black_box(lambda X: rows[:len(X)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        black_box.predict(np.zeros((2, 3), dtype=np.float32))
    assert (black_box.spec.kinds == ("categorical",)) is probabilities
    declared = as_black_box(lambda X: rows[:len(X)], output="proba")
    if probabilities:
        declared.predict(np.zeros((2, 3), dtype=np.float32))
    else:
        with pytest.raises(ValueError, match="not probability vectors"):
            declared.predict(np.zeros((2, 3), dtype=np.float32))


@pytest.mark.parametrize("answer", [
    lambda n: [[0.5, 0.5] if i % 2 else [1.0] for i in range(n)],
    lambda n: tuple([0.2, 0.3, 0.5] if i else [1.0, 0.0] for i in range(n)),
    lambda n: [0.5 if i else [0.5, 0.5] for i in range(n)],
])
def test_a_ragged_answer_is_named_in_the_packages_words(answer):
    black_box = as_black_box(lambda X: answer(len(X)))
    with pytest.raises(ValueError, match=r"returned rows of different lengths .* shape "
                                         r"\(4, n_outputs\), every row as long") as info:
        black_box.predict(np.zeros((4, 3), dtype=np.float32))
    assert "\n" not in str(info.value) and "inhomogeneous" not in str(info.value)


# Files
# -----

@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    torch.set_num_threads(1)
    X = np.random.RandomState(0).randn(60, 4).astype(np.float32)
    explainer = L2XExplainer(k=2, max_epochs=1, batch_size=30, random_state=0)
    path = tmp_path_factory.mktemp("files") / "l2x.safetensors"
    save(explainer.fit(X, X[:, 0] > 0), path)
    return path


def _tampered(path, new_path, change):
    with safe_open(os.fspath(path), framework="pt") as file:
        doc = json.loads(file.metadata()["sk_sointer"])
    change(doc)
    save_file(load_file(os.fspath(path)), os.fspath(new_path),
              metadata={"sk_sointer": json.dumps(doc)})
    return new_path


def _array_of_shape(shape):
    def change(doc):
        doc["attributes"]["feature_names_in_"] = {"ndarray": ["a", "b", "c", "d"],
                                                  "dtype": "<U1", "shape": shape}
    return change


TAMPERED = {
    "row_shape_ an int": (lambda doc: doc["attributes"].update(row_shape_=5),
                          r"row_shape_=5 does not hold n_features_in_=4 values"),
    "array of shape ['x']": (_array_of_shape(["x"]), r"array of shape \['x'\]; a shape is a "
                                                     "list of whole numbers"),
    "array of shape 5": (_array_of_shape(5), "array of shape 5; a shape is a list"),
    "array of shape [2.0, 2.0]": (_array_of_shape([2.0, 2.0]), r"array of shape \[2.0, 2.0\]"),
    "array of shape [True]": (_array_of_shape([True]), r"array of shape \[True\]"),
    "unknown top-level key": (lambda doc: doc.update(junk=1),
                              r"holds the keys \['junk'\] that sk_sointer.save does not write"),
    "unknown fitted attribute": (lambda doc: doc["attributes"].update(junk_=1),
                                 r"fitted attributes \['junk_'\] that a L2XExplainer does not "
                                 "have"),
    "another class's attribute": (lambda doc: doc["attributes"].update(energy_loss_=0.5),
                                  r"fitted attributes \['energy_loss_'\] that a L2XExplainer"),
}


@pytest.mark.parametrize("case", list(TAMPERED))
@pytest.mark.parametrize("reader", ["load", "inspect", "inspect --json"])
def test_a_tampered_file_is_refused_by_load_and_inspect_alike(saved, tmp_path, capsys, case,
                                                              reader):
    change, message = TAMPERED[case]
    path = _tampered(saved, tmp_path / "tampered.safetensors", change)
    if reader == "load":
        with pytest.raises(ValueError, match=message) as info:
            load(path)
        assert "\n" not in str(info.value)
        return
    assert main(["inspect", os.fspath(path), *reader.split()[1:]]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1, captured.err
    assert "Traceback" not in captured.err
    assert re.search(message, captured.err), captured.err


def test_the_untampered_file_loads_and_inspects(saved, capsys):
    loaded = load(saved)
    assert not hasattr(loaded, "junk_")
    assert main(["inspect", os.fspath(saved)]) == 0
    assert "L2XExplainer" in capsys.readouterr().out
