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

# One module per method: its maths in one file (the energy network, a network SOInter
# trains first, and SOInter's queries of the model have modules of their own).
METHOD_FILES = ["_l2x.py", "_realx.py", "_meed.py", "_sointer.py", "_hardkuma.py"]
MAX_CODE_LINES = 250

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


def code_lines(source):
    """Lines of ``source`` that hold code: not blank, not a comment, not in a docstring
    (of the module, a class or a function), not an ``__init__``'s ``self.name = name``
    (scikit-learn's parameters, one line each: the signature says them already)."""
    skipped = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                skipped.update(range(first.lineno, first.end_lineno + 1))
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            skipped.update(statement.lineno for statement in node.body
                           if _assigns_a_parameter(statement))
    return sum(1 for number, line in enumerate(source.splitlines(), 1)
               if line.strip() and not line.strip().startswith("#") and number not in skipped)


def _assigns_a_parameter(statement):
    """Whether ``statement`` is ``self.name = name``."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return False
    target, value = statement.targets[0], statement.value
    return (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
            and target.value.id == "self" and isinstance(value, ast.Name)
            and value.id == target.attr)


def test_the_counter_skips_docstrings_comments_and_blank_lines():
    source = ('"""A module.\n\nIts docstring."""\n\n# why\nimport math\n\n\n'
              'def f(x):\n    """What f does,\n    in two lines."""\n    return math.sqrt(x)  # root\n')
    assert code_lines(source) == 3
    init = ("class A:\n    def __init__(self, k=1, tau=0.5):\n        self.k = k\n"
            "        self.tau = tau\n        self.net = None\n")
    assert code_lines(init) == 3  # the class, the def and the one non-parameter line


@pytest.mark.parametrize("name", METHOD_FILES)
def test_a_method_file_reads_in_one_sitting(name):
    assert code_lines((EXPLAINERS / name).read_text()) <= MAX_CODE_LINES
