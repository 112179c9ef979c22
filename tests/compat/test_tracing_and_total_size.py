"""pybmq's additions to the official API in compat: ``tracer_provider=`` traces a session (one
trace from a compat producer to a compat consumer) and ``Message.total_size``."""

from __future__ import annotations

import queue
import zlib

import pybmq.compat as blazingmq
import pytest
from pybmq.sim.server import ThreadedBrokerSimulator

pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

pytestmark = pytest.mark.timeout(60)
QUEUE = "bmq://bmq.test.mem.priority/compat-traced"


def test_one_trace_between_compat_sessions_and_total_size() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    received: queue.Queue[blazingmq.Message] = queue.Queue()
    acks: queue.Queue[blazingmq.Ack] = queue.Queue()

    def on_message(message: blazingmq.Message, handle: blazingmq.MessageHandle) -> None:
        received.put(message)
        handle.confirm()

    with ThreadedBrokerSimulator() as sim:
        consumer = blazingmq.Session(
            lambda e: None, on_message=on_message, broker=sim.url, tracer_provider=provider
        )
        producer = blazingmq.Session(
            lambda e: None,
            broker=sim.url,
            tracer_provider=provider,
            message_compression_algorithm=blazingmq.CompressionAlgorithmType.ZLIB,
        )
        try:
            consumer.open_queue(QUEUE, read=True)
            producer.open_queue(QUEUE, write=True)
            producer.post(QUEUE, b"small", on_ack=acks.put)
            big = b"a" * 4096  # over compat's 1 KiB compression threshold
            producer.post(QUEUE, big, properties={"k": "v"}, on_ack=acks.put)
            assert acks.get(timeout=5).status == blazingmq.AckStatus.SUCCESS
            assert acks.get(timeout=5).status == blazingmq.AckStatus.SUCCESS
            small_message = received.get(timeout=5)
            big_message = received.get(timeout=5)
        finally:
            producer.stop()
            consumer.stop()
    # Uncompressed: the properties area (the traceparent) and the payload as sent.
    traceparent = small_message.properties["traceparent"]
    assert isinstance(traceparent, str)
    assert small_message.total_size > len(b"small") + len(traceparent)
    # Compressed: far smaller than the 4 KiB payload, about what zlib makes of it.
    assert big_message.data == big
    assert big_message.total_size < len(zlib.compress(big)) + 200 < len(big)
    spans = exporter.get_finished_spans()
    publishes = [s for s in spans if s.name == f"publish {QUEUE}"]
    receives = [s for s in spans if s.name == f"receive {QUEUE}"]
    assert len(publishes) == 2 and len(receives) == 2
    assert {s.context.trace_id for s in publishes} == {s.context.trace_id for s in receives}
    assert all(r.parent is not None for r in receives)
    assert {r.parent.span_id for r in receives if r.parent} == {
        p.context.span_id for p in publishes
    }
    assert len([s for s in spans if s.name == f"settle {QUEUE}"]) == 2
