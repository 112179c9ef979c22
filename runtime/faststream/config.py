"""The configuration FastStream threads through a broker, its routers and their endpoints."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from faststream._internal.configs import (
    BrokerConfig,
    PublisherSpecificationConfig,
    PublisherUsecaseConfig,
    SubscriberSpecificationConfig,
    SubscriberUsecaseConfig,
)
from faststream._internal.constants import EMPTY
from faststream.exceptions import IncorrectState
from faststream.middlewares import AckPolicy
from pybmq.faststream.producer import BlazingMQProducer

__all__ = [
    "DEFAULT_ACK_POLICY",
    "DEFAULT_MAX_ATTEMPTS",
    "BlazingMQBrokerConfig",
    "BlazingMQPublisherConfig",
    "BlazingMQPublisherSpecificationConfig",
    "BlazingMQSubscriberConfig",
    "BlazingMQSubscriberSpecificationConfig",
    "queue_uri",
]

if TYPE_CHECKING:
    from pybmq.client.aio import AsyncSession
    from pybmq.client.subscriptions import Subscription

# NACK_ON_ERROR: a failed handler gets the message again, up to max_attempts, then it is
# dead-lettered (or dropped) and confirmed. Confirming only what was handled is BlazingMQ's norm.
DEFAULT_ACK_POLICY = AckPolicy.NACK_ON_ERROR
DEFAULT_MAX_ATTEMPTS = 3


def queue_uri(prefix: str, queue: str) -> str:
    """``queue`` under a router's ``prefix`` (``"bmq://domain/"`` + ``"orders"``); a queue
    given as a whole URI (``bmq://...``) is taken as it is, so a router can name other domains."""
    return queue if queue.startswith("bmq://") else f"{prefix}{queue}"


@dataclass(kw_only=True)
class BlazingMQBrokerConfig(BrokerConfig):
    """The broker's config: its producer (posting session) and its reading session."""

    session: AsyncSession | None = field(default=None, repr=False)

    @property
    def reader(self) -> AsyncSession:
        """The session subscribers read through."""
        if self.session is None:
            raise IncorrectState("the BlazingMQ broker is not connected: call connect() first")
        return self.session

    @property
    def poster(self) -> BlazingMQProducer:
        """The producer, typed (a router's config has none until it is included)."""
        producer = self.producer
        if not isinstance(producer, BlazingMQProducer):
            raise IncorrectState("this router is not included in a BlazingMQBroker")
        return producer


@dataclass(kw_only=True)
class BlazingMQSubscriberConfig(SubscriberUsecaseConfig):
    """A subscriber's queue and its BlazingMQ options."""

    _outer_config: BlazingMQBrokerConfig = field(default_factory=BlazingMQBrokerConfig)

    queue: str
    subscriptions: tuple[Subscription, ...] = ()
    max_unconfirmed_messages: int = 1000
    max_unconfirmed_bytes: int = 32 * 1024 * 1024
    consumer_priority: int = 0
    dedup_window: int = 0
    dedup_window_age: float = 300.0
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    retry_delay: float = 0.0
    dead_letter_queue: str | None = None

    @property
    def ack_policy(self) -> AckPolicy:
        if self._ack_policy is EMPTY:
            outer: Any = self._outer_config.ack_policy
            return DEFAULT_ACK_POLICY if outer is EMPTY else outer  # type: ignore[no-any-return]
        return self._ack_policy


@dataclass(kw_only=True)
class BlazingMQSubscriberSpecificationConfig(SubscriberSpecificationConfig):
    queue: str
    subscriptions: tuple[Subscription, ...] = ()
    consumer_priority: int = 0
    dead_letter_queue: str | None = None


@dataclass(kw_only=True)
class BlazingMQPublisherConfig(PublisherUsecaseConfig):
    """A publisher's queue and what it puts on every message."""

    _outer_config: BlazingMQBrokerConfig = field(default_factory=BlazingMQBrokerConfig)

    queue: str
    headers: dict[str, Any] = field(default_factory=dict)
    properties: Any = None  # Mapping[str, value or (PropertyType, value)], or None
    compression: str | None = None


@dataclass(kw_only=True)
class BlazingMQPublisherSpecificationConfig(PublisherSpecificationConfig):
    queue: str
    properties: Sequence[tuple[str, str]] = ()  # (name, BlazingMQ type name)
