"""``BlazingMQRouter``: subscribers and publishers declared apart from a broker (with a
``prefix`` such as ``"bmq://bmq.test.mem.priority/"``), included with
``broker.include_router(router)``; and ``BlazingMQRoute``/``BlazingMQRoutePublisher`` to
declare them as values."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from faststream._internal.broker.router import ArgsContainer, BrokerRouter, SubscriberRoute
from faststream._internal.constants import EMPTY
from faststream.middlewares import AckPolicy
from pybmq.faststream.config import DEFAULT_MAX_ATTEMPTS, BlazingMQBrokerConfig
from pybmq.faststream.message import Delivery
from pybmq.faststream.registrator import BlazingMQRegistrator, SubscriptionSpec

__all__ = ["BlazingMQRoute", "BlazingMQRoutePublisher", "BlazingMQRouter"]

if TYPE_CHECKING:
    from fast_depends.dependencies import Dependant
    from faststream._internal.basic_types import SendableMessage
    from faststream._internal.types import BrokerMiddleware, CustomCallable


class BlazingMQRoutePublisher(ArgsContainer):
    """The arguments of ``publisher()``, for a ``BlazingMQRoute``'s ``publishers``."""

    def __init__(
        self,
        queue: str,
        *,
        headers: dict[str, Any] | None = None,
        properties: Mapping[str, Any] | None = None,
        compression: str | None = None,
        title: str | None = None,
        description: str | None = None,
        schema: Any | None = None,
        include_in_schema: bool = True,
    ) -> None:
        super().__init__(
            queue,
            headers=headers,
            properties=properties,
            compression=compression,
            title=title,
            description=description,
            schema=schema,
            include_in_schema=include_in_schema,
        )


class BlazingMQRoute(SubscriberRoute):
    """A handler with the arguments of ``subscriber()``, for ``BlazingMQRouter(handlers=...)``."""

    def __init__(
        self,
        call: Callable[..., SendableMessage] | Callable[..., Awaitable[SendableMessage]],
        queue: str,
        *,
        publishers: Iterable[BlazingMQRoutePublisher] = (),
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
        title: str | None = None,
        description: str | None = None,
        include_in_schema: bool = True,
    ) -> None:
        super().__init__(
            call,
            queue,
            publishers=publishers,
            subscription=subscription,
            max_unconfirmed_messages=max_unconfirmed_messages,
            max_unconfirmed_bytes=max_unconfirmed_bytes,
            consumer_priority=consumer_priority,
            dedup_window=dedup_window,
            dedup_window_age=dedup_window_age,
            ack_policy=ack_policy,
            max_attempts=max_attempts,
            retry_delay=retry_delay,
            dead_letter_queue=dead_letter_queue,
            max_workers=max_workers,
            no_reply=no_reply,
            dependencies=dependencies,
            parser=parser,
            decoder=decoder,
            title=title,
            description=description,
            include_in_schema=include_in_schema,
        )


class BlazingMQRouter(BlazingMQRegistrator, BrokerRouter[Delivery, BlazingMQBrokerConfig]):
    """Subscribers and publishers to include in a ``BlazingMQBroker``; ``prefix`` goes before
    each queue given to them."""

    def __init__(
        self,
        prefix: str = "",
        handlers: Iterable[BlazingMQRoute] = (),
        *,
        dependencies: Sequence[Dependant] = (),
        middlewares: Sequence[BrokerMiddleware[Any, Any]] = (),
        routers: Iterable[BlazingMQRegistrator] = (),
        parser: CustomCallable | None = None,
        decoder: CustomCallable | None = None,
        include_in_schema: bool | None = None,
        ack_policy: AckPolicy = EMPTY,
    ) -> None:
        super().__init__(
            handlers=handlers,
            config=BlazingMQBrokerConfig(
                prefix=prefix,
                ack_policy=ack_policy,
                broker_dependencies=dependencies,
                broker_middlewares=middlewares,
                broker_parser=parser,
                broker_decoder=decoder,
                include_in_schema=include_in_schema,
            ),
            routers=routers,
        )
