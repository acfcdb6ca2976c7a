"""scikit-learn plumbing shared by every explainer.

:class:`BaseExplainer` owns the public API (``fit``, ``transform``, ``explain``, ``score``,
``predict_masked``), validates data and parameters, adapts the black box, learns the masker
(baseline, standardisation, feature groups), seeds training, builds the method's skorch net
(stored as ``net_``; composed, not inherited) and turns scores into masks.

``fit`` first resolves a :class:`Problem` (the rows' :class:`~sk_sointer._layout.RowLayout`,
masker and groups, output spec, black box, target output) and hands it to the method's
hooks:

- ``_check_params(problem)``: checks that depend on the data (``k`` against the groups, a
  ``target`` against the outputs, a single-output model given to a multi-output method);
- ``_pretrain(problem, X, X_scaled, targets)``: an optional phase before the net is built
  (SOInter's energy network);
- ``_fitted_parts()`` and ``_rebuild_parts(problem, device)``: what ``_pretrain`` trained
  besides the net, named for a file, and how :func:`sk_sointer.load` rebuilds it;
- ``_build_net(problem, **net_params)``: the method's skorch net;
- ``_train(problem, X, net_input, targets)``: trains ``net_`` (one ``net_.fit`` by default;
  SOInter's fit adds its re-query and keep-best callbacks);
- ``_refine(problem, X, net_input, outputs)``: after the method's own training, the
  selector refined against the black box itself (:class:`~sk_sointer._training.nets.
  ModelJudgedNet`), when ``fit`` got the model and ``refine`` is not None (the selector's
  output serves as the groups' log-weights: every method's scores are increasing in it;
  with ``k=None`` each row keeps its size);
- ``_fit_judge_to_masks(X_scaled, net_input, targets)``: last, where the net's judge learnt
  on relaxed masks (L2X, MEED), a few epochs of the judge alone on the selector's final
  masks, so that it answers on the masks ``transform`` returns;
- ``_selector_input(X_scaled, X)``: what the selector sees (the standardised rows by
  default; MEED adds the black box's output);
- ``_selector_scores(X)``: per-group scores from the fitted selector, its module's outputs
  through ``_scores_of_output`` (REAL-X's and HardKuma's selection probabilities);
- ``_masks_from_scores(scores)``: the top-k, or with ``k=None`` the scores above
  ``_threshold`` (selection probabilities above 0.5).
"""

import math
import pickle
import time
import warnings
from abc import ABCMeta, abstractmethod
from dataclasses import dataclass, field, fields
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, _fit_context, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import Tags, assert_all_finite, check_array, get_tags
from sklearn.utils._param_validation import (Interval, InvalidParameterError, StrOptions,
                                            validate_parameter_constraints)
from sklearn.utils.validation import _check_feature_names, check_is_fitted, validate_data
from skorch.callbacks import ProgressBar
from skorch.dataset import ValidSplit

from ._layout import RowLayout, flatten_rows
from ._masking import Masker
from ._networks import MLP
from ._outputs import OutputSpec, check_outputs, output_agreement
from ._repair import RepairReport, RowRepair, repair_masks
from ._search import ModelJudge, ModelRefinement, still_rising
from ._training.progress import _EpochProgress, _RefineProgress
from ._utils import in_chunks, inference_chunk, resolve_device, seeded, set_mode
from .black_box import BlackBox, as_black_box, model_agreement
from ._topk import ROUNDS_K, topk_mask, topk_mask_of_finite
from ._table import TableCodec, TableMasker, _listed, is_table
from ._value import MaskedValue, draw_background, row_check

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


# Most training rows the refinement's in-distribution judge is trained on.
_JUDGE_ROWS = 10_000
# Epochs of imitation of greedy targets chosen in distribution (ModelRefinement's
# imitate_epochs="auto" with drawn rows).
_IMITATE_EPOCHS_IN_DISTRIBUTION = 20

# The explainers that read token ids add this to their constraints.
TOKENS_CONSTRAINT = {"tokens": ["boolean"]}


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
        :class:`~sk_sointer._value.MaskedValue`)."""
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
        training rows (see ``SelectorJudgeNet.fit_judge_to_masks``). The selector and its
        masks do not move."""
        net = self.net_
        if not net.judge_learns_relaxed_masks:
            return
        net.fit_judge_to_masks(X_scaled, net.group_masks(net_input, self.k_), targets,
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


class BaseExplainer(
    _SkorchEstimatorMixin, OneToOneFeatureMixin, TransformerMixin, BaseEstimator,
    metaclass=ABCMeta,
):
    """Base class of the amortized instance-wise feature-selection explainers.

    Not meant to be used directly: use a subclass such as
    :class:`~sk_sointer.L2XExplainer`. The shared parameters are described there.
    """

    # Every explainer's: the modality parameters (what a row is, see RowLayout) and the
    # refinement against the model.
    _parameter_constraints: dict = {
        **_SkorchEstimatorMixin._parameter_constraints,
        "groups": ["array-like", None],
        "image_shape": [tuple, list, None],
        "patch_size": [Integral, tuple, list, None],
        "refine": [StrOptions({"model"}), ModelRefinement, None],
        "repair": [StrOptions({"model"}), RowRepair, None],
        "background": [Interval(Integral, 1, None, closed="left"), "array-like", None],
    }

    # With k=None, the groups whose score exceeds this are selected (selection
    # probabilities above one half).
    _threshold = 0.5

    @abstractmethod
    def _build_net(self, problem, **net_params):
        """Return the method's (uninitialised) skorch net."""

    def _selector_scores(self, X):
        """Per-group scores (float tensor) for standardised rows ``X`` on the net's device."""
        return self._scores_of_output(self.net_.module_(X))

    def _removed_weight(self):
        """Weight of the model's answer with the selected groups left out, taken from the
        refinement's reward (:class:`~sk_sointer._search.ModelJudge`'s ``removed_weight``):
        none; a method whose objective asks the left-out features not to carry the answer
        says how much."""
        return 0.0

    def _refine(self, problem, X, net_input, outputs):
        """Refine the fitted selector against the black box (see :class:`ModelRefinement`):
        only with the model at hand and ``refine``. With ``k=None`` each row keeps the
        number of groups the fitted selector gives it, and the refinement chooses which."""
        refine = getattr(self, "refine", None)
        if isinstance(refine, str):  # "model": the default settings
            refine = ModelRefinement()
        self.n_model_queries_ = 0
        self.refinement_fidelity_ = None
        if refine is None or problem.black_box is None or refine.max_queries == 0:
            return  # max_queries=0: the selector as the method trained it
        # max_seconds covers everything the refinement does, from here: the synthetic rows'
        # answers, the in-distribution judge's training and the epochs.
        deadline = None if refine.max_seconds is None else \
            time.monotonic() + refine.max_seconds
        n_rows = len(X)
        X, net_input, outputs = self._with_synthetic_rows(problem, refine, X, net_input,
                                                          outputs)
        k, keep_sizes = self.k_, {}
        if k is None:  # each row's size, kept above the method's threshold
            k = self._selection_sizes(net_input)
            keep_sizes = {"threshold": self._threshold, "scores_of": self._scores_of_output}
        # Ties to the judge on table rows at a fixed k (with k=None, REAL-X's thresholded
        # masks were no better on the real tables: 95.9 against 96.1; pixels: ModelJudge).
        judge_ties = problem.layout.image_shape is None and self.k_ is not None
        drawn = refine.drawn_rows
        if drawn == "auto":
            drawn = 0.5 if self._table_codec is not None else 0.0
        if problem.layout.image_shape is not None or problem.masker.tokens:
            drawn = 0.0  # a pixel or a token moved between rows makes no row of the data
        if refine.imitate_epochs == "auto":  # imitation where the targets are in distribution
            refine = clone(refine).set_params(
                imitate_epochs=_IMITATE_EPOCHS_IN_DISTRIBUTION if drawn else 0)
        background = getattr(self, "background_", None)
        n_fill = 1 if background is None else len(background)
        judge = ModelJudge(problem.black_box, problem.masker, problem.output_spec, X,
                           outputs, spent=len(X) - n_rows, log_weight=refine.log_weight,
                           background=background,
                           in_distribution=self._in_distribution_judge(problem, X, outputs,
                                                                       refine, deadline),
                           in_distribution_weight=refine.in_distribution,
                           judge_ties=judge_ties, drawn_rows=drawn,
                           n_drawn=refine.n_drawn, n_partners=n_rows,
                           # torch's generator (seeded by fit) drawn only when used, so
                           # that refinements without draws stay as they were
                           random_state=int(torch.randint(2**31 - 1, ()).item()) if drawn
                           else None,
                           # the complement's term first asks every row with nothing kept:
                           # a budget that cannot pay for that refines the kept half alone
                           removed_weight=self._removed_weight()
                           if refine.max_queries > 2 * len(X) * n_fill else 0.0,
                           max_seconds=None if deadline is None else
                           max(0.0, deadline - time.monotonic()))
        callbacks = []
        if self.verbose:
            import sys

            name = f"{type(self).__name__} refining against the model"
            synthetic = f" (and {len(X) - n_rows:,} synthetic)" if len(X) > n_rows else ""
            sys.stderr.write(f"{name}: {n_rows:,} rows{synthetic}, a budget of "
                             f"{refine.max_queries:,} queries\n")
            sys.stderr.flush()
            callbacks.append(("refine_progress", _RefineProgress(judge, name)))
        net = self.net_.refine(net_input, judge, refine, k=k, n_judged=n_rows,
                               callbacks=callbacks, **keep_sizes)
        if net is None:  # a budget too small to judge the selector once: none refined
            return
        keep_best = dict(net.callbacks_)["keep_best"]
        self.refinement_fidelity_ = np.array(
            [keep_best.start_fidelity_, *net.history[:, "model_fidelity"]], dtype=np.float64
        )
        self.n_model_queries_ = judge.n_queries
        self._warn_if_still_rising(refine, net, keep_best, judge, n_rows, len(X))

    def _warn_if_still_rising(self, refine, net, keep_best, judge, n_training, n_rows):
        """A ConvergenceWarning when the refinement ended on its budget (queries, seconds or
        epochs), not on ``n_iter_no_change``, while the model's fidelity on the evaluation
        rows still rose (:func:`~sk_sointer._search.still_rising`), its budget extended as
        often as ``max_extensions`` allows. ``n_rows`` rows were refined, the first
        ``n_training`` of them training rows, the others synthetic: the epochs that
        ``max_epochs`` allows those are not warned of."""
        n_epochs = len(self.refinement_fidelity_) - 1
        rising = still_rising(self.refinement_fidelity_)
        if rising is None or keep_best.stale_ >= keep_best.patience:
            return
        before, after, last = rising
        if judge.out_of_time():
            limit, remedy = f"its time budget (max_seconds={refine.max_seconds:g})", "max_seconds"
        elif n_epochs < net.plan_.most_epochs:  # ended by the queries, not the epochs
            extended = (f", extended {net.extensions_} times" if net.extensions_ > 1
                        else ", extended once" if net.extensions_ else "")
            limit = f"its query budget (max_queries={refine.max_queries:,}{extended})"
            # Extended as often as allowed: more extensions; otherwise a larger budget.
            remedy = "max_extensions" if net.extensions_ else "max_queries"
        elif n_rows > n_training:
            # With synthetic rows the epochs are max_epochs times the root of the training
            # rows' share, on purpose: a few hundred rows are not fitted further (on
            # diabetes, 309 rows, 300 epochs raised the training rows' fidelity, not the
            # test rows').
            return
        else:
            limit, remedy = f"max_epochs={refine.max_epochs}", "max_epochs"
        warnings.warn(
            f"{type(self).__name__}'s refinement against the model ended on {limit} after "
            f"{n_epochs} epochs while the model's fidelity on the training rows still rose "
            f"({before:.3f} -> {after:.3f} over its last {last} epochs): a larger "
            f"ModelRefinement({remedy}=...) may give more faithful masks "
            "(refinement_fidelity_ holds the curve).",
            ConvergenceWarning,
        )

    def _selection_sizes(self, net_input):
        """The number of groups the fitted selector selects (``k=None``) on each row of
        what it is fed, an int64 array."""
        self.net_.module_.eval()
        device = self._inference_device()

        def sizes(rows):
            with torch.inference_mode():
                masks = self._masks_from_scores(self._selector_scores(
                    torch.as_tensor(rows).to(device)))
            return torch.as_tensor(masks).sum(dim=1).to("cpu", torch.int64).numpy()

        return in_chunks(sizes, net_input)

    def _scores_of_output(self, outputs):
        """The selector's scores (those ``_threshold`` applies to) of its module's outputs,
        differentiably: the outputs themselves unless a method says otherwise."""
        return outputs

    def _with_synthetic_rows(self, problem, refine, X, net_input, outputs):
        """The training rows, what the selector sees of them and the model's outputs on
        them, each followed by the same of the refinement's synthetic rows (see
        ``ModelRefinement(min_rows=)``), whose outputs the model gives here; none are made
        of images or token ids."""
        background = getattr(self, "background_", None)
        n_new = refine.n_synthetic(len(X), 1 if background is None else len(background))
        if not n_new or problem.layout.image_shape is not None or problem.masker.tokens:
            return X, net_input, outputs
        synthetic = refine.synthetic_rows(X, problem.masker, n_new,
                                          int(torch.randint(2**31 - 1, ()).item()))
        answers = in_chunks(problem.black_box.predict, synthetic)
        seen = self._selector_input(problem.masker.standardize(synthetic), synthetic,
                                    problem.output_spec.standardize(answers))
        return (np.concatenate([X, synthetic]), np.concatenate([net_input, seen]),
                np.concatenate([outputs, answers]))

    def _in_distribution_judge(self, problem, X, outputs, refine, deadline=None):
        """``in_distribution(index, group_masks)``: the outputs of EVAL-X's predictor,
        trained here on random masks of ``X``, on those rows masked so; ``None`` when the
        refinement gives it no weight or the rows are token ids (see
        ``ModelRefinement(in_distribution=)``)."""
        masker = problem.masker
        if not refine.in_distribution or masker.tokens:  # token ids: see ModelRefinement
            return None
        X_scaled = masker.standardize(X).astype(np.float32)
        targets = problem.output_spec.standardize(outputs)
        # A bounded cost on large tables: trained on at most _JUDGE_ROWS rows, drawn with
        # torch's generator (seeded by fit) only when there are more.
        rows = slice(None) if len(X) <= _JUDGE_ROWS else \
            np.sort(torch.randperm(len(X))[:_JUDGE_ROWS].numpy())
        judge = self.net_.in_distribution_judge(X_scaled[rows], targets[rows],
                                                max_epochs=refine.judge_epochs,
                                                deadline=deadline)
        return _InDistribution(judge, X_scaled, masker)

    def _check_params(self, problem):
        k = self._check_k()
        self.k_ = k
        for name, what in (("repair", "checks and repairs masks with"),
                           ("background", "fills left-out features from background rows for")):
            if getattr(self, name, None) is not None and problem.black_box is None:
                raise ValueError(
                    f"{type(self).__name__}({name}=...) {what} the model's own answers, so "
                    "fit needs the model itself (fit(X, black_box=model)); it got only the "
                    f"model's outputs. Set {name}=None to fit on outputs."
                )
        if k is not None and k > problem.n_groups:
            what = "n_groups" if problem.masker.groups_ is not None else "n_features"
            # As SelectKBest does: a k beyond the data keeps everything, with a warning,
            # so that the default k works on narrow tables.
            warnings.warn(
                f"k={k} is greater than {what}={problem.n_groups}. All the features will be "
                "selected.",
                UserWarning,
            )
            self.k_ = problem.n_groups

    def _check_k(self):
        """``k`` as it is now, checked by the rules and with the messages of ``fit``.

        ``set_params(k=...)`` after fit changes only how scores become masks, so ``k`` is
        read (and checked again) wherever masks are made: 0, a float, a string, or None
        where the method needs a number, are refused there as ``fit`` refuses them. A
        bool is refused too, although it is an ``int`` to Python: ``k=True`` is a mistake,
        not one feature."""
        k = getattr(self, "k", None)
        name = type(self).__name__
        if isinstance(k, (bool, np.bool_)):
            raise InvalidParameterError(
                f"The 'k' parameter of {name} must be an int, not a bool; got {k!r}."
            )
        constraints = self._parameter_constraints.get("k")
        if constraints is not None:
            validate_parameter_constraints({"k": constraints}, {"k": k}, caller_name=name)
        return None if k is None else int(k)

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None, *, black_box=None):
        """Train the explainer on ``X`` and the black box (or its outputs on ``X``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), images or a table
            Rows to learn explanations from, in their own units; no labels are needed.
            Images are ``(n_samples, height, width)`` or ``(n_samples, channels, height,
            width)``: the explainer's other methods then take and return that shape. A
            pandas DataFrame with text, category, boolean, date or time columns, or empty
            cells, is a table: the explainer selects among its columns, asks the model
            with rows of that frame (the model must take it: a ``Pipeline`` with its
            encoder, a function of a DataFrame) and its other methods take such frames,
            matched by column name ("Tables as users have them" in the user guide).
        y : model or array-like of shape (n_samples,) or (n_samples, n_outputs), default=None
            The black box's outputs on ``X`` (class labels, class probabilities, 0/1 label
            indicators or values), or the model itself (see
            :func:`~sk_sointer.as_black_box` for what qualifies).
        black_box : model, default=None
            The model, given by keyword. Use this form with cross-validation tools, which
            would otherwise try to split the model like an array of outputs. Those tools
            refuse a ``Pipeline`` here before the explainer sees it (it has a length):
            pass ``as_black_box(pipeline)``.

        Returns
        -------
        self : object
            The fitted explainer.
        """
        refine = getattr(self, "refine", None)
        if isinstance(refine, ModelRefinement):
            refine.validate()
        # A fit that fails (bad data, a model that raises, an interrupt, a diverged net)
        # leaves the explainer as it was: its fitted state is put back, or taken away
        # when it had none, never left half-replaced.
        fitted = _fitted_state(self)
        previous = fitted.get("net_")
        start = time.perf_counter()
        try:
            try:
                self._fit(X, y, black_box)
            except (ValueError, RuntimeError) as exc:
                # A NaN in the weights surfaces wherever it is first checked (a
                # relaxation's argument constraints, a loss): name the cause rather than
                # the place. Only a net this fit built counts.
                net = getattr(self, "net_", None)
                if net is not previous and _diverged(net):
                    raise ValueError(
                        _DIVERGED.format(name=type(self).__name__, lr=self.lr)) from exc
                raise
            if _diverged(self.net_):
                raise ValueError(_DIVERGED.format(name=type(self).__name__, lr=self.lr))
        except BaseException:
            _restore_fitted_state(self, fitted)
            raise
        self.fit_time_ = time.perf_counter() - start
        return self

    def explain(self, X):
        """Real-valued importance scores behind the masks (higher means more relied on).

        With feature groups, every feature carries its group's score.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or images as given to ``fit``

        Returns
        -------
        scores : ndarray of the shape of X, float32
        """
        X = self._validate_transform_input(X, finite=False)
        return self.layout_.unflatten(self._explain_rows(X, self._scores_of, np.float32))

    def transform(self, X):
        """k-hot masks of the features the black box relied on, one row per sample.

        Deterministic: the top-k of :meth:`explain`'s scores, ties going to the lower index
        (``k`` counts groups when the explainer has feature groups).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or images as given to ``fit``

        Returns
        -------
        masks : ndarray of the shape of X
            0/1 values in the dtype of ``X`` (float32 or float64); for a table, float64,
            one column per column of the table.

        Notes
        -----
        With ``repair`` set, every row's mask is then checked against the model and the
        rows whose mask fails are searched further (:class:`~sk_sointer.RowRepair`): the
        masks are no longer a function of the scores alone. :meth:`repair_masks` gives the
        same masks with the search's report (how many rows failed, how many were repaired,
        how many queries that took); ``transform`` sets no attribute. ``repair`` is read,
        and checked as ``fit`` checks it, at every call.
        """
        X = self._validate_transform_input(X, finite=False)
        self._check_output_container()
        return self._masks_for(X)

    def _masks_for(self, X, outputs=None):
        """:meth:`transform` of validated rows ``X`` (``outputs``: what
        :meth:`_explain_rows` passes to the selector), repaired when ``repair`` is set."""
        repair = self._repair_settings()
        if repair is None:
            masks = self._explain_rows(X, self._masks_of, X.dtype, outputs)
        else:
            masks = self._repaired_masks(X, repair, outputs)[0].astype(X.dtype)
        return self.layout_.unflatten(masks)

    def repair_masks(self, X):
        """The masks of :meth:`transform` with ``repair``, and the repair's report.

        Every row's mask is checked against the model, and the rows whose mask fails are
        searched further (:class:`~sk_sointer.RowRepair`; with ``repair=None``, its
        defaults).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or images as given to ``fit``

        Returns
        -------
        report : RepairReport
            A :class:`~sklearn.utils.Bunch` of ``masks`` (as :meth:`transform` returns
            them with this ``repair``; an ndarray), ``n_rows``, ``n_failed`` (rows whose mask
            failed the check), ``n_repaired`` (of those, rows that hold after the search),
            ``n_queries`` (model rows sent, the check included), ``queries_per_row`` and
            ``holds`` (per row, after the search).
        """
        X = self._validate_transform_input(X, finite=False)
        repair = self._repair_settings() or RowRepair()
        masks, report = self._repaired_masks(X, repair, self._outputs_of(X, None))
        report.masks = self.layout_.unflatten(masks.astype(X.dtype))
        return report

    def _outputs_of(self, X, outputs):
        """What :meth:`_explain_rows` passes to the selector on the validated rows ``X``
        besides them, given the model's ``outputs`` on them or ``None``: nothing, but for
        a selector that reads the model's outputs (MEED's feedback)."""
        return None

    def _repair_settings(self):
        """``repair`` as it is now, as a validated :class:`~sk_sointer.RowRepair`, or
        ``None``.

        ``set_params(repair=...)`` after fit changes only how masks are made, so ``repair``
        is read (and checked again, by the rules and with the messages of ``fit``) where
        masks are made or checked: a string other than "model", or a ``RowRepair`` with a
        bool or a negative budget, is refused there."""
        repair = getattr(self, "repair", None)
        name = type(self).__name__
        if repair is None:
            return None
        constraints = self._parameter_constraints.get("repair")
        if constraints is not None:
            validate_parameter_constraints({"repair": constraints}, {"repair": repair},
                                           caller_name=name)
        if isinstance(repair, str):  # "model": the default settings
            return RowRepair()
        return repair.validate()

    def _masked_value(self):
        """How the model answers this explainer's masked rows (the masker's fill, or the
        fitted background rows), for ``score``, ``check`` and the repair."""
        if self.black_box_ is None:
            raise ValueError(
                f"This {type(self).__name__} holds no black box (it was fitted on outputs, or "
                "the model was left out when it was saved), so it cannot ask the model about "
                "masked rows: set black_box_ = as_black_box(model), or repair=None."
            )
        return MaskedValue(self._model_of_rows().predict, self.masker_,
                           getattr(self, "background_", None))

    def _model_of_rows(self):
        """``black_box_`` as it takes this explainer's rows: a table's codes decoded into
        frames, whether it was set by fit or afterwards (``black_box_ = as_black_box(m)``)."""
        codec, black_box = self._table_codec, self.black_box_
        if codec is None or black_box is None or black_box.table is codec:
            return black_box
        return black_box.with_table(codec)

    def _repaired_masks(self, X, repair, outputs=None):
        """Feature-level masks of rows ``X``: the selector's, checked against the model and
        searched further where they fail, and the :class:`RepairReport` of the search."""
        scores = self._explain_rows(X, self._scores_of, np.float32, outputs)
        scores = self.masker_.reduce_raw(scores)  # every feature carries its group's score
        group_masks = self._masks_from_scores(torch.from_numpy(scores.copy()))
        report = repair_masks(self._masked_value(), X, scores, group_masks, self.output_spec_,
                              self._check_k(), repair)
        n_rows = len(X)
        return self.masker_.expand_raw(group_masks), RepairReport(
            n_rows=n_rows, n_failed=report.n_failed, n_repaired=report.n_repaired,
            n_queries=report.n_queries, queries_per_row=report.n_queries / max(n_rows, 1),
            holds=report.holds,
        )

    def reasons(self, X, masks=None):
        """For each row, its kept columns ranked by what each does to the model's answer,
        with the row's own value of each: reasons for a decision.

        A kept column's ``effect`` is how much the model's answer moves when that column
        alone is left out of the row (at the fill, or averaged over the background rows,
        as :meth:`check` asks): for a classifier, the probability the model gives the
        row's answer minus that probability with the column left out (positive: the row's
        value pushed towards the answer, ``direction`` "for"; negative: "against"); for a
        regressor, the answer minus the answer with the column left out ("raises" or
        "lowers" it). Columns are ranked by the size of their effect, the largest first.
        The model is asked ``k + 1`` times a row. Without a model (an explainer fitted on
        outputs, or loaded without one), the kept columns are ranked by the selector's
        scores, ``effect`` is NaN and ``by`` says "selector".

        A mask's columns are those the model needs to keep its answer; a column left out
        may still matter to the model (it moved the answer less than these, or only with
        others), and an effect is the model's, not the world's: a reason says what the
        model read, not what caused the outcome.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
        masks : array-like of shape (n_samples, n_features), default=None
            The masks whose kept columns are ranked; by default this explainer's
            (:meth:`transform`).

        Returns
        -------
        reasons : DataFrame
            One row per kept column of each row of ``X``: ``row`` (the row's label in
            ``X``'s index, or its position), ``rank`` (1 the largest effect), ``column``
            (its name, as ``get_feature_names_out`` gives it; the names joined by "+" for a
            group of several), ``value`` (the row's value, as the table holds it; empty
            cells are NaN), ``effect``, ``direction`` and ``by`` ("model" or "selector").
        """
        from ._reasons import reasons_frame

        if masks is None:
            masks = self.transform(X)
        codes = self._validate_transform_input(X)
        masks = _check_masks(self.layout_.flatten(masks, "masks"), codes.shape)
        group_masks = self.masker_.reduce_raw(masks) > 0
        scores = self.masker_.reduce_raw(self._explain_rows(codes, self._scores_of,
                                                            np.float32))
        value = self._masked_value() if self.black_box_ is not None else None
        return reasons_frame(self, X, codes, group_masks, scores, value)

    def check(self, X, masks=None, *, tol=None):
        """Per row, whether the model keeps its answer on the row masked by its explanation.

        The model is asked about every row and every masked row (its answer on ``x`` and on
        ``m(x, mask)``, the left-out features at the baseline or, with ``background``, the
        outputs averaged over the background rows): two queries a row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or images as given to ``fit``
        masks : array-like of the shape of X, default=None
            Masks to check; by default this explainer's (:meth:`transform`).
        tol : float, default=None
            A regression output is kept when it moves by at most ``tol`` times its spread
            on the training rows; by default ``repair``'s ``tol``, or 0.1.

        Returns
        -------
        check : Bunch
            ``holds`` (bool, one per row): every output judged kept its answer (for
            SOInter, the target output); ``proba_kept``: the probability the masked row
            gives the row's class (the lowest over the model's discrete outputs; NaN for a
            regressor); ``change``: how far a value moved, in units of its spread (the
            largest over the real outputs; NaN for a classifier); ``n_queries``: rows sent
            to the model.
        """
        if masks is None:
            masks = self.transform(X)
        X = self._validate_transform_input(X)
        masks = _check_masks(self.layout_.flatten(masks, "masks"), X.shape)
        if tol is None:
            repair = self._repair_settings()
            tol = 0.1 if repair is None else repair.tol
        if isinstance(tol, (bool, np.bool_)) or not (isinstance(tol, Real) and tol >= 0):
            raise InvalidParameterError(f"tol should be a number >= 0, not a bool; got {tol!r}."
                                        if isinstance(tol, (bool, np.bool_)) else
                                        f"tol should be a number >= 0; got {tol!r}.")
        value = self._masked_value()
        result = row_check(value.full(X), value.masked(X, masks), self.output_spec_, tol=tol)
        result.n_queries = value.n_queries
        return result

    def predict_masked(self, X, masks):
        """The method's own judge of masks (approximator or predictor) on ``m(x, mask)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or images as given to ``fit``
        masks : array-like of the shape of X
            0/1 masks over the features (any value > 0 counts as kept), e.g. from
            :meth:`transform`.

        Returns
        -------
        outputs : ndarray of shape (n_samples, n_columns), float32
            Probabilities, or values in the target's units, like the black box's outputs.
        """
        X = self._validate_transform_input(X)
        masks = _check_masks(self.layout_.flatten(masks, "masks"), X.shape)
        X_scaled = self.masker_.standardize(X)
        masks = self.masker_.scaled_masks(masks)
        predict = lambda rows, kept: self.net_.predict_masked(  # noqa: E731
            torch.as_tensor(rows), torch.as_tensor(kept)
        ).float().cpu()
        return in_chunks(predict, X_scaled, masks).numpy()

    def score(self, X, y=None):
        """Fidelity of the explanations on ``X``: higher is better.

        With a model at hand (``fit`` received one), this is post-hoc fidelity: the model
        on ``m(x, mask)`` (left-out features at the baseline) against the model on ``x``,
        averaged over its outputs: for a categorical output (or a Bernoulli one, one label
        of a multi-label model), the share of the rows of each answer the model gives on
        ``X`` that keep it, averaged over those answers (as ``balanced_accuracy_score`` is
        to accuracy: on a table where the model denies 8 % of applicants, the denials weigh
        as much as the approvals, so that a search over ``k`` and ``tau`` sees them); for a
        real output the R². The plain share of rows that keep their answer is
        ``check(X).holds.mean()``. A classifier's answer is its own ``predict``, which may differ from the argmax
        of its ``predict_proba`` (``SVC(probability=True)``); models without one (torch
        modules, functions) answer with the argmax of their probabilities, or the side of
        0.5. The probabilities still drive training. Fitted on outputs only, the method's
        own judge on ``m(x, mask)`` is compared with the outputs ``y`` instead. An explainer
        of one output (SOInter's ``target``) is scored on that output alone.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like, default=None
            The black box's outputs on ``X``; needed only when the explainer holds no model.

        Returns
        -------
        score : float
        """
        masks = self.transform(X)
        rows = X  # with its column names, for predict_masked's own validation
        X = self._validate_transform_input(X)
        spec = self.output_spec_
        if self.black_box_ is not None and getattr(self, "background_", None) is not None:
            # The model's answers averaged over the background rows, on x and on m(x, s).
            value = self._masked_value()
            scores = output_agreement(value.full(X), value.masked(X, masks.reshape(X.shape)),
                                      spec, multioutput="raw_values", by_answer=True)
        elif self.black_box_ is not None:
            masks = masks.reshape(X.shape)
            scores = model_agreement(self._model_of_rows(), X, self.masker_.mask_raw(X, masks),
                                     multioutput="raw_values", by_answer=True)
        elif y is None:
            raise ValueError(
                f"This {type(self).__name__} has no black box (it was left out when the "
                "explainer was saved), so score needs the black box's outputs on X as y, or "
                "black_box_ = as_black_box(model)." if self._requires_model else
                f"{type(self).__name__} was fitted on outputs only, so score needs the black "
                "box's outputs on X as y (or fit it with the model to score post-hoc fidelity)."
            )
        else:
            targets = spec.encode(y, X.shape[0])
            scores = output_agreement(targets, self.predict_masked(rows, masks), spec,
                                      multioutput="raw_values", by_answer=True)
        # An explainer of one output (SOInter's target) is judged on that output alone.
        return float(scores.mean() if spec.target is None else scores[spec.target])

    # -- helpers -------------------------------------------------------------------------

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

    def _explain_rows(self, X, finish, dtype, outputs=None):
        """``finish(scores, out)`` for the selector's per-group scores of raw rows ``X``, one
        chunk of rows at a time, ``out`` being the chunk's rows of one preallocated array.
        ``outputs`` (the black box's standardised outputs on ``X``, or None) go to
        :meth:`_selector_input` chunk by chunk.

        Standardisation (into one buffer reused by every chunk), the selector and
        ``finish`` run per chunk, so memory beyond the input and the output stays bounded
        by the chunk for any number of rows. On an accelerator every step runs there
        (:meth:`_chunk_on_device`): the raw rows go in, the finished rows come out.
        """
        # The selector runs in evaluation mode: batch statistics must not depend on which
        # rows are explained together.
        set_mode(self.net_.module_, False)
        device = self._inference_device()
        n_rows = X.shape[0]
        step = inference_chunk(device, X.shape[1])
        out = np.empty(X.shape, dtype=dtype)
        buffer = np.empty((min(step, n_rows), self.masker_.n_encoded_features), dtype=np.float32)
        for start in range(0, n_rows, step):
            rows = X[start : start + step]
            chunk_out = out[start : start + len(rows)]
            chunk_outputs = None if outputs is None else outputs[start : start + step]
            if _explains_on_device(device) and self._chunk_on_device(
                    rows, chunk_outputs, finish, chunk_out, device):
                continue
            net_input = self._selector_input(self._standardize(rows, buffer[: len(rows)]), rows,
                                             chunk_outputs)
            with torch.inference_mode():
                scores = self._selector_scores(torch.as_tensor(net_input).to(device))
                if not bool(torch.isfinite(scores).all()):
                    # Top-k of NaN would still give k-hot masks that look normal.
                    raise ValueError(
                        f"The selector of this {type(self).__name__} gave NaN or infinite "
                        "scores: its weights are not finite (training diverged, or they "
                        "were altered after fit), so it cannot explain rows."
                    )
                finish(scores, chunk_out)
        return out

    def _chunk_on_device(self, rows, outputs, finish, out, device):
        """One chunk of :meth:`_explain_rows` on ``device``: the raw rows copied in once,
        standardised, scored and finished there, the finished rows copied out once into
        ``out``. Whether that went through: a chunk whose standardised rows or scores are
        not all finite (a NaN in ``X``, a float32 overflow that the host's float64 detour
        avoids, a diverged selector) is left to the host path, which says what is wrong."""
        with torch.inference_mode():
            raw = torch.from_numpy(np.ascontiguousarray(rows)).to(device)
            scaled = self.masker_.standardize_tensor(raw)
            net_input = self._selector_input(scaled, rows, outputs)
            scores = self._selector_scores(net_input)
            finite = torch.isfinite(scaled).all() & torch.isfinite(scores).all()
            finish(scores, out)
            return bool(finite)  # read after the copy out, which waited for the device

    def _standardize(self, rows, out):
        try:
            return self.masker_.standardize(rows, out=out)
        except ValueError:
            # The rows were validated without the finite check: a NaN or an infinity in
            # them is reported as validation would have reported it.
            assert_all_finite(rows, input_name="X", estimator_name=type(self).__name__)
            raise

    def _scores_of(self, scores, out):
        """Feature-level scores from a chunk's per-group scores, written into ``out``."""
        if _explains_on_device(scores.device):  # expanded on the device, one copy out
            torch.from_numpy(out).copy_(self.masker_.expand_raw(scores.float()))
            return
        out[...] = self.masker_.expand_raw(scores.float().cpu().numpy())

    def _masks_of(self, scores, out):
        """Feature-level 0/1 masks from a chunk's per-group scores, written into ``out``."""
        direct = out if out.shape[-1] == self.masker_.n_groups_ and \
            not self.masker_.raw_grouped else None
        group_masks = self._masks_from_scores(scores, out=direct)
        if group_masks is direct:
            return
        if isinstance(group_masks, torch.Tensor):
            # Made and expanded on the device, copied out as booleans (a quarter of the
            # bytes of float32), given out's dtype on the host.
            np.copyto(out, self.masker_.expand_raw(group_masks.bool()).cpu().numpy())
            return
        out[...] = self.masker_.expand_raw(group_masks)

    def _masks_from_scores(self, scores, out=None):
        """0/1 masks over groups from a chunk of per-group scores (a tensor on the
        selector's device): the top-k, or with ``k=None`` the scores above ``_threshold``,
        and the best group of a row where none is (an empty mask explains nothing: it
        says the model answers the same on the baseline, which is seldom what it does).

        On an accelerator the masks are made there (booleans, by rounds of argmax for a
        small k), so that only they travel back; on the CPU NumPy's partition is the
        faster top-k, and it writes into ``out`` (a float array of the scores' shape) when
        one is given.
        """
        # ``k`` as it is now: a selector's scores do not depend on it, so setting k after
        # fit changes only how scores become masks.
        k = self._check_k()
        if _explains_on_device(scores.device):
            # Boolean masks; of non-finite scores they mean nothing, and _chunk_on_device
            # sends such a chunk back to the host path, which says what is wrong.
            if k is None:
                return (scores > self._threshold) | topk_mask_of_finite(scores, 1)
            k = min(k, self.masker_.n_groups_)
            if k <= ROUNDS_K:
                return topk_mask_of_finite(scores, k)
            return topk_mask(scores, k).bool()
        scores = scores.float().numpy()
        if out is None:
            out = np.empty(scores.shape, dtype=np.float32)
        if k is None:
            return _above_or_best(scores, self._threshold, out)
        # The scores are this chunk's own (fresh from the selector): top-k may overwrite them.
        return topk_mask(scores, min(k, self.masker_.n_groups_), out=out, overwrite_scores=True)

    def _inference_device(self):
        param = next(self.net_.module_.parameters(), None)
        return param.device if param is not None else torch.device("cpu")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        if not self._requires_model:
            return tags
        # sklearn's checks fit on outputs given as y, which an explainer that needs the
        # model refuses: every check that fits fails with that refusal; its other checks
        # pass. Declared in its tags, read by tests/test_common.py.
        why = (f"{type(self).__name__} {self._requires_model_because}, so it needs the model "
               "itself (fit(X, black_box=model)), and sklearn's checks give only outputs as y")
        return _with_expected_failures(tags, dict.fromkeys(_CHECKS_THAT_FIT, why))


# The estimator checks that fit: an explainer that needs the model fails them (see
# BaseExplainer.__sklearn_tags__).
_CHECKS_THAT_FIT = (
    "check_fit_score_takes_y", "check_estimators_overwrite_params",
    "check_dont_overwrite_parameters", "check_estimators_fit_returns_self",
    "check_readonly_memmap_input", "check_n_features_in_after_fitting",
    "check_positive_only_tag_during_fit", "check_estimators_dtypes", "check_dtype_object",
    "check_pipeline_consistency", "check_estimators_nan_inf", "check_estimators_pickle",
    "check_f_contiguous_array_estimator", "check_transformer_data_not_an_array",
    "check_transformer_general", "check_transformer_preserve_dtypes",
    "check_methods_sample_order_invariance", "check_methods_subset_invariance",
    "check_fit2d_1feature", "check_dict_unchanged", "check_fit_idempotent",
    "check_fit_check_is_fitted", "check_n_features_in", "check_fit2d_predict1d",
)


class _InDistribution:
    """An in-distribution judge's outputs on rows ``index`` (of the standardised training
    rows ``X_scaled``) masked by ``group_masks``: ``judge(index, group_masks)`` of arrays,
    in chunks, an array; :meth:`tensor` of tensors on the judge's device, a tensor there."""

    def __init__(self, judge, X_scaled, masker):
        self.judge, self.X_scaled, self.masker = judge, X_scaled, masker
        self._on_device = None

    def __call__(self, index, group_masks):
        def predict(scaled, feature_masks):
            outputs = self.judge.predict_masked(torch.as_tensor(scaled),
                                                torch.as_tensor(feature_masks))
            return outputs.cpu().numpy()

        return in_chunks(predict, self.X_scaled[index],
                         self.masker.expand(group_masks).astype(np.float32))

    def rows_on(self, device):
        """The standardised rows as a tensor on ``device``, copied there once."""
        if self._on_device is None or self._on_device.device != device:
            self._on_device = torch.as_tensor(self.X_scaled, device=device)
        return self._on_device

    def tensor(self, index, group_masks):
        return self.judge.predict_masked(self.rows_on(group_masks.device)[index],
                                         self.masker.expand(group_masks).float())


def _explains_on_device(device):
    """Whether :meth:`BaseExplainer._explain_rows` runs its chunks on ``device`` (an
    accelerator) rather than standardising and finishing them on the host."""
    return device.type != "cpu"


def _above_or_best(scores, threshold, out):
    """``scores > threshold`` as 0/1 into ``out``, with each row's best score kept where
    none is above."""
    np.greater(scores, threshold, out=out)
    empty = ~out.any(axis=1)
    if empty.any():
        out[empty, scores[empty].argmax(axis=1)] = 1.0
    return out


_DIVERGED = (
    "{name}'s training diverged: its networks' weights became NaN or infinite (lr={lr:g}); "
    "lower lr, or standardise extreme outputs."
)


def _diverged(net):
    """Whether a (partly) trained net holds non-finite weights."""
    if net is None or not getattr(net, "initialized_", False):
        return False
    return any(
        not bool(torch.isfinite(param).all())
        for module in net.state_modules().values() if isinstance(module, torch.nn.Module)
        for param in module.parameters()
    )


def _check_masks(masks, shape):
    masks = check_array(masks, dtype=np.float32, input_name="masks")
    if masks.shape != shape:
        raise ValueError(f"masks should have the shape of X, {shape}; got {masks.shape}.")
    return (masks > 0).astype(np.float32)


def _is_model(obj):
    return not (isinstance(obj, (np.ndarray, list, tuple, torch.Tensor)) or hasattr(obj, "__array__"))


@dataclass(slots=True)
class ExplainerTags(Tags):
    """sklearn's :class:`~sklearn.utils.Tags` and the estimator checks that an explainer is
    known to fail, ``{check name: reason}``: what ``check_estimator`` and
    ``parametrize_with_checks`` take as ``expected_failed_checks`` (scikit-learn 1.6
    removed the ``_xfail_checks`` tag that carried them; this field carries them again,
    under that name). Read it with :func:`expected_failed_checks`."""

    _xfail_checks: dict = field(default_factory=dict)


def _with_expected_failures(tags, checks):
    """``tags`` as :class:`ExplainerTags` holding the expected failures ``checks``."""
    return ExplainerTags(**{f.name: getattr(tags, f.name) for f in fields(Tags)},
                         _xfail_checks=dict(checks))


def expected_failed_checks(estimator):
    """The estimator checks ``estimator`` is declared to fail, with the reason of each
    (its tags' ``_xfail_checks``; none for most): pass them to ``check_estimator(estimator,
    expected_failed_checks=...)`` or to ``parametrize_with_checks``."""
    return dict(getattr(get_tags(estimator), "_xfail_checks", {}))


def _fitted_state(estimator):
    """The estimator's fitted attributes (those ending in ``_``, as ``check_is_fitted``
    reads them), by name: what :func:`_restore_fitted_state` puts back."""
    return {name: value for name, value in vars(estimator).items()
            if name.endswith("_") and not name.startswith("__")}


def _restore_fitted_state(estimator, fitted):
    """Put back the fitted attributes ``fitted`` and remove any other one."""
    for name in list(_fitted_state(estimator)):
        if name not in fitted:
            delattr(estimator, name)
    for name, value in fitted.items():
        setattr(estimator, name, value)


def _picklable(obj):
    try:
        pickle.dumps(obj)
    except Exception:  # noqa: BLE001 - any failure means "cannot be stored"
        return False
    return True
