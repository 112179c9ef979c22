"""``pybmq consume URI [--count N]``: read (and confirm) messages, write them out, say how many.

Each message can be written, before it is confirmed, to stdout as a JSON Lines record
(``--jsonl``: payload as text or base64, typed properties, GUID, queue, compression; what
``pybmq post --jsonl -`` reads back), as one line of a ``--format`` template, or as ``--print``
text; and raw to a file in ``--out-dir``. With --jsonl, --format or --print --json the summary
goes to stderr, so stdout holds nothing but messages. One summary on every exit: received, confirmed,
unconfirmed, rate.
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
from pybmq.cli.validate import integer, output_dir, seconds, text

__all__ = ["EPILOG", "add_parser", "handler"]

EPILOG = (
    "example:\n"
    "  pybmq consume bmq://bmq.test.mem.priority/q1 --count 10000 --idle-timeout 5 --json\n"
    "  pybmq consume bmq://bmq.test.mem.priority/q1 --format '{n} {guid} {size} B: {payload}'\n"
    "  pybmq consume bmq://bmq.test.mem.priority/q1 --jsonl --idle-timeout 1 > saved.jsonl\n"
    "  pybmq consume bmq://bmq.test.mem.priority/q1 --out-dir messages/ --idle-timeout 1\n"
    "--format fields: {payload} {payload_base64} {size} {guid} {queue} {properties} "
    "{compression} {n}; \\n and \\t are expanded\n"
    + EXIT_CODES.format(partial="--count not reached before --idle-timeout")
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
    from pybmq.cli import content
    from pybmq.cli.flow import ConsumeCounts, rate_text
    from pybmq.errors import UsageError

    if args.count is not None and args.count < 1:
        raise UsageError("--count must be >= 1")
    template = content.check_format(args.format) if args.format else None
    options = session_options(args)
    sinks: list[content.Sink] = []
    if args.jsonl:
        sinks.append(content.jsonl_sink(sys.stdout, args.base64))
    elif template is not None:
        sinks.append(content.format_sink(sys.stdout, template))
    elif args.show:
        sinks.append(content.print_sink(sys.stdout))
    # Machine-read stdout holds messages only; the summary then goes to stderr. (--print
    # alone is for a person: its summary stays the last line of stdout.)
    to_stdout = bool(sinks) and (args.json or not args.show)
    if args.out_dir:
        sinks.append(content.folder_sink(args.out_dir))
    counts = ConsumeCounts()
    clock = _Clock()
    work = _consume(args, options, counts, sinks, clock)
    outcome, reason = asyncio.run(supervise(work, args.timeout))
    with closed_pipe_is_quiet():
        sys.stdout.flush()
    if outcome is None:
        complete = args.count is None or counts.received >= args.count
        outcome = Outcome.DONE if complete else Outcome.INCOMPLETE
    measured = counts.rate
    summary = {
        "command": "consume",
        "uri": args.uri,
        "outcome": outcome,
        "reason": reason,
        "received": counts.received,
        "confirmed": counts.confirmed,
        "unconfirmed": counts.unconfirmed,
        "seconds": round(clock.seconds, 3),
        "rate": None if measured is None else round(measured, 1),
    }
    line = (
        f"consume {args.uri}: received {counts.received}, confirmed {counts.confirmed}, "
        f"unconfirmed {counts.unconfirmed} in {clock.seconds:.2f} s ({rate_text(measured)})"
    )
    return report(args, summary, line, sys.stderr if to_stdout else sys.stdout)


class _Clock:
    """The run's wall time, from the queue being open to the end of the run."""

    def __init__(self) -> None:
        self.start: float | None = None
        self.end: float | None = None

    @property
    def seconds(self) -> float:
        if self.start is None:
            return 0.0
        return (self.end or time.perf_counter()) - self.start


async def _consume(
    args: argparse.Namespace, options: Any, counts: Any, sinks: list[Any], clock: _Clock
) -> None:
    from pybmq.cli import flow
    from pybmq.cli.session import close_queue, open_queue, start_session
    from pybmq.client.options import QueueOptions

    queue_options = QueueOptions(max_unconfirmed_messages=args.max_unconfirmed)
    session = await start_session(args, options)
    try:
        queue = await open_queue(args, session, args.uri, read=True, options=queue_options)
        clock.start = time.perf_counter()
        try:
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
                )
        finally:
            clock.end = time.perf_counter()
        await close_queue(args, session, queue)
    finally:
        await session.stop()
