"""``pybmq schema-check``: the CI gate — schema/ against schema/baseline/ and the allow-list.

Fails (exit 1) on a wire-breaking change that ``schema/allowed-changes.yaml`` does not name, on an
allow-list entry that matches nothing, and on a schema file without a baseline. Exit 2 when a
schema or the allow-list cannot be read. ``--update-baseline`` copies schema/ into the baseline.

example: pybmq schema-check --schema-dir schema
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pybmq.cli.common import Subcommands, closed_pipe_is_quiet, describe
from pybmq.cli.schema_locate import locate
from pybmq.cli.validate import as_path, existing_dir, readable_file
from pybmq.codegen import require_extra

__all__ = ["add_parser", "handler"]


def add_parser(subparsers: Subcommands) -> None:
    parser = subparsers.add_parser(
        "schema-check",
        help="CI gate: fail on unreviewed wire-breaking schema changes",
        description=describe(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--schema-dir",
        type=as_path(existing_dir),
        default=Path("schema"),
        help="schemas to check (default schema)",
    )
    parser.add_argument("--baseline-dir", type=Path, help="default: SCHEMA_DIR/baseline")
    parser.add_argument(
        "--allow-list", type=as_path(readable_file), help="default: SCHEMA_DIR/allowed-changes.yaml"
    )
    parser.add_argument(
        "--update-baseline",
        action="store_true",
        help="after review: copy the schema files into the baseline (then empty the allow-list)",
    )
    parser.add_argument(
        "--format",
        choices=("text", "github"),
        default="text",
        help="text (default), or github: also an ::error annotation per blocked change",
    )
    parser.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    with closed_pipe_is_quiet():
        return _check(args)
    return 1  # the reader went away before the verdict


def _check(args: argparse.Namespace) -> int:
    require_extra("pybmq schema-check")
    from pybmq.codegen.schemacheck import check, update_baseline
    from pybmq.codegen.schemadiff import Compat

    if args.update_baseline:
        names = update_baseline(args.schema_dir, args.baseline_dir)
        print(f"baseline updated: {', '.join(names)}")
        return 0
    result = check(args.schema_dir, args.baseline_dir, args.allow_list)
    for name, diff in result.diffs.items():
        counts = ", ".join(f"{n} {label}" for label, n in diff.counts().items() if n)
        print(f"{name}: {counts or 'unchanged'}")
        if args.verbose:  # -v (the shared logging flag) also lists compatible/api changes
            for change in diff.changes:
                if change.compat < Compat.WIRE:
                    print(
                        f"  {change.compat.label:<8} {change.path} ({change.kind}, {change.detail})"
                    )
    for name, change, allowance in result.allowed:
        print(f"  allowed  {name}: {change.path} ({change.kind}): {allowance.reason}")
    for name, change in result.blocking:
        print(f"  BLOCKED  {name}: {change.path} ({change.kind}, {change.detail})")
        print(f"           why: {change.reason}")
        if args.format == "github":
            baseline = args.baseline_dir or args.schema_dir / "baseline"
            path, line = locate(change, baseline / name, args.schema_dir / name)
            print(f"::error file={path},line={line},title=wire-breaking: {change.path}::"
                  f"{change.kind}, {change.detail}. {change.reason}")  # fmt: skip
    for allowance in result.unused:
        print(f"  STALE    allow-list entry {allowance.file}: {allowance.path} matches no change")
    for problem in result.problems:
        print(f"  PROBLEM  {problem}")
    if result.ok:
        print("schema-check: OK")
        return 0
    print(
        "schema-check: FAILED. Review each blocked change; if it is intended, name it in "
        "schema/allowed-changes.yaml with a reason (see docs/guide/schema.md)."
    )
    return 1
