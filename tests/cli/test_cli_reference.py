"""The CLI reference page is the parsers' own --help, current."""

from __future__ import annotations

from pybmq.cli.reference import main

from tests.helpers.paths import REPO_ROOT


def test_cli_reference_page_is_current() -> None:
    assert main([str(REPO_ROOT / "docs" / "reference" / "cli.md"), "--check"]) == 0
