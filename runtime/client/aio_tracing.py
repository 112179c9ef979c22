"""The asyncio shell's traced paths (``SessionOptions.tracer_provider`` / ``tracing``): posts
with a producer span, and ``TracedMessage``, a received message with its ``receive`` span.

``AsyncSession`` imports this module only when its session traces and sets a ``ShellTracing`` as
``driver.tracing``; ``AsyncQueue`` calls through that attribute and never imports this module,
so an untraced session pays one attribute check per call and loads nothing of it (nor
OpenTelemetry).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pybmq.client.aio_queue import NO_PROPERTIES, AckCallback, AsyncQueue, ReceivedMessage
from pybmq.client.events import Ack, CompressedMessage, Message
from pybmq.client.records import FLAG_ACK
from pybmq.client.tracing import Tracing
from pybmq.errors import ProtocolError

if TYPE_CHECKING:
    from opentelemetry.context import Context


class TracedMessage(ReceivedMessage):
    """A ``ReceivedMessage`` of a traced session: it carries its ``receive`` span's context and
    records a ``settle`` span when confirmed (a subclass, so untraced messages pay nothing)."""

    __slots__ = ("_trace_context",)

    def __init__(
        self,
        queue: AsyncQueue,
        message: Message | CompressedMessage,
        generation: int,
        received_at: float,
        tracing: Tracing,
    ) -> None:
        super().__init__(queue, message, generation, received_at)
        self._trace_context = tracing.received(
            queue.uri, message.guid, trace_properties(message, tracing)
        )

    @property
    def trace_context(self) -> Context | None:
        return self._trace_context

    def confirm_nowait(self) -> None:
        super().confirm_nowait()
        self.settled()

    def settled(self) -> None:
        """Record the ``settle`` span of this message's confirm."""
        tracing = self.queue.driver.tracing
        if tracing is not None:
            tracing.settled(self.queue.uri, self.message.guid, self._trace_context)


# How much of a message's properties a tracing consumer inflates on arrival when they are
# compressed with the payload (the old properties format): the payload itself never is.
TRACE_PROPERTIES_LIMIT = 64 * 1024


def trace_properties(message: Message | CompressedMessage, tracing: Tracing) -> Mapping[str, Any]:
    """The properties a ``receive`` span reads its trace context from, read without inflating
    the payload (the lazy inflation bound holds with tracing on); none when they do not parse
    (counted and logged under the log budget by ``tracing``)."""
    try:
        if isinstance(message, CompressedMessage):
            properties = message.properties_alone(TRACE_PROPERTIES_LIMIT)
        else:
            properties = message.properties
        if properties is None:
            return NO_PROPERTIES
        len(properties)  # parsed here, so a malformed area fails now
    except ProtocolError as exc:
        tracing.unreadable(message.guid, exc.reason)
        return NO_PROPERTIES
    return properties


def _acks(queue: AsyncQueue, ack: bool) -> bool:
    """Whether a post with ``ack`` gets an ACK (the queue was opened with ack=True)."""
    record = queue.driver.engine.queues.get(queue.queue_id)
    return ack and record is not None and bool(record.flags & FLAG_ACK)


def post_traced(
    queue: AsyncQueue,
    tracing: Tracing,
    payload: bytes,
    properties: Mapping[str, Any] | None,
    on_ack: AckCallback | None,
    ack: bool,
    compression: str | None,
) -> bytes:
    """``post_nowait`` with a producer span that ends at the ACK (or once buffered)."""
    driver = queue.driver
    span, traced = tracing.publish(queue.uri, properties)
    acks = _acks(queue, ack)

    def acked(result: Ack) -> object:
        tracing.acked(span, result)
        return on_ack(result) if on_ack is not None else None

    try:
        guid = driver.engine.post(
            queue.queue_id,
            payload,
            driver.now(),
            properties=traced,
            context=acked if acks else on_ack,
            ack=ack,
            compression=compression,
        )
    except BaseException as exc:
        tracing.failed(span, exc)
        raise
    tracing.posted(span, guid)
    if not acks:
        span.end()
    driver.schedule_flush()
    return guid


def post_many_traced(
    queue: AsyncQueue,
    tracing: Tracing,
    payloads: Sequence[bytes],
    properties: Mapping[str, Any] | None,
    on_ack: AckCallback | None,
) -> list[bytes]:
    """``post_many_nowait`` with one producer span for the batch, ended at its last ACK
    (ERROR if any was a NACK)."""
    driver = queue.driver
    span, traced = tracing.publish(queue.uri, properties, count=len(payloads))
    acks = _acks(queue, True)
    left = [len(payloads)]  # ACKs still to come
    nacks: list[Ack] = []

    def acked(result: Ack) -> object:
        left[0] -= 1
        if not result.ok:
            nacks.append(result)
        if left[0] == 0:
            tracing.acked(span, nacks[0] if nacks else result)
        return on_ack(result) if on_ack is not None else None

    try:
        guids = driver.engine.post_many(
            queue.queue_id,
            payloads,
            driver.now(),
            properties=traced,
            context=acked if acks else on_ack,
        )
    except BaseException as exc:
        tracing.failed(span, exc)
        raise
    tracing.posted(span, guids)
    if not acks or not guids:
        span.end()
    driver.schedule_flush()
    return guids


async def post_wait_traced(
    queue: AsyncQueue,
    tracing: Tracing,
    future: asyncio.Future[Ack],
    payload: bytes,
    properties: Mapping[str, Any] | None,
    compression: str | None,
) -> Ack:
    """``post`` with a producer span that ends at the ACK."""
    driver = queue.driver
    span, traced = tracing.publish(queue.uri, properties)
    try:
        guid = driver.engine.post(
            queue.queue_id,
            payload,
            driver.now(),
            properties=traced,
            context=future,
            compression=compression,
        )
        tracing.posted(span, guid)
        driver.schedule_flush()
        result = await future
    except BaseException as exc:
        tracing.failed(span, exc)
        raise
    tracing.acked(span, result)
    return result


def settled(messages: Iterable[ReceivedMessage]) -> None:
    """Record the ``settle`` spans of the traced messages among ``messages`` (just confirmed)."""
    for received in messages:
        if isinstance(received, TracedMessage):
            received.settled()


class ShellTracing(Tracing):
    """The session's ``Tracing`` with the shell's traced paths: what ``AsyncQueue`` calls
    through ``driver.tracing`` when it is set."""

    def post(
        self,
        queue: AsyncQueue,
        payload: bytes,
        properties: Mapping[str, Any] | None,
        on_ack: AckCallback | None,
        ack: bool,
        compression: str | None,
    ) -> bytes:
        return post_traced(queue, self, payload, properties, on_ack, ack, compression)

    def post_many(
        self,
        queue: AsyncQueue,
        payloads: Sequence[bytes],
        properties: Mapping[str, Any] | None,
        on_ack: AckCallback | None,
    ) -> list[bytes]:
        return post_many_traced(queue, self, payloads, properties, on_ack)

    async def post_wait(
        self,
        queue: AsyncQueue,
        future: asyncio.Future[Ack],
        payload: bytes,
        properties: Mapping[str, Any] | None,
        compression: str | None,
    ) -> Ack:
        return await post_wait_traced(queue, self, future, payload, properties, compression)

    def message(
        self,
        queue: AsyncQueue,
        message: Message | CompressedMessage,
        generation: int,
        received_at: float,
    ) -> ReceivedMessage:
        return TracedMessage(queue, message, generation, received_at, self)

    @staticmethod
    def settle_all(messages: Iterable[ReceivedMessage]) -> None:
        settled(messages)
