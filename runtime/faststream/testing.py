"""``TestBlazingMQBroker``: FastStream's test client for a ``BlazingMQBroker``.

In memory (the default) nothing connects: a publish is encoded as on the wire and handed to the
subscribers of its queue the way a broker routes it. A queue without ``?id=`` (a priority
queue) gives each message to one subscriber, the highest consumer priority first; a fan-out
queue gives it to one subscriber of each app (``?id=``); a subscriber with subscriptions gets
only the messages one of its expressions matches (evaluated as the simulator does). Handlers'
``.mock`` and publishers' ``.mock`` are called with the decoded message, and a handler's
exception reaches the ``publish`` that delivered it (one attempt; ``reject`` still posts to the
dead-letter queue, in memory too).

``with_real=True`` runs the broker for real against the broker its URL names (``pybmq sim``
or a real ``bmqbrkr``), keeping the mocks.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast
from unittest.mock import MagicMock

from faststream._internal.testing.broker import TestBroker, change_producer
from faststream.exceptions import SubscriberNotFound
from pybmq.client.events import Ack, AckStatus
from pybmq.faststream.broker import BlazingMQBroker
from pybmq.faststream.message import Delivery
from pybmq.faststream.producer import BlazingMQProducer
from pybmq.faststream.response import BlazingMQPublishCommand
from pybmq.faststream.subscriber import BlazingMQSubscriber
from pybmq.uri import require_queue_uri
from pybmq.wire.properties import MessageProperties
from typing_extensions import override

if TYPE_CHECKING:
    from pybmq.faststream.publisher import BlazingMQPublisher

__all__ = ["InMemoryProducer", "TestBlazingMQBroker"]


class TestBlazingMQBroker(TestBroker[BlazingMQBroker, Any], broker=BlazingMQBroker):
    """``async with TestBlazingMQBroker(broker) as br: await br.publish(...)``."""

    @override
    def create_publisher_fake_subscriber(
        self, broker: BlazingMQBroker, publisher: BlazingMQPublisher
    ) -> tuple[BlazingMQSubscriber, bool]:
        """The subscriber whose handler stands for ``publisher``'s mock: a declared one of its
        queue, else a new one (FastStream's test-client contract; True when it was declared)."""
        target = require_queue_uri(publisher.queue_uri).base
        for subscriber in _subscribers(self.brokers):
            if require_queue_uri(subscriber.queue_uri).base == target:
                return subscriber, True
        fake = broker.subscriber(publisher.queue_uri, persistent=False)
        return fake, False

    @contextmanager
    def _patch_producer(self, broker: BlazingMQBroker) -> Iterator[None]:
        with change_producer(broker.config.broker_config, InMemoryProducer(broker, self.brokers)):
            yield

    @override
    async def _fake_connect(  # type: ignore[override]  # FastStream's base says None, sets it
        self, broker: BlazingMQBroker, *args: Any, **kwargs: Any
    ) -> MagicMock:
        return MagicMock()  # the broker's ``_connection`` while in memory


def _subscribers(brokers: tuple[BlazingMQBroker, ...]) -> Iterator[BlazingMQSubscriber]:
    for broker in brokers:
        for subscriber in broker.subscribers:
            yield cast("BlazingMQSubscriber", subscriber)


class InMemoryProducer(BlazingMQProducer):
    """Routes each publish to the subscribers of its queue, as the module docstring says."""

    def __init__(self, broker: BlazingMQBroker, brokers: tuple[BlazingMQBroker, ...]) -> None:
        super().__init__(broker.config.broker_parser, broker.config.broker_decoder)
        self.brokers = brokers
        self.serializer = broker.config.fd_config._serializer
        if broker.config.broker_codec is not None:
            self.codec = broker.config.broker_codec
        self._matchers: dict[str, Callable[[Any], bool]] = {}

    def targets(self, queue: str, properties: MessageProperties) -> list[BlazingMQSubscriber]:
        """One subscriber per app of ``queue`` (the highest priority one that matches)."""
        base = require_queue_uri(queue).base
        chosen: dict[str | None, BlazingMQSubscriber] = {}
        candidates = [
            s for s in _subscribers(self.brokers) if require_queue_uri(s.queue_uri).base == base
        ]
        candidates.sort(key=lambda s: -s.options.consumer_priority)
        for subscriber in candidates:
            app = require_queue_uri(subscriber.queue_uri).app_id
            if app not in chosen and self._matches(subscriber, properties):
                chosen[app] = subscriber
        return list(chosen.values())

    def _matches(self, subscriber: BlazingMQSubscriber, properties: MessageProperties) -> bool:
        subscriptions = subscriber.options.subscription_objects
        if not subscriptions:
            return True
        from pybmq.sim.expressions import compile_expression  # the simulator's evaluator

        for subscription in subscriptions:
            text = subscription.expression
            if not text:
                return True
            matcher = self._matchers.get(text)
            if matcher is None:
                matcher = self._matchers[text] = compile_expression(text)
            if matcher(properties):
                return True
        return False

    @override
    async def publish(self, cmd: BlazingMQPublishCommand) -> Ack:
        payload, properties = await self.encode(cmd)
        guid = os.urandom(16)
        for subscriber in self.targets(cmd.destination, properties):
            delivery = Delivery(
                subscriber.queue_uri, payload, properties, guid, settler=subscriber.settler
            )
            await subscriber.process_message(delivery)
        return Ack(guid, cmd.destination, AckStatus.SUCCESS)

    @override
    async def request(self, cmd: BlazingMQPublishCommand) -> Any:
        payload, properties = await self.encode(cmd)
        for subscriber in self.targets(cmd.destination, properties):
            delivery = Delivery(subscriber.queue_uri, payload, properties, os.urandom(16))
            result = await subscriber.process_message(delivery)
            reply = BlazingMQPublishCommand.from_cmd(result.as_publish_command())
            body, reply_properties = await self.encode(reply)
            return Delivery(cmd.destination, body, reply_properties, os.urandom(16))
        raise SubscriberNotFound
