"""Old brokers: against ``pybmq sim`` playing a broker without MPS:MESSAGE_PROPERTIES_EX, the
client posts the old message-properties format (as the C++ SDK does); with it, the extended
one. Over loopback sockets."""

from __future__ import annotations

import asyncio

import pytest
from pybmq.client.aio import AsyncSession
from pybmq.client.options import SessionOptions
from pybmq.sim.config import BrokerConfig
from pybmq.sim.server import BrokerSimulator

pytestmark = pytest.mark.timeout(60)

URI = "bmq://bmq.test.mem.priority/old-properties"
PROPERTIES = {"kind": "red", "count": 7, "blob": b"\x00\x01"}


@pytest.mark.parametrize("extended", [False, True])
@pytest.mark.parametrize("compression_threshold", [0, 1])
async def test_post_and_consume_properties_in_the_broker_format(
    extended: bool, compression_threshold: int
) -> None:
    config = BrokerConfig(extended_properties=extended)
    options = SessionOptions(compression_threshold=compression_threshold)
    async with BrokerSimulator(config) as sim:
        async with AsyncSession(sim.url, options=options) as producer:
            assert producer.engine.extended_properties is extended
            writer = await producer.open_queue(URI, write=True)
            acks = await asyncio.gather(
                *(writer.post(b"payload %d" % i, properties=PROPERTIES) for i in range(3))
            )
            assert [ack.ok for ack in acks] == [True] * 3  # an EX post would be NACKed
            stored = next(iter(sim.broker.store.queues[URI].streams.values())).pending
            assert {m.schema_id != 0 for m in stored} == {extended}
            assert sim.broker.stats.nacks == 0
        async with AsyncSession(sim.url) as consumer:
            reader = await consumer.open_queue(URI, read=True)
            for i in range(3):
                message = await asyncio.wait_for(reader.get(), 10)
                assert message.payload == b"payload %d" % i
                assert dict(message.properties) == PROPERTIES
                await message.confirm()
            # A subscription expression reads old-format properties too.
            await reader.configure(subscriptions=('kind == "red"',))


async def test_a_broker_without_ex_nacks_an_extended_post() -> None:
    """The check the fallback is tested against: the sim refuses the extended format when it
    plays an old broker (so the test above fails without the client's fallback)."""
    async with (
        BrokerSimulator(BrokerConfig(extended_properties=False)) as sim,
        AsyncSession(sim.url) as producer,
    ):
        producer.engine.publisher.extended_properties = True  # a client without the fallback
        writer = await producer.open_queue(URI, write=True)
        ack = await writer.post(b"x", properties={"kind": "red"})
        assert not ack.ok
        plain = await writer.post(b"no properties")  # nothing to convert: accepted
        assert plain.ok
