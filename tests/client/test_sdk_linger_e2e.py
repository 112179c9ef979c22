"""``stop(linger=…)`` over real sockets: outstanding ACKs are waited for up to the bound, then
the rest fail with LingerTimeoutError naming how many (Java's ``linger()``)."""

from __future__ import annotations

import asyncio

import pytest
from pybmq.client.aio import AsyncSession
from pybmq.client.events import Ack
from pybmq.client.options import SessionOptions
from pybmq.client.sync import Session
from pybmq.errors import LingerTimeoutError, UsageError
from pybmq.sim.config import BrokerHooks
from pybmq.sim.server import BrokerSimulator, ThreadedBrokerSimulator
from pybmq.sim.session import ClientSession

pytestmark = pytest.mark.timeout(60)

QUEUE = "bmq://bmq.test.mem.priority/sdk-linger"


class Silent(BrokerHooks):
    silent = False

    def outgoing(self, session: ClientSession, data: bytes) -> bytes:
        return b"" if self.silent else data


async def test_linger_waits_for_every_ack_of_posts_just_made() -> None:
    async with BrokerSimulator() as sim:
        session = AsyncSession(sim.url)
        await session.start()
        writer = await session.open_queue(QUEUE, write=True)
        outcomes: list[Ack] = []
        for i in range(500):
            writer.post_nowait(b"m%d" % i, on_ack=outcomes.append)
        await session.stop(linger=10)
        assert len(outcomes) == 500 and all(a.ok for a in outcomes)


async def test_linger_runs_out_with_a_typed_error_naming_how_many() -> None:
    hooks = Silent()
    async with BrokerSimulator(hooks=hooks) as sim:
        options = SessionOptions(linger=0.3, stop_timeout=0.5)  # the option's default is used
        session = AsyncSession(sim.url, options=options)
        await session.start()
        writer = await session.open_queue(QUEUE, write=True)
        hooks.silent = True
        outcomes: list[Ack] = []
        for i in range(7):
            writer.post_nowait(b"m%d" % i, on_ack=outcomes.append)
        with pytest.raises(LingerTimeoutError, match="7 posts") as caught:
            await session.stop()
        assert caught.value.pending == 7
        assert len(outcomes) == 7 and not any(a.ok for a in outcomes)  # each resolved, once


def test_blocking_session_takes_linger_and_zero_means_no_wait() -> None:
    with ThreadedBrokerSimulator() as sim:
        session = Session(sim.url)
        session.start()
        queue = session.open_queue(QUEUE, write=True)
        queue.post(b"x")
        session.stop(linger=5)
    with pytest.raises(UsageError):
        SessionOptions(linger=-1)
    assert SessionOptions().linger == 0.0


async def test_stop_without_linger_still_fails_outstanding_posts_at_once() -> None:
    hooks = Silent()
    async with BrokerSimulator(hooks=hooks) as sim:
        session = AsyncSession(sim.url, options=SessionOptions(stop_timeout=0.5))
        await session.start()
        writer = await session.open_queue(QUEUE, write=True)
        hooks.silent = True
        outcomes: list[Ack] = []
        writer.post_nowait(b"m", on_ack=outcomes.append)
        await asyncio.sleep(0)
        await session.stop()
        assert len(outcomes) == 1 and not outcomes[0].ok
