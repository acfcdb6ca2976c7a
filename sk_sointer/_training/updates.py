"""A training step as a list of :class:`Update` s, and the epochs that run it.

:class:`Update` is one optimisation of a step: a loss of a batch's tensors, the optimizer
that descends it and the modules it moves. :class:`UpdateSteps`, mixed into the package's
skorch nets, runs a step's updates in order (or replays them captured in a CUDA graph, see
:mod:`~sk_sointer._training.graphs`), steps each optimizer on the parameters of its own
modules only, and keeps the step's numbers on the device until the epoch ends.
"""

from typing import Any, Callable, NamedTuple

import torch
from skorch.dataset import get_len, unpack_data
from skorch.utils import TeeGenerator, to_tensor

from .._utils import set_mode
from .graphs import reads_gradients, step_graphs


class Update(NamedTuple):
    """One optimisation of a training step.

    ``loss(X, targets)`` returns ``(objective, record)``: the objective that ``optimizer``
    (or each of a tuple of optimizers) descends on the parameters of ``modules`` alone, and
    what the step reports (skorch's ``{"loss": ..., "y_pred": ...}``, detached, optionally
    with ``"records"``: more device scalars for the history), or None. ``training`` and
    ``evaluation`` are the modules put in each mode before the loss runs.

    A loss is tensor work on the device and nothing else: no copy to or from the host, no
    Python number read off a tensor, no branch on a tensor's value. It is what
    ``torch.compile(fullgraph=True)`` compiles whole and what a CUDA graph can capture.
    """

    loss: Callable
    optimizer: Any
    modules: tuple
    training: tuple = ()
    evaluation: tuple = ()
    # False for a loss that asks the host (the black box queried in the step): the step
    # then runs eagerly on CUDA instead of in a captured graph.
    capturable: bool = True
    # The Python values the loss reads that change during a fit (MEED's epoch): a
    # captured graph holds them as they were at capture, so each value gets its own.
    constants: tuple = ()


class UpdateSteps:
    """Mixed into the package's skorch nets: a training step made of :class:`Update` s, and
    epochs that leave the step's numbers on the device.

    A net lists its step's updates, in order, in its ``updates()`` (a list of
    :class:`Update`, read again at every step, so that they may depend on the epoch);
    :meth:`train_step` runs them in order, or on CUDA replays them captured in a CUDA
    graph (:func:`~sk_sointer._training.graphs.step_graphs`, with ``cuda_graphs``). An epoch sums nothing
    on the host: each batch's recorded values stay device tensors in the history until the
    epoch ends, and are then copied to the host at once (one synchronisation an epoch, not
    one a batch), as the floats skorch would have recorded.
    """

    def state_modules(self):
        """The net's torch modules by name, as skorch registered them (the selector
        ``module``, the judges, the criterion and any module a method adds), each stored
        as the attribute of its name with a trailing ``_``: the net's trained state."""
        return {name: getattr(self, name + "_") for name in [*self._modules, *self._criteria]}

    def batch_tensors(self, batch):
        """``(X, targets)`` of a batch as tensors on the net's device."""
        X, targets = unpack_data(batch)
        return to_tensor(X, device=self.device), to_tensor(targets, device=self.device)

    def train_step(self, batch, **fit_params):
        X, targets = self.batch_tensors(batch)
        updates = self.updates()
        graphs = step_graphs(self, updates, X, targets)
        if graphs is not None:
            return graphs.step(self, updates, X, targets)
        return self.run_updates(updates, X, targets, batch=batch)

    def run_updates(self, updates, X, targets, *, batch=None):
        """Run a step's updates in order on a batch's tensors; returns the step's record
        (the last update's that has one)."""
        record = None
        for update in updates:
            out = self.run_update(update, X, targets, batch=batch)
            record = out if out is not None else record
        return record

    def run_update(self, update, X, targets, *, batch=None):
        """Run one :class:`Update` on a batch's tensors; returns its record."""
        for module in update.training:
            set_mode(module, True)
        for module in update.evaluation:
            set_mode(module, False)
        objective, out = update.loss(X, targets)
        self.step(update.optimizer, objective, *update.modules, batch=batch)
        return out

    def step(self, optimizer, loss, *modules, batch=None):
        """Step ``optimizer`` (or each of a tuple of optimizers) on the gradient of ``loss``
        with respect to the parameters of ``modules`` only: other modules' ``.grad`` stay
        untouched, so a loss meant for one network can never train another.

        Callbacks that act on the gradients (``on_grad_computed``) get them in between, as
        in skorch: a ``GradientNormClipping`` clips what the optimizer then applies."""
        self.set_grads(loss, modules)
        if reads_gradients(self):
            self.notify("on_grad_computed", batch=batch, training=True,
                        named_parameters=TeeGenerator(_named_parameters(modules)))
        _step_each(optimizer)

    @staticmethod
    def set_grads(loss, modules):
        """Set the ``.grad`` of the parameters of ``modules`` to the gradient of ``loss``."""
        params = [p for module in modules for p in module.parameters() if p.requires_grad]
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        for param, grad in zip(params, grads):
            param.grad = grad  # replaces, so nothing from a previous step accumulates

    def fit_loop(self, X, y=None, epochs=None, **fit_params):
        # Captured steps serve one training loop: the next one (a refit, a partial_fit)
        # may hold new tensors where these graphs read old ones.
        self.__dict__.pop("_step_graphs_", None)
        try:
            return super().fit_loop(X, y, epochs=epochs, **fit_params)
        finally:
            self.__dict__.pop("_step_graphs_", None)

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_step_graphs_", None)  # CUDA graphs are rebuilt by the next fit
        return state

    def run_single_epoch(self, iterator, training, prefix, step_fn, **fit_params):
        """skorch's epoch, whose batch rows hold the step's device tensors until the epoch
        ends; then one copy turns them all into floats (see the class)."""
        if iterator is None:
            return
        n_batches = 0
        for batch in iterator:
            self.notify("on_batch_begin", batch=batch, training=training)
            step = step_fn(batch, **fit_params)
            self.history.record_batch(prefix + "_loss", step["loss"].detach())
            self.history.record_batch(
                prefix + "_batch_size",
                get_len(batch[0]) if isinstance(batch, (tuple, list)) else get_len(batch))
            for name, value in step.get("records", {}).items():
                self.history.record_batch(name, value.detach())
            self.notify("on_batch_end", batch=batch, training=training, **step)
            n_batches += 1
        self.history.record(prefix + "_batch_count", n_batches)
        _batch_values_to_host(self.history[-1]["batches"])


def _named_parameters(modules):
    for index, module in enumerate(modules):
        yield from module.named_parameters(prefix=str(index))


def _batch_values_to_host(batches):
    """Replace every one-value tensor in the batch rows by its float, in one copy (what a
    callback records there otherwise is left as it is)."""
    places = [(row, name) for row in batches for name, value in row.items()
              if isinstance(value, torch.Tensor) and value.numel() == 1]
    if not places:
        return
    values = torch.stack([row[name].reshape(()).float() for row, name in places]).tolist()
    for (row, name), value in zip(places, values):
        row[name] = value


def _step_each(optimizer):
    for one in optimizer if isinstance(optimizer, tuple) else (optimizer,):
        one.step()
