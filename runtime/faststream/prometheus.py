"""FastStream's Prometheus middleware for BlazingMQ (needs ``prometheus-client``).

    registry = CollectorRegistry()
    broker = BlazingMQBroker(url, middlewares=[BlazingMQPrometheusMiddleware(registry=registry)])

Its metrics (``faststream_received_messages_total``, ``..._processing_duration_seconds``,
``faststream_published_messages_total`` ...) are labelled ``broker="blazingmq"`` and with the
queue URI as the ``handler``/``destination``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from faststream._internal.constants import EMPTY
from faststream.prometheus import ConsumeAttrs, MetricsSettingsProvider
from faststream.prometheus.middleware import PrometheusMiddleware
from pybmq.faststream.message import Delivery
from pybmq.faststream.response import BlazingMQPublishCommand

__all__ = ["BlazingMQMetricsSettingsProvider", "BlazingMQPrometheusMiddleware"]

if TYPE_CHECKING:
    from faststream.message import StreamMessage
    from prometheus_client import CollectorRegistry


class BlazingMQMetricsSettingsProvider(MetricsSettingsProvider[Delivery, BlazingMQPublishCommand]):
    """The labels of a BlazingMQ message's metrics."""

    def __init__(self) -> None:
        self.messaging_system = "blazingmq"

    def get_consume_attrs_from_message(self, msg: StreamMessage[Delivery]) -> ConsumeAttrs:
        return {
            "destination_name": msg.raw_message.queue_uri,
            "message_size": len(msg.body),
            "messages_count": 1,
        }

    def get_publish_destination_name_from_cmd(self, cmd: BlazingMQPublishCommand) -> str:
        return cmd.destination


class BlazingMQPrometheusMiddleware(PrometheusMiddleware[Delivery, BlazingMQPublishCommand]):
    """FastStream's ``PrometheusMiddleware`` with BlazingMQ's labels."""

    def __init__(
        self,
        *,
        registry: CollectorRegistry,
        app_name: str = EMPTY,
        metrics_prefix: str = "faststream",
        received_messages_size_buckets: Sequence[float] | None = None,
        custom_labels: dict[str, str | Callable[[Any], str]] | None = None,
    ) -> None:
        super().__init__(
            settings_provider_factory=lambda _: BlazingMQMetricsSettingsProvider(),
            registry=registry,
            app_name=app_name,
            metrics_prefix=metrics_prefix,
            received_messages_size_buckets=received_messages_size_buckets,
            custom_labels=custom_labels,
        )
