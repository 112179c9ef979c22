"""FastStream's ack policies on BlazingMQ, over sockets (simulator and real broker): a failed
handler gets its message again up to ``max_attempts``, then it is dead-lettered (or dropped)
and confirmed; REJECT_ON_ERROR dead-letters at once, ACK confirms whatever happens, ACK_FIRST
before the handler, MANUAL leaves it to the handler; what is never confirmed goes back to the
broker and reaches the next consumer."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

pytest.importorskip("faststream")

from faststream.middlewares import AckPolicy
from pybmq.faststream import BlazingMQBroker, BlazingMQMessage

from tests.faststream.service import ORDERS, drained, read

pytestmark = pytest.mark.timeout(90)
DEAD = f"{ORDERS}-dead"


async def until(condition: Any, timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def test_a_crashed_handler_gets_the_message_again_and_nothing_is_left(
    any_broker: str,
) -> None:
    broker = BlazingMQBroker(any_broker, reconnect=False)
    attempts: dict[int, list[int]] = {}

    @broker.subscriber(ORDERS)
    async def flaky(body: dict[str, int], message: BlazingMQMessage) -> None:
        attempts.setdefault(body["n"], []).append(message.attempt)
        if message.attempt == 1:
            raise RuntimeError("crash on the first attempt")

    async with broker:
        await broker.start()
        for n in range(20):
            await broker.publish({"n": n}, ORDERS)
        await until(lambda: len(attempts) == 20 and all(len(a) == 2 for a in attempts.values()))
    assert attempts == {n: [1, 2] for n in range(20)}
    assert await drained(any_broker, ORDERS) == []


async def test_a_handler_that_keeps_failing_is_dead_lettered_after_max_attempts(
    any_broker: str,
) -> None:
    broker = BlazingMQBroker(any_broker, reconnect=False)
    calls: list[int] = []

    @broker.subscriber(ORDERS, max_attempts=3, dead_letter_queue=DEAD)
    async def broken(body: dict[str, int], message: BlazingMQMessage) -> None:
        calls.append(message.attempt)
        raise ValueError(f"cannot ship {body['n']}")

    async with broker:
        await broker.start()
        await broker.publish({"n": 1}, ORDERS, properties={"region": "EU"})
        [dead] = await read(any_broker, DEAD, 1)
    assert calls == [1, 2, 3]
    assert dead.payload == b'{"n":1}'
    properties = dict(dead.properties)
    assert properties["region"] == "EU"
    assert properties["content-type"] == "application/json"
    assert properties["bmq.dead_letter.queue"] == ORDERS
    assert properties["bmq.dead_letter.attempts"] == 3
    assert properties["bmq.dead_letter.reason"] == "ValueError: cannot ship 1"
    assert len(properties["bmq.dead_letter.guid"]) == 32
    assert await drained(any_broker, ORDERS) == []  # confirmed once dead-lettered


async def test_reject_on_error_dead_letters_at_once(any_broker: str) -> None:
    broker = BlazingMQBroker(any_broker, reconnect=False)
    calls = []

    @broker.subscriber(ORDERS, ack_policy=AckPolicy.REJECT_ON_ERROR, dead_letter_queue=DEAD)
    async def broken(body: str) -> None:
        calls.append(body)
        raise ValueError("no")

    async with broker:
        await broker.start()
        await broker.publish("x", ORDERS)
        [dead] = await read(any_broker, DEAD, 1)
    assert calls == ["x"] and dead.properties["bmq.dead_letter.attempts"] == 1


async def test_without_a_dead_letter_queue_the_message_is_dropped_with_a_warning(
    sim_broker: str, caplog: pytest.LogCaptureFixture
) -> None:
    broker = BlazingMQBroker(sim_broker, reconnect=False)
    calls = []

    @broker.subscriber(ORDERS, max_attempts=2)
    async def broken(body: str) -> None:
        calls.append(body)
        raise ValueError("no")

    with caplog.at_level(logging.WARNING, logger="pybmq.faststream"):
        async with broker:
            await broker.start()
            await broker.publish("x", ORDERS)
            await until(lambda: "dropped" in caplog.text)
    assert calls == ["x", "x"]
    assert await drained(sim_broker, ORDERS) == []


@pytest.mark.parametrize("policy", [AckPolicy.ACK, AckPolicy.ACK_FIRST])
async def test_ack_and_ack_first_confirm_a_failed_message_without_retry(
    any_broker: str, policy: AckPolicy
) -> None:
    broker = BlazingMQBroker(any_broker, reconnect=False)
    calls = []

    @broker.subscriber(ORDERS, ack_policy=policy)
    async def broken(body: str) -> None:
        calls.append(body)
        raise ValueError("no")

    async with broker:
        await broker.start()
        await broker.publish("x", ORDERS)
        await until(lambda: calls == ["x"])
        await asyncio.sleep(0.2)
    assert calls == ["x"]
    assert await drained(any_broker, ORDERS) == []


async def test_manual_leaves_an_unsettled_message_to_the_next_consumer(any_broker: str) -> None:
    broker = BlazingMQBroker(any_broker, reconnect=False)
    seen: list[str] = []

    @broker.subscriber(ORDERS, ack_policy=AckPolicy.MANUAL)
    async def manual(body: str, message: BlazingMQMessage) -> None:
        seen.append(body)
        if body == "keep":
            await message.ack()

    async with broker:
        await broker.start()
        await broker.publish("keep", ORDERS)
        await broker.publish("leave", ORDERS)
        await until(lambda: len(seen) == 2)
    left = await drained(any_broker, ORDERS)
    assert [m.payload for m in left] == [b"leave"]


async def test_a_dead_letter_post_that_fails_leaves_the_message_for_redelivery(
    sim_broker: str,
) -> None:
    broker = BlazingMQBroker(sim_broker, reconnect=False, open_timeout=2.0)
    calls = []

    @broker.subscriber(ORDERS, max_attempts=1, dead_letter_queue="bmq://no.such.domain/dead")
    async def broken(body: str) -> None:
        calls.append(body)
        raise ValueError("no")

    async with broker:
        await broker.start()
        await broker.publish("x", ORDERS)
        await until(lambda: calls == ["x"])
        await asyncio.sleep(0.5)  # the dead-letter open is refused
    assert [m.payload for m in await drained(sim_broker, ORDERS)] == [b"x"]
