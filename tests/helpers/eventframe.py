"""A tiny test-only stand-in for the wire layer: strip or add the 8-byte EventHeader and padding.

EventHeader (big-endian): fragment bit + 31-bit total length; then one byte holding the protocol
version (2 bits) and event type (6 bits); one byte of header words; one type-specific byte (for
CONTROL: 0x00 BER, 0x20 JSON); one reserved byte. The payload is followed by 1-4 padding bytes,
each holding the pad count. The real framing lives in the wire layer; this only serves the tests.
"""

from __future__ import annotations

from dataclasses import dataclass

CONTROL = 1
BER = 0x00
JSON = 0x20


@dataclass(frozen=True)
class Event:
    fragment: bool
    version: int
    type: int
    header_words: int
    type_specific: int
    payload: bytes


def split_event(raw: bytes) -> Event:
    """The event at the start of ``raw`` (extra bytes after its length are ignored)."""
    word = int.from_bytes(raw[:4], "big")
    length = word & 0x7FFFFFFF
    event = raw[:length]
    header_size = event[5] * 4
    pad = event[-1]
    assert 1 <= pad <= 4 and event[-pad:] == bytes([pad]) * pad, "bad padding"
    return Event(
        fragment=bool(word >> 31),
        version=event[4] >> 6,
        type=event[4] & 0x3F,
        header_words=event[5],
        type_specific=event[6],
        payload=bytes(event[header_size : length - pad]),
    )


def make_event(payload: bytes, type_specific: int, *, fragment: bool = False) -> bytes:
    """A CONTROL event (protocol version 1) carrying ``payload``."""
    pad = 4 - (8 + len(payload)) % 4
    length = 8 + len(payload) + pad
    word = length | (0x80000000 if fragment else 0)
    header = word.to_bytes(4, "big") + bytes([(1 << 6) | CONTROL, 2, type_specific, 0])
    return header + payload + bytes([pad]) * pad
