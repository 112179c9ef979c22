"""Issue 28's features through the real broker (skipped without ``$BMQ_BROKER_BIN``): one trace
from a producer to a consumer session, linger waiting for the ACKs, per-post compression and
``total_size``, and the default reconnect bringing a session back after the broker restarts."""

from __future__ import annotations

import asyncio

import pytest
from pybmq.client.aio import AsyncSession
from pybmq.client.events import CompressedMessage, Reconnected
from pybmq.client.options import SessionOptions
from pybmq.testing.real_broker import RealBroker

pytestmark = pytest.mark.timeout(120)

QUEUE = "bmq://bmq.test.mem.priority/sdk-real"
PERSISTENT = "bmq://bmq.test.persistent.priority/sdk-real-restart"


async def test_one_trace_across_two_sessions(bmq_real_broker: RealBroker) -> None:
    pytest.importorskip("opentelemetry.sdk.trace")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    options = SessionOptions(tracer_provider=provider)
    url = bmq_real_broker.url
    async with (
        AsyncSession(url, options=options) as producer,
        AsyncSession(url, options=options) as consumer,
    ):
        reader = await consumer.open_queue(QUEUE + "-trace", read=True)
        writer = await producer.open_queue(QUEUE + "-trace", write=True)
        assert (await writer.post(b"traced")).ok
        message = await asyncio.wait_for(reader.get(), 10)
        await message.confirm()
    spans = {span.name: span for span in exporter.get_finished_spans()}
    publish = spans[f"publish {QUEUE}-trace"]
    receive = spans[f"receive {QUEUE}-trace"]
    assert receive.context.trace_id == publish.context.trace_id
    assert receive.parent is not None and receive.parent.span_id == publish.context.span_id


async def test_linger_waits_for_the_acks(bmq_real_broker: RealBroker) -> None:
    session = AsyncSession(bmq_real_broker.url)
    await session.start()
    writer = await session.open_queue(QUEUE + "-linger", write=True)
    acks = []
    for n in range(200):
        writer.post_nowait(b"%d" % n, on_ack=acks.append)
    await session.stop(linger=10)  # raises LingerTimeoutError if any ACK were missing
    assert len(acks) == 200 and all(ack.ok for ack in acks)


async def test_per_post_compression_and_total_size(bmq_real_broker: RealBroker) -> None:
    payload = b"c" * 4000
    async with AsyncSession(bmq_real_broker.url) as session:
        queue = await session.open_queue(QUEUE + "-zlib", read=True, write=True)
        assert (await queue.post(payload, compression="zlib")).ok
        assert (await queue.post(payload, compression="none")).ok
        zipped = await asyncio.wait_for(queue.get(), 10)
        plain = await asyncio.wait_for(queue.get(), 10)
        queue.confirm_many_nowait([zipped, plain])
    assert isinstance(zipped.message, CompressedMessage) and zipped.payload == payload
    assert zipped.total_size < 200 and plain.total_size == len(payload)


async def test_the_default_reconnect_comes_back_after_a_restart(
    bmq_real_broker: RealBroker,
) -> None:
    events: list[object] = []
    async with AsyncSession(bmq_real_broker.url, on_event=events.append) as session:
        writer = await session.open_queue(PERSISTENT, write=True)
        assert (await writer.post(b"before")).ok
        bmq_real_broker.kill()
        bmq_real_broker.start()
        ack = await asyncio.wait_for(writer.post(b"after"), 60)  # held, then sent on reopen
        assert ack.ok
    assert any(isinstance(event, Reconnected) for event in events)
