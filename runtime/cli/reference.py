"""The CLI reference page, rendered from the parsers themselves so that it cannot drift:
``python -m pybmq.cli.reference docs/reference/cli.md`` rewrites the block between the two markers, and
``--check`` exits 1 when the block is not current (a test runs it)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from pybmq.cli.main import build_parsers

__all__ = ["END", "START", "WIDTH", "main", "render", "replace_block"]

START = "<!-- cli-reference:start (make cli-reference) -->"
END = "<!-- cli-reference:end -->"
WIDTH = "100"


def render() -> str:
    """Every subcommand's --help, at a fixed width, as Markdown."""
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        _, subcommands = build_parsers()
        parts = []
        for name, sub in subcommands.items():
            parts.append(f"#### `pybmq {name}`\n\n```text\n{sub.format_help().rstrip()}\n```\n")
        return "\n".join(parts)
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


def replace_block(text: str, block: str) -> str:
    head, start, rest = text.partition(START)
    _, end, tail = rest.partition(END)
    if not start or not end:
        raise SystemExit(f"the markers {START!r} and {END!r} are missing")
    return f"{head}{START}\n{block}{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pybmq.cli.reference", description=__doc__)
    parser.add_argument("readme", type=Path)
    parser.add_argument("--check", action="store_true", help="exit 1 if the block is not current")
    args = parser.parse_args(argv)
    text = args.readme.read_text(encoding="utf-8")
    updated = replace_block(text, render())
    if args.check:
        if updated != text:
            print(f"{args.readme}: the CLI reference is not current: run make cli-reference")
            return 1
        return 0
    args.readme.write_text(updated, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
