"""``make demo``: start the broker simulator in-process, post 100k messages, consume and confirm
them, and print the rates. Everything runs on one asyncio loop, over a real loopback socket."""

from __future__ import annotations

import argparse
import asyncio
import sys

from pybmq.client.aio import AsyncSession
from pybmq.client.loadgen import consume_messages, make_payload, post_messages
from pybmq.sim.server import BrokerSimulator
from rich.console import Console

QUEUE = "bmq://bmq.test.mem.priority/pybmq-demo"


async def demo(count: int, size: int, console: Console) -> int:
    async with BrokerSimulator() as sim:
        broker = sim.url
        console.print(f"[bold]pybmq demo[/]: simulator on {broker}, {count:,} messages of {size} B")
        async with AsyncSession(broker) as session, AsyncSession(broker) as consumer_session:
            info = session.info
            console.print(f"  sessions started ({info.encoding if info else '?'} control encoding)")
            producer = await session.open_queue(QUEUE, write=True)
            with console.status("posting…"):
                posted = await post_messages(producer, count, make_payload(size))
            console.print(
                f"  post → ACK       {posted.count:>9,} msgs  {posted.rate:>10,.0f} msgs/s"
                + (f"  [red]{posted.failed} NACKed {posted.failures}[/]" if posted.failed else "")
            )
            consumer = await consumer_session.open_queue(QUEUE, read=True)
            with console.status("consuming…"):
                consumed = await consume_messages(consumer, count, confirm=True)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pybmq.demo", description=__doc__)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=100)
    args = parser.parse_args(argv)
    return asyncio.run(demo(args.count, args.size, Console()))


if __name__ == "__main__":
    sys.exit(main())
