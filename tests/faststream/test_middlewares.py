"""The OpenTelemetry and Prometheus middlewares over sockets: one trace from a plain pybmq
producer through a FastStream service to a plain pybmq consumer (the ``traceparent`` property
both sides use), and Prometheus counters labelled with the queue."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("faststream")
pytest.importorskip("opentelemetry.sdk.trace")
pytest.importorskip("prometheus_client")

import pybmq
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from prometheus_client import CollectorRegistry
from pybmq.faststream import BlazingMQBroker
from pybmq.faststream.opentelemetry import BlazingMQTelemetryMiddleware
from pybmq.faststream.prometheus import BlazingMQPrometheusMiddleware

from tests.faststream.service import ORDERS, SHIPPED, Order, Shipment

pytestmark = pytest.mark.timeout(60)


def tracing() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


@pytest.mark.parametrize("traced_sessions", [False, True], ids=["middleware", "and-sessions"])
async def test_one_trace_from_a_pybmq_producer_through_the_service_to_a_pybmq_consumer(
    sim_broker: str, traced_sessions: bool
) -> None:
    provider, exporter = tracing()
    options = pybmq.SessionOptions(tracer_provider=provider, reconnect=False)
    extra = {"tracer_provider": provider} if traced_sessions else {}
    broker = BlazingMQBroker(
        sim_broker,
        reconnect=False,
        middlewares=[BlazingMQTelemetryMiddleware(tracer_provider=provider)],
        **extra,
    )

    @broker.subscriber(ORDERS)
    @broker.publisher(SHIPPED)
    async def handle(order: Order) -> Shipment:
        return Shipment(order_id=order.id, item=order.item, parcels=1)

    async with (
        broker,
        pybmq.AsyncSession(sim_broker, options=options) as producer,
        pybmq.AsyncSession(sim_broker, options=options) as consumer,
    ):
        await broker.start()
        reader = await consumer.open_queue(SHIPPED, read=True)
        writer = await producer.open_queue(ORDERS, write=True)
        with provider.get_tracer("shop").start_as_current_span("checkout") as checkout:
            order = Order(id=1, item="lamp").model_dump_json().encode()
            assert (await writer.post(order, properties={"content-type": "application/json"})).ok
        shipment = await asyncio.wait_for(reader.get(), 10)
        await shipment.confirm()
    trace_id = checkout.get_span_context().trace_id
    spans = exporter.get_finished_spans()
    by_name = {span.name: span for span in spans}
    process = by_name[f"{ORDERS} process"]
    publish = by_name[f"{SHIPPED} publish"]
    receive = by_name[f"receive {SHIPPED}"]  # the plain consumer's span
    assert process.kind is SpanKind.CONSUMER and publish.kind is SpanKind.PRODUCER
    for span in (process, publish, receive):
        assert span.context.trace_id == trace_id
    assert process.attributes["messaging.system"] == "blazingmq"
    assert len(str(process.attributes["messaging.message.id"])) == 32  # the order's GUID
    assert publish.attributes["messaging.destination.name"] == SHIPPED
    traceparent = shipment.properties["traceparent"]
    assert isinstance(traceparent, str) and f"{trace_id:032x}" in traceparent
    if traced_sessions:  # pybmq's own publish span is a child of FastStream's
        [session_publish] = [s for s in spans if s.name == f"publish {SHIPPED}"]
        assert session_publish.parent is not None
        assert session_publish.parent.span_id == publish.context.span_id


async def test_prometheus_counts_received_and_published_messages_by_queue(sim_broker: str) -> None:
    registry = CollectorRegistry()
    broker = BlazingMQBroker(
        sim_broker,
        reconnect=False,
        middlewares=[BlazingMQPrometheusMiddleware(registry=registry, app_name="shop")],
    )

    @broker.subscriber(ORDERS)
    @broker.publisher(SHIPPED)
    async def handle(order: Order) -> Shipment:
        return Shipment(order_id=order.id, item=order.item, parcels=1)

    async with broker:
        await broker.start()
        for n in range(3):
            await broker.publish(Order(id=n, item="x"), ORDERS)
        deadline = asyncio.get_running_loop().time() + 20
        labels = {"app_name": "shop", "broker": "blazingmq", "handler": ORDERS}
        while registry.get_sample_value("faststream_received_messages_total", labels) != 3:
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.1)
    published = registry.get_sample_value(
        "faststream_published_messages_total",
        {"app_name": "shop", "broker": "blazingmq", "destination": SHIPPED, "status": "success"},
    )
    assert published == 3
