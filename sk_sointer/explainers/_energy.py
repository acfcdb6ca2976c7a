"""An energy network over a model's joint outputs: SOInter's surrogate of a structured model.

:class:`EnergyNet` learns ``E(x, y)`` so that the distribution ``q(y | x) ∝ exp(-E(x, y))``
over the *joint* configurations ``y`` of a model's discrete outputs imitates the model:
its lowest energy sits at the model's prediction for ``x``, and the energy of a
configuration tells how far the model is from predicting it. SOInter (eq. 5) reads the
model's structure (how outputs depend on each other) off such a network.

A configuration is a vector of output codes (a class index per output, 0/1 per label). The
networks see it encoded as ``phi(y)``: per output one column per value (one column, the
label, for a binary output), then the products of the columns of every pair of outputs,
so that an energy linear in ``phi`` can still couple outputs. With hundreds of outputs the
pairs are too many (576 binary outputs, a 24 x 24 segmentation, give 165,600), and the
encoding keeps the unary columns only (``encoding="unary"``): the outputs are then coupled
by the energy network's global term alone, a low-rank interaction (see
:class:`~sk_sointer.EnergyMLP`).

Three losses, on a set of candidate configurations per row:

- ``"likelihood"``: the cross-entropy of ``q(y | x)`` at the model's configuration, the
  candidates being every configuration when there are at most ``max_configurations`` of
  them (exact), else the model's configuration, its neighbours (one output changed) and
  ``n_candidates`` random ones;
- ``"value"``: Deep Value Network regression (Gygli et al., 2017): ``sigmoid(-E(x, y))``
  fitted to the oracle value ``1 - Hamming(y, y_model) / n_outputs`` of each candidate;
- ``"pseudolikelihood"``: for every output, the cross-entropy of its conditional
  distribution ``q(y_i | y_-i, x)``, the other outputs at the model's configuration,
  against the model's probabilities of that output (Besag's pseudo-likelihood). Its
  candidates are the model's configuration and its neighbours only, and with a unary
  encoding of binary outputs the energy network scores all the neighbours in closed form
  (:meth:`EnergyModel.neighbour_energies`): the loss that scales to hundreds of outputs.
"""

import itertools
import math
from numbers import Integral

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted
from skorch import NeuralNet
from skorch.utils import to_tensor

from .._networks import EnergyMLP, build_network
from .._training.batches import index_batches
from .._training.updates import Update, UpdateSteps
from .._utils import PortableNet, device_copies


class Configurations:
    """The joint configurations of discrete outputs with ``states[i]`` values each.

    Parameters
    ----------
    states : sequence of int
        Number of values of every output (>= 2).
    pairs : bool, default=True
        Append the products of the unary columns of every pair of outputs to the encoding.
    """

    def __init__(self, states, pairs=True):
        self.states = tuple(int(s) for s in states)
        if not self.states or min(self.states) < 2:
            raise ValueError(f"every output needs at least 2 values; got states {self.states}.")
        # Unary columns of each output: one (the label) for a binary output, else one per value.
        self.widths = tuple(1 if s == 2 else s for s in self.states)
        self.offsets = np.concatenate([[0], np.cumsum(self.widths)[:-1]]).astype(int)
        self.n_unary = int(sum(self.widths))
        owner = np.repeat(np.arange(len(self.states)), self.widths)
        first, second = np.triu_indices(self.n_unary, k=1)
        # pairs of columns of two different outputs (none without pairs)
        keep = (owner[first] != owner[second]) & bool(pairs)
        self.pairs = bool(pairs)
        self._pairs = (torch.as_tensor(first[keep], device="cpu"),
                       torch.as_tensor(second[keep], device="cpu"))
        self.n_encoding = self.n_unary + int(keep.sum())
        # Lookup tables on the CPU, whatever device is the default (loading builds on
        # torch's meta device); they move to the codes' device where used.
        # Output i's value v sets one unary column, ``offsets[i] + v`` (a categorical
        # output), or ``offsets[i]`` to v (a binary one); no two outputs share a column.
        self._binary = torch.as_tensor([s == 2 for s in self.states], device="cpu")
        self._columns = torch.as_tensor(self.offsets, dtype=torch.long, device="cpu")
        self._on_device = {}

    @property
    def n_outputs(self):
        return len(self.states)

    @property
    def n_configurations(self):
        return math.prod(self.states)

    def _tables(self, device):
        """The lookup tables on ``device``, copied there once: ``(binary, columns, first,
        second)``."""
        cache = device_copies(self)  # absent from older pickles
        if device not in cache:
            tables = (self._binary, self._columns, *self._pairs)
            cache[device] = tuple(table.to(device) for table in tables)
        return cache[device]

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_on_device"] = {}  # device copies are rebuilt where the configurations load
        return state

    def all(self):
        """Every configuration, ``(n_configurations, n_outputs)`` int64, in
        ``itertools.product`` order (the last output varies fastest)."""
        return torch.as_tensor(list(itertools.product(*map(range, self.states))), dtype=torch.long)

    def index(self, codes):
        """Position of configurations ``codes`` in :meth:`all` (mixed radix)."""
        cache, key = device_copies(self), ("strides", codes.device)
        if key not in cache:  # enumerated configurations only: their strides fit in int64
            strides = np.concatenate([np.cumprod(self.states[::-1])[::-1][1:], [1]])
            cache[key] = torch.as_tensor(strides, device=codes.device)
        return (codes * cache[key]).sum(-1)

    def encode(self, codes):
        """``phi(y)`` of configurations ``codes`` (``(..., n_outputs)`` int): unary columns,
        then the products of the unary columns of every pair of outputs, float32."""
        binary, columns, first, second = self._tables(codes.device)
        # One column written per output: a lookup of a (sum(states), n_unary) table summed
        # over outputs built (..., n_outputs, n_unary) first, 680 million values for a
        # batch of 1,024 pairs of configurations of 576 outputs.
        columns = columns + torch.where(binary, 0, codes)
        values = torch.where(binary, codes, 1).float()
        unary = torch.zeros(*codes.shape[:-1], self.n_unary, device=codes.device)
        unary.scatter_(-1, columns, values)
        if not self.pairs:
            return unary
        return torch.cat([unary, unary[..., first] * unary[..., second]], dim=-1)

    def neighbours(self, codes):
        """Every configuration one output away from each row of ``codes``: ``(B, C, m)``
        with ``C = sum(states) - n_outputs``."""
        candidates = []
        for i, s in enumerate(self.states):
            for shift in range(1, s):
                other = codes.clone()
                other[:, i] = (other[:, i] + shift) % s
                candidates.append(other)
        return torch.stack(candidates, dim=1)

    def random(self, n, device, generator=None):
        """``n`` configurations drawn uniformly, ``(n, n_outputs)``."""
        columns = [torch.randint(s, (n,), device=device, generator=generator) for s in self.states]
        return torch.stack(columns, dim=1)


def _logsumexp_by_value(terms, values, n_values):
    """``log sum exp`` of the columns of ``terms`` (``(B, C)``) whose ``values`` (``(C,)``)
    are ``v``, for every ``v`` below ``n_values``: ``(B, n_values)``. The other columns
    enter each sum at -inf, so that no shape depends on the values (boolean indexing would
    read them back from the device)."""
    own = values == torch.arange(n_values, device=values.device).unsqueeze(1)
    return torch.logsumexp(terms.unsqueeze(1).masked_fill(~own, float("-inf")), dim=2)


# Up to this many outputs, loss="auto" is the likelihood and encoding="auto" pairwise;
# beyond, pseudo-likelihood on the unary encoding (see EnergyNet's loss and encoding).
_MAX_JOINT_OUTPUTS = 16
# max_epochs="auto": epochs of each loss (see EnergyNet's max_epochs).
_AUTO_EPOCHS = {"likelihood": 50, "value": 50, "pseudolikelihood": 10}


class EnergyNet(BaseEstimator):
    """Learns an energy ``E(x, y)`` of a model's joint discrete outputs.

    Fit it on rows (as the networks see them: standardised, possibly masked) and the
    model's outputs on them as integer codes, ``(n_samples, n_outputs)``: the class index
    of each output (0/1 for a label). Used by :class:`~sk_sointer.SOInterExplainer`, which
    pre-trains it on full and masked rows; usable alone as a structured-output surrogate
    (:meth:`predict` gives the configuration of lowest energy). The trained skorch net is
    ``net_`` (composed, as the explainers compose theirs).

    Parameters
    ----------
    module : callable, default=EnergyMLP()
        Factory ``(in_features, encoding_width) -> module`` of the energy network; the
        module is called as ``module(x, phi)`` and ``module.table(x, phi_table)`` (see
        :class:`~sk_sointer.EnergyMLP`). Nested options: ``module__hidden_units=...``
        through ``set_params``.
    states : tuple of int, default=None
        Number of values of each output; by default one more than the largest code seen
        by ``fit`` for each output (at least 2).
    loss : {"auto", "likelihood", "value", "pseudolikelihood"}, default="auto"
        Training objective (see the module's documentation). ``"pseudolikelihood"`` is
        used whether or not the configurations are enumerated. ``"auto"``: the likelihood
        up to 16 outputs, pseudo-likelihood beyond (``loss_`` holds the choice). Beyond a
        few tens of outputs the likelihood's candidates (the model's configuration, its
        neighbours and ``n_candidates`` random ones) are the bulk of a step, while
        pseudo-likelihood scores every neighbour at once: on a tweet tagger's 57 tags it
        kept the explained tag as well or better in a third of the time (fits of 18-22 s
        against 55-60 s, ``benchmarks/studies/tags.py``), and on a 64-output segmentation
        network a fit of SOInter with the likelihood did not end in 700 s on one CPU
        thread, with pseudo-likelihood it took 7-15 s. Yeast's 14 labels, the most
        measured with the likelihood (``benchmarks/studies/structured.py``), keep it.
    encoding : {"auto", "pairwise", "unary"}, default="auto"
        How the networks see a configuration: unary columns and the products of every pair
        of outputs' columns (``"pairwise"``), or the unary columns only (``"unary"``: the
        outputs interact through the energy network's global term). ``"auto"``: pairwise
        up to 16 outputs (136 columns for binary ones), unary beyond (``encoding_`` holds
        the choice). The pairs grow as the square of the outputs: at 64 binary outputs
        they are 2,016 columns, and ten epochs of pseudo-likelihood took 141 s of a
        SOInter fit on 1,300 rows against 6.5 s for the whole fit with the unary encoding
        (one CPU thread), the masks keeping the target as well (post-accuracy 89.6 % and
        90.4 %); at 576 outputs the pairwise encoding has 166,176 columns, the default
        energy network 19.5 million weights, and one step of the likelihood loss took
        5.8 s per row on one CPU thread.
    max_configurations : int, default=1024
        Train and predict on every joint configuration when there are at most this many
        (ten binary outputs); beyond, train on sampled candidates and predict by coordinate
        descent. Every training step costs a pass over the enumerated configurations: on
        yeast's 14 labels (16,384 configurations) enumeration made a fit about 15 times
        slower than sampled candidates.
    n_candidates : int, default=32
        Random configurations per batch, besides the model's and its neighbours, when the
        configurations are not enumerated.
    max_epochs : int or "auto", default="auto"
        Epochs of training. ``"auto"``: 50 with the likelihood and value losses, 10 with
        pseudo-likelihood (``max_epochs_`` holds the choice), which trains every output's
        conditional on every row, so each epoch carries many more targets: on the tweet
        tagger 10 epochs kept the tags better than 5 (``benchmarks/studies/tags.py``), on
        the 64-output segmentation network as well as 50 (post-accuracy 90.4 % and 87.8 %
        on two pixels against 90.6 % and 88.2 %) in half the fit.
    batch_size, lr, optimizer, train_split, callbacks, device, verbose :
        skorch's training parameters, with defaults suited to small tabular problems:
        ``batch_size=128``, ``lr=1e-3``, Adam, no validation split.
    cuda_graphs : bool, default=True
        On CUDA, capture the training step in a CUDA graph and replay it, as the
        explainers do (their ``cuda_graphs``; SOInter's ``cuda_graphs=False`` turns it off
        here too). Without it the pre-training ran eagerly and took 99 % of a SOInter fit
        on an H200 (88 s of 89 at 10,000 rows of E2).

    Attributes
    ----------
    net_ : skorch net
        The trained energy network: ``net_.module_`` and its training ``net_.history``.
    configurations_ : Configurations
        The joint configurations of the outputs.
    in_features_ : int
        Width of the rows the network reads.
    loss_ : {"likelihood", "value", "pseudolikelihood"}
        The loss trained (what ``loss="auto"`` resolved to).
    encoding_ : {"pairwise", "unary"}
        The encoding of the configurations (what ``encoding="auto"`` resolved to).
    max_epochs_ : int
        The epochs trained at most (what ``max_epochs="auto"`` resolved to).
    """

    def __init__(self, module=EnergyMLP(), *, states=None, loss="auto", encoding="auto",
                 max_configurations=1024, n_candidates=32, max_epochs="auto", batch_size=128,
                 lr=1e-3, optimizer=torch.optim.Adam, train_split=None, callbacks=None,
                 device="cpu", cuda_graphs=True, verbose=0):
        self.module = module
        self.states = states
        self.loss = loss
        self.encoding = encoding
        self.max_configurations = max_configurations
        self.n_candidates = n_candidates
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.lr = lr
        self.optimizer = optimizer
        self.train_split = train_split
        self.callbacks = callbacks
        self.device = device
        self.cuda_graphs = cuda_graphs
        self.verbose = verbose

    def __setstate__(self, state):
        # Pickled before the parameter existed: their steps ran eagerly; they now capture.
        state.setdefault("cuda_graphs", True)
        super().__setstate__(state)

    def fit(self, X, y=None):
        """Fit on rows ``X`` and the model's outputs ``y``: integer codes ``(n_samples,
        n_outputs)``, or per-output probabilities ``(n_samples, sum(states))`` (every
        output's distribution over its values, side by side; ``states`` must be set). With
        probabilities and enumerated configurations, the loss is the cross-entropy of
        ``q``'s per-output marginals against them, which carries the model's confidence
        into the energies; otherwise the configuration of most probable values is fitted
        with ``loss``."""
        targets = self._check_targets(y, X)
        states = self.states
        if states is None:
            states = np.maximum(targets.max(axis=0) + 1, 2)
        self.net_ = self._net(np.asarray(X).shape[1], states).fit(X, targets)
        return self

    def build(self, in_features, states):
        """The untrained network for rows of ``in_features`` values and outputs of
        ``states`` values each, as ``fit`` builds it: what a saved one is loaded into."""
        self.net_ = self._net(in_features, states).initialize()
        return self

    def _net(self, in_features, states):
        joint = len(states) <= _MAX_JOINT_OUTPUTS
        self.loss_ = self.loss
        if self.loss == "auto":
            self.loss_ = "likelihood" if joint else "pseudolikelihood"
        self.encoding_ = self.encoding
        if self.encoding == "auto":
            self.encoding_ = "pairwise" if joint else "unary"
        self.max_epochs_ = self.max_epochs
        if self.max_epochs == "auto":
            self.max_epochs_ = _AUTO_EPOCHS[self.loss_]
        self.configurations_ = Configurations(states, pairs=self.encoding_ == "pairwise")
        self.in_features_ = int(in_features)
        return EnergyModel(
            self.module, configurations=self.configurations_, in_features=self.in_features_,
            loss=self.loss_, max_configurations=self.max_configurations,
            n_candidates=self.n_candidates, max_epochs=self.max_epochs_,
            batch_size=self.batch_size, lr=self.lr, optimizer=self.optimizer,
            train_split=self.train_split, callbacks=self.callbacks, device=self.device,
            cuda_graphs=self.cuda_graphs, verbose=self.verbose,
        )

    def predict(self, X):
        """The configuration of lowest energy per row, ``(n_samples, n_outputs)`` int64."""
        check_is_fitted(self)
        return self.net_.predict(X)

    def predict_proba(self, X):
        """The per-output marginal probabilities, concatenated: ``(n_samples,
        sum(states))``."""
        check_is_fitted(self)
        return self.net_.predict_proba(X)

    def _check_targets(self, y, X):
        if self.loss not in ("auto", "likelihood", "value", "pseudolikelihood"):
            raise ValueError("loss should be 'auto', 'likelihood', 'value' or "
                             f"'pseudolikelihood'; got {self.loss!r}.")
        if self.max_epochs != "auto" and not (
                isinstance(self.max_epochs, Integral) and not isinstance(self.max_epochs, bool)
                and self.max_epochs >= 1):
            raise ValueError(f"max_epochs should be 'auto' or a positive int; got "
                             f"{self.max_epochs!r}.")
        if self.encoding not in ("auto", "pairwise", "unary"):
            raise ValueError("encoding should be 'auto', 'pairwise' or 'unary'; got "
                             f"{self.encoding!r}.")
        if not isinstance(self.max_configurations, Integral) or self.max_configurations < 1:
            raise ValueError("max_configurations should be a positive int.")
        if y is None:
            raise ValueError("EnergyNet.fit needs the model's outputs on X as y.")
        targets = np.asarray(y)
        if targets.ndim == 1:
            targets = targets[:, None]
        if targets.ndim != 2 or len(targets) != len(X):
            raise ValueError(
                f"y should hold the model's outputs for each of the {len(X)} rows, shape "
                f"(n_samples, n_outputs) or (n_samples, sum(states)); got shape "
                f"{np.asarray(y).shape}."
            )
        if not np.isfinite(targets.astype(np.float64)).all() or targets.min() < 0:
            raise ValueError("y should hold non-negative codes or probabilities.")
        # Every output has two values or more, so probabilities are wider than codes.
        if self.states is not None and targets.shape[1] == sum(self.states):
            return targets.astype(np.float32)
        if np.all(targets == np.round(targets)):
            return targets.astype(np.int64)
        raise ValueError(
            "y holds probabilities: set states (the number of values of every output) and "
            f"give sum(states) columns; got {targets.shape[1]} columns for states "
            f"{self.states}."
        )



class EnergyModel(UpdateSteps, PortableNet, NeuralNet):
    """The skorch net of an :class:`EnergyNet`: the energy network (``module_``), its
    training losses and its inference over configurations.

    ``configurations`` (a :class:`Configurations`) and ``in_features`` size the network;
    ``loss``, ``max_configurations`` and ``n_candidates`` are the :class:`EnergyNet`'s.
    """

    def __init__(self, module, *, configurations, in_features, loss, max_configurations,
                 n_candidates, cuda_graphs=True, **kwargs):
        self.module = module
        self.configurations = configurations
        self.in_features = in_features
        self.loss = loss
        self.max_configurations = max_configurations
        self.n_candidates = n_candidates
        self.cuda_graphs = cuda_graphs
        # The losses are computed in candidate_loss; skorch's parameters must hold a
        # criterion all the same.
        super().__init__(module, criterion=torch.nn.Module, **kwargs)

    def initialize_module(self):
        self.module_ = build_network(self.module, self.in_features, self.configurations.n_encoding)
        return self

    def get_iterator(self, dataset, training=False):
        batches = index_batches(self, dataset, training)
        return batches if batches is not None else super().get_iterator(dataset, training=training)

    def initialize_criterion(self):
        self.criterion_ = None  # the losses are computed in :meth:`candidate_loss`
        return self

    @property
    def exact(self):
        """Whether every configuration is enumerated."""
        return self.configurations.n_configurations <= self.max_configurations

    def _table(self, device):
        cache = device_copies(self, "_tables")
        if device not in cache:
            codes = self.configurations.all().to(device)
            cache[device] = (codes, self.configurations.encode(codes))
        return cache[device]

    # -- training ----------------------------------------------------------------------

    def candidate_loss(self, X, codes, proba=None):
        """The training loss on rows ``X`` whose model configurations are ``codes`` (and,
        when known, per-output probabilities ``proba``)."""
        if self.loss == "pseudolikelihood":
            return self.pseudolikelihood_loss(X, codes, proba)
        if proba is not None and self.exact:
            log_marginals = self.log_marginals(X)
            return -torch.cat(log_marginals, dim=1).mul(proba).sum(1).mean()
        configurations = self.configurations
        if self.exact:
            table, phi = self._table(X.device)
            energies = self.module_.table(X, phi)
            if self.loss == "likelihood":
                return F.cross_entropy(-energies, configurations.index(codes))
            candidates = table.unsqueeze(0)
        else:
            random = configurations.random(self.n_candidates, X.device)
            candidates = torch.cat([
                codes.unsqueeze(1),
                configurations.neighbours(codes),
                random.unsqueeze(0).expand(len(codes), -1, -1),
            ], dim=1)
            energies = self.module_(X, configurations.encode(candidates))
            if self.loss == "likelihood":
                # A random candidate equal to the model's configuration is not a rival.
                duplicate = (candidates == codes.unsqueeze(1)).all(-1)
                duplicate[:, 0] = False
                scores = (-energies).masked_fill(duplicate, float("-inf"))
                return F.cross_entropy(scores, torch.zeros_like(codes[:, 0]))
        value = 1.0 - (candidates != codes.unsqueeze(1)).float().mean(-1)
        value = value.expand_as(energies)
        return F.binary_cross_entropy_with_logits(-energies, value)

    def pseudolikelihood_loss(self, X, codes, proba=None):
        """Mean over rows and outputs of the cross-entropy of ``q(y_i | y_-i = codes_-i, x)``
        against the model's probabilities of output ``i`` (``proba``; one-hot ``codes``
        without them)."""
        configurations = self.configurations
        if proba is None:
            proba = torch.cat([F.one_hot(codes[:, i], s).float()
                               for i, s in enumerate(configurations.states)], dim=1)
        energies = self.conditional_energies(X, codes)
        log_conditionals = torch.cat([torch.log_softmax(-e, dim=1) for e in energies], dim=1)
        return -(log_conditionals * proba).sum(1).mean() / configurations.n_outputs

    def neighbour_energies(self, X, codes):
        """``E(x, y)`` of the configurations ``codes`` and of their neighbours (one output
        changed, in :meth:`Configurations.neighbours`' order): ``(B,)`` and ``(B, C)``.

        For binary outputs in a unary encoding, a neighbour flips one column of
        ``phi(y)``, which a module with ``flip_energies`` (:class:`~sk_sointer.EnergyMLP`'s)
        scores without building the ``(B, n_outputs, n_outputs)`` neighbours."""
        configurations = self.configurations
        phi = configurations.encode(codes)
        if self._flips:
            return self.module_.flip_energies(X, phi)
        return self.module_(X, phi), self.energy(X, configurations.neighbours(codes))

    def conditional_energies(self, X, codes):
        """Per output ``i``, ``E(x, [v, codes_-i])`` for each of its values ``v``: a list of
        ``(B, states[i])`` tensors (the conditional ``q(y_i | y_-i, x)`` is their softmin)."""
        states = self.configurations.states
        own, neighbours = self.neighbour_energies(X, codes)
        energies = torch.cat([own.unsqueeze(1), neighbours], dim=1)
        out, start = [], 1  # neighbours of output i: shifts 1 .. s - 1 from column start
        for i, s in enumerate(states):
            shift = (torch.arange(s, device=X.device) - codes[:, i : i + 1]) % s
            column = torch.where(shift == 0, 0, start + shift - 1)
            out.append(energies.gather(1, column))
            start += s - 1
        return out

    def updates(self):
        return [Update(self._training_loss, self.optimizer_, (self.module_,),
                       training=(self.module_,))]

    def _training_loss(self, X, targets):
        loss = self.candidate_loss(*self._batch(X, targets))
        return loss, {"loss": loss.detach(), "y_pred": None}

    def validation_step(self, batch, **fit_params):
        self.module_.eval()
        with torch.no_grad():
            loss = self.candidate_loss(*self._batch(*self.batch_tensors(batch)))
        return {"loss": loss, "y_pred": None}

    def _batch(self, X, targets):
        """``(X, codes, proba)`` of a batch's tensors; ``proba`` is None when fitted on
        codes."""
        X = X.float()
        if targets.is_floating_point():
            return X, self.codes_of(targets), targets
        return X, targets.long(), None

    def codes_of(self, proba):
        """The most probable value of every output, from per-output probabilities."""
        blocks = proba.split(list(self.configurations.states), dim=1)
        return torch.stack([block.argmax(dim=1) for block in blocks], dim=1)

    # -- inference ---------------------------------------------------------------------

    def energy(self, X, codes):
        """``E(x, y)`` of rows ``X`` (tensor, the net's input space) with configurations
        ``codes`` (``(B, n_outputs)`` tensor, or ``(B, C, n_outputs)`` for several per row)."""
        return self.module_(X, self.configurations.encode(codes))

    def argmin(self, X):
        """The configuration of lowest energy for every row of the tensor ``X``: exact when
        the configurations are enumerated, else coordinate descent from the all-zero
        configuration (each output set in turn to its best value given the others, until
        nothing changes)."""
        if self.exact:
            table, phi = self._table(X.device)
            return table[self.module_.table(X, phi).argmin(dim=1)]
        if self._flips:
            return self._descend(X)
        configurations = self.configurations
        codes = torch.zeros(len(X), configurations.n_outputs, dtype=torch.long, device=X.device)
        for _ in range(20):
            before = codes.clone()
            for i, s in enumerate(configurations.states):
                options = codes.unsqueeze(1).repeat(1, s, 1)
                options[:, :, i] = torch.arange(s, device=X.device)
                codes[:, i] = self.energy(X, options).argmin(dim=1)
            if torch.equal(codes, before):
                break
        return codes

    @property
    def _flips(self):
        """Whether the module scores every one-output change at once (binary outputs in a
        unary encoding, a module with ``flip_energies``)."""
        configurations = self.configurations
        return (not configurations.pairs and max(configurations.states) == 2
                and hasattr(self.module_, "flip_energies"))

    def _descend(self, X):
        """Descent on the energy from the all-zero configuration by flips: in each step,
        every output whose flip alone lowers the energy is flipped if the energy falls
        when they all are, else the best one alone, until no flip lowers it. With hundreds
        of outputs a sweep of coordinate descent runs the network once per output; a step
        here runs it twice for all of them."""
        configurations = self.configurations
        codes = torch.zeros(len(X), configurations.n_outputs, dtype=torch.long, device=X.device)
        rows = torch.arange(len(X), device=X.device)
        for _ in range(2 * configurations.n_outputs):
            own, flipped = self.module_.flip_energies(X, configurations.encode(codes))
            gain = flipped - own.unsqueeze(1)
            better = gain < 0
            active = better.any(dim=1)
            if not active.any():
                break
            together = torch.where(better, 1 - codes, codes)
            best = codes.clone()
            best[rows, gain.argmin(dim=1)] ^= 1
            falls = self.energy(X, together) < own
            step = torch.where(falls.unsqueeze(1), together, best)
            codes = torch.where(active.unsqueeze(1), step, codes)
        return codes

    def log_marginals(self, X):
        """Exact ``log q(y_i = v | x)`` per output (enumerated configurations only): a list
        of ``(B, states[i])`` tensors."""
        table, phi = self._table(X.device)
        log_joint = torch.log_softmax(-self.module_.table(X, phi), dim=1)
        return [_logsumexp_by_value(log_joint, table[:, i], s)
                for i, s in enumerate(self.configurations.states)]

    def marginals(self, X):
        """Per output, the probability of each value under ``q(y | x) ∝ exp(-E(x, y))``: a
        list of ``(B, states[i])`` tensors. Exact when the configurations are enumerated;
        else the conditional distribution of each output given the others at
        :meth:`argmin` (an approximation)."""
        configurations = self.configurations
        if self.exact:
            return [log_marginal.exp() for log_marginal in self.log_marginals(X)]
        codes = self.argmin(X)
        if self._flips:
            return [torch.softmax(-energies, dim=1)
                    for energies in self.conditional_energies(X, codes)]
        return [torch.softmax(-self.value_energies(X, codes, i), dim=1)
                for i in range(configurations.n_outputs)]

    def value_energies(self, X, codes, output):
        """``E(x, y)`` for every value of output ``output``, the other outputs at ``codes``:
        ``(B, states[output])``."""
        n_values = self.configurations.states[output]
        options = codes.unsqueeze(1).repeat(1, n_values, 1)
        options[:, :, output] = torch.arange(n_values, device=X.device)
        return self.energy(X, options)

    def free_energies(self, X, output):
        """``F(x, v) = -log sum_{y: y_output = v} exp(-E(x, y))`` for every value ``v`` of
        output ``output``, the other outputs summed out: ``(B, states[output])``
        (enumerated configurations only)."""
        table, phi = self._table(X.device)
        energies = self.module_.table(X, phi)
        return -_logsumexp_by_value(-energies, table[:, output],
                                    self.configurations.states[output])

    def predict(self, X):
        """The configuration of lowest energy per row, ``(n_samples, n_outputs)`` int64."""
        self.module_.eval()
        with torch.inference_mode():
            X = to_tensor(np.asarray(X, dtype=np.float32), device=self.device)
            return self.argmin(X).cpu().numpy()

    def predict_proba(self, X):
        """The per-output marginal probabilities, concatenated: ``(n_samples,
        sum(states))``."""
        self.module_.eval()
        with torch.inference_mode():
            X = to_tensor(np.asarray(X, dtype=np.float32), device=self.device)
            return torch.cat(self.marginals(X), dim=1).cpu().numpy()

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_tables", None)
        return state
