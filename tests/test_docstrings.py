"""The examples in the docstrings run and print what they show."""

import doctest
import importlib
import pkgutil

import pytest
import torch

import sk_sointer


def _modules_with_examples():
    finder = doctest.DocTestFinder()
    for _, name, _ in pkgutil.walk_packages(sk_sointer.__path__, "sk_sointer."):
        if name == "sk_sointer.__main__":
            continue
        module = importlib.import_module(name)
        if any(test.examples for test in finder.find(module)):
            yield name


# Modules whose examples import an optional package: skipped where it is not installed.
NEEDS = {"sk_sointer.parallel": "dask", "sk_sointer._encoding": "pandas"}


@pytest.mark.parametrize("name", sorted(_modules_with_examples()))
@pytest.mark.synthetic_rows  # what a user running them sees, the refinement's default
def test_docstring_examples(name):
    if name in NEEDS:
        pytest.importorskip(NEEDS[name])
    module = importlib.import_module(name)
    with torch.random.fork_rng():
        result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
