"""Every method's training step is device work only: it compiles whole and reads nothing
back to the host.

A training step is a list of :class:`~sk_sointer._training.updates.Update` s. Each update's
loss must compile with ``torch.compile(fullgraph=True)`` (a graph break fails the test:
``.item()``, ``.cpu()``, a branch on a tensor's value, a NumPy detour) and give the same
value as the eager loss from the same random state; run eagerly, it must call none of
the operations that wait for the device on a GPU (a tensor's value read as a Python
number, a shape that depends on values, a tensor built from Python data), nor one that a
CUDA graph replays wrongly (an accumulating index_put, the gradient of ``x[:, index]``),
on labels and on regression values alike. The epoch must
not read the losses batch by batch either: a fit of many batches an epoch synchronises
as often as a fit of few. This is the check a machine without a GPU can run for the
captured CUDA step.
"""

import copy

import numpy as np
import pytest
import torch
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from skorch.callbacks import Callback, GradientNormClipping
from torch.utils._python_dispatch import TorchDispatchMode

from sk_sointer import (EnergyNet, HardKumaExplainer, L2XExplainer, MEEDExplainer,
                        RealXExplainer, SOInterExplainer)
from sk_sointer._topk import _running_count, topk_mask
from sk_sointer._training.updates import UpdateSteps
from sk_sointer.metrics import EvalXEvaluator

# Operations that make the host wait for the device (or copy Python data to it) on CUDA.
HOST_SYNCS = frozenset({
    "aten::_local_scalar_dense",  # .item(), float(t), bool(t), if t: ...
    "aten::is_nonzero",
    "aten::equal",
    "aten::nonzero",  # boolean indexing, masked_select: a value-dependent shape
    "aten::masked_select",
    "aten::lift_fresh",  # torch.tensor(python data)
    "aten::lift_fresh_copy",
    "aten::_assert_async",
})


# Operations that a CUDA graph need not replay as they ran: an accumulating index_put (the
# gradient of ``x[:, index]``) sorts its indices on the device, which torch's own compiler
# refuses to put in a CUDA graph.
REPLAYED_WRONGLY = frozenset({"aten::index_put", "aten::index_put_", "aten::_index_put_impl_"})


class HostSyncs(TorchDispatchMode):
    """Records the :data:`HOST_SYNCS` operations run under it, and the
    :data:`REPLAYED_WRONGLY` ones that accumulate."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func._schema.name
        kwargs = kwargs or {}
        if name in HOST_SYNCS:
            self.seen.append(name)
        elif name in REPLAYED_WRONGLY and kwargs.get(
                "accumulate", len(args) > 3 and bool(args[3])):
            self.seen.append(f"{name} (accumulate)")
        return func(*args, **kwargs)


@pytest.fixture(scope="module")
def rows():
    # Everyday units: ages, prices, a count.
    rng = np.random.RandomState(0)
    X = np.column_stack([rng.uniform(18, 90, 240), rng.lognormal(10, 1, 240),
                         rng.poisson(3, 240), rng.randn(240, 3)]).astype(np.float32)
    y = ((X[:, 0] > 50) ^ (X[:, 3] > 0)).astype(int)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)).fit(X, y)
    return X, y, model


def _fits(X, y, model):
    common = dict(max_epochs=2, batch_size=80, device="cpu", random_state=0)
    # Scaled first: on the raw units the network answers every row alike.
    multi = make_pipeline(StandardScaler(), MLPClassifier(
        hidden_layer_sizes=(8,), max_iter=50, random_state=0)).fit(
        X, np.column_stack([y, X[:, 2] > 2]))
    # A price-like regression output: its losses take real columns, not class blocks.
    values = X[:, 1] * (1 + (X[:, 0] > 50))
    regressor = LinearRegression().fit(X, values)
    return {
        "L2X on values": lambda: L2XExplainer(k=2, refine=None, **common).fit(X, values),
        "REAL-X on values": lambda: RealXExplainer(predictor_epochs=1, refine=None,
                                                   **common).fit(X, values),
        "MEED on a regressor": lambda: MEEDExplainer(k=2, refine=None, **common).fit(
            X, black_box=regressor),
        "L2X": lambda: L2XExplainer(k=2, refine=None, **common).fit(X, y),
        "REAL-X sequential": lambda: RealXExplainer(predictor_epochs=1, refine=None,
                                                    **common).fit(X, y),
        "REAL-X alternating": lambda: RealXExplainer(predictor_epochs=1, refine=None,
                                                     schedule="alternating", **common).fit(X, y),
        "REAL-X Hard Kumaraswamy": lambda: RealXExplainer(
            predictor_epochs=1, refine=None, relaxation="hardkuma", **common).fit(X, y),
        "HardKuma random masks": lambda: HardKumaExplainer(
            k=2, predictor_epochs=1, refine=None, **common).fit(X, y),
        "HardKuma joint": lambda: HardKumaExplainer(k=2, predictor_masks="joint", refine=None,
                                                    **common).fit(X, y),
        "MEED": lambda: MEEDExplainer(k=2, refine=None, **common).fit(X, black_box=model),
        "EVAL-X": lambda: EvalXEvaluator(**common).fit(X, y),
        "SOInter and its energy network": lambda: SOInterExplainer(
            k=2, target=0, energy=EnergyNet(max_epochs=2, batch_size=80), **common).fit(
            X, black_box=multi),
    }


def _cause(error):
    """The lines of a compile error that say what broke the graph, and where."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    where = [line for line in lines if "sk_sointer" in line]
    return " | ".join(lines[:2] + where[-2:])


def _loss_name(update):
    return getattr(update.loss, "__qualname__", repr(update.loss))


def _check_updates(net, batch, report):
    """Compile and sync-check every update of ``net``'s step on ``batch``, once per
    distinct step (a net's step changes with the epoch). The nets' state and the random
    state are put back after each run, so that the fit goes on as it would have."""
    task = getattr(getattr(net, "output_spec", None), "task", "classification")
    key = (type(net).__name__, *(_loss_name(u) for u in net.updates()),
           *([task] if task != "classification" else []))
    if key in report:
        return
    X, targets = net.batch_tensors(batch)
    saved = {name: copy.deepcopy(module.state_dict())
             for name, module in net.state_modules().items()
             if isinstance(module, torch.nn.Module)}
    rng = torch.get_rng_state()

    def restore():
        for name, module in net.state_modules().items():
            if name in saved:
                module.load_state_dict(saved[name])
        torch.set_rng_state(rng)

    checks = []
    for update in net.updates():
        for module in update.training:
            module.train()
        for module in update.evaluation:
            module.eval()
        params = [p for module in update.modules for p in module.parameters()]
        update.loss(X, targets)  # a first step builds the device copies of constants
        restore()
        with HostSyncs() as syncs:
            eager = update.loss(X, targets)[0]
            torch.autograd.grad(eager, params, allow_unused=True)
        restore()
        torch._dynamo.reset()
        try:
            compiled = torch.compile(update.loss, fullgraph=True,
                                     backend="aot_eager")(X, targets)[0]
            compiled = float(compiled.detach())
        except Exception as error:  # noqa: BLE001 - the tests report it
            compiled = f"{type(error).__name__}: {_cause(error)}"
        restore()
        checks.append(dict(loss=_loss_name(update), syncs=syncs.seen,
                           eager=float(eager.detach()), compiled=compiled))
    report[key] = checks


@pytest.fixture(scope="module")
def step_reports(rows):
    X, y, model = rows
    report = {}
    original = UpdateSteps.train_step

    def checked(self, batch, **fit_params):
        _check_updates(self, batch, report)
        return original(self, batch, **fit_params)

    UpdateSteps.train_step = checked
    try:
        for fit in _fits(X, y, model).values():
            fit()
    finally:
        UpdateSteps.train_step = original
        torch._dynamo.reset()
    return report


# Every method's step, in each of its phases: (net, its updates' losses).
STEPS = {
    "L2X": ("L2XNet", "SelectorJudgeNet.infer_loss"),
    "random-mask predictor (REAL-X, HardKuma, EVAL-X)": (
        "RealXNet", "predictor_update.<locals>.loss"),
    "REAL-X selector (REBAR)": ("RealXNet", "RealXNet._rebar_loss"),
    "REAL-X alternating": ("RealXNet", "predictor_update.<locals>.loss",
                           "RealXNet._rebar_loss"),
    "REAL-X selector (Hard Kumaraswamy)": ("RealXNet", "RealXNet._gate_loss"),
    "HardKuma's predictor": ("HardKumaNet", "predictor_update.<locals>.loss"),
    "HardKuma selector": ("HardKumaNet", "HardKumaNet._selector_loss"),
    "MEED's prior surrogate": ("JudgeNet", "JudgeNet._judge_loss"),
    "MEED": ("MEEDNet", "MEEDNet._approximators_loss", "MEEDNet._explainer_loss"),
    "EVAL-X": ("JudgeNet", "predictor_update.<locals>.loss"),
    "SOInter's energy network": ("EnergyModel", "EnergyModel._training_loss"),
    "SOInter's interpreter": ("SOInterNet", "SOInterNet._interpreter_loss"),
    "L2X on values": ("L2XNet", "SelectorJudgeNet.infer_loss", "regression"),
    "REAL-X's predictor on values": ("RealXNet", "predictor_update.<locals>.loss",
                                     "regression"),
    "REAL-X selector on values": ("RealXNet", "RealXNet._rebar_loss", "regression"),
    "MEED's prior surrogate on values": ("JudgeNet", "JudgeNet._judge_loss", "regression"),
    "MEED on values": ("MEEDNet", "MEEDNet._approximators_loss", "MEEDNet._explainer_loss",
                       "regression"),
}


@pytest.mark.parametrize("step", list(STEPS))
def test_every_update_compiles_whole_to_the_eager_value(step, step_reports):
    for check in step_reports[STEPS[step]]:
        assert not isinstance(check["compiled"], str), f"{check['loss']}: {check['compiled']}"
        assert check["compiled"] == pytest.approx(check["eager"], rel=1e-5, abs=1e-6), check


@pytest.mark.parametrize("step", list(STEPS))
def test_no_update_waits_for_the_device(step, step_reports):
    for check in step_reports[STEPS[step]]:
        assert check["syncs"] == [], check


def test_the_top_k_of_a_tensor_waits_for_nothing_and_breaks_ties_to_lower_indices():
    # SOInter's interpreter takes the top-k of its relaxed draws in every step: a branch on
    # whether a row has ties would wait for the device (and fail a CUDA graph's capture).
    scores = torch.tensor([[0.5, 2.0, 2.0, 2.0, 0.1], [1.0, 1.0, 1.0, 1.0, 1.0],
                           [3.0, -1.0, 2.0, 0.0, 1.0]])
    with HostSyncs() as recorder:
        mask = topk_mask(scores, 2)
    assert recorder.seen == []
    np.testing.assert_array_equal(mask, [[0, 1, 1, 0, 0], [1, 1, 0, 0, 0], [1, 0, 1, 0, 0]])


@pytest.mark.parametrize("width", [1, 2, 10, 100, 256])
def test_the_running_count_of_ties_as_a_product_is_the_cumulative_sum(width):
    # On an accelerator, narrow rows count their ties by a product with a triangle (a
    # cumulative sum along ten values is slow on CUDA); the counts must be the same.
    rng = np.random.RandomState(width)
    flags = torch.as_tensor(rng.rand(300, width) < 0.6)
    counted = _running_count(flags, by_product=True)
    np.testing.assert_array_equal(counted.numpy(), flags.cumsum(-1).numpy())
    scores = torch.as_tensor(rng.randint(0, 3, (300, width)).astype(np.float32))
    k = max(1, width // 3)
    with HostSyncs() as recorder:
        _running_count(scores == 1, by_product=True)
    assert recorder.seen == []
    np.testing.assert_array_equal(topk_mask(scores, k).numpy(),
                                  topk_mask(scores.numpy(), k))


def test_the_steps_checked_are_every_step_the_fits_took(step_reports):
    # A method whose step changes (a new phase, a renamed loss) must be listed above.
    assert set(step_reports) == set(STEPS.values())


@pytest.mark.parametrize("make", [
    lambda: L2XExplainer(k=2, refine=None),
    lambda: RealXExplainer(predictor_epochs=1, schedule="alternating", refine=None),
    lambda: HardKumaExplainer(k=2, predictor_masks="joint", refine=None),
], ids=["L2X", "REAL-X", "HardKuma"])
def test_an_epoch_reads_its_losses_back_once_whatever_its_batches(make, rows):
    """The batches' losses (and HardKuma's rates) reach the history as floats, read back
    from the device once an epoch: six batches an epoch synchronise as often as one."""
    X, y, _ = rows
    counts, histories = [], []
    for batch_size in (240, 40):
        explainer = make().set_params(max_epochs=2, batch_size=batch_size, device="cpu",
                                      optimizer="sgd", random_state=0)
        with HostSyncs() as syncs:
            explainer.fit(X, y)
        counts.append(syncs.seen.count("aten::_local_scalar_dense"))
        histories.append(explainer.net_.history)
    assert counts[0] == counts[1]
    for epoch in histories[1]:
        assert len(epoch["batches"]) == 6
        for row in epoch["batches"]:
            assert isinstance(row["train_loss"], float) and np.isfinite(row["train_loss"])
            assert row["train_batch_size"] == 40
        # skorch's epoch loss: the batches' mean weighted by their sizes.
        assert epoch["train_loss"] == pytest.approx(
            np.mean([row["train_loss"] for row in epoch["batches"]]))


class WatchesGradients(Callback):
    """Records a selector weight as it is when the gradient reaches the callbacks, and
    after the batch's step."""

    def on_train_begin(self, net, **kwargs):
        self.at_gradient, self.after_step = [], []

    def on_grad_computed(self, net, named_parameters, **kwargs):
        name, param = next(iter(named_parameters))
        assert param.grad is not None, name
        self.at_gradient.append(param.detach().clone())

    def on_batch_end(self, net, training, **kwargs):
        if training:
            self.after_step.append(next(net.module_.parameters()).detach().clone())


@pytest.mark.parametrize("make", [
    lambda: L2XExplainer(k=2, refine=None),
    lambda: HardKumaExplainer(k=2, predictor_masks="joint", refine=None),
], ids=["L2X", "HardKuma"])
def test_a_callback_on_the_gradient_acts_before_the_optimizer_steps(make, rows):
    """As in skorch, ``on_grad_computed`` comes between the backward pass and the step:
    a weight seen there is the one before the step, and clipping the gradients to zero
    leaves the fit where it starts."""
    X, y, _ = rows
    watch = WatchesGradients()
    make().set_params(max_epochs=1, batch_size=120, device="cpu", random_state=0,
                      callbacks=[watch]).fit(X, y)
    assert len(watch.at_gradient) == len(watch.after_step) == 2
    assert not torch.equal(watch.at_gradient[0], watch.after_step[0])
    assert torch.equal(watch.at_gradient[1], watch.after_step[0])

    class Initial(Callback):
        def on_train_begin(self, net, **kwargs):
            self.weights = [p.detach().clone() for p in net.module_.parameters()]

    initial = Initial()
    clipped = make().set_params(max_epochs=2, batch_size=120, device="cpu", random_state=0,
                                optimizer="sgd", callbacks=[initial, GradientNormClipping(0.0)]
                                ).fit(X, y).net_.module_
    for before, after in zip(initial.weights, clipped.parameters()):
        torch.testing.assert_close(after.detach(), before)
