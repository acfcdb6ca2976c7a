"""The synthetic data sets, their black box and its torch copy, and the EVAL-X evaluator."""

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.neural_network import MLPClassifier
from torch import nn

from sk_sointer import datasets, metrics

from .timing import elapsed

# Seeds of the independent draws of every data set.
TRAIN_SEED, EXPLAIN_SEED, TIMING_SEED, BLACK_BOX_SEED = 0, 1, 2, 3


@dataclass(frozen=True)
class DatasetSpec:
    """A synthetic data set and its k; an encoding ``probe`` reuses the data of its ``base``."""

    name: str
    label: str
    make: object
    params: dict
    k: int
    control_flow: bool = False
    base: str = ""
    probe: bool = False

    @property
    def data_key(self):
        return self.base or self.name

    def draw(self, n_samples, seed, *, return_proba=False):
        return self.make(n_samples, random_state=seed, return_proba=return_proba, **self.params)


# k of the L2X paper's synthetic sets, and REAL-X's choice of k for L2X on S1-S3 (Table 1).
DATASETS = {
    spec.name: spec
    for spec in [
        DatasetSpec("xor", "XOR", datasets.make_xor, {}, 2),
        DatasetSpec("orange_skin", "Orange skin", datasets.make_orange_skin, {}, 4),
        DatasetSpec("additive_paper", "Additive (paper)", datasets.make_nonlinear_additive,
                    {"variant": "paper"}, 4),
        DatasetSpec("additive_code", "Additive (code)", datasets.make_nonlinear_additive,
                    {"variant": "code"}, 4),
        DatasetSpec("switch_paper", "Switch (paper)", datasets.make_switch,
                    {"variant": "paper"}, 5),
        DatasetSpec("switch_code", "Switch (code)", datasets.make_switch, {"variant": "code"}, 5),
        *[DatasetSpec(name, name, datasets.make_control_flow, {"setting": name}, k,
                      control_flow=True) for name, k in [("S1", 4), ("S2", 4), ("S3", 5)]],
        # REAL-X's Lemma 1: with k = 1 on XOR no single feature says anything about the
        # label, so a predictor that does better than chance reads the choice of feature.
        DatasetSpec("xor_probe", "XOR, k = 1 (encoding probe)", datasets.make_xor, {}, 1,
                    base="xor", probe=True),
    ]
}

N_RELEVANT = 4  # the features the scale study's label depends on


def make_rows(n_rows, n_features, seed=0):
    """N(0, 1) float32 rows (never a float64 draft of twice the memory) and the two-column
    probabilities of ``P(y = 1 | x) = sigmoid(2 x0 x1 + x2 - x3)``."""
    if n_features < N_RELEVANT:
        raise ValueError(f"n_features should be >= {N_RELEVANT}; got {n_features}.")
    X = np.random.default_rng(seed).standard_normal((n_rows, n_features), dtype=np.float32)
    proba = 1 / (1 + np.exp(-(2 * X[:, 0] * X[:, 1] + X[:, 2] - X[:, 3])))
    return X, np.column_stack([1 - proba, proba]).astype(np.float32)


def fit_mlp(X, y, hidden):
    """An early-stopped ``MLPClassifier`` fitted on ``(X, y)``, and its fit seconds."""
    return elapsed(lambda: MLPClassifier(hidden_layer_sizes=hidden, early_stopping=True,
                                         random_state=TRAIN_SEED).fit(X, y))


class OneLabel(ClassifierMixin, BaseEstimator):
    """One label of a fitted multi-label classifier as a binary classifier of ``[1 - p, p]``."""

    classes_ = np.array([0, 1])

    def __init__(self, model=None, label=0):
        self.model = model
        self.label = label

    def fit(self, X, y=None):
        return self

    def predict_proba(self, X):
        p = self.model.predict_proba(X)[:, self.label]
        return np.column_stack([1 - p, p])

    def predict(self, X):
        return (self.predict_proba(X)[:, 1] > 0.5).astype(np.int64)


class _BinaryProba(nn.Module):
    """``[1 - p, p]`` of the logistic output unit ``column``."""

    def __init__(self, column=0):
        super().__init__()
        self.column = column

    def forward(self, logit):
        positive = torch.sigmoid(logit[:, self.column : self.column + 1])
        return torch.cat([1 - positive, positive], dim=1)


def one_logit(model, column):
    """The ``[1 - p, p]`` of the logistic output ``column`` of a torch ``model`` (a pixel)."""
    return nn.Sequential(model, _BinaryProba(column))


def mlp_to_torch(model, *, label=None):
    """A fitted ``MLPClassifier``'s ``predict_proba`` as a float32 torch network (for captum);
    of a multi-label one, the ``[1 - p, p]`` of ``label``."""
    activation = {"relu": nn.ReLU, "tanh": nn.Tanh, "logistic": nn.Sigmoid,
                  "identity": nn.Identity}[model.activation]
    layers = []
    for i, (weight, bias) in enumerate(zip(model.coefs_, model.intercepts_)):
        linear = nn.Linear(*weight.shape)
        with torch.no_grad():
            linear.weight.copy_(torch.as_tensor(weight.T))  # sklearn computes X @ W
            linear.bias.copy_(torch.as_tensor(bias))
        layers += [linear, activation()] if i < len(model.coefs_) - 1 else [linear]
    if model.out_activation_ == "softmax":
        layers.append(nn.Softmax(dim=1))
    elif model.out_activation_ == "logistic" and (model.n_outputs_ == 1 or label is not None):
        layers.append(_BinaryProba(0 if model.n_outputs_ == 1 else label))
    else:
        raise ValueError(
            f"mlp_to_torch supports binary and multiclass classifiers, and one label of a "
            f"multilabel one (label=); got output activation {model.out_activation_!r} with "
            f"{model.n_outputs_} outputs (multilabel)."
        )
    return nn.Sequential(*layers).eval()


def train_torch(make_model, X, y, epochs, seed=TRAIN_SEED, *, batch_size=64, lr=1e-3,
                weight_decay=0):
    """``make_model()``, built after seeding torch, trained on its ``logits`` with Adam."""
    torch.manual_seed(seed)
    model = make_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    X_t, y_t = torch.as_tensor(X), torch.as_tensor(y)
    for _ in range(epochs):
        for batch in torch.randperm(len(X)).split(batch_size):
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model.logits(X_t[batch]), y_t[batch]).backward()
            optimizer.step()
    return model.eval()


def check_torch_copy(model, net, X, *, atol=1e-5):
    """The largest gap between the torch copy and ``predict_proba``; raise above ``atol``."""
    with torch.inference_mode():
        copied = net(torch.as_tensor(X, dtype=torch.float32)).numpy()
    gap = float(np.max(np.abs(copied - model.predict_proba(X))))
    if gap > atol:
        raise RuntimeError(f"The torch copy of the black box differs by {gap:.2e} > {atol}.")
    return gap


def prepare(spec, profile, device, needs_evaluator):
    """What the methods share on ``spec``: its rows, its black box (an MLP on sampled labels),
    if asked its EVAL-X evaluator; ``proba_explain``: the generator's P(y = 1 | x), ``cache``:
    what later measurements compare with (other seeds' masks)."""
    X_train, y_train, _ = spec.draw(profile.n_train, TRAIN_SEED)
    X_explain, y_explain, relevant, proba_explain = spec.draw(profile.n_explain, EXPLAIN_SEED,
                                                              return_proba=True)
    X_timing, _, _ = spec.draw(profile.n_timing, TIMING_SEED)
    if profile.n_black_box:
        X_black_box, y_black_box, _ = spec.draw(profile.n_black_box, BLACK_BOX_SEED)
    else:
        X_black_box, y_black_box = X_train, y_train
    model, fit_s = fit_mlp(X_black_box, y_black_box, (200, 200, 200))
    torch_model = mlp_to_torch(model)
    check_torch_copy(model, torch_model, X_explain)
    data = SimpleNamespace(
        X_train=X_train, X_explain=X_explain, y_explain=y_explain, proba_explain=proba_explain,
        relevant_explain=relevant, X_timing=X_timing, model=model,
        torch_model=torch_model.to(device), black_box_fit_s=fit_s,
        black_box_acc=float(np.mean(model.predict(X_explain) == y_explain)), evaluator=None,
        evaluator_fit_s=None, evaluator_error=None, cache={})
    if needs_evaluator:
        fit_evaluator(data, profile, device)
    return data


def fit_evaluator(data, profile, device):
    """Store the fitted EVAL-X evaluator of ``data`` and its seconds, or its error, in it."""
    evaluator = metrics.EvalXEvaluator(random_state=TRAIN_SEED, device=str(device),
                                       **profile.params_for("evalx"))
    try:
        data.evaluator_fit_s = elapsed(lambda: evaluator.fit(data.X_train,
                                                             black_box=data.model))[1]
        data.evaluator = evaluator
    except Exception as exc:  # noqa: BLE001 - recorded; the methods still run without eACC
        data.evaluator_error = f"{type(exc).__name__}: {exc}"
