"""The CLI reference page is the parsers' own --help, current.

argparse's wording differs between Python versions (3.10 adds "(default: True)" to a boolean
flag's help, 3.13 lists an option's metavar once), so the page names the Python it was rendered
with and the check runs on that version only.
"""

from __future__ import annotations

import re
import sys

import pytest
from pybmq.cli.reference import main

from tests.helpers.paths import REPO_ROOT

PAGE = REPO_ROOT / "docs" / "reference" / "cli.md"


def test_cli_reference_page_is_current() -> None:
    rendered_with = re.search(r"cli-reference rendered with Python (\d+\.\d+)", PAGE.read_text())
    assert rendered_with is not None, "the page must say which Python rendered it"
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    if running != rendered_with.group(1):
        pytest.skip(f"rendered with Python {rendered_with.group(1)}, argparse here is {running}'s")
    assert main([str(PAGE), "--check"]) == 0
