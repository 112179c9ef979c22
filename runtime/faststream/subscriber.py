"""Subscribers: one reader queue each (opened on start in the broker's reading session), a loop
that hands every message to FastStream, and the settling of what the handler leaves behind
(see ``pybmq.faststream.message`` for the ack-policy mapping).

``BlazingMQSubscriber`` handles one message at a time, in order; ``BlazingMQConcurrentSubscriber``
(``max_workers`` > 1) up to that many at once. Either way at most ``max_unconfirmed_messages``
are held unconfirmed, the queue's flow control.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from faststream._internal.endpoint.subscriber import SubscriberUsecase
from faststream._internal.endpoint.subscriber.mixins import ConcurrentMixin, TasksMixin
from faststream._internal.endpoint.utils import process_msg
from faststream.response.publish_type import PublishType
from pybmq.client.options import QueueOptions
from pybmq.errors import PybmqError, SessionStoppedError
from pybmq.faststream.config import queue_uri
from pybmq.faststream.message import Delivery, Outcome, Settler
from pybmq.faststream.parser import BlazingMQParser, to_properties
from pybmq.faststream.publisher import BlazingMQReplyPublisher
from pybmq.faststream.response import BlazingMQPublishCommand
from typing_extensions import override

__all__ = [
    "DEAD_LETTER_ATTEMPTS",
    "DEAD_LETTER_GUID",
    "DEAD_LETTER_QUEUE",
    "DEAD_LETTER_REASON",
    "MAX_REASON",
    "BlazingMQConcurrentSubscriber",
    "BlazingMQSubscriber",
    "QueueSettler",
]

if TYPE_CHECKING:
    from faststream._internal.endpoint.publisher import PublisherProto
    from faststream._internal.endpoint.subscriber import SubscriberSpecification
    from faststream._internal.endpoint.subscriber.call_item import CallsCollection
    from faststream.message import StreamMessage
    from pybmq.client.aio_queue import AsyncQueue
    from pybmq.faststream.config import BlazingMQBrokerConfig, BlazingMQSubscriberConfig

log = logging.getLogger("pybmq.faststream")
# Properties a dead-lettered message gets beside its own.
DEAD_LETTER_QUEUE = "bmq.dead_letter.queue"
DEAD_LETTER_GUID = "bmq.dead_letter.guid"
DEAD_LETTER_ATTEMPTS = "bmq.dead_letter.attempts"
DEAD_LETTER_REASON = "bmq.dead_letter.reason"
MAX_REASON = 1024  # characters of the reason kept in the property


class QueueSettler(Settler):
    """A subscriber's settling of its deliveries: CONFIRM, and posts to its dead-letter queue
    (through the broker's producer, so in memory they reach the dead-letter subscriber too)."""

    def __init__(self, subscriber: BlazingMQSubscriber) -> None:
        self.subscriber = subscriber
        self.max_attempts = subscriber.max_attempts

    async def confirm(self, delivery: Delivery) -> None:
        if delivery.received is not None:
            await delivery.received.confirm()
        delivery.outcome = Outcome.CONFIRMED

    async def reject(self, delivery: Delivery, reason: str = "") -> None:
        target = self.subscriber.dead_letter_queue
        if target is None:
            log.warning(
                "%s: %r rejected, no dead-letter queue: dropped", delivery.queue_uri, delivery
            )
            await self.confirm(delivery)
            delivery.outcome = Outcome.DROPPED
            return
        marks: dict[str, Any] = {
            DEAD_LETTER_QUEUE: delivery.queue_uri,
            DEAD_LETTER_GUID: delivery.guid.hex().upper(),
            DEAD_LETTER_ATTEMPTS: delivery.attempt,
        }
        if reason:
            marks[DEAD_LETTER_REASON] = reason[:MAX_REASON]
        try:
            properties = to_properties(delivery.properties, marks)
        except PybmqError:  # at the property limits: it goes as it came
            properties = to_properties(delivery.properties)
        command = BlazingMQPublishCommand(
            delivery.payload, queue=target, properties=properties, _publish_type=PublishType.PUBLISH
        )
        try:
            await self.subscriber._outer_config.producer.publish(command)
        except Exception:
            log.exception(
                "%s: %r not dead-lettered to %s: left unconfirmed",
                delivery.queue_uri,
                delivery,
                target,
            )
            delivery.outcome = Outcome.HELD
            return
        await self.confirm(delivery)
        delivery.outcome = Outcome.DEAD_LETTERED


class BlazingMQSubscriber(TasksMixin, SubscriberUsecase[Delivery]):
    """Reads one queue (``bmq://domain/queue`` or ``...?id=app``) and handles its messages."""

    _outer_config: BlazingMQBrokerConfig

    def __init__(
        self,
        config: BlazingMQSubscriberConfig,
        specification: SubscriberSpecification[Any, Any],
        calls: CallsCollection[Delivery],
    ) -> None:
        parser = BlazingMQParser()
        config.parser = parser.parse_message
        config.decoder = parser.decode_message
        super().__init__(config, specification, calls)
        self._queue_name = config.queue
        self.options = QueueOptions(
            max_unconfirmed_messages=config.max_unconfirmed_messages,
            max_unconfirmed_bytes=config.max_unconfirmed_bytes,
            consumer_priority=config.consumer_priority,
            subscriptions=config.subscriptions,
            dedup_window=config.dedup_window,
            dedup_window_age=config.dedup_window_age,
        )
        self.max_attempts = config.max_attempts
        self.retry_delay = config.retry_delay
        self.dead_letter_queue = config.dead_letter_queue
        self.settler = QueueSettler(self)
        self.queue: AsyncQueue | None = None

    @property
    def queue_uri(self) -> str:
        """The queue URI, with the prefix of the routers it was declared on."""
        return queue_uri(self._outer_config.prefix, self._queue_name)

    # -- life ------------------------------------------------------------------------------

    @override
    async def start(self) -> None:
        await super().start()
        if self.calls:
            await self._open()
            self.add_task(self._consume_loop, restart_on_failure=False)
        self._post_start()

    async def _open(self) -> AsyncQueue:
        if self.queue is None:
            self.queue = await self._outer_config.reader.open_queue(
                self.queue_uri, read=True, options=self.options
            )
        return self.queue

    @override
    async def stop(self) -> None:
        """Finish the messages in hand (the broker's ``graceful_timeout``), then close the
        queue: what was received and not confirmed goes back to the broker for redelivery."""
        await super().stop()
        queue, self.queue = self.queue, None
        if queue is not None:
            with contextlib.suppress(PybmqError, asyncio.TimeoutError):
                await queue.close(timeout=self._outer_config.graceful_timeout or 10.0)

    # -- messages --------------------------------------------------------------------------

    async def _consume_loop(self) -> None:
        queue = self.queue
        assert queue is not None
        while self.running:
            try:
                received = await queue.get()
            except SessionStoppedError:
                return
            await self._dispatch(Delivery.of(received, self.settler))

    async def _dispatch(self, delivery: Delivery) -> None:
        """Hand ``delivery`` to the handler (the concurrent subscriber queues it instead)."""
        await self.handle(delivery)

    async def handle(self, delivery: Delivery) -> None:
        """Run the handler on ``delivery``, again while it is nacked with attempts left."""
        received = delivery.received
        if received is not None and received.error is not None:
            log.warning("%s: a message that cannot be decoded: %s", self.queue_uri, received.error)
            await self.settler.reject(delivery, str(received.error))
            return
        while True:
            await self.consume(delivery)
            if delivery.outcome is not Outcome.RETRY or not self.running:
                return
            delivery.attempt += 1
            delivery.outcome = None
            if self.retry_delay:
                await asyncio.sleep(self.retry_delay)

    @override
    def _make_response_publisher(
        self, message: StreamMessage[Delivery]
    ) -> Sequence[PublisherProto]:
        return (BlazingMQReplyPublisher(self._outer_config.producer, message.reply_to),)

    @override
    async def get_one(self, *, timeout: float = 5.0) -> StreamMessage[Delivery] | None:
        """The next message (settle it yourself: ``await message.ack()``), or None after
        ``timeout`` seconds."""
        assert not self.calls, "get_one() is for a subscriber without handlers"
        queue = await self._open()
        try:
            received = await asyncio.wait_for(queue.get(), timeout)
        except asyncio.TimeoutError:
            return None
        return await self._parsed(Delivery.of(received, self.settler))

    @override
    async def __aiter__(self) -> AsyncIterator[StreamMessage[Delivery]]:  # type: ignore[override]
        assert not self.calls, "iterating is for a subscriber without handlers"
        queue = await self._open()
        async for received in queue:
            yield await self._parsed(Delivery.of(received, self.settler))

    async def _parsed(self, delivery: Delivery) -> StreamMessage[Delivery]:
        parser, decoder = self._get_parser_and_decoder()
        context = self._outer_config.context
        message: StreamMessage[Delivery] = await process_msg(  # type: ignore[assignment]
            msg=delivery,
            middlewares=(m(delivery, context=context) for m in self._broker_middlewares),
            parser=parser,
            decoder=decoder,
        )
        return message

    # -- logs ------------------------------------------------------------------------------

    @staticmethod
    def build_log_context(message: StreamMessage[Any] | None, queue: str = "") -> dict[str, str]:
        return {"queue": queue, "message_id": getattr(message, "message_id", "")}

    @override
    def get_log_context(self, message: StreamMessage[Delivery] | None) -> dict[str, str]:
        return self.build_log_context(message, self.queue_uri)


class BlazingMQConcurrentSubscriber(ConcurrentMixin[Delivery], BlazingMQSubscriber):
    """A subscriber that runs up to ``max_workers`` handlers at once (order is not kept)."""

    @override
    async def start(self) -> None:
        await super().start()
        if self.calls:
            self.start_consume_task()

    @override
    async def _dispatch(self, delivery: Delivery) -> None:
        await self._put_msg(delivery)

    @override
    async def _consume_msg(self, msg: Delivery) -> None:
        async with self.limiter:
            await self.handle(msg)
