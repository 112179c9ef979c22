"""``pybmq consume URI [--count N]``: read (and confirm) messages and say how many."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from pybmq.cli.common import (
    Outcome,
    Subcommands,
    add_json_argument,
    add_session_arguments,
    progress_bar,
    report,
    session_options,
    supervise,
)

EXIT_CODES = (
    "exit codes: 0 done (--count reached, or idle with no --count), 1 --count not reached before "
    "--idle-timeout, 2 bad usage, 3 connection/broker failure, 4 --timeout, 130 Ctrl-C"
)


def add_parser(subparsers: Subcommands) -> None:
    parser = subparsers.add_parser(
        "consume",
        help="consume messages from a queue",
        description=(
            "Read messages from a queue, confirming each (unless --no-confirm), and print one "
            "summary line on every exit: received, confirmed, unconfirmed, rate."
        ),
        epilog=(
            "example: pybmq consume bmq://bmq.test.mem.priority/q1 --count 10000 "
            "--idle-timeout 5 --json\n" + EXIT_CODES
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("uri", help="queue URI; bmq://domain/queue?id=app for a fanout app")
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
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop when no message came for this long (default: wait forever)",
    )
    parser.add_argument(
        "--max-unconfirmed", type=int, default=1000, help="flow-control window (default 1000)"
    )
    parser.add_argument("--print", dest="show", action="store_true", help="print each payload")
    add_json_argument(parser)
    add_session_arguments(parser)
    parser.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from pybmq.client.loadgen import Stats
    from pybmq.errors import UsageError

    if args.count is not None and args.count < 1:
        raise UsageError("--count must be >= 1")
    if args.idle_timeout is not None and args.idle_timeout <= 0:
        raise UsageError("--idle-timeout must be > 0 seconds")
    options = session_options(args)
    stats = Stats()
    outcome, reason = asyncio.run(supervise(_consume(args, options, stats), args.timeout))
    if outcome is None:
        complete = args.count is None or stats.count >= args.count
        outcome = Outcome.DONE if complete else Outcome.INCOMPLETE
    summary = {
        "command": "consume",
        "uri": args.uri,
        "outcome": outcome,
        "reason": reason,
        "received": stats.count,
        "confirmed": stats.confirmed,
        "unconfirmed": stats.count - stats.confirmed,
        "seconds": round(stats.seconds, 3),
        "rate": round(stats.rate, 1),
    }
    line = (
        f"consume {args.uri}: received {stats.count}, confirmed {stats.confirmed}, "
        f"unconfirmed {stats.count - stats.confirmed} in {stats.seconds:.2f} s "
        f"({stats.rate:,.0f} msgs/s)"
    )
    return report(args, summary, line)


def _show(message: Any) -> None:
    print(message.payload.decode(errors="replace"), dict(message.properties) or "", flush=True)


async def _consume(args: argparse.Namespace, options: Any, stats: Any) -> None:
    from pybmq.client.aio import AsyncSession
    from pybmq.client.loadgen import consume_messages
    from pybmq.client.options import QueueOptions

    queue_options = QueueOptions(max_unconfirmed_messages=args.max_unconfirmed)
    async with AsyncSession(options=options, connect_timeout=args.connect_timeout) as session:
        queue = await session.open_queue(args.uri, read=True, options=queue_options)
        with progress_bar(args, "consume") as bar:
            task = bar.add_task("consume", total=args.count)
            await consume_messages(
                queue,
                args.count,
                confirm=args.confirm,
                idle_timeout=args.idle_timeout,
                progress=lambda n: bar.advance(task, n),
                on_message=_show if args.show else None,
                stats=stats,
            )
        await queue.close()
