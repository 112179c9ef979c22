"""The README's CLI reference is the parsers' own --help, current."""

from __future__ import annotations

from pybmq.cli.reference import main

from tests.helpers.paths import REPO_ROOT


def test_readme_cli_reference_is_current() -> None:
    assert main([str(REPO_ROOT / "README.md"), "--check"]) == 0
