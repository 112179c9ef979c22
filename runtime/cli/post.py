"""``pybmq post URI --count N --size B``: post messages and say what the broker did with them."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from pybmq.cli.common import (
    Outcome,
    Subcommands,
    add_json_argument,
    add_session_arguments,
    latency_text,
    progress_bar,
    report,
    session_options,
    supervise,
)

EXIT_CODES = "exit codes: 0 all ACKed, 1 some NACKed, 2 bad usage, 3 connection/broker failure, 4 --timeout, 130 Ctrl-C"


def add_parser(subparsers: Subcommands) -> None:
    parser = subparsers.add_parser(
        "post",
        help="post messages to a queue",
        description=(
            "Post COUNT messages of SIZE bytes to a queue, keeping at most WINDOW unacknowledged, "
            "and print one summary line on every exit (posted, ACKed, NACKed by status, "
            "unresolved, latency p50/p99/max)."
        ),
        epilog=(
            "example: pybmq post bmq://bmq.test.mem.priority/q1 --count 10000 "
            "--properties 'n:int64=3,ok:bool=true,who=me' --json\n" + EXIT_CODES
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("uri", help="queue URI, e.g. bmq://bmq.test.mem.priority/q1")
    parser.add_argument("--count", type=int, default=1, help="messages to post (default 1)")
    parser.add_argument("--size", type=int, default=100, help="payload bytes (default 100)")
    parser.add_argument(
        "--properties",
        help="name[:type]=value,... with type bool, char, short, int32, int64, string or binary "
        "(hex); untyped integers are INT32/INT64, other untyped values STRING",
    )
    parser.add_argument(
        "--compress-above",
        type=int,
        default=0,
        metavar="BYTES",
        help="zlib-compress payloads of at least BYTES bytes (default: never)",
    )
    parser.add_argument(
        "--window", type=int, default=20_000, help="max unacknowledged posts (default 20000)"
    )
    add_json_argument(parser)
    add_session_arguments(parser)
    parser.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from pybmq.client.loadgen import Stats, make_payload, parse_properties
    from pybmq.errors import UsageError

    if args.window < 1:
        raise UsageError("--window must be >= 1 (0 would never post)")
    if args.count < 0:
        raise UsageError("--count must be >= 0")
    payload = make_payload(args.size)
    properties = parse_properties(args.properties)
    options = session_options(
        args,
        compression_threshold=args.compress_above,
        max_buffered_posts=max(args.window, 10_000),
    )
    stats = Stats()
    outcome, reason = asyncio.run(
        supervise(_post(args, options, payload, properties, stats), args.timeout)
    )
    if outcome is None:
        outcome = Outcome.NACKED if stats.broker_nacks else Outcome.DONE
        if stats.unresolved:
            outcome, reason = Outcome.FAILED, "some posts got no ACK"
    return report(args, _summary(args, stats, outcome, reason), _line(args, stats))


async def _post(
    args: argparse.Namespace, options: Any, payload: bytes, properties: Any, stats: Any
) -> None:
    from pybmq.client.aio import AsyncSession
    from pybmq.client.loadgen import post_messages

    async with AsyncSession(options=options, connect_timeout=args.connect_timeout) as session:
        queue = await session.open_queue(args.uri, write=True)
        with progress_bar(args, "post") as bar:
            task = bar.add_task("post", total=args.count)
            await post_messages(
                queue,
                args.count,
                payload,
                properties=properties or None,
                window=args.window,
                progress=lambda n: bar.advance(task, n),
                measure_latency=True,
                stats=stats,
            )
        await queue.close()


def _summary(args: argparse.Namespace, stats: Any, outcome: Outcome, reason: str) -> dict[str, Any]:
    return {
        "command": "post",
        "uri": args.uri,
        "outcome": outcome,
        "reason": reason,
        "posted": stats.posted,
        "acked": stats.count,
        "nacked": stats.broker_nacks,
        "unresolved": stats.unresolved,
        "seconds": round(stats.seconds, 3),
        "rate": round(stats.rate, 1),
        "latency_ms": stats.latency_ms(),
    }


def _line(args: argparse.Namespace, stats: Any) -> str:
    nacks = stats.broker_nacks
    nacked = sum(nacks.values())
    by_status = f" ({', '.join(f'{k} {v}' for k, v in nacks.items())})" if nacks else ""
    return (
        f"post {args.uri}: posted {stats.posted} of {args.size} B, ACKed {stats.count}, NACKed {nacked}{by_status}, "
        f"unresolved {stats.unresolved} in {stats.seconds:.2f} s "
        f"({stats.rate:,.0f} msgs/s){latency_text(stats.latency_ms())}"
    )
