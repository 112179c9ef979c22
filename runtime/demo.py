"""``make demo``: start the broker simulator in-process, post 100k messages, consume and confirm
them, and print the rates. Everything runs on one asyncio loop, over a real loopback socket."""

from __future__ import annotations

import argparse
import asyncio
import sys

from pybmq.client.aio import AsyncSession
from pybmq.client.loadgen import consume_messages, make_payload, post_messages, progress_columns
from pybmq.errors import PybmqError, UsageError
from pybmq.sim.server import BrokerSimulator
from rich.console import Console
from rich.progress import Progress

__all__ = ["QUEUE", "demo", "main"]

QUEUE = "bmq://bmq.test.mem.priority/pybmq-demo"


async def demo(count: int, size: int, console: Console) -> int:
    async with BrokerSimulator() as sim:
        broker = sim.url
        console.print(f"[bold]pybmq demo[/]: simulator on {broker}, {count:,} messages of {size} B")
        async with AsyncSession(broker) as session, AsyncSession(broker) as consumer_session:
            info = session.info
            console.print(f"  sessions started ({info.encoding if info else '?'} control encoding)")
            producer = await session.open_queue(QUEUE, write=True)
            with _bar(console) as bar:
                task = bar.add_task("post", total=count)
                posted = await post_messages(
                    producer, count, make_payload(size), progress=lambda n: bar.advance(task, n)
                )
            console.print(
                f"  post → ACK       {posted.count:>9,} msgs  {posted.rate:>10,.0f} msgs/s"
                + (f"  [red]{posted.failed} NACKed {posted.failures}[/]" if posted.failed else "")
            )
            consumer = await consumer_session.open_queue(QUEUE, read=True)
            with _bar(console) as bar:
                task = bar.add_task("consume", total=count)
                consumed = await consume_messages(
                    consumer, count, confirm=True, progress=lambda n: bar.advance(task, n)
                )
            console.print(
                f"  consume → confirm {consumed.count:>8,} msgs  {consumed.rate:>10,.0f} msgs/s"
            )
            await consumer.close()
            await producer.close()
    ok = posted.count == count and consumed.count == count
    console.print(
        "[green]all messages acknowledged, delivered and confirmed[/]" if ok else "[red]mismatch[/]"
    )
    return 0 if ok else 1


def _bar(console: Console) -> Progress:
    """Done/total, rate and ETA while a phase runs (gone when it ends)."""
    return Progress(
        *progress_columns("  {task.description:<8}"),
        console=console,
        transient=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pybmq.demo", description=__doc__)
    parser.add_argument("--count", type=int, default=100_000, help="messages (default 100000)")
    parser.add_argument("--size", type=int, default=100, help="payload bytes (default 100)")
    args = parser.parse_args(argv)
    try:
        if args.count < 1:
            raise UsageError(f"--count must be >= 1, got {args.count}")
        return asyncio.run(demo(args.count, args.size, Console()))
    except PybmqError as exc:
        print(f"pybmq demo: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
