"""Consuming: routing PUSH messages to their queue handle, and buffering CONFIRMs."""

from __future__ import annotations

import logging

from pybmq.client.events import (
    Message,
    MessageReceived,
)
from pybmq.client.fsm import (
    QueueState,
    SessionState,
)
from pybmq.client.publishing import Publishing
from pybmq.client.records import (
    FLAG_READ,
)
from pybmq.errors import (
    MessageDecodeError,
    ProtocolError,
    SessionStoppedError,
    UsageError,
)
from pybmq.wire.framing import Event
from pybmq.wire.properties import MessageProperties
from pybmq.wire.push import PushMessage, inflate_push, iter_push

log = logging.getLogger("pybmq.client.engine")


class Consuming(Publishing):
    """Consuming: routing PUSH messages to their queue handle, and buffering CONFIRMs."""

    def confirm(
        self,
        queue_id: int,
        guid: bytes,
        generation: int | None = None,
        latency: float | None = None,
    ) -> None:
        """Buffer a CONFIRM (for the message ``guid`` on queue handle ``queue_id``).

        ``generation`` is ``self.generation`` when the message arrived: a message of an earlier
        connection is not confirmed (that broker session is gone; it will be redelivered).
        ``latency`` (seconds from delivery to this confirm, measured by the shell) goes into
        the queue's stats."""
        if (generation is not None and generation != self.generation) or (
            self._restoring and self.state is not SessionState.STOPPED
        ):
            return
        if self.state not in (SessionState.STARTED, SessionState.STOPPING):
            raise SessionStoppedError(f"cannot confirm: session is {self.state.value}")
        queue = self.queues.get(queue_id)
        if queue is None or queue.state not in (QueueState.OPENED, QueueState.CLOSING):
            raise UsageError(f"cannot confirm: queue {queue_id} is not open")
        if not queue.readable:
            raise UsageError(f"cannot confirm on {queue.uri}: it was not opened with read=True")
        self._confirms.append((queue.qid, guid, queue.sub_id))
        counters = queue.counters
        counters.confirmed += 1
        if latency is not None:
            counters.confirm_latency.add(latency)

    def _on_push(self, event: Event) -> None:
        queues = self.queues
        routes = self._routes
        handles = self._subscription_handles
        append = self._events.append
        default_ids = (0,)
        max_size = self.options.max_decompressed_size
        for push in iter_push(event, decompress=False):
            qid = push.queue_id
            infos = push.sub_queue_infos
            ids = [info.sub_queue_id for info in infos] if infos else default_ids
            for stream_id in ids:
                handle = routes.get((qid, stream_id))
                queue = queues.get(handle) if handle is not None else None
                if queue is None or not queue.flags & FLAG_READ:
                    raise ProtocolError(
                        f"PUSH for unknown queue id {qid} / subQueueId {stream_id}",
                        path="PushHeader.queueId",
                    )
                counters = queue.counters
                counters.received += 1
                counters.received_bytes += len(push.payload)
                subscription = handles.get((qid, stream_id)) if handles else None
                if push.compression:
                    message = _inflated(queue.queue_id, push, max_size)
                    if subscription is not None:
                        message = message._replace(subscription=subscription)
                    append(MessageReceived(message))
                    continue
                properties = push.properties if push.properties_area else None
                append(
                    MessageReceived(
                        Message(
                            queue.queue_id, push.guid, push.payload, properties, None, subscription
                        )
                    )
                )


def _inflated(queue_id: int, push: PushMessage, max_size: int) -> Message:
    """A compressed message, inflated; a poison one comes with ``error`` set instead of failing
    the whole event (and with it the session and every consumer of the queue)."""
    try:
        area, payload = inflate_push(push, max_size)
    except ProtocolError as exc:
        log.warning("message %s: payload cannot be decoded: %s", push.guid.hex(), exc)
        error = MessageDecodeError(f"message {push.guid.hex()}: {exc.reason}", path=exc.path)
        return Message(queue_id, push.guid, b"", None, error)
    properties = MessageProperties.decode(area, extended=push.schema_id != 0) if area else None
    return Message(queue_id, push.guid, payload, properties)
