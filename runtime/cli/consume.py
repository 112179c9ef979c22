"""``pybmq consume URI [--count N]``: read (and confirm) messages and report the rate."""

from __future__ import annotations

import argparse
import asyncio

from pybmq.cli.security import add_security_arguments, security_options
from pybmq.uri import DEFAULT_BROKER


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("consume", help="consume messages from a queue")
    parser.add_argument("uri", help="queue URI; bmq://domain/queue?id=app for a fanout app")
    parser.add_argument("--count", type=int, help="stop after N messages (default: run until idle)")
    parser.add_argument(
        "--confirm",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="confirm each message (default) or leave them unconfirmed",
    )
    parser.add_argument("--broker", default=DEFAULT_BROKER, help=f"default {DEFAULT_BROKER}")
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop when no message came for this long (default: wait forever)",
    )
    parser.add_argument("--max-unconfirmed", type=int, default=1000, help="flow-control window")
    parser.add_argument("--print", dest="show", action="store_true", help="print each payload")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    add_security_arguments(parser)
    parser.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> int:
    from pybmq.client.aio import AsyncSession
    from pybmq.client.loadgen import consume_messages
    from pybmq.client.options import QueueOptions, SessionOptions
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    options = QueueOptions(max_unconfirmed_messages=args.max_unconfirmed)
    session_options = SessionOptions(**security_options(args))
    async with AsyncSession(args.broker, options=session_options) as session:
        queue = await session.open_queue(args.uri, read=True, options=options)
        if args.show:
            count = 0
            async for message in queue:
                print(message.payload.decode(errors="replace"), message.properties or "")
                if args.confirm:
                    await message.confirm()
                count += 1
                if args.count is not None and count >= args.count:
                    break
            await queue.close()
            return 0
        with Progress(
            TextColumn("consume"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=args.quiet,
            transient=True,
        ) as bar:
            task = bar.add_task("consume", total=args.count)
            stats = await consume_messages(
                queue,
                args.count,
                confirm=args.confirm,
                idle_timeout=args.idle_timeout,
                progress=lambda n: bar.advance(task, n),
            )
        await queue.close()
    verb = "consumed and confirmed" if args.confirm else "consumed"
    print(
        f"{verb} {stats.count} messages from {args.uri}: {stats.rate:,.0f} msgs/s ({stats.seconds:.2f} s)"
    )
    return 0 if args.count is None or stats.count >= args.count else 1
