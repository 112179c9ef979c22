"""Building and reading BlazingMQ events: control, heartbeat, PUT, PUSH, ACK, CONFIRM, REJECT.

Builders return finished event bytes; iterators take an event (``Event`` or bytes) and yield small
typed records. Everything here is the hot path of a client or a simulator, so it works on
precompiled ``struct.Struct`` objects from the generated codec and avoids per-message objects beyond
the one record it yields.
"""

from __future__ import annotations

from pybmq.errors import EncodeError, ProtocolError
from pybmq.framing import Event, event_type_name
from pybmq.generated.wire_codec import (
    CONTROL_ENCODING_MASK,
    CONTROL_ENCODING_SHIFT,
    EVENT_HEADER,
    EVENT_HEADER_SIZE,
    PROTOCOL_VERSION,
    EncodingType,
    EventType,
    unpack_event_header,
)

# -- padding -------------------------------------------------------------------------------------
# bmqp_protocolutil.h calcNumWordsAndPadding: data is always followed by 1-4 bytes, each holding
# the number of padding bytes, so that the total is word aligned (a full word when already aligned).
PADDING = (b"\x04\x04\x04\x04", b"\x03\x03\x03", b"\x02\x02", b"\x01")


def padding_for(length: int) -> bytes:
    """The padding bytes that follow ``length`` bytes of data."""
    return PADDING[length & 3]


def unpadded_length(buf: bytes | bytearray | memoryview, start: int, end: int, what: str) -> int:
    """Length of the data in ``buf[start:end]`` once its padding is removed.

    Like upstream (ProtocolUtil::calcUnpaddedLength) only the last byte is read; it must be 1..4
    and fit in the area.
    """
    if end <= start:
        raise ProtocolError(f"{what}: empty area where padded data was expected", offset=start)
    pad = buf[end - 1]
    if not 1 <= pad <= 4 or pad > end - start:
        raise ProtocolError(f"{what}: invalid padding byte {pad}", offset=end - 1, path=what)
    return end - start - pad


def _event_bytes(event: Event | bytes | bytearray | memoryview) -> bytes | bytearray | memoryview:
    return event.data if isinstance(event, Event) else event


def _check_event(data: bytes | bytearray | memoryview, expected: EventType) -> tuple[int, int, int]:
    """Validate the EventHeader of ``data``; return (header size, event length, type_specific)."""
    header = unpack_event_header(data, 0)
    if header.type != expected:
        raise ProtocolError(
            f"expected a {expected.name} event, got {event_type_name(header.type)}",
            offset=0,
            path="EventHeader.type",
        )
    length = header.length
    if length > len(data):
        raise ProtocolError(
            f"event declares {length} bytes but only {len(data)} are present",
            offset=0,
            path="EventHeader.length",
        )
    hsize = header.header_words * 4
    if hsize < EVENT_HEADER_SIZE or hsize > length:
        raise ProtocolError(
            f"EventHeader declares {header.header_words} header words for a {length}-byte event",
            offset=0,
            path="EventHeader.headerWords",
        )
    return hsize, length, header.type_specific


def event_header_bytes(
    event_type: int, length: int, type_specific: int = 0, fragment_bit: int = 0
) -> bytes:
    """An 8-byte EventHeader for an event of ``length`` bytes (protocol version 1)."""
    return EVENT_HEADER.pack(
        (fragment_bit << 31) | length, (PROTOCOL_VERSION << 6) | event_type, 2, type_specific, 0
    )


# -- control events ------------------------------------------------------------------------------


def encode_control_event(
    payload: bytes, encoding: int = EncodingType.JSON, *, fragment_bit: int = 0
) -> bytes:
    """Frame an encoded control message: EventHeader (codec in typeSpecific) + payload + padding.

    ``fragment_bit`` exists only to reproduce captured events; peers always send 0.
    """
    if encoding not in (EncodingType.BER, EncodingType.JSON):
        raise EncodeError(f"unknown control encoding {encoding!r}")
    pad = padding_for(len(payload))
    length = EVENT_HEADER_SIZE + len(payload) + len(pad)
    type_specific = (int(encoding) & CONTROL_ENCODING_MASK) << CONTROL_ENCODING_SHIFT
    return b"".join(
        (
            event_header_bytes(EventType.CONTROL, length, type_specific, fragment_bit),
            bytes(payload),
            pad,
        )
    )


def decode_control_event(
    event: Event | bytes | bytearray | memoryview,
) -> tuple[EncodingType, bytes]:
    """The encoding and the unpadded payload of a CONTROL event."""
    data = _event_bytes(event)
    hsize, length, type_specific = _check_event(data, EventType.CONTROL)
    code = (type_specific >> CONTROL_ENCODING_SHIFT) & CONTROL_ENCODING_MASK
    try:
        encoding = EncodingType(code)
    except ValueError:
        raise ProtocolError(
            f"unknown control encoding {code} in EventHeader.typeSpecific",
            offset=6,
            path="EventHeader.typeSpecific",
        ) from None
    end = hsize + unpadded_length(data, hsize, length, "ControlEvent.padding")
    return encoding, bytes(data[hsize:end])


# -- heartbeats ----------------------------------------------------------------------------------
# bmqp_heartbeatmonitor.cpp: a heartbeat is a bare 8-byte EventHeader of type HEARTBEAT_REQ; the
# peer answers with a bare HEARTBEAT_RSP.
HEARTBEAT_REQ_EVENT = event_header_bytes(EventType.HEARTBEAT_REQ, EVENT_HEADER_SIZE)
HEARTBEAT_RSP_EVENT = event_header_bytes(EventType.HEARTBEAT_RSP, EVENT_HEADER_SIZE)


def is_heartbeat_request(event: Event) -> bool:
    return event.header.type == EventType.HEARTBEAT_REQ


def is_heartbeat_response(event: Event) -> bool:
    return event.header.type == EventType.HEARTBEAT_RSP
