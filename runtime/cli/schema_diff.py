"""``pybmq schema-diff OLD NEW``: list every change between two schema revisions, with its class.

Works on BDE-style XSDs (control messages) and on the binary layout spec (``*.yaml``); both files
must be of the same kind. Every change carries the file and line it is at. Exit status: 0, or 1
when a change at or above ``--fail-on`` is found, 2 when an input cannot be read.

example: pybmq schema-diff old/bmqp_ctrlmsg.xsd schema/bmqp_ctrlmsg.xsd --format github
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from pybmq.cli.common import Subcommands, closed_pipe_is_quiet, describe
from pybmq.cli.schema_locate import locate, shared_share
from pybmq.cli.schema_reports import write_junit, write_sarif
from pybmq.codegen import require_extra
from pybmq.errors import SchemaError

if TYPE_CHECKING:
    from pybmq.codegen.schemadiff import Change, SchemaDiff

__all__ = [
    "LAYOUT_SUFFIXES",
    "XSD_SUFFIXES",
    "add_parser",
    "compare",
    "handler",
    "to_json",
    "write_github",
    "write_text",
]

XSD_SUFFIXES = {".xsd"}
LAYOUT_SUFFIXES = {".yaml", ".yml"}


def add_parser(subparsers: Subcommands) -> None:
    parser = subparsers.add_parser(
        "schema-diff",
        help="classify the changes between two schema revisions (XSD or layout spec)",
        description=describe(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("old", type=Path, help="the older revision (.xsd or .yaml)")
    parser.add_argument("new", type=Path, help="the newer revision (same kind)")
    parser.add_argument(
        "--format",
        choices=("text", "json", "github", "sarif", "junit"),
        default="text",
        help="text (default), json, github (workflow annotations), sarif or junit",
    )
    parser.add_argument(
        "--fail-on",
        choices=("wire", "api", "none"),
        default="wire",
        help="exit 1 when a change of this class or worse is found (default: wire)",
    )
    parser.set_defaults(func=handler)


def compare(old: Path, new: Path) -> SchemaDiff:
    """Diff two files of the same kind, chosen by suffix (SchemaError otherwise)."""
    from pybmq.codegen.layoutdiff import diff_layout_files
    from pybmq.codegen.schemadiff import diff_files

    kinds = {_kind(old), _kind(new)}
    if len(kinds) != 1:
        raise SchemaError(f"cannot compare {old.name} with {new.name}: not the same kind of schema")
    for path in (old, new):
        if not path.is_file():
            raise SchemaError(f"cannot read {path}: no such file")
    if kinds == {"layout"}:
        return diff_layout_files(old, new)
    return diff_files(old, new)


def _kind(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in XSD_SUFFIXES:
        return "xsd"
    if suffix in LAYOUT_SUFFIXES:
        return "layout"
    raise SchemaError(f"{path.name}: expected a .xsd schema or a .yaml layout spec")


def handler(args: argparse.Namespace) -> int:
    require_extra("pybmq schema-diff")
    from pybmq.codegen.schemadiff import Compat

    result = compare(args.old, args.new)
    _warn_if_unrelated(result, args.old, args.new)
    with closed_pipe_is_quiet():
        if args.format == "json":
            json.dump(to_json(result, args.old, args.new), sys.stdout, indent=2)
            sys.stdout.write("\n")
        elif args.format == "github":
            write_github(result, args.old, args.new, sys.stdout)
        elif args.format == "sarif":
            write_sarif(result, args.old, args.new, sys.stdout)
        elif args.format == "junit":
            threshold = Compat.from_fail_on(args.fail_on)
            write_junit(result, args.old, args.new, threshold, sys.stdout)
        else:
            write_text(result, sys.stdout, args.old, args.new)
        sys.stdout.flush()
    return 1 if result.fails(Compat.from_fail_on(args.fail_on)) else 0


def _warn_if_unrelated(result: SchemaDiff, old: Path, new: Path) -> None:
    """Two schemas that share almost no names are likely the wrong files, not a revision."""
    removed = {c.path for c in result.changes if "." not in c.path and "removed" in c.kind}
    added = {c.path for c in result.changes if "." not in c.path and "added" in c.kind}
    kept = {c.path.split(".")[0] for c in result.changes} - removed - added
    if removed and added and shared_share(removed | kept, added | kept) < 0.1:
        print(
            f"pybmq schema-diff: warning: {old.name} and {new.name} share almost nothing "
            f"({len(removed)} types removed, {len(added)} added): are they revisions of one schema?",
            file=sys.stderr,
        )


def write_github(result: SchemaDiff, old: Path, new: Path, out: TextIO) -> None:
    """GitHub workflow commands: an error per wire-breaking change, a warning per other."""
    for change in result.changes:
        path, line = locate(change, old, new)
        level = "error" if change.encodings or change.compat.label == "wire" else "warning"
        message = f"{change.kind}, {change.detail}. {change.reason}".replace("\n", " ")
        title = f"{change.compat.label}: {change.path}"
        out.write(f"::{level} file={path},line={line},title={title}::{message}\n")


def to_json(result: SchemaDiff, old: Path, new: Path) -> dict[str, object]:
    worst = result.worst
    return {
        "old": result.old_label,
        "new": result.new_label,
        "worst": worst.label if worst is not None else None,
        "counts": result.counts(),
        "changes": [_located(change, old, new) for change in result.changes],
    }


def _located(change: Change, old: Path, new: Path) -> dict[str, object]:
    path, line = locate(change, old, new)
    return {**change.to_json(), "file": str(path), "line": line}


def write_text(result: SchemaDiff, out: TextIO, old: Path, new: Path) -> None:
    out.write(f"{result.old_label} -> {result.new_label}\n")
    width = max((len(c.compat.label) for c in result.changes), default=0)
    for change in result.changes:
        encodings = f" [breaks {', '.join(change.encodings)}]" if change.encodings else ""
        out.write(
            f"{change.compat.label:<{width}}  {change.path}: {change.kind}, {change.detail}\n"
        )
        out.write(f"{'':<{width}}    why: {change.reason}{encodings}\n")
        path, line = locate(change, old, new)
        out.write(f"{'':<{width}}    at: {path}:{line}\n")
    counts = result.counts()
    summary = ", ".join(f"{n} {label}" for label, n in counts.items() if n)
    n = len(result.changes)
    out.write(f"{n} change{'' if n == 1 else 's'}" + (f" ({summary})" if summary else "") + "\n")
