"""A two-stage handler chain (orders → packed → shipped) with ``pybmq.faststream``, next to the
same chain written with plain pybmq, through one ``pybmq sim`` process.

Both chains do the same job with the same safety: each stage reads a message, decodes its JSON,
posts a JSON result to the next queue, waits for that post's ACK and then confirms the input
(FastStream's default flow: the handler's result is published before the message is settled),
with 16 messages in hand per stage, a reading session and a posting session. The orders are
posted before the chain starts; the rate is orders per second from the chain's start until the
last shipment is read. Rounds alternate (FastStream, plain, ...) and each keeps its best, so a
busy moment on a shared machine hits both; the figure to compare is the ratio.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from pybmq.client.aio import AsyncQueue, AsyncSession
from pybmq.client.loadgen import consume_messages, post_messages
from pybmq.client.options import SessionOptions

from bench.common import Result, sim_process

WORKERS = 16
ROUNDS = 3
PRIORITY = "bmq://bmq.test.mem.priority"
ORDER = json.dumps({"n": 1, "item": "lamp", "quantity": 2}).encode()
OPTIONS = SessionOptions(reconnect=False)
Chain = Callable[[str, str, str, str], Awaitable[contextlib.AbstractAsyncContextManager[None]]]


def _queues(variant: str, round_: int) -> tuple[str, str, str]:
    base = f"{PRIORITY}/bench-{variant}-{round_}"
    return f"{base}-orders", f"{base}-packed", f"{base}-shipped"


def _pack(order: dict[str, Any]) -> dict[str, int]:
    return {"n": order["n"], "boxes": order["quantity"]}


def _ship(parcel: dict[str, int]) -> dict[str, int]:
    return {"n": parcel["n"], "boxes": parcel["boxes"], "shipped": 1}


@contextlib.asynccontextmanager
async def faststream_chain(url: str, orders: str, packed: str, shipped: str):  # type: ignore[no-untyped-def]
    from pybmq.faststream import BlazingMQBroker

    broker = BlazingMQBroker(url, options=OPTIONS, logger=None)
    broker.subscriber(orders, max_workers=WORKERS)(broker.publisher(packed)(_pack_handler))
    broker.subscriber(packed, max_workers=WORKERS)(broker.publisher(shipped)(_ship_handler))
    async with broker:
        await broker.start()
        yield


async def _pack_handler(order: dict[str, Any]) -> dict[str, int]:
    return _pack(order)


async def _ship_handler(parcel: dict[str, int]) -> dict[str, int]:
    return _ship(parcel)


async def _plain_stage(
    reader: AsyncQueue, writer: AsyncQueue, step: Callable[[dict[str, Any]], dict[str, int]]
) -> None:
    properties = {"content-type": "application/json"}
    while True:
        message = await reader.get()
        result = json.dumps(step(json.loads(message.payload))).encode()
        ack = await writer.post(result, properties=properties)
        if not ack.ok:
            raise RuntimeError(f"NACK: {ack!r}")
        await message.confirm()


@contextlib.asynccontextmanager
async def plain_chain(url: str, orders: str, packed: str, shipped: str):  # type: ignore[no-untyped-def]
    async with (
        AsyncSession(url, options=OPTIONS) as reading,
        AsyncSession(url, options=OPTIONS) as posting,
    ):
        tasks = []
        for source, target, step in ((orders, packed, _pack), (packed, shipped, _ship)):
            reader = await reading.open_queue(source, read=True)
            writer = await posting.open_queue(target, write=True)
            tasks += [
                asyncio.create_task(_plain_stage(reader, writer, step)) for _ in range(WORKERS)
            ]
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


async def _round(url: str, chain: Chain, queues: tuple[str, str, str], count: int) -> float:
    orders, packed, shipped = queues
    async with AsyncSession(url, options=OPTIONS) as session:
        writer = await session.open_queue(orders, write=True)
        posted = await post_messages(writer, count, ORDER, window=count)
        assert posted.count == count, posted
        reader = await session.open_queue(shipped, read=True)
        start = time.perf_counter()
        async with chain(url, orders, packed, shipped):  # type: ignore[operator]
            consumed = await consume_messages(reader, count, confirm=True)
            elapsed = time.perf_counter() - start
        assert consumed.count == count, consumed
    return count / elapsed


async def _in_memory(count: int) -> float:
    """The FastStream chain with no broker at all (``TestBlazingMQBroker``): what the framework
    itself (FastDepends, pydantic, middlewares, the test double's mocks) costs per message."""
    from pybmq.faststream import BlazingMQBroker, TestBlazingMQBroker

    orders, packed, shipped = _queues("memory", 0)
    broker = BlazingMQBroker("tcp://127.0.0.1:1", logger=None)
    broker.subscriber(orders)(broker.publisher(packed)(_pack_handler))
    broker.subscriber(packed)(broker.publisher(shipped)(_ship_handler))
    order = json.loads(ORDER)
    async with TestBlazingMQBroker(broker) as test:
        start = time.perf_counter()
        for _ in range(count):
            await test.publish(order, orders)
        return count / (time.perf_counter() - start)


async def _measure(url: str, count: int, rounds: int) -> dict[str, float]:
    best: dict[str, float] = {}
    variants: list[tuple[str, Chain]] = [
        ("faststream", faststream_chain),  # type: ignore[list-item]
        ("plain", plain_chain),  # type: ignore[list-item]
    ]
    for round_ in range(rounds):
        for name, chain in variants[round_ % 2 :] + variants[: round_ % 2]:
            rate = await _round(url, chain, _queues(name, round_), count)
            best[name] = max(best.get(name, 0.0), rate)
        best["memory"] = max(best.get("memory", 0.0), await _in_memory(count))
    return best


def run(quick: bool) -> list[Result]:
    count, rounds = (200, 1) if quick else (5_000, ROUNDS)
    logging.getLogger("blazingmq").setLevel(logging.WARNING)
    with sim_process() as url:
        best = asyncio.run(_measure(url, count, rounds))
    ours, plain = best["faststream"], best["plain"]
    note = f"2 stages, {WORKERS} in hand per stage, {count:,} orders, best of {rounds}"
    return [
        Result("faststream chain: pybmq.faststream", ours, "msg/s", note),
        Result("faststream chain: plain pybmq", plain, "msg/s", "the same job, by hand"),
        Result("faststream chain: pybmq.faststream ÷ plain pybmq", ours / plain, "x", ""),
        Result(
            "faststream chain: in memory, no broker",
            best["memory"],
            "msg/s",
            "TestBlazingMQBroker: FastStream's own cost per message bounds the chain",
        ),
    ]
