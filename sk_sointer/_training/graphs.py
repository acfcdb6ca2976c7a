"""Training steps captured in CUDA graphs and replayed.

A method's training step is a list of :class:`~sk_sointer._training.updates.Update` s whose
losses do device work only. On CUDA, :func:`step_graphs` captures such a step once per
batch size and replays it for every later batch (:class:`StepGraphs`): one launch for the
forward pass, the backward pass and every optimizer step, where an eager step launches
dozens of kernels and waits on the host between them. What the capture needs of CUDA is
in one place, :data:`_CUDA`.
"""

import warnings

import torch
from skorch.callbacks import Callback

# Eager steps of a batch shape before its step is captured: they run on a side stream, as
# CUDA graphs ask, and build what the step creates once (optimizer state, device copies).
_WARMUP_STEPS = 3


def step_graphs(net, updates, X, targets):
    """The net's :class:`StepGraphs` when this step runs captured: on CUDA, with
    ``cuda_graphs`` on, every update capturable and every optimizer able to step in a
    graph, and no callback reading the gradients between backward and step. Else None
    (eager); a step that could have run captured but cannot says why, once a fit."""
    if not (getattr(net, "cuda_graphs", False) and _CUDA.available(X)):
        return None
    graphs = net.__dict__.get("_step_graphs_")
    if graphs is None or graphs.stale(net):
        graphs = net.__dict__["_step_graphs_"] = StepGraphs(net)
    reason = graphs.refusal(net, updates)
    if reason is None:
        return graphs
    if reason not in graphs.warned:
        graphs.warned.add(reason)
        warnings.warn(f"{type(net).__name__}'s training step runs eagerly on CUDA, not "
                      f"captured in a CUDA graph: {reason} (cuda_graphs=False silences "
                      "this).", UserWarning, stacklevel=4)
    return None


def reads_gradients(net):
    """The names of the net's callbacks that act on the gradients (that override
    ``on_grad_computed``): a step notifies them between its backward pass and its
    optimizer step, which a captured step cannot."""
    return [type(cb).__name__ for _, cb in getattr(net, "callbacks_", [])
            if type(cb).on_grad_computed is not Callback.on_grad_computed]


def _optimizers(updates):
    for update in updates:
        yield from (update.optimizer if isinstance(update.optimizer, tuple)
                    else (update.optimizer,))


class StepGraphs:
    """A net's training steps captured in CUDA graphs, one per step (its updates' losses)
    and batch shape, and replayed.

    A step of a new shape first runs eagerly :data:`_WARMUP_STEPS` times on a side stream,
    then is captured once, with its own input tensors, and from then on every batch of
    that shape is copied into them and the graph replayed: one launch for the whole step
    (forward, backward and every optimizer step). Before the first capture the
    optimizers are made capturable (their steps counted on the device, their learning
    rates device tensors, which :func:`set_lr` then updates in place, so that a schedule
    still reaches the graph). A capture that fails leaves that step eager for the rest
    of the fit, with a warning that says why.
    """

    def __init__(self, net):
        # The net's optimizers are found by name once: looking through every attribute
        # of a skorch net at every step costs more than a captured step's launch.
        self.optimizer_names = [name for name, value in vars(net).items()
                                if name.endswith("optimizer_")
                                and isinstance(value, torch.optim.Optimizer)]
        self.owner = _graph_owner(net, self.optimizer_names)
        self.graphs, self.warmed, self.failed, self.warned = {}, {}, set(), set()
        # Each optimizer group's learning-rate tensor, the one its captured steps read.
        self.lrs = []

    def stale(self, net):
        """Whether the net's modules or optimizers are not those these graphs captured (a
        new fit, new parameters)."""
        return self.owner != _graph_owner(net, self.optimizer_names)

    def refusal(self, net, updates):
        """Why this step cannot be captured, or None."""
        if not all(update.capturable for update in updates):
            return "the step queries the black box on the host"
        for optimizer in _optimizers(updates):
            if "capturable" not in optimizer.defaults:
                return f"{type(optimizer).__name__} has no capturable mode"
        reading = reads_gradients(net)
        if reading:
            return f"the callback {reading[0]} reads the gradients in every step"
        return None

    def step(self, net, updates, X, targets):
        key = (tuple((_update_name(u), u.constants) for u in updates), tuple(X.shape),
               tuple(targets.shape))
        graph = self.graphs.get(key)
        if graph is not None and graph.settings != _settings(updates):
            # An optimizer setting the graph holds as a number changed (a callback set the
            # weight decay, say): capture the step again, after new warm-up steps.
            del self.graphs[key]
            self.warmed[key] = 0
            graph = None
        if graph is not None:
            self.restore_lrs()
            return graph.replay(X, targets)
        if key in self.failed:
            return net.run_updates(updates, X, targets)
        self.warmed[key] = self.warmed.get(key, 0) + 1
        if self.warmed[key] <= _WARMUP_STEPS:
            for optimizer in _optimizers(updates):
                self.make_capturable(optimizer, X.device)
            return _CUDA.warm_up(X.device, lambda: net.run_updates(updates, X, targets))
        self.restore_lrs()
        try:
            graph = _StepGraph(net, updates, X, targets)
        except Exception as error:  # noqa: BLE001 - any failure falls back, with its reason
            self.failed.add(key)
            reason = f"capturing it failed ({type(error).__name__}: {error})"
            warnings.warn(f"{type(net).__name__}'s training step runs eagerly on CUDA: "
                          f"{reason}.", UserWarning, stacklevel=4)
            return net.run_updates(updates, X, targets)
        self.graphs[key] = graph
        return graph.replay(X, targets)

    def make_capturable(self, optimizer, device):
        """Make ``optimizer`` capturable (:data:`_CUDA`) and keep its groups' new
        learning-rate tensors, the ones its captured steps will read."""
        known = {id(group) for group, _ in self.lrs}
        _CUDA.make_capturable(optimizer, device)
        self.lrs += [(group, group["lr"]) for group in optimizer.param_groups
                     if id(group) not in known and isinstance(group["lr"], torch.Tensor)]

    def restore_lrs(self):
        """Bring back each group's learning-rate tensor where a callback or ``set_params``
        replaced it (skorch sets a number), with the new value written into it: a captured
        step reads that tensor only, and would go on with the old rate."""
        for group, lr in self.lrs:
            if group["lr"] is not lr:
                if isinstance(group["lr"], torch.Tensor):
                    lr.copy_(group["lr"])
                else:
                    lr.fill_(float(group["lr"]))
                group["lr"] = lr


class _StepGraph:
    """One step captured for one batch shape: its input tensors, the graph, and the
    step's record as the graph's outputs."""

    def __init__(self, net, updates, X, targets):
        self.X, self.targets = X.clone(), targets.clone()
        self.settings = _settings(updates)
        self.graph, self.record = _CUDA.capture(
            X.device, lambda: net.run_updates(updates, self.X, self.targets))

    def replay(self, X, targets):
        """The step on a batch: copied in, replayed; the record cloned out, since the next
        replay overwrites the graph's outputs (an epoch keeps every batch's)."""
        self.X.copy_(X)
        self.targets.copy_(targets)
        self.graph.replay()
        return _cloned(self.record)


def _cloned(value):
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, dict):
        return {name: _cloned(item) for name, item in value.items()}
    return value


def _settings(updates):
    """The optimizers' settings that a captured step holds as numbers: every group's
    options but its parameters and its learning rate (a tensor the step reads)."""
    return [[(name, value) for name, value in group.items()
             if name not in ("params", "lr") and not isinstance(value, torch.Tensor)]
            for optimizer in _optimizers(updates) for group in optimizer.param_groups]


def _graph_owner(net, optimizer_names):
    """What captured graphs are bound to: the ids of the net's modules and of its
    optimizers (the attributes ``optimizer_names``)."""
    optimizers = [getattr(net, name, None) for name in optimizer_names]
    modules = [m for m in net.state_modules().values() if isinstance(m, torch.nn.Module)]
    return tuple(map(id, modules + optimizers))


def _update_name(update):
    # Not getattr's default: the repr of a bound loss is the repr of its whole skorch net,
    # made at every step (0.15 s of a 0.78 s captured L2X fit on an H200, under cProfile).
    name = getattr(update.loss, "__qualname__", None)
    return name if name is not None else repr(update.loss)


class _CudaGraphs:
    """What :class:`StepGraphs` asks of CUDA, in one place (the tests put a stand-in
    here to run the capture's bookkeeping on the CPU)."""

    @staticmethod
    def available(X):
        return X.is_cuda

    @staticmethod
    def make_capturable(optimizer, device):
        """Let ``optimizer`` step inside a CUDA graph: its ``capturable`` flag on, its
        step counts on ``device`` and its learning rates device tensors (a float would be
        frozen into the graph at capture)."""
        for group in optimizer.param_groups:
            group["capturable"] = True
            if not isinstance(group["lr"], torch.Tensor):
                group["lr"] = torch.tensor(float(group["lr"]), device=device)
        for state in optimizer.state.values():
            step = state.get("step")
            if isinstance(step, torch.Tensor) and step.device != device:
                state["step"] = step.to(device)

    @staticmethod
    def warm_up(device, run):
        """``run()`` on a side stream, as steps before a capture must be."""
        side = torch.cuda.Stream(device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side), warnings.catch_warnings():
            # torch warns, once an optimizer, that a capturable one stepping outside a
            # graph is slower: these steps are the capture's warm-up, nothing to act on.
            warnings.filterwarnings("ignore", message="This instance was constructed with "
                                    "capturable=True")
            out = run()
        torch.cuda.current_stream(device).wait_stream(side)
        return out

    @staticmethod
    def capture(device, run):
        """``(graph, outputs)``: the kernels of ``run()`` on ``device`` recorded, not run;
        ``replay`` runs them and overwrites the outputs."""
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.device(device):
            try:
                with torch.cuda.graph(graph):
                    out = run()
            except Exception:
                _CudaGraphs.end_generator_capture(device)
                raise
        return graph, out

    @staticmethod
    def end_generator_capture(device):
        """Take ``device``'s random generator out of capture after a capture that failed.

        A capture that fails ends before torch tells the generator it is over, and every
        later random draw outside a graph then fails ("Offset increment outside graph
        capture"), the eager fallback's first. A capture that ends cleanly tells it: one
        of a single fill is made and dropped."""
        with torch.cuda.graph(torch.cuda.CUDAGraph()):
            torch.empty(1, device=device).fill_(0.0)


_CUDA = _CudaGraphs()


def set_lr(group, lr):
    """Set an optimizer group's learning rate, in place when it is a device tensor (so
    that a captured step reads the new value)."""
    if isinstance(group["lr"], torch.Tensor):
        group["lr"].fill_(lr)
    else:
        group["lr"] = lr
