"""Hostile peers against the client, over real loopback sockets (issue: hostile peers and poison
messages). Each test reproduces one attack, bounded in time and count, and proves the fix."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
import time
import tracemalloc
from collections.abc import AsyncIterator

import pytest
from pybmq.client.aio import AsyncSession, ResilienceEvent
from pybmq.client.aio_queue import AsyncQueue, ReceivedMessage
from pybmq.client.credit import CreditLedger
from pybmq.client.events import Ack, CallbackFailed
from pybmq.client.fsm import SessionState
from pybmq.client.options import QueueOptions, SessionOptions
from pybmq.client.sync import ON_MESSAGE_WINDOW, Session
from pybmq.errors import MessageDecodeError, ProtocolError, UsageError
from pybmq.generated.wire_codec import EventType
from pybmq.sim.server import BrokerSimulator, ThreadedBrokerSimulator
from pybmq.wire.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from pybmq.wire.framing import event_header_bytes
from pybmq.wire.properties import MessageProperties

from tests.helpers.engine import started_engine
from tests.helpers.hostile import (
    flood,
    push_event_for,
    store_raw,
    unconfirmed,
    write_to_clients,
    zlib_bomb,
)

pytestmark = pytest.mark.timeout(60)

QUEUE = "bmq://bmq.test.mem.priority/hostile"


async def _next(queue: AsyncQueue, timeout: float = 10.0) -> ReceivedMessage:
    return await asyncio.wait_for(queue.get(), timeout)


@pytest.mark.parametrize(
    "poison",
    [b"not zlib at all", zlib_bomb(2 << 20)],
    ids=["junk-claiming-zlib", "bomb-over-the-cap"],
)
async def test_poison_message_is_delivered_with_an_error_and_the_session_goes_on(
    poison: bytes,
) -> None:
    options = SessionOptions(max_decompressed_size=1 << 20)
    async with (
        BrokerSimulator() as sim,
        AsyncSession(sim.url) as producer,
        AsyncSession(sim.url, options=options) as consumer,
    ):
        writer = await producer.open_queue(QUEUE, write=True)
        reader = await consumer.open_queue(QUEUE, read=True)
        guid = store_raw(sim, QUEUE, poison)
        bad = await _next(reader)
        assert bad.guid == guid
        assert isinstance(bad.error, MessageDecodeError)
        assert bad.payload == b""
        await bad.confirm()
        # The session is still up: the next (good) message arrives, and the poison one was
        # confirmed (nothing is left unconfirmed in the simulator).
        assert (await writer.post(b"after the poison")).ok
        good = await _next(reader)
        assert good.payload == b"after the poison"
        assert good.error is None
        await good.confirm()
        await producer.drain()
        for _ in range(200):
            if not unconfirmed(sim, QUEUE):
                break
            await asyncio.sleep(0.05)
        assert unconfirmed(sim, QUEUE) == 0


async def test_a_compressed_message_under_the_cap_still_inflates() -> None:
    async with BrokerSimulator() as sim, AsyncSession(sim.url) as consumer:
        reader = await consumer.open_queue(QUEUE, read=True)
        store_raw(sim, QUEUE, zlib_bomb(1000))
        message = await _next(reader)
        assert message.error is None
        assert message.payload == bytes(1000)


def test_max_decompressed_size_is_bounded_by_the_protocol_limit() -> None:
    assert SessionOptions().max_decompressed_size == DEFAULT_MAX_DECOMPRESSED_SIZE
    with pytest.raises(UsageError):
        SessionOptions(max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE + 1)
    with pytest.raises(UsageError):
        SessionOptions(max_decompressed_size=0)


async def test_an_on_ack_callback_that_raises_does_not_lose_the_other_outcomes() -> None:
    count = 200
    reported: list[ResilienceEvent] = []
    async with (
        BrokerSimulator() as sim,
        AsyncSession(sim.url, on_event=reported.append) as producer,
    ):
        writer = await producer.open_queue(QUEUE, write=True)
        outcomes: list[Ack] = []
        all_done = asyncio.Event()

        def on_ack(ack: Ack) -> None:
            outcomes.append(ack)
            if len(outcomes) == count:
                all_done.set()
            if len(outcomes) % 2:
                raise RuntimeError("the application's callback is broken")

        for i in range(count):
            writer.post_nowait(b"%d" % i, on_ack=on_ack)
        awaited = [asyncio.ensure_future(writer.post(b"awaited")) for _ in range(10)]
        await asyncio.wait_for(all_done.wait(), 30)
        acks = await asyncio.wait_for(asyncio.gather(*awaited), 30)
        assert len(outcomes) == count and all(a.ok for a in outcomes)
        assert len({a.guid for a in outcomes}) == count  # exactly one outcome per post
        assert all(a.ok for a in acks)
        assert producer.callback_errors == count // 2
        failures = [e for e in reported if isinstance(e, CallbackFailed)]
        assert len(failures) == count // 2
        assert isinstance(failures[0].error, RuntimeError)
        assert (await writer.post(b"still connected")).ok


async def _stopped(session: AsyncSession, timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while session.stop_reason is None:
        assert asyncio.get_running_loop().time() < deadline, "the session did not stop"
        await asyncio.sleep(0.02)


@pytest.mark.parametrize(
    ("event_type", "declared"),
    [(EventType.PUSH, 500_000_000), (EventType.CONTROL, 30 << 20), (EventType.ACK, 100 << 20)],
    ids=["push-500MB", "control-30MiB", "ack-100MiB"],
)
async def test_an_oversized_event_is_refused_on_its_header(event_type: int, declared: int) -> None:
    async with BrokerSimulator() as sim:
        session = AsyncSession(sim.url)
        await session.start()
        await session.open_queue(QUEUE, read=True)
        write_to_clients(sim, event_header_bytes(event_type, declared) + bytes(4096))
        await _stopped(session)
        assert session.stop_reason is not None and "exceeds the limit" in session.stop_reason
        assert session.engine.incoming_buffered == 0
        await asyncio.wait_for(session.stop(), 20)


async def test_a_stopped_session_frees_its_partial_event_and_stop_completes() -> None:
    async with BrokerSimulator() as sim:
        session = AsyncSession(sim.url, options=SessionOptions(stop_timeout=2.0))
        await session.start()
        await session.open_queue(QUEUE, read=True)
        # A PUSH within the credit (32 MiB default) whose body never comes: 8 MiB of it sent.
        write_to_clients(sim, event_header_bytes(EventType.PUSH, 20 << 20) + bytes(8 << 20))
        for _ in range(400):
            if session.engine.incoming_buffered >= 8 << 20:
                break
            await asyncio.sleep(0.02)
        assert session.engine.incoming_buffered >= 8 << 20
        await asyncio.wait_for(session.stop(), 30)
        assert session.engine.incoming_buffered == 0


def test_a_session_never_started_holds_no_thread() -> None:
    before = threading.active_count()
    sessions = [Session("tcp://127.0.0.1:1") for _ in range(20)]
    assert threading.active_count() == before
    for session in sessions:
        session.stop()  # idempotent, and harmless before start()
    assert threading.active_count() == before


async def test_a_push_full_of_zlib_bombs_is_inflated_lazily_one_message_at_a_time() -> None:
    bombs, size = 8, DEFAULT_MAX_DECOMPRESSED_SIZE  # 8 x 64 MiB in about 510 KiB of zlib
    bomb = zlib_bomb(size)
    async with BrokerSimulator() as sim, AsyncSession(sim.url) as consumer:
        reader = await consumer.open_queue(QUEUE, read=True)
        gc.collect()
        tracemalloc.start()
        try:
            guids = [store_raw(sim, QUEUE, bomb) for _ in range(bombs)]
            received = [await _next(reader) for _ in range(bombs)]
            _, receiving_peak = tracemalloc.get_traced_memory()
            assert [m.guid for m in received] == guids
            assert not any(m.message.inflated for m in received)  # type: ignore[union-attr]
            # Reading each one inflates it, within the limit; dropping it frees it.
            tracemalloc.reset_peak()
            while received:
                message = received.pop(0)
                assert message.error is None and len(message.payload) == size
                await message.confirm()
                del message
            _, reading_peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert receiving_peak < 16 << 20, f"receiving held {receiving_peak >> 20} MiB"
    # At most a couple of inflated payloads at once (each is 64 MiB), never all eight.
    assert reading_peak < 3 * size, f"reading held {reading_peak >> 20} MiB"


async def test_properties_that_do_not_parse_are_the_message_error_and_the_session_goes_on() -> None:
    good_area = MessageProperties({"kind": "order", "n": 7}).encode(extended=True)
    bad_area = bytearray(good_area)
    bad_area[6] |= 0x7C  # the first property's type: 31, no such type
    async with _sim_with_pair() as (sim, producer, consumer):
        writer = await producer.open_queue(QUEUE, write=True)
        reader = await consumer.open_queue(QUEUE, read=True)
        guid = store_raw(sim, QUEUE, b"body", zlib_flag=False, properties_area=bytes(bad_area))
        bad = await _next(reader)
        assert bad.guid == guid
        # Delivered as it came (nothing was parsed on the way in), the payload intact.
        assert bad.payload == b"body"
        assert dict(bad.properties) == {}
        assert isinstance(bad.error, MessageDecodeError)
        assert "invalid property type 31" in str(bad.error)
        assert guid.hex() in str(bad.error)
        await bad.confirm()
        # The session is still up and the next message's properties parse.
        assert (await writer.post(b"next", properties={"kind": "order", "n": 7})).ok
        good = await _next(reader)
        assert good.error is None
        assert dict(good.properties) == {"kind": "order", "n": 7}
        await good.confirm()


async def test_a_broker_pushing_beyond_the_credit_is_a_protocol_error() -> None:
    credit, per_event, events = 10, 1000, 1000  # 1M messages of 280 B against a credit of 10
    async with BrokerSimulator() as sim:
        session = AsyncSession(sim.url)
        await session.start()
        reader = await session.open_queue(QUEUE, read=True, max_unconfirmed_messages=credit)
        written = await asyncio.wait_for(flood(sim, push_event_for(sim, per_event), events), 30)
        await _stopped(session)
        assert session.stop_reason is not None
        assert "beyond the credit" in session.stop_reason
        assert "maxUnconfirmedMessages 10" in session.stop_reason
        # It stopped at the first message over the credit: the rest was never taken in.
        assert written < 50
        assert len(reader._messages) <= credit
        assert session.engine.incoming_buffered == 0
        await asyncio.wait_for(session.stop(), 20)


@contextlib.asynccontextmanager
async def _sim_with_pair() -> AsyncIterator[tuple[BrokerSimulator, AsyncSession, AsyncSession]]:
    """A simulator with two sessions on it (a producer and a consumer)."""
    async with (
        BrokerSimulator() as sim,
        AsyncSession(sim.url) as producer,
        AsyncSession(sim.url) as consumer,
    ):
        yield sim, producer, consumer


async def _posted(
    producer: AsyncSession, consumer: AsyncSession, count: int, credit: int
) -> tuple[AsyncQueue, AsyncQueue]:
    """A writer and a reader (with ``credit``) of QUEUE, once ``count`` messages are posted."""
    writer = await producer.open_queue(QUEUE, write=True)
    reader = await consumer.open_queue(QUEUE, read=True, max_unconfirmed_messages=credit)
    for i in range(count):
        assert (await writer.post(b"%d" % i)).ok
    return writer, reader


async def test_lowering_the_credit_tolerates_what_was_pushed_under_the_old_one() -> None:
    async with _sim_with_pair() as (_sim, producer, consumer):
        writer, reader = await _posted(producer, consumer, 20, credit=20)
        held = [await _next(reader) for _ in range(20)]
        # 20 unconfirmed, then the credit goes down to 5: nothing is wrong until the app
        # confirms its way below it, and the broker then sends within the new credit.
        await reader.configure(max_unconfirmed_messages=5)
        for i in range(20, 30):
            assert (await writer.post(b"%d" % i)).ok
        for message in held:
            await message.confirm()
        later = []
        for _ in range(10):
            later.append(await _next(reader))
            await later[-1].confirm()
        assert [m.payload for m in later] == [b"%d" % i for i in range(20, 30)]
        assert consumer.stop_reason is None


async def test_reading_pauses_while_the_application_is_behind() -> None:
    queue_uri = "bmq://bmq.test.mem.broadcast/hostile"  # a broker does not track its credit
    credit, count = 10, 5000
    async with _sim_with_pair() as (_sim, producer, consumer):
        reader = await consumer.open_queue(queue_uri, read=True, max_unconfirmed_messages=credit)
        writer = await producer.open_queue(queue_uri, write=True)
        for start in range(0, count, 1000):
            for i in range(start, start + 1000):
                writer.post_nowait(b"%05d" % i + bytes(200))
            assert (await writer.post(b"sync")).ok
        await asyncio.sleep(0.5)
        # The application took nothing: reading stopped at the bound (the credit), plus what
        # one read of the socket held (asyncio reads at most 256 KiB: ~1000 of these messages).
        assert consumer.reading_paused
        assert credit < consumer.undelivered <= credit + 1100
        taken = 0
        while (message := reader.get_nowait()) is not None or taken < 100:
            if message is None:
                message = await _next(reader)
            taken += 1
        assert not consumer.reading_paused or consumer.undelivered > credit // 2
        assert consumer.stop_reason is None and taken >= 100


async def test_closing_a_queue_with_messages_not_taken_does_not_hold_reading_back() -> None:
    async with _sim_with_pair() as (_sim, producer, consumer):
        _, reader = await _posted(producer, consumer, 10, credit=10)
        for _ in range(200):
            if consumer.undelivered == 10:
                break
            await asyncio.sleep(0.02)
        assert consumer.undelivered == 10
        # Its credit goes to zero while 10 messages wait: that must not stop the reading that
        # the close itself (and what follows) needs.
        await asyncio.wait_for(reader.close(), 10)
        assert consumer.undelivered == 0 and not consumer.reading_paused
        other = await asyncio.wait_for(consumer.open_queue(QUEUE, write=True), 10)
        assert (await asyncio.wait_for(other.post(b"still reading"), 10)).ok


def test_a_blocked_on_message_handler_is_handed_at_most_a_window_of_messages() -> None:
    count = ON_MESSAGE_WINDOW + 2001  # with the "sync" post: 3002, all within the credit
    gate = threading.Event()
    handled: list[ReceivedMessage] = []

    def handler(message: ReceivedMessage) -> None:
        gate.wait(30)
        handled.append(message)

    with (
        ThreadedBrokerSimulator() as sim,
        Session(sim.url) as producer,
        Session(sim.url) as consumer,
    ):
        consumer.open_queue(
            QUEUE, read=True, on_message=handler, max_unconfirmed_messages=count + 1
        )
        writer = producer.open_queue(QUEUE, write=True)
        writer.post_many([b"x"] * count)
        assert writer.post(b"sync").ok
        inner = consumer.async_session
        assert inner is not None
        deadline = time.monotonic() + 20
        out = ON_MESSAGE_WINDOW + 1  # handed to the dispatcher, and one the pump holds
        # Messages arrive while the pump hands the first ones over: wait for the count to
        # settle where the window stops the pump (it may pass through higher values first).
        while inner.undelivered != count + 1 - out and time.monotonic() < deadline:
            time.sleep(0.02)
        # The handler is stuck on its first message: the dispatcher holds at most the window,
        # the rest waits in the queue (where it counts towards the read pause).
        assert inner.undelivered == count + 1 - out
        assert not handled
        gate.set()
        deadline = time.monotonic() + 30
        while len(handled) < count + 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(handled) == count + 1


def test_the_credit_looked_up_once_per_event_still_refuses_the_first_message_over_it() -> None:
    ledger = CreditLedger()
    ledger.configuring(0, {1: (2, 1000)})
    ledger.configured(0, ok=True)
    count = ledger.pusher(0, 1)  # what the engine does once per PUSH event and stream
    assert count is not None
    guids = [bytes([i]) * 16 for i in range(4)]
    count(guids[0], 10, QUEUE)
    count(guids[0], 10, QUEUE)  # the same message again is not counted twice
    count(guids[1], 10, QUEUE)
    with pytest.raises(ProtocolError, match="maxUnconfirmedMessages 2"):
        count(guids[2], 10, QUEUE)
    assert ledger.unconfirmed(0) == 2
    ledger.confirmed_many(0, [guids[0], guids[1], guids[3]])  # an unknown GUID is ignored
    assert ledger.unconfirmed(0) == 0
    count(guids[2], 10, QUEUE)  # the credit is free again, through the same lookup
    assert ledger.unconfirmed(0) == 1
    # Not counted: a stream we did not configure, and a broadcast queue.
    assert ledger.pusher(0, 7) is None
    ledger.untracked(0)
    assert ledger.pusher(0, 1) is None


def test_the_credit_allows_one_message_over_the_bytes_never_over_the_messages() -> None:
    ledger = CreditLedger()
    ledger.configuring(0, {1: (3, 100)})  # stream id → (messages, bytes)
    assert ledger.total_messages == 3  # counted from the request on (the larger limits)
    ledger.configured(0, ok=True)
    guids = [bytes([i]) * 16 for i in range(8)]
    ledger.pushed(0, 1, QUEUE, guids[0], 90)
    ledger.pushed(0, 1, QUEUE, guids[1], 90)  # under 100 bytes before it: the broker may send it
    with pytest.raises(ProtocolError, match="beyond the credit"):
        ledger.pushed(0, 1, QUEUE, guids[2], 1)
    ledger.confirmed(0, guids[0])
    ledger.confirmed(0, guids[1])
    for guid in guids[2:5]:
        ledger.pushed(0, 1, QUEUE, guid, 1)
    with pytest.raises(ProtocolError, match="maxUnconfirmedMessages 3"):
        ledger.pushed(0, 1, QUEUE, guids[5], 1)
    # Reconfigured to 1 message under a new subscription id: the old one keeps its 3 until the
    # response, the new one has its own credit; then the old one is retired once emptied.
    ledger.configuring(0, {2: (1, QueueOptions().max_unconfirmed_bytes)})
    ledger.pushed(0, 2, QUEUE, guids[5], 1)
    ledger.configured(0, ok=True)
    assert ledger.total_messages == 1
    for guid in guids[2:5]:
        ledger.confirmed(0, guid)
    assert ledger.unconfirmed(0) == 1
    ledger.forget(0)
    assert (ledger.total_messages, ledger.total_bytes, ledger.unconfirmed(0)) == (0, 0, 0)


def test_while_reading_is_paused_the_brokers_silence_is_not_a_missed_heartbeat() -> None:
    # Reconnect is on by default (issue 28); the end of the session shows the missed heartbeats.
    engine, _ = started_engine(options=SessionOptions(reconnect=False))
    limit = engine.heartbeat_interval * engine.max_missed_heartbeats
    engine.pause_reading(True, 1.0)
    engine.handle_timeout(1.0 + 3 * limit)
    assert engine.state is SessionState.STARTED  # we were the ones not reading
    engine.pause_reading(False, 1.0 + 3 * limit)
    engine.handle_timeout(2.0 + 3 * limit)
    assert engine.state is SessionState.STARTED
    engine.handle_timeout(2.0 + 4 * limit)  # reading again: silence counts again
    assert engine.state is SessionState.STOPPED
