"""Reconnect by default, with the official SDKs' policy for a single broker, over real sockets.

A broker down for a second or so must be found again about a second after it is back (issue 25:
the old policy isolated a lone broker for 30 s after 3 quick failures).
"""

from __future__ import annotations

import asyncio
import time

import pytest
from pybmq.client.aio import AsyncSession, ResilienceEvent
from pybmq.client.events import ConnectionLost, StateRestored
from pybmq.client.options import SessionOptions
from pybmq.client.reconnect import ReconnectPolicy
from pybmq.errors import SessionStoppedError
from pybmq.sim.server import BrokerSimulator

pytestmark = pytest.mark.timeout(60)

QUEUE = "bmq://bmq.test.mem.priority/sdk-reconnect"


def test_reconnect_is_on_by_default_with_a_short_capped_policy() -> None:
    options = SessionOptions()
    assert options.reconnect is True
    policy = options.reconnect_policy
    assert policy == ReconnectPolicy()
    assert (policy.initial_delay, policy.max_delay) == (0.1, 2.0)


@pytest.mark.parametrize("outage", [0.7, 1.5])
async def test_default_session_is_back_within_about_a_second_of_a_broker_restart(
    outage: float,
) -> None:
    sim = BrokerSimulator()
    await sim.start()
    port = sim.port
    lost, restored = asyncio.Event(), asyncio.Event()

    def on_event(event: ResilienceEvent) -> None:
        if isinstance(event, ConnectionLost):
            lost.set()
        elif isinstance(event, StateRestored):
            restored.set()

    session = AsyncSession(sim.url, on_event=on_event)  # the defaults: reconnect on
    try:
        await session.start()
        writer = await session.open_queue(QUEUE, write=True)
        await sim.stop()
        await asyncio.wait_for(lost.wait(), 10)
        held = asyncio.ensure_future(writer.post(b"posted during the outage"))
        await asyncio.sleep(outage)
        await sim.start(port=port)
        back = time.monotonic()
        ack = await asyncio.wait_for(held, 10)
        acked_after = time.monotonic() - back
        assert ack.ok
        assert restored.is_set()
        # The policy's cap (2 s, with 20 % jitter) plus a negotiation and a reopen.
        assert acked_after < 3.0, f"ACKed {acked_after:.2f}s after the broker came back"
        assert session.reconnects == 1
    finally:
        await session.stop()
        await sim.stop()


async def test_reconnect_false_ends_the_session_on_a_lost_connection() -> None:
    async with BrokerSimulator() as sim:
        session = AsyncSession(sim.url, options=SessionOptions(reconnect=False))
        await session.start()
        writer = await session.open_queue(QUEUE, write=True)
        await sim.restart()
        await asyncio.wait_for(session.wait_stopped(), 10)
        with pytest.raises(SessionStoppedError):
            await writer.post(b"too late")
        assert session.reconnects == 0
