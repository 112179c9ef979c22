"""``pybmq post URI [PAYLOAD | -]``: post messages and say what the broker did with them.

The messages are, by the first that applies: ``--file FILE`` (one message per file, its bytes
as they are; repeatable), the PAYLOAD argument (``--count`` times), ``-`` (stdin: one message
per line, or with ``--jsonl`` one per JSON Lines record carrying its payload and typed
properties, as ``pybmq consume --jsonl`` writes them), else ``--count`` generated payloads of
``--size`` bytes. One summary line (or ``--json`` object) on every exit: posted, ACKed, NACKed
by status, unresolved, latency p50/p99/max.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from pybmq.cli.common import (
    EXIT_CODES,
    Outcome,
    Subcommands,
    add_json_argument,
    add_session_arguments,
    describe,
    latency_text,
    progress_bar,
    report,
    session_options,
    supervise,
)
from pybmq.cli.content import DEFAULT_MAX_LINE
from pybmq.cli.validate import input_file, integer, text

__all__ = ["EPILOG", "add_parser", "handler"]

EPILOG = (
    "example:\n"
    "  pybmq post bmq://bmq.test.mem.priority/q1 'hello' --properties 'n:int64=3,who=me'\n"
    "  pybmq post bmq://bmq.test.mem.priority/q1 --file a.bin --file b.bin\n"
    "  seq 10 | pybmq post bmq://bmq.test.mem.priority/q1 -\n"
    "  pybmq consume bmq://bmq.test.mem.priority/q1 --jsonl --idle-timeout 1 \\\n"
    "    | pybmq post bmq://bmq.test.mem.priority/q2 --jsonl -\n"
    + EXIT_CODES.format(partial="some posts NACKed")
)


def add_parser(subparsers: Subcommands) -> None:
    parser = subparsers.add_parser(
        "post",
        help="post messages to a queue",
        description=describe(__doc__),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("uri", type=text, help="queue URI, e.g. bmq://bmq.test.mem.priority/q1")
    parser.add_argument(
        "payload",
        nargs="?",
        type=text,
        help="the message payload (posted --count times); '-' reads messages from stdin",
    )
    parser.add_argument(
        "--file",
        action="append",
        type=input_file,
        metavar="FILE",
        help="post FILE's bytes as one message (repeatable; binary-safe; '-': all of stdin)",
    )
    parser.add_argument(
        "--jsonl",
        action="store_true",
        help="stdin holds JSON Lines records (payload or payload_base64, typed properties)",
    )
    parser.add_argument(
        "--max-line-size",
        type=integer(1),
        default=DEFAULT_MAX_LINE,
        metavar="BYTES",
        help=f"refuse a stdin line longer than this (default {DEFAULT_MAX_LINE}: any payload the "
        "broker takes, in base64, with its properties)",
    )
    parser.add_argument("--count", type=integer(0), default=1, help="messages to post (default 1)")
    parser.add_argument(
        "--size",
        type=_payload_size,
        default=100,
        help="generated payload bytes, without PAYLOAD or --file (default 100)",
    )
    parser.add_argument(
        "--properties",
        type=text,
        help="name[:type]=value,... with type bool, char, short, int32, int64, string or binary "
        "(hex); untyped integers are INT32/INT64, other untyped values STRING",
    )
    parser.add_argument(
        "--compress-above",
        type=integer(0),
        default=0,
        metavar="BYTES",
        help="zlib-compress payloads of at least BYTES bytes (default: never)",
    )
    parser.add_argument(
        "--window",
        type=int,
        default=20_000,
        help="max unacknowledged posts (default 20000)",
    )
    add_json_argument(parser)
    add_session_arguments(parser)
    parser.set_defaults(func=handler, late_positional=("payload", text))


def _properties(text: str | None) -> Any:
    """``--properties`` parsed; any error names the flag."""
    from pybmq.client.loadgen import parse_properties
    from pybmq.errors import UsageError

    try:
        return parse_properties(text)
    except (UsageError, ValueError, TypeError, OverflowError) as exc:
        raise UsageError(f"--properties: {exc}") from None


def _payload_size(value: str) -> int:
    """1 up to the protocol's payload limit (the limit read only when the flag is given)."""
    from pybmq.generated.wire_codec import PUT_MAX_PAYLOAD_SIZE_SOFT

    return integer(1, PUT_MAX_PAYLOAD_SIZE_SOFT)(value)


def handler(args: argparse.Namespace) -> int:
    from pybmq.cli.content import checked_files
    from pybmq.client.loadgen import Stats, make_payload
    from pybmq.errors import UsageError

    if args.window < 1:
        raise UsageError("--window must be >= 1 (0 would never post)")
    if args.jsonl and args.payload != "-":
        raise UsageError("--jsonl reads stdin: give '-' as the payload")
    if args.jsonl and args.properties:
        raise UsageError("--properties does not go with --jsonl (each record has its own)")
    if args.file and args.payload is not None:
        raise UsageError("give PAYLOAD, '-' or --file, not several")
    if args.file and "-" in args.file and args.payload == "-":
        raise UsageError("--file - and '-' both read stdin: give one")
    properties = _properties(args.properties)
    files = checked_files(args.file) if args.file else None
    payload = make_payload(args.size) if args.payload is None else args.payload.encode()
    options = session_options(
        args,
        compression_threshold=args.compress_above,
        max_buffered_posts=max(args.window, 10_000),
    )
    stats = Stats()
    work = _post(args, options, payload, properties, files, stats)
    started = time.perf_counter()  # the summary's time covers connecting and negotiating too
    outcome, reason = asyncio.run(supervise(work, args.timeout))
    seconds = time.perf_counter() - started
    if outcome is None:
        outcome = Outcome.NACKED if stats.broker_nacks else Outcome.DONE
        if stats.unresolved:
            outcome, reason = Outcome.FAILED, "some posts got no ACK"
    summary = _summary(args, stats, outcome, reason, seconds)
    return report(args, summary, _line(args, stats, seconds))


async def _post(
    args: argparse.Namespace,
    options: Any,
    payload: bytes,
    properties: Any,
    files: list[str] | None,
    stats: Any,
) -> None:
    from pybmq.cli import flow
    from pybmq.cli.content import file_messages, stdin_chunks, stdin_messages
    from pybmq.cli.session import close_queue, open_queue, start_session
    from pybmq.client.loadgen import post_messages

    session = await start_session(args, options)
    try:
        queue = await open_queue(args, session, args.uri, write=True)
        total = len(files) if files else None if args.payload == "-" else args.count
        with progress_bar(args, "post") as bar:
            task = bar.add_task("post", total=total)
            advance = lambda n: bar.advance(task, n)  # noqa: E731
            if files is not None or args.payload == "-":
                batches = (
                    file_messages(files, properties or None)
                    if files is not None
                    else stdin_messages(
                        args.jsonl, properties or None, stdin_chunks(), args.max_line_size
                    )
                )
                await flow.post(queue, batches, stats, window=args.window, progress=advance)
            else:
                await post_messages(
                    queue,
                    args.count,
                    payload,
                    properties=properties or None,
                    window=args.window,
                    progress=advance,
                    measure_latency=True,
                    stats=stats,
                )
        await close_queue(args, session, queue)
    finally:
        await session.stop()


def _summary(
    args: argparse.Namespace, stats: Any, outcome: Outcome, reason: str, seconds: float
) -> dict[str, Any]:
    """``seconds``: the run's wall time; the rate is over the posts' own interval."""
    from pybmq.cli.flow import rate

    measured = rate(stats.count, stats.seconds)
    return {
        "command": "post",
        "uri": args.uri,
        "outcome": outcome,
        "reason": reason,
        "posted": stats.posted,
        "acked": stats.count,
        "nacked": stats.broker_nacks,
        "unresolved": stats.unresolved,
        "seconds": round(seconds, 3),
        "rate": None if measured is None else round(measured, 1),
        "latency_ms": stats.latency_ms(),
    }


def _line(args: argparse.Namespace, stats: Any, seconds: float) -> str:
    from pybmq.cli.flow import rate, rate_text

    nacks = stats.broker_nacks
    nacked = sum(nacks.values())
    by_status = f" ({', '.join(f'{k} {v}' for k, v in nacks.items())})" if nacks else ""
    what = "" if args.file or args.payload is not None else f" of {args.size} B"
    return (
        f"post {args.uri}: posted {stats.posted}{what}, ACKed {stats.count}, "
        f"NACKed {nacked}{by_status}, unresolved {stats.unresolved} in {seconds:.2f} s "
        f"({rate_text(rate(stats.count, stats.seconds))}){latency_text(stats.latency_ms())}"
    )
