"""Where a schema change is: the file and line of the thing a ``Change.path`` names, for CI
annotations (``--format github``) and the text report."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pybmq.codegen.schemadiff import Change

__all__ = ["locate", "shared_share"]


def _patterns(component: str, yaml: bool) -> re.Pattern[str]:
    name = re.escape(component)
    if yaml:
        return re.compile(rf"^\s*-?\s*(?:name:\s*)?['\"]?{name}['\"]?\s*:?\s*$|^\s*{name}\s*:")
    return re.compile(rf"""(?:name|value)\s*=\s*['"]{name}['"]""")


def locate(change: Change, old: Path, new: Path) -> tuple[Path, int]:
    """The file (the new revision, the old one for a removal) and the 1-based line of the last
    component of ``change.path`` found after its first; line 1 when nothing matches."""
    path = old if "removed" in change.kind else new
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return path, 1
    yaml = path.suffix.lower() in (".yaml", ".yml")
    start = 0
    found = 1
    for component in change.path.split("."):
        pattern = _patterns(component, yaml)
        for index in range(start, len(lines)):
            if pattern.search(lines[index]):
                start, found = index, index + 1
                break
    return path, found


def shared_share(old_names: set[str], new_names: set[str]) -> float:
    """How much two schemas share: |common names| / |all names| (1.0 when both are empty)."""
    union = old_names | new_names
    return len(old_names & new_names) / len(union) if union else 1.0
