"""A FastStream service in a process of its own, for the crash tests: it handles the orders of
``argv[2]`` at ``argv[1]`` slowly, appending each order's number to the file ``argv[3]`` after
handling it (so a SIGKILL lands with messages in hand, unconfirmed)."""

from __future__ import annotations

import asyncio
import sys

from pybmq.faststream import BlazingMQBroker


async def main(url: str, queue: str, log: str) -> None:
    broker = BlazingMQBroker(url, reconnect=False, logger=None)  # stdout says only ready

    @broker.subscriber(queue, max_workers=4)
    async def handle(body: dict[str, int]) -> None:
        await asyncio.sleep(0.02)
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"{body['n']}\n")

    async with broker:
        await broker.start()
        print("ready", flush=True)
        await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
