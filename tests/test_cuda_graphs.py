"""The captured training step: its bookkeeping on the CPU through a stand-in for CUDA,
and the real thing where CUDA is present.

The stand-in records a step's Python call where CUDA records its kernels, and replays it
by running the call again and copying the new outputs into the ones returned at capture,
as a CUDA graph overwrites its outputs. What it checks: a step runs eagerly a few times,
is captured once per step and batch size, and every later batch of that size is copied
into the graph's inputs and replayed, with its own record; learning-rate schedules reach
a captured step; a step that cannot be captured runs eagerly and says why.
"""

import pickle
import warnings

import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning
from skorch.callbacks import Callback, GradientNormClipping
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

import sk_sointer._training.graphs as graphs_module
from sk_sointer import L2XExplainer, RealXExplainer, SOInterExplainer, EnergyNet
from sk_sointer.base import BaseExplainer


class FakeGraph:
    def __init__(self, run, out):
        self.run, self.out = run, out
        self.replays = 0

    def replay(self):
        self.replays += 1
        _copy_into(self.out, self.run())


def _copy_into(static, new):
    if isinstance(static, torch.Tensor):
        static.copy_(new)
    elif isinstance(static, dict):
        for name in static:
            _copy_into(static[name], new[name])


class FakeCuda:
    """Stands in for :class:`~sk_sointer._training.graphs._CudaGraphs` on the CPU."""

    def __init__(self, fail=False):
        self.fail = fail
        self.graphs, self.warm_ups = [], 0

    def available(self, X):
        return True

    def make_capturable(self, optimizer, device):
        for group in optimizer.param_groups:  # capturable itself needs CUDA
            if not isinstance(group["lr"], torch.Tensor):
                group["lr"] = torch.tensor(float(group["lr"]), device=device)

    def warm_up(self, device, run):
        self.warm_ups += 1
        return run()

    def capture(self, device, run):
        if self.fail:
            raise RuntimeError("operation not permitted when stream is capturing")
        out = run()
        self.graphs.append(FakeGraph(run, out))
        return self.graphs[-1], out


class OpGraph:
    """A step as a CUDA graph holds it, on the CPU: the aten operations of one call,
    recorded with the very tensors they read and wrote, and replayed by running those
    operations again (no Python of the step runs), their new outputs written into the
    recorded ones. Recording runs the step; the tensors it wrote and the random state are
    then put back, since a CUDA capture records its kernels without running them."""

    def __init__(self, run):
        recorder = _OpRecorder()
        random_state = torch.get_rng_state()
        with recorder:
            self.out = run()
        with torch.no_grad():
            for tensor, before in recorder.written.values():
                tensor.copy_(before)
        torch.set_rng_state(random_state)
        self.ops, self.replays = recorder.ops, 0

    def replay(self):
        self.replays += 1
        with torch.no_grad():
            for func, args, kwargs, out in self.ops:
                if _is_view(func):
                    continue  # a view recorded at capture still aliases what it viewed
                new = func(*args, **kwargs)
                for old, fresh in zip(tree_flatten(out)[0], tree_flatten(new)[0]):
                    if isinstance(old, torch.Tensor) and fresh is not old:
                        old.copy_(fresh)


class _OpRecorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops, self.written = [], {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        schema = func._schema.arguments
        writes = [value for arg, value in zip(schema, args)
                  if arg.alias_info is not None and arg.alias_info.is_write]
        writes += [value for name, value in kwargs.items() if name == "out"]
        for tensor in tree_flatten(writes)[0]:
            if isinstance(tensor, torch.Tensor) and id(tensor) not in self.written:
                self.written[id(tensor)] = (tensor, tensor.detach().clone())
        out = func(*args, **kwargs)
        self.ops.append((func, args, kwargs, out))
        return out


def _is_view(func):
    returns = func._schema.returns
    return bool(returns) and all(r.alias_info is not None and not r.alias_info.is_write
                                 for r in returns)


def step_state(net):
    """The tensors a training step may change: every module's parameters and buffers, and
    every optimizer's state and learning-rate tensors, by name."""
    state = {f"{name}.{key}": value
             for name, module in net.state_modules().items() if isinstance(module, torch.nn.Module)
             for key, value in module.state_dict(keep_vars=True).items()}
    for attribute, optimizer in vars(net).items():
        if attribute.endswith("optimizer_") and isinstance(optimizer, torch.optim.Optimizer):
            for index, values in enumerate(optimizer.state.values()):
                state.update({f"{attribute}.{index}.{key}": value for key, value in values.items()
                              if isinstance(value, torch.Tensor)})
    return state


def replayed_against_eager(net, batches, capture, sync=lambda: None):
    """``(moved, differences)`` for two batches of one shape: the step is captured by
    ``capture(run)`` (a graph with ``replay``) on the first, then run eagerly on the second,
    and replayed on the second (copied into the capture's inputs) from the same state and
    random state. ``moved``: how far the eager step moved the floating-point state;
    ``differences``: the largest difference between the two, per tensor of
    :func:`step_state`."""
    (X, targets), (X_next, targets_next) = batches
    updates = net.updates()
    for optimizer in graphs_module._optimizers(updates):
        graphs_module._CUDA.make_capturable(optimizer, X.device)
    net.run_updates(updates, X, targets)  # the optimizers' state exists from here on
    sync()
    state = step_state(net)
    before = {name: value.detach().clone() for name, value in state.items()}
    random_states = [torch.get_rng_state()] + (
        [torch.cuda.get_rng_state(X.device)] if X.is_cuda else [])

    def reset():
        with torch.no_grad():
            for name, value in state.items():
                value.copy_(before[name])
        torch.set_rng_state(random_states[0])
        if X.is_cuda:
            torch.cuda.set_rng_state(random_states[1], X.device)
        sync()

    X_static, targets_static = X.clone(), targets.clone()
    graph = capture(lambda: net.run_updates(updates, X_static, targets_static))
    reset()
    net.run_updates(updates, X_next, targets_next)
    sync()
    eager = {name: value.detach().clone() for name, value in state.items()}
    reset()
    X_static.copy_(X_next)
    targets_static.copy_(targets_next)
    graph.replay()
    sync()
    moved = max(float((eager[name] - before[name]).abs().max()) for name in state
                if before[name].is_floating_point() and not name.endswith(".step"))
    return moved, {name: float((eager[name].double() - value.detach().double()).abs().max())
                   for name, value in state.items()}


@pytest.fixture
def fake(monkeypatch):
    cuda = FakeCuda()
    monkeypatch.setattr(graphs_module, "_CUDA", cuda)
    # These tests count the captures, warm-ups and batches of the method's own training:
    # the judge's last phase on the final masks (a net of its own) is left out of them.
    monkeypatch.setattr(BaseExplainer, "_fit_judge_to_masks", lambda self, *args: None)
    return cuda


@pytest.fixture(scope="module")
def rows():
    rng = np.random.RandomState(0)
    X = np.column_stack([rng.uniform(18, 90, 500), rng.randn(500, 4)]).astype(np.float32)
    return X, ((X[:, 0] > 50) ^ (X[:, 1] > 0)).astype(int)


def test_a_step_is_warmed_captured_once_per_batch_size_and_replayed(fake, rows):
    X, y = rows
    explainer = L2XExplainer(k=2, max_epochs=8, batch_size=200, refine=None, device="cpu",
                             random_state=0).fit(X, y)
    # 500 rows: two batches of 200 and one of 100 an epoch; each size warms up 3 times.
    assert fake.warm_ups == 6
    assert len(fake.graphs) == 2
    assert [graph.replays for graph in fake.graphs] == [16 - 3, 8 - 3]
    losses = [row["train_loss"] for epoch in explainer.net_.history for row in epoch["batches"]]
    # Each batch keeps its own loss (the graph's output is cloned out before the next).
    assert len(losses) == 24 and len(set(losses)) == 24
    assert all(isinstance(loss, float) and np.isfinite(loss) for loss in losses)
    assert losses[-1] < losses[0]
    # The graphs served that fit alone, and never travel with the net.
    assert "_step_graphs_" not in explainer.net_.__dict__
    assert "_step_graphs_" not in pickle.loads(pickle.dumps(explainer.net_)).__dict__


def test_a_learning_rate_schedule_reaches_the_captured_step(fake, rows):
    X, y = rows
    explainer = RealXExplainer(max_epochs=8, predictor_epochs=5, batch_size=250, refine=None,
                               device="cpu", random_state=0).fit(X, y)
    group = explainer.net_.predictor_optimizer_.param_groups[0]
    # The predictor's cosine decay after epoch 5 of 5, written into the device tensor.
    assert isinstance(group["lr"], torch.Tensor)
    assert float(group["lr"]) == pytest.approx(group["base_lr"] * cosine_factor_of(5, 5))
    # The predictor-only step and the selector step are captured apart.
    assert len(fake.graphs) == 2


class SetsLearningRate(Callback):
    """Sets the learning rate to a number at an epoch, as skorch's ``set_params`` and
    schedulers of its own do."""

    def __init__(self, epoch, lr):
        self.epoch, self.lr = epoch, lr

    def on_epoch_begin(self, net, **kwargs):
        if len(net.history) == self.epoch:
            group = net.optimizer_.param_groups[0]
            self.captured = group["lr"]
            group["lr"] = self.lr


def test_a_learning_rate_set_as_a_number_reaches_the_captured_step(fake, rows):
    X, y = rows
    setter = SetsLearningRate(epoch=4, lr=0.5)
    explainer = L2XExplainer(k=2, max_epochs=6, batch_size=250, refine=None, device="cpu",
                             random_state=0, callbacks=[setter]).fit(X, y)
    assert len(fake.graphs) == 1 and fake.graphs[0].replays > 0
    # The graph's tensor (the one it reads) is back in the group, with the new value.
    assert isinstance(setter.captured, torch.Tensor)
    assert explainer.net_.optimizer_.param_groups[0]["lr"] is setter.captured
    assert float(setter.captured) == 0.5


class SetsWeightDecay(Callback):
    def on_epoch_begin(self, net, **kwargs):
        if len(net.history) == 4:
            net.optimizer_.param_groups[0]["weight_decay"] = 0.5


def test_a_changed_optimizer_setting_captures_the_step_again(fake, rows):
    X, y = rows
    L2XExplainer(k=2, max_epochs=8, batch_size=250, refine=None, device="cpu",
                 random_state=0, callbacks=[SetsWeightDecay()]).fit(X, y)
    # Two batches an epoch. Steps 1-3 warm up, step 4 is captured; the change comes after
    # epoch 3 (step 6): steps 7-9 warm up again, step 10 is captured again.
    assert fake.warm_ups == 6
    assert len(fake.graphs) == 2
    assert [graph.replays for graph in fake.graphs] == [6 - 3, 16 - 9]


def cosine_factor_of(epoch, n_epochs):
    from sk_sointer._training.random_masks import cosine_factor

    return cosine_factor(epoch, n_epochs)


def test_a_capture_that_fails_leaves_the_step_eager_with_the_reason(monkeypatch, rows):
    monkeypatch.setattr(graphs_module, "_CUDA", FakeCuda(fail=True))
    X, y = rows
    with pytest.warns(UserWarning, match=r"runs eagerly on CUDA: capturing it failed "
                                         r"\(RuntimeError: operation not permitted"):
        explainer = L2XExplainer(k=2, max_epochs=6, batch_size=250, refine=None,
                                 device="cpu", random_state=0).fit(X, y)
    assert len(explainer.net_.history) == 6


@pytest.mark.parametrize("options, reason", [
    (dict(optimizer="sgd"), "SGD has no capturable mode"),
    (dict(callbacks=[GradientNormClipping(1.0)]),
     "the callback GradientNormClipping reads the gradients"),
])
def test_a_step_that_cannot_be_captured_says_why_once(fake, rows, options, reason):
    X, y = rows
    with pytest.warns(UserWarning, match=reason) as record:
        L2XExplainer(k=2, max_epochs=3, batch_size=250, refine=None, device="cpu",
                     random_state=0, **options).fit(X, y)
    assert len([w for w in record if "eagerly" in str(w.message)]) == 1
    assert fake.graphs == []


def test_a_step_that_queries_the_black_box_is_not_captured(fake, rows):
    from sklearn.neural_network import MLPClassifier

    X, y = rows
    model = MLPClassifier(hidden_layer_sizes=(8,), max_iter=100, random_state=0).fit(
        X, np.column_stack([y, X[:, 2] > 0]))
    with pytest.warns(UserWarning, match="the step queries the black box on the host"):
        SOInterExplainer(k=2, target=0, requery="batch", max_epochs=2, batch_size=250, refine=None,
                         energy=EnergyNet(max_epochs=2), device="cpu",
                         random_state=0).fit(X, black_box=model)
    # The interpreter's step runs eagerly; the energy network's alone is captured: 2,500
    # rows, 19 batches of 128 an epoch (the last batch of 68 warms up twice, no more).
    assert [graph.replays for graph in fake.graphs] == [2 * 19 - 3]


@pytest.mark.parametrize("cuda_graphs", [True, False])
def test_soInter_pretrains_its_energy_network_captured(fake, rows, cuda_graphs):
    # The energy network's pre-training ran eagerly on CUDA (no switch reached it): 99 % of
    # a SOInter fit on an H200.
    from sklearn.neural_network import MLPClassifier

    X, y = rows
    model = MLPClassifier(hidden_layer_sizes=(8,), max_iter=100, random_state=0).fit(
        X, np.column_stack([y, X[:, 2] > 0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        explainer = SOInterExplainer(
            k=2, target=0, max_epochs=2, batch_size=250, cuda_graphs=cuda_graphs, refine=None,
            energy=EnergyNet(max_epochs=4, batch_size=250), device="cpu", random_state=0,
        ).fit(X, black_box=model)
    energy_steps = sum(len(epoch["batches"]) for epoch in explainer.energy_net_.net_.history)
    assert energy_steps == 40  # 2,500 rows (the full ones and 4 masks of each) a 250
    if cuda_graphs:
        # The energy network's step, then the interpreter's (4 steps), each warmed 3 times.
        assert fake.warm_ups == 6
        assert [graph.replays for graph in fake.graphs] == [energy_steps - 3, 4 - 3]
    else:  # SOInter's switch reaches its energy network
        assert fake.warm_ups == 0 and fake.graphs == []


def test_cuda_graphs_off_trains_eagerly(fake, rows):
    X, y = rows
    L2XExplainer(k=2, max_epochs=5, batch_size=250, refine=None, device="cpu",
                 cuda_graphs=False, random_state=0).fit(X, y)
    assert fake.warm_ups == 0 and fake.graphs == []


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_captured_fit_on_cuda_learns_what_an_eager_one_does(rows):
    X, y = rows
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fits = [L2XExplainer(k=2, max_epochs=60, batch_size=100, refine=None, device="cuda",
                             cuda_graphs=graphs, random_state=0).fit(X, y)
                for graphs in (True, False)]
    assert not any("eagerly" in str(w.message) for w in caught)
    losses = [fit.net_.history[-1, "train_loss"] for fit in fits]
    assert losses[0] == pytest.approx(losses[1], rel=0.25)
    agreement = (fits[0].transform(X) == fits[1].transform(X)).all(axis=1).mean()
    assert agreement > 0.8


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_captured_fit_judges_its_own_masks_as_an_eager_one():
    """On an H200 (torch 2.11) a captured L2X fit on regression values once scored R² 0.14
    with its approximator on its own masks where the eager fit scored 0.93. Not the capture:
    one captured step equals the eager step tensor for tensor there (``.ci/gpu step``), and
    the two fits part only through the order of floating-point sums. The approximator had
    learnt on relaxed masks alone, and on the exact masks a unit with a running variance of
    1e-5 fired (inputs' variance 160 times the running one): the fit now ends with epochs
    of the judge on its final masks (``fit_judge_to_masks``)."""
    rng = np.random.RandomState(0)
    X = rng.randn(800, 6).astype(np.float32)
    values = 3 * X[:, 2] + X[:, 4] ** 2
    fits = [L2XExplainer(k=2, max_epochs=30, batch_size=100, device="cuda",
                         cuda_graphs=graphs, random_state=0).fit(X, values)
            for graphs in (True, False)]
    # 30 epochs of 8 batches, then 3 of the judge alone.
    assert [int(m.num_batches_tracked) for m in fits[0].net_.approximator_.modules()
            if isinstance(m, torch.nn.BatchNorm1d)] == [33 * 8] * 2
    for fit in fits:
        assert (fit.transform(X)[:, [2, 4]] == 1).all()
        assert fit.score(X, values) > 0.8


def _last_batches(net_class, fit):
    """``fit()``'s net and the tensors of the last two batches its own training step saw
    (the judge's last phase, a net of its own, left out)."""
    seen = []
    original, last_phase = net_class.train_step, BaseExplainer._fit_judge_to_masks

    def keeping(self, batch, **fit_params):
        seen[:] = [*seen[-1:], self.batch_tensors(batch)]
        return original(self, batch, **fit_params)

    net_class.train_step = keeping
    BaseExplainer._fit_judge_to_masks = lambda self, *args: None
    try:
        return fit().net_, seen
    finally:
        net_class.train_step = original
        BaseExplainer._fit_judge_to_masks = last_phase


@pytest.mark.parametrize("task", ["labels", "values"])
@pytest.mark.parametrize("make", [
    lambda: L2XExplainer(k=2, max_epochs=2, batch_size=100, refine=None),
    lambda: RealXExplainer(max_epochs=2, predictor_epochs=1, batch_size=100, refine=None),
], ids=["L2X", "REAL-X selector"])
def test_a_replayed_step_is_the_eager_step_operation_for_operation(make, task, fake, rows):
    """What a CUDA graph replays is the aten operations of its capture on the tensors of
    its capture. Captured on one batch and replayed so on the CPU (:class:`OpGraph`) on
    the next, a method's step must change every parameter, buffer and optimizer state
    exactly as the eager step on that batch does: whatever the step's Python made of the
    first batch (a number read off it, a tensor built on the host from it) would differ
    here as on a GPU. ``.ci/gpu step`` compares the same on CUDA with real graphs."""
    from sk_sointer._training.updates import UpdateSteps

    X, y = rows
    y = X[:, 1] * (1 + (X[:, 0] > 50)) if task == "values" else y
    net, batches = _last_batches(
        UpdateSteps, lambda: make().set_params(device="cpu", random_state=0).fit(X, y))
    moved, differences = replayed_against_eager(net, batches, OpGraph)
    assert moved > 1e-4 and len(differences) > 10
    assert max(differences.values()) == 0.0, {k: v for k, v in differences.items() if v}


def test_a_step_that_reads_the_epoch_is_captured_for_each_epoch(fake, rows):
    """MEED's sampler weighs the prior by the epoch, a Python number a graph would freeze:
    each epoch's step is its own graph. The prior's surrogate, trained first (one epoch
    here), is captured too: its own graph."""
    from sk_sointer import MEEDExplainer

    X, y = rows
    MEEDExplainer(k=2, max_epochs=3, batch_size=50, refine=None, device="cpu",
                  random_state=0).fit(X, y)
    assert len(fake.graphs) == 1 + 3
    assert [graph.replays for graph in fake.graphs] == [10 - 3] * 4
