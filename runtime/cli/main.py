"""The ``pybmq`` command line: one module per subcommand, listed in ``SUBCOMMANDS``.

Each subcommand module defines ``add_parser(subparsers)``, which adds its parser and sets
``func=handler`` on it; ``handler(args) -> int`` returns the exit status.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable

from pybmq._version import __version__
from pybmq.cli.common import EXIT_CODES, add_logging_arguments, configure_logging
from pybmq.errors import PybmqError
from pybmq.printable import escape_controls

__all__ = ["SUBCOMMANDS", "build_parser", "build_parsers", "main"]

# Subcommand modules, in the order `pybmq --help` lists them.
SUBCOMMANDS: list[str] = [
    "pybmq.cli.post",
    "pybmq.cli.consume",
    "pybmq.cli.sim",
    "pybmq.cli.broker",
    "pybmq.cli.decode",
    "pybmq.cli.tap",
    "pybmq.cli.admin",
    "pybmq.cli.tool",
    "pybmq.cli.schema_diff",
    "pybmq.cli.schema_check",
    "pybmq.cli.generate",
]


def build_parser() -> argparse.ArgumentParser:
    return build_parsers()[0]


def build_parsers() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The ``pybmq`` parser, and each subcommand's parser by name (for the CLI reference)."""
    parser = argparse.ArgumentParser(
        prog="pybmq",
        description="BlazingMQ tools in pure Python.",
        epilog=EXIT_CODES.format(
            partial="some posts NACKed (post), --count not reached or messages not written "
            "(consume), an error answer (admin)"
        ),
    )
    parser.add_argument("--version", action="version", version=f"pybmq {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in SUBCOMMANDS:
        importlib.import_module(module_name).add_parser(subparsers)
    for subparser in subparsers.choices.values():
        if not subparser.get_default("own_logging"):  # tool: bmqtool's -v and -q mean other things
            add_logging_arguments(subparser)
    return parser, dict(subparsers.choices)


def main(argv: list[str] | None = None) -> int:
    parser, subparsers = build_parsers()
    try:  # a bad argument ends here, with the flag named (argparse's exit status 2)
        args, extra = parser.parse_known_args(argv)
        if extra:
            if args.command is None:
                parser.error(f"unrecognized arguments: {' '.join(extra)}")
            _late_positional(subparsers[args.command], args, extra)
    except SystemExit as exc:  # also --help and --version (0): returned, for in-process callers
        return exc.code if isinstance(exc.code, int) else 2
    if args.command is None:
        parser.print_help()
        return 2
    if not getattr(args, "own_logging", False):
        configure_logging(args)
    try:
        status: int = args.func(args)
    except PybmqError as exc:
        print(f"pybmq {args.command}: {escape_controls(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return status


def _late_positional(
    parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]
) -> None:
    """An optional positional given after flags (``post URI --jsonl -``): argparse has already
    filled it with its default when it met the first positional, and leaves the value over.
    A subcommand names such a positional, and its type, with ``set_defaults(late_positional=
    (dest, type))``."""
    late: tuple[str, Callable[[str], object]] | None = getattr(args, "late_positional", None)
    unexpected = len(extra) != 1 or (extra[0].startswith("-") and extra[0] != "-")
    if late is None or unexpected or getattr(args, late[0]) is not None:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    dest, kind = late
    try:
        setattr(args, dest, kind(extra[0]))
    except (argparse.ArgumentTypeError, ValueError) as exc:
        parser.error(f"argument {dest}: {exc}")


if __name__ == "__main__":
    sys.exit(main())
