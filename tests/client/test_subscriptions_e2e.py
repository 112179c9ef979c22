"""Subscriptions as first-class objects, against ``pybmq sim`` over loopback sockets: each one
with its own priority and credits, the handle each message carries, configure adding and
removing subscriptions, and messages nobody subscribed to staying queued."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from pybmq.client.aio import AsyncQueue, AsyncSession, ReceivedMessage
from pybmq.client.options import QueueOptions
from pybmq.client.subscriptions import MAX_EXPRESSION_LENGTH, MAX_SUBSCRIPTIONS, Subscription
from pybmq.errors import UsageError
from pybmq.sim.server import BrokerSimulator

pytestmark = pytest.mark.timeout(60)

URI = "bmq://bmq.test.mem.priority/subscriptions"


@pytest.fixture
async def sim() -> AsyncIterator[BrokerSimulator]:
    async with BrokerSimulator() as simulator:
        yield simulator


async def received(queue: AsyncQueue, n: int) -> list[ReceivedMessage]:
    return [await asyncio.wait_for(queue.get(), 10) for _ in range(n)]


async def nothing_more(queue: AsyncQueue) -> None:
    await asyncio.sleep(0.2)
    assert queue.get_nowait() is None


def pending(sim: BrokerSimulator) -> int:
    return sim.broker.store.queues[URI].pending_count()


async def post_kinds(writer: AsyncQueue, kinds: list[str]) -> None:
    acks = await asyncio.gather(
        *(writer.post(b"%d" % i, properties={"kind": kind}) for i, kind in enumerate(kinds))
    )
    assert all(ack.ok for ack in acks)


async def test_two_subscriptions_own_priority_and_credit_and_unmatched_stay_queued(
    sim: BrokerSimulator,
) -> None:
    red = Subscription('kind == "red"', max_unconfirmed_messages=2, name="red")
    blue = Subscription('kind == "blue"', consumer_priority=5, max_unconfirmed_messages=3)
    async with AsyncSession(sim.url) as producer, AsyncSession(sim.url) as consumer:
        writer = await producer.open_queue(URI, write=True)
        reader = await consumer.open_queue(
            URI, read=True, options=QueueOptions(subscriptions=(red, blue))
        )
        await post_kinds(writer, ["red"] * 4 + ["blue"] * 5 + ["green"] * 2)
        got = await received(reader, 5)  # 2 red (its credit), 3 blue (its credit)
        await nothing_more(reader)
        by = {id(red): 0, id(blue): 0}
        for message in got:
            assert message.subscription is not None
            assert message.properties["kind"] == message.subscription.expression.split('"')[1]
            by[id(message.subscription)] += 1
        assert by == {id(red): 2, id(blue): 3}
        assert pending(sim) == 2 + 2 + 2  # red and blue over credit, and green (no match)
        for message in got:
            await message.confirm()
        more = await received(reader, 4)  # the rest of red and blue; green stays
        assert sorted(m.properties["kind"] for m in more) == ["blue", "blue", "red", "red"]
        await nothing_more(reader)
        assert pending(sim) == 2


async def test_per_subscription_priority_picks_the_consumer(sim: BrokerSimulator) -> None:
    """Per subscription, only the highest-priority consumer receives: consumer A is on top for
    red, consumer B for blue, although both subscribe to both."""
    async with (
        AsyncSession(sim.url) as producer,
        AsyncSession(sim.url) as a,
        AsyncSession(sim.url) as b,
    ):
        writer = await producer.open_queue(URI, write=True)
        high_red = (Subscription('kind == "red"', consumer_priority=9), 'kind == "blue"')
        high_blue = ('kind == "red"', Subscription('kind == "blue"', consumer_priority=9))
        reader_a = await a.open_queue(URI, read=True, subscriptions=high_red)
        reader_b = await b.open_queue(URI, read=True, subscriptions=high_blue)
        await post_kinds(writer, ["red", "blue"] * 3)
        got_a = await received(reader_a, 3)
        got_b = await received(reader_b, 3)
        assert {m.properties["kind"] for m in got_a} == {"red"}
        assert {m.properties["kind"] for m in got_b} == {"blue"}
        assert all(m.subscription is high_red[0] for m in got_a)
        assert all(m.subscription is high_blue[1] for m in got_b)


async def test_configure_adds_and_removes_subscriptions(sim: BrokerSimulator) -> None:
    red = Subscription('kind == "red"')
    green = Subscription('kind == "green"', max_unconfirmed_messages=1)
    async with AsyncSession(sim.url) as producer, AsyncSession(sim.url) as consumer:
        writer = await producer.open_queue(URI, write=True)
        options = QueueOptions(subscriptions=(red,))
        reader = await consumer.open_queue(URI, read=True, options=options)
        await post_kinds(writer, ["red", "green", "green"])
        [first] = await received(reader, 1)
        assert first.subscription is red
        await nothing_more(reader)
        options = options.with_subscriptions(green)
        await reader.configure(options)
        [second] = await received(reader, 1)  # green has credit for one
        assert second.subscription is green and second.properties["kind"] == "green"
        await nothing_more(reader)
        await second.confirm()
        [third] = await received(reader, 1)
        assert third.subscription is green
        await third.confirm()
        await first.confirm()
        options = options.without_subscriptions(red)
        assert options.subscriptions == (green,)
        await reader.configure(options)
        await post_kinds(writer, ["red", "green"])
        [fourth] = await received(reader, 1)
        assert fourth.subscription is green
        await nothing_more(reader)
        assert pending(sim) == 1  # the red one: nobody subscribes to it any more
        with pytest.raises(UsageError, match="not subscribed"):
            options.without_subscriptions(red)


async def test_a_queue_without_subscriptions_gets_messages_without_a_handle(
    sim: BrokerSimulator,
) -> None:
    async with AsyncSession(sim.url) as producer, AsyncSession(sim.url) as consumer:
        writer = await producer.open_queue(URI, write=True)
        reader = await consumer.open_queue(URI, read=True)
        await post_kinds(writer, ["any"])
        [message] = await received(reader, 1)
        assert message.subscription is None


def test_subscriptions_are_bounded() -> None:
    QueueOptions(subscriptions=tuple(f"x == {i}" for i in range(MAX_SUBSCRIPTIONS)))
    with pytest.raises(UsageError, match="at most"):
        QueueOptions(subscriptions=tuple(f"x == {i}" for i in range(MAX_SUBSCRIPTIONS + 1)))
    Subscription("x" * MAX_EXPRESSION_LENGTH)
    with pytest.raises(UsageError, match="at most"):
        Subscription("x" * (MAX_EXPRESSION_LENGTH + 1))


def test_subscription_values_are_checked() -> None:
    with pytest.raises(UsageError):
        Subscription("x > 1", max_unconfirmed_messages=-1)
    with pytest.raises(UsageError):
        Subscription("x > 1", consumer_priority=2**31)
    with pytest.raises(UsageError):
        QueueOptions(subscriptions=(3,))  # type: ignore[arg-type]
    options = QueueOptions(subscriptions=("a > 1",))
    assert options.subscriptions == (Subscription("a > 1"),)
    assert "name='n'" in repr(Subscription("a > 1", consumer_priority=2, name="n"))
