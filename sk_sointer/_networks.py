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
        if isinstance(layer, nn.Linear):
            if activation == "selu":
                nn.init.normal_(layer.weight, std=1.0 / math.sqrt(layer.in_features))
            else:
                nn.init.xavier_uniform_(layer.weight)
            nn.init.zeros_(layer.bias)


def build_network(factory, in_features, out_features, input_shape=None):
    """Call a network factory; ``input_shape`` is passed only to factories that accept it,
    so plain ``(in_features, out_features)`` callables keep working."""
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # builtins without a signature
        parameters = {}
    takes_shape = "input_shape" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )
    if takes_shape:
        module = factory(in_features=in_features, out_features=out_features, input_shape=input_shape)
    else:
        module = factory(in_features=in_features, out_features=out_features)
    if not isinstance(module, torch.nn.Module):
        raise TypeError(
            f"A network factory should return a torch.nn.Module; {factory!r} returned "
            f"{type(module).__name__}."
        )
    return module


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
