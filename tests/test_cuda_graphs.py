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
from skorch.callbacks import Callback, GradientNormClipping

import sk_sointer.explainers._graphs as graphs_module
from sk_sointer import L2XExplainer, RealXExplainer, SOInterExplainer, EnergyNet


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
    """Stands in for :class:`~sk_sointer.explainers._graphs._CudaGraphs` on the CPU."""

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


@pytest.fixture
def fake(monkeypatch):
    cuda = FakeCuda()
    monkeypatch.setattr(graphs_module, "_CUDA", cuda)
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
    from sk_sointer.explainers._random_mask import cosine_factor

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
        SOInterExplainer(k=2, target=0, requery="batch", max_epochs=2, batch_size=250,
                         energy=EnergyNet(max_epochs=2), device="cpu",
                         random_state=0).fit(X, black_box=model)
    assert fake.graphs == []


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
def test_a_captured_fit_keeps_the_running_statistics_an_eager_one_keeps():
    """A judge with batch normalisation answers in evaluation mode from its running
    statistics, which the training steps update. On an H200 (torch 2.11) a captured L2X fit
    scored R² 0.14 on masked rows where the CPU scores 0.91: what the CPU gives with the
    statistics never updated. The training loss cannot show it (batch statistics)."""
    rng = np.random.RandomState(0)
    X = rng.randn(800, 6).astype(np.float32)
    values = 3 * X[:, 2] + X[:, 4] ** 2
    fits = [L2XExplainer(k=2, max_epochs=30, batch_size=100, device="cuda",
                         cuda_graphs=graphs, random_state=0).fit(X, values)
            for graphs in (True, False)]
    variances = [[float(m.running_var.mean()) for m in fit.net_.approximator_.modules()
                  if isinstance(m, torch.nn.BatchNorm1d)] for fit in fits]
    assert variances[0] == pytest.approx(variances[1], rel=0.25)
    assert [int(m.num_batches_tracked) for m in fits[0].net_.approximator_.modules()
            if isinstance(m, torch.nn.BatchNorm1d)] == [30 * 8] * 2
    scores = [fit.score(X, values) for fit in fits]
    assert scores[0] == pytest.approx(scores[1], abs=0.05) and scores[1] > 0.5


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
