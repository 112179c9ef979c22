"""Opening a queue while the connection is down (the session reconnecting) waits for the session
to come back, as the C++ SDK's buffered openQueue does, instead of being refused: the open goes
out once the session's queues are restored, and fails with its own timeout if the broker does not
return in time. pybmq refused it ("the session is reconnecting") until upstream's integration
suite (test_restart_between_modes.py, an open right after a broker restart) showed the
difference."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from pybmq.client.aio import AsyncSession
from pybmq.client.options import SessionOptions
from pybmq.client.reconnect import ReconnectPolicy
from pybmq.errors import RequestTimeoutError
from pybmq.sim.server import BrokerSimulator

from tests.helpers.resilience import ResilienceWatch

pytestmark = pytest.mark.timeout(60)

OPTIONS = SessionOptions(reconnect_policy=ReconnectPolicy(initial_delay=0.05, max_delay=0.2))
KEPT = "bmq://bmq.test.mem.priority/kept"
LATE = "bmq://bmq.test.mem.priority/late"


async def test_an_open_while_the_broker_is_down_completes_once_it_is_back() -> None:
    async with BrokerSimulator() as sim:
        watch = ResilienceWatch()
        session = AsyncSession(sim.url, options=replace(OPTIONS), on_event=watch)
        await session.start()
        kept = await session.open_queue(KEPT, write=True)
        port = sim.port
        await sim.stop()
        await asyncio.wait_for(watch.lost.wait(), 10)
        opening = asyncio.ensure_future(session.open_queue(LATE, read=True, write=True, timeout=20))
        await asyncio.sleep(0.3)
        assert not opening.done()  # waiting for the broker, not refused
        await sim.start(sim.host, port)
        late = await asyncio.wait_for(opening, 15)
        assert watch.restored.is_set()
        assert (await late.post(b"after the restart")).ok
        message = await asyncio.wait_for(late.get(), 5)
        assert message.payload == b"after the restart"
        await message.confirm()
        assert (await kept.post(b"reopened too")).ok
        await session.stop()


async def test_an_open_while_the_broker_stays_down_times_out_from_the_call() -> None:
    async with BrokerSimulator() as sim:
        watch = ResilienceWatch()
        session = AsyncSession(sim.url, options=replace(OPTIONS), on_event=watch)
        await session.start()
        await sim.stop()
        await asyncio.wait_for(watch.lost.wait(), 10)
        loop = asyncio.get_running_loop()
        began = loop.time()
        with pytest.raises(RequestTimeoutError):
            await asyncio.wait_for(session.open_queue(LATE, write=True, timeout=0.5), 10)
        assert 0.4 <= loop.time() - began < 5
        await session.stop()
