"""The one thread that runs a compat session's user callbacks, in order, and reports the
slow-consumer watermarks of their backlog as the official SDK does.

What it is handed are plain tuples, not closures: ``(ACK, on_ack, runtime_ack)``, ``(ACKS,
[on_ack, guid, status, queue_uri, on_ack, …])`` (a run of ACKs, flat), ``(MESSAGE, queue,
received, session)``, ``(EVENT, event)`` and ``(CALL, job)``. The ``Ack``,
``Message`` and ``MessageHandle`` the user sees are built here, just before their callback, so the
I/O thread does no per-message work for them and nothing waiting in the backlog holds more than one
small object (fewer objects for the garbage collector to scan while posts are in flight).
"""

from __future__ import annotations

import logging
import sys
import traceback
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from pybmq.compat import session_events as ev
from pybmq.compat.messages import (
    Message,
    compat_ack,
    from_wire_properties,
    new_handle,
    new_message,
)
from pybmq.errors import PybmqError
from pybmq.loopthread import JobDispatcher

if TYPE_CHECKING:
    from pybmq.client.aio_queue import ReceivedMessage
    from pybmq.compat.queues import QueueRecord

log = logging.getLogger("pybmq.compat")

# What a hand-over item is; the first element of each tuple.
ACK, MESSAGE, EVENT, CALL, ACKS = range(5)
Item = tuple[Any, ...]


def print_callback_error(exc: BaseException) -> None:
    """As the official SDK does: a user callback's exception prints its traceback to stderr
    (looked up at call time, so redirections apply) and dispatch goes on."""
    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)


def compat_message(queue_uri: str, received: ReceivedMessage, undecodable: bool = False) -> Message:
    """The official SDK's ``Message`` for a received one (raises PybmqError when its properties
    do not decode; ``undecodable``: build it without them)."""
    message = received.message
    properties, types = ({}, {}) if undecodable else from_wire_properties(message.properties)
    return new_message(message.payload, message.guid, queue_uri, properties, types, received)


class CallbackThread(JobDispatcher[Item]):
    """Runs user callbacks one at a time, in hand-over order, and watches the message backlog.

    ``submit_items`` is called by the I/O thread with everything one loop turn produced (one
    lock, one wake-up); ``close`` runs what is already queued, then ends the thread."""

    def __init__(
        self,
        on_event: Callable[[ev.SessionEvent], None],
        watermarks: tuple[int, int],
    ) -> None:
        self._emit = on_event
        self._low, self._high = watermarks
        self._slow = False
        self._submitted = 0  # messages handed over (written under _ready)
        self._done = 0  # messages whose callback returned (written by this thread only)
        super().__init__("pybmq-compat-callbacks", print_callback_error)

    @property
    def backlog(self) -> int:
        """Messages handed over whose ``on_message`` has not returned yet."""
        return self._submitted - self._done

    @property
    def watermarks(self) -> tuple[int, int]:
        """The slow-consumer (low, high) watermarks of the backlog."""
        return self._low, self._high

    def wait_for_backlog(self, count: int, timeout: float) -> bool:
        """Wait until the backlog is at least ``count`` (False on timeout): for diagnostics."""
        with self._ready:
            return self._ready.wait_for(lambda: self.backlog >= count, timeout)

    def submit_event(self, event: ev.SessionEvent) -> None:
        self.submit((EVENT, event))

    def submit_items(self, items: Iterable[Item], messages: int) -> None:
        """Queue items (``messages`` of them MESSAGE items) with one wake-up of the thread;
        SlowConsumerHighWaterMark goes right after the message that reaches the high mark."""
        with self._ready:
            queue = self._jobs
            backlog = self._submitted - self._done
            self._submitted += messages
            if self._slow or backlog + messages < self._high:
                queue.extend(items)
            else:
                for item in items:
                    queue.append(item)
                    if item[0] == MESSAGE:
                        backlog += 1
                        if backlog >= self._high and not self._slow:
                            self._slow = True
                            queue.append((EVENT, ev.SlowConsumerHighWaterMark(None)))
            self._ready.notify_all()

    def _dispatch(self, item: Item) -> None:
        kind = item[0]
        if kind == ACKS:
            self._acks(item[1])
        elif kind == ACK:
            ack = item[2]
            item[1](compat_ack(ack.guid, ack.status, ack.queue_uri))
        elif kind == MESSAGE:
            try:
                self._deliver(item[1], item[2], item[3])
            finally:
                self._done += 1
                if self._slow:
                    self._message_done()
        elif kind == EVENT:
            self._emit(item[1])
        else:
            item[1]()

    def _acks(self, run: list[Any]) -> None:
        """A run of ACKs, flat: (on_ack, guid, status, queue_uri) each. Each callback is on its
        own (one that raises is reported and the next runs) and released once called."""
        report = self._report
        for k in range(0, len(run), 4):
            on_ack = run[k]
            run[k] = None
            ack = compat_ack(run[k + 1], run[k + 2], run[k + 3])
            try:
                on_ack(ack)
            except Exception as exc:  # as the JobDispatcher does for one item
                report(exc)
            del on_ack, ack

    def _deliver(self, queue: QueueRecord, received: ReceivedMessage, session: Any) -> None:
        # A poison message (data or properties that cannot be decoded; the official SDK's
        # Message has no way to carry the error) is delivered too, with no properties (and empty
        # data when the data failed), after an ``Error`` session event saying why: the
        # application can confirm it, so it does not come back, and the session goes on.
        inner = received.message
        error: PybmqError | None = None
        if inner.properties is None and inner.error is None:  # the common case, fewer calls
            message = new_message(inner.payload, inner.guid, queue.uri, {}, {}, received)
        else:
            error = received.error
            try:
                message = compat_message(queue.uri, received)
            except PybmqError as exc:  # a properties area that does not decode
                error = exc
                message = compat_message(queue.uri, received, undecodable=True)
        if error is not None:
            log.error(
                "message %s on %s cannot be decoded: %s", received.guid.hex(), queue.uri, error
            )
            self._emit(ev.Error(f"undecodable message on {queue.uri}: {error}"))
        handle = new_handle(message, session)
        if queue.holding:
            queue.held.append((message, handle))  # given out when the queue resumes
            return
        # The session's on_message, not one kept here: this running thread must not keep
        # alive what the user's callable may refer to (the session itself, in a cycle).
        on_message = session.core.on_message
        assert on_message is not None
        on_message(message, handle)

    def _message_done(self) -> None:
        """After a message's callback (``_done`` already counted) while slow: back to normal?"""
        if self._slow and self._submitted - self._done <= self._low:
            with self._ready:
                if not (self._slow and self._submitted - self._done <= self._low):
                    return
                self._slow = False
            self._emit(ev.SlowConsumerNormal(None))


__all__ = [
    "ACK",
    "ACKS",
    "CALL",
    "EVENT",
    "MESSAGE",
    "CallbackThread",
    "Item",
    "compat_message",
    "print_callback_error",
]
