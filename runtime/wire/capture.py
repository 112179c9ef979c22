"""A capture of live traffic as ``pybmq tap`` records it and ``pybmq decode`` reads it: a magic
line, then one record per complete event, with who sent it, on which connection, and when.

Record: direction (0 client→broker, 1 broker→client), connection number, UNIX time in
nanoseconds, event length, then the event's bytes. Sans-I/O: bytes in, records out.

``mask_event`` makes a capture shareable: every message payload, and the credential material of
AUTHENTICATION events, is overwritten with ``X`` bytes of the same length, so sizes, headers,
properties and framing stay exactly as recorded.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

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
from pybmq.wire.framing import MAX_EVENT_SIZE, check_event, check_event_length

__all__ = [
    "DIRECTIONS",
    "MAGIC",
    "MASK_BYTE",
    "Record",
    "encode_record",
    "is_capture",
    "iter_records",
    "mask_event",
]

MAGIC = b"PYBMQ-TAP 1\n"
_RECORD = struct.Struct(">BIQI")
DIRECTIONS = ("client->broker", "broker->client")


@dataclass(frozen=True)
class Record:
    direction: int
    connection: int
    time_ns: int
    event: bytes
    offset: int  # of the event's first byte in the capture file


def encode_record(direction: int, connection: int, time_ns: int, event: bytes) -> bytes:
    return _RECORD.pack(direction, connection, time_ns, len(event)) + event


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
            if bytes(buf[: len(MAGIC)]) != MAGIC:
                raise ProtocolError("not a pybmq tap capture", offset=0)
            magic_seen, pos = True, len(MAGIC)
        while len(buf) - pos >= _RECORD.size:
            direction, connection, time_ns, length = _RECORD.unpack_from(buf, pos)
            if direction > 1:
                raise ProtocolError(f"bad direction {direction}", offset=base + pos)
            check_event_length(length, base + pos + _RECORD.size, max_event_size)
            end = pos + _RECORD.size + length
            if len(buf) < end:
                break
            start = base + pos + _RECORD.size
            yield Record(direction, connection, time_ns, bytes(buf[end - length : end]), start)
            pos = end
        del buf[:pos]
        base += pos
    if buf:
        raise ProtocolError(f"truncated record: {len(buf)} bytes left", offset=base)


def is_capture(head: bytes) -> bool:
    return head.startswith(MAGIC)


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
