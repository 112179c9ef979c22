"""AsyncAPI for BlazingMQ subscribers and publishers (``faststream.specification.AsyncAPI``).

AsyncAPI has no BlazingMQ binding, and FastStream 0.7's document generator carries the bindings
of the protocols it knows only (AMQP, Kafka, MQTT, NATS, Redis, SQS), dropping any other. So a
channel says what BlazingMQ needs in the two fields every AsyncAPI reader shows: its ``address``
is the queue URI (``bmq://domain/queue``, with ``?id=app`` for a fan-out app) and its
``description`` ends with one line of bindings: domain, queue, appId, the subscription
expressions with their priorities, the consumer priority, the dead-letter queue, and the
message properties (the ones FastStream sets, a publisher's typed ones, those a subscription
reads).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from faststream._internal.endpoint.publisher import PublisherSpecification
from faststream._internal.endpoint.subscriber import SubscriberSpecification
from faststream.specification.asyncapi.utils import resolve_payloads
from faststream.specification.schema import Message, Operation, PublisherSpec, SubscriberSpec
from pybmq.faststream.config import (
    BlazingMQBrokerConfig,
    BlazingMQPublisherSpecificationConfig,
    BlazingMQSubscriberSpecificationConfig,
    queue_uri,
)
from pybmq.faststream.parser import CONTENT_TYPE, CORRELATION_ID
from pybmq.uri import require_queue_uri
from pybmq.wire.expressions import property_names

__all__ = [
    "STANDARD_PROPERTIES",
    "BlazingMQPublisherSpecification",
    "BlazingMQSubscriberSpecification",
    "bindings_line",
]

if TYPE_CHECKING:
    from faststream._internal.endpoint.subscriber.call_item import CallsCollection

# What every message FastStream posts carries.
STANDARD_PROPERTIES = ((CONTENT_TYPE, "STRING"), (CORRELATION_ID, "STRING"))


def bindings_line(
    queue_uri: str,
    *,
    subscriptions: Sequence[tuple[str, int | None]] = (),
    consumer_priority: int | None = None,
    dead_letter_queue: str | None = None,
    properties: Iterable[tuple[str, str]] = (),
) -> str:
    """The one-line BlazingMQ bindings of a channel (Markdown)."""
    uri = require_queue_uri(queue_uri)
    parts = [f"domain `{uri.domain}`", f"queue `{uri.queue}`"]
    if uri.app_id is not None:
        parts.append(f"appId `{uri.app_id}`")
    for expression, priority in subscriptions:
        where = f" (priority {priority})" if priority is not None else ""
        parts.append(f"subscription `{expression}`{where}")
    if consumer_priority is not None:
        parts.append(f"consumer priority {consumer_priority}")
    if dead_letter_queue:
        parts.append(f"dead-letter queue `{dead_letter_queue}`")
    listed = dict(properties)
    if listed:
        described = ", ".join(
            f"`{name}` ({kind})" if kind else f"`{name}`" for name, kind in listed.items()
        )
        parts.append(f"properties {described}")
    return "BlazingMQ: " + "; ".join(parts) + "."


def _with(description: str | None, line: str) -> str:
    return f"{description}\n\n{line}" if description else line


class BlazingMQSubscriberSpecification(
    SubscriberSpecification[BlazingMQBrokerConfig, BlazingMQSubscriberSpecificationConfig],
):
    def __init__(
        self,
        outer_config: BlazingMQBrokerConfig,
        specification_config: BlazingMQSubscriberSpecificationConfig,
        calls: CallsCollection[Any],
    ) -> None:
        super().__init__(outer_config, specification_config, calls)

    @property
    def queue_uri(self) -> str:
        return queue_uri(self._outer_config.prefix, self.config.queue)

    @property
    def channel_labels(self) -> list[str]:
        return [self.queue_uri]

    def get_schema(self) -> dict[str, SubscriberSpec]:
        config = self.config
        read = [name for s in config.subscriptions for name in property_names(s.expression)]
        line = bindings_line(
            self.queue_uri,
            subscriptions=[(s.expression, s.consumer_priority) for s in config.subscriptions],
            consumer_priority=config.consumer_priority,
            dead_letter_queue=config.dead_letter_queue,
            properties=[*STANDARD_PROPERTIES, *((name, "") for name in read)],
        )
        return {
            self.name: SubscriberSpec(
                address=self.queue_uri,
                description=_with(self.description, line),
                operation=Operation(
                    message=Message(
                        title=f"{self.name}:Message",
                        payload=resolve_payloads(self.get_payloads()),
                    ),
                    bindings=None,
                ),
                bindings=None,
            )
        }


class BlazingMQPublisherSpecification(
    PublisherSpecification[BlazingMQBrokerConfig, BlazingMQPublisherSpecificationConfig],
):
    @property
    def queue_uri(self) -> str:
        return queue_uri(self._outer_config.prefix, self.config.queue)

    @property
    def name(self) -> str:
        return self.config.title_ or f"{self.queue_uri}:Publisher"

    def get_schema(self) -> dict[str, PublisherSpec]:
        line = bindings_line(
            self.queue_uri, properties=[*STANDARD_PROPERTIES, *self.config.properties]
        )
        return {
            self.name: PublisherSpec(
                address=self.queue_uri,
                description=_with(self.config.description_, line),
                operation=Operation(
                    message=Message(
                        title=f"{self.name}:Message",
                        payload=resolve_payloads(self.get_payloads(), "Publisher"),
                    ),
                    bindings=None,
                ),
                bindings=None,
            )
        }
