"""pybmq's side of the end-to-end benchmark (the official SDK's side is bench_official.py).

On loopback through ``pybmq sim`` running in its own process: post→ACK and consume→confirm rates,
ACK latency (one post in flight, and under a flood). 100-byte payloads throughout. The sans-I/O
engine alone is measured in ``bench_engine``."""

from __future__ import annotations

import asyncio
import statistics
import time

from pybmq.client.aio import AsyncSession
from pybmq.client.loadgen import Stats, consume_messages, make_payload, post_messages

from bench.common import Result, sim_process

PAYLOAD = make_payload(100)


async def _rates(url: str, count: int) -> tuple[Stats, Stats]:
    uri = "bmq://bmq.test.mem.priority/bench-rate"
    async with AsyncSession(url) as session, AsyncSession(url) as consumer:
        writer = await session.open_queue(uri, write=True)
        # Everything posted at once (the window is the whole run), as bench_official does.
        posted = await post_messages(writer, count, PAYLOAD, window=count, measure_latency=True)
        reader = await consumer.open_queue(uri, read=True)
        consumed = await consume_messages(reader, count, confirm=True)
        assert posted.count == count and consumed.count == count, (posted, consumed)
    return posted, consumed


async def _latency(url: str, samples: int) -> list[float]:
    """One post at a time: the time from post() to its ACK, with nothing else in flight."""
    uri = "bmq://bmq.test.mem.priority/bench-latency"
    async with AsyncSession(url) as session:
        writer = await session.open_queue(uri, write=True)
        latencies = []
        for _ in range(samples):
            start = time.perf_counter()
            ack = await writer.post(PAYLOAD)
            latencies.append(time.perf_counter() - start)
            assert ack.ok
    return latencies


def _quantiles(values: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(values, n=100)
    return cuts[49], cuts[98]


def run(quick: bool) -> list[Result]:
    count = 2_000 if quick else 50_000
    with sim_process() as url:
        posted, consumed = asyncio.run(_rates(url, count))
        p50, p99 = _quantiles(asyncio.run(_latency(url, 50 if quick else 2_000)))
    flood50, flood99 = _quantiles(posted.latencies)
    note = f"{count} x 100 B via pybmq sim (own process)"
    return [
        Result("e2e pybmq post→ACK", posted.rate, "msgs/s", note),
        Result("e2e pybmq consume→confirm", consumed.rate, "msgs/s", note),
        Result("e2e pybmq ACK latency p50", p50 * 1e6, "µs", "one post in flight"),
        Result("e2e pybmq ACK latency p99", p99 * 1e6, "µs", "one post in flight"),
        Result("e2e pybmq ACK latency p50 (flood)", flood50 * 1e6, "µs", f"{count} posted at once"),
        Result("e2e pybmq ACK latency p99 (flood)", flood99 * 1e6, "µs", f"{count} posted at once"),
    ]
