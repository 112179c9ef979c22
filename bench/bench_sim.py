"""How many messages ``pybmq sim`` routes per second of its own CPU time.

The simulator runs in its own process; one pybmq producer and one consumer (both in this process)
move 100-byte messages through one priority queue at the same time: PUT → stored → ACK and PUSH →
CONFIRM → released. The simulator's CPU time comes from ``/proc/<pid>/stat`` (user + system), so
the figure is what the simulator costs per message, not how busy the rest of the machine is.
"""

from __future__ import annotations

import asyncio
import os
import time

from pybmq.client.aio import AsyncSession
from pybmq.client.loadgen import make_payload

from bench.common import Result, sim_process

PAYLOAD = make_payload(100)
BATCH = 1000
IN_FLIGHT = 20_000  # posts not yet ACKed, at most


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (Linux)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _route(url: str, pid: int, count: int) -> tuple[float, float]:
    """(simulator CPU seconds, wall seconds) for ``count`` messages posted and consumed."""
    uri = "bmq://bmq.test.mem.priority/bench-sim"
    async with AsyncSession(url) as producer, AsyncSession(url) as consumer:
        writer = await producer.open_queue(uri, write=True)
        reader = await consumer.open_queue(uri, read=True, max_unconfirmed_messages=5_000)
        acked = 0

        def on_ack(_ack: object) -> None:
            nonlocal acked
            acked += 1

        async def consume() -> None:
            for _ in range(count):
                (await reader.get()).confirm_nowait()

        cpu_start, wall_start = process_cpu_seconds(pid), time.perf_counter()
        consuming = asyncio.create_task(consume())
        for posted in range(BATCH, count + 1, BATCH):
            writer.post_many_nowait([PAYLOAD] * BATCH, on_ack=on_ack)
            await producer.drain()
            while posted - acked > IN_FLIGHT:
                await asyncio.sleep(0.001)
        await consuming
        while acked < count:
            await asyncio.sleep(0.001)
        return process_cpu_seconds(pid) - cpu_start, time.perf_counter() - wall_start


def run(quick: bool) -> list[Result]:
    count = 5_000 if quick else 100_000
    pids: list[int] = []
    with sim_process(pids) as url:
        cpu, wall = asyncio.run(_route(url, pids[0], count))
    note = f"{count} x 100 B, one producer + one consumer at once; goal 150k/s"
    return [
        Result("sim routed (PUT→ACK + PUSH→CONFIRM) per sim CPU second", count / max(cpu, 1e-3), "msgs/s", note),
        Result("sim routed, wall clock (3 processes on this machine)", count / wall, "msgs/s", note),
    ]  # fmt: skip
