"""Closing a queue while the connection is down (the session reconnecting) succeeds at once: the
queue is closed on the client's side, its unacknowledged posts resolve as CANCELED, and it is not
reopened after the reconnect. The C++ SDK does the same; pybmq refused it ("the session is
reconnecting") until upstream's integration suite (test_queue_close.py::test_close_queue) showed
the difference."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from pybmq.client.aio import AsyncSession
from pybmq.client.events import AckStatus, QueueReopened
from pybmq.client.options import SessionOptions
from pybmq.client.reconnect import ReconnectPolicy
from pybmq.errors import SessionStoppedError
from pybmq.sim.server import BrokerSimulator

from tests.helpers.resilience import ResilienceWatch

pytestmark = pytest.mark.timeout(60)

OPTIONS = SessionOptions(reconnect_policy=ReconnectPolicy(initial_delay=0.05, max_delay=0.2))


async def test_a_queue_closed_while_reconnecting_is_closed_and_not_reopened() -> None:
    async with BrokerSimulator() as sim:
        watch = ResilienceWatch()
        session = AsyncSession(sim.url, options=replace(OPTIONS), on_event=watch)
        await session.start()
        closing = await session.open_queue("bmq://bmq.test.mem.priority/closing", read=True)
        kept = await session.open_queue("bmq://bmq.test.mem.priority/kept", read=True, write=True)
        writer = await session.open_queue("bmq://bmq.test.mem.priority/w", write=True)
        port = sim.port
        await sim.stop()
        await asyncio.wait_for(watch.lost.wait(), 10)
        acks: list[object] = []
        writer.post_nowait(b"held", on_ack=acks.append)  # held while disconnected
        await asyncio.wait_for(closing.close(), 5)
        await asyncio.wait_for(writer.close(), 5)
        assert [a.status for a in acks] == [AckStatus.CANCELED]
        with pytest.raises(SessionStoppedError):  # iteration has ended: nothing more comes
            await asyncio.wait_for(closing.get(), 1)
        await sim.start(sim.host, port)
        await asyncio.wait_for(watch.restored.wait(), 15)
        reopened = [e.uri for e in watch.of(QueueReopened)]
        assert reopened == ["bmq://bmq.test.mem.priority/kept"]
        assert (await kept.post(b"still works")).ok
        await session.stop()
