"""Hostile clients against the simulator over real loopback sockets: each test reproduces one
attack (bounded in time and count) and proves the simulator stays up for everyone else."""

from __future__ import annotations

import asyncio

import pytest
from pybmq.client.aio import AsyncSession
from pybmq.errors import MessageDecodeError
from pybmq.sim.server import BrokerSimulator
from pybmq.wire.properties import MessageProperties

from tests.helpers.hostile import store_raw

pytestmark = pytest.mark.timeout(60)

QUEUE = "bmq://bmq.test.mem.priority/hostile-sim"


async def test_a_poison_message_for_an_old_properties_consumer_costs_nobody_the_session() -> None:
    area = MessageProperties({"kind": "poison"}).encode(extended=True)
    async with (
        BrokerSimulator() as sim,
        AsyncSession(sim.url) as producer,
        AsyncSession(sim.url) as consumer,
    ):
        writer = await producer.open_queue(QUEUE, write=True)
        reader = await consumer.open_queue(QUEUE, read=True)
        # The consumer reads old-style properties only: the simulator must convert each
        # message, and this one cannot be converted (its "zlib" payload is junk).
        for session in sim._transports:
            session.extended_properties = False
        store_raw(sim, QUEUE, b"junk claiming to be zlib", properties_area=area)
        bad = await asyncio.wait_for(reader.get(), 10)
        assert isinstance(bad.error, MessageDecodeError)
        await bad.confirm()
        # Both connections, the timers and the data path are still up.
        assert (await asyncio.wait_for(writer.post(b"next"), 10)).ok
        good = await asyncio.wait_for(reader.get(), 10)
        assert good.payload == b"next" and good.error is None
        assert sim.broker.stats.internal_errors == 0
        assert len(sim._transports) == 2
