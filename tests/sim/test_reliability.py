"""Hostile clients against the simulator over real loopback sockets: each test reproduces one
attack (bounded in time and count) and proves the simulator stays up for everyone else."""

from __future__ import annotations

import asyncio
import logging
import os

import pytest
from pybmq.client.aio import AsyncSession
from pybmq.errors import MessageDecodeError, UsageError
from pybmq.generated.wire_codec import EventType
from pybmq.sim.config import BrokerConfig
from pybmq.sim.limits import LOG_EVERY, LOG_FIRST, MAX_RECORDS
from pybmq.sim.queues import SimQueue, StoredMessage
from pybmq.sim.routing import RoutingMode
from pybmq.sim.server import BrokerSimulator
from pybmq.wire.batches import ConfirmEventBuilder
from pybmq.wire.framing import event_header_bytes
from pybmq.wire.properties import MessageProperties

from tests.helpers.hostile import store_raw

pytestmark = pytest.mark.timeout(60)

QUEUE = "bmq://bmq.test.mem.priority/hostile-sim"


async def test_a_poison_message_for_an_old_properties_consumer_costs_nobody_the_session() -> None:
    area = MessageProperties({"kind": "poison"}).encode(extended=True)
    async with (
        BrokerSimulator() as sim,
        AsyncSession(sim.url) as producer,
        AsyncSession(sim.url) as consumer,
    ):
        writer = await producer.open_queue(QUEUE, write=True)
        reader = await consumer.open_queue(QUEUE, read=True)
        # The consumer reads old-style properties only: the simulator must convert each
        # message, and this one cannot be converted (its "zlib" payload is junk).
        for session in sim._transports:
            session.extended_properties = False
        store_raw(sim, QUEUE, b"junk claiming to be zlib", properties_area=area)
        bad = await asyncio.wait_for(reader.get(), 10)
        assert isinstance(bad.error, MessageDecodeError)
        await bad.confirm()
        # Both connections, the timers and the data path are still up.
        assert (await asyncio.wait_for(writer.post(b"next"), 10)).ok
        good = await asyncio.wait_for(reader.get(), 10)
        assert good.payload == b"next" and good.error is None
        assert sim.broker.stats.internal_errors == 0
        assert len(sim._transports) == 2


async def _closed_by_sim(reader: asyncio.StreamReader, timeout: float) -> bytes:
    """Read until the simulator closes the connection (bounded by ``timeout``)."""
    received = b""
    while chunk := await asyncio.wait_for(reader.read(65536), timeout):
        received += chunk
    return received


async def test_a_huge_control_event_before_negotiation_is_refused_on_its_header() -> None:
    config = BrokerConfig()
    async with BrokerSimulator(config) as sim:
        reader, writer = await asyncio.open_connection(sim.host, sim.port)
        # 30 MiB of JSON declared: refused on the 8-byte header, nothing of it is buffered.
        writer.write(event_header_bytes(EventType.CONTROL, 30 << 20) + b"{" * 65536)
        await _closed_by_sim(reader, 10)
        assert any("exceeds the limit" in v for v in sim.broker.stats.violations)
        writer.close()
        async with AsyncSession(sim.url) as client:  # the simulator serves the next client
            await client.open_queue(QUEUE, write=True)


async def test_a_client_that_never_negotiates_is_closed_at_the_deadline() -> None:
    config = BrokerConfig(negotiation_timeout_ms=500)
    async with BrokerSimulator(config) as sim:
        reader, writer = await asyncio.open_connection(sim.host, sim.port)
        for _ in range(3):  # a byte now and then is activity, but not negotiation
            writer.write(b"\0")
            await asyncio.sleep(0.1)
        await _closed_by_sim(reader, 15)
        assert any("negotiation not finished" in v for v in sim.broker.stats.violations)
        writer.close()


async def test_a_slow_drip_of_one_event_is_closed_at_the_deadline() -> None:
    config = BrokerConfig(partial_event_timeout_ms=500, negotiation_timeout_ms=500)
    async with BrokerSimulator(config) as sim, AsyncSession(sim.url) as client:
        await client.open_queue(QUEUE, write=True)
        transport = client.transport
        assert transport is not None
        # A PUT event declared at 1 MiB of which only a byte now and then arrives (as from a
        # stalled or malicious producer): each byte is activity, but the event makes no progress.
        transport.write(event_header_bytes(EventType.PUT, 1 << 20) + bytes(8))
        for _ in range(300):
            if client.stop_reason is not None or transport.is_closing():
                break
            transport.write(b"\0")
            await asyncio.sleep(0.05)
        assert any("incomplete" in v for v in sim.broker.stats.violations)
        assert not sim._transports  # the simulator let go of it (and of its buffer)


async def test_posts_over_the_queue_quota_are_nacked_with_the_brokers_status() -> None:
    config = BrokerConfig(queue_limit_messages=5, queue_limit_bytes=2000)
    async with (
        BrokerSimulator(config) as sim,
        AsyncSession(sim.url) as producer,
        AsyncSession(sim.url) as consumer,
    ):
        writer = await producer.open_queue(QUEUE, write=True)
        statuses = [(await writer.post(b"x" * 10)).status.name for _ in range(7)]
        # As a broker: the message that crosses the limit is taken, the next is refused.
        assert statuses == ["SUCCESS"] * 6 + ["LIMIT_MESSAGES"]
        # Confirming frees room: the quota counts messages held, not messages ever posted.
        reader = await consumer.open_queue(QUEUE, read=True)
        for _ in range(6):
            await (await asyncio.wait_for(reader.get(), 10)).confirm()
        for _ in range(200):
            queue = sim.broker.queue(QUEUE)
            if queue is not None and queue.held_messages == 0:
                break
            await asyncio.sleep(0.05)
        assert (await writer.post(b"y" * 1500)).ok
        assert (await writer.post(b"z" * 600)).ok  # crosses the 2000 bytes: still taken
        assert (await writer.post(b"z")).status.name == "LIMIT_BYTES"


async def test_bogus_confirms_cost_bounded_records_and_logs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bogus = 20_000
    async with BrokerSimulator() as sim, AsyncSession(sim.url) as client:
        await client.open_queue(QUEUE, read=True)
        builder = ConfirmEventBuilder()
        builder.add_many((reader_qid(sim), os.urandom(16), 0) for _ in range(bogus))
        transport = client.transport
        assert transport is not None
        with caplog.at_level(logging.WARNING, logger="pybmq.sim"):
            for event in builder.finish():
                transport.write(event)
            for _ in range(400):
                if sim.broker.stats.improper_total >= bogus:
                    break
                await asyncio.sleep(0.05)
        assert sim.broker.stats.improper_total == bogus
        assert len(sim.broker.stats.improper) <= MAX_RECORDS
        logged = [r for r in caplog.records if "#CLIENT_IMPROPER_BEHAVIOR" in r.getMessage()]
        assert len(logged) <= LOG_FIRST + bogus // LOG_EVERY
        assert len(sim._transports) == 1  # tolerated, as a broker does: still connected


def reader_qid(sim: BrokerSimulator) -> int:
    """The wire queue id of the only reader handle in ``sim``."""
    (session,) = sim._transports
    ((qid, _sub),) = session.handles
    return qid


def test_the_deduplication_window_is_bounded_in_guids() -> None:
    queue = SimQueue.create(QUEUE, RoutingMode.PRIORITY)
    first = StoredMessage(os.urandom(16), b"", b"a", False, 0, 0)
    queue.post(first, 0.0, 300.0, 100)
    for _ in range(1000):
        queue.post(StoredMessage(os.urandom(16), b"", b"b", False, 0, 0), 0.0, 300.0, 100)
    assert len(queue._seen) == 100
    # The oldest GUID was forgotten: posting it again stores it again (not a duplicate).
    queue.post(first, 0.0, 300.0, 100)
    assert queue.duplicates == 0 and queue.posted == 1002


async def test_a_consumer_that_never_reads_is_not_pushed_to_beyond_the_high_water_mark() -> None:
    count, size, high_water = 30_000, 1024, 256 * 1024  # 30 MiB for a consumer that never reads
    other = "bmq://bmq.test.mem.priority/hostile-sim-other"
    config = BrokerConfig(write_high_water_bytes=high_water)
    async with (
        BrokerSimulator(config) as sim,
        AsyncSession(sim.url) as producer,
        AsyncSession(sim.url) as stalled,
        AsyncSession(sim.url) as normal,
    ):
        await stalled.open_queue(
            QUEUE, read=True, max_unconfirmed_messages=10**6, max_unconfirmed_bytes=1 << 30
        )
        assert stalled.transport is not None
        stalled.transport.pause_reading()  # it never reads again
        writer = await producer.open_queue(QUEUE, write=True)
        for _ in range(count // 1000):
            for _ in range(1000):
                writer.post_nowait(bytes(size))
            assert (await asyncio.wait_for(writer.post(b"sync"), 20)).ok
        (session,) = [s for s in sim._transports if s.handles and s.paused]
        buffered = sim._transports[session].get_write_buffer_size()
        # Bounded by the high-water mark plus what one PUT event of the producer released
        # (1 MiB); the rest stays in the queue, not in the simulator's socket buffer.
        assert buffered <= high_water + (1 << 20) + 65536, buffered
        queue = sim.broker.queue(QUEUE)
        assert queue is not None and queue.pending_count() > count // 2
        # A normal pair on another queue keeps moving meanwhile.
        reader = await normal.open_queue(other, read=True)
        other_writer = await producer.open_queue(other, write=True)
        for i in range(100):
            assert (await other_writer.post(b"%d" % i)).ok
            message = await asyncio.wait_for(reader.get(), 10)
            await message.confirm()
        # The stalled consumer reads again: the rest is pushed as its buffer drains.
        stalled.transport.resume_reading()
        for _ in range(600):
            if queue.pending_count() == 0:
                break
            await asyncio.sleep(0.05)
        assert queue.pending_count() == 0
        assert sim.broker.stats.violations == []


async def test_many_queues_are_opened_in_linear_time_and_freed_when_closed() -> None:
    count = 2000
    async with BrokerSimulator() as sim, AsyncSession(sim.url) as client:
        uris = [f"bmq://bmq.test.mem.priority/many-{i}" for i in range(count)]
        queues = []
        for start in range(0, count, 200):  # 200 opens in flight at a time
            queues += await asyncio.gather(
                *(client.open_queue(uri, read=True) for uri in uris[start : start + 200])
            )
        (session,) = sim._transports
        assert len(session.handles) == count and len(sim.broker.store.queues) == count
        assert len(client.engine.credit._handles) == count
        for start in range(0, count, 200):
            await asyncio.gather(*(q.close() for q in queues[start : start + 200]))
        # Closed and unused: nothing is left of them on either side.
        assert not session.handles and not session.by_qid
        assert not sim.broker.store.queues
        engine = client.engine
        assert not engine.queues and not engine.table.routes and not engine.table.by_uri
        assert not engine.table.qids and not engine.credit._handles
        assert engine.credit.total_messages == 0 and engine.credit.total_bytes == 0
        # A queue holding messages is kept after its last close (they wait for a consumer).
        writer = await client.open_queue(uris[0], write=True)
        assert (await writer.post(b"kept")).ok
        await writer.close()
        assert uris[0] in sim.broker.store.queues
        reader = await client.open_queue(uris[0], read=True)
        assert (await asyncio.wait_for(reader.get(), 10)).payload == b"kept"


async def test_refused_posts_are_logged_rate_limited_and_summed_up_once_per_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    refused = 3000
    config = BrokerConfig(queue_limit_messages=1)
    with caplog.at_level(logging.INFO, logger="pybmq.sim"):
        async with BrokerSimulator(config) as sim:
            async with AsyncSession(sim.url) as client:
                writer = await client.open_queue(QUEUE, write=True)
                for i in range(refused):
                    writer.post_nowait(b"%d" % i)
                assert (await writer.post(b"last")).status.name == "LIMIT_MESSAGES"
            for _ in range(100):
                if not sim._transports:
                    break
                await asyncio.sleep(0.05)
    nacks = [r for r in caplog.records if "NACK GUID" in r.getMessage()]
    assert len(nacks) <= LOG_FIRST + refused // LOG_EVERY + 1
    closing = [r for r in caplog.records if "closing" in r.getMessage()]
    assert len(closing) == 1
    # The first two posts are taken (the second crosses the limit of 1), as by a broker.
    assert f"{refused - 1} NACKs" in closing[0].getMessage()


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("deduplication_max_guids", 0),
        ("queue_limit_messages", 0),
        ("write_high_water_bytes", -1),
        ("heartbeat_interval_ms", 0),
        ("deduplication_time_ms", -1),
        ("negotiation_timeout_ms", 1.5),
    ],
)
def test_a_setting_the_simulator_cannot_run_with_is_refused_up_front(
    setting: str, value: object
) -> None:
    with pytest.raises(UsageError, match=f"BrokerConfig.{setting} must be"):
        BrokerConfig(**{setting: value})


def test_the_smallest_valid_dedup_window_still_routes_and_deduplicates() -> None:
    # One GUID remembered: a retransmission of the last post is still recognised.
    queue = SimQueue.create("bmq://bmq.test.mem.priority/dedup-one", RoutingMode.PRIORITY)
    first, second = (StoredMessage(bytes([i]) * 16, b"", b"x", False, 0, 1) for i in (1, 2))
    queue.store(first, 0.0, 300.0, 1)
    queue.store(second, 0.0, 300.0, 1)
    queue.store(second, 0.0, 300.0, 1)
    assert (queue.posted, queue.duplicates) == (2, 1)
