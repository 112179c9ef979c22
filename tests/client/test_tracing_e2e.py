"""Distributed tracing over real sockets through the simulator, read with the OpenTelemetry SDK's
in-memory exporter: one trace from a producer session to a consumer session, the session and
queue operation spans, and nothing imported or recorded when tracing is off."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest
from pybmq.client.aio import AsyncSession
from pybmq.client.aio_queue import ReceivedMessage
from pybmq.client.aio_tracing import TracedMessage
from pybmq.client.options import SessionOptions
from pybmq.client.sync import Session
from pybmq.sim.server import BrokerSimulator, ThreadedBrokerSimulator
from pybmq.wire.properties import MessageProperties, PropertyType

pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode

pytestmark = pytest.mark.timeout(60)

QUEUE = "bmq://bmq.test.mem.priority/traced"


def _provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _named(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


async def test_one_trace_from_producer_to_consumer_across_two_sessions() -> None:
    provider, exporter = _provider()
    options = SessionOptions(tracer_provider=provider, reconnect=False)
    async with (
        BrokerSimulator() as sim,
        AsyncSession(sim.url, options=options) as producer,
        AsyncSession(sim.url, options=options) as consumer,
    ):
        reader = await consumer.open_queue(QUEUE, read=True)
        writer = await producer.open_queue(QUEUE, write=True)
        tracer = provider.get_tracer("app")
        with tracer.start_as_current_span("checkout") as app_span:
            ack = await writer.post(b"order-1", properties={"kind": "order"})
        assert ack.ok
        message = await asyncio.wait_for(reader.get(), 5)
        assert message.properties["kind"] == "order"
        traceparent = message.properties["traceparent"]
        assert isinstance(traceparent, str) and traceparent.startswith("00-")
        assert message.trace_context is not None
        await message.confirm()
        await reader.configure(max_unconfirmed_messages=10)
        await reader.close()
    spans = tuple(exporter.get_finished_spans())
    [publish] = _named(spans, f"publish {QUEUE}")
    [receive] = _named(spans, f"receive {QUEUE}")
    [settle] = _named(spans, f"settle {QUEUE}")
    trace_id = app_span.get_span_context().trace_id
    # One trace: the application's span → publish → receive → settle.
    assert publish.context.trace_id == receive.context.trace_id == trace_id
    assert settle.context.trace_id == trace_id
    assert publish.parent is not None
    assert publish.parent.span_id == app_span.get_span_context().span_id
    assert receive.parent is not None and receive.parent.span_id == publish.context.span_id
    assert [link.context.span_id for link in receive.links] == [publish.context.span_id]
    assert settle.parent is not None and settle.parent.span_id == receive.context.span_id
    assert traceparent.split("-")[2] == f"{publish.context.span_id:016x}"
    assert publish.kind is SpanKind.PRODUCER and receive.kind is SpanKind.CONSUMER
    guid = message.guid.hex().upper()
    for span, operation in ((publish, "publish"), (receive, "receive"), (settle, "settle")):
        attributes = span.attributes or {}
        assert attributes["messaging.system"] == "blazingmq"
        assert attributes["messaging.destination.name"] == QUEUE
        assert attributes["messaging.operation.type"] == operation
        assert attributes["messaging.message.id"] == guid
    assert (publish.attributes or {})["messaging.blazingmq.ack.status"] == "SUCCESS"
    assert publish.status.status_code is StatusCode.UNSET
    names = [span.name for span in spans]
    for name in ("start", "stop", f"open {QUEUE}", f"configure {QUEUE}", f"close {QUEUE}"):
        assert name in names, name
    assert names.count("start") == 2 and names.count(f"open {QUEUE}") == 2


async def test_batches_nacks_refused_opens_and_a_configurable_property_name() -> None:
    provider, exporter = _provider()
    options = SessionOptions(
        tracer_provider=provider, reconnect=False, trace_property="x-trace", ack_timeout=0.5
    )
    async with BrokerSimulator() as sim, AsyncSession(sim.url, options=options) as session:
        writer = reader = await session.open_queue(QUEUE, read=True, write=True)
        acks: list[object] = []
        guids = writer.post_many_nowait([b"a", b"b", b"c"], on_ack=acks.append)
        for _ in range(3):
            message = await asyncio.wait_for(reader.get(), 5)
            assert "x-trace" in message.properties and "traceparent" not in message.properties
        reader.confirm_many_nowait([message])
        while len(acks) < 3:
            await asyncio.sleep(0.01)
        with pytest.raises(Exception):  # noqa: B017 - whichever refusal the broker gives
            await session.open_queue("bmq://no.such.domain/q", write=True)
    spans = tuple(exporter.get_finished_spans())
    [batch] = _named(spans, f"publish {QUEUE}")
    assert (batch.attributes or {})["messaging.batch.message_count"] == 3
    assert len(guids) == 3
    assert len(_named(spans, f"receive {QUEUE}")) == 3
    assert len(_named(spans, f"settle {QUEUE}")) == 1
    [refused] = _named(spans, "open bmq://no.such.domain/q")
    assert refused.status.status_code is StatusCode.ERROR
    assert "error.type" in (refused.attributes or {})


def test_the_blocking_session_traces_too_and_reconnects_are_spans() -> None:
    provider, exporter = _provider()
    options = SessionOptions(tracer_provider=provider)
    with ThreadedBrokerSimulator() as sim, Session(sim.url, options=options) as session:
        queue = session.open_queue(QUEUE, read=True, write=True)
        app = provider.get_tracer("app")
        with app.start_as_current_span("blocking caller") as caller:
            assert queue.post(b"x").ok
            queue.post_async(b"y")
        message = queue.get(timeout=5)
        message.confirm()
        sim.restart()
        deadline = time.monotonic() + 10
        while not _named(tuple(exporter.get_finished_spans()), "reconnect"):
            assert time.monotonic() < deadline
            time.sleep(0.05)
    spans = tuple(exporter.get_finished_spans())
    publishes = _named(spans, f"publish {QUEUE}")
    assert len(publishes) == 2 and _named(spans, f"settle {QUEUE}")
    # The caller's span (on the application's thread) parents both posts' spans.
    caller_id = caller.get_span_context().span_id
    assert [p.parent.span_id if p.parent else None for p in publishes] == [caller_id] * 2
    [reconnect] = _named(spans, "reconnect")
    assert reconnect.end_time is not None and reconnect.start_time is not None
    assert reconnect.end_time >= reconnect.start_time


def test_no_opentelemetry_import_without_a_tracer() -> None:
    """``import pybmq`` and a whole session without tracing never import opentelemetry."""
    program = """
import asyncio, sys
import pybmq
from pybmq.client.aio import AsyncSession
from pybmq.client.sync import Session
from pybmq.sim.server import BrokerSimulator
assert not [m for m in sys.modules if m.startswith("opentelemetry")], "on import"

async def main():
    async with BrokerSimulator() as sim, AsyncSession(sim.url) as session:
        q = await session.open_queue("bmq://bmq.test.mem.priority/q", read=True, write=True)
        assert (await q.post(b"x")).ok
        m = await q.get()
        await m.confirm()
        assert m.trace_context is None

asyncio.run(main())
found = [m for m in sys.modules if m.startswith("opentelemetry")]
assert not found, found
print("clean")
"""
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "clean" in result.stdout


async def test_typed_properties_keep_their_types_and_untraced_sessions_get_none() -> None:
    provider, exporter = _provider()
    props = MessageProperties()
    props.set_int64("n", 7)
    async with (
        BrokerSimulator() as sim,
        AsyncSession(sim.url, options=SessionOptions(tracer_provider=provider)) as traced,
        AsyncSession(sim.url) as plain,
    ):
        writer = await traced.open_queue(QUEUE, write=True)
        reader = await plain.open_queue(QUEUE, read=True)
        assert (await writer.post(b"typed", properties=props)).ok
        message = await asyncio.wait_for(reader.get(), 5)
        # The consumer does not trace: its message has no span context, but the property came.
        assert message.trace_context is None
        assert isinstance(message, ReceivedMessage) and not isinstance(message, TracedMessage)
        assert message.properties.type_of("n") is PropertyType.INT64  # type: ignore[attr-defined]
        assert "traceparent" in message.properties
        assert len(props) == 1  # the caller's properties were not changed
    assert [s.name for s in exporter.get_finished_spans()].count(f"publish {QUEUE}") == 1


def test_the_tracing_bench_runs_quick() -> None:
    from bench import bench_tracing

    results = {r.name: r for r in bench_tracing.run(quick=True)}
    for path in ("post", "consume"):
        for variant in ("no hook", "off", "on"):
            assert results[f"tracing {path}: {variant}"].value > 0


@pytest.mark.spark
def test_the_spark_source_traces_with_the_process_global_provider() -> None:
    """A Spark task's session traces when its process set a global OpenTelemetry SDK provider
    (a subprocess: the global provider can be set once per process), and not otherwise."""
    pytest.importorskip("pyspark")
    program = """
import sys
from pybmq.sim.server import ThreadedBrokerSimulator
from pybmq.spark.io import post_all, tracing_options
from pybmq.spark.options import WriteOptions
from pybmq.wire.properties import MessageProperties

assert tracing_options() == {}
from opentelemetry import trace
assert tracing_options() == {}  # loaded, but no provider set: nothing to trace with
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
assert tracing_options() == {"tracing": True}
with ThreadedBrokerSimulator() as sim:
    options = WriteOptions.parse({"broker": sim.url, "queue": "bmq://bmq.test.mem.priority/sp"})
    result = post_all(options, [(b"a", MessageProperties()), (b"b", MessageProperties())])
    assert result.acked == 2, result
names = [s.name for s in exporter.get_finished_spans()]
assert names.count("publish bmq://bmq.test.mem.priority/sp") == 2, names
assert "start" in names and "open bmq://bmq.test.mem.priority/sp" in names, names
print("traced")
"""
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "traced" in result.stdout


TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


async def test_a_tracing_consumer_reads_trace_context_without_inflating_bombs() -> None:
    """12 x 64 MiB zlib bombs carrying a traceparent: the receive spans get their parent while
    nothing is inflated; before the application reads, the consumer holds their compressed
    bytes only (it took 822 MiB when tracing inflated them on arrival)."""
    import gc
    import tracemalloc

    from pybmq.wire.compression import DEFAULT_MAX_DECOMPRESSED_SIZE

    from tests.helpers.hostile import store_raw, zlib_bomb

    provider, exporter = _provider()
    bombs = 12
    bomb = zlib_bomb(DEFAULT_MAX_DECOMPRESSED_SIZE)
    area = MessageProperties({"traceparent": TRACEPARENT}).encode(extended=True)
    options = SessionOptions(tracer_provider=provider)
    async with BrokerSimulator() as sim, AsyncSession(sim.url, options=options) as consumer:
        reader = await consumer.open_queue(QUEUE, read=True, max_unconfirmed_messages=bombs)
        gc.collect()
        tracemalloc.start()
        try:
            guids = [store_raw(sim, QUEUE, bomb, properties_area=area) for _ in range(bombs)]
            received = [await asyncio.wait_for(reader.get(), 10) for _ in range(bombs)]
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert [m.guid for m in received] == guids
        assert not any(m.message.inflated for m in received)  # type: ignore[union-attr]
        for message in received:
            await message.confirm()
    assert peak < 150 << 20, f"receiving held {peak >> 20} MiB"
    receives = _named(tuple(exporter.get_finished_spans()), f"receive {QUEUE}")
    assert len(receives) == bombs
    assert all(
        span.parent is not None and span.parent.span_id == 0xB7AD6B7169203331 for span in receives
    )


async def test_old_format_properties_are_inflated_only_as_far_as_the_trace_context() -> None:
    """Properties compressed with the payload (the old format): reading the trace context
    inflates the properties area alone, never the payload behind it."""
    import gc
    import tracemalloc
    import zlib

    from tests.helpers.hostile import store_raw

    provider, exporter = _provider()
    area = MessageProperties({"traceparent": TRACEPARENT}).encode(extended=False)
    size = 32 << 20
    app = zlib.compress(area + bytes(size), 9)
    options = SessionOptions(tracer_provider=provider)
    async with BrokerSimulator() as sim, AsyncSession(sim.url, options=options) as consumer:
        reader = await consumer.open_queue(QUEUE, read=True)
        gc.collect()
        tracemalloc.start()
        try:
            store_raw(sim, QUEUE, app, old_format_properties=True)
            message = await asyncio.wait_for(reader.get(), 10)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert not message.message.inflated  # type: ignore[union-attr]
        assert peak < 4 << 20, f"receiving held {peak >> 20} MiB"
        # Read afterwards, the message is whole: its properties and its payload.
        assert message.properties["traceparent"] == TRACEPARENT
        assert len(message.payload) == size
        await message.confirm()
    [receive] = _named(tuple(exporter.get_finished_spans()), f"receive {QUEUE}")
    assert receive.parent is not None and receive.parent.span_id == 0xB7AD6B7169203331


@pytest.mark.parametrize(
    ("traceparent", "tracestate"),
    [
        (TRACEPARENT + "x" * 100_000, None),  # oversized
        ("garbage", None),
        (TRACEPARENT, "a=b," * 10_000),  # oversized tracestate
        (TRACEPARENT, "A B=="),  # malformed member
    ],
    ids=["long-traceparent", "bad-traceparent", "long-tracestate", "bad-tracestate"],
)
async def test_bad_trace_headers_are_counted_under_the_log_budget(
    traceparent: str, tracestate: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    provider, exporter = _provider()
    count = 200
    options = SessionOptions(tracer_provider=provider)
    properties = {"traceparent": traceparent}
    if tracestate is not None:
        properties["tracestate"] = tracestate
    async with (
        BrokerSimulator() as sim,
        AsyncSession(sim.url) as producer,  # not traced: the headers go as they are
        AsyncSession(sim.url, options=options) as consumer,
    ):
        reader = await consumer.open_queue(QUEUE, read=True)
        writer = await producer.open_queue(QUEUE, write=True)
        with caplog.at_level("WARNING"):
            writer.post_many_nowait([b"m"] * count, properties=properties)
            for _ in range(count):
                message = await asyncio.wait_for(reader.get(), 10)
                message.confirm_nowait()
        tracing = consumer.tracing
        assert tracing is not None
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    # The first ten and then one in a thousand; none from OpenTelemetry's propagator.
    assert len(warnings) <= 10, [r.getMessage()[:80] for r in warnings][:3]
    assert all(r.name == "pybmq.client.tracing" for r in warnings)
    if tracestate is None:
        assert tracing.bad_headers == count
        receives = _named(tuple(exporter.get_finished_spans()), f"receive {QUEUE}")
        assert all(span.parent is None for span in receives)
    else:  # the traceparent is good: the spans keep it, the tracestate is dropped
        assert tracing.bad_headers == count
        receives = _named(tuple(exporter.get_finished_spans()), f"receive {QUEUE}")
        assert all(span.parent is not None for span in receives)
