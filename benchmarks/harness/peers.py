"""The per-row peers: shap's KernelExplainer and TreeExplainer, LIME and captum.

An attribution function takes ``(data, profile, device)`` and returns the attributions of
the explained rows, the seconds before the first row and those explaining them; a peer's
mask is the top-k of ``|attribution|``. Each explains one class a row, of every output.
"""

import functools
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
    return np.ones(len(proba), dtype=np.int64) if proba.shape[1] == 2 else proba.argmax(axis=1)


@dataclass(frozen=True)
class ExplainedOutput:
    """One output of a model: ``values(rows)`` (class probabilities, or the prediction as one
    column) and the column explained in each explained row."""

    values: Callable
    columns: np.ndarray
    regression: bool

    def column(self, c):
        return lambda rows: self.values(rows)[:, c]


def explained_outputs(model, X):
    """What the peers explain of ``model`` in the rows ``X``, an entry per output."""
    if not is_classifier(model):
        def predict(rows):
            return np.asarray(model.predict(rows)).reshape(len(rows), -1)
        return [ExplainedOutput(lambda rows, j=j: predict(rows)[:, [j]],
                                np.zeros(len(X), dtype=np.int64), True)
                for j in range(predict(X[:1]).shape[1])]
    proba = model.predict_proba(X)
    if not isinstance(proba, list):
        return [ExplainedOutput(model.predict_proba, _explained_columns(proba), False)]
    # One probability matrix per output (MultiOutputClassifier, forests).
    return [ExplainedOutput(lambda rows, i=i: model.predict_proba(rows)[i],
                            _explained_columns(np.asarray(block)), False)
            for i, block in enumerate(proba)]


def combine_outputs(per_output):
    """One output's attributions; of several, each one's ``|attribution|`` as a share of its
    row's total, summed, so that every output weighs the same."""
    if len(per_output) == 1:
        return per_output[0]
    return np.sum([np.abs(a) / np.maximum(np.abs(a).sum(axis=1, keepdims=True), 1e-12)
                   for a in per_output], axis=0)


def topk_of_abs(attributions, k):
    """k-hot masks of the largest ``|attribution|``; ties go to the lower index."""
    order = np.argsort(-np.abs(attributions), axis=1, kind="stable")[:, :k]
    masks = np.zeros(attributions.shape, dtype=np.float32)
    np.put_along_axis(masks, order, 1.0, axis=1)
    return masks


def random_present(rows, k, seed):
    """k of each row's entries above 0 (its words or tokens) at random, all if it has fewer."""
    draws = np.random.default_rng(seed).random(rows.shape)
    return topk_of_abs(np.where(rows > 0, 1.0 + draws, 0.0), k)


def run_peer(method, spec, data, profile, device):
    """The top-k masks of ``method``'s attributions, its timings and the attributions."""
    attributions, setup_s, explain_s = method.attribute(data, profile, device)
    return topk_of_abs(attributions, method.k_for(spec)), {
        "fit_s": None, "setup_s": setup_s, "explain_timing": "single run",
        "explain_ms_per_row": 1000 * explain_s / len(data.X_explain)}, attributions


def _each_output(data, setup, explain, *, seed_numpy=False):
    """The combined ``explain(output, explainer)`` of the explainers of ``setup(outputs)``, and
    the seconds of both."""
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
            explanation = explainer.explain_instance(row, predict, num_features=X.shape[1],
                                                     labels=(c,),
                                                     num_samples=profile.lime_num_samples)
            # A regression explanation is under key 1 (key 0 holds it negated).
            for j, weight in explanation.as_map()[1 if output.regression else c]:
                attributions[i, j] = weight
        return attributions

    return _each_output(data, lambda outputs: [
        LimeTabularExplainer(data.X_train, random_state=EXPLAIN_SEED,
                             mode="regression" if output.regression else "classification")
        for output in outputs], explain)


def _shap_tree(perturbation, data, profile, device):
    """shap's TreeExplainer, ``"interventional"`` (the training mean as the one background
    row: the mean fill of every fidelity here; probabilities where shap has them) or
    ``"tree_path_dependent"`` (the trees' own cover, raw outputs)."""
    import shap
    X, model = data.X_explain, data.model

    def tree_explainer(tree):
        params = {"feature_perturbation": perturbation}
        if perturbation == "interventional":
            params["data"] = data.X_train.mean(axis=0, keepdims=True)
            if is_classifier(model):
                params["model_output"] = "probability"
        try:
            return shap.TreeExplainer(tree, **params)
        except NotImplementedError:  # a multi-class HistGradientBoostingClassifier: raw scores
            return shap.TreeExplainer(tree, **{**params, "model_output": "raw"})

    def explain(output, explainer):
        values = np.asarray(explainer.shap_values(X, check_additivity=False))
        if values.ndim == 3:  # (rows, features, classes): each row's explained class
            values = values[np.arange(len(X)), :, output.columns]
        return values.reshape(X.shape)

    # One tree ensemble an output (a MultiOutputClassifier's estimators).
    trees = list(getattr(model, "estimators_", None) or [model]) \
        if type(model).__name__ == "MultiOutputClassifier" else [model]
    return _each_output(data, lambda outputs: [tree_explainer(tree) for tree in trees],
                        explain)


shap_tree_interventional = functools.partial(_shap_tree, "interventional")
shap_tree_path = functools.partial(_shap_tree, "tree_path_dependent")


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


def _captum(name, data, profile, device):
    """captum's ``name`` on the explained rows of ``data.torch_model``, timed on ``device``:
    Saliency, IntegratedGradients from zero (``_mean``: from the training mean), KernelShap."""
    X_t = torch.as_tensor(np.asarray(data.X_explain, dtype=np.float32), device=device)
    classes = explained_classes(data.model, data.X_explain)
    if name == "captum_kernel_shap":
        attribute = functools.partial(kernel_shap, data.torch_model, X_t, classes,
                                      profile.captum_kernel_shap_samples)
    else:
        baselines = None
        if name.endswith("_mean"):
            baselines = torch.as_tensor(data.X_train.mean(axis=0, keepdims=True),
                                        dtype=torch.float32, device=device)
        attribute = functools.partial(gradients, name.removesuffix("_mean"), data.torch_model,
                                      X_t, classes, baselines=baselines)
    torch.manual_seed(EXPLAIN_SEED)  # KernelShap samples coalitions from torch's generator
    attributions, explain_s = elapsed(attribute, X_t.device)
    return attributions.detach().cpu().numpy(), 0.0, explain_s


saliency = functools.partial(_captum, "saliency")
integrated_gradients = functools.partial(_captum, "integrated_gradients")
integrated_gradients_mean = functools.partial(_captum, "integrated_gradients_mean")
captum_kernel_shap = functools.partial(_captum, "captum_kernel_shap")
