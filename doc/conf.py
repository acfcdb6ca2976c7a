"""Sphinx configuration: the API reference, the tuning notes and the example gallery.

    pip install -e ".[doc]"
    sphinx-build -b html doc doc/_build/html                      # runs every example
    SK_SOINTER_FAST_EXAMPLES=1 sphinx-build -b html doc doc/_build/html   # small budgets
    sphinx-build -b html -D plot_gallery=0 doc doc/_build/html    # pages only, no runs
"""

import os
import re
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

ROOT = Path(__file__).resolve().parents[1]

project = "sk_sointer"
author = "the sk_sointer developers"
copyright = "2026, the sk_sointer developers"
release = re.search(r'^__version__ = "([^"]+)"',
                    (ROOT / "sk_sointer" / "_version.py").read_text(), re.MULTILINE).group(1)
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.intersphinx",
    "sphinx_gallery.gen_gallery",
]
autosummary_generate = True
templates_path = ["_templates"]
# torch's and scikit-learn's docstrings of the methods we override are not ours to render.
autodoc_inherit_docstrings = False
autodoc_default_options = {"members": True, "inherited-members": False}
# References sections list papers with numbered footnotes that the text need not cite.
suppress_warnings = ["ref.footnote"]
napoleon_google_docstring = False
napoleon_numpy_docstring = True
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.md5", "auto_examples/*.json"]
html_theme = "alabaster"
html_static_path = ["_static"]
# No network where the documentation is built: no intersphinx inventories to fetch.
intersphinx_mapping = {}

sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": "FileNameSortKey",
    "image_scrapers": ("matplotlib",),
    "download_all_examples": False,
    "remove_config_comments": True,
    # One torch thread, as on the 2-core machines the examples are timed on.
    "reset_modules": ("matplotlib", "seaborn"),
}


def _skip_metadata_requests(app, what, name, obj, skip, options):
    """scikit-learn's generated ``set_*_request`` methods cite its own glossary."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return skip


def setup(app):
    app.connect("autodoc-skip-member", _skip_metadata_requests)
