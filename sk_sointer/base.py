"""scikit-learn plumbing shared by every explainer.

:class:`BaseExplainer` owns the public API (``fit``, ``transform``, ``explain``, ``score``),
validates data and parameters, adapts the black box, seeds training, builds the method's
skorch net (stored as ``net_``; composed, not inherited) and turns scores into masks. A
method supplies three hooks: ``_build_net`` (its skorch net), ``_selector_scores`` (per-feature
scores from the fitted net) and ``_predict_masked`` (its own predictor on masked inputs, used
by ``score`` when no model is at hand).
"""

import pickle
import warnings
from abc import ABCMeta, abstractmethod
from contextlib import contextmanager
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, _fit_context, clone
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data
from skorch.callbacks import Callback, ProgressBar
from skorch.dataset import ValidSplit

from .black_box import as_black_box, check_outputs, output_agreement

_OPTIMIZERS = {
    "adam": torch.optim.Adam,
    "adamw": torch.optim.AdamW,
    "rmsprop": torch.optim.RMSprop,
    "sgd": torch.optim.SGD,
}

# Rows per forward pass at explanation time: large enough that a forward pass dominates the
# per-call overhead, small enough to bound memory on wide data.
_INFERENCE_CHUNK = 65_536


class _SkorchEstimatorMixin:
    """Training plumbing shared by the explainers and the EVAL-X evaluator.

    Both learn from ``X`` and a black box (the model, or its outputs on ``X``), expose
    skorch's training knobs as flat parameters and keep their network factories as
    parameters. The class supplies ``_build_net(n_features, spec, **net_params)``;
    :meth:`_fit` adapts the black box, seeds torch and trains the net as ``net_``.
    """

    # Route a model given as ``fit(X, black_box=model)`` when metadata routing is enabled.
    __metadata_request__fit = {"black_box": True}

    # Methods that must query the model on masked inputs while training set this.
    _requires_model = False

    _parameter_constraints: dict = {
        "max_epochs": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "lr": [Interval(Real, 0, None, closed="neither")],
        "weight_decay": [Interval(Real, 0, None, closed="left")],
        "optimizer": [StrOptions(set(_OPTIMIZERS)), callable],
        "callbacks": [list, None],
        "train_split": [Interval(Real, 0, 1, closed="neither"), callable, None],
        "device": [StrOptions({"auto", "cpu", "cuda"}), str],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def _check_params(self, n_features):
        """Check parameters that depend on the data; subclasses extend it."""

    def _fit(self, X, y, black_box):
        X = validate_data(self, X, dtype=[np.float32, np.float64], ensure_min_samples=2)
        self._check_params(X.shape[1])
        X32 = _writable_float32(X)
        model, targets, spec = self._resolve_targets(X32, y, black_box)
        self.black_box_ = model
        self.output_spec_ = spec

        device = _resolve_device(self.device)
        with _seeded(self.random_state, device) as seed:
            self.net_ = self._build_net(X.shape[1], spec, **self._net_params(device, seed, X.shape[0]))
            self.net_.fit(X32, targets)
        return self

    def _resolve_targets(self, X32, y, black_box):
        name = type(self).__name__
        if black_box is not None and y is not None:
            raise ValueError(
                f"{name}.fit got both y and black_box: pass the model as black_box (or as y), "
                "or its outputs as y, not both."
            )
        model = black_box
        if model is None and y is not None and _is_model(y):
            model = y
        if model is not None:
            model = as_black_box(model)
            targets = _predict_in_chunks(model, X32)
            return model, targets, model.spec
        if y is None:
            raise ValueError(
                f"{name} requires y to be passed, but the target y is None: pass the black "
                "box's outputs on X as y, or the model as black_box."
            )
        if self._requires_model:
            raise ValueError(
                f"{name} must query the black box on masked inputs, so it needs the model "
                "itself (fit(X, black_box=model)); it got only the model's outputs."
            )
        targets, spec = check_outputs(y, X32.shape[0])
        return None, targets, spec

    def _net_params(self, device, seed, n_samples):
        params = {
            "max_epochs": self.max_epochs,
            "batch_size": self.batch_size,
            "lr": self.lr,
            "optimizer": _OPTIMIZERS.get(self.optimizer, self.optimizer),
            "optimizer__weight_decay": self.weight_decay,
            "device": device,
            "iterator_train__shuffle": True,
            # A last batch of a single row would break batch normalisation in training.
            "iterator_train__drop_last": n_samples > self.batch_size
            and n_samples % self.batch_size == 1,
            "train_split": self._train_split(seed),
            "callbacks": list(self.callbacks or []),
            "verbose": int(self.verbose >= 2),
        }
        if self.verbose == 1:
            params["callbacks"].append(("epoch_progress", _EpochProgress()))
        elif self.verbose >= 2:
            params["callbacks"].append(("progress_bar", ProgressBar()))
        return params

    def _train_split(self, seed):
        if self.train_split is None or callable(self.train_split):
            return self.train_split
        return ValidSplit(self.train_split, stratified=False, random_state=seed)

    def set_params(self, **params):
        # Nested network factories (``selector__hidden_units=...``) are replaced by copies
        # before they are changed: a default factory object is shared by every instance
        # built without an explicit one, and must not be mutated through one of them.
        for name in {key.split("__", 1)[0] for key in params if "__" in key}:
            value = getattr(self, name, None)
            if hasattr(value, "get_params"):
                setattr(self, name, clone(value))
        return super().set_params(**params)


class BaseExplainer(
    _SkorchEstimatorMixin, OneToOneFeatureMixin, TransformerMixin, BaseEstimator,
    metaclass=ABCMeta,
):
    """Base class of the amortized instance-wise feature-selection explainers.

    Not meant to be used directly: use a subclass such as
    :class:`~sk_sointer.L2XExplainer`. The shared parameters are described there.
    """

    @abstractmethod
    def _build_net(self, n_features, spec, **net_params):
        """Return the method's (uninitialised) skorch net."""

    @abstractmethod
    def _selector_scores(self, X):
        """Per-feature scores (float tensor, n_samples x n_features) for a float32 tensor X."""

    @abstractmethod
    def _predict_masked(self, X, masks):
        """The method's own predictor on masked inputs, as output probabilities or values."""

    def _check_params(self, n_features):
        k = getattr(self, "k", None)
        if k is not None and k > n_features:
            raise ValueError(f"k should be <= n_features = {n_features}; got {k}.")

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None, *, black_box=None):
        """Train the explainer on ``X`` and the black box (or its outputs on ``X``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to learn explanations from; no labels are needed.
        y : model or array-like of shape (n_samples,) or (n_samples, n_outputs), default=None
            The black box's outputs on ``X`` (class labels, class probabilities or values),
            or the model itself (see :func:`~sk_sointer.as_black_box` for what qualifies).
        black_box : model, default=None
            The model, given by keyword. Use this form with cross-validation tools, which
            would otherwise try to split the model like an array of outputs.

        Returns
        -------
        self : object
            The fitted explainer.
        """
        return self._fit(X, y, black_box)

    def explain(self, X):
        """Real-valued importance scores behind the masks (higher means more relied on).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples, n_features), float32
        """
        X = self._validate_transform_input(X)
        return self._scores(X).cpu().numpy()

    def transform(self, X):
        """k-hot masks of the features the black box relied on, one row per sample.

        Deterministic: the top-k of :meth:`explain`'s scores, ties going to the lower index.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        masks : ndarray of shape (n_samples, n_features)
            0/1 values in the dtype of ``X`` (float32 or float64).
        """
        X = self._validate_transform_input(X)
        masks = self._masks_from_scores(self._scores(X))
        return np.asarray(masks, dtype=X.dtype)

    def score(self, X, y=None):
        """Fidelity of the explanations on ``X``: higher is better.

        With a model at hand (``fit`` received one), this is post-hoc fidelity: for a
        classifier, the fraction of rows where the model's predicted class on ``x ⊙ mask``
        equals its prediction on ``x`` (L2X's post-hoc accuracy); for a regressor, the R² of
        the masked predictions against the full ones. Fitted on outputs only, the method's
        own predictor on ``x ⊙ mask`` is compared with the outputs ``y`` instead.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like, default=None
            The black box's outputs on ``X``; needed only when the explainer holds no model.

        Returns
        -------
        score : float
        """
        check_is_fitted(self)
        X = self._validate_transform_input(X)
        masks = torch.as_tensor(np.asarray(self._masks_from_scores(self._scores(X)), np.float32))
        X_t = torch.as_tensor(_writable_float32(X))
        if self.black_box_ is not None:
            full = self.black_box_.predict(X)
            masked = self.black_box_.predict(X * masks.numpy())
            return output_agreement(full, masked, self.black_box_.spec)
        if y is None:
            raise ValueError(
                f"{type(self).__name__} was fitted on outputs only, so score needs the black "
                "box's outputs on X as y (or fit it with the model to score post-hoc fidelity)."
            )
        targets, _ = check_outputs(y, X.shape[0], spec=self.output_spec_)
        predicted = self._predict_masked(X_t, masks).cpu().numpy()
        return output_agreement(targets, predicted, self.output_spec_)

    # -- helpers -------------------------------------------------------------------------

    def _validate_transform_input(self, X):
        check_is_fitted(self)
        return validate_data(self, X, dtype=[np.float32, np.float64], reset=False)

    def _scores(self, X):
        # The selector (``net_.module_`` by convention) runs in evaluation mode: batch
        # statistics must not depend on which rows are explained together.
        self.net_.module_.eval()
        module_device = self._inference_device()
        X_t = torch.as_tensor(_writable_float32(X))
        chunks = []
        with torch.inference_mode():
            for start in range(0, X_t.shape[0], _INFERENCE_CHUNK):
                batch = X_t[start : start + _INFERENCE_CHUNK].to(module_device)
                chunks.append(self._selector_scores(batch).float().cpu())
        return torch.cat(chunks) if chunks else torch.zeros(X_t.shape)

    def _masks_from_scores(self, scores):
        """0/1 masks (ndarray) from the scores of :meth:`_scores`: the top-k by default."""
        return topk_mask_numpy(scores.numpy(), self.k)

    def _inference_device(self):
        param = next(self.net_.module_.parameters(), None)
        return param.device if param is not None else torch.device("cpu")

    def __getstate__(self):
        state = super().__getstate__()
        black_box = state.get("black_box_")
        if black_box is not None and not _picklable(black_box.model):
            warnings.warn(
                f"The black box {black_box.model!r} cannot be pickled and is left out; the "
                "unpickled explainer scores with the outputs passed to score(X, y).",
                UserWarning,
            )
            state["black_box_"] = None
        return state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


class _EpochProgress(Callback):
    """One progress bar over epochs, showing the latest training loss."""

    def on_train_begin(self, net, **kwargs):
        from tqdm.auto import tqdm

        # disable=None: no bar when stderr is not a terminal (logs, CI), as tqdm advises.
        self.bar_ = tqdm(total=net.max_epochs, desc=type(net).__name__, leave=False, disable=None)

    def on_epoch_end(self, net, **kwargs):
        self.bar_.update(1)
        loss = net.history[-1].get("train_loss")
        if loss is not None:
            self.bar_.set_postfix(loss=f"{loss:.4f}")

    def on_train_end(self, net, **kwargs):
        self.bar_.close()

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("bar_", None)
        return state


@contextmanager
def _seeded(random_state, device):
    """Seed torch for the duration of training without touching the caller's RNG state."""
    seed = int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
    devices = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield seed


def _resolve_device(device):
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={str(device)!r} was requested but CUDA is not available.")
    return device


def _predict_in_chunks(black_box, X32):
    outputs = [black_box.predict(X32[start : start + _INFERENCE_CHUNK])
               for start in range(0, X32.shape[0], _INFERENCE_CHUNK)]
    return np.concatenate(outputs).astype(np.float32, copy=False)


def topk_mask_numpy(scores, k):
    """k-hot float32 mask of the k largest scores per row; ties go to lower indices.

    NumPy's partition finds the k-th largest score faster than a sort on
    narrow rows, which matters because this runs on every explained row. Rows where a tie
    at the boundary would keep more than k features fall back to a stable sort.
    """
    n_features = scores.shape[1]
    kth = np.partition(scores, n_features - k, axis=1)[:, n_features - k, None]
    mask = scores >= kth
    # Every row keeps at least k, so one count over the whole array finds whether any row
    # kept more; the per-row count (slower than the partition itself) runs only then.
    if np.count_nonzero(mask) != k * mask.shape[0]:
        tied = np.flatnonzero(np.count_nonzero(mask, axis=1) != k)
        order = np.argsort(-scores[tied], axis=1, kind="stable")[:, :k]
        mask[tied] = False
        mask[tied[:, None], order] = True
    return mask.astype(np.float32)


def _writable_float32(X):
    # torch warns on read-only arrays (memory maps); only those are copied.
    X = np.asarray(X, dtype=np.float32)
    return X if X.flags.writeable else X.copy()


def _is_model(obj):
    return not (isinstance(obj, (np.ndarray, list, tuple, torch.Tensor)) or hasattr(obj, "__array__"))


def _picklable(obj):
    try:
        pickle.dumps(obj)
    except Exception:  # noqa: BLE001 - any failure means "cannot be stored"
        return False
    return True
