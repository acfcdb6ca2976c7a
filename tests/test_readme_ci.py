"""README's install-and-run commands are exactly what .ci/run executes."""

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.rst"
CI_RUN = ROOT / ".ci" / "run"

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
    assert install.startswith("pip install torch==")
    assert 'pip install -e ".[test]"' in install and "python -m sk_sointer demo" in install
    assert "pytest" in tests


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


def test_readme_keeps_the_results_markers():
    lines = README.read_text(encoding="utf-8").splitlines()
    start = lines.index(".. results-table-start")
    end = lines.index(".. results-table-end")
    assert start < end
