"""The explainers' modules keep the shape the architecture asks of them: ``explainers/``
holds the methods alone, what their training shares lives in ``_training/`` below them
(which imports none of the estimators), every training phase goes through skorch (no epoch
loop written by hand, in a method or in the training room) and each method's file reads in
one sitting."""

import ast
import re
from pathlib import Path

import pytest

import sk_sointer._training
import sk_sointer.explainers

EXPLAINERS = Path(sk_sointer.explainers.__file__).parent
TRAINING = Path(sk_sointer._training.__file__).parent
MODULES = sorted(EXPLAINERS.glob("*.py")) + sorted(TRAINING.glob("*.py"))

# One module per method: its maths in one file (the energy network, a network SOInter
# trains first, and SOInter's queries of the model have modules of their own).
METHOD_FILES = ["_l2x.py", "_realx.py", "_meed.py", "_sointer.py", "_hardkuma.py"]
EXPLAINER_FILES = {"__init__.py", *METHOD_FILES, "_energy.py", "_sointer_queries.py"}
MAX_CODE_LINES = 250

# What the training room may not import: the estimators and everything above them.
ABOVE_TRAINING = ("sk_sointer.base", "sk_sointer.explainers", "sk_sointer.metrics",
                  "sk_sointer._model_judge", "sk_sointer._persist", "sk_sointer._cli",
                  "sk_sointer.display", "sk_sointer.plotting", "sk_sointer.parallel")

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


def test_explainers_holds_the_methods_alone():
    # The net base, its steps and the random-mask objective live in _training/.
    modules = {path.name for path in EXPLAINERS.iterdir() if path.suffix == ".py"}
    assert modules == EXPLAINER_FILES
    assert not [path.name for path in EXPLAINERS.iterdir()
                if path.is_dir() and path.name != "__pycache__"]


def imported_modules(path, package):
    """The absolute names of the modules that the source at ``path`` (a module of
    ``package``) imports, at its top or inside a function."""
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            stem = ".".join(base) if node.level else ""
            module = ".".join(part for part in (stem, node.module) if part)
            names.extend([module] if node.module else
                         [f"{module}.{alias.name}" for alias in node.names])
    return names


def test_the_import_reader_resolves_relative_imports(tmp_path):
    source = tmp_path / "nets.py"
    source.write_text("from .._utils import set_mode\nfrom .updates import Update\n"
                      "from . import graphs\nimport torch\n\n"
                      "def f():\n    from ..base import BaseExplainer\n")
    assert imported_modules(source, "sk_sointer._training") == [
        "sk_sointer._utils", "sk_sointer._training.updates", "sk_sointer._training.graphs",
        "torch", "sk_sointer.base"]


@pytest.mark.parametrize("path", sorted(TRAINING.glob("*.py")), ids=lambda path: path.name)
def test_the_training_room_imports_no_estimator(path):
    above = [name for name in imported_modules(path, "sk_sointer._training")
             if name == "sk_sointer" or name.startswith(ABOVE_TRAINING)]
    assert above == []


@pytest.mark.parametrize("path", MODULES,
                         ids=lambda path: f"{path.parent.name}/{path.name}")
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
