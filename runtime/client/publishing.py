"""Posting: buffering posts, packing them into PUT events, and resolving each post exactly once
(ACK, local NACK, timeout, cancel).
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from pybmq.client.collector import Collector
from pybmq.client.events import (
    WIRE_ACK_STATUS,
    Ack,
    AckReceived,
    AckStatus,
    built_in_order,
)
from pybmq.client.fsm import (
    HealthState,
    QueueState,
    RecoveryState,
    SessionState,
)
from pybmq.client.handshake import Negotiated
from pybmq.client.lifecycle import Lifecycle
from pybmq.client.options import SessionOptions, SharedOptions
from pybmq.client.postable import MAX_APP_DATA, as_bytes, check_size, compresses
from pybmq.client.queue_table import QueueTable
from pybmq.client.records import (
    FLAG_ACK,
    FLAG_WRITE,
    ZLIB,
    AckBatch,
    PendingPut,
    PutRun,
    QueueRecord,
    Sent,
)
from pybmq.errors import (
    PostBufferFullError,
    QueueSuspendedError,
    UsageError,
)
from pybmq.generated.wire_codec import (
    ACK_MESSAGE_CORRELATION_ID_MASK,
    ACK_MESSAGE_STATUS_MASK,
    ACK_MESSAGE_STATUS_SHIFT,
)
from pybmq.wire.batches import iter_ack_entries
from pybmq.wire.framing import Event
from pybmq.wire.guid import MessageGuidGenerator
from pybmq.wire.logbudget import worth_logging
from pybmq.wire.properties import MessageProperties
from pybmq.wire.put import PutEventBuilder

__all__ = ["Publisher"]

log = logging.getLogger("pybmq.client.engine")
# What on_ack builds per ACK, in the order it writes the values (checked at import).
_ACK = built_in_order(Ack, "guid", "queue_uri", "status", "correlation_id", "local", "reason")
_ACK_RECEIVED = built_in_order(AckReceived, "ack", "context")
# What a post keeps for its retransmission, built in this order (checked at import).
_SENT = built_in_order(Sent, "guid", "payload")
_new = tuple.__new__
_ACTIVE = HealthState.ACTIVE
_RESTORING = RecoveryState.RESTORING


class Publisher:
    """Posting: buffering posts, packing them into PUT events, and resolving each post exactly
    once (ACK, local NACK, timeout, cancel). It owns the posts buffered, the posts waiting for
    their ACK and their deadlines; the session's state it only reads."""

    def __init__(
        self,
        options: SharedOptions,
        lifecycle: Lifecycle,
        table: QueueTable,
        collector: Collector,
        guids: MessageGuidGenerator,
    ) -> None:
        self._options = options
        self._lifecycle = lifecycle
        self._table = table
        self._events = collector.events
        self._guids = guids
        # The broker advertised MPS:MESSAGE_PROPERTIES_EX; without it posts use the old format.
        self.extended_properties = True
        # Property mappings posted → (MessageProperties, wire size); see _properties.
        self.properties_cache: dict[object, tuple[MessageProperties, int]] = {}
        self.runs: list[PutRun] = []  # buffered for the next PUT event
        self.buffered = 0  # posts in the runs
        self.unacked: dict[bytes, PendingPut] = {}
        # (deadline, guids sent in one flush): ACK deadlines per batch, not per message.
        self.ack_deadlines: collections.deque[AckBatch] = collections.deque()
        self.unknown_acks = 0  # ACKs for GUIDs not (or no longer) awaited: logged rate-limited
        # The byte budget (SessionOptions.max_buffered_bytes): ``held_bytes`` of payloads, not
        # sent yet or sent and ``kept_bytes`` for retransmission until their ACK, plus the
        # ``socket_bytes`` the shell says its socket still holds. A post adds to one counter;
        # flushes and ACKs move them; rare changes (cancel, fail, requeue) count them again.
        self.held_bytes = 0
        self.kept_bytes = 0
        self.socket_bytes = 0

    def post(
        self,
        queue_id: int,
        payload: bytes,
        *,
        properties: Mapping[str, Any] | None = None,
        context: object = None,
        ack: bool = True,
        compression: str | None = None,
    ) -> bytes:
        """``ClientEngine.post``: every check first, so a bad post raises and changes nothing."""
        options = self._options.current
        queue = self._writable_queue(queue_id, 1, options)
        if type(payload) is not bytes:
            payload = as_bytes(payload)
        props, area = self._properties(properties) if properties else (None, 0)
        threshold = options.compression_threshold
        size = len(payload)
        if compression is None:
            compress = 0 < threshold <= size
        else:  # this message's own choice (Java's PutMessage.setCompressionAlgorithm)
            compress = compresses(compression)
            threshold = 1
        if not 0 < size <= MAX_APP_DATA - area:
            check_size(payload, area, compress, threshold)
        wants_ack = self._wants_ack(queue, ack, context)
        if self.held_bytes + self.socket_bytes >= options.max_buffered_bytes:
            raise PostBufferFullError(f"cannot post now: {self._full()}")
        guid = self._guids.generate()
        runs = self.runs
        run = runs[-1] if runs else None
        if (
            run is not None
            and run.queue_id == queue_id
            and run.properties is props
            and run.ack is wants_ack
            and run.compress is compress
        ):
            run.guids.append(guid)
            run.payloads.append(payload)
        else:
            run = PutRun(queue_id, props, wants_ack, compress, [guid], [payload])
            runs.append(run)
        self.buffered += 1
        self.held_bytes += size
        if wants_ack:
            # The payload is kept until the ACK only when it may have to be retransmitted.
            sent = _new(_SENT, (guid, payload)) if options.reconnect else None
            self.unacked[guid] = PendingPut(run, context, sent)
        return guid

    def post_many(
        self,
        queue_id: int,
        payloads: Sequence[bytes],
        *,
        properties: Mapping[str, Any] | None = None,
        context: object = None,
        ack: bool = True,
    ) -> list[bytes]:
        """``ClientEngine.post_many``: all or nothing, checked once for the batch."""
        options = self._options.current
        count = len(payloads)
        queue = self._writable_queue(queue_id, count, options)
        props, area = self._properties(properties) if properties else (None, 0)
        room = MAX_APP_DATA - area
        threshold = options.compression_threshold
        wants_ack = self._wants_ack(queue, ack, context)
        if not all(type(p) is bytes and 0 < len(p) <= room for p in payloads):
            payloads = [p if type(p) is bytes else as_bytes(p) for p in payloads]
            for payload in payloads:
                if not 0 < len(payload) <= room:
                    check_size(payload, area, 0 < threshold <= len(payload), threshold)
        if self.held_bytes + self.socket_bytes >= options.max_buffered_bytes:
            raise PostBufferFullError(f"cannot post now: {self._full()}")
        self.held_bytes += sum(map(len, payloads))
        guids = self._guids.generate_many(count)
        if threshold:  # each payload's own decision: runs cut where it changes
            runs = self._runs_by_compression(queue_id, props, wants_ack, guids, payloads, threshold)
        else:
            runs = [PutRun(queue_id, props, wants_ack, False, list(guids), list(payloads))]
        self.runs += runs
        self.buffered += count
        if wants_ack:
            if options.reconnect:
                pending = [
                    PendingPut(run, context, _new(_SENT, sent))
                    for run in runs
                    for sent in zip(run.guids, run.payloads)  # noqa: B905 - same length
                ]
            else:
                pending = [PendingPut(run, context, None) for run in runs for _ in run.payloads]
            self.unacked.update(zip(guids, pending))  # noqa: B905 - same length
        return guids

    @staticmethod
    def _runs_by_compression(
        queue_id: int,
        props: MessageProperties | None,
        ack: bool,
        guids: list[bytes],
        payloads: Sequence[bytes],
        threshold: int,
    ) -> list[PutRun]:
        runs: list[PutRun] = []
        run: PutRun | None = None
        for guid, payload in zip(guids, payloads):  # noqa: B905 - same length
            compress = threshold <= len(payload)
            if run is None or run.compress != compress:
                run = PutRun(queue_id, props, ack, compress, [], [])
                runs.append(run)
            run.guids.append(guid)
            run.payloads.append(payload)
        return runs

    def _writable_queue(self, queue_id: int, count: int, options: SessionOptions) -> QueueRecord:
        """The queue ``count`` posts go to, if the session and the queue can take them now."""
        lifecycle = self._lifecycle
        if lifecycle.recovery is _RESTORING and lifecycle.state is not SessionState.STOPPED:
            if self.buffered + count > options.max_buffered_posts:
                raise PostBufferFullError(
                    f"cannot post while reconnecting: {self.buffered} posts already held "
                    f"(max_buffered_posts={options.max_buffered_posts})"
                )
        elif lifecycle.state is not SessionState.STARTED:
            lifecycle.require_started("post")
        queue = self._table.queues.get(queue_id)
        if queue is None or queue.state is not QueueState.OPENED:
            state = queue.state.value if queue else "unknown"
            raise UsageError(f"cannot post: queue {queue_id} is not open ({state})")
        if not queue.flags & FLAG_WRITE:
            raise UsageError(f"cannot post: queue {queue.uri} was not opened with write=True")
        if queue.health is not _ACTIVE:
            raise QueueSuspendedError(f"cannot post: {queue.uri} is suspended (host unhealthy)")
        return queue

    @property
    def unsent_bytes(self) -> int:
        """Payload bytes posted and not sent yet."""
        return self.held_bytes - self.kept_bytes

    def room(self, count: int) -> str | None:
        """Why ``count`` more posts cannot be taken now, or None when they can: the byte budget
        (``held_bytes`` plus ``socket_bytes`` must be under ``max_buffered_bytes``) and, while
        reconnecting, ``max_buffered_posts``."""
        options = self._options.current
        if self.held_bytes + self.socket_bytes >= options.max_buffered_bytes:
            return self._full()
        lifecycle = self._lifecycle
        if (
            lifecycle.recovery is _RESTORING
            and lifecycle.state is not SessionState.STOPPED
            and self.buffered + count > options.max_buffered_posts
        ):
            return (
                f"reconnecting: {self.buffered} posts already held "
                f"(max_buffered_posts={options.max_buffered_posts})"
            )
        return None

    def output_buffered(self, size: int) -> None:
        """The shell's socket holds ``size`` bytes of what was sent: they count against the byte
        budget until the next report."""
        self.socket_bytes = size

    def _full(self) -> str:
        return (
            f"{self.held_bytes + self.socket_bytes} bytes held for the broker "
            f"({self.unsent_bytes} not sent, {self.kept_bytes} kept until their ACK, "
            f"{self.socket_bytes} in the socket; "
            f"max_buffered_bytes={self._options.current.max_buffered_bytes})"
        )

    def recount(self) -> None:
        """``held_bytes`` and ``kept_bytes`` counted again from the posts themselves (after
        the rare changes that move many posts at once: cancel, fail, requeue)."""
        unsent = sum(sum(map(len, run.payloads)) for run in self.runs)
        # A batch's kept payloads count until its last ACK (see AckBatch).
        kept = sum(batch.kept for batch in self.ack_deadlines if batch.remaining > 0)
        self.kept_bytes = kept
        self.held_bytes = unsent + kept

    @staticmethod
    def _wants_ack(queue: QueueRecord, ack: bool, context: object) -> bool:
        wants_ack = ack and bool(queue.flags & FLAG_ACK)
        if context is not None and not wants_ack:
            raise UsageError(
                f"{queue.uri} was opened with ack=False: no ACK will come to wait for or call back"
            )
        return wants_ack

    def _properties(self, properties: Mapping[str, Any]) -> tuple[MessageProperties, int]:
        """``properties`` as MessageProperties, and the size of their wire form (encoding them
        here makes bad ones fail at the call). Plain mappings are cached by content, so a loop
        posting the same properties shares one object, encoded once (the builder's fast path)."""
        if type(properties) is not dict and isinstance(properties, MessageProperties):
            return properties, len(properties.encode())
        cache = self.properties_cache
        types = tuple(map(type, properties.values()))
        key: tuple[object, ...] | None = None
        hit = None
        # The types are part of the key: True == 1, but a BOOL is not an INT32. Not cached:
        # (type, value) pairs (inside a tuple, True and 1 would meet again) and unhashable values.
        if tuple not in types:
            try:
                key = (tuple(properties.items()), types)
                hit = cache.get(key)
            except TypeError:  # an unhashable value (a bytearray)
                key = None
        if hit is None:
            props = MessageProperties(properties)
            hit = (props, len(props.encode()))
            if key is not None and hit[1] <= _MAX_CACHED_AREA:
                if len(cache) >= _PROPERTIES_CACHE_SIZE:
                    cache.clear()
                cache[key] = hit
        return hit

    def flush(self, out: list[bytes], now: float) -> None:
        """The posts buffered since the last flush, as PUT events appended to ``out`` (held
        while the session restores its queues); their ACK deadlines run from ``now``."""
        if self.runs and self._lifecycle.recovery is not _RESTORING:
            self._flush_runs(out, now)

    def _flush_runs(self, out: list[bytes], now: float) -> None:
        # Whether a post is compressed was decided when it was posted (the session's threshold
        # or the post's own ``compression``): the builder compresses every one marked so.
        options = self._options.current
        builder = PutEventBuilder(options.max_put_event_bytes, compression_threshold=1)
        queues = self._table.queues
        extended = self.extended_properties
        acked: list[bytes] = []
        # Sent payloads stop counting against the budget unless kept for retransmission.
        retains = options.reconnect
        released = kept = 0
        runs = self.runs
        for run in runs:
            queue = queues[run.queue_id]
            qid = queue.qid
            guids, payloads, props, wants_ack = run.guids, run.payloads, run.properties, run.ack
            if wants_ack:
                acked += guids
            if run.compress:
                for guid, payload in zip(guids, payloads):  # noqa: B905 - same length
                    builder.add(
                        qid, payload, guid=guid, properties=props, ack_requested=wants_ack,
                        compression=ZLIB, extended_properties=extended,
                    )  # fmt: skip
            else:
                # The fast path: the run is packed in one call.
                builder.add_many(
                    qid, payloads, guids, properties=props, ack_requested=wants_ack,
                    extended_properties=extended,
                )  # fmt: skip
            counters = queue.counters  # stats: once per run, not per message
            run_bytes = sum(map(len, payloads))
            counters.posted += len(guids)
            counters.posted_bytes += run_bytes
            if wants_ack and retains:
                kept += run_bytes
            else:
                released += run_bytes
            run.sent()
        out.extend(builder.finish())
        runs.clear()
        self.buffered = 0
        self.held_bytes -= released
        self.kept_bytes += kept
        if acked:
            batch = AckBatch(now + options.ack_timeout, acked, kept)
            unacked = self.unacked
            for guid in acked:
                unacked[guid].batch = batch
            self.ack_deadlines.append(batch)

    def on_ack(self, event: Event, now: float) -> None:
        """An ACK event, received at ``now``: each entry resolves its post (unknown GUIDs are
        dropped)."""
        pop = self.unacked.pop
        queues = self._table.queues
        append = self._events.append
        statuses = WIRE_ACK_STATUS
        unknown = AckStatus.UNKNOWN
        new = tuple.__new__  # the records without their Python-level constructors
        ack_record, received_record = _ACK, _ACK_RECEIVED
        status_shift, status_mask = ACK_MESSAGE_STATUS_SHIFT, ACK_MESSAGE_STATUS_MASK
        correlation_mask = ACK_MESSAGE_CORRELATION_ID_MASK
        # Stats, kept off the per-ACK path: ACKs are counted per run of ACKs of one queue and
        # one flush (whose posts share a send time, so one latency sample, weighted by the run's
        # length, stands for the run); a NACK moves one count from ACKs to NACKs.
        run_queue: QueueRecord | None = None
        run_batch: AckBatch | None = None
        run_length = 0
        # now - (deadline - ack_timeout)
        sent_offset = now + self._options.current.ack_timeout
        for word, guid, _qid in iter_ack_entries(event):
            pending = pop(guid, None)
            if pending is None:
                self.unknown_acks += 1
                if worth_logging(self.unknown_acks):
                    log.info(
                        "ACK for unknown or expired GUID %s dropped (#%d)",
                        guid.hex(),
                        self.unknown_acks,
                    )
                continue
            batch = pending.batch
            if batch is not None:
                batch.remaining -= 1
                if not batch.remaining:  # its last ACK: its payloads are no longer kept
                    self.held_bytes -= batch.kept
                    self.kept_bytes -= batch.kept
            queue = queues.get(pending.run.queue_id)
            if queue is not run_queue or batch is not run_batch:
                if run_queue is not None:
                    _count_acks(run_queue, run_batch, run_length, sent_offset)
                run_queue, run_batch, run_length = queue, batch, 0
            run_length += 1
            code = (word >> status_shift) & status_mask
            if queue is None:
                uri = ""
            else:
                uri = queue.uri
                if code:
                    counters = queue.counters
                    counters.nacks += 1
                    counters.acks -= 1
            ack = new(
                ack_record,
                (guid, uri, statuses.get(code, unknown), word & correlation_mask, False, ""),
            )
            append(new(received_record, (ack, pending.context)))
        if run_queue is not None:
            _count_acks(run_queue, run_batch, run_length, sent_offset)
        batches = self.ack_deadlines
        while batches and batches[0].remaining <= 0:
            batches.popleft()

    def cancel(
        self, queue: QueueRecord, status: AckStatus, reason: str, *, held: bool = True
    ) -> None:
        """Resolve every post to ``queue`` still pending (each exactly once); ``held``: and
        drop the ones still buffered."""
        for guid, pending in list(self.unacked.items()):
            if pending.run.queue_id == queue.queue_id:
                del self.unacked[guid]
                if pending.batch is not None:
                    pending.batch.remaining -= 1
                ack = Ack(guid, queue.uri, status, local=True, reason=reason)
                self._events.append(AckReceived(ack, pending.context))
        if held:
            self.runs = [run for run in self.runs if run.queue_id != queue.queue_id]
            self.buffered = sum(len(run.guids) for run in self.runs)
        self.recount()

    def fail_all(self, status: AckStatus, reason: str) -> None:
        """Every post still pending fails (the session is over)."""
        # Posts still buffered (never sent) are in unacked too, so they fail the same way.
        queues = self._table.queues
        for guid, pending in self.unacked.items():
            queue = queues.get(pending.run.queue_id)
            ack = Ack(guid, queue.uri if queue else "", status, local=True, reason=reason)
            self._events.append(AckReceived(ack, pending.context))
        self.unacked.clear()
        self.ack_deadlines.clear()
        self.runs.clear()
        self.buffered = 0
        self.held_bytes = self.kept_bytes = self.socket_bytes = 0

    def expire(self, now: float) -> None:
        """Posts whose ACK deadline passed resolve as TIMEOUT."""
        batches = self.ack_deadlines
        queues = self._table.queues
        while batches and batches[0].deadline <= now:
            batch = batches.popleft()
            if batch.remaining > 0:  # its kept payloads were still counted
                self.held_bytes -= batch.kept
                self.kept_bytes -= batch.kept
            for guid in batch.guids:
                pending = self.unacked.pop(guid, None)
                if pending is not None:
                    queue = queues.get(pending.run.queue_id)
                    reason = f"no ACK within {self._options.current.ack_timeout:g}s"
                    ack = Ack(
                        guid,
                        queue.uri if queue else "",
                        AckStatus.TIMEOUT,
                        local=True,
                        reason=reason,
                    )
                    self._events.append(AckReceived(ack, pending.context))

    def next_deadline(self) -> float | None:
        return self.ack_deadlines[0].deadline if self.ack_deadlines else None

    def negotiated(self, outcome: Negotiated) -> None:
        """Whether the broker reads MESSAGE_PROPERTIES_EX (else posts carry old-format
        properties)."""
        self.extended_properties = outcome.extended_properties

    def connection_dropped(self, reason: str, first: bool) -> None:
        """The connection is gone; the session reconnects. On the first drop, the posts sent and
        not acknowledged are to be sent again (later drops find them held already)."""
        if first:
            resent = self.requeue_unacked()
            log.warning("connection dropped (%s): %d posts to retransmit", reason, resent)

    def session_ended(self, reason: str) -> None:
        """The session is over: every post still pending fails as NOT_CONNECTED."""
        self.fail_all(AckStatus.NOT_CONNECTED, reason)

    def requeue_unacked(self) -> int:
        """The connection dropped: every sent, unacknowledged post goes back in front of the
        held ones (same GUIDs) to be sent again once the queues are reopened."""
        resend: list[PutRun] = []
        run: PutRun | None = None
        for guid, pending in self.unacked.items():
            if pending.batch is None or pending.sent is None:
                continue  # held (not sent yet), or not kept (no reconnect)
            sent = pending.run
            if run is None or not run.takes(
                sent.queue_id, sent.properties, sent.ack, sent.compress
            ):
                run = PutRun(sent.queue_id, sent.properties, sent.ack, sent.compress, [], [])
                resend.append(run)
            run.guids.append(guid)
            run.payloads.append(pending.sent.payload)
            pending.run = run
        for pending in self.unacked.values():
            pending.batch = None
        self.ack_deadlines.clear()
        count = sum(len(run.guids) for run in resend)
        self.runs[:0] = resend
        self.buffered += count
        self.socket_bytes = 0  # that connection's socket is gone
        self.recount()
        return count


# PutHeader::k_MAX_PAYLOAD_SIZE_SOFT: the application data as sent (properties + payload, after
# compression). The payload alone is held to it too, so a consumer can always inflate it.
# Distinct property mappings remembered per engine (the cache is emptied when full), each only
# if its wire form is small: the cache holds at most a few hundred KiB.
_PROPERTIES_CACHE_SIZE = 256
_MAX_CACHED_AREA = 1024


def _count_acks(queue: QueueRecord, batch: AckBatch | None, count: int, sent_offset: float) -> None:
    """Stats for a run of ``count`` answers to posts of one queue and one flush (``batch``)."""
    counters = queue.counters
    counters.acks += count
    if batch is not None:
        counters.ack_latency.add(sent_offset - batch.deadline, count)
