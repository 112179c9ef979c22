"""A client session's data plane on the simulated broker: PUTs stored and answered (ACK, NACK,
ACKs held back by a fault hook), CONFIRMs releasing room, and PUSHes batched until the session's
output is taken. A part held by ``ClientSession`` (its ``flow``); the event codecs it uses are in
``pybmq.sim.dataplane``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pybmq.generated.wire_codec import AckStatus
from pybmq.sim.config import BrokerHooks
from pybmq.sim.dataplane import (
    ACK_REQUESTED,
    MESSAGE_PROPERTIES,
    AckEntry,
    ack_events,
    push_run_events,
    put_problem,
    read_confirm_event,
    read_put_event,
)
from pybmq.sim.limits import worth_logging
from pybmq.sim.queues import SUCCESS, Consumer, Run, SimQueue, StoredMessage
from pybmq.sim.routing import RoutingMode
from pybmq.wire.framing import Event

if TYPE_CHECKING:
    from pybmq.sim.session import ClientSession

__all__ = ["UNKNOWN", "MessageFlow"]

log = logging.getLogger("pybmq.sim")
UNKNOWN = int(AckStatus.UNKNOWN)


class MessageFlow:
    """What one session's PUT, CONFIRM and PUSH traffic leaves to be sent or delivered."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session
        self.acks: list[AckEntry] = []
        self.pushes: list[Run] = []  # what to push, per consumer, in order
        self.delayed_acks: list[tuple[float, list[AckEntry]]] = []  # (when due, ACKs)
        self.touched: set[SimQueue] = set()  # queues with room freed by CONFIRMs, to deliver
        self.nack_count = 0  # PUTs refused (each logged only as worth_logging allows)
        # GUIDs with an ACK (or NACK) in ``acks``, not yet sent: as on a broker, another PUT
        # with one of them gets no answer of its own (the one pending answers both).
        self.answering: set[bytes] = set()

    # -- incoming -----------------------------------------------------------------------------

    def put(self, event: Event, now: float) -> None:
        """Store each message and queue its ACK; NACK what a broker refuses. The hot path: the
        handle is looked up once per run of messages to one queue id, and stored messages are
        delivered once per event (after all of them are stored), not once per message.

        As a broker: an empty message ends the event (it and the messages after it are dropped
        without an answer, the connection kept: the broker's ``#CORRUPTED_EVENT``), and a PUT
        whose GUID already has an answer waiting to be sent gets none of its own (the broker's
        GUID collision; the message itself is a duplicate and is not stored twice)."""
        session = self.session
        broker = session.broker
        stats = broker.stats
        hooks = broker.hooks if type(broker.hooks) is not BrokerHooks else None
        acks = self.acks
        answering = self.answering
        handles = session.handles
        config = broker.config
        dedup_window = config.deduplication_time_ms / 1000.0
        dedup_max = config.deduplication_max_guids
        limit_messages = config.queue_limit_messages
        limit_bytes = config.queue_limit_bytes
        old_properties_only = not config.extended_properties
        success = SUCCESS
        puts = read_put_event(event)
        stats.puts += len(puts)
        stored: list[SimQueue] = []  # queues that got messages, to deliver from at the end
        last_queue_id = None
        refusal: str | None = None
        queue: SimQueue | None = None
        acked = 0
        for put in puts:
            queue_id, guid, flags, compression, _crc, schema_id, area, payload, _o, _h, _i, _g = put
            if not payload and not area:
                session.improper(
                    f"invalid PUT event: an empty message (GUID {guid.hex()}); it and the "
                    "rest of the event are dropped"
                )
                break
            if queue_id != last_queue_id:
                last_queue_id = queue_id
                handle = handles.get((queue_id, 0))  # writers always use the default subId
                if handle is None:
                    refusal, queue = "unknown queue id", None
                elif not handle.writable:
                    refusal, queue = "queue not opened for writing", None
                else:
                    refusal, queue = None, handle.queue
                    if queue not in stored:
                        stored.append(queue)
            if compression:
                stats.compressed_puts += 1
            if refusal is not None:
                problem: str | None = refusal
            elif old_properties_only and schema_id:
                problem = "extended message properties (schema id), which this broker does not take"
            else:
                problem = put_problem(put)
            status = success
            if problem is None:
                assert queue is not None
                message = StoredMessage(
                    guid, area, payload, flags & MESSAGE_PROPERTIES != 0, compression, schema_id
                )
                status = queue.admit(
                    message, now, dedup_window, dedup_max, limit_messages, limit_bytes
                )
                if status != success:
                    problem = (
                        f"the simulator's memory budget is spent ({AckStatus(status).name})"
                        if queue.budget.spent
                        else f"queue over its quota ({AckStatus(status).name})"
                    )
            if problem is not None:
                status = status or UNKNOWN
                self._nack(guid, queue_id, problem)
            if hooks is not None:
                status = hooks.ack_status(session, queue.uri if queue else "", guid, status)
            if status != success or flags & ACK_REQUESTED:
                if guid in answering:
                    session.improper(f"a PUT with GUID {guid.hex()}, whose answer is pending")
                    continue
                answering.add(guid)
                acks.append((status, 0, guid, queue_id))
                if status != success:
                    stats.nacks += 1
                else:
                    acked += 1
        stats.acks += acked
        dispatch = broker.dispatch
        for queue in stored:
            dispatch(queue.deliver())

    def _nack(self, guid: bytes, queue_id: int, problem: str) -> None:
        self.nack_count += 1
        if worth_logging(self.nack_count):
            log.warning(
                "session %d: NACK GUID %s, queue id %d: %s (#%d)",
                self.session.session_id,
                guid.hex(),
                queue_id,
                problem,
                self.nack_count,
            )

    def confirm(self, event: Event) -> None:
        """Release confirmed messages; delivery into the freed room waits for the end of the
        received chunk (``deliver_touched``), so many one-message CONFIRM events make one PUSH.
        The handle is looked up once per run of entries with the same (qId, subId), and the
        quota is released once per run."""
        handles = self.session.handles
        last: tuple[int, int] | None = None
        consumers: list[Consumer] = []
        queue: SimQueue | None = None
        released: list[StoredMessage] = []
        for index, (queue_id, guid, sub_queue_id) in enumerate(read_confirm_event(event)):
            if last is None or queue_id != last[0] or sub_queue_id != last[1]:
                if released:
                    assert queue is not None
                    self._released(queue, released)
                    released = []
                # Keyed by subId, as a broker keys it (the official SDK confirms with the subId
                # even when the PUSH carried a subscription id).
                last = (queue_id, sub_queue_id)
                handle = handles.get(last)
                if handle is None or not handle.readable or not handle.consumers:
                    last = None
                    self.session.improper(
                        f"CONFIRM #{index} for queue id {queue_id}, subQueueId "
                        f"{sub_queue_id}, which is not open for reading (or not configured)"
                    )
                    continue
                queue = handle.queue
                # Broadcast: at most once, nothing is kept to confirm.
                consumers = (
                    [] if queue.mode is RoutingMode.BROADCAST else [*handle.consumers.values()]
                )
                if not consumers:
                    continue
            elif not consumers:
                continue
            for consumer in consumers:
                message = consumer.unconfirmed.pop(guid, None)
                if message is not None:
                    consumer.unconfirmed_bytes -= message.size
                    released.append(message)
                    break
            else:
                # Confirmed twice, never delivered here, or delivered before a broker restart.
                self.session.improper(
                    f"CONFIRM #{index} of GUID {guid.hex()}, which is not an unconfirmed "
                    f"message of queue id {queue_id}"
                )
        if released:
            assert queue is not None
            self._released(queue, released)

    def _released(self, queue: SimQueue, messages: list[StoredMessage]) -> None:
        """``messages`` were confirmed in ``queue`` (by one app)."""
        self.session.broker.stats.confirms += len(messages)
        queue.release(messages)
        self.touched.add(queue)

    def deliver_touched(self) -> None:
        """Deliver into the room that CONFIRMs and requests freed since the last call."""
        if self.touched:
            touched, self.touched = self.touched, set()
            dispatch = self.session.broker.dispatch
            for queue in touched:
                dispatch(queue.deliver())

    # -- outgoing -----------------------------------------------------------------------------

    def push(self, consumer: Consumer, messages: list[StoredMessage]) -> None:
        """``messages`` were delivered to ``consumer``: PUSH them with the next output."""
        broker = self.session.broker
        broker.stats.pushes += len(messages)
        self.pushes.append((consumer, messages))
        broker.mark(self.session)

    def forget(self, consumer: Consumer) -> None:
        """Drop the PUSHes not yet written for a detached consumer (its messages went back)."""
        self.pushes = [run for run in self.pushes if run[0] is not consumer]

    def flush(self, out: list[bytes], now: float) -> None:
        """Append the pending ACK and PUSH events to ``out`` (ACKs a hook delays are held until
        ``due_acks``)."""
        session = self.session
        if self.acks:
            delay = session.broker.hooks.ack_delay(session)
            if delay > 0:
                self.delayed_acks.append((now + delay, self.acks))
            else:
                out.extend(ack_events(self.acks))
            self.acks = []
            self.answering.clear()
        if self.pushes:
            runs = [(c.queue_id, c.sub_queue_id, messages) for c, messages in self.pushes]
            out.extend(push_run_events(runs, not session.extended_properties))
            self.pushes = []

    def due_acks(self, now: float) -> list[list[AckEntry]]:
        """The held-back ACK batches due by ``now``, oldest first (removed)."""
        due = []
        delayed = self.delayed_acks
        while delayed and delayed[0][0] <= now:
            due.append(delayed.pop(0)[1])
        return due

    def next_deadline(self) -> float | None:
        """When the oldest held-back ACKs are due."""
        return self.delayed_acks[0][0] if self.delayed_acks else None
