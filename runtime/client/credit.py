"""Consumer flow control as the client sees it: the credit each reader gave the broker, and what
the broker has pushed against it (unconfirmed messages and bytes per subscription).

A broker delivers to a subscription only while it is under both of its limits (mqbblp
QueueHandle::canDeliver: the subscription's unconfirmed monitor is not full), so it may
overshoot ``maxUnconfirmedBytes`` by one message but never ``maxUnconfirmedMessages``. Our count
is never above the broker's (a CONFIRM leaves here before the broker counts it), so a PUSH that
finds its subscription at either limit is the broker ignoring the credit: a ``ProtocolError``.

Tolerated, because the protocol allows the race: while a configure is in flight the larger of
the old and the new limits applies (messages pushed under the old credit, or before the
response under the new one); a new subscription id starts with its own credit while messages
of the old one still count there; a broadcast (at-most-once) queue is not tracked, as a broker
delivers to it without tracking (QueueHandle::deliverMessageNoTrack); a new connection starts
from zero (the previous one's unconfirmed messages are void).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pybmq.errors import ProtocolError
from pybmq.generated import bmqp_ctrlmsg as ctrl

__all__ = ["CreditLedger", "at_most_once"]

_AT_MOST_ONCE = 1 << ctrl.RoutingConfigurationFlags.E_AT_MOST_ONCE


def at_most_once(routing_flags: int) -> bool:
    """Whether an OpenQueueResponse's routing flags make the queue broadcast (at most once)."""
    return bool(routing_flags & _AT_MOST_ONCE)


class _Stream:
    """One subscription (or subId) of a reader: its credit and what is unconfirmed on it."""

    __slots__ = (
        "bytes",
        "limits",
        "max_bytes",
        "max_messages",
        "messages",
        "pending",
        "stream_id",
        "unconfirmed",
    )

    def __init__(self, stream_id: int, unconfirmed: dict[bytes, tuple[_Stream, int]]) -> None:
        self.stream_id = stream_id
        self.messages = 0
        self.bytes = 0
        self.limits = (0, 0)  # (messages, bytes) the broker acknowledged
        self.pending: tuple[int, int] | None = None  # limits of a configure in flight
        self.max_messages = self.max_bytes = 0  # ``effective()``, kept for the per-message check
        self.unconfirmed = unconfirmed  # its handle's, shared by the handle's streams

    def effective(self) -> tuple[int, int]:
        pending = self.pending
        if pending is None:
            return self.limits
        return max(self.limits[0], pending[0]), max(self.limits[1], pending[1])

    def push(self, guid: bytes, size: int, uri: str) -> None:
        """Count one PUSHed message; ProtocolError if the broker had no credit left for it."""
        unconfirmed = self.unconfirmed
        if guid in unconfirmed:
            return  # pushed twice
        if self.messages >= self.max_messages or self.bytes >= self.max_bytes:
            raise ProtocolError(
                f"the broker pushed message {guid.hex()} on {uri} (subscription "
                f"{self.stream_id}) beyond the credit it was given: {self.messages} messages "
                f"({self.bytes} bytes) unconfirmed, maxUnconfirmedMessages {self.max_messages}, "
                f"maxUnconfirmedBytes {self.max_bytes}",
                path="PushHeader",
            )
        unconfirmed[guid] = (self, size)
        self.messages += 1
        self.bytes += size


class _Handle:
    __slots__ = ("streams", "tracked", "unconfirmed")

    def __init__(self) -> None:
        self.streams: dict[int, _Stream] = {}
        self.unconfirmed: dict[bytes, tuple[_Stream, int]] = {}  # GUID → (stream, size)
        self.tracked = True  # False for a broadcast queue


class CreditLedger:
    """Credit given and used, per subscription of each queue handle (subscriptions each have
    their own credit, as on the broker); the total for the shell's read pause."""

    def __init__(self) -> None:
        self._handles: dict[int, _Handle] = {}
        self.total_messages = 0  # the credit of every reader (the larger limits while changing)
        self.total_bytes = 0

    def _handle(self, queue_id: int) -> _Handle:
        handle = self._handles.get(queue_id)
        if handle is None:
            handle = self._handles[queue_id] = _Handle()
        return handle

    def _set(
        self, stream: _Stream, limits: tuple[int, int], pending: tuple[int, int] | None
    ) -> None:
        old = stream.effective()
        stream.limits, stream.pending = limits, pending
        new = stream.effective()
        stream.max_messages, stream.max_bytes = new
        self.total_messages += new[0] - old[0]
        self.total_bytes += new[1] - old[1]

    def configuring(self, queue_id: int, limits: dict[int, tuple[int, int]]) -> None:
        """A configure was sent for ``queue_id``: each stream id in ``limits`` gets its
        (maxUnconfirmedMessages, maxUnconfirmedBytes); its other streams go to nothing once it is
        answered."""
        handle = self._handle(queue_id)
        for stream_id, stream in handle.streams.items():
            self._set(stream, stream.limits, limits.get(stream_id, (0, 0)))
        for stream_id, wanted in limits.items():
            if stream_id not in handle.streams:
                stream = handle.streams[stream_id] = _Stream(stream_id, handle.unconfirmed)
                self._set(stream, (0, 0), wanted)

    def configured(self, queue_id: int, ok: bool) -> None:
        """The configure in flight was answered: its limits now apply (or, refused, not)."""
        handle = self._handles.get(queue_id)
        if handle is None:
            return
        for stream_id, stream in list(handle.streams.items()):
            if stream.pending is not None:
                self._set(stream, stream.pending if ok else stream.limits, None)
            if stream.limits == (0, 0) and not stream.messages:
                del handle.streams[stream_id]  # retired, nothing left on it

    def untracked(self, queue_id: int) -> None:
        """``queue_id`` is a broadcast queue: its pushes are not counted against the credit."""
        self._handle(queue_id).tracked = False

    def forget(self, queue_id: int) -> None:
        handle = self._handles.pop(queue_id, None)
        if handle is not None:
            for stream in handle.streams.values():
                self._set(stream, (0, 0), None)

    def clear(self) -> None:
        """The session is over: no credit, nothing unconfirmed."""
        self._handles.clear()
        self.total_messages = self.total_bytes = 0

    def new_connection(self) -> None:
        """The broker session is new: nothing is unconfirmed there any more."""
        for handle in self._handles.values():
            handle.unconfirmed.clear()
            for stream in handle.streams.values():
                stream.messages = stream.bytes = 0

    def pusher(self, queue_id: int, stream_id: int) -> Callable[[bytes, int, str], None] | None:
        """``pushed`` for one (``queue_id``, ``stream_id``) looked up once (per PUSH event: the
        limits cannot change within one): call it as ``(guid, size, uri)`` for each message.
        None when its pushes are not counted (a broadcast queue, or a stream we did not
        configure: the router refuses that one)."""
        handle = self._handles.get(queue_id)
        if handle is None or not handle.tracked:
            return None
        stream = handle.streams.get(stream_id)
        return stream.push if stream is not None else None

    def pushed(self, queue_id: int, stream_id: int, uri: str, guid: bytes, size: int) -> None:
        """Count a PUSHed message; ProtocolError if the broker had no credit left for it."""
        push = self.pusher(queue_id, stream_id)
        if push is not None:
            push(guid, size, uri)

    def confirmed(self, queue_id: int, guid: bytes) -> None:
        self.confirmed_many(queue_id, (guid,))

    def confirmed_many(self, queue_id: int, guids: Iterable[bytes]) -> None:
        """The messages ``guids`` of ``queue_id`` were confirmed: their credit is free again."""
        handle = self._handles.get(queue_id)
        if handle is None:
            return
        pop = handle.unconfirmed.pop
        for guid in guids:
            entry = pop(guid, None)
            if entry is not None:
                stream, size = entry
                stream.messages -= 1
                stream.bytes -= size
                if not stream.messages and not stream.max_messages and not stream.max_bytes:
                    handle.streams.pop(stream.stream_id, None)  # retired and now empty

    def unconfirmed(self, queue_id: int) -> int:
        """Messages pushed on ``queue_id`` and not confirmed yet (0 when not tracked)."""
        handle = self._handles.get(queue_id)
        return len(handle.unconfirmed) if handle is not None else 0
