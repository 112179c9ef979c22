"""The issue's service over real sockets, against ``pybmq sim`` and the real broker: pydantic
orders published with ``broker.publish`` reach the handler, and the shipments it returns arrive
on the second queue as JSON with a content-type property, read by a plain pybmq consumer."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pybmq
import pytest

pytest.importorskip("faststream")

from faststream import FastStream
from pybmq.faststream import (
    BlazingMQBroker,
    BlazingMQMessage,
    BlazingMQResponse,
    TestBlazingMQBroker,
)
from pybmq.wire.properties import MessageProperties, PropertyType

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


async def test_the_test_client_with_real_runs_the_service_on_the_plugins_broker(
    bmq_any_broker_url: str,
) -> None:
    broker, handle = shipping_service(bmq_any_broker_url)
    async with TestBlazingMQBroker(broker, with_real=True) as br:
        await br.publish(Order(id=3, item="chair"), ORDERS)
        await handle.wait_call(timeout=20)
        handle.mock.assert_called_once_with({"id": 3, "item": "chair", "quantity": 1})
    assert broker.sessions is None


async def test_typed_properties_cross_the_wire_both_ways(any_broker: str) -> None:
    """A plain pybmq producer's typed properties reach the handler with their types, and a
    ``BlazingMQResponse`` forwarding them keeps them for the plain consumer."""
    broker = BlazingMQBroker(any_broker, reconnect=False)
    seen: list[tuple[str, PropertyType]] = []

    @broker.subscriber(ORDERS)
    @broker.publisher(SHIPPED)
    async def forward(body: bytes, message: BlazingMQMessage) -> BlazingMQResponse:
        properties = message.properties
        assert isinstance(properties, MessageProperties)
        seen.extend((name, properties.type_of(name)) for name in properties)
        return BlazingMQResponse(body, properties=properties)

    typed = MessageProperties()
    typed.set_int64("big", 7)
    typed.set_short("small", 3)
    typed.set_binary("blob", b"\x00\xff")
    typed.set_bool("flag", True)
    async with broker:
        await broker.start()
        async with pybmq.AsyncSession(
            any_broker, options=pybmq.SessionOptions(reconnect=False)
        ) as s:
            writer = await s.open_queue(ORDERS, write=True)
            assert (await writer.post(b"\x01raw", properties=typed)).ok
        [out] = await read(any_broker, SHIPPED, 1)
    expected = {
        "big": PropertyType.INT64,
        "small": PropertyType.SHORT,
        "blob": PropertyType.BINARY,
        "flag": PropertyType.BOOL,
    }
    assert dict(seen) == expected
    assert out.payload == b"\x01raw"
    assert {name: out.properties.type_of(name) for name in expected} == expected
    assert out.properties["blob"] == b"\x00\xff"


def test_without_the_extra_the_import_says_how_to_install_it() -> None:
    code = (
        "import sys; sys.modules['faststream'] = None\n"
        "try:\n    import pybmq.faststream\nexcept ImportError as exc:\n    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (
        done.stdout.strip() == "pybmq.faststream needs FastStream: pip install 'pybmq[faststream]'"
    )
