"""Network factories for selectors and predictors.

A factory is a small, clonable configuration object: it stores hyperparameters, exposes
them through ``get_params``/``set_params`` (so an explainer can be tuned with
``selector__hidden_units=...``) and, when called with the input and output widths (and,
if it accepts one, the shape of an input row), builds a fresh :class:`torch.nn.Module`.
Any callable with that signature is a factory. The modules know nothing about
scikit-learn.
"""

import inspect
import math

import numpy as np
import torch

from sklearn.base import BaseEstimator
from torch import nn

_ACTIVATIONS = {
    "relu": nn.ReLU,
    "selu": nn.SELU,
    "elu": nn.ELU,
    "tanh": nn.Tanh,
    "gelu": nn.GELU,
    "leaky_relu": nn.LeakyReLU,
}


class MLP(BaseEstimator):
    """Factory of multi-layer perceptrons for tabular selectors and predictors.

    Parameters
    ----------
    hidden_units : tuple of int, default=(100, 100)
        Width of each hidden layer; ``()`` gives a linear model.

    activation : {"relu", "selu", "elu", "tanh", "gelu", "leaky_relu"}, default="relu"
        Non-linearity after each hidden layer.

    batch_norm : bool, default=False
        Add a batch normalisation layer after each hidden activation (the placement of
        L2X's released code).

    dropout : float, default=0.0
        Dropout probability after each hidden layer.

    zero_output : bool, default=False
        Start the output layer's weights and biases at zero, so that the network's first
        outputs are 0 whatever the input. A selector built this way starts with equal
        logits for every feature, and which features it comes to prefer is decided by the
        training signal rather than by the random initial weights.

    Examples
    --------
    >>> import torch
    >>> from sk_sointer import MLP
    >>> net = MLP(hidden_units=(8,))(in_features=3, out_features=2)
    >>> net(torch.zeros(5, 3)).shape
    torch.Size([5, 2])
    """

    def __init__(
        self,
        hidden_units=(100, 100),
        activation="relu",
        batch_norm=False,
        dropout=0.0,
        zero_output=False,
    ):
        self.hidden_units = hidden_units
        self.activation = activation
        self.batch_norm = batch_norm
        self.dropout = dropout
        self.zero_output = zero_output

    def __call__(self, in_features, out_features, input_shape=None):
        # A row is flat for an MLP, so the shape of the input is not needed.
        if self.activation not in _ACTIVATIONS:
            raise ValueError(
                f"activation should be one of {sorted(_ACTIVATIONS)}; got {self.activation!r}."
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout should be in [0, 1); got {self.dropout!r}.")
        layers = []
        width = in_features
        for units in self.hidden_units:
            if int(units) < 1:
                raise ValueError(f"hidden_units should be positive integers; got {self.hidden_units!r}.")
            layers += [nn.Linear(width, int(units)), _ACTIVATIONS[self.activation]()]
            if self.batch_norm:
                layers.append(nn.BatchNorm1d(int(units)))
            if self.dropout:
                layers.append(nn.Dropout(self.dropout))
            width = int(units)
        layers.append(nn.Linear(width, out_features))
        module = nn.Sequential(*layers)
        _glorot_init(module, self.activation)
        if self.zero_output:
            nn.init.zeros_(layers[-1].weight)
        return module

    def __sklearn_is_fitted__(self):
        # A factory is a configuration, never fitted: this keeps sklearn's checks from
        # mistaking it for an estimator that needs fitting.
        return True


def _glorot_init(module, activation):
    """Glorot-uniform weights and zero biases (the Keras defaults the reference code used).

    SELU networks use LeCun-normal weights instead, the initialisation under which SELU is
    self-normalising.
    """
    for layer in module.modules():
        if isinstance(layer, (nn.Linear, nn.Conv2d)):
            if activation == "selu":
                fan_in = layer.weight[0].numel()
                nn.init.normal_(layer.weight, std=1.0 / math.sqrt(fan_in))
            else:
                nn.init.xavier_uniform_(layer.weight)
            nn.init.zeros_(layer.bias)


def build_network(factory, in_features, out_features, input_shape=None, groups=None,
                  n_tokens=None):
    """Call a network factory; ``input_shape`` (and for selectors ``groups``, the group of
    each input value; for token ids ``n_tokens``, the number of ids) are passed only to
    factories that accept them, so plain ``(in_features, out_features)`` callables keep
    working."""
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # builtins without a signature
        parameters = {}
    any_keyword = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    offered = [("input_shape", input_shape), ("groups", groups), ("n_tokens", n_tokens)]
    extra = {name: value for name, value in offered if name in parameters or any_keyword}
    module = factory(in_features=in_features, out_features=out_features, **extra)
    if not isinstance(module, torch.nn.Module):
        raise TypeError(
            f"A network factory should return a torch.nn.Module; {factory!r} returned "
            f"{type(module).__name__}."
        )
    return module


class CNN(BaseEstimator):
    """Factory of small convolutional networks for image predictors and approximators.

    Blocks of a ``kernel_size`` convolution (padded to keep the size), the non-linearity
    and a 2 x 2 max-pooling, then dense layers. Rows arrive flat and are read as images of
    the explainer's ``(channels, height, width)``; a judge that also gets the mask
    (``append_mask``) reads it as extra channels.

    Parameters
    ----------
    channels : tuple of int, default=(32, 64)
        Output channels of each convolution block.

    kernel_size : int, default=3
        Size of the convolutions' square kernels (odd).

    hidden_units : tuple of int, default=(128,)
        Dense layers after the convolutions.

    activation : str, default="relu"
        Non-linearity (see :class:`MLP`).

    Examples
    --------
    >>> import torch
    >>> from sk_sointer import CNN
    >>> net = CNN(channels=(4,), hidden_units=(8,))(784, 2, input_shape=(1, 28, 28))
    >>> net(torch.zeros(5, 784)).shape
    torch.Size([5, 2])
    """

    def __init__(self, channels=(32, 64), kernel_size=3, hidden_units=(128,), activation="relu"):
        self.channels = channels
        self.kernel_size = kernel_size
        self.hidden_units = hidden_units
        self.activation = activation

    def __call__(self, in_features, out_features, input_shape=None):
        in_channels, height, width = _image_input(self, in_features, input_shape)
        layers = [nn.Unflatten(1, (in_channels, height, width))]
        for units in self.channels:
            layers += [_conv(in_channels, int(units), self.kernel_size),
                       _activation(self.activation)()]
            in_channels = int(units)
            if min(height, width) >= 2:
                layers.append(nn.MaxPool2d(2))
                height, width = height // 2, width // 2
        layers.append(nn.Flatten())
        head = MLP(self.hidden_units, activation=self.activation)
        layers.append(head(in_channels * height * width, out_features))
        module = nn.Sequential(*layers)
        _glorot_init(module, self.activation)
        return module

    def __sklearn_is_fitted__(self):
        return True


class CNNSelector(BaseEstimator):
    """Factory of fully convolutional selectors for images: one score per pixel or patch.

    Convolutions padded to keep the image's size map it to one logit per value (per pixel
    and channel), or per pixel when the features are grouped; a group's score (a patch of
    ``patch_size``, a superpixel, any ``groups``) is the mean of its values' logits. So the
    selector has no dense layer: its size does not grow with the image.

    Parameters
    ----------
    channels : tuple of int, default=(32, 32)
        Output channels of each hidden convolution.

    kernel_size : int, default=3
        Size of the convolutions' square kernels (odd).

    activation : str, default="relu"
        Non-linearity (see :class:`MLP`).

    zero_output : bool, default=True
        Start the last (1 x 1) convolution at zero, so that every pixel starts with the same
        logit (see :class:`MLP`).

    position_bias : bool, default=False
        Add a learnt logit per pixel (per value), starting at zero, to the convolutions'.
        Convolutions alone score a pattern the same wherever it lies; a selector for one
        output at a fixed place (SOInter explaining one pixel of a segmentation) must score
        pixels by where they are. On a 10 x 10 segmentation whose pixels read their 3 x 3
        neighbourhood, SOInter's pixels (k = 5, 10 epochs) lay 3.1 pixels from the target
        without it, 1.0 with it and 0.9 with an MLP selector; two coordinate channels
        (CoordConv) instead of the bias gave 2.7.

    Examples
    --------
    >>> import torch
    >>> from sk_sointer import CNNSelector
    >>> from sk_sointer._layout import patch_groups
    >>> groups = patch_groups((1, 28, 28), 4)  # 49 patches of 4 x 4
    >>> net = CNNSelector(channels=(4,))(784, 49, input_shape=(1, 28, 28), groups=groups)
    >>> net(torch.zeros(5, 784)).shape
    torch.Size([5, 49])
    """

    def __init__(self, channels=(32, 32), kernel_size=3, activation="relu", zero_output=True,
                 position_bias=False):
        self.channels = channels
        self.kernel_size = kernel_size
        self.activation = activation
        self.zero_output = zero_output
        self.position_bias = position_bias

    def __call__(self, in_features, out_features, input_shape=None, groups=None):
        in_channels, height, width = _image_input(self, in_features, input_shape)
        n_values = int(np.prod(input_shape))
        if groups is None and out_features != n_values:
            raise ValueError(
                f"CNNSelector scores groups of pixels given their groups; it got none for "
                f"{out_features} scores of images of {n_values} values."
            )
        # One logit per value, or per pixel when groups are given (a group's pixels share
        # every channel in the groups this package makes; other groups read the pixel's
        # logit on every channel).
        out_channels = input_shape[0] if groups is None else 1
        layers = [nn.Unflatten(1, (in_channels, height, width))]
        for units in self.channels:
            layers += [_conv(in_channels, int(units), self.kernel_size),
                       _activation(self.activation)()]
            in_channels = int(units)
        last = nn.Conv2d(in_channels, out_channels, 1)
        layers += [last, nn.Flatten()]
        if self.position_bias:
            layers.append(_PositionBias(out_channels * height * width))
        module = nn.Sequential(*layers)
        _glorot_init(module, self.activation)
        if self.zero_output:
            nn.init.zeros_(last.weight)
            nn.init.zeros_(last.bias)
        if groups is None:
            return module
        return _GroupMean(module, input_shape, groups, out_features)

    def __sklearn_is_fitted__(self):
        return True


class _PositionBias(nn.Module):
    """A learnt logit per position, added to the flat logits (zero at the start)."""

    def __init__(self, n_values):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(n_values))

    def forward(self, x):
        return x + self.bias


class _GroupMean(nn.Module):
    """Per-pixel (or per-token) logits averaged over feature groups: ``(n, n_groups)``."""

    def __init__(self, pixels, input_shape, groups, n_groups):
        super().__init__()
        self.pixels = pixels
        self.channels = int(input_shape[0])
        # On the CPU whatever the default device (sk_sointer.load first builds networks on
        # the meta device, which has no bincount): the counts are read back here.
        groups = torch.as_tensor(np.asarray(groups), dtype=torch.long, device="cpu")
        counts = torch.bincount(groups, minlength=n_groups).float()
        if len(counts) != n_groups or bool((counts == 0).any()):
            raise ValueError(f"groups should number the {n_groups} groups 0 .. {n_groups - 1}.")
        self.register_buffer("groups", groups, persistent=False)
        self.register_buffer("counts", counts, persistent=False)

    def forward(self, x):
        logits = self.pixels(x).repeat(1, self.channels)  # every channel of a pixel
        total = logits.new_zeros(len(logits), len(self.counts))
        return total.index_add_(1, self.groups, logits) / self.counts


def output_feedback_selector(selector, feedback, n_features, n_columns, n_groups,
                             input_shape=None, groups=None):
    """A selector that reads a row and the black box's output on it (MEED's explainer).

    The output's ``n_columns`` go through the ``feedback`` network to one value per input
    value of a table, or per pixel of an image, where they make one more channel (the
    images' pattern of the MEED paper); the ``selector`` factory builds the body that reads
    the row with them, so a convolutional selector sees ``channels + 1`` channels.
    """
    is_image = input_shape is not None and len(input_shape) == 3
    width = int(np.prod(input_shape[1:])) if is_image else n_features
    body = build_network(selector, n_features + width, n_groups, input_shape, groups)
    return _OutputFeedback(body, build_network(feedback, n_columns, width), n_features)


class _OutputFeedback(nn.Module):
    """``body([x, feedback(y)])`` for an input ``[x, y]`` of ``n_features`` + outputs."""

    def __init__(self, body, feedback, n_features):
        super().__init__()
        self.body = body
        self.feedback = feedback
        self.n_features = n_features

    def forward(self, x):
        rows, outputs = x[:, : self.n_features], x[:, self.n_features :]
        return self.body(torch.cat([rows, self.feedback(outputs)], dim=1))


def _image_input(factory, in_features, input_shape):
    """``(channels, height, width)`` of the rows a convolutional factory will read."""
    name = type(factory).__name__
    if input_shape is None or len(input_shape) != 3:
        raise ValueError(
            f"{name} needs images: fit the explainer on X of shape (n_samples, height, width) "
            "or (n_samples, channels, height, width), or give image_shape= for flat rows."
        )
    _, height, width = (int(s) for s in input_shape)
    if in_features % (height * width):
        raise ValueError(
            f"{name} reads rows of {in_features} values as {height} x {width} images; that "
            "is not a whole number of channels."
        )
    if int(factory.kernel_size) < 1 or int(factory.kernel_size) % 2 == 0:
        raise ValueError(f"kernel_size should be a positive odd integer; got {factory.kernel_size!r}.")
    return in_features // (height * width), height, width


def _conv(in_channels, out_channels, kernel_size):
    if out_channels < 1:
        raise ValueError(f"channels should be positive integers; got {out_channels}.")
    return nn.Conv2d(in_channels, out_channels, int(kernel_size), padding=int(kernel_size) // 2)


def _activation(name):
    if name not in _ACTIVATIONS:
        raise ValueError(f"activation should be one of {sorted(_ACTIVATIONS)}; got {name!r}.")
    return _ACTIVATIONS[name]


class TokenCNN(BaseEstimator):
    """Factory of word-CNN judges (approximators, predictors) over token ids.

    The judge gets the ids of a row and its mask side by side (what the masker gives an
    explainer fitted with ``tokens=True``); it embeds the ids, multiplies every embedding
    by its token's mask (a left-out token contributes nothing, whatever its id), and
    reads them with a 1-d convolution, a max over the sequence and dense layers: L2X's
    IMDB approximator.

    Parameters
    ----------
    embedding_dim : int, default=50
    filters : int, default=100
        Channels of the convolution.
    kernel_size : int, default=3
    hidden_units : tuple of int, default=(100,)
        Dense layers after the max over the sequence.
    vocab_size : int, default=None
        Rows of the embedding; default: the largest id seen by ``fit``, plus one.

    Examples
    --------
    >>> import torch
    >>> from sk_sointer import TokenCNN
    >>> net = TokenCNN(filters=4, hidden_units=(8,))(2 * 7, 2, input_shape=(7,), n_tokens=20)
    >>> ids, mask = torch.randint(0, 20, (5, 7)), torch.ones(5, 7)
    >>> net(torch.cat([ids.float(), mask], dim=1)).shape
    torch.Size([5, 2])
    """

    def __init__(self, embedding_dim=50, filters=100, kernel_size=3, hidden_units=(100,),
                 vocab_size=None):
        self.embedding_dim = embedding_dim
        self.filters = filters
        self.kernel_size = kernel_size
        self.hidden_units = hidden_units
        self.vocab_size = vocab_size

    def __call__(self, in_features, out_features, input_shape=None, n_tokens=None):
        length = _sequence_length(self, in_features, input_shape, masked=True)
        embedding = _embedding(self, n_tokens)
        conv = nn.Conv1d(int(self.embedding_dim), int(self.filters), int(self.kernel_size),
                         padding=int(self.kernel_size) // 2)
        head = MLP(self.hidden_units)(int(self.filters), out_features)
        return _TokenJudge(embedding, conv, head, length)

    def __sklearn_is_fitted__(self):
        return True


class TokenCNNSelector(BaseEstimator):
    """Factory of selectors over token ids: one score per token (or per group of tokens).

    L2X's IMDB selector: the ids are embedded, a 1-d convolution reads them, and each
    token's features (two more convolutions) are joined with the sequence's (a max over it,
    then a dense layer) before a 1 x 1 convolution gives the token's logit. Padding (id 0)
    gets a logit far below any other: it is never selected while a row has a token left.

    Parameters
    ----------
    embedding_dim : int, default=50
    filters : int, default=100
    kernel_size : int, default=3
    vocab_size : int, default=None
        Rows of the embedding; default: the largest id seen by ``fit``, plus one.
    zero_output : bool, default=False
        Start the last layer at zero, every token with the same logit (see :class:`MLP`).
        Off by default: until the zero layer has grown, the layers below it get no gradient
        but the weight decay's, which (under Adam) shrank them to zero first on a task
        where the selection had to be learnt together with the embeddings.

    Examples
    --------
    >>> import torch
    >>> from sk_sointer import TokenCNNSelector
    >>> net = TokenCNNSelector(filters=4)(7, 7, input_shape=(7,), n_tokens=20)
    >>> net(torch.randint(0, 20, (5, 7)).float()).shape
    torch.Size([5, 7])
    """

    def __init__(self, embedding_dim=50, filters=100, kernel_size=3, vocab_size=None,
                 zero_output=False):
        self.embedding_dim = embedding_dim
        self.filters = filters
        self.kernel_size = kernel_size
        self.vocab_size = vocab_size
        self.zero_output = zero_output

    def __call__(self, in_features, out_features, input_shape=None, n_tokens=None, groups=None):
        length = _sequence_length(self, in_features, input_shape, masked=False)
        module = _TokenSelector(_embedding(self, n_tokens), int(self.embedding_dim),
                                int(self.filters), int(self.kernel_size), length)
        if self.zero_output:
            nn.init.zeros_(module.out.weight)
            nn.init.zeros_(module.out.bias)
        if groups is None:
            if out_features != length:
                raise ValueError(f"TokenCNNSelector scores {length} tokens; {out_features} "
                                 "scores were asked for without groups.")
            return module
        return _GroupMean(module, (1,), groups, out_features)

    def __sklearn_is_fitted__(self):
        return True


# Far below a trained selector's logits, yet finite for every relaxation (sigmoid(-30) is
# 1e-13; a softmax over it and a logit of 0 gives it 1e-13 too).
_PADDING_LOGIT = -30.0


class _TokenJudge(nn.Module):
    def __init__(self, embedding, conv, head, length):
        super().__init__()
        self.embedding, self.conv, self.head, self.length = embedding, conv, head, length

    def forward(self, x):
        ids, mask = x[:, : self.length].long(), x[:, self.length :]
        embedded = self.embedding(ids) * mask.unsqueeze(-1)  # (n, length, dim)
        features = torch.relu(self.conv(embedded.transpose(1, 2)))
        return self.head(features.amax(dim=2))


class _TokenSelector(nn.Module):
    def __init__(self, embedding, dim, filters, kernel_size, length):
        super().__init__()
        pad = kernel_size // 2
        self.embedding, self.length = embedding, length
        self.first = nn.Conv1d(dim, filters, kernel_size, padding=pad)
        self.local = nn.Sequential(nn.Conv1d(filters, filters, kernel_size, padding=pad), nn.ReLU(),
                                   nn.Conv1d(filters, filters, kernel_size, padding=pad), nn.ReLU())
        self.context = nn.Linear(filters, filters)
        self.joint = nn.Conv1d(2 * filters, filters, 1)
        self.out = nn.Conv1d(filters, 1, 1)

    def forward(self, x):
        ids = x[:, : self.length].long()
        first = torch.relu(self.first(self.embedding(ids).transpose(1, 2)))  # (n, filters, L)
        context = torch.relu(self.context(first.amax(dim=2)))
        joined = torch.cat([self.local(first), context.unsqueeze(2).expand_as(first)], dim=1)
        logits = self.out(torch.relu(self.joint(joined))).squeeze(1)
        # Padding is not a token to select: its logit sits far below any other, so that a
        # row keeps its k most relied-on *tokens* (padding only when it has fewer than k).
        return logits.masked_fill(ids == 0, _PADDING_LOGIT)


def _sequence_length(factory, in_features, input_shape, *, masked):
    name = type(factory).__name__
    if input_shape is None or len(input_shape) != 1:
        raise ValueError(f"{name} reads sequences of token ids; got rows of shape {input_shape}.")
    length = int(input_shape[0])
    if in_features != length * (2 if masked else 1):
        what = "ids and mask" if masked else "ids"
        raise ValueError(
            f"{name} expects rows of {what} ({length * (2 if masked else 1)} values); got "
            f"{in_features}. Fit the explainer with tokens=True."
        )
    if int(factory.kernel_size) < 1 or int(factory.kernel_size) % 2 == 0:
        raise ValueError(f"kernel_size should be a positive odd integer; got {factory.kernel_size!r}.")
    return length


def _embedding(factory, n_tokens):
    size = factory.vocab_size if factory.vocab_size is not None else n_tokens
    if size is None:
        raise ValueError(f"{type(factory).__name__} needs vocab_size, or an explainer fitted "
                         "with tokens=True to give it the number of token ids.")
    if n_tokens is not None and int(size) < n_tokens:
        raise ValueError(f"vocab_size={size} is smaller than the token ids seen in fit (up to "
                         f"{n_tokens - 1}).")
    return nn.Embedding(int(size), int(factory.embedding_dim), padding_idx=0)


class EnergyMLP(BaseEstimator):
    """Factory of energy networks ``E(x, y)`` over an input row and an output configuration.

    The configuration arrives encoded as features ``phi(y)`` (one column per value of each
    output, and products of those of every pair of outputs: see
    :class:`~sk_sointer.EnergyNet`). The energy has the form of a Deep Value Network
    (Gygli et al., 2017) with input-dependent pair terms:

    .. math:: E(x, y) = -\\langle a(x), \\phi(y) \\rangle - g(\\phi(y)),

    where ``a`` is a perceptron of the row, one coefficient per encoding column, so that
    the row decides both how much each output value and how much each pair of values is
    worth, and ``g``, a perceptron of the configuration alone, scores label interactions
    that hold for every row (DVN's global term). Lower energy means a more likely
    configuration. Being linear in ``phi(y)`` given ``a(x)``, the energies of all the
    configurations of a batch are one matrix product.

    Parameters
    ----------
    hidden_units : tuple of int, default=(100, 100)
        Hidden layers of ``a(x)``.

    activation : str, default="relu"
        Non-linearity of ``a(x)`` (see :class:`MLP`).

    global_units : int, default=16
        Hidden units of ``g`` (softplus, as in DVN); 0 leaves the global term out.

    Examples
    --------
    >>> import torch
    >>> from sk_sointer import EnergyMLP
    >>> energy = EnergyMLP(hidden_units=(8,))(in_features=3, out_features=5)
    >>> energy(torch.zeros(4, 3), torch.ones(4, 5)).shape
    torch.Size([4])
    >>> energy.table(torch.zeros(4, 3), torch.ones(6, 5)).shape
    torch.Size([4, 6])
    """

    def __init__(self, hidden_units=(100, 100), activation="relu", global_units=16):
        self.hidden_units = hidden_units
        self.activation = activation
        self.global_units = global_units

    def __call__(self, in_features, out_features, input_shape=None):
        if int(self.global_units) < 0:
            raise ValueError(f"global_units should be >= 0; got {self.global_units!r}.")
        local = MLP(self.hidden_units, activation=self.activation)(in_features, out_features)
        interaction = None
        if self.global_units:
            interaction = nn.Sequential(
                nn.Linear(out_features, int(self.global_units)),
                nn.Softplus(),
                nn.Linear(int(self.global_units), 1),
            )
        return _Energy(local, interaction)

    def __sklearn_is_fitted__(self):
        return True


class _Energy(nn.Module):
    """``E(x, y) = -<a(x), phi(y)> - g(phi(y))`` (see :class:`EnergyMLP`)."""

    def __init__(self, local, interaction):
        super().__init__()
        self.local = local
        self.interaction = interaction

    def _global(self, phi):
        if self.interaction is None:
            return phi.new_zeros(phi.shape[:-1])
        return self.interaction(phi).squeeze(-1)

    def forward(self, x, phi):
        """Energies of one configuration per row (``phi`` of shape ``(B, F)``, gives
        ``(B,)``) or of several per row (``(B, C, F)``, gives ``(B, C)``)."""
        coefficients = self.local(x)
        if phi.dim() == 3:
            coefficients = coefficients.unsqueeze(1)
        return -(coefficients * phi).sum(-1) - self._global(phi)

    def table(self, x, phi):
        """Energies of every row with every configuration of a shared table ``phi`` of
        shape ``(K, F)``: ``(B, K)``."""
        return -self.local(x) @ phi.T - self._global(phi)

    def flip_energies(self, x, phi):
        """Energies of the 0/1 encodings ``phi`` (``(B, F)``) and of every encoding one
        column away (column ``j`` flipped): ``(B,)`` and ``(B, F)``.

        Both terms are cheap to move by one column: the local term is linear in ``phi``,
        and the global term's first layer too, so a flip shifts its pre-activations by one
        column of its weights; ``(B, F, global_units)`` values instead of the ``(B, F, F)``
        flipped encodings."""
        coefficients = self.local(x)
        change = 1.0 - 2.0 * phi  # what a flip adds to each column
        local = -(coefficients * phi).sum(-1)
        flipped = local.unsqueeze(1) - coefficients * change
        if self.interaction is None:
            return local, flipped
        first, activation, last = self.interaction
        hidden = first(phi)
        moved = hidden.unsqueeze(1) + change.unsqueeze(2) * first.weight.T
        return (local - last(activation(hidden)).squeeze(-1),
                flipped - last(activation(moved)).squeeze(-1))
