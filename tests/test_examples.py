"""The gallery: every example runs on its small budget and draws, the documentation builds,
and the README's figures come from the script that makes them."""

import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

matplotlib = pytest.importorskip("matplotlib")

# Every example, the gallery build and the README's figures: minutes, run by .ci/run's
# second step.
pytestmark = pytest.mark.slow

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("plot_*.py"))
TITLE = re.compile(r'^"""\n(?P<title>[^\n]+)\n(?P<rule>=+)\n\n(?P<paragraph>\S[^\n]*\n)')


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.stem)
def test_example_runs_in_fast_mode_and_draws(path, monkeypatch, capsys):
    source = path.read_text(encoding="utf-8")
    header = TITLE.match(source)
    assert header, f"{path.name} should open with a titled docstring and a paragraph"
    assert len(header["rule"]) == len(header["title"])
    assert "# %%" in source and "SK_SOINTER_FAST_EXAMPLES" in source

    monkeypatch.setenv("SK_SOINTER_FAST_EXAMPLES", "1")
    monkeypatch.setattr(plt, "show", lambda *args, **kwargs: None)
    plt.close("all")
    try:
        runpy.run_path(str(path), run_name="__main__")
        figures = [plt.figure(number) for number in plt.get_fignums()]
        assert figures, f"{path.name} drew no figure"
        assert any(ax.has_data() or ax.images or ax.texts
                   for figure in figures for ax in figure.axes)
    finally:
        plt.close("all")
    assert capsys.readouterr().out.strip(), f"{path.name} printed no result"


def test_documentation_builds_with_every_example_in_the_gallery(tmp_path):
    pytest.importorskip("sphinx_gallery")
    # Pages only (the examples run above); warnings are errors, so a broken docstring or
    # example header fails here.
    command = [sys.executable, "-m", "sphinx", "-q", "-W", "--keep-going", "-b", "html",
               "-D", "plot_gallery=0", "-d", str(tmp_path / "doctrees"),
               str(ROOT / "doc"), str(tmp_path / "html")]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    build = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env,
                           timeout=600)
    assert build.returncode == 0, build.stdout + build.stderr
    html = tmp_path / "html"
    for example in EXAMPLES:
        assert (html / "auto_examples" / f"{example.stem}.html").is_file(), example.name
    assert "plot_image_masks" in (html / "api.html").read_text(encoding="utf-8")


def test_readme_figures_are_made_by_the_script(tmp_path, monkeypatch):
    readme = (ROOT / "README.rst").read_text(encoding="utf-8")
    shown = re.findall(r"^\.\. image:: (doc/_static/\S+\.png)", readme, re.MULTILINE)
    assert len(shown) >= 2
    for figure in shown:
        assert (ROOT / figure).is_file(), figure

    monkeypatch.setenv("SK_SOINTER_FAST_EXAMPLES", "1")
    script = ROOT / "doc" / "make_readme_figures.py"
    runpy.run_path(str(script), run_name="not_main")["main"]([str(tmp_path)])
    plt.close("all")
    made = sorted(path.name for path in tmp_path.glob("*.png"))
    assert made == sorted(Path(figure).name for figure in shown)
