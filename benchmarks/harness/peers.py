"""The per-row peers: shap's KernelExplainer and TreeExplainer, LIME and captum.

An attribution function takes ``(data, profile, device)`` and returns the attributions of
the explained rows, the seconds spent before the first row and the seconds spent explaining
them; a peer's mask is the top-k of ``|attribution|``. Each explains one class a row
(:func:`explained_classes`), each output of a multi-output model in turn.
"""

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from sklearn.base import is_classifier

from .data import EXPLAIN_SEED
from .timing import elapsed


def explained_classes(model, X):
    """The black box's predicted class a row; for a binary one class 1 everywhere (every peer
    is linear in its output, so class 0 would get the same attributions negated)."""
    return _explained_columns(model.predict_proba(X))


def _explained_columns(proba):
    if proba.shape[1] == 2:
        return np.ones(len(proba), dtype=np.int64)
    return proba.argmax(axis=1)


@dataclass(frozen=True)
class ExplainedOutput:
    """One output of a model: ``values(rows)``, a matrix (class probabilities, or the
    prediction as one column), and the column explained in each explained row."""

    values: Callable
    columns: np.ndarray
    regression: bool

    def column(self, c):
        return lambda rows: self.values(rows)[:, c]


def explained_outputs(model, X):
    """What the peers explain of ``model`` in the rows ``X``, an entry per output: a
    classifier's probability of the :func:`explained_classes`, a regressor's prediction."""
    if is_classifier(model):
        proba = model.predict_proba(X)
        if not isinstance(proba, list):
            return [ExplainedOutput(model.predict_proba, _explained_columns(proba), False)]
        # One probability matrix per output (MultiOutputClassifier, forests).
        return [ExplainedOutput(lambda rows, i=i: model.predict_proba(rows)[i],
                                _explained_columns(np.asarray(block)), False)
                for i, block in enumerate(proba)]
    n_outputs = _predictions(model, X[:1]).shape[1]
    return [ExplainedOutput(lambda rows, j=j: _predictions(model, rows)[:, [j]],
                            np.zeros(len(X), dtype=np.int64), True)
            for j in range(n_outputs)]


def _predictions(model, rows):
    return np.asarray(model.predict(rows)).reshape(len(rows), -1)


def combine_outputs(per_output):
    """One output's attributions as they are; of several, each output's ``|attribution|`` as
    a share of its row's total, summed, so that every output weighs the same."""
    if len(per_output) == 1:
        return per_output[0]
    shares = [np.abs(a) / np.maximum(np.abs(a).sum(axis=1, keepdims=True), 1e-12)
              for a in per_output]
    return np.sum(shares, axis=0)


def topk_of_abs(attributions, k):
    """k-hot masks of the largest ``|attribution|``; ties go to the lower index."""
    order = np.argsort(-np.abs(attributions), axis=1, kind="stable")[:, :k]
    masks = np.zeros(attributions.shape, dtype=np.float32)
    np.put_along_axis(masks, order, 1.0, axis=1)
    return masks


def random_present(rows, k, seed):
    """k of each row's own words or tokens (its entries above 0) at random, all of them when
    it has fewer."""
    draws = np.random.default_rng(seed).random(rows.shape)
    return topk_of_abs(np.where(rows > 0, 1.0 + draws, 0.0), k)


def run_peer(method, spec, data, profile, device):
    """The top-k masks of ``method``'s attributions, its timings and the attributions."""
    attributions, setup_s, explain_s = method.attribute(data, profile, device)
    return topk_of_abs(attributions, method.k_for(spec)), {
        "fit_s": None, "setup_s": setup_s, "explain_timing": "single run",
        "explain_ms_per_row": 1000 * explain_s / len(data.X_explain)}, attributions


def _each_output(data, setup, explain, *, seed_numpy=False):
    """Time ``setup(outputs)`` (an explainer an output), then ``explain(output, explainer)``
    (its attributions) over the outputs; their :func:`combine_outputs` and both times."""
    outputs = explained_outputs(data.model, data.X_explain)
    explainers, setup_s = elapsed(lambda: setup(outputs))
    if seed_numpy:  # shap's KernelExplainer samples coalitions from numpy's generator
        np.random.seed(EXPLAIN_SEED)
    per_output, explain_s = elapsed(lambda: [explain(output, explainer)
                                             for output, explainer in zip(outputs, explainers)])
    return combine_outputs(per_output), setup_s, explain_s


def shap_kernel(data, profile, device):
    """shap's KernelExplainer with a k-means background, one explainer a class."""
    import shap

    X = data.X_explain

    def setup(outputs):
        background = shap.kmeans(data.X_train, 10)
        return [{c: shap.KernelExplainer(output.column(c), background)
                 for c in np.unique(output.columns)} for output in outputs]

    def explain(output, by_column):
        attributions = np.zeros(X.shape)
        for c, explainer in by_column.items():
            rows = output.columns == c
            values = explainer.shap_values(X[rows], nsamples=profile.shap_nsamples, silent=True)
            attributions[rows] = np.asarray(values).reshape(X[rows].shape)
        return attributions

    return _each_output(data, setup, explain, seed_numpy=True)


def lime_tabular(data, profile, device):
    """LIME's tabular explainer, one row at a time."""
    from lime.lime_tabular import LimeTabularExplainer

    X = data.X_explain

    def explain(output, explainer):
        attributions = np.zeros(X.shape)
        # Regression takes one prediction a row, classification every class's probability.
        predict = output.column(0) if output.regression else output.values
        for i, (row, c) in enumerate(zip(X, output.columns.tolist())):
            explanation = explainer.explain_instance(
                row, predict, num_features=X.shape[1], labels=(c,),
                num_samples=profile.lime_num_samples,
            )
            # A regression explanation is under key 1 (key 0 holds it negated).
            for j, weight in explanation.as_map()[1 if output.regression else c]:
                attributions[i, j] = weight
        return attributions

    return _each_output(data, lambda outputs: [
        LimeTabularExplainer(data.X_train, random_state=EXPLAIN_SEED,
                             mode="regression" if output.regression else "classification")
        for output in outputs], explain)


def _shap_tree(data, perturbation):
    """shap's TreeExplainer, ``"interventional"`` (the training mean as the one background
    row: the mean fill of every fidelity here; probabilities where shap has them) or
    ``"tree_path_dependent"`` (the trees' own cover, raw outputs)."""
    import shap

    X, model = data.X_explain, data.model

    def setup(outputs):
        params = {"feature_perturbation": perturbation}
        if perturbation == "interventional":
            params["data"] = data.X_train.mean(axis=0, keepdims=True)
            if is_classifier(model):
                params["model_output"] = "probability"
        # One tree ensemble an output (a MultiOutputClassifier's estimators).
        trees = list(getattr(model, "estimators_", None) or [model]) \
            if type(model).__name__ == "MultiOutputClassifier" else [model]
        return [_tree_explainer(shap, tree, params) for tree in trees]

    def explain(output, explainer):
        values = np.asarray(explainer.shap_values(X, check_additivity=False))
        if values.ndim == 3:  # (rows, features, classes): each row's explained class
            values = values[np.arange(len(X)), :, output.columns]
        return values.reshape(X.shape)

    return _each_output(data, setup, explain)


def _tree_explainer(shap, tree, params):
    try:
        return shap.TreeExplainer(tree, **params)
    except NotImplementedError:  # a multi-class HistGradientBoostingClassifier: raw scores
        return shap.TreeExplainer(tree, **{**params, "model_output": "raw"})


def shap_tree_interventional(data, profile, device):
    """TreeSHAP, interventional, the training mean as the background."""
    return _shap_tree(data, "interventional")


def shap_tree_path(data, profile, device):
    """TreeSHAP, path-dependent (no background)."""
    return _shap_tree(data, "tree_path_dependent")


def gradients(name, model, X_t, targets, n_steps=50, baselines=None):
    """captum's Saliency (``name="saliency"``, the absolute gradient) or IntegratedGradients
    (from ``baselines``, default zero) of the ``targets`` outputs of the torch ``model``."""
    from captum.attr import IntegratedGradients, Saliency

    targets = torch.as_tensor(targets, device=X_t.device)
    if name == "saliency":
        # requires_grad is set beforehand, else Saliency warns that it had to set it.
        return Saliency(model).attribute(X_t.requires_grad_(True), target=targets, abs=True)
    return IntegratedGradients(model).attribute(X_t, baselines=baselines, target=targets,
                                                n_steps=n_steps)


def kernel_shap(model, X_t, targets, n_samples, feature_mask=None):
    """captum's KernelShap of the ``targets`` outputs of the torch ``model``, ``n_samples``
    coalitions a row (of the groups of ``feature_mask``), from torch's generator."""
    from captum.attr import KernelShap

    explainer = KernelShap(model)
    # One row at a time: captum fits one surrogate per row anyway, and warns on batches.
    return torch.cat([
        explainer.attribute(X_t[i : i + 1], target=int(c), feature_mask=feature_mask,
                            n_samples=n_samples, perturbations_per_eval=n_samples)
        for i, c in enumerate(targets)
    ])


def _captum(data, device, attribute):
    """Time ``attribute(X_t, classes)`` on the explained rows, on ``device``."""
    X_t = torch.as_tensor(np.asarray(data.X_explain, dtype=np.float32), device=device)
    classes = explained_classes(data.model, data.X_explain)
    torch.manual_seed(EXPLAIN_SEED)  # KernelShap samples coalitions from torch's generator
    attributions, explain_s = elapsed(lambda: attribute(X_t, classes), X_t.device)
    return attributions.detach().cpu().numpy(), 0.0, explain_s


def saliency(data, profile, device):
    """captum's Saliency: the absolute gradient of the explained class's probability."""
    return _captum(data, device, lambda X_t, classes: gradients(
        "saliency", data.torch_model, X_t, classes))


def integrated_gradients(data, profile, device):
    """captum's IntegratedGradients from the all-zero baseline."""
    return _captum(data, device, lambda X_t, classes: gradients(
        "integrated_gradients", data.torch_model, X_t, classes))


def integrated_gradients_mean(data, profile, device):
    """captum's IntegratedGradients from the training mean."""
    baseline = torch.as_tensor(data.X_train.mean(axis=0, keepdims=True), dtype=torch.float32,
                               device=device)
    return _captum(data, device, lambda X_t, classes: gradients(
        "integrated_gradients", data.torch_model, X_t, classes, baselines=baseline))


def captum_kernel_shap(data, profile, device):
    """captum's KernelShap, one row at a time."""
    return _captum(data, device, lambda X_t, classes: kernel_shap(
        data.torch_model, X_t, classes, profile.captum_kernel_shap_samples))
