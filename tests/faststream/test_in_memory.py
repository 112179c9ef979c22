"""``TestBlazingMQBroker`` in memory: handlers' and publishers' mocks get the decoded message,
and messages are routed as a BlazingMQ broker routes them (one consumer of a priority queue, the
highest priority first; one per fan-out app; subscription expressions)."""

from __future__ import annotations

import pytest

pytest.importorskip("faststream")

from faststream.middlewares import AckPolicy
from pybmq.faststream import (
    BlazingMQBroker,
    BlazingMQMessage,
    BlazingMQResponse,
    TestBlazingMQBroker,
)
from pybmq.wire.properties import MessageProperties, PropertyType

from tests.faststream.service import ORDERS, SHIPPED, Order, shipping_service

FANOUT = "bmq://bmq.test.mem.fanout/events"
URL = "tcp://127.0.0.1:1"  # never connected in memory


async def test_the_handler_mock_gets_the_decoded_order_and_the_publisher_the_shipment() -> None:
    broker, handle = shipping_service(URL)
    shipped = broker.publisher(SHIPPED)  # the same queue: its mock sees what handle returns
    async with TestBlazingMQBroker(broker) as br:
        await br.publish(Order(id=7, item="lamp", quantity=2), ORDERS)
        handle.mock.assert_called_once_with({"id": 7, "item": "lamp", "quantity": 2})
        shipped.mock.assert_called_once_with({"order_id": 7, "item": "lamp", "parcels": 2})


async def test_a_fanout_queue_gives_each_app_a_copy_and_a_priority_queue_one_consumer() -> None:
    broker = BlazingMQBroker(URL)
    seen: list[str] = []

    def app_reader(app: str) -> None:
        @broker.subscriber(f"{FANOUT}?id={app}")
        async def handler(body: str, message: BlazingMQMessage) -> None:
            seen.append(f"{app}:{body}:{message.queue_uri}")

    app_reader("foo")
    app_reader("bar")

    @broker.subscriber(ORDERS, consumer_priority=1)
    async def high(body: str) -> None:
        seen.append(f"high:{body}")

    @broker.subscriber(ORDERS)
    async def low(body: str) -> None:
        seen.append(f"low:{body}")

    async with TestBlazingMQBroker(broker) as br:
        await br.publish("e1", FANOUT)
        await br.publish("o1", ORDERS)
    assert sorted(seen) == [f"bar:e1:{FANOUT}?id=bar", f"foo:e1:{FANOUT}?id=foo", "high:o1"]


async def test_subscription_expressions_choose_the_subscriber() -> None:
    broker = BlazingMQBroker(URL)

    @broker.subscriber(ORDERS, subscription="price > 100")
    async def big(body: dict[str, int]) -> None: ...

    @broker.subscriber(ORDERS, subscription=["price <= 100", 'region == "EU"'])
    async def small(body: dict[str, int]) -> None: ...

    async with TestBlazingMQBroker(broker) as br:
        await br.publish({"n": 1}, ORDERS, properties={"price": 500})
        await br.publish({"n": 2}, ORDERS, properties={"price": 5})
        await br.publish({"n": 3}, ORDERS, headers={"price": 500, "region": "EU"})
        await br.publish({"n": 4}, ORDERS, properties={"region": "US"})  # nobody's
        to_big = [c.args[0]["n"] for c in big.mock.call_args_list]
        to_small = [c.args[0]["n"] for c in small.mock.call_args_list]
    # 3 matches both: a priority queue gives it to one of them
    assert sorted(to_big + to_small) == [1, 2, 3]
    assert 1 in to_big and 2 in to_small


async def test_headers_and_typed_properties_reach_the_handler_with_their_types() -> None:
    broker = BlazingMQBroker(URL)
    got: list[BlazingMQMessage] = []

    @broker.subscriber(ORDERS)
    async def handle(body: bytes, message: BlazingMQMessage) -> None:
        got.append(message)

    typed = MessageProperties()
    typed.set_int64("big", 5)
    async with TestBlazingMQBroker(broker) as br:
        await br.publish(
            b"\x00raw",
            ORDERS,
            headers={"who": "me", "n": 3, "ok": True, "blob": b"\x01"},
            properties={"small": (PropertyType.SHORT, 2), **typed},
            correlation_id="c-1",
        )
        assert handle.mock.call_count == 1
    [message] = got
    assert message.body == b"\x00raw" and message.content_type is None
    assert message.correlation_id == "c-1"
    assert message.headers["who"] == "me" and message.headers["blob"] == b"\x01"
    properties = message.properties
    assert isinstance(properties, MessageProperties)
    assert properties.type_of("n") is PropertyType.INT32
    assert properties.type_of("ok") is PropertyType.BOOL
    assert properties.type_of("small") is PropertyType.SHORT
    assert properties.type_of("big") is PropertyType.INT32  # ** unpacks values, not types


async def test_a_response_sets_typed_properties_on_the_reply() -> None:
    broker = BlazingMQBroker(URL)
    out = broker.publisher(SHIPPED)

    @broker.subscriber(ORDERS)
    @out
    async def handle(body: str) -> BlazingMQResponse:
        return BlazingMQResponse(body.upper(), properties={"stage": (PropertyType.INT64, 2)})

    replies: list[BlazingMQMessage] = []

    @broker.subscriber(SHIPPED)
    async def sink(body: str, message: BlazingMQMessage) -> None:
        replies.append(message)

    async with TestBlazingMQBroker(broker) as br:
        await br.publish("x", ORDERS)
    [reply] = replies
    assert reply.body == b"X" and reply.content_type == "text/plain"
    assert reply.properties.type_of("stage") is PropertyType.INT64  # type: ignore[attr-defined]


async def test_a_rejected_message_reaches_the_dead_letter_subscriber_in_memory_too() -> None:
    broker = BlazingMQBroker(URL)
    dead_letters = f"{ORDERS}-dead"

    @broker.subscriber(ORDERS, ack_policy=AckPolicy.REJECT_ON_ERROR, dead_letter_queue=dead_letters)
    async def fails(body: str) -> None:
        raise ValueError("bad order")

    @broker.subscriber(dead_letters)
    async def dead(body: str, message: BlazingMQMessage) -> None:
        assert message.headers["bmq.dead_letter.queue"] == ORDERS
        assert message.headers["bmq.dead_letter.reason"] == "ValueError: bad order"

    async with TestBlazingMQBroker(broker) as br:
        with pytest.raises(ValueError, match="bad order"):
            await br.publish("o", ORDERS)
        dead.mock.assert_called_once_with("o")
