"""A capture of live traffic as ``pybmq tap`` records it and ``pybmq decode`` reads it: a magic
line, then one record per complete event, with who sent it, on which connection, and when.

Record: direction (0 client→broker, 1 broker→client), connection number, UNIX time in
nanoseconds, event length, then the event's bytes. Sans-I/O: bytes in, records out.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from pybmq.errors import ProtocolError
from pybmq.wire.framing import MAX_EVENT_SIZE, check_event_length

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
