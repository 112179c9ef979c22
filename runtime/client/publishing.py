"""Posting: buffering posts, packing them into PUT events, and resolving each post exactly once
(ACK, local NACK, timeout, cancel).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from pybmq.client.core import EngineCore
from pybmq.client.events import (
    Ack,
    AckReceived,
    AckStatus,
)
from pybmq.client.fsm import (
    HealthState,
    QueueState,
    SessionState,
)
from pybmq.client.records import (
    FLAG_ACK,
    ZLIB,
    AckBatch,
    PendingPut,
    QueueRecord,
)
from pybmq.errors import (
    PostBufferFullError,
    QueueSuspendedError,
    UsageError,
)
from pybmq.wire.batches import ConfirmEventBuilder, iter_ack
from pybmq.wire.framing import Event
from pybmq.wire.properties import MessageProperties
from pybmq.wire.put import PutEventBuilder

log = logging.getLogger("pybmq.client.engine")
_ACTIVE = HealthState.ACTIVE


class Publishing(EngineCore):
    """Posting: buffering posts, packing them into PUT events, and resolving each post exactly once"""

    def post(
        self,
        queue_id: int,
        payload: bytes,
        now: float,
        *,
        properties: Mapping[str, Any] | None = None,
        context: object = None,
        ack: bool = True,
    ) -> bytes:
        """Buffer one message for the next PUT event; returns its GUID. ``context`` comes back
        with the ACK (or local NACK) for it. ``ack=False`` asks the broker for no ACK for this
        post even on a queue opened with ACKs (as the official SDK does for a post without
        ``on_ack``); such a post is not tracked, so it is not retransmitted after a reconnect."""
        if self._restoring and self.state is not SessionState.STOPPED:
            if len(self._puts) >= self.options.max_buffered_posts:
                raise PostBufferFullError(
                    f"cannot post while reconnecting: {len(self._puts)} posts already held "
                    f"(max_buffered_posts={self.options.max_buffered_posts})"
                )
        elif self.state is not SessionState.STARTED:
            self._require_started("post")
        queue = self.queues.get(queue_id)
        if queue is None or queue.state is not QueueState.OPENED:
            state = queue.state.value if queue else "unknown"
            raise UsageError(f"cannot post: queue {queue_id} is not open ({state})")
        if not queue.writable:
            raise UsageError(f"cannot post: queue {queue.uri} was not opened with write=True")
        if queue.health is not _ACTIVE:
            raise QueueSuspendedError(f"cannot post: {queue.uri} is suspended (host unhealthy)")
        if not payload:
            raise UsageError("cannot post an empty payload")
        if not isinstance(payload, (bytes, bytearray, memoryview)):
            raise UsageError(f"payload must be bytes, not {type(payload).__name__}")
        if properties:
            props = (
                properties
                if isinstance(properties, MessageProperties)
                else MessageProperties(properties)
            )
        else:
            props = None
        threshold = self.options.compression_threshold
        compress = bool(threshold) and len(payload) >= threshold
        wants_ack = ack and bool(queue.flags & FLAG_ACK)
        if context is not None and not wants_ack:
            raise UsageError(
                f"{queue.uri} was opened with ack=False: no ACK will come to wait for or call back"
            )
        guid = self._guids.generate()
        self._now = now  # the flush that sends it starts its ACK deadline (and latency) here
        put = (queue_id, guid, payload, props, wants_ack, compress)
        self._puts.append(put)
        if wants_ack:
            # The payload is kept until the ACK only when it may have to be retransmitted.
            self._unacked[guid] = PendingPut(
                queue_id, context, put if self.options.reconnect else None
            )
        return guid

    @property
    def unacked_count(self) -> int:
        return len(self._unacked)

    @property
    def pending_ack_batches(self) -> int:
        """Flushes that still have unacknowledged posts (each holds one ACK deadline)."""
        return len(self._ack_deadlines)

    @property
    def buffered_count(self) -> int:
        """Posts and confirms waiting for the next ``data_to_send()``."""
        return len(self._puts) + len(self._confirms)

    def _flush_data(self) -> None:
        if self._puts and not self._restoring:
            self._flush_puts()
        if self._confirms:
            builder = ConfirmEventBuilder()
            builder.add_many(self._confirms)
            self._out.extend(builder.finish())
            self._confirms.clear()

    def _flush_puts(self) -> None:
        threshold = self.options.compression_threshold or 1
        builder = PutEventBuilder(self.options.max_put_event_bytes, compression_threshold=threshold)
        queues = self.queues
        extended = self.extended_properties
        acked: list[bytes] = []
        puts = self._puts
        i, n = 0, len(puts)
        while i < n:
            queue_id, guid, payload, props, wants_ack, compress = puts[i]
            queue = queues[queue_id]
            qid = queue.qid
            if wants_ack:
                acked.append(guid)
            if compress:
                counters = queue.counters
                counters.posted += 1
                counters.posted_bytes += len(payload)
                builder.add(
                    qid, payload, guid=guid, properties=props, ack_requested=wants_ack,
                    compression=ZLIB, extended_properties=extended,
                )  # fmt: skip
                i += 1
                continue
            # The fast path: a run of uncompressed posts to one queue sharing one properties
            # object (the common case: a loop posting to one queue) is packed in one call.
            j = i + 1
            while j < n:
                other = puts[j]
                if (
                    other[0] != queue_id
                    or other[3] is not props
                    or other[4] != wants_ack
                    or other[5]
                ):
                    break
                if wants_ack:
                    acked.append(other[1])
                j += 1
            run = puts[i:j]
            payloads = [p[2] for p in run]
            builder.add_many(
                qid, payloads, [p[1] for p in run], properties=props,
                ack_requested=wants_ack, extended_properties=extended,
            )  # fmt: skip
            counters = queue.counters  # stats: once per run, not per message
            counters.posted += j - i
            counters.posted_bytes += sum(map(len, payloads))
            i = j
        self._out.extend(builder.finish())
        puts.clear()
        if acked:
            batch = AckBatch(self._now + self.options.ack_timeout, acked)
            unacked = self._unacked
            for guid in acked:
                unacked[guid].batch = batch
            self._ack_deadlines.append(batch)

    def _on_ack(self, event: Event) -> None:
        pop = self._unacked.pop
        queues = self.queues
        append = self._events.append
        status_of = AckStatus.from_wire
        # Stats, kept off the per-ACK path: ACKs are counted per run of ACKs of one queue and
        # one flush (whose posts share a send time, so one latency sample, weighted by the run's
        # length, stands for the run); a NACK moves one count from ACKs to NACKs.
        run_queue: QueueRecord | None = None
        run_batch: AckBatch | None = None
        run_length = 0
        sent_offset = self._now + self.options.ack_timeout  # now - (deadline - ack_timeout)
        for _reserved, status, correlation_id, guid, _qid in iter_ack(event):
            pending = pop(guid, None)
            if pending is None:
                log.info("ACK for unknown or expired GUID %s dropped", guid.hex())
                continue
            batch = pending.batch
            if batch is not None:
                batch.remaining -= 1
            queue = queues.get(pending.queue_id)
            if queue is not run_queue or batch is not run_batch:
                if run_queue is not None:
                    _count_acks(run_queue, run_batch, run_length, sent_offset)
                run_queue, run_batch, run_length = queue, batch, 0
            run_length += 1
            if queue is None:
                uri = ""
            else:
                uri = queue.uri
                if status:
                    counters = queue.counters
                    counters.nacks += 1
                    counters.acks -= 1
            append(AckReceived(Ack(guid, uri, status_of(status), correlation_id), pending.context))
        if run_queue is not None:
            _count_acks(run_queue, run_batch, run_length, sent_offset)
        batches = self._ack_deadlines
        while batches and batches[0].remaining <= 0:
            batches.popleft()

    def _cancel_posts(self, queue: QueueRecord, status: AckStatus, reason: str) -> None:
        """Resolve every post to ``queue`` still pending or held (each exactly once)."""
        for guid, pending in list(self._unacked.items()):
            if pending.queue_id == queue.queue_id:
                del self._unacked[guid]
                if pending.batch is not None:
                    pending.batch.remaining -= 1
                ack = Ack(guid, queue.uri, status, local=True, reason=reason)
                self._events.append(AckReceived(ack, pending.context))
        self._puts = [p for p in self._puts if p[0] != queue.queue_id]

    def _nack_all(self, status: AckStatus, reason: str) -> None:
        # Posts still buffered (never sent) are in _unacked too, so they fail the same way.
        for guid, pending in self._unacked.items():
            queue = self.queues.get(pending.queue_id)
            ack = Ack(guid, queue.uri if queue else "", status, local=True, reason=reason)
            self._events.append(AckReceived(ack, pending.context))
        self._unacked.clear()
        self._ack_deadlines.clear()


def _count_acks(queue: QueueRecord, batch: AckBatch | None, count: int, sent_offset: float) -> None:
    """Stats for a run of ``count`` answers to posts of one queue and one flush (``batch``)."""
    counters = queue.counters
    counters.acks += count
    if batch is not None:
        counters.ack_latency.add(sent_offset - batch.deadline, count)
