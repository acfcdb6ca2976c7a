"""The per-row peers: shap's KernelExplainer, LIME and captum's attribution methods.

Each peer explains every explained row from scratch, on the black box (shap, LIME) or on
its torch copy (captum), and its mask is the top-k of ``|attribution|``. An attribution
function takes ``(data, profile, device)`` and returns ``(attributions, setup_s,
explain_s)``: attributions of shape ``(n_explain, n_features)``, the seconds spent before
the first row (building the explainer) and the seconds spent explaining the rows.

Every peer explains one class per row, given by :func:`explained_classes`.
"""

import time

import numpy as np
import torch

from .data import EXPLAIN_SEED
from .timing import sync


def explained_classes(model, X):
    """The column of ``model.predict_proba`` a peer explains, for every row of ``X``.

    The black box's predicted class; for a binary black box class 1 in every row. The
    probability of class 0 is one minus that of class 1, and every peer here is linear in
    the output it explains (gradients, path integrals of gradients, the weighted linear
    regressions of KernelSHAP and LIME), so class 0 gets the attributions of class 1
    negated, and the top-k of ``|attribution|`` is the same for either class.
    """
    proba = model.predict_proba(X)
    if proba.shape[1] == 2:
        return np.ones(len(X), dtype=np.int64)
    return proba.argmax(axis=1)


def topk_of_abs(attributions, k):
    """k-hot masks of the largest ``|attribution|``; ties go to the lower index."""
    order = np.argsort(-np.abs(attributions), axis=1, kind="stable")[:, :k]
    masks = np.zeros(attributions.shape, dtype=np.float32)
    np.put_along_axis(masks, order, 1.0, axis=1)
    return masks


def run_peer(method, spec, data, profile, device):
    """Attributions of ``method`` on the explained rows; their top-k masks and timings."""
    attributions, setup_s, explain_s = method.attribute(data, profile, device)
    return topk_of_abs(attributions, method.k_for(spec)), {
        "fit_s": None,
        "setup_s": setup_s,
        "explain_ms_per_row": 1000 * explain_s / len(data.X_explain),
        "explain_timing": "single run",
    }


def shap_kernel(data, profile, device):
    """shap's KernelExplainer on the probability of the explained class, k-means background."""
    import shap

    X = data.X_explain
    classes = explained_classes(data.model, X)
    start = time.perf_counter()
    background = shap.kmeans(data.X_train, 10)
    # KernelExplainer explains one output for all the rows it is given: one per class.
    explainers = {
        c: shap.KernelExplainer(lambda rows, c=c: data.model.predict_proba(rows)[:, c], background)
        for c in np.unique(classes)
    }
    setup_s = time.perf_counter() - start
    np.random.seed(EXPLAIN_SEED)  # KernelExplainer samples coalitions from numpy's generator
    attributions = np.zeros(X.shape)
    start = time.perf_counter()
    for c, explainer in explainers.items():
        rows = classes == c
        values = explainer.shap_values(X[rows], nsamples=profile.shap_nsamples, silent=True)
        attributions[rows] = np.asarray(values).reshape(X[rows].shape)
    explain_s = time.perf_counter() - start
    return attributions, setup_s, explain_s


def lime_tabular(data, profile, device):
    """LIME's tabular explainer on the probability of the explained class."""
    from lime.lime_tabular import LimeTabularExplainer

    X = data.X_explain
    classes = explained_classes(data.model, X)
    start = time.perf_counter()
    explainer = LimeTabularExplainer(data.X_train, mode="classification",
                                     random_state=EXPLAIN_SEED)
    setup_s = time.perf_counter() - start
    attributions = np.zeros(X.shape)
    start = time.perf_counter()
    for i, (row, c) in enumerate(zip(X, classes.tolist())):
        explanation = explainer.explain_instance(
            row, data.model.predict_proba, num_features=X.shape[1], labels=(c,),
            num_samples=profile.lime_num_samples,
        )
        for j, weight in explanation.as_map()[c]:
            attributions[i, j] = weight
    explain_s = time.perf_counter() - start
    return attributions, setup_s, explain_s


def saliency(data, profile, device):
    """captum's Saliency: the absolute gradient of the explained class's probability."""
    from captum.attr import Saliency

    def attribute(X_t, classes):
        targets = torch.as_tensor(classes, device=X_t.device)
        return Saliency(data.torch_model).attribute(X_t, target=targets, abs=True)

    # requires_grad is set beforehand, else Saliency warns that it had to set it.
    return _captum(data, device, attribute, requires_grad=True)


def integrated_gradients(data, profile, device):
    """captum's IntegratedGradients from the all-zero baseline."""
    from captum.attr import IntegratedGradients

    def attribute(X_t, classes):
        targets = torch.as_tensor(classes, device=X_t.device)
        return IntegratedGradients(data.torch_model).attribute(X_t, target=targets)

    return _captum(data, device, attribute)


def captum_kernel_shap(data, profile, device):
    """captum's KernelShap, one row at a time."""
    from captum.attr import KernelShap

    n_samples = profile.captum_kernel_shap_samples

    def attribute(X_t, classes):
        kernel_shap = KernelShap(data.torch_model)
        # One row at a time: captum fits one surrogate per row anyway, and warns on batches.
        return torch.cat([
            kernel_shap.attribute(X_t[i : i + 1], target=c, n_samples=n_samples,
                                  perturbations_per_eval=n_samples)
            for i, c in enumerate(classes.tolist())
        ])

    return _captum(data, device, attribute)


def _captum(data, device, attribute, *, requires_grad=False):
    """Time ``attribute(X_t, classes)`` on the explained rows and the torch copy's device;
    ``classes`` are the rows' :func:`explained_classes`."""
    X_t = torch.as_tensor(np.asarray(data.X_explain, dtype=np.float32), device=device)
    X_t.requires_grad_(requires_grad)
    classes = explained_classes(data.model, data.X_explain)
    torch.manual_seed(EXPLAIN_SEED)  # KernelShap samples coalitions from torch's generator
    start = time.perf_counter()
    attributions = attribute(X_t, classes)
    sync(X_t.device)
    explain_s = time.perf_counter() - start
    return attributions.detach().cpu().numpy(), 0.0, explain_s
