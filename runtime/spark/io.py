"""The queue work of one Spark task: post with ACK tracking, or consume until done (no pyspark).

Every Spark task (a write partition, a batch-read partition) opens its OWN blocking
:class:`pybmq.Session` inside the executor process: sessions hold sockets and threads, which
cannot be pickled from the driver, and one session per task keeps failure and retry per task.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pybmq.client.aio_queue import ReceivedMessage
from pybmq.client.events import Ack
from pybmq.client.options import QueueOptions, SessionOptions
from pybmq.client.sync import Queue, Session
from pybmq.errors import DeliveryError, PybmqError
from pybmq.spark.options import ReadOptions, Target, WriteOptions
from pybmq.wire.properties import MessageProperties, PropertyType

if TYPE_CHECKING:  # rows needs pyarrow, which a probe (in a planning process) does not
    from pybmq.spark.rows import Outgoing, RowBuffer, Typed

__all__ = [
    "POST_CHUNK",
    "WriteResult",
    "consume",
    "open_consumer",
    "open_session",
    "post_all",
    "probe",
    "row_values",
    "tracing_options",
    "typed_properties",
]

log = logging.getLogger("pybmq.spark")

_TYPE_NAMES = {ptype: ptype.name for ptype in PropertyType}


def typed_properties(properties: Any) -> dict[str, Typed]:
    """A received message's properties as name → (BlazingMQ type name, value)."""
    if not properties:
        return {}
    if isinstance(properties, MessageProperties):
        names = _TYPE_NAMES  # a dict lookup: an enum member's ``.name`` costs ~10x more per row
        return {name: (names[ptype], value) for name, ptype, value in properties.typed_items()}
    # A plain mapping carries no wire types: go by the Python type, as the encoder would.
    return {
        name: (MessageProperties({name: value}).type_of(name).name, value)
        for name, value in properties.items()
    }


def row_values(message: ReceivedMessage) -> tuple[bytes, dict[str, Typed]]:
    """The payload and typed properties of ``message`` for its row. Policy for a poison message
    (data or properties that cannot be decoded): a row with an empty payload and no properties,
    logged as a warning, confirmed with its batch like any other row, so that it neither fails
    the task nor comes back to fail the next one."""
    try:
        properties = typed_properties(message.properties)
    except PybmqError as exc:
        log.warning("message %s: properties cannot be decoded, row left empty: %s",
                    message.guid.hex(), exc)  # fmt: skip
        return b"", {}
    if message.error is not None:
        log.warning("message %s: row left empty: %s", message.guid.hex(), message.error)
        return b"", {}
    return message.payload, properties


def tracing_options() -> dict[str, Any]:
    """``{"tracing": True}`` when this process has set an OpenTelemetry SDK tracer provider as
    the global one (as OpenTelemetry's instrumentations do, e.g. ``opentelemetry-instrument``
    or the application's own setup on the executors), else nothing. OpenTelemetry is never
    imported here: without it loaded, there is nothing to trace with."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return {}
    provider = trace.get_tracer_provider()
    if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return {}
    return {"tracing": True}


def open_session(target: Target, **session_options: Any) -> Session:
    """A started session; ``connectTimeoutMs`` bounds the start and the queue open. The
    ``client.*`` settings apply first; the named options of the source (``session_options``)
    win over them. The task's session traces when the process has a global OpenTelemetry
    tracer provider (see ``tracing_options``)."""
    session = Session(
        target.broker,
        options=SessionOptions(
            **{
                **tracing_options(),
                **dict(target.client),
                **target.security.session_options(),
                **session_options,
            }
        ),
        timeout=target.connect_timeout,
    )
    try:
        session.start()
    except BaseException:
        session.stop()
        raise
    return session


def probe(target: Target, *, read: bool) -> None:
    """Connect and open the queue once on the driver, so a wrong broker URL, an unreachable
    broker or a queue the broker refuses fails the query before any task is scheduled. A reader
    opens with zero credit: nothing is pushed to the probe, so nothing is redelivered later."""
    session = open_session(target)
    try:
        queue = session.open_queue(
            target.queue,
            read=read,
            write=not read,
            options=(
                QueueOptions(max_unconfirmed_messages=0, max_unconfirmed_bytes=0) if read else None
            ),
        )
        queue.close()
    finally:
        session.stop()


@dataclass
class WriteResult:
    posted: int
    acked: int
    seconds: float


class _AckTracker:
    """Counts outstanding posts; a window of ``limit`` posts in flight; remembers the first NACK."""

    def __init__(self, limit: int) -> None:
        self._cond = threading.Condition()
        self._limit = limit
        self.outstanding = 0
        self.acked = 0
        self.failures: list[Ack] = []

    def before_post(self, count: int, deadline: float) -> None:
        """Wait until ``count`` more posts fit in the window (or a NACK came, or the deadline
        passed: then the final wait for ACKs reports what is missing)."""
        with self._cond:
            while self.outstanding + count > max(self._limit, count) and not self.failures:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._cond.wait(remaining):
                    break
            self.outstanding += count

    def on_ack(self, ack: Ack) -> None:
        with self._cond:
            self.outstanding -= 1
            if ack.ok:
                self.acked += 1
            else:
                self.failures.append(ack)
            self._cond.notify_all()

    def wait_all(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while self.outstanding > 0:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True


POST_CHUNK = 256  # messages handed to the session's I/O thread per call


def _post_chunk(
    queue: Queue,
    chunk: list[Outgoing],
    tracker: _AckTracker,
    ack_timeout: float,
) -> int:
    tracker.before_post(len(chunk), time.monotonic() + ack_timeout)
    queue.post_batch(chunk, on_ack=tracker.on_ack)
    return len(chunk)


def post_all(options: WriteOptions, messages: Iterable[Outgoing]) -> WriteResult:
    """Post every message and return only once each one is ACKed by the broker.

    A NACK, or a post with no ACK within ``ack_timeout``, raises :class:`DeliveryError`, which
    fails the Spark task: Spark retries it and the messages are posted again (at-least-once).
    """
    started = time.monotonic()
    tracker = _AckTracker(options.max_in_flight)
    posted = 0
    session = open_session(
        options.target,
        ack_timeout=options.ack_timeout,
        compression_threshold=options.compression_threshold,
    )
    try:
        queue = session.open_queue(options.target.queue, write=True)
        chunk: list[Outgoing] = []
        for message in messages:
            chunk.append(message)
            if len(chunk) >= POST_CHUNK:
                posted += _post_chunk(queue, chunk, tracker, options.ack_timeout)
                chunk = []
            if tracker.failures:
                break
        if chunk and not tracker.failures:
            posted += _post_chunk(queue, chunk, tracker, options.ack_timeout)
        # The session's own ACK timer NACKs late posts; the extra second covers its tick.
        if not tracker.wait_all(options.ack_timeout + 1.0):
            raise DeliveryError(
                f"{tracker.outstanding} of {posted} posts to {options.target.queue} had no ACK "
                f"within {options.ack_timeout:g}s",
                posted=posted,
                acked=tracker.acked,
            )
        if tracker.failures:
            first = tracker.failures[0]
            raise DeliveryError(
                f"{len(tracker.failures)} of {posted} posts to {options.target.queue} were "
                f"NACKed; first: {first.status.value} {first.reason}".rstrip(),
                posted=posted,
                acked=tracker.acked,
            )
        queue.close()
    finally:
        session.stop()
    return WriteResult(posted, tracker.acked, time.monotonic() - started)


def open_consumer(target: Target, credit: int, subscription: str = "") -> tuple[Session, Queue]:
    """A started session reading ``target.queue`` with a credit of ``credit`` messages (the
    message count is the bound, not bytes), and only the messages the ``subscription``
    expression matches if one is given; the session is stopped if the queue cannot be opened."""
    session = open_session(target)
    try:
        queue = session.open_queue(
            target.queue,
            read=True,
            options=QueueOptions(
                max_unconfirmed_messages=credit,
                max_unconfirmed_bytes=1 << 40,
                subscriptions=(subscription,) if subscription else (),
                dedup_window=target.dedup_window,
                dedup_window_age=target.dedup_window_age,
            ),
        )
    except BaseException:
        session.stop()
        raise
    return session, queue


def consume(options: ReadOptions, limit: int, batch_rows: int = 4096) -> Iterator[RowBuffer]:
    """Receive up to ``limit`` messages, stopping early after ``idle_timeout`` without one.

    Rows are yielded in buffers of ``batch_rows``; with ``confirm``, every message is confirmed
    after the last buffer was taken by Spark (a task that fails before that confirms nothing,
    so its messages are redelivered when its session closes).
    """
    from pybmq.spark.rows import RowBuffer

    target = options.target
    # Credit = the most this task will take: the broker never pushes a message this task
    # would leave unconfirmed and hand back (which would make it a redelivery elsewhere).
    # A subscription (pushed filters) makes the broker push only the messages it matches.
    session, queue = open_consumer(target, limit, options.subscription)
    try:
        received: list[ReceivedMessage] = []
        buffer = RowBuffer(target.queue, options.property_schema)
        while len(received) < limit:
            batch = queue.get_many(min(batch_rows, limit - len(received)), options.idle_timeout)
            if not batch:
                break  # idle: nothing arrived for idle_timeout
            received.extend(batch)
            for message in batch:
                buffer.add(message.guid, *row_values(message))
            if len(buffer) >= batch_rows:
                yield buffer
                buffer = RowBuffer(target.queue, options.property_schema)
        if len(buffer):
            yield buffer
        if options.confirm:
            queue.confirm_many(received)
        queue.close()
    finally:
        session.stop()
