"""A capture of live traffic as ``pybmq tap`` records it and ``pybmq decode`` reads it: a magic
line, then one record per event, with who sent it, on which connection, and when.

Record: direction (0 client→broker, 1 broker→client), connection number, UNIX time in
nanoseconds, recorded length, then the event's bytes. Like pcap's snap length, an event bigger
than the tap keeps whole is recorded cut: the direction byte then has ``TRUNCATED`` set and a
4-byte original length follows the record header (format 2; format 1, without cut events, is
still read). Sans-I/O: bytes in, records out.

``mask_event`` makes a capture shareable: every message payload, and the credential material of
AUTHENTICATION events, is overwritten with ``X`` bytes of the same length, so sizes, headers,
properties and framing stay exactly as recorded.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pybmq.errors import ProtocolError, PybmqError
from pybmq.generated.wire_codec import (
    EVENT_HEADER_SIZE,
    EVENT_HEADER_TYPE_MASK,
    EventType,
)
from pybmq.generated.wire_messages import (
    PUSH_IMPLICIT_PAYLOAD_FLAG,
    PUSH_PROPERTIES_FLAG,
    PUT_PROPERTIES_FLAG,
    pad_count,
    properties_area_size,
    push_bounds,
    push_schema_id,
    put_bounds,
    put_schema_id,
)
from pybmq.wire.framing import (
    MAX_EVENT_SIZE,
    Event,
    check_event,
    check_event_length,
    event_header,
    iter_events,
)

__all__ = [
    "DIRECTIONS",
    "MAGIC",
    "MAGIC_1",
    "MASK_BYTE",
    "TRUNCATED",
    "Record",
    "SnapFramer",
    "capture_events",
    "encode_record",
    "is_capture",
    "iter_records",
    "mask_event",
    "record_size",
]

MAGIC = b"PYBMQ-TAP 2\n"
MAGIC_1 = b"PYBMQ-TAP 1\n"  # the format before cut events: read, never written
_RECORD = struct.Struct(">BIQI")
_LENGTH = struct.Struct(">I")
TRUNCATED = 0x80  # in the direction byte: the event was cut, its original length follows
DIRECTIONS = ("client->broker", "broker->client")


@dataclass(frozen=True)
class Record:
    direction: int
    connection: int
    time_ns: int
    event: bytes  # as recorded: the whole event, or its first bytes when it was cut
    offset: int  # of the event's first byte in the capture file
    length: int  # the event's own length (more than len(event) when it was cut)

    @property
    def truncated(self) -> bool:
        return self.length > len(self.event)


def encode_record(
    direction: int, connection: int, time_ns: int, event: bytes, length: int | None = None
) -> bytes:
    """One record; ``length``, when more than ``len(event)``, says the event was cut."""
    if length is None or length <= len(event):
        return _RECORD.pack(direction, connection, time_ns, len(event)) + event
    head = _RECORD.pack(direction | TRUNCATED, connection, time_ns, len(event))
    return head + _LENGTH.pack(length) + event


def record_size(event_size: int, length: int) -> int:
    """The bytes a record of ``event_size`` recorded bytes takes in the capture."""
    return _RECORD.size + event_size + (_LENGTH.size if length > event_size else 0)


def iter_records(chunks: Iterable[bytes], max_event_size: int = MAX_EVENT_SIZE) -> Iterator[Record]:
    """The records of a capture read in chunks (the magic line included); one held at a time."""
    buf = bytearray()
    base = 0
    magic_seen = False
    for chunk in chunks:
        buf += chunk
        pos = 0
        if not magic_seen:
            if len(buf) < len(MAGIC):
                continue
            if not is_capture(bytes(buf[: len(MAGIC)])):
                raise ProtocolError("not a pybmq tap capture", offset=0)
            magic_seen, pos = True, len(MAGIC)
        while len(buf) - pos >= _RECORD.size:
            flags, connection, time_ns, size = _RECORD.unpack_from(buf, pos)
            direction = flags & ~TRUNCATED
            if direction > 1:
                raise ProtocolError(f"bad direction {flags}", offset=base + pos)
            head = _RECORD.size
            length = size
            if flags & TRUNCATED:
                head += _LENGTH.size
                if len(buf) - pos < head:
                    break
                (length,) = _LENGTH.unpack_from(buf, pos + _RECORD.size)
                check_event_length(length, base + pos + _RECORD.size, max_event_size)
                if size >= length:
                    raise ProtocolError(
                        f"a cut record of {size} bytes for an event of {length}",
                        offset=base + pos,
                    )
            check_event_length(size, base + pos + head, max_event_size)
            end = pos + head + size
            if len(buf) < end:
                break
            event = bytes(buf[end - size : end])
            yield Record(direction, connection, time_ns, event, base + pos + head, length)
            pos = end
        del buf[:pos]
        base += pos
    if buf:
        raise ProtocolError(f"truncated record: {len(buf)} bytes left", offset=base)


def capture_events(chunks: Iterable[bytes]) -> Iterator[tuple[Event, dict[str, Any]]]:
    """The events of a ``pybmq tap`` capture, each with its ``tap`` node (direction,
    connection, time; for a cut event, its ``length`` and the bytes ``recorded``). A cut
    event's ``data`` is what was recorded of it."""
    import datetime

    for record in iter_records(chunks):
        if record.truncated:
            header = event_header(record.event, record.offset)
            event = Event(header, record.event, record.offset)
        else:
            found = list(iter_events(record.event, MAX_EVENT_SIZE, record.offset))
            if len(found) != 1 or not isinstance(found[0], Event):
                raise ProtocolError("a record that is not one event", offset=record.offset)
            event = found[0]
        when = datetime.datetime.fromtimestamp(record.time_ns / 1e9, datetime.timezone.utc)
        tap: dict[str, Any] = {
            "direction": DIRECTIONS[record.direction],
            "connection": record.connection,
            "time": when.isoformat(timespec="microseconds"),
        }
        if record.truncated:
            tap.update(length=record.length, recorded=len(record.event))
        yield event, tap


class SnapFramer:
    """Frames one direction of a stream for recording, holding at most ``snaplen`` bytes of an
    event: ``feed(data)`` returns ``(recorded bytes, event length)`` for each event it ends, an
    event longer than ``snaplen`` cut to its first ``snaplen`` bytes (the rest passes by,
    counted, never held). A stream that does not frame raises ProtocolError, then on every
    later ``feed``."""

    def __init__(self, snaplen: int, max_event_size: int = MAX_EVENT_SIZE) -> None:
        if snaplen < EVENT_HEADER_SIZE:
            raise ValueError(f"snaplen must be at least {EVENT_HEADER_SIZE} (an EventHeader)")
        self.snaplen = snaplen
        self.max_event_size = max_event_size
        self._kept = bytearray()  # the current event's first bytes, at most snaplen
        self._length = 0  # the current event's length, once its header is read (else 0)
        self._seen = 0  # bytes of the current event passed so far
        self._offset = 0  # stream offset of the current event
        self._error: ProtocolError | None = None

    @property
    def held(self) -> int:
        """Bytes held for the event in progress (never more than ``snaplen``)."""
        return len(self._kept)

    def feed(self, data: bytes | bytearray | memoryview) -> list[tuple[bytes, int]]:
        if self._error is not None:
            raise self._error
        try:
            return self._feed(memoryview(data))
        except ProtocolError as exc:
            self._error = exc
            raise

    def _feed(self, view: memoryview) -> list[tuple[bytes, int]]:
        done: list[tuple[bytes, int]] = []
        pos = 0
        while pos < len(view):
            if not self._length:  # the header: kept whole (8 bytes) before anything else
                take = min(EVENT_HEADER_SIZE - len(self._kept), len(view) - pos)
                self._kept += view[pos : pos + take]
                pos += take
                self._seen += take
                if len(self._kept) < EVENT_HEADER_SIZE:
                    break
                header = event_header(self._kept, self._offset, self.max_event_size)
                self._length = header.length
            else:
                take = min(self._length - self._seen, len(view) - pos)
                room = self.snaplen - len(self._kept)
                if room > 0:
                    self._kept += view[pos : pos + min(take, room)]
                pos += take
                self._seen += take
            if self._length and self._seen == self._length:
                done.append((bytes(self._kept), self._length))
                self._offset += self._length
                self._kept.clear()
                self._length = self._seen = 0
        return done


def is_capture(head: bytes) -> bool:
    return head.startswith((MAGIC, MAGIC_1))


MASK_BYTE = ord("X")
# Per message event type: its checked bounds, its schema id, its properties and implicit
# payload flags (PUT has none of the latter).
_MESSAGE_HEADERS = {
    EventType.PUT: (put_bounds, put_schema_id, PUT_PROPERTIES_FLAG, 0),
    EventType.PUSH: (push_bounds, push_schema_id, PUSH_PROPERTIES_FLAG, PUSH_IMPLICIT_PAYLOAD_FLAG),
}


def mask_event(event: bytes) -> bytes:
    """``event`` with its payloads masked (length kept); events without any are returned as is.

    PUT/PUSH: each message's payload (after its properties, which stay readable; when the
    properties were compressed with the payload, the old format, the whole application data).
    AUTHENTICATION: the credential material. An event too malformed to find them in keeps only
    its EventHeader, the rest masked.
    """
    kind = event[4] & EVENT_HEADER_TYPE_MASK if len(event) >= EVENT_HEADER_SIZE else None
    try:
        if kind in _MESSAGE_HEADERS:
            return _mask_messages(event, EventType(kind))
        if kind == EventType.AUTHENTICATION:
            return _mask_authentication(event)
    except PybmqError:
        return event[:EVENT_HEADER_SIZE] + bytes([MASK_BYTE]) * (len(event) - EVENT_HEADER_SIZE)
    return event


def _mask_messages(event: bytes, kind: EventType) -> bytes:
    data = bytes(event)
    masked = bytearray(data)
    bounds, schema_id, properties_flag, implicit_flag = _MESSAGE_HEADERS[kind]
    header_size, length, _ = check_event(data, kind)
    pos = header_size
    while pos < length:
        flags, size, words, _, start, compression, _ = bounds(data, pos, length)
        end = pos + size
        if not (flags & implicit_flag and start == end):  # else no application data at all
            end -= pad_count(data, start, end, pos)
            schema = schema_id(data, pos, words)
            if flags & properties_flag and not (compression and not schema):
                start += properties_area_size(data, start, end)
            masked[start:end] = bytes([MASK_BYTE]) * (end - start)
        pos += size
    return bytes(masked)


def _mask_authentication(event: bytes) -> bytes:
    import dataclasses

    from pybmq.wire.control import decode_authentication, encode_authentication

    message, encoding = decode_authentication(event)
    request = message.authentication_request
    if request is None or not request.data:
        return event
    masked = dataclasses.replace(request, data=bytes([MASK_BYTE]) * len(request.data))
    return encode_authentication(
        dataclasses.replace(message, authentication_request=masked), encoding
    )
