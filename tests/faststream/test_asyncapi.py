"""``faststream.specification.AsyncAPI(broker)`` documents every queue: the channel's address is
the queue URI and its description ends with the BlazingMQ bindings line."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("faststream")

from faststream.specification import AsyncAPI
from pybmq import Subscription
from pybmq.faststream import BlazingMQBroker, BlazingMQRouter
from pybmq.wire.properties import PropertyType

from tests.faststream.service import ORDERS, SHIPPED, shipping_service


def channels(broker: BlazingMQBroker, **kwargs: object) -> dict[str, dict[str, object]]:
    document = json.loads(AsyncAPI(broker, **kwargs).to_specification().to_json())  # type: ignore[arg-type]
    return document["channels"]  # type: ignore[no-any-return]


def test_the_document_names_both_queues_of_the_service_with_their_bindings() -> None:
    broker, _ = shipping_service("tcp://localhost:30114")
    spec = json.loads(AsyncAPI(broker, title="Shipping").to_specification().to_json())
    assert spec["asyncapi"] == "3.0.0"
    assert spec["servers"]["development"]["protocol"] == "blazingmq"
    addresses = {c["address"]: c for c in spec["channels"].values()}
    assert set(addresses) == {ORDERS, SHIPPED}
    assert addresses[ORDERS]["description"] == (
        "BlazingMQ: domain `bmq.test.mem.priority`; queue `orders`; consumer priority 0; "
        "properties `content-type` (STRING), `correlation_id` (STRING)."
    )
    assert "queue `shipped`" in addresses[SHIPPED]["description"]
    # The payloads are the pydantic models' schemas.
    schemas = spec["components"]["schemas"]
    assert {"Order", "Shipment"} <= set(schemas)
    assert set(schemas["Order"]["properties"]) == {"id", "item", "quantity"}
    operations = {op["action"] for op in spec["operations"].values()}
    assert operations == {"receive", "send"}


def test_app_subscription_dead_letter_and_publisher_properties_are_documented() -> None:
    broker = BlazingMQBroker("tcp://localhost:30114")
    router = BlazingMQRouter("bmq://bmq.test.mem.fanout/")

    @router.subscriber(
        "events?id=foo",
        subscription=[Subscription("price > 10", consumer_priority=3), 'region == "EU"'],
        consumer_priority=2,
        dead_letter_queue="bmq://bmq.test.mem.priority/dead",
        description="Big EU events.",
    )
    @router.publisher(
        "bmq://bmq.test.mem.priority/audit",
        properties={"stage": (PropertyType.INT64, 2), "source": "events"},
    )
    async def handle(body: dict[str, int]) -> dict[str, int]:
        return body

    broker.include_router(router)
    described = {c["address"]: c["description"] for c in channels(broker).values()}
    assert described["bmq://bmq.test.mem.fanout/events?id=foo"] == (
        "Big EU events.\n\nBlazingMQ: domain `bmq.test.mem.fanout`; queue `events`; appId `foo`; "
        'subscription `price > 10` (priority 3); subscription `region == "EU"`; '
        "consumer priority 2; dead-letter queue `bmq://bmq.test.mem.priority/dead`; "
        "properties `content-type` (STRING), `correlation_id` (STRING), `price`, `region`."
    )
    assert described["bmq://bmq.test.mem.priority/audit"].endswith(
        "properties `content-type` (STRING), `correlation_id` (STRING), `stage` (INT64), "
        "`source` (STRING)."
    )
