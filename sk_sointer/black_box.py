"""The one adapter between "a model" and the explainers.

Whatever a user calls a model (a scikit-learn classifier, regressor or pipeline, a
multi-output estimator, a skorch net, a torch module or a plain function) becomes a
:class:`BlackBox`: a callable mapping a float32 tensor ``(n_samples, n_features)`` to a
float32 tensor ``(n_samples, n_outputs)``. Outputs given as an array instead of a model are
described by the same :class:`OutputSpec`, so the training objectives never need to know
where their targets came from.
"""

from dataclasses import dataclass, field

import numpy as np
import torch
from sklearn.base import is_classifier
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils.multiclass import type_of_target

_OUTPUT_KINDS = ("auto", "proba", "logits", "values")


@dataclass(frozen=True)
class OutputSpec:
    """What the black box's outputs mean, and so which loss fits them.

    Attributes
    ----------
    task : {"classification", "regression"}
        ``"classification"``: each block of columns is a probability vector, fitted with a
        soft-target cross-entropy. ``"regression"``: real values, fitted with squared error.
    blocks : tuple of (int, int)
        Column ranges ``[start, stop)`` of the probability vectors, one per output of a
        multi-output classifier; a single block for an ordinary classifier.
    n_outputs : int
        Total number of columns.
    classes : ndarray or None
        The labels behind the columns when the outputs were given as class labels.
    """

    task: str
    blocks: tuple
    n_outputs: int
    classes: object = field(default=None, compare=False)


class BlackBox:
    """A model seen as a function from float32 tensors to float32 output tensors.

    Build one with :func:`as_black_box`. It deliberately defines neither ``__len__`` nor
    ``__array__``: scikit-learn's cross-validation splits every array-like fit parameter of
    length ``n_samples``, and a model mistaken for an array would be split or converted.
    Wrap a :class:`~sklearn.pipeline.Pipeline` (which has ``__len__``) in ``as_black_box``
    before passing it to ``GridSearchCV(...).fit(X, black_box=...)``.

    Attributes
    ----------
    model : object
        The wrapped model.
    spec : OutputSpec
        Meaning of the outputs; known after the first call.
    differentiable : bool
        Whether gradients flow from the outputs back to the inputs (torch modules only).
    """

    def __init__(self, model, *, kind, output="auto"):
        self.model = model
        self.kind = kind
        self.output = output
        self.differentiable = kind == "torch"
        self.spec = None
        self.n_features_in_ = None

    def __repr__(self):
        return f"BlackBox({self.model!r})"

    def __call__(self, X, *, grad=False):
        """Outputs of the model on ``X`` as a float32 tensor of shape (n_samples, n_outputs).

        Parameters
        ----------
        X : torch.Tensor or array-like of shape (n_samples, n_features)
        grad : bool, default=False
            Keep the autograd graph (torch modules only), e.g. for gradient priors.
        """
        device = X.device if isinstance(X, torch.Tensor) else torch.device("cpu")
        if self.kind == "torch":
            out = self._call_torch(X, grad=grad)
        else:
            if grad:
                raise TypeError(f"Gradients are only available for torch modules; got {self.model!r}.")
            X_np = X.detach().cpu().numpy() if isinstance(X, torch.Tensor) else np.asarray(X)
            out = self._call_numpy(X_np.astype(np.float32, copy=False))
        return self._check_output(out, n_samples=X.shape[0]).to(device)

    def predict(self, X):
        """Outputs on ``X`` as a float32 ndarray of shape (n_samples, n_outputs)."""
        with torch.no_grad():
            return self(torch.as_tensor(np.asarray(X, dtype=np.float32))).cpu().numpy()

    def _call_torch(self, X, *, grad):
        module = self.model
        param = next(iter(module.parameters()), None)
        device = param.device if param is not None else torch.device("cpu")
        X = torch.as_tensor(X, dtype=torch.float32).to(device)
        was_training = module.training
        module.eval()
        try:
            with torch.set_grad_enabled(grad):
                out = module(X)
        finally:
            module.train(was_training)
        return out

    def _call_numpy(self, X):
        model = self.model
        names = getattr(model, "feature_names_in_", None)
        if names is not None and len(names) == X.shape[1]:
            # Models fitted on DataFrames warn (or fail) when called with bare arrays.
            import pandas as pd

            X = pd.DataFrame(X, columns=names)
        if self.kind == "classifier":
            out = model.predict_proba(X)
            if isinstance(out, list):
                self._blocks = _blocks_of([np.asarray(o).shape[1] for o in out])
                out = np.hstack([np.asarray(o) for o in out])
            return out
        if self.kind == "regressor":
            return model.predict(X)
        return model(X)

    def _check_output(self, out, *, n_samples):
        if isinstance(out, torch.Tensor):
            out = out.float()
        else:
            try:
                out = torch.as_tensor(np.asarray(out, dtype=np.float32))
            except (TypeError, ValueError) as exc:
                raise TypeError(
                    f"The black box {self.model!r} returned {type(out).__name__}, which is not "
                    "an array of numbers."
                ) from exc
        if out.ndim == 1:
            out = out[:, None]
        if out.ndim != 2 or out.shape[0] != n_samples:
            raise ValueError(
                f"The black box should return one row of outputs per sample, i.e. shape "
                f"({n_samples}, n_outputs); got shape {tuple(out.shape)}."
            )
        if self.output == "logits":
            out = _logits_to_proba(out)
        if not bool(torch.isfinite(out).all()):
            raise ValueError(
                f"The black box {self.model!r} returned NaN or infinite outputs; explanations "
                "need finite outputs."
            )
        spec = self._infer_spec(out) if self.spec is None else self.spec
        if out.shape[1] != spec.n_outputs:
            raise ValueError(
                f"The black box returned {out.shape[1]} outputs per sample, but it returned "
                f"{spec.n_outputs} before; its output width must not change."
            )
        self.spec = spec
        return out

    def _infer_spec(self, out):
        n_outputs = out.shape[1]
        blocks = getattr(self, "_blocks", None)
        if self.kind == "classifier" or self.output in ("proba", "logits"):
            return OutputSpec("classification", blocks or ((0, n_outputs),), n_outputs)
        if self.kind == "regressor" or self.output == "values":
            return OutputSpec("regression", ((0, n_outputs),), n_outputs)
        task = "classification" if _looks_like_proba(out.detach().cpu().numpy()) else "regression"
        return OutputSpec(task, ((0, n_outputs),), n_outputs)


def as_black_box(model, *, output="auto"):
    """Adapt a model so that the explainers can query it.

    Parameters
    ----------
    model : object
        A fitted scikit-learn classifier (queried with ``predict_proba``; multi-output
        classifiers give their per-output probabilities side by side), regressor or pipeline
        (``predict``), a skorch net, a :class:`torch.nn.Module`, or any callable mapping an
        ndarray ``(n_samples, n_features)`` to outputs. A :class:`BlackBox` is returned as is.

    output : {"auto", "proba", "logits", "values"}, default="auto"
        What a torch module or callable returns: class probabilities, logits (turned into
        probabilities with a softmax), or real values. ``"auto"`` reads probabilities when
        every row is non-negative and sums to one. Ignored for scikit-learn estimators.

    Returns
    -------
    black_box : BlackBox

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> X = np.random.RandomState(0).randn(20, 3)
    >>> bb = as_black_box(LogisticRegression().fit(X, X[:, 0] > 0))
    >>> bb.predict(X[:2]).shape
    (2, 2)
    """
    if isinstance(model, BlackBox):
        return model
    if output not in _OUTPUT_KINDS:
        raise ValueError(f"output should be one of {_OUTPUT_KINDS}; got {output!r}.")
    if _is_outputs_array(model):
        raise TypeError(
            "as_black_box needs a model; got an array. Outputs on X are passed to fit as `y`."
        )
    if isinstance(model, torch.nn.Module):
        return BlackBox(model, kind="torch", output=output)
    if _is_classifier(model) and hasattr(model, "predict_proba"):
        return BlackBox(model, kind="classifier")
    if hasattr(model, "predict"):
        return BlackBox(model, kind="regressor")
    if callable(model):
        return BlackBox(model, kind="callable", output=output)
    raise TypeError(
        f"Cannot use {model!r} as a black box: expected a fitted estimator with predict_proba "
        "or predict, a torch module, or a callable."
    )


def check_outputs(y, n_samples, spec=None):
    """Validate outputs given instead of a model; return float32 targets and their spec.

    Class labels (1-D, binary or multiclass) become one-hot probability rows; a 2-D array
    whose rows are probability vectors stays a classification target; anything else numeric
    is a regression target. With ``spec`` (the spec seen at fit time), the outputs are
    encoded the same way and must have the same width.
    """
    if spec is not None:
        return _check_outputs_like(y, n_samples, spec), spec
    y_arr = np.asarray(y)
    if y_arr.ndim == 0 or y_arr.ndim > 2:
        raise ValueError(
            f"The outputs y should be 1-D or 2-D with one row per sample; got shape {y_arr.shape}."
        )
    if y_arr.shape[0] != n_samples:
        raise ValueError(
            f"The outputs y have {y_arr.shape[0]} rows but X has {n_samples} samples; give the "
            "black box's outputs on exactly these rows."
        )
    if y_arr.dtype.kind in "fc" and not np.isfinite(y_arr).all():
        raise ValueError("The outputs y contain NaN or infinity.")
    target_type = type_of_target(y_arr) if y_arr.dtype.kind in "biufOUS" else "unknown"
    if y_arr.ndim == 1 and target_type in ("binary", "multiclass"):
        binarizer = LabelBinarizer().fit(y_arr)
        onehot = binarizer.transform(y_arr).astype(np.float32)
        if onehot.shape[1] == 1:
            onehot = np.hstack([1.0 - onehot, onehot])
        n_classes = onehot.shape[1]
        return onehot, OutputSpec("classification", ((0, n_classes),), n_classes, binarizer.classes_)
    try:
        values = y_arr.astype(np.float32)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"The outputs y should be numeric or class labels; got dtype {y_arr.dtype}.") from exc
    if not np.isfinite(values).all():
        raise ValueError("The outputs y contain NaN or infinity.")
    if values.ndim == 1:
        values = values[:, None]
    n_outputs = values.shape[1]
    task = "classification" if n_outputs > 1 and _looks_like_proba(values) else "regression"
    return values, OutputSpec(task, ((0, n_outputs),), n_outputs)


def _check_outputs_like(y, n_samples, spec):
    y_arr = np.asarray(y)
    if spec.classes is not None and y_arr.ndim == 1:
        unknown = np.setdiff1d(y_arr, spec.classes)
        if unknown.size:
            raise ValueError(f"The outputs y contain labels {unknown[:5]} unseen during fit.")
        values = (y_arr[:, None] == np.asarray(spec.classes)[None, :]).astype(np.float32)
        if y_arr.shape[0] != n_samples:
            raise ValueError(f"The outputs y have {y_arr.shape[0]} rows but X has {n_samples} samples.")
        return values
    values, _ = check_outputs(y_arr, n_samples)
    if values.shape[1] != spec.n_outputs:
        raise ValueError(
            f"The outputs y have {values.shape[1]} columns, but the explainer was fitted on "
            f"{spec.n_outputs}."
        )
    return values


def output_agreement(reference, other, spec):
    """How well ``other`` outputs agree with ``reference`` outputs: higher is better.

    Classification: the fraction of rows whose predicted class (argmax of each block,
    averaged over blocks) is the same. Regression: the R² of ``other`` against
    ``reference``, averaged over outputs.
    """
    reference = np.asarray(reference, dtype=np.float64)
    other = np.asarray(other, dtype=np.float64)
    if spec.task == "classification":
        return float(np.mean([
            np.mean(reference[:, a:b].argmax(axis=1) == other[:, a:b].argmax(axis=1))
            for a, b in spec.blocks
        ]))
    from sklearn.metrics import r2_score

    return float(r2_score(reference, other))


def _is_outputs_array(obj):
    return isinstance(obj, (np.ndarray, list, tuple)) or (
        hasattr(obj, "__array__") and not callable(obj) and not hasattr(obj, "predict")
    )


def _is_classifier(model):
    try:
        if is_classifier(model):
            return True
    except Exception:  # noqa: BLE001 - tags of foreign estimators may be malformed
        pass
    return getattr(model, "_estimator_type", None) == "classifier"


def _looks_like_proba(values):
    return bool(
        values.ndim == 2
        and values.shape[1] > 1
        and values.min() >= 0
        and values.max() <= 1
        and np.allclose(values.sum(axis=1), 1.0, atol=1e-3)
    )


def _logits_to_proba(out):
    if out.shape[1] == 1:
        p = torch.sigmoid(out)
        return torch.cat([1 - p, p], dim=1)
    return torch.softmax(out, dim=1)


def _blocks_of(widths):
    stops = np.cumsum(widths)
    return tuple((int(stop - w), int(stop)) for w, stop in zip(widths, stops))
