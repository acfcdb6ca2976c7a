"""What the explainers and the EVAL-X evaluator share as estimators, below
:class:`~sk_sointer.base.BaseExplainer`: the :class:`Problem` ``fit`` resolves,
and :class:`_SkorchEstimatorMixin`, the fit template (data read and validated, the black
box adapted, the masker learnt, training seeded, the method's hooks called in turn),
skorch's training knobs as flat parameters, and the rows read at the boundary as ``fit``
read them.
"""

import math
import warnings
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import clone
from sklearn.utils import check_array
from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions
from sklearn.utils.validation import _check_feature_names, check_is_fitted, validate_data
from skorch.callbacks import ProgressBar
from skorch.dataset import ValidSplit

from ._fitted import _picklable
from ._layout import RowLayout, flatten_rows
from ._masking import Masker
from ._model_judge import draw_background
from ._networks import MLP
from ._outputs import OutputSpec, check_outputs
from ._table import TableCodec, TableMasker, _listed, is_table
from ._training.progress import _EpochProgress
from ._training.random_masks import fit_judge_to_masks
from ._utils import in_chunks, resolve_device, seeded
from .black_box import BlackBox, as_black_box

# With tokens=True, the largest id fit accepts: at least this, or this many times the
# number of distinct ids in X (see _check_tokens).
_MIN_TOKEN_BOUND = 1 << 16
_TOKENS_PER_DISTINCT_ID = 16

_OPTIMIZERS = {
    "adam": torch.optim.Adam,
    "adamw": torch.optim.AdamW,
    "rmsprop": torch.optim.RMSprop,
    "sgd": torch.optim.SGD,
}


@dataclass(frozen=True)
class Problem:
    """What ``fit`` resolved about the data and the black box, before any training.

    ``fit`` builds it from the data, :func:`sk_sointer.load` from a file's fitted state.

    Attributes
    ----------
    layout : RowLayout
        The rows' layout: width, shape, image, tokens, groups.
    masker : Masker
        Fitted masker: baseline, standardisation, feature groups.
    output_spec : OutputSpec
        The black box's outputs, with the target output selected when there is one.
    black_box : BlackBox or None
        The model, when ``fit`` received one (``None``: outputs only).
    """

    layout: RowLayout
    masker: Masker
    output_spec: OutputSpec
    black_box: BlackBox = None

    @property
    def n_features(self):
        """Width of a (flattened) row."""
        return self.layout.n_features

    @property
    def input_shape(self):
        """Shape of one row as the networks may read it: ``(n_features,)`` for a table,
        ``(channels, height, width)`` for images."""
        return self.layout.input_shape

    @property
    def n_tokens(self):
        """With token ids (``tokens=True``): the number of ids (the largest seen, plus one)."""
        return self.layout.n_tokens

    @property
    def n_groups(self):
        """Number of feature groups: what ``k`` counts and the selector scores."""
        return self.masker.n_groups_

    @property
    def target(self):
        return self.output_spec.target

    def net_params(self):
        """The problem's part of a :class:`~sk_sointer._training.nets.SelectorJudgeNet`'s
        parameters."""
        params = {"masker": self.masker, "output_spec": self.output_spec,
                  "input_shape": self.input_shape}
        if self.n_tokens is not None:
            params["n_tokens"] = self.n_tokens
        return params


class _SkorchEstimatorMixin:
    """Training plumbing shared by the explainers and the EVAL-X evaluator.

    Both learn from ``X`` and a black box (the model, or its outputs on ``X``), expose
    skorch's training knobs as flat parameters and keep their network factories as
    parameters. The class supplies ``_build_net(n_features, spec, **net_params)``;
    :meth:`_fit` adapts the black box, seeds torch and trains the net as ``net_``.
    """

    # Route a model given as ``fit(X, black_box=model)`` when metadata routing is enabled.
    __metadata_request__fit = {"black_box": True}

    # The modality parameters (see RowLayout), for the estimators that lack some of them:
    # EVAL-X reads tables and images, MEED and SOInter no token ids.
    groups = None
    image_shape = None
    patch_size = None
    tokens = False

    # Methods that need the model itself, not only its outputs, set this, and say why.
    _requires_model = False
    _requires_model_because = "must query the black box on masked inputs"

    _parameter_constraints: dict = {
        "max_epochs": [Interval(Integral, 1, None, closed="left")],
        # Batch normalisation needs two rows to estimate a batch's statistics.
        "batch_size": [Interval(Integral, 2, None, closed="left")],
        "lr": [Interval(Real, 0, None, closed="neither")],
        "weight_decay": [Interval(Real, 0, None, closed="left")],
        "optimizer": [StrOptions(set(_OPTIMIZERS)), callable],
        "callbacks": [list, None],
        "train_split": [Interval(Real, 0, 1, closed="neither"), callable, None],
        "baseline": [StrOptions({"mean", "zero"}), Real, "array-like"],
        "device": [StrOptions({"auto", "cpu", "cuda"}), str],
        "data_on_device": ["boolean"],
        "cuda_graphs": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def _check_params(self, problem):
        """Check parameters that depend on the data; subclasses extend it."""

    def _validate_params(self):
        """scikit-learn's validation of the parameters, and a bool refused wherever a
        number is asked for: Python counts ``True`` as the int 1, so ``max_epochs=True`` or
        ``lr=True`` would pass as 1 (and ``weight_decay=True`` end in torch's error)."""
        super()._validate_params()
        for name, constraints in self._parameter_constraints.items():
            value = getattr(self, name, None)
            intervals = [c for c in constraints if isinstance(c, Interval)]
            if (isinstance(value, (bool, np.bool_)) and intervals
                    and not any(c in ("boolean", bool) for c in constraints)):
                what = "an int" if intervals[0].type is Integral else "a number"
                raise InvalidParameterError(
                    f"The {name!r} parameter of {type(self).__name__} must be {what}, not a "
                    f"bool; got {value!r}."
                )

    def _draw_background(self, X):
        """The rows whose values fill left-out features when the model is asked about
        masked rows (``background``), or ``None`` for the masker's fill (see
        :class:`~sk_sointer._model_judge.MaskedValue`)."""
        background = getattr(self, "background", None)
        if background is not None and not isinstance(background, Integral):
            background = self._background_rows(background)
        return draw_background(background, X, self.random_state,
                               allow_nan=self._table_codec is not None)

    def _background_rows(self, background):
        """Background rows as ``fit`` reads them, in the fitted column order, as X is read.

        A table's rows are matched to its columns by name and coded
        (:meth:`~sk_sointer._table.TableCodec.encode`). Rows of numbers given as a DataFrame
        (or a Series: one row) are matched to ``feature_names_in_`` by name, reordered when
        the names come in another order and refused, naming them, when some are missing or
        extra: read by position, a frame's columns would fill left-out features with
        another feature's values. As scikit-learn does for ``X``, a frame given to an
        explainer fitted without names, or rows without names given to one fitted with
        names, are read by position with a warning. Images are flattened."""
        codec = self._table_codec
        if codec is not None:
            return codec.encode(background, "background")
        if hasattr(background, "to_frame") and np.ndim(background) == 1:
            background = background.to_frame().T  # a Series: one row, named by its index
        # Names as scikit-learn reads X's: all strings, or none (then read by position).
        names = list(background.columns) if hasattr(background, "columns") else []
        if any(isinstance(c, str) for c in names) and not all(isinstance(c, str) for c in names):
            raise ValueError("background's column names should all be strings, as X's are; "
                             f"got {_listed(names)}.")
        names = names if names and isinstance(names[0], str) else None
        fitted = getattr(self, "feature_names_in_", None)
        name = type(self).__name__
        if names is not None and fitted is not None:
            fitted = list(fitted)
            twice = sorted({c for c in names if names.count(c) > 1})
            missing = [c for c in fitted if c not in names]
            extra = [c for c in names if c not in fitted]
            if twice or missing or extra:
                parts = [f"has the columns {_listed(twice)} more than once"] if twice else []
                if missing:
                    parts.append(f"lacks the columns {_listed(missing)} seen in fit")
                if extra:
                    parts.append(f"has columns {_listed(extra)} not seen in fit")
                raise ValueError(f"background {' and '.join(parts)}: give X's columns, by "
                                 "the names they had in fit.")
            if names != fitted:
                background = np.asarray(background)[:, [names.index(c) for c in fitted]]
        elif names is not None:
            warnings.warn(f"background has feature names, but {name} was fitted without "
                          "feature names; its columns are read by position.", UserWarning)
        elif fitted is not None:
            warnings.warn(f"background does not have valid feature names, but {name} was "
                          "fitted with feature names; its columns are read in the order of "
                          "feature_names_in_.", UserWarning)
        if np.ndim(background) > 2:
            return self.layout_.flatten(background, "background")
        return np.asarray(background) if names is not None else background

    def _output_target(self, layout, spec):
        """The index of the output a method explains, ``None`` for all of them: ``target``
        as an index (validated by ``OutputSpec.select``) or a pixel's ``(row, col)``, which
        the rows' ``layout`` resolves (:meth:`~sk_sointer._layout.RowLayout.output_index`)."""
        return layout.output_index(getattr(self, "target", None), spec.n_outputs)

    def _pretrain(self, problem, X, X_scaled, targets):
        """A training phase before the net is built (none by default). ``X`` holds the rows in
        their own units (for the black box), ``X_scaled`` as the networks see them."""

    def _fitted_parts(self):
        """Trained torch modules besides the net's, by the name a file stores them under
        (SOInter's energy network); none by default."""
        return {}

    def _rebuild_parts(self, problem, device):
        """Build, untrained, what :meth:`_pretrain` fits, so that :func:`sk_sointer.load` can
        fill it with the stored weights of :meth:`_fitted_parts` (nothing by default)."""

    def _fit(self, X, y, black_box):
        codec = None
        if is_table(X):
            codec, row_shape = self._read_table(X), None
            X = codec.encode(X)
        else:
            X, row_shape = flatten_rows(X)
            X = validate_data(self, X, dtype=[np.float32, np.float64], ensure_min_samples=2)
        tokens = bool(self.tokens)
        layout = RowLayout.resolve(
            row_shape, X.shape[1], image_shape=self.image_shape, tokens=tokens,
            n_tokens=self._check_tokens(X, fitting=True) if tokens else None,
            groups=self.groups, patch_size=self.patch_size,
        )
        if codec is None:
            masker = Masker(self.baseline, layout.groups, tokens=tokens).fit(X)
        else:
            masker = TableMasker(codec, layout.groups).fit(X)
        model, targets, spec = self._resolve_targets(X, y, black_box, row_shape, tokens,
                                                     codec)
        spec = spec.select(self._output_target(layout, spec)).fitted(targets)
        _warn_if_constant(targets, spec, model)
        problem = Problem(layout, masker, spec, model)
        self._check_params(problem)
        self.layout_ = layout
        self.black_box_ = model
        self.masker_ = masker
        self.background_ = self._draw_background(X)
        self.output_spec_ = problem.output_spec
        X_scaled = masker.standardize(X)
        outputs, targets = targets, problem.output_spec.standardize(targets)

        device = resolve_device(self.device)
        with seeded(self.random_state, device) as seed:
            self._pretrain(problem, X, X_scaled, targets)
            net_input = self._selector_input(X_scaled, X, targets)
            self.net_ = self._build_net(
                problem,
                selector_in_features=net_input.shape[1],
                **self._net_params(device, seed, X.shape[0]),
            )
            self._train(problem, X, net_input, targets)
            self._refine(problem, X, net_input, outputs)
            self._fit_judge_to_masks(X_scaled, net_input, targets)
        return self

    def _read_table(self, X):
        """The codec of a table given to ``fit`` (see :mod:`sk_sointer._table`), after
        checking what a table allows; sets ``n_features_in_`` and ``feature_names_in_``."""
        name = type(self).__name__
        for param, what in (("tokens", "token ids"), ("image_shape", "images"),
                            ("patch_size", "image patches")):
            if getattr(self, param, None):
                raise ValueError(f"{name} was given {param}={getattr(self, param)!r}, for "
                                 f"{what}, and a table (a DataFrame with text, dates or empty "
                                 f"cells): set {param} to its default for a table.")
        baseline = getattr(self, "baseline", "mean")
        if not (isinstance(baseline, str) and baseline == "mean"):
            raise ValueError(
                f"{name} was given baseline={baseline!r} and a table (a DataFrame with text, "
                "dates or empty cells), whose left-out columns take their training mean "
                "(numbers) or their most frequent value (text, categories, booleans): use "
                "baseline='mean', or background= to fill them from training rows."
            )
        if len(X) < 2:
            raise ValueError(f"{name} needs at least 2 rows of X to fit; got {len(X)}.")
        if X.shape[1] == 0:
            raise ValueError(f"{name} needs at least 1 column of X to fit; got 0.")
        _check_feature_names(self, X, reset=True)
        self.n_features_in_ = X.shape[1]
        return TableCodec().fit(X)

    @property
    def _table_codec(self):
        """The codec of the table ``fit`` was given, ``None`` for rows of numbers."""
        return getattr(getattr(self, "masker_", None), "codec", None)

    def _check_tokens(self, X, fitting=False):
        """With ``tokens=True``: ``X`` must hold token ids, whole numbers from 0 (the
        padding) below the number of ids seen by ``fit``; returns that number when fitting."""
        name = type(self).__name__
        if fitting:
            for prefix in ("selector", "approximator", "predictor"):
                if isinstance(getattr(self, prefix, None), MLP):
                    raise ValueError(
                        f"{name} with tokens=True needs networks that embed token ids: pass "
                        f"{prefix}=TokenCNN{'Selector' if prefix == 'selector' else ''}() (an "
                        "MLP would read the ids as numbers)."
                    )
        if X.size and (X.min() < 0 or not np.array_equal(X, np.round(X))):
            raise ValueError(f"{name} was given tokens=True, so X should hold token ids: whole "
                             "numbers >= 0 (0 the padding).")
        largest = int(X.max()) if X.size else 0
        if fitting:
            # The embeddings get one row per id up to the largest: one stray id of 2,000,000
            # in a table of 180 ids once cost 4 GB. Ids sparser than this bound are refused;
            # ids seen in fit are all an explainer needs, so they can always be made dense.
            limit = max(_MIN_TOKEN_BOUND, _TOKENS_PER_DISTINCT_ID * len(np.unique(X)))
            if largest >= limit:
                raise ValueError(
                    f"X holds token id {largest}, but {name} sizes its embeddings by the "
                    f"largest id, and accepts ids below {limit} for these {X.size} tokens "
                    f"(the larger of {_MIN_TOKEN_BOUND} and {_TOKENS_PER_DISTINCT_ID} times "
                    "the number of distinct ids): map the ids to 0, 1, 2, ... (TokenSequencer "
                    "does), 0 staying the padding."
                )
            return largest + 1
        if largest >= self.n_tokens_:
            raise ValueError(
                f"X holds token id {largest}, but {name} was fitted on ids below "
                f"{self.n_tokens_}; map unknown tokens to an id seen in fit."
            )
        return None

    # The fitted layout's parts, under the names of the fitted attributes users know.

    @property
    def row_shape_(self):
        """Shape of one row as given to ``fit`` when ``X`` held images, else ``None``."""
        return self.layout_.row_shape

    @property
    def image_shape_(self):
        """``(channels, height, width)`` of image rows, else ``None``."""
        return self.layout_.image_shape

    @property
    def n_tokens_(self):
        """With ``tokens=True``, the number of token ids the embeddings hold, else ``None``."""
        return self.layout_.n_tokens

    def _train(self, problem, X, net_input, targets):
        """Train ``net_`` on what the selector sees and the (standardised) outputs."""
        self.net_.fit(net_input, targets)

    def _refine(self, problem, X, net_input, outputs):
        """No refinement: the evaluator has no selector; :class:`BaseExplainer` has one."""

    def _fit_judge_to_masks(self, X_scaled, net_input, targets):
        """Where the judge learnt on relaxed masks (L2X, MEED), the fit ends with a tenth of
        its epochs (three at least) of the judge alone on the selector's final masks of the
        training rows (see :func:`~sk_sointer._training.random_masks.fit_judge_to_masks`).
        The selector and its masks do not move."""
        net = self.net_
        if not net.judge_learns_relaxed_masks:
            return
        fit_judge_to_masks(net, X_scaled, net.group_masks(net_input, self.k_), targets,
                           max_epochs=max(3, self.max_epochs // 10))

    def _selector_input(self, X_scaled, X, outputs=None):
        """What the net is fed, in training and at explanation time (float32 ndarray; on
        an accelerator at explanation time, a tensor there): the standardised rows,
        followed by any columns a method adds for its selector (MEED: the black box's
        outputs, ``outputs`` when given, standardised as the losses see them). The
        selector's input width follows from it; the judges read only the first
        ``n_features`` columns."""
        return X_scaled

    def _resolve_targets(self, X, y, black_box, row_shape=None, tokens=False, codec=None):
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
            # The package works on flat rows; the model gets them in the shape fit got.
            model = as_black_box(model).with_row_shape(row_shape).with_token_ids(tokens)
            if codec is not None:
                if model.kind == "torch":
                    raise ValueError(
                        f"{name} was given a table (a DataFrame with text, dates or empty "
                        "cells) and a torch module, which takes tensors of numbers: pass a "
                        "model that takes the table's rows (a Pipeline with its encoder, or a "
                        "function of a DataFrame), or encode the table and explain the module "
                        "on numbers."
                    )
                model = model.with_table(codec)
            targets = in_chunks(model.predict, X)
            return model, targets, model.spec
        if y is None:
            raise ValueError(
                f"{name} requires y to be passed, but the target y is None: pass the black "
                "box's outputs on X as y, or the model as black_box."
            )
        if self._requires_model:
            raise ValueError(
                f"{name} {self._requires_model_because}, so it needs the model "
                "itself (fit(X, black_box=model)); it got only the model's outputs."
            )
        targets, spec = check_outputs(y, X.shape[0])
        return None, targets, spec

    def _net_params(self, device, seed, n_samples):
        if n_samples and isinstance(self.train_split, Real):
            # skorch's split rounds the validation part up; training needs two rows (batch
            # normalisation cannot normalise one).
            n_train = n_samples - math.ceil(n_samples * self.train_split)
            if n_train < 2:
                raise ValueError(
                    f"train_split={self.train_split} leaves {n_train} of {n_samples} rows for "
                    "training, which needs 2 at least: give more rows, a smaller "
                    "train_split, or train_split=None."
                )
        params = {
            "max_epochs": self.max_epochs,
            "batch_size": self.batch_size,
            "lr": self.lr,
            "optimizer": _OPTIMIZERS.get(self.optimizer, self.optimizer),
            "optimizer__weight_decay": self.weight_decay,
            "device": device,
            "data_on_device": self.data_on_device,
            "cuda_graphs": self.cuda_graphs,
            "train_split": self._train_split(seed),
            "callbacks": list(self.callbacks or []),
            "verbose": int(self.verbose >= 2),
        }
        if self.verbose == 1:
            params["callbacks"].append(("epoch_progress",
                                        _EpochProgress(f"{type(self).__name__} training")))
        elif self.verbose >= 2:
            params["callbacks"].append(("progress_bar", ProgressBar()))
        return params

    def _train_split(self, seed):
        if self.train_split is None or callable(self.train_split):
            return self.train_split
        return ValidSplit(self.train_split, stratified=False, random_state=seed)

    def __getstate__(self):
        # A copy: Python's default state is the live __dict__, and leaving an unpicklable
        # black box out of it must not take it away from the explainer being pickled.
        state = dict(super().__getstate__())
        black_box = state.get("black_box_")
        if black_box is not None and not _picklable(black_box.model):
            warnings.warn(
                f"The black box {black_box.model!r} cannot be pickled and is left out; the "
                "unpickled estimator needs the model's outputs passed as y (score(X, y), "
                "score_masks(X, masks, y)) where it would otherwise query the model.",
                UserWarning,
            )
            state["black_box_"] = None
        return state

    def set_params(self, **params):
        # Nested network factories (``selector__hidden_units=...``) are replaced by copies
        # before they are changed: a default factory object is shared by every instance
        # built without an explicit one, and must not be mutated through one of them.
        for name in {key.split("__", 1)[0] for key in params if "__" in key}:
            value = getattr(self, name, None)
            if hasattr(value, "get_params"):
                setattr(self, name, clone(value))
        return super().set_params(**params)

    # -- data at the boundary ------------------------------------------------------------

    def _check_output_container(self):
        """A DataFrame holds one row per sample: masks of images (one array per image)
        cannot be one, so set_output's pandas or polars is refused for them."""
        container = getattr(self, "_sklearn_output_config", {}).get("transform", "default")
        row_shape = getattr(self, "row_shape_", None)
        if container != "default" and row_shape is not None:
            raise ValueError(
                f"set_output(transform={container!r}) makes tables, but this "
                f"{type(self).__name__} was fitted on images of shape {row_shape}, whose masks "
                "keep that shape: use set_output(transform='default'), or fit on flat rows "
                "with image_shape= for masks with one column per pixel."
            )

    def _validate_transform_input(self, X, *, finite=True):
        """``X`` validated against the fit; ``finite=False`` leaves the finite check to
        :meth:`_explain_rows`, which checks the standardised rows anyway."""
        check_is_fitted(self)
        codec = self._table_codec
        if codec is not None:
            return self._table_codes(X, codec)
        X = self.layout_.flatten(X)
        if not (finite or self.tokens) and self._validated_as_given(X):
            return X
        X = validate_data(self, X, dtype=[np.float32, np.float64], reset=False,
                          ensure_all_finite=finite or self.tokens)
        if self.tokens:
            self._check_tokens(X)
        return X

    def _table_codes(self, X, codec):
        """The codes of a table's rows ``X`` (a DataFrame with the columns seen in fit,
        matched by name, or rows of values in their order), at least one row."""
        codes = codec.encode(X)
        if len(codes) == 0:
            raise ValueError(f"Found array with 0 sample(s) (shape={codes.shape}) while a "
                             f"minimum of 1 is required by {type(self).__name__}.")
        return codes

    def _validated_as_given(self, X):
        """Whether validation (without its finite check) would hand ``X`` back as it is: a
        float32 or float64 ndarray of rows of the fitted width, for an explainer fitted
        without feature names. scikit-learn's validation of such rows costs about 60 µs,
        half of ``transform`` on one row; a serving loop explains a row or a few a call."""
        return (type(X) is np.ndarray and X.ndim == 2 and X.shape[0] > 0
                and X.dtype in (np.float32, np.float64)
                and X.shape[1] == self.n_features_in_
                and not hasattr(self, "feature_names_in_"))


def _warn_if_constant(targets, spec, model):
    """A UserWarning when the explained outputs are the same on every row: any mask then
    keeps them, fidelity is 1 whatever the masks, and the masks say nothing of the model."""
    columns = slice(None) if spec.target is None else slice(*spec.blocks[spec.target])
    outputs = np.asarray(targets)[:, columns]
    if len(outputs) < 2 or np.any(outputs != outputs[:1]):
        return
    what = (f"The black box {getattr(model, 'model', model)!r} gives" if model is not None
            else "The outputs y give")
    warnings.warn(
        f"{what} every row of X the same outputs: any mask keeps them, so fidelity "
        "is 1 whatever the masks and the masks say nothing of the model. Check the model "
        "(a constant or dummy model, one class seen in training) or fit on rows where its "
        "answers differ.",
        UserWarning,
    )


def _check_masks(masks, shape):
    masks = check_array(masks, dtype=np.float32, input_name="masks")
    if masks.shape != shape:
        raise ValueError(f"masks should have the shape of X, {shape}; got {masks.shape}.")
    return (masks > 0).astype(np.float32)


def _is_model(obj):
    return not (isinstance(obj, (np.ndarray, list, tuple, torch.Tensor)) or hasattr(obj, "__array__"))
