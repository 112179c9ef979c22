"""CONTROL and heartbeat events: framing an encoded control message, and the one
control-message encode/decode path every peer (client, simulator, dissector) uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from pybmq.errors import EncodeError, ProtocolError
from pybmq.generated.wire_codec import (
    CONTROL_ENCODING_MASK,
    CONTROL_ENCODING_SHIFT,
    EVENT_HEADER_SIZE,
    EncodingType,
    EventType,
)
from pybmq.wire.framing import (
    Event,
    check_event,
    event_bytes,
    event_header_bytes,
)
from pybmq.wire.padding import padding_for, unpadded_length

if TYPE_CHECKING:
    from pybmq.generated.bmqp_ctrlmsg import (
        AuthenticationMessage,
        ControlMessage,
        NegotiationMessage,
    )

__all__ = [
    "HEARTBEAT_REQ_EVENT",
    "HEARTBEAT_RSP_EVENT",
    "ControlT",
    "decode_authentication",
    "decode_control",
    "decode_control_as",
    "decode_control_event",
    "encode_authentication",
    "encode_control",
    "encode_control_event",
    "has_feature",
    "is_heartbeat_request",
    "is_heartbeat_response",
    "parse_features",
]

ControlT = TypeVar("ControlT", "ControlMessage", "NegotiationMessage", "AuthenticationMessage")

# -- control events ------------------------------------------------------------------------------


def encode_control_event(
    payload: bytes,
    encoding: int = EncodingType.JSON,
    *,
    fragment_bit: int = 0,
    event_type: EventType = EventType.CONTROL,
) -> bytes:
    """Frame an encoded control message: EventHeader (codec in typeSpecific) + payload + padding.

    ``event_type`` is CONTROL or AUTHENTICATION (framed alike, bmqp_schemaeventbuilder);
    ``fragment_bit`` exists only to reproduce captured events; peers always send 0.
    """
    if encoding not in (EncodingType.BER, EncodingType.JSON):
        raise EncodeError(f"unknown control encoding {encoding!r}")
    pad = padding_for(len(payload))
    length = EVENT_HEADER_SIZE + len(payload) + len(pad)
    type_specific = (int(encoding) & CONTROL_ENCODING_MASK) << CONTROL_ENCODING_SHIFT
    return b"".join(
        (
            event_header_bytes(event_type, length, type_specific, fragment_bit),
            bytes(payload),
            pad,
        )
    )


def decode_control_event(
    event: Event | bytes | bytearray | memoryview, event_type: EventType = EventType.CONTROL
) -> tuple[EncodingType, bytes]:
    """The encoding and the unpadded payload of a CONTROL (or AUTHENTICATION) event."""
    data = event_bytes(event)
    hsize, length, type_specific = check_event(data, event_type)
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


def encode_control(
    message: object,
    encoding: int | str = EncodingType.JSON,
    event_type: EventType = EventType.CONTROL,
) -> bytes:
    """A CONTROL event carrying ``message`` (a generated ControlMessage or NegotiationMessage) in
    ``encoding``: an ``EncodingType`` or its name ("JSON", "BER"). With ``event_type``
    AUTHENTICATION it frames an AuthenticationMessage instead."""
    if isinstance(encoding, str):
        if encoding not in ("JSON", "BER"):
            raise EncodeError(f"unknown control encoding {encoding!r}")
        encoding = EncodingType[encoding]
    if encoding == EncodingType.JSON:
        from pybmq.generated.bmqp_ctrlmsg_json import encode_json

        payload = encode_json(message)
    elif encoding == EncodingType.BER:
        from pybmq.generated.bmqp_ctrlmsg_ber import encode_ber

        payload = encode_ber(message)
    else:
        raise EncodeError(f"unknown control encoding {encoding!r}")
    return encode_control_event(payload, encoding, event_type=event_type)


def encode_authentication(
    message: AuthenticationMessage, encoding: int | str = EncodingType.BER
) -> bytes:
    """An AUTHENTICATION event: the C++ SDK sends its request in BER
    (bmqimp_authenticatedchannelfactory); a broker answers in the request's encoding."""
    return encode_control(message, encoding, EventType.AUTHENTICATION)


def decode_authentication(
    event: Event | bytes | bytearray | memoryview,
) -> tuple[AuthenticationMessage, EncodingType]:
    """The AuthenticationMessage of an AUTHENTICATION event, and the encoding the peer used."""
    from pybmq.generated.bmqp_ctrlmsg import AuthenticationMessage

    return _decode_as(event, AuthenticationMessage, EventType.AUTHENTICATION)


def decode_control_as(
    event: Event | bytes | bytearray | memoryview, cls: type[ControlT]
) -> tuple[ControlT, EncodingType]:
    """The ``cls`` message in a CONTROL event, in whichever encoding the peer chose, and that
    encoding: the typed form, for a peer that knows what it expects next."""
    return _decode_as(event, cls, EventType.CONTROL)


def _decode_as(
    event: Event | bytes | bytearray | memoryview, cls: type[ControlT], event_type: EventType
) -> tuple[ControlT, EncodingType]:
    from pybmq.generated.bmqp_ctrlmsg_ber import decode_ber
    from pybmq.generated.bmqp_ctrlmsg_json import decode_json

    encoding, payload = decode_control_event(event, event_type)
    if encoding == EncodingType.JSON:
        return decode_json(cls, payload), encoding
    return decode_ber(cls, payload), encoding


def decode_control(
    event: Event | bytes | bytearray | memoryview, cls: type | None = None
) -> tuple[EncodingType, object]:
    """(encoding, message) of a CONTROL event, for readers that do not know what comes next.

    Without ``cls`` the payload is read as a ControlMessage, else as a NegotiationMessage (the
    first exchange of a session); the two never both decode on the vectors we hold, but a
    session that knows which one it expects should say so (``decode_control_as``).
    """
    from pybmq.generated import bmqp_ctrlmsg

    candidates = (
        [cls] if cls is not None else [bmqp_ctrlmsg.ControlMessage, bmqp_ctrlmsg.NegotiationMessage]
    )
    first_error: ProtocolError | None = None
    for candidate in candidates:
        try:
            message, encoding = decode_control_as(event, candidate)
            return encoding, message
        except ProtocolError as exc:
            first_error = first_error or exc
    assert first_error is not None
    raise first_error


def parse_features(features: str) -> dict[str, list[str]]:
    """The ``features`` string of a ClientIdentity or BrokerIdentity as a mapping:
    ``"PROTOCOL_ENCODING:BER,JSON;MPS:MESSAGE_PROPERTIES_EX"`` →
    ``{"PROTOCOL_ENCODING": ["BER", "JSON"], "MPS": ["MESSAGE_PROPERTIES_EX"]}``. A field listed
    without values (``CONFIGURE_STREAM``) maps to ``[]``."""
    parsed: dict[str, list[str]] = {}
    for item in features.split(";"):
        name, _, values = item.partition(":")
        name = name.strip()
        if name:
            parsed[name] = [v.strip() for v in values.split(",") if v.strip()]
    return parsed


def has_feature(features: str, field: str, value: str | None = None) -> bool:
    """Whether ``features`` lists ``field`` (and, when given, ``value`` under it)."""
    values = parse_features(features).get(field)
    return values is not None and (value is None or value in values)


# -- heartbeats ----------------------------------------------------------------------------------
# bmqp_heartbeatmonitor.cpp: a heartbeat is a bare 8-byte EventHeader of type HEARTBEAT_REQ; the
# peer answers with a bare HEARTBEAT_RSP.
HEARTBEAT_REQ_EVENT = event_header_bytes(EventType.HEARTBEAT_REQ, EVENT_HEADER_SIZE)
HEARTBEAT_RSP_EVENT = event_header_bytes(EventType.HEARTBEAT_RSP, EVENT_HEADER_SIZE)


def is_heartbeat_request(event: Event) -> bool:
    return event.header.type == EventType.HEARTBEAT_REQ


def is_heartbeat_response(event: Event) -> bool:
    return event.header.type == EventType.HEARTBEAT_RSP
