"""Messages up to the protocol's limit (PutHeader payload soft limit, 64 MiB) and bad input.

A payload of any size the protocol allows is posted and delivered through the simulator over a
real socket, in the asyncio and the blocking API; one over the limit is refused at ``post()``
with a UsageError naming its size and the limit, and nothing else is disturbed. The engine's
memory per large message stays about one copy of it (no repeated concatenation).
"""

from __future__ import annotations

import asyncio
import os
import time
import tracemalloc
from collections.abc import AsyncIterator, Callable

import pytest
from pybmq.client.aio import AsyncSession
from pybmq.client.events import MessageReceived
from pybmq.client.options import SessionOptions
from pybmq.client.sync import Session
from pybmq.errors import SessionStoppedError, UsageError
from pybmq.generated.wire_codec import PUT_MAX_PAYLOAD_SIZE_SOFT
from pybmq.wire.push import PushEventBuilder
from pybmq.wire.put import iter_put

from tests.client.test_client_engine import open_queue
from tests.helpers.brokers import BROKER_KINDS, broker_url
from tests.helpers.engine import started_engine

pytestmark = pytest.mark.timeout(120)

LIMIT = PUT_MAX_PAYLOAD_SIZE_SOFT  # 64 MiB
MiB = 1 << 20
QUEUE = "bmq://bmq.test.mem.priority/big"
OTHER = "bmq://bmq.test.mem.priority/other"
ZLIB = SessionOptions(compression_threshold=1024)


def pattern(size: int) -> bytes:
    """``size`` bytes that are not all alike (a corrupted or shifted byte shows) yet compress."""
    block = os.urandom(4096)
    return (block * (size // 4096 + 1))[:size]


@pytest.fixture(params=BROKER_KINDS)
async def broker(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    async with broker_url(request) as url:
        yield url


async def round_trip(
    url: str, payload: bytes, properties: dict[str, object] | None, options: SessionOptions
) -> None:
    async with AsyncSession(url, options=options) as producer, AsyncSession(url) as consumer:
        writer = await producer.open_queue(QUEUE, write=True)
        reader = await consumer.open_queue(QUEUE, read=True)
        ack = await writer.post(payload, properties=properties)
        assert ack.ok
        message = await asyncio.wait_for(reader.get(), 60)
        assert message.payload == payload
        assert dict(message.properties) == (properties or {})
        await message.confirm()


@pytest.mark.parametrize(
    ("size", "properties", "options"),
    [
        (1 * MiB, {"kind": "big", "n": 1}, ZLIB),
        (1 * MiB, None, SessionOptions()),
        (16 * MiB, {"kind": "big", "n": 16}, SessionOptions()),
        (16 * MiB, {"kind": "big", "n": 16}, ZLIB),
        (LIMIT, None, SessionOptions()),
        (LIMIT, {"kind": "big", "n": 64}, ZLIB),  # the compressed payload leaves room for them
    ],
    ids=["1MiB-props-zlib", "1MiB", "16MiB-props", "16MiB-props-zlib", "64MiB", "64MiB-props-zlib"],
)
async def test_big_payloads_round_trip_through_the_simulator(
    broker: str, size: int, properties: dict[str, object] | None, options: SessionOptions
) -> None:
    await round_trip(broker, pattern(size), properties, options)


async def test_a_message_bigger_than_the_consumers_byte_credit_is_still_delivered(
    broker: str,
) -> None:
    """The broker may overshoot a consumer's byte credit by one message (as upstream does), so
    a 16 MiB message reaches a consumer that allows 1 MiB unconfirmed, then the next one."""
    payload = pattern(16 * MiB)
    async with AsyncSession(broker) as producer, AsyncSession(broker) as consumer:
        writer = await producer.open_queue(QUEUE, write=True)
        reader = await consumer.open_queue(QUEUE, read=True, max_unconfirmed_bytes=MiB)
        assert (await writer.post(payload)).ok
        assert (await writer.post(b"small")).ok
        first = await asyncio.wait_for(reader.get(), 30)
        assert first.payload == payload
        await first.confirm()
        assert (await asyncio.wait_for(reader.get(), 10)).payload == b"small"


async def test_over_the_limit_is_refused_at_post_and_nothing_else_is_disturbed(
    broker: str,
) -> None:
    async with AsyncSession(broker, options=ZLIB) as producer, AsyncSession(broker) as consumer:
        writer = await producer.open_queue(QUEUE, write=True)
        other = await producer.open_queue(OTHER, write=True)
        reader = await consumer.open_queue(OTHER, read=True)
        acks: list[object] = []
        for i in range(10):  # posts in flight on another queue, buffered in the same turn
            other.post_nowait(b"before-%d" % i, on_ack=acks.append)
        with pytest.raises(
            UsageError, match=f"payload of {LIMIT + 1} bytes exceeds the limit of {LIMIT}"
        ):
            writer.post_nowait(bytes(LIMIT + 1))
        with pytest.raises(UsageError, match=f"payload of {LIMIT + 1} bytes exceeds the limit"):
            await writer.post(bytes(LIMIT + 1))
        # The properties push the application data over the limit (zlib cannot shrink random
        # bytes, so what would go out is as big).
        with pytest.raises(UsageError, match=r"properties \d+ \+ payload \d+\) exceeds"):
            writer.post_nowait(os.urandom(LIMIT), properties={"a": 1})
        assert (await writer.post(b"after")).ok
        assert (await other.post(b"after")).ok
        got = [(await asyncio.wait_for(reader.get(), 10)).payload for _ in range(11)]
        assert got == [b"before-%d" % i for i in range(10)] + [b"after"]
        assert len(acks) == 10 and all(a.ok for a in acks)  # type: ignore[attr-defined]
        assert producer.state.value == "STARTED" and producer.connection_losses == 0


def test_blocking_session_big_post_and_refusal(bmq_broker_url: str) -> None:
    payload = pattern(16 * MiB)
    with Session(bmq_broker_url) as producer, Session(bmq_broker_url) as consumer:
        writer = producer.open_queue(QUEUE, write=True)
        reader = consumer.open_queue(QUEUE, read=True)
        with pytest.raises(UsageError, match="exceeds the limit of 67108864 bytes"):
            writer.post(b"x" * 100_000_000)
        assert writer.post(payload, properties={"n": 16}).ok
        message = reader.get(timeout=30)
        assert message.payload == payload and dict(message.properties) == {"n": 16}
        reader.confirm(message)
        assert writer.post(b"still going").ok


# ------------------------------------------------------------------ memory per large message


def traced(run: Callable[[], object]) -> tuple[int, int]:
    """(still allocated, peak) by ``run()``, not counting what was allocated before."""
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()


def test_posting_a_large_message_costs_one_copy_of_it() -> None:
    engine, _ = started_engine()
    writer = open_queue(engine, write=True)
    payload = pattern(LIMIT - 64)  # room for the properties
    out: list[bytes] = []

    def post() -> None:
        engine.post(writer, payload, 0.0, properties={"a": 1})
        out.append(engine.data_to_send())

    _, peak = traced(post)
    [put] = iter_put(out[0], verify_crc=True)
    assert put.payload == payload
    assert peak < 1.1 * LIMIT, f"peak {peak / LIMIT:.2f}x the payload"  # the PUT event


def test_receiving_a_large_message_in_chunks_costs_two_copies_at_most() -> None:
    engine, _ = started_engine()
    reader = open_queue(engine, read=True)
    qid = engine.queues[reader].qid
    payload = pattern(LIMIT)
    builder = PushEventBuilder()
    builder.add(qid, b"\x40" + b"\1" * 15, payload, properties=None)
    [event] = builder.finish()
    del builder
    view = memoryview(event)
    messages: list[object] = []

    def receive() -> None:
        for start in range(0, len(view), 64 * 1024):  # as a socket hands it over
            engine.receive_data(view[start : start + 64 * 1024], 0.0)
        messages.extend(e for e in engine.next_events() if isinstance(e, MessageReceived))

    started = time.perf_counter()
    kept, peak = traced(receive)
    elapsed = time.perf_counter() - started
    [received] = messages
    assert received.message.payload == payload  # type: ignore[attr-defined]
    # Kept: the delivered payload. Peak: the event copied out of the framing buffer, then the
    # payload sliced out of the event (each buffer is freed as the next copy is made).
    assert kept < 1.05 * LIMIT, f"kept {kept / LIMIT:.2f}x the payload"
    assert peak < 2.2 * LIMIT, f"peak {peak / LIMIT:.2f}x the payload"
    assert elapsed < 20  # 1024 chunks: a quadratic buffer would copy ~32 GiB


# ------------------------------------------------------------------ bad input


async def test_bad_input_is_a_typed_error_at_the_call_and_nothing_is_lost(broker: str) -> None:
    async with AsyncSession(broker) as producer, AsyncSession(broker) as consumer:
        writer = await producer.open_queue(QUEUE, write=True)
        closing = await producer.open_queue(OTHER, write=True)
        reader = await consumer.open_queue(QUEUE, read=True)
        acks: list[object] = []
        writer.post_nowait(b"first", on_ack=acks.append)
        with pytest.raises(UsageError, match="empty payload"):
            writer.post_nowait(b"")
        for wrong in ("text", 42, None, [b"x"]):
            with pytest.raises(
                UsageError, match=f"payload must be bytes, not {type(wrong).__name__}"
            ):
                writer.post_nowait(wrong)  # type: ignore[arg-type]
        with pytest.raises(UsageError, match="no property type"):
            writer.post_nowait(b"x", properties={"bad": 1.5})
        close = asyncio.ensure_future(closing.close())
        await asyncio.sleep(0)  # the close has started: the queue is CLOSING
        with pytest.raises(UsageError, match=r"not open \(CLOSING\)"):
            closing.post_nowait(b"to a closing queue")
        await close
        writer.post_nowait(bytearray(b"second"), on_ack=acks.append)
        got = [(await asyncio.wait_for(reader.get(), 10)).payload for _ in range(2)]
        assert got == [b"first", b"second"]
        while len(acks) < 2:
            await asyncio.sleep(0.01)
        assert all(a.ok for a in acks)  # type: ignore[attr-defined]
        assert producer.connection_losses == 0
    with pytest.raises(SessionStoppedError, match="cannot post: session is STOPPED"):
        writer.post_nowait(b"after stop")


def test_bad_input_in_the_blocking_api(bmq_broker_url: str) -> None:
    with Session(bmq_broker_url) as session:
        writer = session.open_queue(QUEUE, write=True)
        with pytest.raises(UsageError, match="empty payload"):
            writer.post(b"")
        with pytest.raises(UsageError, match="payload must be bytes, not str"):
            writer.post("text")  # type: ignore[arg-type]
        with pytest.raises(UsageError, match="exceeds the limit"):
            writer.post_async(bytes(LIMIT + 1))
        assert writer.post(b"fine").ok
    with pytest.raises(SessionStoppedError):
        writer.post(b"after stop")
