"""The FastAPI integration over sockets: the broker starts and stops with the app, an HTTP route
publishes, a subscriber takes FastAPI dependencies, and the AsyncAPI page is served."""

from __future__ import annotations

import asyncio
import threading
from typing import Annotated

import pytest

pytest.importorskip("faststream")
pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi import Depends, FastAPI
from fastapi.testclient import TestClient
from pybmq.faststream.fastapi import BlazingMQRouter

from tests.faststream.service import ORDERS, Order

pytestmark = pytest.mark.timeout(60)


def carrier() -> str:
    return "bmq-express"


def test_a_route_publishes_and_a_subscriber_with_dependencies_handles(bmq_broker_url: str) -> None:
    router = BlazingMQRouter(bmq_broker_url, reconnect=False)
    handled: list[tuple[int, str]] = []
    done = threading.Event()

    @router.subscriber(ORDERS)
    async def handle(order: Order, via: Annotated[str, Depends(carrier)]) -> None:
        handled.append((order.id, via))
        done.set()

    @router.post("/orders/{order_id}")
    async def create(order_id: int) -> dict[str, int]:
        await router.broker.publish(Order(id=order_id, item="book"), ORDERS)
        return {"queued": order_id}

    app = FastAPI()
    app.include_router(router)
    with TestClient(app) as client:
        assert client.post("/orders/5").json() == {"queued": 5}
        assert done.wait(10)
        assert client.get("/asyncapi").status_code == 200  # the HTML page
        schema = client.get("/asyncapi.json").json()
        [channel] = schema["channels"].values()
        assert channel["address"] == ORDERS and "BlazingMQ: " in channel["description"]
    assert handled == [(5, "bmq-express")]
    assert router.broker.sessions is None  # stopped with the app


def test_the_router_wraps_in_memory_testing_too() -> None:
    from pybmq.faststream import TestBlazingMQBroker

    router = BlazingMQRouter("tcp://127.0.0.1:1")

    @router.subscriber(ORDERS)
    async def handle(order: Order, via: Annotated[str, Depends(carrier)]) -> str:
        return via

    async def run() -> None:
        async with TestBlazingMQBroker(router.broker) as br:
            await br.publish(Order(id=1, item="x"), ORDERS)
            handle.mock.assert_called_once_with({"id": 1, "item": "x", "quantity": 1})

    asyncio.run(run())
