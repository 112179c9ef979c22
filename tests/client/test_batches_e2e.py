"""The batch fast path over real sockets through ``pybmq sim``: ``AsyncQueue.post_many_nowait``
and the blocking ``Queue.post_many`` (handed to the I/O thread in slices)."""

from __future__ import annotations

import asyncio
import threading

import pytest
from pybmq.client.aio import AsyncSession
from pybmq.client.events import Ack
from pybmq.client.sync import Queue, Session
from pybmq.errors import UsageError
from pybmq.sim.server import ThreadedBrokerSimulator

pytestmark = pytest.mark.timeout(60)

QUEUE = "bmq://bmq.test.mem.priority/batches-e2e"


async def test_post_many_nowait_round_trips_and_is_all_or_nothing(bmq_broker_url: str) -> None:
    async with AsyncSession(bmq_broker_url) as producer, AsyncSession(bmq_broker_url) as consumer:
        writer = await producer.open_queue(QUEUE, write=True)
        reader = await consumer.open_queue(QUEUE, read=True)
        acks: list[Ack] = []
        payloads = [b"m-%d" % i for i in range(500)]
        guids = writer.post_many_nowait(payloads, properties={"n": 1}, on_ack=acks.append)
        with pytest.raises(UsageError, match="empty payload"):
            writer.post_many_nowait([b"x", b""])  # refused whole: b"x" is not sent
        got = []
        for _ in range(500):
            message = await asyncio.wait_for(reader.get(), 10)
            got.append((message.guid, message.payload, dict(message.properties)))
            message.confirm_nowait()
        assert got == [(g, p, {"n": 1}) for g, p in zip(guids, payloads, strict=True)]
        while len(acks) < 500:
            await asyncio.sleep(0.01)
        assert sorted(a.guid for a in acks) == sorted(guids) and all(a.ok for a in acks)


def test_blocking_post_many_over_several_slices(bmq_broker_url: str) -> None:
    count = 2 * Queue.POST_SLICE + 7
    acked = threading.Semaphore(0)
    with Session(bmq_broker_url) as producer, Session(bmq_broker_url) as consumer:
        writer = producer.open_queue(QUEUE, write=True)
        reader = consumer.open_queue(QUEUE, read=True)
        payloads = [b"s-%d" % i for i in range(count)]
        guids = writer.post_many(payloads, on_ack=lambda ack: acked.release())
        assert len(set(guids)) == count
        for _ in range(count):
            assert acked.acquire(timeout=10)
        got: list[bytes] = []
        while len(got) < count:  # confirming as it goes: the consumer's credit is 1000 messages
            messages = reader.get_many(count - len(got), timeout=10)
            assert messages
            reader.confirm_many(messages)
            got += [m.payload for m in messages]
        assert got == payloads


async def test_get_many_nowait_and_confirm_many_nowait_free_the_credit(
    bmq_sim: ThreadedBrokerSimulator,
) -> None:
    """2500 messages through a reader whose credit is 1000: only confirms that reach the broker
    let the rest through; a batch holding a message of another queue is refused whole."""
    url = bmq_sim.url
    async with AsyncSession(url) as producer, AsyncSession(url) as consumer:
        writer = await producer.open_queue(QUEUE + "-many", write=True)
        other_writer = await producer.open_queue(QUEUE + "-other", write=True)
        reader = await consumer.open_queue(QUEUE + "-many", read=True)
        other = await consumer.open_queue(QUEUE + "-other", read=True)
        assert (await other_writer.post(b"elsewhere")).ok
        stranger = await asyncio.wait_for(other.get(), 10)
        payloads = [b"c-%d" % i for i in range(2500)]
        writer.post_many_nowait(payloads)
        got: list[bytes] = []
        largest = 0
        while len(got) < len(payloads):
            batch = reader.get_many_nowait(len(payloads) - len(got)) or [
                await asyncio.wait_for(reader.get(), 10)
            ]
            largest = max(largest, len(batch))
            with pytest.raises(UsageError, match="is not a message of"):
                reader.confirm_many_nowait([*batch, stranger])
            reader.confirm_many_nowait(batch)
            got += [m.payload for m in batch]
        assert got == payloads and 1 < largest <= 1000
        await consumer.drain()
        for _ in range(500):
            stats = bmq_sim.call(lambda broker: broker.stats)
            if stats.confirms == len(payloads):
                break
            await asyncio.sleep(0.01)
        assert stats.confirms == len(payloads) and stats.improper_total == 0
