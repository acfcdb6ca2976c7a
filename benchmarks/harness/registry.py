"""The methods the harness benchmarks, in table order: adding a method is adding a
:class:`Method` to :data:`METHODS`."""

import importlib
from dataclasses import dataclass
from typing import Callable

import sk_sointer

from . import peers
from .ours import run_amortized


@dataclass(frozen=True)
class Method:
    """One method: ours build an ``estimator(k=..., **params)`` (the profile's parameters under
    ``params_key``), a peer's ``attribute`` is a function of :mod:`.peers`. ``k_for(spec)``:
    the k of its masks on a data set (``None``: its own threshold); a method whose ``package``
    (or its attribute ``requires``) is missing is skipped; ``target_output``: ours explaining
    one output of a whole multi-output black box (``target=``; the structured study only);
    ``kind``: how a study measures it (by default ``"ours"`` or ``"peer"``)."""

    name: str
    label: str
    package: str
    estimator: Callable = None
    attribute: Callable = None
    params_key: str = None
    k_for: Callable = lambda spec: spec.k
    requires: str = None
    target_output: bool = False
    kind: str = None

    def __post_init__(self):
        if self.kind is None:
            object.__setattr__(self, "kind", "ours" if self.estimator is not None else "peer")

    @property
    def amortized(self):
        """Whether the method is one of ours: fitted once, then a forward pass a row."""
        return self.kind == "ours"

    def run(self, spec, data, profile, device):
        """The masks of the explained rows, timings, the explainer or the attributions."""
        runner = run_amortized if self.amortized else peers.run_peer
        return runner(self, spec, data, profile, device)


METHODS = {
    method.name: method
    for method in [
        Method("l2x", "L2X", "sk_sointer", estimator=sk_sointer.L2XExplainer,
               params_key="l2x"),
        # REAL-X's own thresholded selection on S1-S3, as in its Table 1.
        Method("realx", "REAL-X", "sk_sointer", estimator=sk_sointer.RealXExplainer,
               params_key="realx", k_for=lambda spec: None if spec.control_flow else spec.k),
        Method("meed", "MEED", "sk_sointer", estimator=sk_sointer.MEEDExplainer,
               params_key="meed"),
        # Trained at the rate k / n_features (its selection_rate=None), the top k kept.
        Method("hardkuma", "HardKuma", "sk_sointer", estimator=sk_sointer.HardKumaExplainer,
               params_key="hardkuma"),
        # The paper's MEED: the selector also reads the black box's output (off by default).
        Method("meed_feedback", "MEED (output feedback)", "sk_sointer",
               estimator=lambda **params: sk_sointer.MEEDExplainer(
                   feedback=sk_sointer.MLP(hidden_units=(100,)), **params), params_key="meed"),
        # SOInterExplainer is looked up when called: without it, ``requires`` skips the method.
        Method("sointer", "SOInter", "sk_sointer",
               estimator=lambda **params: sk_sointer.SOInterExplainer(**params),
               params_key="sointer", requires="SOInterExplainer", target_output=True),
        # As SOInter's docstring advises when its masks are read at the baseline (post-hoc
        # accuracy): the model queried with the left-out features there.
        Method("sointer_baseline", "SOInter (fill=baseline)", "sk_sointer",
               estimator=lambda **params: sk_sointer.SOInterExplainer(
                   **{"fill": "baseline", **params}),
               params_key="sointer", requires="SOInterExplainer", target_output=True),
        Method("shap_kernel", "KernelSHAP (shap)", "shap", attribute=peers.shap_kernel),
        Method("lime", "LIME", "lime", attribute=peers.lime_tabular),
        Method("saliency", "Saliency (captum)", "captum", attribute=peers.saliency),
        Method("integrated_gradients", "IG (captum)", "captum",
               attribute=peers.integrated_gradients),
        Method("captum_kernel_shap", "KernelSHAP (captum)", "captum",
               attribute=peers.captum_kernel_shap),
    ]
}


def method_names(*, amortized=None, target_output=False):
    """Registered names in table order, ours or the peers only (``amortized``), by default
    without the ``target_output`` methods (``None``: with them)."""
    return [name for name, method in METHODS.items()
            if (amortized is None or method.amortized == amortized)
            and (target_output is None or method.target_output == target_output)]


def peer_packages():
    """The packages the peers need, each once, in table order."""
    return list(dict.fromkeys(method.package for method in METHODS.values()
                              if not method.amortized))


def available_methods(names=None):
    """The requested methods that can run here, and the skipped ones with the reason."""
    runnable, skipped = [], {}
    for name in names or method_names():
        method = METHODS[name]
        try:
            module = importlib.import_module(method.package)
        except ImportError as exc:
            skipped[name] = f"{method.package} is not importable ({exc})"
            continue
        if method.requires and not hasattr(module, method.requires):
            skipped[name] = f"{method.package} has no {method.requires}"
        else:
            runnable.append(name)
    return runnable, skipped
