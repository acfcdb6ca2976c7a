"""Make the README's figures: run three gallery examples and save the last figure each draws.

    python doc/make_readme_figures.py            # into doc/_static (about two minutes)
    python doc/make_readme_figures.py OUT_DIR

The README shows what the gallery shows: each figure is an example's own, so the two cannot
drift apart. Needs the plot and datasets extras (``pip install -e ".[doc]"``).
"""

import os
import runpy
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"
# README figure -> the example that draws it.
FIGURES = {
    "readme_digits.png": "plot_mnist_overlays.py",
    "readme_masks.png": "plot_pipeline_real_table.py",
    "readme_curves.png": "plot_l2x_orange_skin.py",
}


def main(argv=None):
    import matplotlib.pyplot as plt

    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0]) if argv else HERE / "_static"
    out.mkdir(parents=True, exist_ok=True)
    show = plt.show
    plt.show = lambda *args, **kwargs: None  # keep the figures open for saving
    try:
        for name, example in FIGURES.items():
            plt.close("all")
            runpy.run_path(str(EXAMPLES / example), run_name="__main__")
            figure = plt.figure(plt.get_fignums()[-1])
            figure.savefig(out / name, dpi=80)
            print(f"{out / name}: from examples/{example}")
    finally:
        plt.show = show
        plt.close("all")


if __name__ == "__main__":
    main()
