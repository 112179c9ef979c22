"""Tracing as a layer on the asyncio shell's queue (``SessionOptions.tracer_provider`` /
``tracing``): ``TracedQueue`` wraps the queue's two post primitives and its batch confirm, and
``TracedMessage`` is what its deliveries make, a received message with its ``receive`` span.

The paths themselves are ``AsyncQueue``'s, once: this layer only starts and ends spans around
them and puts the trace context into the properties. ``AsyncSession`` imports this module only
when its session traces (it then opens ``TracedQueue``s), so an untraced session loads nothing
of it (nor OpenTelemetry) and its paths carry no check for it.
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
    from opentelemetry.trace import Span
    from pybmq.client.aio import AsyncSession

__all__ = ["TRACE_PROPERTIES_LIMIT", "TracedMessage", "TracedQueue", "trace_properties"]


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
    ) -> None:
        super().__init__(queue, message, generation, received_at)
        tracing: Tracing = queue.tracing  # type: ignore[attr-defined]  # a TracedQueue's
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
        queue = self.queue
        tracing: Tracing = queue.tracing  # type: ignore[attr-defined]  # a TracedQueue's
        tracing.settled(queue.uri, self.message.guid, self._trace_context)


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


class TracedQueue(AsyncQueue):
    """An ``AsyncQueue`` of a traced session: a producer span per post (per batch for
    ``post_many_nowait``) that ends at its ACK, the trace context in each post's properties, a
    ``TracedMessage`` per delivery and a ``settle`` span per confirm."""

    message_type = TracedMessage

    def __init__(self, session: AsyncSession, queue_id: int, uri: str) -> None:
        super().__init__(session, queue_id, uri)
        tracing = session.tracing
        assert isinstance(tracing, Tracing)
        self.tracing = tracing

    def _acks(self, ack: bool) -> bool:
        """Whether a post with ``ack`` gets an ACK (the queue was opened with ack=True)."""
        record = self.driver.engine.queues.get(self.queue_id)
        return ack and record is not None and bool(record.flags & FLAG_ACK)

    def _buffer(
        self,
        payload: bytes,
        properties: Mapping[str, Any] | None,
        context: AckCallback | asyncio.Future[Ack] | None,
        ack: bool,
        compression: str | None,
    ) -> bytes:
        """A producer span around the post, ended at its ACK (or once buffered, when no ACK
        comes): through ``on_ack``, or when the future ``post`` awaits is done."""
        tracing = self.tracing
        span, traced = tracing.publish(self.uri, properties)
        waited = isinstance(context, asyncio.Future)
        acks = waited or self._acks(ack)
        wrapped = context
        if acks and not waited:
            on_ack = context

            def acked(result: Ack) -> object:
                tracing.acked(span, result)
                return on_ack(result) if on_ack is not None else None  # type: ignore[operator]

            wrapped = acked
        try:
            guid = super()._buffer(payload, traced, wrapped, ack, compression)
        except BaseException as exc:
            tracing.failed(span, exc)
            raise
        tracing.posted(span, guid)
        if waited:
            context.add_done_callback(lambda done: _settle_span(tracing, span, done))  # type: ignore[union-attr]
        elif not acks:
            span.end()
        return guid

    def _buffer_many(
        self,
        payloads: Sequence[bytes],
        properties: Mapping[str, Any] | None,
        on_ack: AckCallback | None,
    ) -> list[bytes]:
        """One producer span for the batch, ended at its last ACK (ERROR if any was a NACK)."""
        tracing = self.tracing
        span, traced = tracing.publish(self.uri, properties, count=len(payloads))
        acks = self._acks(True)
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
            guids = super()._buffer_many(payloads, traced, acked if acks else on_ack)
        except BaseException as exc:
            tracing.failed(span, exc)
            raise
        tracing.posted(span, guids)
        if not acks or not guids:
            span.end()
        return guids

    def confirm_many_nowait(self, messages: Iterable[ReceivedMessage]) -> None:
        """``AsyncQueue.confirm_many_nowait``, then the ``settle`` span of each message."""
        if not isinstance(messages, (list, tuple)):
            messages = list(messages)
        super().confirm_many_nowait(messages)
        for received in messages:
            if isinstance(received, TracedMessage):
                received.settled()


def _settle_span(tracing: Tracing, span: Span, done: asyncio.Future[Ack]) -> None:
    """End the span of a post whose ACK was awaited, as the wait ended."""
    if done.cancelled():
        tracing.failed(span, asyncio.CancelledError())
        return
    error = done.exception()
    if error is not None:
        tracing.failed(span, error)
    else:
        tracing.acked(span, done.result())
