"""Subscriptions split one queue between two services (simulator and real broker): each gets
only the messages its expression matches, and a service with a higher consumer priority takes
the messages both match."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("faststream")

from pybmq import Subscription
from pybmq.faststream import BlazingMQBroker

from tests.faststream.service import ORDERS, drained

pytestmark = pytest.mark.timeout(90)


def service(
    url: str, name: str, got: dict[str, list[int]], **subscriber: object
) -> BlazingMQBroker:
    broker = BlazingMQBroker(url, reconnect=False, logger=None)

    @broker.subscriber(ORDERS, **subscriber)  # type: ignore[arg-type]
    async def handle(order: dict[str, int]) -> None:
        got[name].append(order["n"])

    return broker


async def test_two_services_split_a_queue_by_region(any_broker: str) -> None:
    got: dict[str, list[int]] = {"eu": [], "us": []}
    eu = service(any_broker, "eu", got, subscription='region == "EU"')
    us = service(
        any_broker,
        "us",
        got,
        subscription=Subscription('region == "US"', max_unconfirmed_messages=5),
    )
    producer = BlazingMQBroker(any_broker, reconnect=False, logger=None)
    async with eu, us, producer:
        await eu.start()
        await us.start()
        for n in range(60):
            region = ("EU", "US", "APAC")[n % 3]
            await producer.publish({"n": n}, ORDERS, properties={"region": region})
        deadline = asyncio.get_running_loop().time() + 20
        while len(got["eu"]) + len(got["us"]) < 40:
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)
    assert sorted(got["eu"]) == list(range(0, 60, 3))
    assert sorted(got["us"]) == list(range(1, 60, 3))
    # Nobody subscribed to APAC: those stay on the queue for a reader that wants them.
    left = await drained(any_broker, ORDERS)
    assert sorted(int(m.payload.split(b":")[1].rstrip(b"}")) for m in left) == list(range(2, 60, 3))


async def test_the_higher_consumer_priority_takes_what_both_match(any_broker: str) -> None:
    got: dict[str, list[int]] = {"main": [], "standby": []}
    main = service(any_broker, "main", got, subscription="n >= 0", consumer_priority=10)
    standby = service(any_broker, "standby", got, subscription="n >= 0", consumer_priority=1)
    async with main, standby:
        await standby.start()
        await main.start()
        for n in range(20):
            await main.publish({"n": n}, ORDERS, properties={"n": n})
        deadline = asyncio.get_running_loop().time() + 20
        while len(got["main"]) < 20:
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.02)
    assert got == {"main": list(range(20)), "standby": []}
