"""FastStream's OpenTelemetry middleware for BlazingMQ (``pybmq[faststream,otel]``).

    broker = BlazingMQBroker(url, middlewares=[BlazingMQTelemetryMiddleware(tracer_provider=tp)])

Spans use the attributes pybmq's own tracing uses (``messaging.system`` = ``"blazingmq"``,
``messaging.destination.name`` = the queue URI, ``messaging.message.id`` = the GUID in hex), and
the trace context travels in the ``traceparent`` property that pybmq's tracing writes and reads
(``SessionOptions.trace_property``'s default): a trace goes on across a plain pybmq producer, a
FastStream service and a plain pybmq consumer. When the broker's sessions trace too
(``tracing=True`` or ``tracer_provider=``), pybmq's ``publish`` span is a child of FastStream's
and its context is the one the message carries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from faststream.opentelemetry import TelemetrySettingsProvider
from faststream.opentelemetry.consts import MESSAGING_DESTINATION_PUBLISH_NAME
from faststream.opentelemetry.middleware import TelemetryMiddleware
from opentelemetry.semconv.trace import SpanAttributes
from pybmq.faststream.message import Delivery
from pybmq.faststream.response import BlazingMQPublishCommand

__all__ = ["SYSTEM", "BlazingMQTelemetryMiddleware", "BlazingMQTelemetrySettingsProvider"]

if TYPE_CHECKING:
    from faststream.message import StreamMessage
    from opentelemetry.metrics import Meter, MeterProvider
    from opentelemetry.trace import TracerProvider

SYSTEM = "blazingmq"  # as pybmq.client.tracing names it


class BlazingMQTelemetrySettingsProvider(
    TelemetrySettingsProvider[Delivery, BlazingMQPublishCommand]
):
    """The span attributes of a BlazingMQ publish and consume."""

    def __init__(self) -> None:
        self.messaging_system = SYSTEM

    def get_consume_attrs_from_message(self, msg: StreamMessage[Delivery]) -> dict[str, Any]:
        return {
            SpanAttributes.MESSAGING_SYSTEM: SYSTEM,
            SpanAttributes.MESSAGING_MESSAGE_ID: msg.message_id,
            SpanAttributes.MESSAGING_MESSAGE_CONVERSATION_ID: msg.correlation_id,
            SpanAttributes.MESSAGING_MESSAGE_PAYLOAD_SIZE_BYTES: len(msg.body),
            MESSAGING_DESTINATION_PUBLISH_NAME: msg.raw_message.queue_uri,
        }

    def get_consume_destination_name(self, msg: StreamMessage[Delivery]) -> str:
        return msg.raw_message.queue_uri

    def get_publish_attrs_from_cmd(self, cmd: BlazingMQPublishCommand) -> dict[str, Any]:
        return {
            SpanAttributes.MESSAGING_SYSTEM: SYSTEM,
            SpanAttributes.MESSAGING_DESTINATION_NAME: cmd.destination,
            SpanAttributes.MESSAGING_MESSAGE_CONVERSATION_ID: cmd.correlation_id,
        }

    def get_publish_destination_name(self, cmd: BlazingMQPublishCommand) -> str:
        return cmd.destination


class BlazingMQTelemetryMiddleware(TelemetryMiddleware[BlazingMQPublishCommand]):
    """FastStream's ``TelemetryMiddleware`` with BlazingMQ's span attributes."""

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        meter: Meter | None = None,
        include_messages_counters: bool = False,
    ) -> None:
        super().__init__(
            settings_provider_factory=lambda _: BlazingMQTelemetrySettingsProvider(),
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
            meter=meter,
            include_messages_counters=include_messages_counters,
        )
