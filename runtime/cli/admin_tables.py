"""What ``pybmq admin`` reads in a broker's answers: whether a text answer is an error, and the
text tables some JSON answers carry as one string (the simulator's STAT SHOW), as rows."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["is_error_text", "structured", "table_rows"]

_COLUMNS = re.compile(r"\s{2,}")


# How a broker's text answers report a failure: the broker prints an error result as its bare
# message (mqbcmd's human printer), and a command it cannot parse as "Unable to decode command
# (rc: …)"; the simulator starts its errors with "Error".
_ERROR_STARTS = ("error", "unable to decode command")
_ERROR_PHRASES = ("doesn't exist", "does not exist", "not found", "invalid command")


def is_error_text(text: str) -> bool:
    """A text-mode answer that reports a failure (an unknown command, a missing domain), read
    from its first line."""
    first = text.lstrip().split("\n", 1)[0].lower()
    return first.startswith(_ERROR_STARTS) or any(p in first for p in _ERROR_PHRASES)


def _cell(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        return text


def table_rows(text: str) -> dict[str, Any] | None:
    """A column-aligned text table (a header, then rows with the same number of columns,
    two or more spaces apart) as ``{"summary": lines before it, "rows": [{header: cell}]}``;
    None when ``text`` holds no such table."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    for start, line in enumerate(lines):
        header = _COLUMNS.split(line.strip())
        body = lines[start + 1 :]
        if len(header) < 2 or not body:
            continue
        cells = [_COLUMNS.split(row.strip()) for row in body]
        if all(len(row) == len(header) for row in cells):
            rows = [dict(zip(header, map(_cell, row), strict=True)) for row in cells]
            return {"summary": "\n".join(lines[:start]), "rows": rows}
    return None


def structured(result: Any) -> Any:
    """``result`` with every string value that is a text table replaced by its rows."""
    if isinstance(result, dict):
        return {key: structured(value) for key, value in result.items()}
    if isinstance(result, list):
        return [structured(value) for value in result]
    if isinstance(result, str) and "\n" in result:
        table = table_rows(result)
        return result if table is None else table
    return result
