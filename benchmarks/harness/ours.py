"""Our amortized explainers: fitted once on the training rows, then one forward pass a row."""

from sk_sointer import EnergyNet
from sk_sointer.metrics import output_agreement

from .data import TRAIN_SEED
from .timing import best_time, elapsed, throughput_ratio


def build(method, profile, *, seed, device, target=None, **params):
    """Our explainer of the registry ``method`` with the profile's parameters of it and
    ``params`` (nested ones, ``energy__max_epochs``, set once built); given a ``target``,
    SOInter explains that output of the whole black box with an :class:`~sk_sointer.EnergyNet`
    (others ignore it)."""
    params = {"random_state": seed, "device": str(device),
              **profile.params_for(method.params_key), **params}
    if method.target_output and target is not None:
        params.update(target=target, energy=EnergyNet())
    nested = {key: params.pop(key) for key in list(params) if "__" in key}
    return method.estimator(**params).set_params(**nested)


def build_explainer(method, spec, profile, device):
    """The method's estimator with its k on ``spec`` and the profile's parameters."""
    return build(method, profile, seed=TRAIN_SEED, device=device, k=method.k_for(spec))


def run_amortized(method, spec, data, profile, device):
    """Masks of the explained rows after fitting on the training rows, timings, explainer."""
    explainer = build_explainer(method, spec, profile, device)
    masks, timing = fit_and_explain(explainer, data.X_train, data.model, data.X_explain)
    ratio, forward_s, transform_s = throughput_ratio(explainer, data.X_timing,
                                                     repeats=profile.timing_repeats)
    own = own_predictor(explainer, data.X_explain, data.y_explain, masks)
    return masks, {"params": recorded_params(explainer), **timing, "explain_timing": "best of 3",
                   "throughput_ratio": ratio,
                   "forward_ms": 1000 * forward_s, "transform_ms": 1000 * transform_s,
                   "n_timing": len(data.X_timing), **own}, explainer


def fit_and_explain(explainer, X_train, black_box, X_explain):
    """The masks of ``X_explain`` after fitting on ``X_train``, with the fit seconds and the
    milliseconds a row of ``transform``."""
    fit_s = elapsed(lambda: explainer.fit(X_train, black_box=black_box))[1]
    masks = explainer.transform(X_explain)
    explain_s = best_time(lambda: explainer.transform(X_explain), 3, warmup=0)
    return masks, {"fit_s": fit_s, "explain_ms_per_row": 1000 * explain_s / len(X_explain)}


def recorded_params(explainer, *, seed=True):
    """The parameters JSON holds as they are (``seed=False``: but ``random_state``)."""
    return {name: value for name, value in explainer.get_params(deep=False).items()
            if isinstance(value, (bool, int, float, str, type(None)))
            and (seed or name != "random_state")}


def masks_with_seed(method, spec, data, profile, device, seed):
    """The masks of the explained rows by ``method`` refitted with ``random_state=seed``."""
    explainer = build_explainer(method, spec, profile, device).set_params(random_state=seed)
    return explainer.fit(data.X_train, black_box=data.model).transform(data.X_explain)


def own_predictor(explainer, X, y, masks):
    """The method's own judge on its masks: its agreement with the black box on the full rows
    (``own_agreement``, what it was trained to match) and with the labels (``own_acc``)."""
    spec = explainer.output_spec_
    own = explainer.predict_masked(X, masks)
    return {
        "own_agreement": output_agreement(explainer.black_box_.predict(X), own, spec),
        "own_acc": output_agreement(spec.encode(y, len(X)), own, spec),
    }
