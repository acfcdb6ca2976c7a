"""The per-row peers: shap's KernelExplainer, LIME and captum's attribution methods.

Each peer explains every explained row from scratch, on the black box (shap, LIME) or on
its torch copy (captum), and its mask is the top-k of ``|attribution|``. An attribution
function takes ``(data, profile, device)`` and returns ``(attributions, setup_s,
explain_s)``: attributions of shape ``(n_explain, n_features)``, the seconds spent before
the first row (building the explainer) and the seconds spent explaining the rows.

Every peer explains one class per row, given by :func:`explained_classes`: the probability
of that class for a classifier, the prediction for a regressor. shap and LIME explain each
output of a multi-output model in turn (:func:`explained_outputs`).
"""

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from sklearn.base import is_classifier

from .data import EXPLAIN_SEED
from .timing import elapsed


def explained_classes(model, X):
    """The column of ``model.predict_proba`` a peer explains, for every row of ``X``.

    The black box's predicted class; for a binary black box class 1 in every row. The
    probability of class 0 is one minus that of class 1, and every peer here is linear in
    the output it explains (gradients, path integrals of gradients, the weighted linear
    regressions of KernelSHAP and LIME), so class 0 gets the attributions of class 1
    negated, and the top-k of ``|attribution|`` is the same for either class.
    """
    return _explained_columns(model.predict_proba(X))


def _explained_columns(proba):
    if proba.shape[1] == 2:
        return np.ones(len(proba), dtype=np.int64)
    return proba.argmax(axis=1)


@dataclass(frozen=True)
class ExplainedOutput:
    """One output of a model as a peer explains it.

    ``values(rows)`` gives a matrix (class probabilities, or the prediction as one column)
    and ``columns`` the column explained in every explained row; ``regression`` tells LIME
    which mode to use.
    """

    values: Callable
    columns: np.ndarray
    regression: bool

    def column(self, c):
        """``rows -> values(rows)[:, c]``: the one output KernelExplainer explains."""
        return lambda rows: self.values(rows)[:, c]


def explained_outputs(model, X):
    """What the peers explain of ``model`` in the rows ``X``: one entry per output.

    A classifier's probability of the class :func:`explained_classes` gives (a multi-output
    classifier: the same rule for each of its outputs), a regressor's prediction.
    """
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
    """A regressor's predictions as a matrix, one column per output."""
    return np.asarray(model.predict(rows)).reshape(len(rows), -1)


def combine_outputs(per_output):
    """The attributions of one output as they are; for several outputs, each output's
    ``|attribution|`` as a share of its row's total, summed, so that every output weighs
    the same in the top-k whatever its units."""
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


def run_peer(method, spec, data, profile, device):
    """The top-k masks of ``method``'s attributions of the explained rows, its timings and
    the attributions."""
    attributions, setup_s, explain_s = method.attribute(data, profile, device)
    return topk_of_abs(attributions, method.k_for(spec)), {
        "fit_s": None, "setup_s": setup_s, "explain_timing": "single run",
        "explain_ms_per_row": 1000 * explain_s / len(data.X_explain)}, attributions


def shap_kernel(data, profile, device):
    """shap's KernelExplainer on the explained output (:func:`explained_outputs`), k-means
    background."""
    import shap

    X = data.X_explain
    outputs = explained_outputs(data.model, X)
    start = time.perf_counter()
    background = shap.kmeans(data.X_train, 10)
    # KernelExplainer explains one output for all the rows it is given: one per class.
    explainers = [
        {c: shap.KernelExplainer(output.column(c), background) for c in np.unique(output.columns)}
        for output in outputs
    ]
    setup_s = time.perf_counter() - start
    np.random.seed(EXPLAIN_SEED)  # KernelExplainer samples coalitions from numpy's generator
    per_output = []
    start = time.perf_counter()
    for output, by_column in zip(outputs, explainers):
        attributions = np.zeros(X.shape)
        for c, explainer in by_column.items():
            rows = output.columns == c
            values = explainer.shap_values(X[rows], nsamples=profile.shap_nsamples, silent=True)
            attributions[rows] = np.asarray(values).reshape(X[rows].shape)
        per_output.append(attributions)
    explain_s = time.perf_counter() - start
    return combine_outputs(per_output), setup_s, explain_s


def lime_tabular(data, profile, device):
    """LIME's tabular explainer on the explained output (:func:`explained_outputs`)."""
    from lime.lime_tabular import LimeTabularExplainer

    X = data.X_explain
    outputs = explained_outputs(data.model, X)
    start = time.perf_counter()
    explainers = [
        LimeTabularExplainer(data.X_train, random_state=EXPLAIN_SEED,
                             mode="regression" if output.regression else "classification")
        for output in outputs
    ]
    setup_s = time.perf_counter() - start
    per_output = []
    start = time.perf_counter()
    for output, explainer in zip(outputs, explainers):
        attributions = np.zeros(X.shape)
        # LIME's regression mode takes one prediction a row, its classification mode every
        # class's probability.
        predict = output.column(0) if output.regression else output.values
        for i, (row, c) in enumerate(zip(X, output.columns.tolist())):
            explanation = explainer.explain_instance(
                row, predict, num_features=X.shape[1], labels=(c,),
                num_samples=profile.lime_num_samples,
            )
            # A regression explanation is under key 1 (key 0 holds it negated).
            for j, weight in explanation.as_map()[1 if output.regression else c]:
                attributions[i, j] = weight
        per_output.append(attributions)
    explain_s = time.perf_counter() - start
    return combine_outputs(per_output), setup_s, explain_s


def gradients(name, model, X_t, targets, n_steps=50):
    """captum's Saliency (``name="saliency"``: the absolute gradient) or
    IntegratedGradients (``n_steps`` from the all-zero baseline) of the ``targets`` outputs of
    the torch ``model`` on ``X_t``; also the image and MEED studies' gradient peers."""
    from captum.attr import IntegratedGradients, Saliency

    targets = torch.as_tensor(targets, device=X_t.device)
    if name == "saliency":
        # requires_grad is set beforehand, else Saliency warns that it had to set it.
        return Saliency(model).attribute(X_t.requires_grad_(True), target=targets, abs=True)
    return IntegratedGradients(model).attribute(X_t, target=targets, n_steps=n_steps)


def saliency(data, profile, device):
    """captum's Saliency: the absolute gradient of the explained class's probability."""
    return _captum(data, device, lambda X_t, classes: gradients("saliency", data.torch_model,
                                                                 X_t, classes))


def integrated_gradients(data, profile, device):
    """captum's IntegratedGradients from the all-zero baseline."""
    return _captum(data, device, lambda X_t, classes: gradients(
        "integrated_gradients", data.torch_model, X_t, classes))


def captum_kernel_shap(data, profile, device):
    """captum's KernelShap, one row at a time."""
    return _captum(data, device, lambda X_t, classes: kernel_shap(
        data.torch_model, X_t, classes, profile.captum_kernel_shap_samples))


def kernel_shap(model, X_t, targets, n_samples, feature_mask=None):
    """captum's KernelShap of the ``targets`` outputs of the torch ``model``, ``n_samples``
    coalitions a row (of the groups of ``feature_mask``, if given: the image study's
    patches), from torch's generator."""
    from captum.attr import KernelShap

    explainer = KernelShap(model)
    # One row at a time: captum fits one surrogate per row anyway, and warns on batches.
    return torch.cat([
        explainer.attribute(X_t[i : i + 1], target=int(c), feature_mask=feature_mask,
                            n_samples=n_samples, perturbations_per_eval=n_samples)
        for i, c in enumerate(targets)
    ])


def _captum(data, device, attribute):
    """Time ``attribute(X_t, classes)`` on the explained rows and the torch copy's device;
    ``classes`` are the rows' :func:`explained_classes`."""
    X_t = torch.as_tensor(np.asarray(data.X_explain, dtype=np.float32), device=device)
    classes = explained_classes(data.model, data.X_explain)
    torch.manual_seed(EXPLAIN_SEED)  # KernelShap samples coalitions from torch's generator
    attributions, explain_s = elapsed(lambda: attribute(X_t, classes), X_t.device)
    return attributions.detach().cpu().numpy(), 0.0, explain_s


def _tree_models(model):
    """The tree ensembles behind ``model``, one per output (a ``MultiOutputClassifier``'s
    estimators; the model itself otherwise)."""
    return list(getattr(model, "estimators_", None) or [model]) \
        if type(model).__name__ == "MultiOutputClassifier" else [model]


def _shap_tree(data, perturbation):
    """shap's TreeExplainer on each output's explained column (:func:`explained_outputs`):
    ``"interventional"`` with the training mean as the one background row (the exact
    Shapley values of the mean fill every fidelity here uses, of the probabilities for a
    classifier where shap computes them, see :func:`_tree_explainer`), or ``"tree_path_dependent"`` (the trees' own cover, raw outputs)."""
    import shap

    X = data.X_explain
    outputs = explained_outputs(data.model, X)
    start = time.perf_counter()
    params = {"feature_perturbation": perturbation}
    if perturbation == "interventional":
        params["data"] = data.X_train.mean(axis=0, keepdims=True)
        if is_classifier(data.model):
            params["model_output"] = "probability"
    explainers = [_tree_explainer(tree, params) for tree in _tree_models(data.model)]
    setup_s = time.perf_counter() - start
    per_output = []
    start = time.perf_counter()
    for output, explainer in zip(outputs, explainers):
        values = np.asarray(explainer.shap_values(X, check_additivity=False))
        if values.ndim == 3:  # (rows, features, classes): each row's explained class
            values = values[np.arange(len(X)), :, output.columns]
        per_output.append(values.reshape(X.shape))
    explain_s = time.perf_counter() - start
    return combine_outputs(per_output), setup_s, explain_s


def _tree_explainer(tree, params):
    """A TreeExplainer of the probabilities where shap has one for the model (it has none for
    a multi-class HistGradientBoostingClassifier: there, of its raw scores)."""
    import shap

    try:
        return shap.TreeExplainer(tree, **params)
    except NotImplementedError:
        return shap.TreeExplainer(tree, **{**params, "model_output": "raw"})


def shap_tree_interventional(data, profile, device):
    """TreeSHAP, interventional, the training mean as the background."""
    return _shap_tree(data, "interventional")


def shap_tree_path(data, profile, device):
    """TreeSHAP, path-dependent (no background)."""
    return _shap_tree(data, "tree_path_dependent")


def integrated_gradients_mean(data, profile, device):
    """captum's IntegratedGradients of the torch network's explained class, from the
    training mean (the fill every fidelity here uses)."""
    from captum.attr import IntegratedGradients

    baseline = torch.as_tensor(data.X_train.mean(axis=0, keepdims=True), dtype=torch.float32,
                               device=device)
    return _captum(data, device, lambda X_t, classes: IntegratedGradients(
        data.torch_model).attribute(X_t, baselines=baseline,
                                    target=torch.as_tensor(classes, device=device), n_steps=50))
