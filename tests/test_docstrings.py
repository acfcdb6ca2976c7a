"""The examples in the docstrings run and print what they show."""

import doctest
import importlib
import pkgutil

import pytest
import torch

import sk_sointer

MODULES = sorted(
    name for _, name, _ in pkgutil.walk_packages(sk_sointer.__path__, "sk_sointer.")
    if name != "sk_sointer.__main__"
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    with torch.random.fork_rng():
        failed, _ = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert failed == 0
