"""Consuming: routing PUSH messages to their queue handle (past its de-duplication window, when
it has one), and buffering CONFIRMs."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from pybmq.client.collector import Collector
from pybmq.client.credit import CreditLedger
from pybmq.client.dedup import HELD, DedupWindow, window_for
from pybmq.client.events import (
    CompressedMessage,
    Message,
    MessageReceived,
    built_in_order,
)
from pybmq.client.fsm import (
    QueueState,
    RecoveryState,
    SessionState,
)
from pybmq.client.lifecycle import Lifecycle
from pybmq.client.options import SharedOptions
from pybmq.client.queue_table import QueueTable
from pybmq.client.records import (
    FLAG_READ,
    QueueRecord,
)
from pybmq.client.stats import QueueCounters
from pybmq.client.subscriptions import Subscription
from pybmq.errors import (
    ProtocolError,
    SessionStoppedError,
    UsageError,
)
from pybmq.wire.batches import ConfirmEventBuilder
from pybmq.wire.framing import Event
from pybmq.wire.properties import lazy_properties
from pybmq.wire.push import PushMessage, decode_push

__all__ = ["Consumer"]

log = logging.getLogger("pybmq.client.engine")
_RESTORING = RecoveryState.RESTORING
# What on_push builds per message, in the order it writes the values (checked at import).
_RECEIVED = built_in_order(MessageReceived, "message")
_MESSAGE = built_in_order(
    Message, "queue_id", "guid", "payload", "properties", "error", "subscription", "total_size"
)


class _Target(NamedTuple):
    """Where the PUSHes of one (wire queue id, stream id) go, looked up once per event."""

    handle: int
    uri: str
    subscription: Subscription | None
    counters: QueueCounters
    # The credit ledger's count for this stream (``CreditLedger.pusher``), None if not counted.
    credit: Callable[[bytes, int, str], None] | None
    # The queue's de-duplication window (``QueueOptions.dedup_window``), None when off.
    window: DedupWindow | None


class Consumer:
    """Consuming: routing PUSH messages to their queue handle, the credit given and used per
    stream (``credit``), and CONFIRMs buffered for the next CONFIRM event."""

    def __init__(
        self,
        options: SharedOptions,
        lifecycle: Lifecycle,
        table: QueueTable,
        collector: Collector,
    ) -> None:
        self._options = options
        self._lifecycle = lifecycle
        self._table = table
        self._events = collector.events
        # Flow control: the credit each reader gave and what the broker pushed against it.
        self.credit = CreditLedger()
        self.confirms: list[tuple[int, bytes, int]] = []  # (wire qid, guid, subQueueId)

    def confirm(
        self,
        queue_id: int,
        guid: bytes,
        generation: int | None = None,
        latency: float | None = None,
    ) -> None:
        """``ClientEngine.confirm``: buffered for the next CONFIRM event, unless the message
        came on an earlier connection (it will be redelivered)."""
        queue = self._confirmable(queue_id, generation)
        if queue is None:
            self._confirm_late(queue_id, (guid,))
            return
        self.confirms.append((queue.qid, guid, queue.sub_id))
        self.credit.confirmed(queue_id, guid)
        counters = queue.counters
        counters.confirmed += 1
        if latency is not None:
            counters.confirm_latency.add(latency)
        if queue.dedup is not None:
            queue.dedup.confirmed((guid,))

    def confirm_many(
        self, queue_id: int, guids: Iterable[bytes], generation: int | None = None
    ) -> None:
        """``ClientEngine.confirm_many``: checked once for the batch."""
        queue = self._confirmable(queue_id, generation)
        if not isinstance(guids, (list, tuple)):
            guids = list(guids)
        if queue is None:
            self._confirm_late(queue_id, guids)
            return
        qid, sub_id = queue.qid, queue.sub_id
        self.confirms.extend([(qid, guid, sub_id) for guid in guids])
        self.credit.confirmed_many(queue_id, guids)
        queue.counters.confirmed += len(guids)
        if queue.dedup is not None:
            queue.dedup.confirmed(guids)

    def _confirm_late(self, queue_id: int, guids: Sequence[bytes]) -> None:
        """Confirms of messages delivered on an earlier connection (or while restoring): void
        there, so dropped, unless the queue's de-duplication window says the broker pushed one
        again on this connection (the window kept it from the application, which holds the
        first delivery): that one is confirmed here and now. The others are marked confirmed
        in the window, so their redelivery is confirmed and not delivered."""
        queue = self._table.queues.get(queue_id)
        if queue is None or queue.dedup is None:
            return
        again = queue.dedup.confirmed_late(guids, self._lifecycle.generation)
        state = self._lifecycle.state
        if again and (state is SessionState.STARTED or state is SessionState.STOPPING):
            qid, sub_id = queue.qid, queue.sub_id
            self.confirms.extend([(qid, guid, sub_id) for guid in again])
            self.credit.confirmed_many(queue_id, again)
            queue.counters.confirmed += len(again)

    def sends_late_confirm(self, queue_id: int, guid: bytes) -> bool:
        """Whether a confirm of ``guid``, delivered on an earlier connection, is sent all the
        same: the queue's de-duplication window saw it pushed again on this one."""
        queue = self._table.queues.get(queue_id)
        window = queue.dedup if queue is not None else None
        return window is not None and window.held_on(guid, self._lifecycle.generation)

    def _confirmable(self, queue_id: int, generation: int | None) -> QueueRecord | None:
        """The queue to confirm on, or None when the messages belong to an earlier connection
        (they are redelivered, not confirmed). While the queues are being restored, a message
        of this connection (``generation``) came on a queue already reopened: it is confirmed;
        one whose connection is not known is not."""
        lifecycle = self._lifecycle
        state = lifecycle.state
        if generation is not None and generation != lifecycle.generation:
            return None
        restoring = lifecycle.recovery is _RESTORING and state is not SessionState.STOPPED
        if restoring and generation is None:
            return None
        if state is not SessionState.STARTED and state is not SessionState.STOPPING:
            if restoring:
                return None
            raise SessionStoppedError(f"cannot confirm: session is {state.value}")
        queue = self._table.queues.get(queue_id)
        if queue is None or (
            queue.state is not QueueState.OPENED and queue.state is not QueueState.CLOSING
        ):
            if restoring:
                return None
            raise UsageError(f"cannot confirm: queue {queue_id} is not open")
        if not queue.flags & FLAG_READ:
            raise UsageError(f"cannot confirm on {queue.uri}: it was not opened with read=True")
        return queue

    def flush(self, out: list[bytes]) -> None:
        """The CONFIRMs buffered since the last flush, as CONFIRM events appended to ``out``."""
        if self.confirms:
            builder = ConfirmEventBuilder()
            builder.add_many(self.confirms)
            out.extend(builder.finish())
            self.confirms.clear()

    def connection_dropped(self) -> None:
        """The connection dropped: confirms of its messages are moot, its credit restarts."""
        self.confirms.clear()
        self.credit.new_connection()

    def session_ended(self) -> None:
        """The session is over: nothing to confirm, no credit."""
        self.confirms.clear()
        self.credit.clear()

    def on_push(self, event: Event, now: float) -> None:
        """A PUSH event (received at ``now``, which a PUSH does not need): each message becomes
        a MessageReceived for its queue handle."""
        append = self._events.append
        max_size = self._options.current.max_decompressed_size
        new = tuple.__new__  # the records without their Python-level constructors
        wrap_properties = lazy_properties  # parsed on first access, not here
        # (wire queue id << 32 | subQueueId or subscription id) → its target, checked once per
        # event; int keys and no per-message tuples keep the garbage collector out of the loop.
        targets: dict[int, _Target] = {}
        # The previous message's target, reused while the queue id and the sub-queue infos (one
        # shared tuple per value within an event) stay the same: the usual case, one run.
        last_qid: int | None = None
        last_infos: object = None
        handle, uri, subscription, counters, credit = 0, "", None, None, None
        target: _Target | None = None
        window: DedupWindow | None = None  # the target's de-duplication window, if any
        generation = self._lifecycle.generation  # the connection these PUSHes came on
        received_record, message_record = _RECEIVED, _MESSAGE
        # The counters of the current target, added to it when the target changes (or the event
        # ends, however it ends).
        received = received_bytes = 0
        try:
            for push in decode_push(event, decompress=False):
                qid, infos = push.queue_id, push.sub_queue_infos
                if qid != last_qid or infos is not last_infos:
                    if counters is not None:
                        counters.received += received
                        counters.received_bytes += received_bytes
                        received = received_bytes = 0
                    if len(infos) > 1:  # one message for several subscriptions of this client
                        last_qid = counters = None
                        for info in infos:
                            stream = info.sub_queue_id
                            target = self._push_target(qid, stream, now)
                            self._deliver(push, target, now, generation)
                        continue
                    stream_id = infos[0].sub_queue_id if infos else 0
                    target = targets.get((qid << 32) | stream_id)
                    if target is None:
                        target = self._push_target(qid, stream_id, now)
                        targets[(qid << 32) | stream_id] = target
                    handle, uri, subscription = target.handle, target.uri, target.subscription
                    counters, credit, window = target.counters, target.credit, target.window
                    last_qid, last_infos = qid, infos
                guid, area, payload = push.guid, push.properties_area, push.payload
                size = len(area) + len(payload)
                if window is not None:
                    seen = window.pushed(guid, now, generation)
                    if seen:
                        assert target is not None
                        self._duplicate(target, guid, size, seen)
                        continue
                if credit is not None:
                    credit(guid, size, uri)
                received += 1
                received_bytes += len(payload)
                if push.compression:
                    message = CompressedMessage(handle, push, max_size, subscription)
                    append(new(received_record, (message,)))
                    continue
                properties = wrap_properties(area, push.schema_id != 0) if area else None
                append(
                    new(
                        received_record,
                        (
                            new(
                                message_record,
                                (handle, guid, payload, properties, None, subscription, size),
                            ),
                        ),
                    )
                )
        finally:
            if counters is not None:
                counters.received += received
                counters.received_bytes += received_bytes

    def _deliver(self, push: PushMessage, target: _Target, now: float, generation: int) -> None:
        """One message of a PUSH for several subscriptions of this client, for ``target``."""
        payload = push.payload
        size = len(push.properties_area) + len(payload)
        if target.window is not None:
            seen = target.window.pushed(push.guid, now, generation)
            if seen:
                self._duplicate(target, push.guid, size, seen)
                return
        if target.credit is not None:
            target.credit(push.guid, size, target.uri)
        counters = target.counters
        counters.received += 1
        counters.received_bytes += len(payload)
        message: Message | CompressedMessage
        if push.compression:
            message = CompressedMessage(
                target.handle,
                push,
                self._options.current.max_decompressed_size,
                target.subscription,
            )
        else:
            properties = push.properties if push.properties_area else None
            message = Message(
                target.handle, push.guid, payload, properties, None, target.subscription, size
            )
        self._events.append(MessageReceived(message))

    def _duplicate(self, target: _Target, guid: bytes, size: int, seen: int) -> None:
        """The window of ``target`` had ``guid``: not delivered. One the application holds
        (HELD) counts against the credit, as on the broker, until the application confirms
        it; one it confirmed (CONFIRMED) is confirmed again, on this connection."""
        target.counters.duplicates += 1
        if seen == HELD:
            if target.credit is not None:
                target.credit(guid, size, target.uri)
            return
        queue = self._table.queues[target.handle]
        self.confirms.append((queue.qid, guid, queue.sub_id))

    def _push_target(self, qid: int, stream_id: int, now: float) -> _Target:
        """Where a PUSH for (``qid``, ``stream_id``) received at ``now`` goes; ProtocolError if
        no queue opened for reading has that stream."""
        queue = self._table.route(qid, stream_id)
        if queue is None or not queue.flags & FLAG_READ:
            raise ProtocolError(
                f"PUSH for unknown queue id {qid} / subQueueId {stream_id}",
                path="PushHeader.queueId",
            )
        subscription = self._table.subscription_handles.get((qid, stream_id))
        credit = self.credit.pusher(queue.queue_id, stream_id)
        window = queue.dedup = window_for(queue.dedup, queue.options)
        if window is not None:
            window.expire(now)
        return _Target(queue.queue_id, queue.uri, subscription, queue.counters, credit, window)
