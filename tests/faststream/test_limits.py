"""Bad input and the bounds: typed errors, never a hang or silent loss; and routers over
sockets."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("faststream")

from faststream.exceptions import FeatureNotSupportedException, IncorrectState
from pybmq.errors import DeliveryError, EncodeError, UsageError
from pybmq.faststream import (
    BlazingMQBroker,
    BlazingMQRoute,
    BlazingMQRoutePublisher,
    BlazingMQRouter,
)
from pybmq.sim.faults import FaultConfig
from pybmq.sim.server import BrokerSimulator

from tests.faststream.service import ORDERS, PRIORITY, read

pytestmark = pytest.mark.timeout(60)


async def test_publishing_needs_a_started_broker_and_a_queue_uri(sim_broker: str) -> None:
    broker = BlazingMQBroker(sim_broker, reconnect=False)
    with pytest.raises(IncorrectState, match="not connected"):
        await broker.publish("x", ORDERS)
    async with broker:
        with pytest.raises(UsageError, match="bmq://domain/queue"):
            await broker.publish("x", "orders")
        with pytest.raises(UsageError, match="fan-out apps"):
            await broker.publish("x", "bmq://bmq.test.mem.fanout/q?id=foo")
        with pytest.raises(EncodeError, match="no property type for a float"):
            await broker.publish("x", ORDERS, headers={"price": 9.99})
        with pytest.raises(FeatureNotSupportedException, match="reply"):
            await broker.request("x", ORDERS)
        assert (await broker.publish("x", ORDERS)).ok  # the broker still works


async def test_the_writer_queues_are_bounded(sim_broker: str) -> None:
    broker = BlazingMQBroker(sim_broker, reconnect=False, max_writer_queues=2)
    async with broker:
        await broker.publish("a", f"{PRIORITY}/one")
        await broker.publish("b", f"{PRIORITY}/two")
        await broker.publish("c", f"{PRIORITY}/one")  # already open
        with pytest.raises(UsageError, match="max_writer_queues"):
            await broker.publish("d", f"{PRIORITY}/three")


def test_subscriber_options_are_checked_when_declared() -> None:
    broker = BlazingMQBroker("tcp://127.0.0.1:1")
    for bad, match in (
        ({"max_attempts": 0}, "max_attempts"),
        ({"retry_delay": -1.0}, "retry_delay"),
        ({"max_workers": 0}, "max_workers"),
        ({"subscription": "x" * 200_000}, "too long|at most"),
        ({"max_unconfirmed_messages": -1}, "max_unconfirmed"),
        ({"dedup_window": -1}, "dedup_window"),
        ({"dedup_window_age": 0.0}, "dedup_window_age"),
    ):
        with pytest.raises(UsageError, match=match):
            broker.subscriber(ORDERS, **bad)  # type: ignore[arg-type]
    # The de-duplication window reaches the reader queue's options (off by default).
    windowed = broker.subscriber(f"{ORDERS}-dedup", dedup_window=100, dedup_window_age=60.0)
    assert (windowed.options.dedup_window, windowed.options.dedup_window_age) == (100, 60.0)
    assert broker.subscriber(f"{ORDERS}-plain").options.dedup_window == 0
    with pytest.raises(EncodeError):
        broker.publisher(ORDERS, properties={"price": 1.5})
    with pytest.raises(UsageError):
        BlazingMQBroker("tcp://127.0.0.1:1", max_writer_queues=0)
    with pytest.raises(TypeError):
        BlazingMQBroker("tcp://127.0.0.1:1", no_such_option=True)


async def test_a_nack_raises_delivery_error() -> None:
    async with BrokerSimulator(faults=FaultConfig(nack_share=1.0)) as sim:
        broker = BlazingMQBroker(sim.url, reconnect=False)
        async with broker:
            with pytest.raises(DeliveryError, match="did not store"):
                await broker.publish("x", ORDERS)


async def test_an_unreachable_broker_fails_to_start_with_a_typed_error() -> None:
    from pybmq.errors import SessionStoppedError

    broker = BlazingMQBroker("tcp://127.0.0.1:9", reconnect=False, connect_timeout=2.0)
    with pytest.raises(SessionStoppedError):
        await broker.connect()
    assert broker.sessions is None


async def test_routers_with_a_prefix_and_routes_over_sockets(sim_broker: str) -> None:
    async def pack(body: str) -> str:
        return body.upper()

    router = BlazingMQRouter(
        f"{PRIORITY}/",
        handlers=[
            BlazingMQRoute(pack, "router-in", publishers=[BlazingMQRoutePublisher("router-out")])
        ],
    )
    nested = BlazingMQRouter()

    @nested.subscriber("bmq://bmq.test.mem.fanout/router-events?id=foo")
    @nested.publisher(f"{PRIORITY}/router-out")
    async def relay(body: str) -> str:
        return f"relayed {body}"

    broker = BlazingMQBroker(sim_broker, reconnect=False, routers=[router])
    broker.include_router(nested)
    with pytest.raises(TypeError):
        broker.include_router(object())  # type: ignore[arg-type]
    async with broker:
        await broker.start()
        await broker.publish("box", f"{PRIORITY}/router-in")
        await broker.publish("news", "bmq://bmq.test.mem.fanout/router-events")
        got = await asyncio.wait_for(read(sim_broker, f"{PRIORITY}/router-out", 2), 20)
    assert sorted(m.payload for m in got) == [b"BOX", b"relayed news"]
