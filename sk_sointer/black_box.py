"""The one adapter between "a model" and the explainers.

Whatever a user calls a model (a scikit-learn classifier, regressor or pipeline, a
multi-output estimator, a skorch net, a torch module or a plain function) becomes a
:class:`BlackBox`: a callable mapping a float32 tensor ``(n_samples, n_features)`` to a
float32 tensor ``(n_samples, n_outputs)``. Outputs given as an array instead of a model are
described by the same :class:`OutputSpec`, so the training objectives never need to know
where their targets came from.
"""

import copy
import threading
import warnings
import weakref

import numpy as np
import torch
from sklearn.base import is_classifier
from sklearn.utils import get_tags

from ._outputs import (  # noqa: F401 - check_outputs and output_agreement are used from here
    kept_share,
    PROBA_ATOL,
    OutputSpec,
    check_outputs,
    looks_like_proba,
    output_agreement,
    spec_of,
)
from ._utils import in_chunks

_OUTPUT_KINDS = ("auto", "proba", "logits", "values", "multilabel_proba", "multilabel_logits")

# One lock per user torch module (held only while the module is called): a module left in
# training mode is put in evaluation mode for the call and restored afterwards, and two
# threads doing so at once would run each other's calls in the wrong mode.
_MODULE_LOCKS = weakref.WeakKeyDictionary()
_MODULE_LOCKS_GUARD = threading.Lock()


def _module_lock(module):
    with _MODULE_LOCKS_GUARD:
        lock = _MODULE_LOCKS.get(module)
        if lock is None:
            lock = _MODULE_LOCKS[module] = threading.RLock()
        return lock


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
    row_shape : tuple or None
        The shape in which the model takes one row (images: ``(height, width)`` or
        ``(channels, height, width)``): flat rows are reshaped to it before every call.
        ``None``: rows go as they are. An explainer fitted on images sets it on its own
        copy (:meth:`with_row_shape`).
    token_ids : bool
        Whether the model takes token ids: rows are given to it as int64 (a torch module
        gets a ``LongTensor``). An explainer fitted with ``tokens=True`` sets it on its
        own copy (:meth:`with_token_ids`).
    table : TableCodec or None
        The codec of a table's cells: rows of codes are decoded into a frame in the table's
        own columns and dtypes before every call. An explainer fitted on a table sets it on
        its own copy (:meth:`with_table`).
    """

    def __init__(self, model, *, kind, output="auto"):
        self.model = model
        self.kind = kind
        self.output = output
        self.differentiable = kind == "torch"
        self.spec = None
        self.n_features_in_ = None
        self.row_shape = None
        self.token_ids = False
        self.table = None

    def __repr__(self):
        return f"BlackBox({self.model!r})"

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__dict__.setdefault("row_shape", None)  # a file without it holds feature rows
        self.__dict__.setdefault("token_ids", False)
        self.__dict__.setdefault("table", None)

    def with_row_shape(self, row_shape):
        """This black box (a copy when the shape changes) taking rows of shape ``row_shape``."""
        row_shape = None if row_shape is None else tuple(row_shape)
        if row_shape == self.row_shape:
            return self
        black_box = copy.copy(self)
        black_box.row_shape = row_shape
        return black_box

    def with_token_ids(self, token_ids=True):
        """This black box (a copy when it changes) taking rows of token ids as int64."""
        if bool(token_ids) == self.token_ids:
            return self
        black_box = copy.copy(self)
        black_box.token_ids = bool(token_ids)
        return black_box

    def __call__(self, X, *, grad=False, checked=True):
        """Outputs of the model on ``X`` as a float32 tensor of shape (n_samples, n_outputs).

        Parameters
        ----------
        X : torch.Tensor or array-like of shape (n_samples, n_features)
        grad : bool, default=False
            Keep the autograd graph (torch modules only), e.g. for gradient priors.
        checked : bool, default=True
            Check that the outputs are finite (and probabilities where declared so);
            ``False`` checks their shape only, which reads nothing back from a device:
            the caller checks the values (the refinement, once an epoch).
        """
        device = X.device if isinstance(X, torch.Tensor) else torch.device("cpu")
        if self.row_shape is not None and X.ndim == 2:
            X = X.reshape(X.shape[0], *self.row_shape)
        if self.token_ids:
            X = X.long() if isinstance(X, torch.Tensor) else np.asarray(X).astype(np.int64)
        if self.kind == "torch":
            out = self._call_torch(X, grad=grad)
        else:
            if grad:
                raise TypeError(f"Gradients are only available for torch modules; got {self.model!r}.")
            X_np = X.detach().cpu().numpy() if isinstance(X, torch.Tensor) else np.asarray(X)
            out = self._call_numpy(self._model_input(X_np))
        return self._check_output(out, n_samples=X.shape[0], values=checked).to(device)

    def predict(self, X):
        """Outputs on ``X`` as a float32 ndarray of shape (n_samples, n_outputs).

        A scikit-learn style estimator gets float64 rows as they are; torch modules,
        callables and other rows get float32."""
        X = np.asarray(X)
        if self.kind in ("torch", "callable") and not self.token_ids and self.table is None:
            # ids are made int64 below; a table's codes are decoded into a frame
            X = torch.as_tensor(np.asarray(X, dtype=np.float32))
        with torch.no_grad():
            return self(X).cpu().numpy()

    @property
    def has_own_labels(self):
        """Whether the model's answer is its own ``predict`` (a classifier's labels), which
        :func:`model_agreement` compares rather than the argmax of its probabilities."""
        return self.kind == "classifier" and hasattr(self.model, "predict")

    def labels(self, X):
        """The classifier's own ``predict`` on ``X``: ``(n_samples, n_labels)``, one column
        per output (a multi-output classifier) or label (a multi-label one)."""
        X = np.asarray(X.detach().cpu().numpy() if isinstance(X, torch.Tensor) else X)
        if self.row_shape is not None and X.ndim == 2:
            X = X.reshape(X.shape[0], *self.row_shape)
        if self.token_ids:
            X = X.astype(np.int64)
        labels = np.asarray(self.model.predict(self._frame(self._model_input(X))))
        labels = labels.reshape(len(labels), -1)
        # NaN differs from itself: such labels would count as changed answers everywhere.
        if (labels.dtype.kind in "fc" and not np.isfinite(labels).all()) or (
                labels.dtype.kind == "O" and np.any(labels != labels)):
            raise ValueError(
                f"The black box {self.model!r} answered NaN or infinite labels from its "
                "predict; its answers are compared, so they must be labels, not missing "
                "values."
            )
        return labels

    def _model_input(self, X):
        # An estimator fitted on float64 data with large-magnitude features (timestamps,
        # ids) answers differently on rows rounded to float32 (128 s apart near 1.7e9).
        # Callables keep float32: they may hand the rows to a float32 torch module.
        if self.token_ids or self.table is not None or (
                X.dtype == np.float64 and self.kind != "callable"):
            return X
        return X.astype(np.float32, copy=False)

    def _call_torch(self, X, *, grad):
        module = self.model
        param = next(iter(module.parameters()), None)
        device = param.device if param is not None else torch.device("cpu")
        # Rows in the module's own float type (a module made .double() or .half() refuses
        # float32 rows); its outputs are read as float32.
        dtype = param.dtype if param is not None and param.is_floating_point() else torch.float32
        X = torch.as_tensor(X, dtype=torch.long if self.token_ids else dtype).to(device)
        with _module_lock(module):
            # Every submodule's own mode, restored exactly: ``train(was_training)`` would
            # also switch the parts a user keeps in the other mode.
            modes = [(part, part.training) for part in module.modules()]
            if not any(training for _, training in modes):
                with torch.set_grad_enabled(grad):
                    return module(X)
            module.eval()
            try:
                with torch.set_grad_enabled(grad):
                    out = module(X)
            finally:
                for part, training in modes:
                    part.training = training
        return out

    def with_table(self, codec):
        """This black box (a copy) taking a table's codes (:class:`~sk_sointer._table.
        TableCodec`): the model gets them decoded, a frame in the table's own columns and
        dtypes."""
        black_box = copy.copy(self)
        black_box.table = codec
        return black_box

    def _frame(self, X):
        if self.table is not None:
            return self.table.decode(X)
        names = getattr(self.model, "feature_names_in_", None)
        if names is not None and X.ndim == 2 and len(names) == X.shape[1]:
            # Models fitted on DataFrames warn (or fail) when called with bare arrays.
            import pandas as pd

            return pd.DataFrame(X, columns=names)
        return X

    def _call_numpy(self, X):
        model = self.model
        X = self._frame(X)
        if self.kind == "classifier":
            if not hasattr(model, "predict_proba"):
                return self._label_columns(model.predict(X))
            out = model.predict_proba(X)
            if isinstance(out, list):
                # One probability matrix per output (MultiOutputClassifier, forests).
                self._widths = [np.asarray(o).shape[1] for o in out]
                out = np.hstack([np.asarray(o) for o in out])
            elif self.spec is None and not hasattr(self, "_widths"):
                self._widths = self._multilabel_widths(X, np.asarray(out))
            return out
        if self.kind == "regressor":
            return model.predict(X)
        return model(X)

    def _check_output(self, out, *, n_samples, values=True):
        if isinstance(out, dict) or (isinstance(out, (tuple, list)) and any(
                isinstance(part, torch.Tensor) for part in out)):
            raise TypeError(
                f"The black box {self.model!r} returned a {type(out).__name__}, not one "
                "array or tensor of outputs: wrap it, "
                "e.g. lambda x: module(x)[0] (or module(x)['logits']), and say what the "
                "outputs are with as_black_box(..., output=...)."
            )
        if isinstance(out, torch.Tensor):
            atol = _proba_atol(out.dtype)
            out = out.float()
        else:
            _check_not_ragged(self.model, out, n_samples)
            try:
                atol = _proba_atol(getattr(out, "dtype", None))
                out = torch.as_tensor(np.asarray(out, dtype=np.float32))
            except (TypeError, ValueError) as exc:
                labels = np.ndim(out) >= 1 and np.asarray(out).dtype.kind in "OUS"
                raise TypeError(
                    f"The black box {self.model!r} returned {type(out).__name__}, which is not "
                    "an array of numbers" + (
                        " (labels such as text): a function or torch module should return "
                        "class probabilities, scores or values; pass the classifier itself, "
                        "whose predict_proba or classes_ the explainers read." if labels
                        else ".")
                ) from exc
        if out.ndim == 1:
            out = out[:, None]
        if out.ndim != 2 or out.shape[0] != n_samples:
            raise ValueError(
                f"The black box should return one row of outputs per sample, i.e. shape "
                f"({n_samples}, n_outputs); got shape {tuple(out.shape)}."
            )
        if out.shape[1] == 0:
            raise ValueError(
                f"The black box {self.model!r} returned no outputs (shape "
                f"{tuple(out.shape)}); there is nothing to explain."
            )
        if self.output == "logits":
            out = _logits_to_proba(out)
        elif self.output == "proba" and out.shape[1] == 1:
            # One column is the probability of the positive class; as a softmax block of
            # width one its argmax would never change.
            out = torch.cat([1 - out, out], dim=1)
        elif self.output == "multilabel_logits":
            out = torch.sigmoid(out)
        if values and not bool(torch.isfinite(out).all()):
            raise ValueError(
                f"The black box {self.model!r} returned NaN or infinite outputs; explanations "
                "need finite outputs."
            )
        if values and self.output in ("proba", "multilabel_proba"):
            self._check_probabilities(out, atol)
        spec = self._infer_spec(out, atol) if self.spec is None else self.spec
        if out.shape[1] != spec.n_columns:
            raise ValueError(
                f"The black box returned {out.shape[1]} outputs per sample, but it returned "
                f"{spec.n_columns} before; its output width must not change."
            )
        self.spec = spec
        return out

    def _check_probabilities(self, out, atol=PROBA_ATOL):
        values = out.detach().cpu().numpy()
        if self.output == "multilabel_proba":
            if values.min() < 0 or values.max() > 1:
                raise ValueError(
                    f"The black box {self.model!r} was declared with output='multilabel_proba' "
                    "but returned values outside [0, 1]; use output='multilabel_logits' for "
                    "logits."
                )
        elif not looks_like_proba(values, atol=atol):
            raise ValueError(
                f"The black box {self.model!r} was declared with output='proba' but its rows "
                "are not probability vectors (non-negative, summing to one); use "
                "output='logits' for scores."
            )

    def _label_columns(self, labels):
        """One-hot columns, one block per output, of a classifier that predicts labels but
        no probabilities, with the classes it was fitted on (not those present in ``labels``,
        so that the width does not depend on the rows)."""
        labels = np.asarray(labels)
        classes = _fitted_classes(self.model)
        if classes is None:
            raise TypeError(
                f"Cannot use {self.model!r} as a black box: a classifier needs predict_proba, "
                "or classes_ to encode the labels of its predict (a clustering model, "
                "labels_ or cluster_centers_)."
            )
        columns = labels[:, None] if labels.ndim == 1 else labels
        per_output = [classes] if labels.ndim == 1 else list(classes)
        if len(per_output) != columns.shape[1]:
            raise ValueError(
                f"The classifier {self.model!r} predicts {columns.shape[1]} outputs per sample "
                f"but has classes for {len(per_output)}."
            )
        self._widths = [len(c) for c in per_output]
        return np.hstack([
            (columns[:, [i]] == np.asarray(c)[None, :]).astype(np.float32)
            for i, c in enumerate(per_output)
        ])

    def _multilabel_widths(self, X, proba):
        """``[1] * n_labels`` when a classifier's ``predict_proba`` columns are independent
        labels (multi-label MLPClassifier, ClassifierChain, one-vs-rest on an indicator
        matrix), else ``None``. Such a model predicts one 0/1 column per label."""
        labels = np.asarray(self.model.predict(X[:1]))
        if labels.ndim == 2 and labels.shape[1] == proba.shape[1] and proba.shape[1] > 1:
            return [1] * proba.shape[1]
        return None

    def _infer_spec(self, out, atol=PROBA_ATOL):
        """The outputs' spec; rows count as probabilities when they sum to one within
        ``atol``, the rounding of the type the model answered in."""
        n_columns = out.shape[1]
        widths = getattr(self, "_widths", None)
        if self.kind == "classifier":
            if widths and all(width == 1 for width in widths):
                return spec_of(["bernoulli"] * n_columns, widths)
            widths = widths or [n_columns]
            return spec_of(["categorical"] * len(widths), widths, classes=self._classes(len(widths)))
        if self.output in ("multilabel_proba", "multilabel_logits"):
            return spec_of(["bernoulli"] * n_columns, [1] * n_columns)
        if self.output in ("proba", "logits") or (
            self.kind != "regressor" and self.output == "auto"
            and looks_like_proba(out.detach().cpu().numpy(), atol=atol)
        ):
            return spec_of(["categorical"], [n_columns])
        if self.kind == "torch" and self.output == "auto":
            # Most torch classifiers end in logits, which read as values would make every
            # explanation one of a regression: say so once, and how to say otherwise.
            warnings.warn(
                f"The torch module's {n_columns} output column(s) are read as real values "
                "(a regression): its rows are not probabilities. If they are class logits, "
                "pass as_black_box(module, output='logits') (or 'multilabel_logits'); "
                "output='values' says they are values and silences this warning.",
                UserWarning, stacklevel=2)
        return spec_of(["real"] * n_columns, [1] * n_columns)

    def _classes(self, n_outputs):
        classes = _fitted_classes(self.model)
        if classes is None:
            return None
        if n_outputs == 1:
            return (np.asarray(classes),)
        if isinstance(classes, list) and len(classes) == n_outputs:
            return tuple(np.asarray(c) for c in classes)
        return None


def _proba_atol(dtype):
    """How far from one a probability row's sum may be in ``dtype``: a softmax computed
    and rounded in a low-precision type (bfloat16's spacing near 1 is 2**-8) misses one
    by about its spacing; float32 and wider keep the usual 1e-3."""
    if isinstance(dtype, torch.dtype):
        eps = torch.finfo(dtype).eps if dtype.is_floating_point else 0.0
    else:
        dtype = np.dtype(dtype) if dtype is not None else None
        eps = np.finfo(dtype).eps if dtype is not None and dtype.kind == "f" else 0.0
    return max(PROBA_ATOL, 2.0 * float(eps))


def _check_not_ragged(model, out, n_samples):
    """A one-line error for outputs whose rows differ in length (a list of lists), which
    numpy refuses with a traceback of its own."""
    if isinstance(out, np.ndarray) or not isinstance(out, (list, tuple)):
        return
    lengths = {len(row) if isinstance(row, (list, tuple, np.ndarray)) else None for row in out}
    if len(lengths) > 1:
        shown = sorted(lengths, key=lambda n: -1 if n is None else n)
        raise ValueError(
            f"The black box {model!r} returned rows of different lengths "
            f"({', '.join('a number' if n is None else str(n) for n in shown)} values): it "
            f"should return one row of outputs per sample, shape ({n_samples}, n_outputs), "
            "every row as long."
        )


def as_black_box(model, *, output="auto"):
    """Adapt a model so that the explainers can query it.

    Parameters
    ----------
    model : object
        A fitted scikit-learn classifier (queried with ``predict_proba``; multi-output
        classifiers give their per-output probabilities side by side; a classifier without
        ``predict_proba`` gives its ``predict`` labels one-hot encoded over ``classes_``),
        regressor or pipeline (``predict``), a skorch net, a :class:`torch.nn.Module`, or
        any callable mapping a float32 ndarray ``(n_samples, n_features)`` to outputs.
        Estimators get float64 rows unrounded. A :class:`BlackBox` is returned as is.
        Models whose ``predict`` gives labels are read as classifiers: a clustering model
        (``KMeans``: its clusters, one-hot), an outlier detector (``IsolationForest``:
        -1 or 1) and a mixture (``GaussianMixture``: its ``predict_proba``), so that their
        answer is kept or not, not a number whose distance counts.

    output : {"auto", "proba", "logits", "values", "multilabel_proba", "multilabel_logits"}, \
            default="auto"
        What a torch module or callable returns: class probabilities of one output (a
        single column: the probability of the positive class), logits (turned into
        probabilities with a softmax; a single column with a sigmoid), real values (one
        regression output per column), or one probability (or logit) per label of a
        multi-label model. ``"auto"`` reads probabilities when every row is
        non-negative and sums to one, and real values otherwise; a torch module read so
        warns, since its columns are more often a classifier's logits (say which with
        ``"logits"`` or ``"values"``). A module's rows are given in the type of its
        parameters (float64 after ``.double()``). Ignored for scikit-learn
        estimators, whose outputs are read from their kind: a classifier's
        ``predict_proba`` gives one categorical output (one per output of a multi-output
        classifier, one Bernoulli output per label of a multi-label one), a regressor's
        ``predict`` one real output per column.

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
    if _is_classifier(model) or _predicts_labels(model):
        return BlackBox(model, kind="classifier")
    if hasattr(model, "predict"):
        return BlackBox(model, kind="regressor")
    if callable(model):
        return BlackBox(model, kind="callable", output=output)
    # One of the package's explainers (or evaluators) given where the model goes.
    hint = (" An explainer is not the model it explains: pass the model itself (a fitted "
            "explainer keeps it as black_box_), or use the explainer's score(X) or "
            "sk_sointer.metrics.evaluate(explainer, X=X)."
            if hasattr(model, "transform") and hasattr(model, "masker_") else "")
    raise TypeError(
        f"Cannot use {model!r} as a black box: expected a fitted estimator with predict_proba "
        f"or predict, a torch module, or a callable.{hint}"
    )


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


def _estimator_type(model):
    try:
        return get_tags(model).estimator_type
    except Exception:  # noqa: BLE001 - tags of foreign estimators may be malformed
        return getattr(model, "_estimator_type", None)


def _predicts_labels(model):
    """Whether a model that is no classifier still predicts labels: a clustering model or
    an outlier detector, or a mixture (a density model that assigns rows to components)."""
    if not hasattr(model, "predict"):
        return False
    kind = _estimator_type(model)
    return kind in ("clusterer", "outlier_detector") or (
        kind == "density_estimator" and hasattr(model, "predict_proba"))


def _fitted_classes(model):
    """The labels a model's ``predict`` can give, in the order of its probability columns:
    ``classes_``; -1 and 1 for an outlier detector; the clusters of a clustering model
    (those of its training rows, else one per centre) or the components of a mixture.
    ``None`` when the model says nothing of them."""
    classes = getattr(model, "classes_", None)
    if classes is not None:
        return classes
    kind = _estimator_type(model)
    if kind == "outlier_detector":
        return np.array([-1, 1])
    final = model.steps[-1][1] if hasattr(model, "steps") else model  # a pipeline's model
    if kind == "clusterer":
        if getattr(final, "labels_", None) is not None:
            return np.unique(final.labels_)
        if getattr(final, "cluster_centers_", None) is not None:
            return np.arange(len(final.cluster_centers_))
    if kind == "density_estimator" and hasattr(final, "n_components"):
        return np.arange(final.n_components)
    return None


def _logits_to_proba(out):
    if out.shape[1] == 1:
        p = torch.sigmoid(out)
        return torch.cat([1 - p, p], dim=1)
    return torch.softmax(out, dim=1)


def model_answers(black_box, X):
    """The model's answers on rows ``X`` as :func:`model_agreement` compares them: a
    classifier's own labels (``("labels", array)``) or the outputs (``("outputs", array)``).
    Computed once, they serve any number of masked copies of the same rows."""
    if black_box.spec is None:
        black_box.predict(X[:2])  # the outputs' layout, learnt from the first answer
    spec = black_box.spec
    if black_box.has_own_labels and "real" not in spec.kinds:
        labels = in_chunks(black_box.labels, X)
        if labels.shape[1] == spec.n_outputs:
            return "labels", labels
    return "outputs", in_chunks(black_box.predict, X)


def model_agreement(black_box, X, X_masked, *, multioutput="uniform_average", answers=None,
                    by_answer=False):
    """How often the model keeps its answer when rows ``X`` become ``X_masked``.

    A classifier's answer is its own ``predict`` (per output, or per label of a
    multi-label model): the fraction of rows where it is unchanged. Other models are
    compared on their outputs with :func:`output_agreement`: the argmax of a categorical
    output, the side of 0.5 of a Bernoulli one, the R² of a real one.

    Parameters
    ----------
    black_box : BlackBox
    X, X_masked : ndarray of shape (n_samples, n_features)
    multioutput : {"uniform_average", "raw_values"}, default="uniform_average"
    answers : tuple, default=None
        :func:`model_answers` of ``X``, when computed already.
    by_answer : bool, default=False
        A discrete output's score is the mean, over the answers the model gives on ``X``,
        of the fraction of their rows where it is unchanged (as balanced accuracy is to
        accuracy), so that a rare answer weighs as much as a common one.
    """
    kind, reference = model_answers(black_box, X) if answers is None else answers
    if kind == "labels":
        masked = in_chunks(black_box.labels, X_masked)
        if masked.shape != reference.shape:
            raise ValueError(
                f"The black box {black_box.model!r} predicted labels of shape "
                f"{masked.shape} on masked rows, and of shape {reference.shape} on the rows "
                "themselves; it should answer every row the same way."
            )
        kept = reference == masked
        scores = np.array([kept_share(kept[:, i], reference[:, i], by_answer)
                           for i in range(kept.shape[1])], dtype=np.float64)
        if multioutput == "raw_values":
            return scores
        if multioutput != "uniform_average":
            raise ValueError("multioutput should be 'uniform_average' or 'raw_values'; "
                             f"got {multioutput!r}.")
        return float(scores.mean())
    masked = in_chunks(black_box.predict, X_masked)
    return output_agreement(reference, masked, black_box.spec, multioutput=multioutput,
                            by_answer=by_answer)
