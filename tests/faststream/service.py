"""The issue's service for the tests: orders in, shipments out (pydantic models)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pybmq
from pybmq.faststream import BlazingMQBroker
from pydantic import BaseModel

PRIORITY = "bmq://bmq.test.mem.priority"
ORDERS = f"{PRIORITY}/orders"
SHIPPED = f"{PRIORITY}/shipped"


class Order(BaseModel):
    id: int
    item: str
    quantity: int = 1


class Shipment(BaseModel):
    order_id: int
    item: str
    parcels: int


def shipping_service(url: str, **broker_options: Any) -> tuple[BlazingMQBroker, Any]:
    """A broker with the one handler: each order becomes a shipment."""
    broker = BlazingMQBroker(url, reconnect=False, **broker_options)

    @broker.subscriber(ORDERS)
    @broker.publisher(SHIPPED)
    async def handle(order: Order) -> Shipment:
        return Shipment(order_id=order.id, item=order.item, parcels=order.quantity)

    return broker, handle


async def read(url: str, uri: str, count: int, timeout: float = 20.0) -> list[Any]:
    """``count`` messages of ``uri`` read (and confirmed) by a plain pybmq consumer."""
    options = pybmq.SessionOptions(reconnect=False)
    out: list[Any] = []
    async with pybmq.AsyncSession(url, options=options) as session:
        queue = await session.open_queue(uri, read=True)
        while len(out) < count:
            message = await asyncio.wait_for(queue.get(), timeout)
            out.append(message)
            await message.confirm()
    return out


def decoded(message: Any) -> tuple[Any, dict[str, Any]]:
    return json.loads(message.payload), dict(message.properties)


async def drained(url: str, uri: str) -> list[Any]:
    """What is left on ``uri`` (read and confirmed), after a short wait for stragglers."""
    left = []
    async with pybmq.AsyncSession(url, options=pybmq.SessionOptions(reconnect=False)) as s:
        queue = await s.open_queue(uri, read=True)
        while True:
            try:
                message = await asyncio.wait_for(queue.get(), 0.5)
            except asyncio.TimeoutError:
                return left
            left.append(message)
            await message.confirm()
