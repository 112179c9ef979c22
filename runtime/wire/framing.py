"""Cutting a byte stream into BlazingMQ events.

Every event starts with an 8-byte EventHeader whose 31-bit length counts the whole event. The
length is checked the moment its 4 bytes arrive: a peer that declares a huge (or impossibly small)
event is refused before anything is buffered for it, and the error names the stream offset.
``EventReader`` is the incremental form for sockets (sans-I/O: feed bytes, get events);
``iter_events`` / ``split_events`` are the whole-buffer form for files, where captures often end
in zero filler after the last event.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from pybmq.errors import ProtocolError
from pybmq.generated.wire_codec import (
    EVENT_HEADER,
    EVENT_HEADER_FRAGMENT_BIT_SHIFT,
    EVENT_HEADER_LENGTH_MASK,
    EVENT_HEADER_PROTOCOL_VERSION_SHIFT,
    EVENT_HEADER_SIZE,
    EVENT_HEADER_TYPE_MASK,
    EVENT_MAX_SIZE_SOFT,
    PROTOCOL_VERSION,
    PUT_EVENT_MAX_SIZE_SOFT,
    WORD,
    WORD_SIZE,
    EventHeader,
    EventType,
    unpack_event_header,
)

__all__ = [
    "MAX_CONTROL_EVENT_SIZE",
    "MAX_EVENT_SIZE",
    "SMALL_EVENT_SIZE",
    "Event",
    "EventReader",
    "Filler",
    "check_event",
    "check_event_length",
    "client_event_limit",
    "event_bytes",
    "event_header",
    "event_header_bytes",
    "event_type_name",
    "iter_events",
    "split_events",
]

# Upstream enforces EventHeader::k_MAX_SIZE_SOFT (512 MiB) on every event it builds.
MAX_EVENT_SIZE = EVENT_MAX_SIZE_SOFT
# Control messages are small (the biggest a client sees echoes its own subscriptions); a cap
# checked on the header keeps a huge JSON/BER document from being buffered and decoded.
MAX_CONTROL_EVENT_SIZE = 1 << 20
# Events up to this size skip the per-type limit callback (it is only asked about big ones).
SMALL_EVENT_SIZE = 64 * 1024


_EVENT_TYPE_NAMES = {t.value: t.name for t in EventType}


def client_event_limit(event_type: int, credit_bytes: int) -> int:
    """The biggest event of ``event_type`` a well-behaved broker can send a client now: PUSH is
    bounded by the client's credit (``credit_bytes``; the broker may overshoot it by one
    message), ACK by what a PUT event can carry, control by MAX_CONTROL_EVENT_SIZE, and
    heartbeats are tiny."""
    if event_type == EventType.PUSH:
        return min(MAX_EVENT_SIZE, credit_bytes + PUT_EVENT_MAX_SIZE_SOFT)
    if event_type == EventType.ACK:
        return PUT_EVENT_MAX_SIZE_SOFT
    if event_type == EventType.CONTROL:
        return MAX_CONTROL_EVENT_SIZE
    return SMALL_EVENT_SIZE


def event_type_name(value: int) -> str:
    return _EVENT_TYPE_NAMES.get(value) or f"UNKNOWN({value})"


@dataclass(frozen=True)
class Event:
    """One complete event: its decoded EventHeader and all of its bytes (header included)."""

    header: EventHeader
    data: bytes
    offset: int = 0  # where the event started in the stream or file

    @property
    def type(self) -> int:
        return self.header.type

    @property
    def type_name(self) -> str:
        return event_type_name(self.header.type)

    @property
    def header_size(self) -> int:
        return self.header.header_words * WORD_SIZE

    @property
    def body(self) -> memoryview:
        """The bytes after the EventHeader (its declared size, which may exceed 8 bytes)."""
        return memoryview(self.data)[self.header_size :]


@dataclass(frozen=True)
class Filler:
    """Bytes after the last event in a file that are all zero: padding, not an event."""

    offset: int
    size: int


def _parse_header(
    buf: bytes | bytearray | memoryview, pos: int, stream_offset: int, max_event_size: int
) -> tuple[int, int, int, int, int, int, int]:
    """Unpack and sanity-check the EventHeader at ``pos`` (all of it must be available)."""
    u0, u1, header_words, type_specific, reserved = EVENT_HEADER.unpack_from(buf, pos)
    length = u0 & EVENT_HEADER_LENGTH_MASK
    check_event_length(length, stream_offset, max_event_size)
    if header_words * WORD_SIZE < EVENT_HEADER_SIZE or header_words * WORD_SIZE > length:
        raise ProtocolError(
            f"EventHeader declares {header_words} header words for a {length}-byte event",
            offset=stream_offset,
            path="EventHeader.headerWords",
        )
    return (
        u0 >> EVENT_HEADER_FRAGMENT_BIT_SHIFT,
        length,
        u1 >> EVENT_HEADER_PROTOCOL_VERSION_SHIFT,
        u1 & EVENT_HEADER_TYPE_MASK,
        header_words,
        type_specific,
        reserved,
    )


def event_header(
    data: bytes | bytearray | memoryview,
    stream_offset: int = 0,
    max_event_size: int = MAX_EVENT_SIZE,
) -> EventHeader:
    """The EventHeader at the start of ``data``, checked, whether or not the rest of the event
    follows (a capture's cut event has only its first bytes)."""
    if len(data) < EVENT_HEADER_SIZE:
        raise ProtocolError(
            f"truncated EventHeader: {len(data)} bytes", offset=stream_offset, path="EventHeader"
        )
    fields = _parse_header(data, 0, stream_offset, max_event_size)
    return EventHeader(*fields)


def check_event_length(length: int, stream_offset: int, max_event_size: int) -> None:
    """Raise ProtocolError (naming ``stream_offset``) for an EventHeader.length out of range."""
    if length < EVENT_HEADER_SIZE:
        raise ProtocolError(
            f"event length {length} is smaller than the {EVENT_HEADER_SIZE}-byte EventHeader",
            offset=stream_offset,
            path="EventHeader.length",
        )
    if length > max_event_size:
        raise ProtocolError(
            f"event length {length} exceeds the maximum event size {max_event_size}",
            offset=stream_offset,
            path="EventHeader.length",
        )


class EventReader:
    """Incremental event framer: ``feed(data)`` returns the events completed by ``data``.

    Partial events are kept until the rest arrives. Once a ProtocolError has been raised the
    stream is unusable (framing is lost) and every later ``feed`` raises the same error.
    """

    def __init__(
        self,
        max_event_size: int = MAX_EVENT_SIZE,
        limit_for: Callable[[int], int] | None = None,
    ) -> None:
        """``limit_for(event type)`` is the largest event of that type the reader accepts; it
        is asked (only for events over SMALL_EVENT_SIZE) as soon as the header is readable, so
        an oversized event is refused before its body is buffered."""
        self.max_event_size = max_event_size
        self.limit_for = limit_for
        self._buf = bytearray()
        self._base = 0  # stream offset of self._buf[0]
        self._error: ProtocolError | None = None

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete event."""
        return len(self._buf)

    @property
    def offset(self) -> int:
        """Stream offset of the next byte to be framed."""
        return self._base

    def feed(self, data: bytes | bytearray | memoryview) -> list[Event]:
        if self._error is not None:
            raise self._error
        buf = self._buf
        buf += data
        events: list[Event] = []
        pos = 0
        end = len(buf)
        try:
            while end - pos >= 4:
                length = int.from_bytes(buf[pos : pos + 4], "big") & EVENT_HEADER_LENGTH_MASK
                # Refuse a bad length as soon as it is readable, before waiting for the body.
                check_event_length(length, self._base + pos, self.max_event_size)
                if end - pos < EVENT_HEADER_SIZE:
                    break
                fragment, length, version, etype, hwords, tspec, reserved = _parse_header(
                    buf, pos, self._base + pos, self.max_event_size
                )
                if length > SMALL_EVENT_SIZE and self.limit_for is not None:
                    limit = self.limit_for(etype)
                    if length > limit:
                        raise ProtocolError(
                            f"{event_type_name(etype)} event of {length} bytes exceeds the limit "
                            f"of {limit} bytes for that type",
                            offset=self._base + pos,
                            path="EventHeader.length",
                        )
                if end - pos < length:
                    break
                header = EventHeader(fragment, length, version, etype, hwords, tspec, reserved)
                # One copy out of the buffer (slicing the bytearray first would make two).
                with memoryview(buf) as view:
                    data = bytes(view[pos : pos + length])
                events.append(Event(header, data, self._base + pos))
                pos += length
        except ProtocolError as exc:
            self._error = exc
            raise
        if pos:
            del buf[:pos]
            self._base += pos
        return events

    def at_boundary(self) -> bool:
        """True when no partial event is pending (a clean place for the stream to end)."""
        return not self._buf


def iter_events(
    buf: bytes | bytearray | memoryview, max_event_size: int = MAX_EVENT_SIZE, base: int = 0
) -> Iterator[Event | Filler]:
    """Every event in ``buf``, then a ``Filler`` if the buffer ends in zero bytes.

    A non-zero tail that is not a complete event raises ProtocolError with its offset. Offsets
    (of events, filler and errors) count from ``base``, the stream offset of ``buf[0]``.
    """
    view = memoryview(buf)
    pos = 0
    end = len(view)
    new = tuple.__new__  # the header without a Python-level constructor call
    while pos < end:
        # A zero tail starts with a zero word (an event's length is never 0).
        if (end - pos < WORD.size or not WORD.unpack_from(view, pos)[0]) and not any(view[pos:]):
            yield Filler(base + pos, end - pos)
            return
        if end - pos < EVENT_HEADER_SIZE:
            raise ProtocolError(
                f"truncated EventHeader: {end - pos} bytes left",
                offset=base + pos,
                path="EventHeader",
            )
        fragment, length, version, etype, hwords, tspec, reserved = _parse_header(
            view, pos, base + pos, max_event_size
        )
        if end - pos < length:
            raise ProtocolError(
                f"truncated event: declared {length} bytes, {end - pos} available",
                offset=base + pos,
                path="EventHeader.length",
            )
        header = new(EventHeader, (fragment, length, version, etype, hwords, tspec, reserved))
        yield Event(header, bytes(view[pos : pos + length]), base + pos)
        pos += length


def split_events(
    buf: bytes | bytearray | memoryview, max_event_size: int = MAX_EVENT_SIZE
) -> tuple[list[Event], Filler | None]:
    """``iter_events`` collected: the events and the trailing filler, if any."""
    events: list[Event] = []
    filler: Filler | None = None
    for item in iter_events(buf, max_event_size):
        if isinstance(item, Filler):
            filler = item
        else:
            events.append(item)
    return events, filler


# -- checks every event reader starts with ------------------------------------------------------


def event_bytes(event: Event | bytes | bytearray | memoryview) -> bytes | bytearray | memoryview:
    return event.data if isinstance(event, Event) else event


def check_event(data: bytes | bytearray | memoryview, expected: EventType) -> tuple[int, int, int]:
    """Validate the EventHeader of ``data``; return (header size, event length, type_specific)."""
    try:  # (plain fields: no EventHeader record made on this hot path)
        u0, u1, header_words, type_specific, _ = EVENT_HEADER.unpack_from(data, 0)
    except struct.error:
        unpack_event_header(data, 0)  # raises the codec's error, with the details
        raise
    if u1 & EVENT_HEADER_TYPE_MASK != expected:
        raise ProtocolError(
            f"expected a {expected.name} event, got {event_type_name(u1 & EVENT_HEADER_TYPE_MASK)}",
            offset=0,
            path="EventHeader.type",
        )
    length = u0 & EVENT_HEADER_LENGTH_MASK
    if length > len(data):
        raise ProtocolError(
            f"event declares {length} bytes but only {len(data)} are present",
            offset=0,
            path="EventHeader.length",
        )
    hsize = header_words * WORD_SIZE
    if hsize < EVENT_HEADER_SIZE or hsize > length:
        raise ProtocolError(
            f"EventHeader declares {header_words} header words for a {length}-byte event",
            offset=0,
            path="EventHeader.headerWords",
        )
    return hsize, length, type_specific


def event_header_bytes(
    event_type: int, length: int, type_specific: int = 0, fragment_bit: int = 0
) -> bytes:
    """An 8-byte EventHeader for an event of ``length`` bytes (protocol version 1)."""
    return EVENT_HEADER.pack(
        (fragment_bit << EVENT_HEADER_FRAGMENT_BIT_SHIFT) | length,
        (PROTOCOL_VERSION << EVENT_HEADER_PROTOCOL_VERSION_SHIFT) | event_type,
        EVENT_HEADER_SIZE // WORD_SIZE,
        type_specific,
        0,
    )
