"""The methods the harness benchmarks: one :class:`Method` entry each, in table order.

An entry is all the harness knows about a method: the label of its table rows, the package
it needs, how to build it (our amortized explainers: an estimator fitted once) or run it
(the per-row peers: an attribution function), the k its masks are judged with, and the key
of its parameters in a profile. Adding a method is adding an entry to :data:`METHODS`.

Methods that explain one output of a multi-output black box given whole (SOInter, with
``target_output=True``) run only in the structured-output benchmark (:mod:`.structured`);
the single-output benchmarks leave them out.
"""

import importlib
from dataclasses import dataclass
from typing import Callable

import sk_sointer

from . import peers
from .ours import run_amortized
from .peers import run_peer


def dataset_k(spec):
    """The data set's k: the top-k of the method's scores or attributions."""
    return spec.k


def thresholded_on_control_flow(spec):
    """The method's own thresholded selection (``k=None``) on the control-flow sets S1-S3,
    as in REAL-X's Table 1; the data set's k elsewhere."""
    return None if spec.control_flow else spec.k


@dataclass(frozen=True)
class Method:
    """One method of the benchmark.

    Attributes
    ----------
    name : str
        Key in :data:`METHODS`, in the records and on the command line.
    label : str
        The method's name in the tables.
    package : str
        The module the method needs; a method whose package cannot be imported is skipped,
        not failed.
    estimator : callable, default=None
        Ours: called as ``estimator(k=..., **params)`` to build the explainer (its class).
    attribute : callable, default=None
        A peer: ``attribute(data, profile, device)`` returns the attributions of the
        explained rows, the setup seconds and the explanation seconds (see
        :mod:`.peers`). Exactly one of ``estimator`` and ``attribute`` is given.
    params_key : str, default=None
        Key of ``Profile.explainer_params`` holding the parameters of ``estimator``.
    k_for : callable, default=dataset_k
        ``k_for(spec)``: the k the method's masks have on a data set; ``None`` for the
        method's own thresholded selection.
    requires : str, default=None
        An attribute of ``package`` the method needs (a class that not every version
        has); without it the method is skipped, like one whose package is missing.
    target_output : bool, default=False
        Ours that explain one output of a multi-output black box: ``estimator`` also
        takes ``target=`` and is fitted on the whole model.
    """

    name: str
    label: str
    package: str
    estimator: Callable = None
    attribute: Callable = None
    params_key: str = None
    k_for: Callable = dataset_k
    requires: str = None
    target_output: bool = False

    def __post_init__(self):
        if (self.estimator is None) == (self.attribute is None):
            raise ValueError(f"Method {self.name!r} needs an estimator or an attribute "
                             "function, and only one.")

    @property
    def amortized(self):
        """Whether the method is one of ours: fitted once, then a forward pass a row, with
        a judge of its own (so it also runs on the encoding probe)."""
        return self.estimator is not None

    def run(self, spec, data, profile, device):
        """The method's masks of the explained rows of ``data``, its timing fields and what
        explains them: the fitted explainer (ours) or the attributions (a peer)."""
        runner = run_amortized if self.amortized else run_peer
        return runner(self, spec, data, profile, device)


def _meed_feedback(**params):
    # The paper's MEED: the selector also reads the black box's output (off by default).
    return sk_sointer.MEEDExplainer(feedback=sk_sointer.MLP(hidden_units=(100,)), **params)


def _sointer(**params):
    # Looked up when called, so that the registry imports with a sk_sointer that has no
    # SOInterExplainer (the entry's ``requires`` then skips the method).
    return sk_sointer.SOInterExplainer(**params)


def _sointer_baseline(**params):
    # SOInter as its docstring advises when the masks will be read at the baseline (the
    # post-hoc accuracy of the benchmarks): the model queried with the left-out features
    # at the baseline, not at the values of random rows.
    return sk_sointer.SOInterExplainer(fill="baseline", **params)


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
        Method("sointer_baseline", "SOInter (fill=baseline)", "sk_sointer",
               estimator=_sointer_baseline, params_key="sointer", requires="SOInterExplainer",
               target_output=True),
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
    """Names of the registered methods, in table order; only ours (``amortized=True``) or
    only the peers (``False``) on request. By default without the methods that explain one
    output of a multi-output model (``target_output=True``: only those; ``None``: all)."""
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
