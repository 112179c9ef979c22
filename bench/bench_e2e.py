"""End to end through ONE ``pybmq sim`` process: native pybmq and the official SDK, alternating.

On loopback, 100-byte payloads: post→ACK and consume→confirm rates, in alternating rounds (pybmq,
then the official SDK's programs from tests/interop/official_peer.py, each in its own process) so
that a busy moment on a shared machine hits both; each rate is the best of its rounds, and
``make bench`` prints pybmq ÷ the official SDK from them. Also: the simulator's own CPU time
during the pybmq rounds ÷ their wall time (well under 100 %: the simulator is not what limits
pybmq), and pybmq's ACK latency (one post in flight, and under the flood). The official SDK's
latency with one post in flight is in bench_official; the sans-I/O engine alone in bench_engine."""

from __future__ import annotations

import asyncio
import importlib.util
import statistics
import time
from pathlib import Path
from typing import Any

from pybmq.client.aio import AsyncSession
from pybmq.client.loadgen import Stats, consume_messages, make_payload, post_messages

from bench.bench_sim import process_cpu_seconds
from bench.common import Result, peer_run, sim_process

PAYLOAD = make_payload(100)
OFFICIAL = Path(__file__).resolve().parent.parent / "tests" / "interop" / "official_peer.py"
ROUNDS = 5


async def _rates(
    url: str, count: int, uri: str = "bmq://bmq.test.mem.priority/bench-rate"
) -> tuple[Stats, Stats]:
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
    rounds = 1 if quick else ROUNDS
    official = importlib.util.find_spec("blazingmq") is not None
    ours: list[tuple[Stats, Stats]] = []
    theirs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    sim_cpu = wall = 0.0
    pids: list[int] = []
    with sim_process(pids) as url:
        for n in range(rounds):
            cpu_start, wall_start = process_cpu_seconds(pids[0]), time.perf_counter()
            uri = f"bmq://bmq.test.mem.priority/bench-rate-{n}"
            ours.append(asyncio.run(_rates(url, count, uri)))
            sim_cpu += process_cpu_seconds(pids[0]) - cpu_start
            wall += time.perf_counter() - wall_start
            if official:
                job = {"broker": url, "size": 100, "timeout": 300, "count": count}
                job["queue"] = f"bmq://bmq.test.mem.priority/bench-official-{n}"
                theirs.append(
                    (
                        peer_run(OFFICIAL, "bench-post", job, timeout=600),
                        peer_run(OFFICIAL, "bench-consume", job, timeout=600),
                    )
                )
        p50, p99 = _quantiles(asyncio.run(_latency(url, 50 if quick else 2_000)))
    posted = max((p for p, _ in ours), key=lambda s: s.rate)
    consumed = max((c for _, c in ours), key=lambda s: s.rate)
    flood50, flood99 = _quantiles(posted.latencies)
    note = f"{count} x 100 B via one pybmq sim, best of {rounds} alternating rounds"
    results = [
        Result("e2e pybmq post→ACK", posted.rate, "msgs/s", note),
        Result("e2e pybmq consume→confirm", consumed.rate, "msgs/s", note),
        Result("e2e sim CPU ÷ wall during the pybmq rounds", 100 * sim_cpu / max(wall, 1e-9), "%", "under 100 %: the simulator waits for pybmq"),
        Result("e2e pybmq ACK latency p50", p50 * 1e6, "µs", "one post in flight"),
        Result("e2e pybmq ACK latency p99", p99 * 1e6, "µs", "one post in flight"),
        Result("e2e pybmq ACK latency p50 (flood)", flood50 * 1e6, "µs", f"{count} posted at once"),
        Result("e2e pybmq ACK latency p99 (flood)", flood99 * 1e6, "µs", f"{count} posted at once"),
    ]  # fmt: skip
    if not theirs:
        print("bench_e2e: the official SDK (pip install blazingmq) is not installed; pybmq only")
        return results
    their_post = max((p for p, _ in theirs), key=lambda r: float(r["rate"]))
    their_consume = max((c for _, c in theirs), key=lambda r: float(r["rate"]))
    note = f"{count} x 100 B, official SDK 1.2.2, same sim, best of {rounds} alternating rounds"
    return [
        *results,
        Result("e2e official post→ACK", their_post["rate"], "msgs/s", note),
        Result("e2e official consume→confirm", their_consume["rate"], "msgs/s", note),
        Result("e2e official ACK latency p50 (flood)", their_post["p50"] * 1e6, "µs", f"{count} posted at once"),
        Result("e2e official ACK latency p99 (flood)", their_post["p99"] * 1e6, "µs", f"{count} posted at once"),
    ]  # fmt: skip
