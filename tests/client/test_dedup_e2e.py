"""De-duplication over real loopback sockets, on the simulator: a consumer holds messages it
has not confirmed yet when the broker restarts; after the reconnect the broker redelivers them
(same GUIDs). Without a window the application gets each twice; with one, once, and its
confirms of the first deliveries reach the broker on the new connection (nothing is left
unconfirmed, no confirm is improper)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import replace

import pytest
from pybmq.client.aio import AsyncSession
from pybmq.client.events import StateRestored
from pybmq.client.options import QueueOptions, SessionOptions
from pybmq.client.reconnect import ReconnectPolicy
from pybmq.client.sync import Session
from pybmq.sim.server import BrokerSimulator, ThreadedBrokerSimulator

from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.timeout(60)

QUEUE = "bmq://bmq.test.mem.priority/dedup-e2e"
OPTIONS = SessionOptions(
    reconnect=True,
    reconnect_policy=ReconnectPolicy(initial_delay=0.01, max_delay=0.2),
    request_timeout=10.0,
)
COUNT = 20


async def _eventually(condition: Callable[[], bool], what: str, bound: float = 10.0) -> None:
    deadline = time.monotonic() + bound
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {bound} s")
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("window", [0, 1000], ids=["off", "on"])
async def test_redelivery_after_a_broker_restart(window: int) -> None:
    async with BrokerSimulator() as sim:
        restored = asyncio.Event()
        async with AsyncSession(sim.url) as producer:
            writer = await producer.open_queue(QUEUE, write=True)
            for i in range(COUNT):
                assert (await writer.post(b"m%d" % i)).ok
        consumer = AsyncSession(
            sim.url,
            options=replace(OPTIONS, session_id=3),
            on_event=lambda e: restored.set() if isinstance(e, StateRestored) else None,
        )
        await consumer.start()
        reader = await consumer.open_queue(
            QUEUE, read=True, options=QueueOptions(dedup_window=window)
        )
        held = [await asyncio.wait_for(reader.get(), 10) for _ in range(COUNT)]
        await sim.restart()  # the messages stay, unconfirmed: the broker redelivers them
        await asyncio.wait_for(restored.wait(), 10)
        stats = consumer.stats().total
        if window:
            await _eventually(lambda: consumer.stats().total.duplicates == COUNT, "repeats")
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(reader.get(), 0.3)
            assert all(message.confirmable for message in held)  # on the new connection
            for message in held:  # of the lost connection, confirmed on the new one
                await message.confirm()
            await _eventually(lambda: sim.broker.stats.confirms == COUNT, "confirms")
            stats = consumer.stats().total
            assert (stats.received, stats.duplicates, stats.confirmed) == (COUNT, COUNT, COUNT)
        else:
            again = [await asyncio.wait_for(reader.get(), 10) for _ in range(COUNT)]
            assert {m.guid for m in again} == {m.guid for m in held}
            assert not any(message.confirmable for message in held)
            for message in held:
                await message.confirm()  # void: that connection is gone
            reader.confirm_many_nowait(again)
            await _eventually(lambda: sim.broker.stats.confirms == COUNT, "confirms")
            assert consumer.stats().total.duplicates == 0
        queue = sim.broker.queue(QUEUE)
        assert queue is not None and queue.pending_count() == 0
        await consumer.stop()
        assert sim.broker.stats.improper == []
        assert sim.broker.stats.violations == []


def test_blocking_api_keyword_and_a_confirm_many_across_the_restart() -> None:
    restored = threading.Event()
    with ThreadedBrokerSimulator() as sim:
        with Session(sim.url) as producer:
            writer = producer.open_queue(QUEUE, write=True)
            for i in range(COUNT):
                assert writer.post(b"m%d" % i, timeout=10).ok
        with Session(
            sim.url,
            options=OPTIONS,
            on_event=lambda e: restored.set() if isinstance(e, StateRestored) else None,
        ) as consumer:
            reader = consumer.open_queue(QUEUE, read=True, dedup_window=100, dedup_window_age=60)
            held = reader.get_many(COUNT, timeout=10)
            while len(held) < COUNT:
                held += reader.get_many(COUNT - len(held), timeout=10)
            sim.restart()
            assert restored.wait(10)
            wait_until(lambda: consumer.stats().total.duplicates == COUNT, "repeats")
            assert reader.get_many(COUNT, timeout=0.3) == []
            reader.confirm_many(held)
            wait_until(lambda: sim.call(lambda b: b.stats.confirms) == COUNT, "confirms")
        assert sim.call(lambda b: list(b.stats.improper)) == []
