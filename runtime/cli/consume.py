"""``pybmq consume URI [--count N]``: read (and confirm) messages, write them out, say how many.

Each message can be written, before it is confirmed, to stdout as a JSON Lines record
(``--jsonl``: payload as text or base64, typed properties, GUID, queue, compression; what
``pybmq post --jsonl -`` reads back), as one line of a ``--format`` template, or as ``--print``
text; and raw to a file in ``--out-dir``. With --jsonl, --format or --print --json the summary
goes to stderr, so stdout holds nothing but messages. One summary on every exit: received, confirmed,
unconfirmed, rate, and the run's time from connecting to the end.

Text output (--format, --print) is one line per message, with the control characters of its
content (ESC, BEL, CR, newlines) written as \\xNN unless --raw. A message it cannot write (a line
over --max-line-size, a payload that could not be read) is named on stderr with its number and
GUID and left unconfirmed; the run goes on (exit 1 at the end) or, with --on-render-error stop,
ends there (exit 2).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

from pybmq.cli.common import (
    EXIT_CODES,
    Outcome,
    Subcommands,
    add_json_argument,
    add_session_arguments,
    closed_pipe_is_quiet,
    describe,
    progress_bar,
    report,
    session_options,
    supervise,
)
from pybmq.cli.template import MAX_WIDTH
from pybmq.cli.validate import integer, output_dir, seconds, text
from pybmq.client.options import MAX_DEDUP_WINDOW

__all__ = ["DEFAULT_MAX_TEXT", "EPILOG", "add_parser", "handler"]

# The longest line --format or --print writes for one message, by default.
DEFAULT_MAX_TEXT = 1 << 20

EPILOG = (
    "example:\n"
    "  pybmq consume bmq://bmq.test.mem.priority/q1 --count 10000 --idle-timeout 5 --json\n"
    "  pybmq consume bmq://bmq.test.mem.priority/q1 --format '{n} {guid} {size} B: {payload}'\n"
    "  pybmq consume bmq://bmq.test.mem.priority/q1 --jsonl --idle-timeout 1 > saved.jsonl\n"
    "  pybmq consume bmq://bmq.test.mem.priority/q1 --out-dir messages/ --idle-timeout 1\n"
    "--format fields: {payload} {payload_base64} {size} {guid} {queue} {properties} "
    "{compression} {n},\n  each optionally with a spec: {payload:.80} (cut), {size:>8} (width, "
    "at most " + str(MAX_WIDTH) + "), {n:05d}, {size:,}, {size:x};\n  {{ and }} are braces, "
    "\\n \\t \\\\ a newline, a tab, a backslash\n"
    + EXIT_CODES.format(
        partial="--count not reached before --idle-timeout, or some messages not written "
        "(--format/--print could not render them; left unconfirmed)"
    )
)


def add_parser(subparsers: Subcommands) -> None:
    parser = subparsers.add_parser(
        "consume",
        help="consume messages from a queue",
        description=describe(__doc__),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "uri", type=text, help="queue URI; bmq://domain/queue?id=app for a fanout app"
    )
    parser.add_argument(
        "--count",
        type=int,
        help="stop after N messages (default: until --idle-timeout, --timeout or Ctrl-C)",
    )
    parser.add_argument(
        "--confirm",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="confirm each message (default) or leave them unconfirmed",
    )
    parser.add_argument(
        "--idle-timeout",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="stop when no message came for this long (default: wait forever)",
    )
    parser.add_argument(
        "--max-unconfirmed",
        type=integer(1),
        default=1000,
        help="flow-control window, in messages (default 1000)",
    )
    parser.add_argument(
        "--dedup-window",
        type=integer(0, MAX_DEDUP_WINDOW),
        default=0,
        metavar="N",
        help="remember the last N GUIDs delivered and drop a repeat of one (a failover can "
        "deliver a message twice); 0, the default: off",
    )
    parser.add_argument(
        "--dedup-window-age",
        type=seconds,
        default=300.0,
        metavar="SECONDS",
        help="how long a GUID stays in the --dedup-window (default 300)",
    )
    output = parser.add_argument_group("message output (to stdout, except --out-dir)")
    shown = output.add_mutually_exclusive_group()
    shown.add_argument(
        "--print", dest="show", action="store_true", help="print each payload and its properties"
    )
    shown.add_argument("--jsonl", action="store_true", help="one JSON Lines record per message")
    shown.add_argument(
        "--format",
        type=text,
        metavar="TEMPLATE",
        help="one line per message from TEMPLATE, e.g. '{n} {guid} {payload}'",
    )
    output.add_argument(
        "--raw",
        action="store_true",
        help="with --format or --print: write control characters of message content as they are "
        "(default: as \\xNN, so a message cannot drive the terminal)",
    )
    output.add_argument(
        "--max-line-size",
        type=integer(1),
        default=DEFAULT_MAX_TEXT,
        metavar="CHARS",
        help=f"with --format or --print: the longest line one message may make (default "
        f"{DEFAULT_MAX_TEXT}); a longer one is not written",
    )
    output.add_argument(
        "--on-render-error",
        choices=("skip", "stop"),
        default="skip",
        help="a message --format or --print cannot write: report it and go on (skip, the "
        "default; exit 1 at the end) or end the run (stop, exit 2); either way it stays "
        "unconfirmed",
    )
    output.add_argument(
        "--base64",
        action="store_true",
        help="with --jsonl: every payload as payload_base64 (default: text when UTF-8)",
    )
    output.add_argument(
        "--out-dir",
        type=output_dir,
        metavar="DIR",
        help="write each payload, raw, to DIR/<n>-<guid>.bin (created if missing)",
    )
    add_json_argument(parser)
    add_session_arguments(parser)
    parser.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from pybmq.cli import sinks as outputs
    from pybmq.cli import template
    from pybmq.cli.flow import ConsumeCounts, rate_text
    from pybmq.errors import UsageError

    if args.count is not None and args.count < 1:
        raise UsageError("--count must be >= 1")
    parsed = template.parse(args.format) if args.format else None
    options = session_options(args)
    sinks: list[outputs.Sink] = []
    if args.jsonl:
        sinks.append(outputs.jsonl_sink(sys.stdout, args.base64))
    elif parsed is not None:
        sinks.append(outputs.format_sink(sys.stdout, parsed, args.raw, args.max_line_size))
    elif args.show:
        sinks.append(outputs.print_sink(sys.stdout, args.raw, args.max_line_size))
    # Machine-read stdout holds messages only; the summary then goes to stderr. (--print
    # alone is for a person: its summary stays the last line of stdout.)
    to_stdout = bool(sinks) and (args.json or not args.show)
    if args.out_dir:
        sinks.append(outputs.folder_sink(args.out_dir))
    counts = ConsumeCounts()
    started = time.perf_counter()  # the summary's time covers connecting and negotiating too
    outcome, reason = asyncio.run(supervise(_consume(args, options, counts, sinks), args.timeout))
    seconds = time.perf_counter() - started
    with closed_pipe_is_quiet():
        sys.stdout.flush()
    if outcome is None:
        complete = args.count is None or counts.received >= args.count
        outcome = Outcome.DONE if complete else Outcome.INCOMPLETE
        if counts.unwritten:
            outcome = Outcome.INCOMPLETE
            reason = f"{counts.unwritten} not written, left unconfirmed"
    measured = counts.rate
    summary = {
        "command": "consume",
        "uri": args.uri,
        "outcome": outcome,
        "reason": reason,
        "received": counts.received,
        "confirmed": counts.confirmed,
        "unconfirmed": counts.unconfirmed,
        "unwritten": counts.unwritten,
        "seconds": round(seconds, 3),
        "rate": None if measured is None else round(measured, 1),
    }
    unwritten = f", unwritten {counts.unwritten}" if counts.unwritten else ""
    line = (
        f"consume {args.uri}: received {counts.received}, confirmed {counts.confirmed}, "
        f"unconfirmed {counts.unconfirmed}{unwritten} in {seconds:.2f} s "
        f"({rate_text(measured)})"
    )
    return report(args, summary, line, sys.stderr if to_stdout else sys.stdout)


async def _consume(args: argparse.Namespace, options: Any, counts: Any, sinks: list[Any]) -> None:
    from pybmq.cli import flow
    from pybmq.cli.session import close_queue, open_queue, start_session
    from pybmq.client.options import QueueOptions

    queue_options = QueueOptions(
        max_unconfirmed_messages=args.max_unconfirmed,
        dedup_window=args.dedup_window,
        dedup_window_age=args.dedup_window_age,
    )
    session = await start_session(args, options)
    try:
        queue = await open_queue(args, session, args.uri, read=True, options=queue_options)
        with progress_bar(args, "consume") as bar:
            task = bar.add_task("consume", total=args.count)
            await flow.consume(
                queue,
                args.count,
                counts,
                confirm=args.confirm,
                idle_timeout=args.idle_timeout,
                sinks=sinks,
                progress=lambda n: bar.advance(task, n),
                unwritten=lambda message, n, exc: _unwritten(args, message, n, exc),
            )
        await close_queue(args, session, queue)
    finally:
        await session.stop()


def _unwritten(args: argparse.Namespace, message: Any, number: int, error: Exception) -> None:
    """A message --format or --print could not write: named on stderr (skip), or the end of
    the run (stop)."""
    from pybmq.cli.content import ContentError
    from pybmq.cli.template import LineTooLong
    from pybmq.printable import escape_controls

    why = f"{error} (--max-line-size)" if isinstance(error, LineTooLong) else str(error)
    what = f"message {number} (GUID {message.guid.hex()}) not written: {why}"
    if args.on_render_error == "stop":
        raise ContentError(f"{what}; the run stops there (--on-render-error stop)")
    print(f"pybmq consume: {escape_controls(what)}; left unconfirmed", file=sys.stderr, flush=True)
