"""SOInter: explaining one output of a structured model through an energy network
(Seyyedsalehi et al., "SOInter: A Novel Deep Energy Based Interpretation Method for
Explaining Structured Output Models").

A multi-output model predicts its outputs jointly, ``y_sb = M(x)``. To explain output
``t``, an interpreter ``IN(x)`` (a selector network with the k-subset Concrete relaxation of
L2X) picks ``k`` features; ``x~ = m(x, IN(x))`` keeps them and sets the others to the
baseline, and ``y~ = M(x~)`` is the model's prediction on it. An energy network ``E(x, y)``,
pre-trained to imitate the model's *joint* outputs on full and masked rows, scores the
masked row; the interpreter minimises the hinge of eq. 8,

    SL = max(0, E(x~, [y_sb_t, y~_-t]) - E(x~, [y~_t, y~_-t]) + 1[y~_t != y_sb_t]),

which, on rows whose target the mask flipped, lowers the energy of the configuration with
the model's full-input target among the *other outputs' masked-input predictions* below
that of the model's actual masked-input configuration: the other outputs carry the
model's structure into the explanation of ``t``. The model is never differentiated: it is
re-queried on masked rows between epochs (Algorithm 1).
"""

from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import clone
from sklearn.utils._param_validation import Interval, StrOptions
from skorch.callbacks import EarlyStopping

from .._docstrings import fill_doc
from .._networks import MLP
from .._training.losses import score_function_loss
from .._training.nets import SelectorJudgeNet
from .._training.updates import Update
from .._utils import in_chunks, resolve_device
from ..base import BaseExplainer, _EpochProgress
from .._topk import topk_mask
from ..distributions import SubsetConcrete
from ._energy import EnergyNet
from ._sointer_queries import Requery, energy_training_set, model_states


class SOInterNet(SelectorJudgeNet):
    """skorch net of the SOInter interpreter (``module_``) and its energy network.

    It is fed the standardised rows and, as targets, the rows' indices into ``rows``, the
    training rows in the data's units. The model's codes on the full rows
    (``full_codes_``) and, between epochs, on the rows masked by the latest re-query
    (``masked_codes_``) are set by :class:`Requery`; with ``per_batch_query`` the net
    queries ``black_box`` itself in every step instead (:meth:`query`). The loss is the
    mean hinge over a batch; ``optimizer_`` steps the interpreter only. With
    ``energy_refit``, every step also takes one step of the energy network (its own
    ``energy_optimizer_``) on the masked rows of the step and the model's codes on them,
    and on the full rows.

    ``black_box`` and ``rows`` serve the fit only: :meth:`release_fit_data` drops them,
    so that the fitted net holds neither the model nor the training rows.
    """

    prefixes_ = [*SelectorJudgeNet.prefixes_, "energy_optimizer"]

    def __init__(self, module, *, energy, k, tau, target, objective="joint", margin="flips",
                 energy_refit=False, straight_through=False, gradient="relaxed", n_samples=4,
                 black_box=None, rows=None, per_batch_query=False, fill="baseline",
                 n_draws=1, **kwargs):
        self.module = module
        self.energy = energy
        self.k = k
        self.tau = tau
        self.target = target
        self.objective = objective
        self.margin = margin
        self.energy_refit = energy_refit
        self.straight_through = straight_through
        self.gradient = gradient
        self.n_samples = n_samples
        self.black_box = black_box
        self.rows = rows
        self.per_batch_query = per_batch_query
        self.fill = fill
        self.n_draws = n_draws
        super().__init__(module, **kwargs)

    def initialize_optimizer(self, *args, **kwargs):
        self.optimizer_ = self.module_optimizer("optimizer", self.module_)
        self.energy_optimizer_ = self.module_optimizer("energy_optimizer", self.energy.module_)
        return self

    def release_fit_data(self):
        """Drop the model, the training rows and their codes, once training is over."""
        self.black_box = self.rows = None
        self.full_codes_ = self.masked_codes_ = None

    def query(self, index, group_masks):
        """The model's per-output distributions over values on the training rows ``index``
        with ``group_masks`` kept (:func:`model_states`)."""
        return model_states(self.black_box, self.masker, self.output_spec, self.rows[index],
                            self.masker.expand_raw(group_masks), fill=self.fill,
                            n_draws=self.n_draws, pool=self.rows)

    def model_codes(self, feature_masks):
        """The model's codes on every training row with ``feature_masks`` kept and the rest
        at the baseline."""
        outputs = in_chunks(self.black_box.predict, self.masker.mask_raw(self.rows, feature_masks))
        return self.output_spec.labels(outputs)

    def interpreter_masks(self, net_input, *, sample):
        """Masks over the rows' own features (those the model is asked on) of the
        interpreter's top-k (``sample=False``) or of a Gumbel top-k draw per row, for the
        rows the interpreter sees (``net_input``)."""
        return self.masker.expand_raw(self.group_masks(net_input, self.k, sample=sample))

    def updates(self):
        # The energy network judges the interpreter in evaluation mode.
        modes = dict(training=(self.module_,), evaluation=(self.energy.module_,),
                     capturable=not self.per_batch_query)
        if not (self.energy_refit and self.per_batch_query):
            return [Update(self._interpreter_loss, self.optimizer_, (self.module_,), **modes)]
        # With a refit, the energy network then steps on the rows masked by the
        # interpreter's step and the model's outputs on them.
        queried = {}

        def interpreter_loss(X, index):
            surrogate, out, queried["hard"], queried["proba"] = self._interpreter_step(X, index)
            return surrogate, out

        def refit_loss(X, index):
            rows = self.masked(X, queried["hard"])
            proba = queried["proba"]
            return self.energy.candidate_loss(rows, self.energy.codes_of(proba), proba), None

        return [Update(interpreter_loss, self.optimizer_, (self.module_,), **modes),
                Update(refit_loss, self.energy_optimizer_, (self.energy.module_,),
                       training=(self.energy.module_,), capturable=False)]

    def _interpreter_loss(self, X, index):
        return self._interpreter_step(X, index)[:2]

    def _interpreter_step(self, X, index):
        """The interpreter's loss on a batch, the step's record, and the hard group masks
        of the step with the model's outputs on them (None without the per-batch query)."""
        if self.gradient == "score":
            surrogate, hinge, hard, masked_proba = self.score_function_loss(X, index)
        else:
            hinge, hard, masked_proba = self.hinge(X, index, training=True)
            surrogate = hinge.mean()
        return surrogate, {"loss": hinge.mean().detach(), "y_pred": None}, hard, masked_proba

    def validation_step(self, batch, **fit_params):
        self.module_.eval()
        self.energy.module_.eval()
        X, index = self.batch_tensors(batch)
        with torch.no_grad():
            loss = self.hinge(X, index, training=False)[0].mean()
        return {"loss": loss, "y_pred": None}

    def hinge(self, X, index, training):
        """Per-row hinge for standardised rows ``X`` (eq. 8 with ``objective="joint"``),
        with the hard group masks it used and the model's outputs on the masked rows (with
        the per-batch query, else None): on a relaxed draw when ``training``, else on the
        interpreter's top-k."""
        logits = self.module_(X)
        if training:
            relaxed = SubsetConcrete(self.tau, logits, self.k, validate_args=False).rsample()
            hard = topk_mask(relaxed.detach(), self.k)
            # Straight through: the energy network sees k-hot masked rows, as in its
            # training, and the gradient flows through the relaxation.
            masks = hard + relaxed - relaxed.detach() if self.straight_through else relaxed
        else:
            masks = hard = topk_mask(logits, self.k)
        hinge, masked_proba = self.hinge_of(X, index, masks, hard)
        return hinge, hard, masked_proba

    def score_function_loss(self, X, index):
        """A loss whose gradient is the score-function (REINFORCE) estimate of the gradient
        of the mean hinge over the interpreter's k-subsets: ``n_samples`` Gumbel top-k draws
        per row from ``softmax(logits / tau)``, each draw's hinge (on its k-hot masked row)
        less the mean hinge of the row's other draws, times the draw's log-probability.
        Returns that loss, the hinges of every draw, the first draw's masks and the model's
        outputs on them."""
        n_samples = self.n_samples
        queried = {}

        def hinges(hard):
            hinge, queried["proba"] = self.hinge_of(
                X.repeat_interleave(n_samples, dim=0),
                index.repeat_interleave(n_samples, dim=0), hard, hard,
            )
            return hinge

        loss, hinge, hard = score_function_loss(self.module_(X) / self.tau, self.k, n_samples,
                                                hinges)
        first = slice(None, None, n_samples)
        masked_proba = queried["proba"]
        return loss, hinge, hard[first], None if masked_proba is None else masked_proba[first]

    def hinge_of(self, X, index, masks, hard):
        """Per-row hinge of the rows ``X`` (their indices ``index``, ``(B, 1)``) masked by
        ``masks`` (relaxed or hard; ``hard`` their k-hot version, on which the model is
        queried per batch), and the model's outputs on those rows (None without the
        per-batch query)."""
        index = index[:, 0]
        full = self.full_codes_[index]
        masked_proba = None
        if self.per_batch_query:
            masked_proba = torch.as_tensor(
                self.query(index.cpu().numpy(), hard.cpu().numpy()), device=X.device)
            masked_codes = self.energy.codes_of(masked_proba)
        else:
            masked_codes = self.masked_codes_[index]
        rows = self.masked(X, masks)
        t = self.target
        kept = full[:, t : t + 1]
        energies = self.target_energies(rows, masked_codes)
        e_kept = energies.gather(1, kept).squeeze(1)
        if self.margin == "all":
            rival = energies.scatter(1, kept, float("inf")).min(dim=1).values
            return torch.relu(e_kept - rival + 1.0), masked_proba
        flipped = (masked_codes[:, t] != full[:, t]).to(rows.dtype)
        e_masked = energies.gather(1, masked_codes[:, t : t + 1]).squeeze(1)
        return torch.relu(e_kept - e_masked + flipped), masked_proba

    def target_energies(self, rows, masked_codes):
        """Energy of every value ``v`` of the target on the masked rows, ``(B, states[t])``:
        ``E(x~, [v, y~_-t])`` (``objective="joint"``) or the free energy with the other
        outputs summed out (``"marginal"``)."""
        if self.objective == "marginal":
            return self.energy.free_energies(rows, self.target)
        return self.energy.value_energies(rows, masked_codes, self.target)

    def predict_masked(self, X, feature_masks):
        """The energy network's per-output marginals on ``m(x, s)``, in the model's columns
        (class probabilities; the probability of 1 for a label)."""
        self.energy.module_.eval()
        device = next(self.energy.module_.parameters()).device
        with torch.inference_mode():
            rows = self.masker.mask(
                X.to(device), feature_masks.to(device), append_mask=self.append_mask
            )
            return self.output_spec.state_columns(self.energy.marginals(rows))


@fill_doc
class SOInterExplainer(BaseExplainer):
    """Explain one output of a multi-output (structured) model with SOInter.

    For a model that predicts several discrete outputs jointly (a multi-label classifier,
    a multi-output classifier, a structured predictor), the explainer learns which ``k``
    features of a row decide output ``target``. It first pre-trains an energy network on
    the model's joint outputs, on full rows and on rows with random features left out, so
    that the network knows how the outputs depend on each other; it then trains an
    interpreter network whose masked rows keep the model's prediction of the target, the
    other outputs' predictions on the masked rows telling the energy network which target
    value they are consistent with. The model is re-queried on the interpreter's masked
    rows between epochs, never differentiated. Once fitted, explaining a row costs one
    forward pass of the interpreter.

    Parameters
    ----------
    target : int or pair of ints, default=0
        Index of the output to explain, among the model's outputs (the columns of a
        multi-label ``predict_proba``, the estimators of a ``MultiOutputClassifier``). For
        a model with one output per pixel of its input image (a segmentation model, its
        outputs in the pixels' row-major order), a ``(row, col)`` pair names the pixel:
        output ``row * width + col``. A pair needs image rows (images, or flat rows with
        ``image_shape``).

    k : int, default=4
        Number of features (or feature groups) selected per row (all of them, with a
        warning, when ``k`` exceeds their number).

    tau : float, default=1.0
        Temperature of the interpreter's distribution over k-subsets: with
        ``gradient="score"`` the subsets are drawn with probabilities from
        ``softmax(logits / tau)`` (higher: more exploration at the same logits); with
        ``"relaxed"`` it is the temperature of the k-subset Concrete relaxation (the paper
        does not state one; at 0.5, MEED's, the interpreter settled on three of E2's four
        features and a noise feature on two seeds of three, at 1.0 on none).

    gradient : {"score", "relaxed"}, default="score"
        How the interpreter's gradient is estimated. ``"relaxed"``: the paper's, through
        a Gumbel-softmax relaxation of the k-subset (straight through, see
        ``straight_through``), which reads the energy network's slope at the masked row.
        ``"score"``: the score-function (REINFORCE) estimate over ``n_samples`` exact
        k-subsets drawn per row (Gumbel top-k), each judged by its own hinge, less the mean
        hinge of the row's other draws; the energy network only ever sees k-hot masked
        rows. A slope can mislead: in E2 ``|x4|`` is flat at the baseline 0, so with
        ``"relaxed"`` leaving ``x4`` out looked as harmless as leaving out noise, and at 5
        features the interpreter dropped ``x4`` on every seed; ``"score"`` compares the
        subsets themselves (``doc/tuning.rst``). A deviation from the paper.

    n_samples : int, default=4
        k-subsets drawn per row and step with ``gradient="score"``.

    selector : callable, default=MLP(hidden_units=(100, 100), zero_output=True)
        Factory of the interpreter network (one logit per feature or group). The default
        starts every feature at the same logit, so the first epochs draw uniformly random
        k-subsets (plenty of target flips, hence gradients) and no feature gets a head start
        from random weights. (With Algorithm 1's random start, the interpreter often kept
        the noise features its first weights favoured; see the Notes.)

    energy : EnergyNet or None, default=None
        The energy network and its training knobs, cloned and fitted by ``fit`` on the
        model's per-output probabilities; None means ``EnergyNet()``. Pass one to change
        them, ``energy=EnergyNet(max_epochs=20)``; a grid search can then reach them as
        ``energy__max_epochs``, ``energy__module__hidden_units``, ``energy__loss``, ...
        The default's loss, encoding and epochs follow the number of outputs: up to 16,
        the likelihood on the pairwise encoding for 50 epochs; beyond, pseudo-likelihood
        on the unary encoding for 10 epochs (``energy_loss_``, ``energy_encoding_`` and
        ``energy_max_epochs_`` hold the choice; the Notes say why).

    energy_masks : int, default=4
        Copies of every row, each with a random ``k``-subset kept and the rest at the
        baseline, that the energy network is pre-trained on besides the full rows (with
        the model's outputs on them): the hinge reads the energy on masked rows.

    fill : {"draws", "baseline"}, default="draws"
        What the model sees in place of the left-out features when it is queried for the
        energy network's masked rows (and, with ``requery="batch"``, for the hinge):
        ``"draws"``: the values of random training rows, ``n_draws`` times, the energy
        network learning the average of the model's outputs, i.e. what the model predicts
        when those features are unknown; ``"baseline"``: the baseline (eq. 3, one query).
        With the baseline, a feature that sits at the baseline's side of the model's
        decision (``x1 > 0`` in E1's ``min(x1, 0)``) looks irrelevant in that row and the
        interpreter fills its place with noise; the draws show that it is not. The
        epoch-end re-query, the flip rates and :meth:`score` use the baseline. When the
        masks will be used with the baseline itself (the model queried at the mean),
        ``"baseline"`` keeps the prediction there better (yeast: post-hoc accuracy 0.85
        against 0.78 over seven labels).

    n_draws : int, default=4
        Draws per masked row with ``fill="draws"``.

    requery : {"sample", "topk", "batch"}, default="sample"
        Masks on which the model is re-queried after every epoch: a fresh draw of ``k``
        features per row from the interpreter's distribution (Gumbel top-k), or its
        deterministic top-k (Algorithm 1 as the spec reads it; a row whose target is kept
        gives no gradient until the interpreter changes elsewhere). ``"batch"`` queries the
        model in every step on the step's own masks (one model call per batch).

    objective : {"auto", "joint", "marginal"}, default="auto"
        ``"joint"``: eq. 8, the energies of ``[y_sb_t, y~_-t]`` and ``[y~_t, y~_-t]``,
        the other outputs at the model's masked-row prediction. ``"marginal"``: the other
        outputs summed out of ``q`` (free energies of the target's values; needs
        enumerated configurations), which lets the gradient reach features that act on
        the target only through the other outputs. ``"auto"``: marginal when the energy
        network enumerates the configurations (at most ``energy__max_configurations``),
        else joint.

    margin : {"all", "flips"}, default="all"
        ``"flips"``: eq. 8's indicator margin, a hinge on the rows whose target the mask
        flipped only. ``"all"``: on every row, the target's full-input value must beat its
        best rival by a margin of 1, so features that make the target surer are kept
        ahead of features that do nothing.

    straight_through : bool, default=True
        With ``gradient="relaxed"``: feed the energy network the k-hot masked rows (its
        training distribution) and pass the gradient through the relaxation
        (straight-through estimator). With ``False``
        the energy sees relaxed rows it was never trained on, and on E1/E2 the interpreter
        learnt to exploit it (the hinge fell while the flips rose).

    energy_refit : bool, default=False
        With ``requery="batch"``, also take a step of the energy network on every batch's
        masked rows and the model's outputs on them (its own optimizer,
        ``energy_optimizer__*`` options), so the interpreter cannot exploit it.

    append_mask : bool, default=False
        The energy network also sees the mask (as extra columns), so a left-out feature is
        told apart from one that equals the baseline. Measured with ``gradient="relaxed"``
        only (where the slope with respect to the mask then reads the effect of leaving a
        feature out): on E2 at 5 features exact match rose from 0 to 0.2-0.3, on E1 it fell
        from 1.0 to 0.3-0.5 (seed 0). Not measured with the score gradient.

    n_iter_no_change : int, default=10
        Stop when the fraction of training rows whose target the top-k masks flip (in
        expectation over the draws, with ``fill="draws"``) has not fallen for this many
        epochs; the interpreter of the best epoch is kept.

    refine : "model", ModelRefinement or None, default="model"
        Refine the interpreter further against the black box's answers on the target
        output (``"model"``: with the default :class:`~sk_sointer.ModelRefinement`), as
        L2X is by default; ``None``: the interpreter as SOInter's own training leaves it.
        On a segmentation network of 8 x 8 digits (three pixels, k = 10, three seeds) the
        refinement raised the share of 500 held-out images whose target pixel keeps the
        network's answer from 93.9 to 94.3 %% (L2X 94.2), at 25-56 s a fit instead of
        6-11 s (one thread).

    %(repair)s

    %(background)s

    %(row_layout)s

    max_epochs : int, default=50
        Most outer iterations (an epoch of the interpreter, then a re-query of the model).

    batch_size : int, default=256
        Rows per step of the interpreter.

    lr : float, default=1e-3
        Learning rate of the interpreter.

    weight_decay : float, default=1e-3
        L2 penalty on the interpreter's weights.

    %(optimizer)s

    %(training)s

    %(random_state)s
        It seeds both networks' initialisation, the masks and the relaxation's noise.

    %(verbose)s

    Attributes
    ----------
    net_ : SOInterNet
        The fitted interpreter; its history holds per epoch ``train_loss`` (the mean
        hinge), ``flip_rate`` (rows whose target the re-query's masks flipped) and
        ``topk_flip_rate`` (the same for the top-k masks) and, with ``fill="draws"``,
        ``draws_flip_rate`` (the expected flips of the top-k masks under the draws);
        ``kept_flip_rate`` is the one of those two that picks the kept epoch.

    energy_net_ : EnergyNet
        The fitted energy network; its skorch net ``energy_net_.net_`` is ``net_.energy``.

    objective_ : {"joint", "marginal"}
        The objective used (what ``objective="auto"`` resolved to).

    energy_loss_ : {"likelihood", "value", "pseudolikelihood"}
        The energy network's loss (what its ``loss="auto"`` resolved to).

    energy_encoding_ : {"pairwise", "unary"}
        The energy network's encoding of the outputs (what ``encoding="auto"`` resolved
        to).

    energy_max_epochs_ : int
        The energy network's epochs (what its ``max_epochs="auto"`` resolved to).

    flip_rate_ : float
        Fraction of the training rows whose target the top-k masks of the kept epoch
        flip: one minus the post-hoc accuracy on the target, on the training rows.

    n_iter_ : int
        Epochs run.

    black_box_ : BlackBox
        The adapted model (SOInter must query it; it cannot be fitted on outputs).

    %(fitted_)s

    See Also
    --------
    L2XExplainer : The same interpreter for one output, trained against an approximator.

    Notes
    -----
    The hinge is zero on every row whose masked target agrees with the full-input one, so
    the interpreter learns from the rows it gets wrong; ``flip_rate`` in the history shows
    how many there are. The energy network is only trusted near the rows it was trained
    on, which is why it is pre-trained on masked rows as well and, by default, only ever
    sees k-hot masked rows. :meth:`score` is the model's agreement on the target output
    between masked and full rows.

    Many outputs (a segmentation model, one output per pixel; a tagger of many tags): beyond
    16 outputs the default energy network reads the outputs' unary encoding, the pairs of
    outputs left out, and is fitted by pseudo-likelihood for 10 epochs, whose one-output
    changes it scores in closed form (``EnergyNet``'s ``"auto"`` loss, encoding and
    epochs). With the former defaults (the likelihood on the pairwise encoding, 50 epochs)
    a fit on a 64-output segmentation network (8 x 8 images, 1,300 rows, k = 10) did not
    end in 700 s on one CPU thread; with these SOInter's own training takes 4-10 s (the
    refinement against the model adds 20-45 s) and its masks keep the target pixel's true
    label on 87.8-90.4 %% of 500 held-out images, the network 89.6 %% (two pixels, two
    seeds, ``refine=None``). On a 24 x 24 segmentation network
    (``benchmarks/studies/segmentation.py``, k = 10, 5 epochs) the masks kept the target
    pixel's label on 85 %% of held-out rows with ``fill="baseline"`` and
    ``energy_masks=2``, on 13 %% with ``fill="draws"`` (33 s against 14 s a fit; with the
    left-out pixels then at 0 rather than the mean); ``gradient="relaxed"`` did as well as
    the score function (87 %%), in half the time an epoch.

    Departures from the paper, each measured on E1/E2 (``doc/tuning.rst`` in the source
    repository): the energy network is fitted to the model's per-output probabilities (the
    cross-entropy of its marginals) rather than to its labels alone, on masked rows whose
    left-out features are drawn from the data (``fill``) rather than zeroed; the objective
    sums the other outputs out when it can, with a margin on every row; the interpreter
    starts from equal logits; the gradient is straight-through; the model is re-queried on
    draws from the interpreter; the epoch with the fewest expected top-k flips is kept.

    References
    ----------
    .. [1] S. Seyyedsalehi, M. Soleymani, H. Rabiee and M. Mohammadi, "SOInter: A Novel
       Deep Energy Based Interpretation Method for Explaining Structured Output Models",
       2022.
    """

    _requires_model = True

    _parameter_constraints: dict = {
        **BaseExplainer._parameter_constraints,
        "target": [Integral, tuple, list],
        "k": [Interval(Integral, 1, None, closed="left")],
        "tau": [Interval(Real, 0, None, closed="neither")],
        "selector": [callable],
        "energy": [EnergyNet, None],
        "energy_masks": [Interval(Integral, 0, None, closed="left")],
        "requery": [StrOptions({"sample", "topk", "batch"})],
        "fill": [StrOptions({"draws", "baseline"})],
        "n_draws": [Interval(Integral, 1, None, closed="left")],
        "objective": [StrOptions({"auto", "joint", "marginal"})],
        "margin": [StrOptions({"flips", "all"})],
        "energy_refit": ["boolean"],
        "append_mask": ["boolean"],
        "gradient": [StrOptions({"score", "relaxed"})],
        "n_samples": [Interval(Integral, 2, None, closed="left")],
        "straight_through": ["boolean"],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self, target=0, k=4, *, tau=1.0, gradient="score", n_samples=4,
        selector=MLP(hidden_units=(100, 100), zero_output=True), energy=None, energy_masks=4,
        fill="draws", n_draws=4, requery="sample", objective="auto", margin="all",
        straight_through=True, energy_refit=False, append_mask=False, n_iter_no_change=10,
        refine="model", repair=None, background=None, baseline="mean", groups=None,
        image_shape=None, patch_size=None,
        max_epochs=50, batch_size=256, lr=1e-3, weight_decay=1e-3, optimizer="adam",
        callbacks=None, train_split=None, device="auto",
        data_on_device=True, cuda_graphs=True, random_state=None,
        verbose=0,
    ):
        self.target = target
        self.k = k
        self.tau = tau
        self.gradient = gradient
        self.n_samples = n_samples
        self.selector = selector
        self.energy = energy
        self.energy_masks = energy_masks
        self.fill = fill
        self.n_draws = n_draws
        self.requery = requery
        self.objective = objective
        self.margin = margin
        self.straight_through = straight_through
        self.energy_refit = energy_refit
        self.append_mask = append_mask
        self.n_iter_no_change = n_iter_no_change
        self.refine = refine
        self.repair = repair
        self.background = background
        self.baseline = baseline
        self.groups = groups
        self.image_shape = image_shape
        self.patch_size = patch_size
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.optimizer = optimizer
        self.callbacks = callbacks
        self.train_split = train_split
        self.device = device
        self.data_on_device = data_on_device
        self.cuda_graphs = cuda_graphs
        self.random_state = random_state
        self.verbose = verbose

    # -- fit -----------------------------------------------------------------------------

    def _check_params(self, problem):
        super()._check_params(problem)
        spec = problem.output_spec
        if spec.n_outputs < 2:
            raise ValueError(
                "SOInterExplainer explains one output of a model with several outputs (a "
                f"multi-label or multi-output model); this black box has {spec.n_outputs} "
                "output. Use L2XExplainer or RealXExplainer for a single-output model."
            )
        if "real" in spec.kinds:
            raise ValueError(
                "SOInterExplainer explains discrete outputs (classes, labels); this black box "
                f"has real-valued outputs (kinds {spec.kinds})."
            )
        n_configurations = int(np.prod([float(n) for n in spec.n_states]))
        limit = self._energy_template().max_configurations
        if self.objective == "marginal" and n_configurations > limit:
            raise ValueError(
                f'objective="marginal" sums over every joint configuration of the outputs; '
                f"this black box has {n_configurations:,}, more than "
                f"energy__max_configurations={limit:,}. Use objective=\"joint\" or raise the "
                "limit."
            )
        self.objective_ = self.objective
        if self.objective == "auto":
            self.objective_ = "marginal" if n_configurations <= limit else "joint"

    def _energy_template(self):
        return EnergyNet() if self.energy is None else self.energy

    def _pretrain(self, problem, X, X_scaled, targets):
        rows, proba = energy_training_set(
            problem.black_box, problem.masker, problem.output_spec, X, X_scaled, targets,
            n_masks=self.energy_masks, k=self.k_, append_mask=self.append_mask,
            fill=self.fill, n_draws=self.n_draws)
        energy = self._energy(problem, resolve_device(self.device))
        if self.verbose == 1:
            progress = _EpochProgress(f"{type(self).__name__} energy network")
            energy.set_params(callbacks=[*(energy.callbacks or []), ("epoch_progress", progress)])
        self.energy_net_ = energy.fit(rows, proba)
        self._record_energy()

    def _record_energy(self):
        """What the energy network's "auto" parameters resolved to, as fitted attributes."""
        self.energy_loss_ = self.energy_net_.loss_
        self.energy_encoding_ = self.energy_net_.encoding_
        self.energy_max_epochs_ = self.energy_net_.max_epochs_

    def _energy(self, problem, device):
        """The energy network configured for the problem's outputs, not yet fitted."""
        energy = clone(self._energy_template())
        return energy.set_params(states=problem.output_spec.n_states, device=device,
                                 cuda_graphs=self.cuda_graphs and energy.cuda_graphs,
                                 verbose=max(self.verbose - 1, 0))

    def _fitted_parts(self):
        return {"energy_net_.net_.module_": self.energy_net_.net_.module_}

    def _rebuild_parts(self, problem, device):
        # The energy network reads the rows as masker.mask gives them: with append_mask,
        # the masks follow the masked values.
        width = problem.n_features * (2 if self.append_mask else 1)
        self.energy_net_ = self._energy(problem, device).build(width,
                                                               problem.output_spec.n_states)
        self._record_energy()

    def _build_net(self, problem, **net_params):
        same_name = ("tau", "margin", "energy_refit", "straight_through", "append_mask",
                     "gradient", "n_samples", "fill", "n_draws")
        return SOInterNet(
            self.selector, energy=self.energy_net_.net_, k=self.k_, target=problem.target,
            objective=self.objective_, per_batch_query=self.requery == "batch",
            **{name: getattr(self, name) for name in same_name}, **problem.net_params(),
            **net_params,
        )

    def _train(self, problem, X, net_input, targets):
        """Algorithm 1 in one skorch fit: epochs of the interpreter on the hinge, the model
        re-queried on its masks (per batch, or between epochs by :class:`Requery`); the
        interpreter with the fewest top-k target flips on the training rows is kept
        (``EarlyStopping(load_best=True)``; with ``fill="draws"``, flips under the draws:
        at the baseline a feature can look useless in a row where it is not)."""
        net = self.net_
        net.callbacks = [
            *(net.callbacks or []),
            ("requery", Requery(net_input, problem.output_spec.labels(targets),
                                mode=self.requery)),
            ("keep_best", EarlyStopping(monitor="kept_flip_rate", patience=self.n_iter_no_change,
                                        threshold=0.0, threshold_mode="abs",
                                        load_best=True, sink=_silent)),
        ]
        net.set_params(black_box=problem.black_box, rows=X)
        net.initialize()
        try:
            net.partial_fit(net_input, np.arange(len(X), dtype=np.int64)[:, None])
        finally:
            # The fitted net keeps neither the model nor the training rows.
            net.release_fit_data()
            dict(net.callbacks_)["requery"].release()
        keep_best = dict(net.callbacks_)["keep_best"]
        keep_best.best_model_weights_ = None  # loaded already; a copy need not be pickled
        self.flip_rate_ = net.history[keep_best.best_epoch_ - 1, "topk_flip_rate"]
        self.n_iter_ = len(net.history)


def _silent(*args):
    """EarlyStopping's sink: the explainer's ``n_iter_`` tells when training stopped."""
