"""The methods the harness benchmarks, in table order: adding a method is adding a
:class:`Method` to :data:`METHODS`."""

import functools
import importlib
from dataclasses import dataclass
from typing import Callable

import sk_sointer

from . import peers
from .ours import run_amortized
from .peers import run_peer


def dataset_k(spec):
    return spec.k


def thresholded_on_control_flow(spec):
    """The method's own thresholded selection on S1-S3, as in REAL-X's Table 1."""
    return None if spec.control_flow else spec.k


@dataclass(frozen=True)
class Method:
    """One method: ours build an explainer (``estimator(k=..., **params)``, the parameters
    under ``params_key`` of a profile), a peer attributes (``attribute(data, profile,
    device)`` -> attributions, setup and explanation seconds, see :mod:`.peers`).

    ``k_for(spec)`` is the k of its masks on a data set (``None``: its own threshold). A
    method whose ``package`` (or its attribute ``requires``) is missing is skipped.
    ``target_output``: ours that explain one output of a multi-output black box given whole
    (``estimator`` also takes ``target=``); only the structured study runs them.

    ``kind`` says how a study measures the method: ``"ours"`` (an ``estimator``) and
    ``"peer"`` (an ``attribute`` function) are set from them; a study's own references
    (random masks, a search) declare theirs, with neither."""

    name: str
    label: str
    package: str
    estimator: Callable = None
    attribute: Callable = None
    params_key: str = None
    k_for: Callable = dataset_k
    requires: str = None
    target_output: bool = False
    kind: str = None

    def __post_init__(self):
        if self.kind is None and (self.estimator is None) == (self.attribute is None):
            raise ValueError(f"Method {self.name!r} needs an estimator or an attribute "
                             "function, and only one, or a kind of its own.")
        if self.kind is None:
            object.__setattr__(self, "kind", "ours" if self.estimator is not None else "peer")

    @property
    def amortized(self):
        """Whether the method is one of ours: fitted once, then a forward pass a row."""
        return self.kind == "ours"

    def run(self, spec, data, profile, device):
        """The masks of the explained rows, the timing fields and the fitted explainer (ours)
        or the attributions (a peer)."""
        runner = run_amortized if self.amortized else run_peer
        return runner(self, spec, data, profile, device)


def _meed_feedback(**params):
    # The paper's MEED: the selector also reads the black box's output (off by default).
    return sk_sointer.MEEDExplainer(feedback=sk_sointer.MLP(hidden_units=(100,)), **params)


def _sointer(**params):
    # Looked up when called: without SOInterExplainer, ``requires`` skips the method.
    return sk_sointer.SOInterExplainer(**params)


METHODS = {
    method.name: method
    for method in [
        Method("l2x", "L2X", "sk_sointer", estimator=sk_sointer.L2XExplainer,
               params_key="l2x"),
        Method("realx", "REAL-X", "sk_sointer", estimator=sk_sointer.RealXExplainer,
               params_key="realx", k_for=thresholded_on_control_flow),
        Method("meed", "MEED", "sk_sointer", estimator=sk_sointer.MEEDExplainer,
               params_key="meed"),
        # Trained at the rate k / n_features (its selection_rate=None), the top k kept.
        Method("hardkuma", "HardKuma", "sk_sointer", estimator=sk_sointer.HardKumaExplainer,
               params_key="hardkuma"),
        Method("meed_feedback", "MEED (output feedback)", "sk_sointer",
               estimator=_meed_feedback, params_key="meed"),
        Method("sointer", "SOInter", "sk_sointer", estimator=_sointer, params_key="sointer",
               requires="SOInterExplainer", target_output=True),
        # As SOInter's docstring advises when its masks are read at the baseline (post-hoc
        # accuracy): the model queried with the left-out features there.
        Method("sointer_baseline", "SOInter (fill=baseline)", "sk_sointer",
               estimator=functools.partial(_sointer, fill="baseline"), params_key="sointer",
               requires="SOInterExplainer", target_output=True),
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
    """Registered names in table order: ours only (``amortized=True``) or the peers only
    (``False``); by default without the ``target_output`` methods (``None``: with them)."""
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
        if name not in METHODS:
            raise ValueError(f"Unknown method {name!r}; the methods are {', '.join(METHODS)}.")
        method = METHODS[name]
        try:
            module = importlib.import_module(method.package)
        except ImportError as exc:
            skipped[name] = f"{method.package} is not importable ({exc})"
            continue
        if method.requires and not hasattr(module, method.requires):
            skipped[name] = f"{method.package} has no {method.requires}"
            continue
        runnable.append(name)
    return runnable, skipped
