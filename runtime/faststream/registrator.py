"""``subscriber()`` and ``publisher()``, shared by ``BlazingMQBroker`` and ``BlazingMQRouter``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from faststream._internal.broker.registrator import Registrator
from faststream._internal.constants import EMPTY
from faststream._internal.endpoint.subscriber.call_item import CallsCollection
from faststream.middlewares import AckPolicy
from pybmq.client.subscriptions import Subscription, as_subscriptions
from pybmq.errors import UsageError
from pybmq.faststream.config import (
    DEFAULT_MAX_ATTEMPTS,
    BlazingMQBrokerConfig,
    BlazingMQPublisherConfig,
    BlazingMQPublisherSpecificationConfig,
    BlazingMQSubscriberConfig,
    BlazingMQSubscriberSpecificationConfig,
)
from pybmq.faststream.message import Delivery
from pybmq.faststream.parser import to_properties
from pybmq.faststream.publisher import BlazingMQPublisher
from pybmq.faststream.specification import (
    BlazingMQPublisherSpecification,
    BlazingMQSubscriberSpecification,
)
from pybmq.faststream.subscriber import BlazingMQConcurrentSubscriber, BlazingMQSubscriber
from pybmq.wire.properties import TYPE_NAMES
from typing_extensions import override

__all__ = ["BlazingMQRegistrator", "SubscriptionSpec"]

if TYPE_CHECKING:
    from fast_depends.dependencies import Dependant
    from faststream._internal.parser import CodecProto
    from faststream._internal.types import BrokerMiddleware, CustomCallable

SubscriptionSpec = str | Subscription | Sequence[str | Subscription] | None


def _subscriptions(value: SubscriptionSpec) -> tuple[Subscription, ...]:
    if value is None:
        return ()
    if isinstance(value, (str, Subscription)):
        return as_subscriptions((value,))
    return as_subscriptions(tuple(value))


class BlazingMQRegistrator(Registrator[Delivery, BlazingMQBrokerConfig]):
    """Declares subscribers and publishers of BlazingMQ queues."""

    @override
    def subscriber(  # type: ignore[override]
        self,
        queue: str,
        *,
        subscription: SubscriptionSpec = None,
        max_unconfirmed_messages: int = 1000,
        max_unconfirmed_bytes: int = 32 * 1024 * 1024,
        consumer_priority: int = 0,
        dedup_window: int = 0,
        dedup_window_age: float = 300.0,
        ack_policy: AckPolicy = EMPTY,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        retry_delay: float = 0.0,
        dead_letter_queue: str | None = None,
        max_workers: int = 1,
        no_reply: bool = False,
        dependencies: Sequence[Dependant] = (),
        parser: CustomCallable | None = None,
        decoder: CustomCallable | None = None,
        codec: CodecProto | None = None,
        persistent: bool = True,
        title: str | None = None,
        description: str | None = None,
        include_in_schema: bool = True,
    ) -> BlazingMQSubscriber:
        """Handle the messages of ``queue`` (``bmq://domain/queue``, ``?id=app`` for a fan-out
        app; a router's prefix goes before it).

        ``subscription``: an expression (``"price > 10"``), a ``pybmq.Subscription`` (with
        its own priority and flow control) or several; only matching messages come.
        ``max_unconfirmed_messages``/``bytes`` and ``consumer_priority`` are the queue's
        BlazingMQ flow control and priority; ``dedup_window`` (GUIDs, 0: off) and
        ``dedup_window_age`` (seconds) the consumer's de-duplication window (a failover can
        deliver a message twice; see pybmq's resilience guide). ``ack_policy`` (default
        NACK_ON_ERROR) says when a message is confirmed; a nacked one is handled again up to
        ``max_attempts`` times (``retry_delay`` seconds apart), then posted to
        ``dead_letter_queue`` if given and confirmed. ``max_workers`` > 1 handles that many
        messages at once."""
        if max_attempts < 1:
            raise UsageError("max_attempts must be >= 1")
        if retry_delay < 0:
            raise UsageError("retry_delay must be >= 0 seconds")
        if max_workers < 1:
            raise UsageError("max_workers must be >= 1")
        subscriptions = _subscriptions(subscription)
        config = cast("BlazingMQBrokerConfig", self.config)
        subscriber_config = BlazingMQSubscriberConfig(
            queue=queue,
            subscriptions=subscriptions,
            max_unconfirmed_messages=max_unconfirmed_messages,
            max_unconfirmed_bytes=max_unconfirmed_bytes,
            consumer_priority=consumer_priority,
            dedup_window=dedup_window,
            dedup_window_age=dedup_window_age,
            max_attempts=max_attempts,
            retry_delay=retry_delay,
            dead_letter_queue=dead_letter_queue,
            no_reply=no_reply,
            _outer_config=config,
            _ack_policy=ack_policy,
        )
        calls = CallsCollection[Any]()
        specification = BlazingMQSubscriberSpecification(
            config,
            BlazingMQSubscriberSpecificationConfig(
                queue=queue,
                subscriptions=subscriptions,
                consumer_priority=consumer_priority,
                dead_letter_queue=dead_letter_queue,
                title_=title,
                description_=description,
                include_in_schema=include_in_schema,
            ),
            calls,
        )
        subscriber: BlazingMQSubscriber
        if max_workers > 1:
            subscriber = BlazingMQConcurrentSubscriber(
                subscriber_config, specification, calls, max_workers=max_workers
            )
        else:
            subscriber = BlazingMQSubscriber(subscriber_config, specification, calls)
        super().subscriber(subscriber, persistent=persistent)
        return subscriber.add_call(
            parser_=parser or self._parser,
            decoder_=decoder or self._decoder,
            codec_=codec,
            dependencies_=dependencies,
        )

    @override
    def publisher(  # type: ignore[override]
        self,
        queue: str,
        *,
        headers: dict[str, Any] | None = None,
        properties: Mapping[str, Any] | None = None,
        compression: str | None = None,
        persistent: bool = True,
        title: str | None = None,
        description: str | None = None,
        schema: Any | None = None,
        include_in_schema: bool = True,
    ) -> BlazingMQPublisher:
        """Post a handler's result (or ``publisher.publish(...)``) to ``queue``, with
        ``headers`` and typed ``properties`` on every message."""
        config = cast("BlazingMQBrokerConfig", self.config)
        typed = to_properties(headers, properties)  # checks them now, not at the first post
        documented = [(name, TYPE_NAMES[int(kind)]) for name, kind, _ in typed.typed_items()]
        publisher = BlazingMQPublisher(
            BlazingMQPublisherConfig(
                queue=queue,
                headers=dict(headers or {}),
                properties=properties,
                compression=compression,
                _outer_config=config,
            ),
            BlazingMQPublisherSpecification(
                config,
                BlazingMQPublisherSpecificationConfig(
                    queue=queue,
                    properties=documented,
                    schema_=schema,
                    title_=title,
                    description_=description,
                    include_in_schema=include_in_schema,
                ),
            ),
        )
        super().publisher(publisher, persistent=persistent)
        return publisher

    @override
    def include_router(  # type: ignore[override]
        self,
        router: BlazingMQRegistrator,
        *,
        prefix: str = "",
        dependencies: Sequence[Dependant] = (),
        middlewares: Sequence[BrokerMiddleware[Any, Any]] = (),
        include_in_schema: bool | None = None,
    ) -> None:
        if not isinstance(router, BlazingMQRegistrator):
            raise TypeError(f"a BlazingMQ broker includes BlazingMQ routers, not {router!r}")
        super().include_router(
            router,
            prefix=prefix,
            dependencies=dependencies,
            middlewares=middlewares,
            include_in_schema=include_in_schema,
        )
