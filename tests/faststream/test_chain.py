"""10,000 messages through a chain of two FastStream services (orders → packed → shipped), over
sockets to the simulator and the real broker: every one arrives, once, and nothing is left
unconfirmed on the way."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("faststream")

from pybmq.faststream import BlazingMQBroker

from tests.faststream.service import PRIORITY, drained, read

pytestmark = pytest.mark.timeout(300)
COUNT = 10_000
ORDERS, PACKED, SHIPPED = (f"{PRIORITY}/chain-{stage}" for stage in ("orders", "packed", "shipped"))


def chain(url: str) -> BlazingMQBroker:
    broker = BlazingMQBroker(url, reconnect=False, logger=None)

    @broker.subscriber(ORDERS, max_workers=16)
    @broker.publisher(PACKED)
    async def pack(order: dict[str, int]) -> dict[str, int]:
        return {"n": order["n"], "boxes": order["n"] % 5 + 1}

    @broker.subscriber(PACKED, max_workers=16)
    @broker.publisher(SHIPPED)
    async def ship(parcel: dict[str, int]) -> dict[str, int]:
        return {"n": parcel["n"], "boxes": parcel["boxes"], "shipped": 1}

    return broker


async def test_ten_thousand_messages_through_a_handler_chain_lose_none(any_broker: str) -> None:
    service = chain(any_broker)
    producer = BlazingMQBroker(any_broker, reconnect=False, logger=None)
    async with service, producer:
        await service.start()
        reading = asyncio.create_task(read(any_broker, SHIPPED, COUNT, timeout=60))
        for start in range(0, COUNT, 500):
            await asyncio.gather(
                *(producer.publish({"n": n}, ORDERS) for n in range(start, start + 500))
            )
        shipped = await reading
    numbers = sorted(json.loads(m.payload)["n"] for m in shipped)
    assert numbers == list(range(COUNT))
    assert await drained(any_broker, ORDERS) == []
    assert await drained(any_broker, PACKED) == []
