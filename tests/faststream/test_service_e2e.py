"""The issue's service over real sockets, against ``pybmq sim`` and the real broker: pydantic
orders published with ``broker.publish`` reach the handler, and the shipments it returns arrive
on the second queue as JSON with a content-type property, read by a plain pybmq consumer."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("faststream")

from faststream import FastStream

from tests.faststream.service import ORDERS, SHIPPED, Order, decoded, read, shipping_service

pytestmark = pytest.mark.timeout(120)


async def test_a_hundred_orders_become_a_hundred_shipments(any_broker: str) -> None:
    broker, _handle = shipping_service(any_broker)
    async with broker:
        await broker.start()
        for n in range(100):
            ack = await broker.publish(Order(id=n, item=f"item-{n}", quantity=n % 3 + 1), ORDERS)
            assert ack.ok
        shipments = await read(any_broker, SHIPPED, 100)
    bodies = sorted((decoded(m) for m in shipments), key=lambda pair: pair[0]["order_id"])
    assert [body for body, _ in bodies] == [
        {"order_id": n, "item": f"item-{n}", "parcels": n % 3 + 1} for n in range(100)
    ]
    for _, properties in bodies:
        assert properties["content-type"] == "application/json"
        assert isinstance(properties["correlation_id"], str)


async def test_the_app_starts_and_stops_the_broker_with_it(sim_broker: str) -> None:
    broker, _ = shipping_service(sim_broker)
    app = FastStream(broker)
    started = asyncio.Event()

    @app.after_startup
    async def publish_one() -> None:
        await broker.publish(Order(id=1, item="book"), ORDERS)
        started.set()

    runner = asyncio.create_task(app.run())
    await asyncio.wait_for(started.wait(), 10)
    [shipment] = await read(sim_broker, SHIPPED, 1)
    assert decoded(shipment)[0] == {"order_id": 1, "item": "book", "parcels": 1}
    app.exit()
    await asyncio.wait_for(runner, 20)
    assert broker.sessions is None
    assert not await broker.ping(0.1)
