"""The explainers' modules keep the shape the architecture asks of them: every training
phase goes through skorch (no epoch loop written by hand), and each method's file reads in
one sitting."""

import ast
import re
from pathlib import Path

import pytest

import sk_sointer.explainers

EXPLAINERS = Path(sk_sointer.explainers.__file__).parent
MODULES = sorted(EXPLAINERS.glob("*.py"))

# A ``for ... in range(...)`` with "epoch" on its line or the few lines around it.
RANGE_LOOP = re.compile(r"^\s*for\s.+\sin\s+range\(")
NEAR = 3


def hand_written_epoch_loops(source):
    """The line numbers of the ``for ... in range(...)`` loops of ``source`` that have
    "epoch" within :data:`NEAR` lines."""
    lines = source.splitlines()
    return [number for number, line in enumerate(lines, 1) if RANGE_LOOP.match(line) and any(
        "epoch" in near.lower() for near in lines[max(number - 1 - NEAR, 0): number + NEAR])]


def test_the_checker_finds_an_epoch_loop():
    loop = ("def warm_start(net, n_epochs):\n"
            "    for _ in range(n_epochs):\n"
            "        for index in torch.randperm(n).split(net.batch_size):\n"
            "            net.step(optimizer, loss(index), net.approximator_)\n")
    assert hand_written_epoch_loops(loop) == [2]
    assert hand_written_epoch_loops("for _ in range(20):\n    codes = descend(codes)\n") == []


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.name)
def test_no_explainer_module_trains_in_a_loop_of_its_own(path):
    # Every fit goes through skorch's fit_loop (callbacks, history, CUDA graphs).
    assert hand_written_epoch_loops(path.read_text()) == []
