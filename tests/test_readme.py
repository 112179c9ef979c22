"""What the README promises a newcomer, held true: its commands get on PATH the way it says, the
skips of ``make test`` are the ones it explains, and its ``pybmq broker`` line is a valid
command. (Its Python blocks and quick-start commands run in ``test_docs_examples``.)"""

from __future__ import annotations

import re
import shlex
import subprocess

import pytest
from pybmq.cli.main import build_parser
from pybmq.testing.brokers import NO_BROKER_REASON, NO_TLS_BROKER_REASON

from tests.helpers.paths import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")


def plain(text: str) -> str:
    """``text`` with Markdown's backticks gone and any run of whitespace one space."""
    return " ".join(text.replace("`", "").split())


def test_the_readme_stays_short() -> None:
    assert len(README.splitlines()) <= 250


def test_activating_the_venv_as_the_readme_says_puts_pybmq_on_path() -> None:
    activate = re.search(r"^(\. \.venv/bin/activate)\s", README, re.M)
    assert activate is not None, "the README must say how to put the venv's commands on PATH"
    if not (REPO_ROOT / ".venv" / "bin" / "activate").exists():
        pytest.skip("no .venv here (make install makes it)")
    fresh = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}  # a new shell, nothing activated
    before = subprocess.run(
        ["bash", "-c", "command -v pybmq"], env=fresh, cwd=REPO_ROOT, capture_output=True
    )
    assert before.returncode != 0, "pybmq is on PATH without the venv: the test proves nothing"
    after = subprocess.run(
        ["bash", "-c", f"{activate.group(1)} && pybmq --version"],
        env=fresh,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert after.returncode == 0 and after.stdout.startswith("pybmq "), after.stderr


def test_the_skips_the_readme_explains_are_the_suites() -> None:
    text = plain(README)
    assert "BMQ_BROKER_BIN=/path/to/bmqbrkr.tsk make test" in text
    assert plain(NO_BROKER_REASON) in text
    assert plain(NO_TLS_BROKER_REASON) in text
    packaging = (REPO_ROOT / "tests" / "test_packaging.py").read_text(encoding="utf-8")
    assert "run `make dist` first" in packaging and "run make dist first" in text
    plugin = (REPO_ROOT / "runtime" / "testing" / "plugin.py").read_text(encoding="utf-8")
    assert 'f"simulator only: {reason}"' in plugin and "simulator only" in text


def test_the_readme_broker_command_is_a_valid_command_line() -> None:
    lines = re.findall(r"^(pybmq broker [^#\n]*?)\s*(?:&\s*)?(?:#.*)?$", README, re.M)
    assert lines, "the README must show how to start a real broker"
    for line in lines:
        args = build_parser().parse_args(shlex.split(line)[1:])
        assert args.command == "broker" and args.bin == "/path/to/bmqbrkr.tsk"
