"""The byte budget over loopback sockets (``SessionOptions.max_buffered_bytes``): what a session
holds for its broker is bounded, ``post_nowait`` refuses at once past it, ``drain()`` and
``post()`` wait for room (flushing, giving the loop its turns) up to ``buffer_wait_timeout``, a
reconnecting session makes posts wait instead of failing, and the blocking API does the same."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from pybmq.client.aio import AsyncSession
from pybmq.client.events import Ack
from pybmq.client.options import SessionOptions
from pybmq.client.reconnect import ReconnectPolicy
from pybmq.client.sync import Session
from pybmq.errors import PostBufferFullError
from pybmq.sim.config import BrokerConfig
from pybmq.sim.faults import FaultConfig
from pybmq.sim.server import BrokerSimulator, ThreadedBrokerSimulator

pytestmark = pytest.mark.timeout(120)

URI = "bmq://bmq.test.mem.priority/backpressure"
KIB = 1024
MIB = 1024 * KIB


class Ticker:
    """Counts the loop's turns while it runs (a loop that never yields counts none)."""

    def __init__(self) -> None:
        self.turns = 0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            self.turns += 1
            await asyncio.sleep(0)

    def __enter__(self) -> Ticker:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


async def _consume(url: str, count: int) -> int:
    async with AsyncSession(url) as consumer:
        reader = await consumer.open_queue(URI, read=True)
        for _ in range(count):
            (await reader.get()).confirm_nowait()
    return count


async def test_post_nowait_refuses_at_once_past_the_budget_and_drain_waits_for_the_acks() -> None:
    options = SessionOptions(max_buffered_bytes=1 * MIB)
    async with (
        BrokerSimulator(faults=FaultConfig(ack_delay_ms=300)) as sim,
        AsyncSession(sim.url, options=options) as session,
    ):
        writer = await session.open_queue(URI, write=True)
        acks: list[Ack] = []
        payload = b"b" * (300 * KIB)
        for _ in range(4):  # admitted while under 1 MiB: the fourth crosses it
            writer.post_nowait(payload, on_ack=acks.append)
        assert session.held_bytes >= 1 * MIB
        with pytest.raises(PostBufferFullError, match="max_buffered_bytes=1048576"):
            writer.post_nowait(payload)
        with pytest.raises(PostBufferFullError):
            writer.post_many_nowait([b"x"])
        started = time.monotonic()
        await session.drain()  # until the ACKs (held back 300 ms) release the kept payloads
        assert time.monotonic() - started >= 0.2
        assert session.held_bytes < 1 * MIB
        writer.post_nowait(payload, on_ack=acks.append)
        ack = await writer.post(b"last")
        assert ack.ok
        while len(acks) < 5:
            await asyncio.sleep(0.01)
        assert all(a.ok for a in acks)


async def test_drain_and_post_give_up_after_buffer_wait_timeout() -> None:
    options = SessionOptions(max_buffered_bytes=64 * KIB, buffer_wait_timeout=0.3)
    async with (
        BrokerSimulator(faults=FaultConfig(ack_delay_ms=3000)) as sim,
        AsyncSession(sim.url, options=options) as session,
    ):
        writer = await session.open_queue(URI, write=True)
        writer.post_nowait(b"a" * (64 * KIB))
        started = time.monotonic()
        with pytest.raises(PostBufferFullError, match=r"within 0\.3s"):
            await session.drain()
        assert 0.25 <= time.monotonic() - started < 2.5
        with pytest.raises(PostBufferFullError):
            await writer.post(b"more")
        with pytest.raises(PostBufferFullError, match=r"within 0\.05s"):
            await session.drain(timeout=0.05)
    no_wait = SessionOptions(max_buffered_bytes=64 * KIB, buffer_wait_timeout=0)
    async with (
        BrokerSimulator(faults=FaultConfig(ack_delay_ms=3000)) as sim,
        AsyncSession(sim.url, options=no_wait) as session,
    ):
        writer = await session.open_queue(URI, write=True)
        writer.post_nowait(b"a" * (64 * KIB))
        started = time.monotonic()
        with pytest.raises(PostBufferFullError, match="within 0s"):
            await session.drain()
        assert time.monotonic() - started < 0.2


async def test_the_documented_loop_sends_as_it_goes_and_stays_within_the_budget() -> None:
    budget = 4 * MIB
    payload = b"p" * MIB
    count = 64
    options = SessionOptions(max_buffered_bytes=budget)
    async with BrokerSimulator() as sim, AsyncSession(sim.url, options=options) as session:
        writer = await session.open_queue(URI, write=True)
        consuming = asyncio.ensure_future(_consume(sim.url, count))
        acks: list[Ack] = []
        most = 0
        with Ticker() as ticker:
            for _ in range(count):
                writer.post_nowait(payload, on_ack=acks.append)
                most = max(most, session.held_bytes)
                await session.drain()
            turns = ticker.turns
        # One post may cross the budget (it is admitted while under it), never more.
        assert most <= budget + len(payload), most
        assert turns >= count // 2, "the loop got no turns while posting"
        assert await asyncio.wait_for(consuming, 60) == count
        while len(acks) < count:
            await asyncio.sleep(0.01)
        assert all(a.ok for a in acks)


async def test_a_payload_bigger_than_the_budget_goes_alone() -> None:
    options = SessionOptions(max_buffered_bytes=64 * KIB)
    async with BrokerSimulator() as sim, AsyncSession(sim.url, options=options) as session:
        writer = await session.open_queue(URI, write=True)
        ack = await writer.post(b"B" * (1 * MIB))  # nothing else is held: admitted
        assert ack.ok
        assert session.held_bytes == 0


async def test_posts_wait_for_the_broker_through_an_outage_instead_of_failing() -> None:
    policy = ReconnectPolicy(initial_delay=0.05, max_delay=0.2)
    options = SessionOptions(max_buffered_posts=50, reconnect_policy=policy)
    sim = BrokerSimulator()
    await sim.start()
    port = sim.port
    session = AsyncSession(sim.url, options=options)
    await session.start()
    try:
        writer = await session.open_queue(URI, write=True)
        acks: list[Ack] = []
        for _ in range(20):
            writer.post_nowait(b"before", on_ack=acks.append)
        await sim.stop()  # the broker goes away for a second
        refused = 0

        async def bring_back() -> None:
            await asyncio.sleep(1.0)
            await sim.start(port=port)

        back = asyncio.ensure_future(bring_back())
        for i in range(200):  # 4 times what a reconnecting session holds
            await session.drain()
            try:
                writer.post_nowait(b"during %d" % i, on_ack=acks.append)
            except PostBufferFullError:
                refused += 1
        await back
        assert refused == 0
        deadline = time.monotonic() + 30
        while len(acks) < 220 and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert len(acks) == 220 and all(a.ok for a in acks), [a for a in acks if not a.ok][:3]
        # post_nowait itself never waits: while reconnecting, past max_buffered_posts it raises.
        await sim.stop()
        while session.connection_losses < 2:
            await asyncio.sleep(0.01)
        with pytest.raises(PostBufferFullError, match="max_buffered_posts=50"):
            for _ in range(51):
                writer.post_nowait(b"x")
    finally:
        await session.stop()
        await sim.stop()


def test_the_blocking_session_waits_for_room_as_well() -> None:
    options = SessionOptions(max_buffered_bytes=256 * KIB)
    with (
        ThreadedBrokerSimulator(faults=FaultConfig(ack_delay_ms=50)) as sim,
        Session(sim.url, options=options) as session,
    ):
        writer = session.open_queue(URI, write=True)
        done = threading.Event()
        acks: list[Ack] = []

        def on_ack(ack: Ack) -> None:
            acks.append(ack)
            if len(acks) == 40:
                done.set()

        most = 0
        for _ in range(20):  # post_async waits for room: never refused
            writer.post_async(b"s" * (64 * KIB), on_ack=on_ack)
            inner = session.async_session
            assert inner is not None
            most = max(most, inner.held_bytes)
        # post_many slices a big batch so that each slice fits the budget's bound.
        writer.post_many([b"m" * (64 * KIB)] * 20, on_ack=on_ack)
        assert done.wait(30)
        assert all(a.ok for a in acks)
        assert most <= 256 * KIB + 64 * KIB


RSS_SCRIPT = textwrap.dedent("""
    import asyncio, json, re, sys
    from pybmq import AsyncSession

    URI = "bmq://bmq.test.mem.priority/backpressure-rss"

    async def consume(url, count):
        async with AsyncSession(url) as consumer:
            reader = await consumer.open_queue(URI, read=True)
            for _ in range(count):
                (await reader.get()).confirm_nowait()
            print(json.dumps({"consumed": count}), flush=True)

    async def produce(url, count):
        payload = bytes(range(256)) * 4096  # 1 MiB
        outcomes = []
        async with AsyncSession(url) as session:
            writer = await session.open_queue(URI, write=True)
            for _ in range(count):
                writer.post_nowait(payload, on_ack=outcomes.append)
                await session.drain()
            while len(outcomes) < count:
                await asyncio.sleep(0.01)
        # VmHWM, not ru_maxrss: ru_maxrss survives exec, so it would report the test
        # process's size at the fork; VmHWM belongs to this program's own memory.
        with open("/proc/self/status") as status:
            peak = int(re.search(r"VmHWM:\\s+(\\d+) kB", status.read()).group(1)) // 1024
        ok = sum(ack.ok for ack in outcomes)
        print(json.dumps({"acked": ok, "outcomes": len(outcomes), "peak_mib": peak}), flush=True)

    role, url, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    asyncio.run((produce if role == "produce" else consume)(url, count))
    """)


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads VmHWM from /proc")
def test_a_thousand_one_mib_posts_through_drain_keep_the_client_small() -> None:
    """The measurement of the issue that brought the budget: 1,000 x 1 MiB with the documented
    loop and default options, the producer in a process of its own (its peak RSS), a consumer
    in another. The queue may hold them all, so every post is ACKed however slow the consumer."""
    config = BrokerConfig(queue_limit_bytes=2 << 30, memory_limit_bytes=3 << 30)
    with ThreadedBrokerSimulator(config) as sim:
        run = [sys.executable, "-c", RSS_SCRIPT]
        consumer = subprocess.Popen([*run, "consume", sim.url, "1000"], stdout=subprocess.PIPE)
        try:
            done = subprocess.run(
                [*run, "produce", sim.url, "1000"], capture_output=True, text=True, timeout=240
            )
            consumed, _ = consumer.communicate(timeout=120)
        finally:
            consumer.kill()
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["outcomes"] == report["acked"] == 1000, report
    assert json.loads(consumed.strip().splitlines()[-1]) == {"consumed": 1000}
    # Before the budget: 3,039 MiB (and MemoryError at 2,000 posts).
    assert report["peak_mib"] <= 300, report
