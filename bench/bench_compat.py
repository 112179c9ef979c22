"""``pybmq.compat`` against the official SDK and native pybmq, through ONE simulator, alternating.

tests/interop/compat_peer.py runs the official SDK's benchmark programs (official_peer.py)
unchanged with pybmq.compat as their SDK; the same programs run on the official SDK (C++ core).
Native pybmq runs twice: bench_e2e's post/consume through the batch calls ("native"), and the
official programs' shape on ``AsyncSession`` ("native-1by1": one ``post_nowait`` per message with
its own ``on_ack`` closure, one ``get`` and one ``confirm_nowait`` per message), which separates
what the compat layer costs from what the one-call-per-message shape costs. All of them use the
same ``pybmq sim`` process, in alternating rounds so that a busy moment on a shared machine hits
each of them; each figure is the best of its client's rounds (as in bench_e2e: a round slowed by
the machine says nothing about the client), and the ratios compare those bests, all measured in
this one run.
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
from pathlib import Path
from typing import Any

from pybmq.client.aio import AsyncSession
from pybmq.client.events import Ack
from pybmq.client.loadgen import POST_CHUNK

from bench.bench_e2e import _rates as native_rates
from bench.common import Result, peer_run, sim_process

PEERS = Path(__file__).resolve().parent.parent / "tests" / "interop"
COMPAT, OFFICIAL = PEERS / "compat_peer.py", PEERS / "official_peer.py"
QUEUE = "bmq://bmq.test.mem.priority/bench-compat"
ROUNDS = 5
SHAPES = {
    "official": "official SDK 1.2.2, same programs",
    "native": "native pybmq, batch calls",
    "native-1by1": "native pybmq, one call per message",
}


def _peer_rates(peer: Path, job: dict[str, Any]) -> tuple[float, float]:
    posted = peer_run(peer, "bench-post", job, timeout=600)
    consumed = peer_run(peer, "bench-consume", job, timeout=600)
    return posted["rate"], consumed["rate"]


async def one_by_one_rates(url: str, count: int, uri: str) -> tuple[float, float]:
    """Native pybmq in the official programs' shape: each post its own ``post_nowait`` call with
    its own ``on_ack`` closure (first post to last ACK; the loop gets a turn every
    ``POST_CHUNK`` posts, or when the socket pushes back), then each message its own ``get``
    and ``confirm_nowait`` (first message to last)."""
    payload = b"x" * 100
    clock = time.perf_counter
    async with AsyncSession(url) as session, AsyncSession(url) as consumer:
        writer = await session.open_queue(uri, write=True)
        sent_at = [0.0] * count
        latencies: list[float] = []
        failures = 0
        done = asyncio.Event()

        def make_on_ack(index: int) -> Any:
            def on_ack(ack: Ack) -> None:
                nonlocal failures
                latencies.append(clock() - sent_at[index])
                failures += not ack.ok
                if len(latencies) == count:
                    done.set()

            return on_ack

        start = clock()
        for i in range(count):
            sent_at[i] = clock()
            writer.post_nowait(payload, on_ack=make_on_ack(i))
            await session.drain()
            if i % POST_CHUNK == POST_CHUNK - 1:
                await asyncio.sleep(0)
        await done.wait()
        posted = count / (clock() - start)
        assert failures == 0, f"{failures} of {count} posts NACKed"
        reader = await consumer.open_queue(uri, read=True)
        times = []
        for _ in range(count):
            received = await reader.get()
            received.confirm_nowait()
            times.append(clock())
        consumed = (count - 1) / (times[-1] - times[0]) if count > 1 else 0.0
    return posted, consumed


def run(quick: bool) -> list[Result]:
    count = 2_000 if quick else 50_000
    rounds = 1 if quick else ROUNDS
    official = importlib.util.find_spec("blazingmq") is not None
    rates: dict[str, list[tuple[float, float]]] = {
        "compat": [],
        "official": [],
        "native": [],
        "native-1by1": [],
    }
    with sim_process() as url:
        job = {"broker": url, "size": 100, "timeout": 300, "count": count}
        for n in range(rounds):
            rates["compat"].append(_peer_rates(COMPAT, {**job, "queue": f"{QUEUE}-c{n}"}))
            if official:
                rates["official"].append(_peer_rates(OFFICIAL, {**job, "queue": f"{QUEUE}-o{n}"}))
            posted, consumed = asyncio.run(native_rates(url, count))
            rates["native"].append((posted.rate, consumed.rate))
            one_by_one = one_by_one_rates(url, count, f"{QUEUE}-n{n}")
            rates["native-1by1"].append(asyncio.run(one_by_one))
        latency = peer_run(
            COMPAT, "bench-latency", {**job, "queue": f"{QUEUE}-l", "count": 50 if quick else 2_000}
        )
    post = {k: max(r[0] for r in v) for k, v in rates.items() if v}
    consume = {k: max(r[1] for r in v) for k, v in rates.items() if v}
    note = f"{count} x 100 B via one pybmq sim, best of {rounds} alternating rounds"
    results = [
        Result("e2e compat post→ACK", post["compat"], "msgs/s", note),
        Result("e2e compat consume→confirm", consume["compat"], "msgs/s", note),
        Result("e2e compat ACK latency p50", latency["p50"] * 1e6, "µs", "one post in flight"),
        Result("e2e compat ACK latency p99", latency["p99"] * 1e6, "µs", "one post in flight"),
    ]
    for other in ("official", "native", "native-1by1"):
        if other not in post:
            print(f"bench_compat: {other} not measured (is the official SDK installed?)")
            continue
        reference = (
            f"{SHAPES[other]}, best of the same rounds: post→ACK {post[other]:,.0f} msgs/s, "
            f"consume→confirm {consume[other]:,.0f} msgs/s"
        )
        results += [
            Result(f"compat/{other} post→ACK", post["compat"] / post[other], "x", reference),
            Result(
                f"compat/{other} consume→confirm",
                consume["compat"] / consume[other],
                "x",
                reference,
            ),
        ]
    return results
