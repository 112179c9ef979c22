"""Consuming: routing PUSH messages to their queue handle, and buffering CONFIRMs."""

from __future__ import annotations

import logging
from collections.abc import Iterable

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
    QueueRecord,
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

    def confirm(self, queue_id: int, guid: bytes, generation: int | None = None) -> None:
        """Buffer a CONFIRM (for the message ``guid`` on queue handle ``queue_id``).

        ``generation`` is ``self.generation`` when the message arrived: a message of an earlier
        connection is not confirmed (that broker session is gone; it will be redelivered)."""
        queue = self._confirmable(queue_id, generation)
        if queue is not None:
            self._confirms.append((queue.qid, guid, queue.sub_id))

    def confirm_many(
        self, queue_id: int, guids: Iterable[bytes], generation: int | None = None
    ) -> None:
        """``confirm`` for many messages of one queue handle (the fast path: checked once)."""
        queue = self._confirmable(queue_id, generation)
        if queue is not None:
            qid, sub_id = queue.qid, queue.sub_id
            self._confirms += [(qid, guid, sub_id) for guid in guids]

    def _confirmable(self, queue_id: int, generation: int | None) -> QueueRecord | None:
        """The queue to confirm on, or None when the messages belong to an earlier connection
        (or one being restored): those are redelivered, not confirmed."""
        if (generation is not None and generation != self.generation) or (
            self._restoring and self.state is not SessionState.STOPPED
        ):
            return None
        if self.state is not SessionState.STARTED and self.state is not SessionState.STOPPING:
            raise SessionStoppedError(f"cannot confirm: session is {self.state.value}")
        queue = self.queues.get(queue_id)
        if queue is None or (
            queue.state is not QueueState.OPENED and queue.state is not QueueState.CLOSING
        ):
            raise UsageError(f"cannot confirm: queue {queue_id} is not open")
        if not queue.flags & FLAG_READ:
            raise UsageError(f"cannot confirm on {queue.uri}: it was not opened with read=True")
        return queue

    def _on_push(self, event: Event) -> None:
        append = self._events.append
        max_size = self.options.max_decompressed_size
        new = tuple.__new__  # the records without their Python-level constructors
        decode_properties = MessageProperties.decode
        # (wire queue id << 32 | subQueueId or subscription id) → queue handle, checked once per
        # event; int keys and no per-message tuples keep the garbage collector out of the loop.
        handles: dict[int, int] = {}
        for push in iter_push(event, decompress=False):
            qid = push.queue_id
            infos = push.sub_queue_infos
            if len(infos) > 1:  # one message for several subscriptions of this client
                for info in infos:
                    self._deliver(push, self._push_target(qid, info.sub_queue_id))
                continue
            stream_id = infos[0].sub_queue_id if infos else 0
            handle = handles.get((qid << 32) | stream_id)
            if handle is None:
                handle = handles[(qid << 32) | stream_id] = self._push_target(qid, stream_id)
            if push.compression:
                append(new(MessageReceived, (_inflated(handle, push, max_size),)))
                continue
            area = push.properties_area
            properties = decode_properties(area, extended=push.schema_id != 0) if area else None
            append(
                new(
                    MessageReceived,
                    (new(Message, (handle, push.guid, push.payload, properties, None)),),
                )
            )

    def _deliver(self, push: PushMessage, handle: int) -> None:
        if push.compression:
            message = _inflated(handle, push, self.options.max_decompressed_size)
        else:
            properties = push.properties if push.properties_area else None
            message = Message(handle, push.guid, push.payload, properties)
        self._events.append(MessageReceived(message))

    def _push_target(self, qid: int, stream_id: int) -> int:
        """The queue handle a PUSH for (``qid``, ``stream_id``) goes to; ProtocolError if no
        queue opened for reading has that stream."""
        handle = self._routes.get((qid, stream_id))
        queue = self.queues.get(handle) if handle is not None else None
        if queue is None or not queue.flags & FLAG_READ:
            raise ProtocolError(
                f"PUSH for unknown queue id {qid} / subQueueId {stream_id}",
                path="PushHeader.queueId",
            )
        return queue.queue_id


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
