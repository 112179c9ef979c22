"""The documentation's drawings, made from the code so that they cannot drift: a state diagram of
every transition table (``docs/states.md``) and the client engine's parts with what each holds
(``docs/architecture.md``), each between two markers.

``python -m pybmq.cli.drawings`` (``make drawings``) rewrites both blocks; ``--check`` exits 1
when one is not current (a test runs it).
"""

from __future__ import annotations

import argparse
import enum
import importlib
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pybmq.client.engine import ClientEngine
from pybmq.statemachine import mermaid

__all__ = [
    "DOCS",
    "PARTS",
    "STATES",
    "TABLE_MODULES",
    "Table",
    "engine_parts",
    "main",
    "replace_block",
    "state_diagrams",
    "tables",
]

# The modules that hold transition tables (the architecture test holds this list to the code:
# every module using the table step is one of them).
TABLE_MODULES = ("pybmq.client.fsm", "pybmq.sim.states")
STATES = ("<!-- state-diagrams:start (make drawings) -->", "<!-- state-diagrams:end -->")
PARTS = ("<!-- engine-parts:start (make drawings) -->", "<!-- engine-parts:end -->")
DOCS = Path(__file__).resolve().parents[2] / "docs"
Table = Mapping[tuple[enum.Enum, enum.Enum], enum.Enum]


def tables() -> list[tuple[str, str, Table]]:
    """(module, name, table) of every transition table, in the modules' order."""
    found = []
    for module_name in TABLE_MODULES:
        module = importlib.import_module(module_name)
        for name, value in vars(module).items():
            if name.endswith("_TRANSITIONS") and isinstance(value, Mapping):
                found.append((module_name, name, value))
    return found


def state_diagrams() -> str:
    """One section per table: its state enum's docstring and its diagram."""
    parts = []
    for module, name, table in tables():
        states = type(next(iter(table.values())))
        title = name.removesuffix("_TRANSITIONS").replace("_", " ").lower()
        doc = " ".join((states.__doc__ or "").split())
        if doc.startswith("An enumeration") or doc.startswith("Create a collection"):
            doc = ""  # enum's own default docstring
        parts.append(f"### {title}: `{module}.{name}`\n")
        if doc:
            parts.append(f"{doc}\n")
        parts.append(f"```mermaid\n{mermaid(table)}```\n")
    return "\n".join(parts)


# Held by parts, but settings and statistics rather than parts: drawn, never looked into.
_LEAVES = ("pybmq.client.options", "pybmq.client.stats")


def _is_part(value: object) -> bool:
    """An object of one of pybmq's classes with state of its own (not a record or an enum)."""
    module = type(value).__module__
    return (
        module.startswith(("pybmq.client.", "pybmq.wire."))
        and module not in ("pybmq.client.stats",)
        and not isinstance(value, (enum.Enum, tuple))
        and (hasattr(value, "__dict__") or hasattr(type(value), "__slots__"))
    )


def _attributes(value: object) -> dict[str, Any]:
    names: dict[str, Any] = dict(getattr(value, "__dict__", {}))
    for cls in type(value).__mro__:
        for slot in getattr(cls, "__slots__", ()):
            if hasattr(value, slot):
                names[slot] = getattr(value, slot)
    return names


def engine_parts() -> str:
    """A Mermaid flowchart of a new ``ClientEngine``: every part it holds, and for every part
    which other parts (and parts of parts) it was given. Nothing holds the engine."""
    engine = ClientEngine()
    names: dict[int, str] = {}
    held = {name.lstrip("_"): value for name, value in _attributes(engine).items()}
    held["options"] = held.pop("options", None) or _attributes(engine)["_options"]
    for name, value in held.items():
        if _is_part(value):
            names[id(value)] = name
    edges: list[tuple[str, str]] = [("engine", name) for name in names.values()]
    queue = [value for value in held.values() if id(value) in names]
    while queue:
        part = queue.pop(0)
        if type(part).__module__ in _LEAVES:
            continue
        for attribute, value in _attributes(part).items():
            value = getattr(value, "__self__", value)  # a bound method: its object
            if not _is_part(value) or value is engine:
                continue
            if id(value) not in names:  # a part of a part: named after its holder's attribute
                names[id(value)] = attribute.lstrip("_")
                queue.append(value)
            edge = (names[id(part)], names[id(value)])
            if edge not in edges:
                edges.append(edge)
    lines = ["flowchart LR"]
    for source, target in edges:
        lines.append(f"    {source} --> {target}")
    return "```mermaid\n" + "\n".join(lines) + "\n```\n"


def replace_block(text: str, markers: tuple[str, str], block: str) -> str:
    start, end = markers
    head, found_start, rest = text.partition(start)
    _, found_end, tail = rest.partition(end)
    if not found_start or not found_end:
        raise SystemExit(f"the markers {start!r} and {end!r} are missing")
    return f"{head}{start}\n{block}{end}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pybmq.cli.drawings", description=__doc__)
    parser.add_argument("--docs", type=Path, default=DOCS, help="the docs folder")
    parser.add_argument("--check", action="store_true", help="exit 1 if a drawing is not current")
    args = parser.parse_args(argv)
    stale = []
    for page, markers, block in (
        (args.docs / "states.md", STATES, state_diagrams()),
        (args.docs / "architecture.md", PARTS, engine_parts()),
    ):
        text = page.read_text(encoding="utf-8")
        updated = replace_block(text, markers, block)
        if updated != text:
            stale.append(page)
            if not args.check:
                page.write_text(updated, encoding="utf-8")
    if args.check and stale:
        print(f"not current: {', '.join(map(str, stale))}: run make drawings")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
