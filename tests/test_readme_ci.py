"""README's install-and-run commands are exactly what .ci/run executes, then the slow tests;
the README's one results table is the benchmark page's."""

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.rst"
BENCHMARKS_PAGE = ROOT / "doc" / "benchmarks.rst"
CI_RUN = ROOT / ".ci" / "run"
SLOW_RUN = "OMP_NUM_THREADS=1 python -m pytest -q -n 2 -m slow tests"

# .ci/run may end a README line with "|| exit" (errexit ignores failures inside && lists).
EXIT_SUFFIX = " || exit"


def readme_setup_commands():
    """Command lines of the bash code block in README's "Install and run" section."""
    text = README.read_text(encoding="utf-8")
    section = re.search(r"^Install and run\n-+\n(.*?)(?=^\S[^\n]*\n[-=]+\n)", text,
                        re.MULTILINE | re.DOTALL)
    assert section is not None, "README.rst has no 'Install and run' section"
    block = re.search(r"^\.\. code-block:: bash\n\n((?:[ \t]+\S.*\n|\n)+)", section.group(1),
                      re.MULTILINE)
    assert block is not None, "the 'Install and run' section has no bash code block"
    return [line.strip() for line in block.group(1).splitlines() if line.strip()]


def test_readme_setup_block_has_install_and_test_commands():
    commands = readme_setup_commands()
    assert len(commands) == 2
    install, tests = commands
    # The demo's install is the package alone (no extra): the test dependencies come with
    # the second command.
    assert install.startswith("pip install torch==")
    assert "pip install -e . &&" in install and "python -m sk_sointer demo" in install
    assert "[" not in install
    assert tests.startswith('pip install -e ".[test]" && ')
    # Two workers, one per core of the small machine the test time is promised on; the
    # workers come with the test extra.
    assert 'pytest -q -n 2 -m "not slow" tests' in tests


def test_ci_runs_the_slow_tests_after_the_readme_commands():
    ci_lines = [line.strip().removesuffix(EXIT_SUFFIX)
                for line in CI_RUN.read_text(encoding="utf-8").splitlines()]
    last_readme = max(ci_lines.index(command) for command in readme_setup_commands())
    assert ci_lines.index(SLOW_RUN) > last_readme
    assert SLOW_RUN in README.read_text(encoding="utf-8")


def test_slow_marker_is_registered():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^markers = \[\n\s+"slow: ', text, re.MULTILINE)


def test_ci_runs_the_readme_commands_verbatim():
    ci_lines = [line.strip() for line in CI_RUN.read_text(encoding="utf-8").splitlines()]
    ci_lines = [line.removesuffix(EXIT_SUFFIX) for line in ci_lines]
    for command in readme_setup_commands():
        assert command in ci_lines, f"README command missing from .ci/run: {command}"


def test_ci_script_is_strict_and_uses_a_fresh_environment():
    text = CI_RUN.read_text(encoding="utf-8")
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "set -euo pipefail" in text
    assert "python3 -m venv" in text
    assert os.access(CI_RUN, os.X_OK)


def test_benchmarks_page_keeps_the_results_markers():
    lines = BENCHMARKS_PAGE.read_text(encoding="utf-8").splitlines()
    start = lines.index(".. results-table-start")
    end = lines.index(".. results-table-end")
    assert start < end


def rst_table(text, title):
    """The lines of the ``.. table:: title`` block in ``text``."""
    match = re.search(rf"^\.\. table:: {re.escape(title)}\n\n((?:   .*\n)+)", text,
                      re.MULTILINE)
    assert match is not None, f"no table {title!r}"
    return match.group(1)


def test_readme_fidelity_table_is_the_benchmarks_page_copy():
    # The tables study rewrites the page; the README's copy must follow it.
    from benchmarks.studies.tables import SUMMARY_TITLE as title
    assert (rst_table(README.read_text(encoding="utf-8"), title)
            == rst_table(BENCHMARKS_PAGE.read_text(encoding="utf-8"), title))


def test_readme_is_a_front_page():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 350
    # The fidelity summary and the rare answer's rows on the mixed tables.
    assert text.count(".. table::") == 2
    titles = re.findall(r"^(\S[^\n]*)\n-+\n", text, re.MULTILINE)
    practical = ["Install and run", "Quick start", "Searching over k and tau", "Command line",
                 "When to use what"]
    results = next(i for i, title in enumerate(titles) if title.startswith("Results"))
    assert all(titles.index(title) < results for title in practical)
