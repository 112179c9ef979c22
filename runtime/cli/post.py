"""``pybmq post URI --count N --size B``: post messages to a queue and report the ACK rate."""

from __future__ import annotations

import argparse
import asyncio

from pybmq.cli.security import add_security_arguments, security_options
from pybmq.uri import DEFAULT_BROKER


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("post", help="post messages to a queue")
    parser.add_argument("uri", help="queue URI, e.g. bmq://bmq.test.mem.priority/q1")
    parser.add_argument("--count", type=int, default=1, help="messages to post (default 1)")
    parser.add_argument("--size", type=int, default=100, help="payload bytes (default 100)")
    parser.add_argument("--properties", help="message properties: k=v,k2=7 (ints become ints)")
    parser.add_argument("--broker", default=DEFAULT_BROKER, help=f"default {DEFAULT_BROKER}")
    parser.add_argument(
        "--compress-above",
        type=int,
        default=0,
        metavar="BYTES",
        help="zlib-compress payloads of at least BYTES bytes (default: never)",
    )
    parser.add_argument("--window", type=int, default=20_000, help="max unacknowledged posts")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    add_security_arguments(parser)
    parser.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> int:
    from pybmq.client.aio import AsyncSession
    from pybmq.client.loadgen import make_payload, parse_properties, post_messages
    from pybmq.client.options import SessionOptions
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    payload = make_payload(args.size)
    properties = parse_properties(args.properties)
    console = Console(stderr=True)
    options = SessionOptions(compression_threshold=args.compress_above, **security_options(args))
    async with AsyncSession(args.broker, options=options) as session:
        queue = await session.open_queue(args.uri, write=True)
        with Progress(
            TextColumn("post"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=args.quiet,
            transient=True,
        ) as bar:
            task = bar.add_task("post", total=args.count)
            stats = await post_messages(
                queue,
                args.count,
                payload,
                properties=properties,
                window=args.window,
                progress=lambda n: bar.advance(task, n),
            )
        await queue.close()
    print(
        f"posted {stats.count} messages of {args.size} B to {args.uri}: "
        f"{stats.rate:,.0f} msgs/s ({stats.seconds:.2f} s)"
        + (f"; {stats.failed} NACKed {stats.failures}" if stats.failed else "")
    )
    return 0 if stats.failed == 0 else 1
