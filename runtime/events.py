"""Building and reading BlazingMQ events: control, heartbeat, PUT, PUSH, ACK, CONFIRM, REJECT.

Builders return finished event bytes; iterators take an event (``Event`` or bytes) and yield small
typed records. Everything here is the hot path of a client or a simulator, so it works on
precompiled ``struct.Struct`` objects from the generated codec and avoids per-message objects beyond
the one record it yields.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from crc32c import crc32c as _crc32c
from pybmq.compression import DEFAULT_MAX_DECOMPRESSED_SIZE, decompress, maybe_compress
from pybmq.errors import EncodeError, ProtocolError, UsageError
from pybmq.framing import MAX_EVENT_SIZE, Event, event_type_name
from pybmq.generated.wire_codec import (
    ACK_MESSAGE,
    COMPRESSION_MIN_APPDATA_SIZE,
    CONFIRM_MESSAGE,
    CONTROL_ENCODING_MASK,
    CONTROL_ENCODING_SHIFT,
    DEFAULT_SUBQUEUE_ID,
    EVENT_HEADER,
    EVENT_HEADER_SIZE,
    PADDING,
    PROTOCOL_VERSION,
    PUSH_HEADER,
    PUSH_HEADER_SIZE,
    PUT_EVENT_MAX_SIZE_SOFT,
    PUT_HEADER,
    PUT_HEADER_SIZE,
    PUT_MAX_PAYLOAD_SIZE_SOFT,
    REJECT_MESSAGE,
    AckMessage,
    AckStatus,
    CompressionAlgorithmType,
    ConfirmMessage,
    EncodingType,
    EventType,
    OptionType,
    PushHeaderFlags,
    PutHeaderFlags,
    RejectMessage,
    SubQueueInfo,
    unpack_event_header,
)
from pybmq.options import (
    encode_msg_group_id,
    encode_packed_sub_queue_info,
    encode_sub_queue_ids_old,
    encode_sub_queue_infos,
    parse_options,
)
from pybmq.padding import padding_for, unpadded_length
from pybmq.properties import MessageProperties, properties_area_size

__all__ = [
    "HEARTBEAT_REQ_EVENT",
    "HEARTBEAT_RSP_EVENT",
    "PADDING",
    "AckEventBuilder",
    "AckMessage",
    "AckStatus",
    "CompressionAlgorithmType",
    "ConfirmEventBuilder",
    "ConfirmMessage",
    "EncodingType",
    "EventType",
    "PushEventBuilder",
    "PushMessage",
    "PutEventBuilder",
    "PutMessage",
    "RejectEventBuilder",
    "RejectMessage",
    "SubQueueInfo",
    "decode_control",
    "decode_control_event",
    "decode_push",
    "decode_put",
    "encode_control",
    "encode_control_event",
    "encode_msg_group_id",
    "encode_packed_sub_queue_info",
    "encode_sub_queue_ids_old",
    "encode_sub_queue_infos",
    "iter_ack",
    "iter_confirm",
    "iter_push",
    "iter_put",
    "iter_reject",
    "padding_for",
    "parse_options",
    "unpadded_length",
]


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


def encode_control(message: object, encoding: int = EncodingType.JSON) -> bytes:
    """A CONTROL event carrying ``message`` (a generated ControlMessage or NegotiationMessage)."""
    if encoding == EncodingType.JSON:
        from pybmq.generated.bmqp_ctrlmsg_json import encode_json

        return encode_control_event(encode_json(message), EncodingType.JSON)
    if encoding == EncodingType.BER:
        from pybmq.generated.bmqp_ctrlmsg_ber import encode_ber

        return encode_control_event(encode_ber(message), EncodingType.BER)
    raise EncodeError(f"unknown control encoding {encoding!r}")


def decode_control(
    event: Event | bytes | bytearray | memoryview, cls: type | None = None
) -> tuple[EncodingType, object]:
    """(encoding, message) of a CONTROL event.

    Without ``cls`` the payload is read as a ControlMessage, else as a NegotiationMessage (the
    first exchange of a session); the two never both decode on the vectors we hold, but a
    session that knows which one it expects should say so.
    """
    from pybmq.generated import bmqp_ctrlmsg, bmqp_ctrlmsg_ber, bmqp_ctrlmsg_json

    encoding, payload = decode_control_event(event)
    decode = (
        bmqp_ctrlmsg_json.decode_json
        if encoding == EncodingType.JSON
        else bmqp_ctrlmsg_ber.decode_ber
    )
    candidates = (
        [cls] if cls is not None else [bmqp_ctrlmsg.ControlMessage, bmqp_ctrlmsg.NegotiationMessage]
    )
    first_error: ProtocolError | None = None
    for candidate in candidates:
        try:
            return encoding, decode(candidate, payload)
        except ProtocolError as exc:
            first_error = first_error or exc
    assert first_error is not None
    raise first_error


# -- heartbeats ----------------------------------------------------------------------------------
# bmqp_heartbeatmonitor.cpp: a heartbeat is a bare 8-byte EventHeader of type HEARTBEAT_REQ; the
# peer answers with a bare HEARTBEAT_RSP.
HEARTBEAT_REQ_EVENT = event_header_bytes(EventType.HEARTBEAT_REQ, EVENT_HEADER_SIZE)
HEARTBEAT_RSP_EVENT = event_header_bytes(EventType.HEARTBEAT_RSP, EVENT_HEADER_SIZE)


def is_heartbeat_request(event: Event) -> bool:
    return event.header.type == EventType.HEARTBEAT_REQ


def is_heartbeat_response(event: Event) -> bool:
    return event.header.type == EventType.HEARTBEAT_RSP


# -- PUT and PUSH messages -----------------------------------------------------------------------


class PutMessage(NamedTuple):
    """One message of a PUT event.

    ``payload`` is decompressed (unless iterated with ``decompress=False``, when it is the wire
    bytes); ``properties_area`` is the wire-form properties (b"" without properties), decoded
    lazily by the ``properties`` attribute.
    """

    queue_id: int
    guid: bytes
    flags: int
    compression: int
    crc32c: int
    schema_id: int
    properties_area: bytes
    payload: bytes
    options: bytes
    header_words: int
    sub_queue_infos: tuple[SubQueueInfo, ...]
    msg_group_id: str | None

    @property
    def correlation_id(self) -> int:
        """The 24-bit correlation id some producers put in the GUID field (bytes 1..3)."""
        return int.from_bytes(self.guid[1:4], "big")

    @property
    def ack_requested(self) -> bool:
        return bool(self.flags & PutHeaderFlags.ACK_REQUESTED)

    @property
    def extended_properties(self) -> bool:
        return self.schema_id != 0

    @property
    def properties(self) -> MessageProperties | None:
        if not self.properties_area:
            return None
        return MessageProperties.decode(self.properties_area, extended=self.schema_id != 0)


class PushMessage(NamedTuple):
    """One message of a PUSH event (fields as in ``PutMessage``, no CRC)."""

    queue_id: int
    guid: bytes
    flags: int
    compression: int
    schema_id: int
    properties_area: bytes
    payload: bytes
    options: bytes
    header_words: int
    sub_queue_infos: tuple[SubQueueInfo, ...]
    msg_group_id: str | None

    @property
    def implicit_payload(self) -> bool:
        return bool(self.flags & PushHeaderFlags.IMPLICIT_PAYLOAD)

    @property
    def extended_properties(self) -> bool:
        return self.schema_id != 0

    @property
    def properties(self) -> MessageProperties | None:
        if not self.properties_area:
            return None
        return MessageProperties.decode(self.properties_area, extended=self.schema_id != 0)

    @property
    def sub_queue_ids(self) -> tuple[int, ...]:
        return tuple(i.sub_queue_id for i in self.sub_queue_infos) or (DEFAULT_SUBQUEUE_ID,)


_TWO_WORDS = struct.Struct(">II")
_PUT_BODY = struct.Struct(">i16sI")  # queue id, guid, crc32c after the first two words
_PUSH_BODY = struct.Struct(">i16s")
# A whole 36-byte PutHeader and the word after it (the start of the properties header, if any).
_PUT_FULL = struct.Struct(">IIi16sIH2xI")
# A whole 32-byte PushHeader and the word after it (the start of the properties header, if any)
# in one call.
_PUSH_FULL = struct.Struct(">IIi16sH2xI")
_SCHEMA = struct.Struct(">H")
_NO_INFOS: tuple[SubQueueInfo, ...] = ()
_WORD = struct.Struct(">I")
# Second PushHeader word with 8 header words and, in the options area, one SUB_QUEUE_IDS_OLD
# option with one id (2 words), one plain SUB_QUEUE_INFOS option of 3 words (header + one 8-byte
# item) or one packed option (1 word).
_ONE_ID_OLD_W1 = (2 << 8) | 8
_ONE_ID_OLD_OPTION = (OptionType.SUB_QUEUE_IDS_OLD << 26) | 2
_ONE_INFO_W1 = (3 << 8) | 8
_PACKED_INFO_W1 = (1 << 8) | 8
_ONE_INFO_OPTION = (OptionType.SUB_QUEUE_INFOS << 26) | (2 << 21) | 3
_PACKED_MASK = 0xFFFFFF00
_PACKED_OPTION = (OptionType.SUB_QUEUE_INFOS << 26) | (1 << 25)
_PROPS_FLAG = int(
    PutHeaderFlags.MESSAGE_PROPERTIES
)  # same bit in PushHeaderFlags; a plain int: IntFlag & is slow


def _split_app_data(
    data: bytes,
    start: int,
    end: int,
    flags: int,
    cat: int,
    schema: int,
    decompress_data: bool,
    max_size: int,
) -> tuple[bytes, bytes]:
    """(properties area, payload) of the application data in ``data[start:end]``."""
    if not flags & _PROPS_FLAG:
        payload = data[start:end]
        if cat and decompress_data:
            payload = decompress(payload, cat, max_size, offset=start)
        return b"", payload
    if cat and not schema:
        # Old properties format: properties and payload were compressed together.
        if not decompress_data:
            return b"", data[start:end]
        app = decompress(data[start:end], cat, max_size, offset=start)
        size = properties_area_size(app, 0, len(app))
        return app[:size], app[size:]
    size = properties_area_size(data, start, end)
    payload = data[start + size : end]
    if cat and decompress_data:
        payload = decompress(payload, cat, max_size, offset=start + size)
    return data[start : start + size], payload


def _message_bounds(
    data: bytes, pos: int, length: int, min_header: int, what: str
) -> tuple[int, int, int, int, int, int, int]:
    """Common PUT/PUSH header checks -> (flags, size, header words, options start/end, cat, ow)."""
    if length - pos < 8:
        raise ProtocolError(f"truncated {what}", offset=pos, path=what)
    w0, w1 = _TWO_WORDS.unpack_from(data, pos)
    size = (w0 & 0x0FFFFFFF) * 4
    hwords = w1 & 0x1F
    owords = w1 >> 8
    opt_start = pos + hwords * 4
    opt_end = opt_start + owords * 4
    if hwords * 4 < min_header:
        raise ProtocolError(
            f"{what} of {hwords} words is shorter than {min_header} bytes",
            offset=pos,
            path=f"{what}.headerWords",
        )
    if size < opt_end - pos or pos + size > length:
        raise ProtocolError(
            f"{what} declares {size} bytes (header + options {opt_end - pos}) with "
            f"{length - pos} left in the event",
            offset=pos,
            path=f"{what}.messageWords",
        )
    return w0 >> 28, size, hwords, opt_start, opt_end, (w1 >> 5) & 7, owords


def iter_put(
    event: Event | bytes | bytearray | memoryview,
    *,
    decompress: bool = True,
    verify_crc: bool = False,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> Iterator[PutMessage]:
    """The messages of a PUT event. ``verify_crc`` checks each CRC32-C (what a broker does).

    The whole event is validated before the first message is returned.
    """
    return iter(
        decode_put(
            event,
            decompress=decompress,
            verify_crc=verify_crc,
            max_decompressed_size=max_decompressed_size,
        )
    )


def _crc_mismatch(expected: int, actual: int, offset: int) -> ProtocolError:
    return ProtocolError(
        f"CRC32-C mismatch: header says {expected:#010x}, data gives {actual:#010x}",
        offset=offset,
        path="PutHeader.crc32c",
    )


def decode_put(
    event: Event | bytes | bytearray | memoryview,
    *,
    decompress: bool = True,
    verify_crc: bool = False,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> list[PutMessage]:
    """``iter_put`` as a list (the broker side's hot path: one list, no generator)."""
    out: list[PutMessage] = []
    append = out.append
    data = bytes(_event_bytes(event))
    hsize, length, _ = _check_event(data, EventType.PUT)
    pos = hsize
    unpack_body = _PUT_BODY.unpack_from
    unpack_header = _PUT_FULL.unpack_from
    new = tuple.__new__
    while pos < length:
        # The common case (36-byte header, no options, no compression) stays inline, as in
        # decode_push.
        if length - pos >= 40:
            w0, w1, queue_id, guid, crc, schema, word = unpack_header(data, pos)
            size = (w0 & 0x0FFFFFFF) << 2
            end = pos + size
            if w1 == 9 and end <= length and size > 36:
                start = pos + 36
                pad = data[end - 1]
                if not 1 <= pad <= 4 or pad > end - start:
                    _pad_count(data, start, end, pos)  # raises with the details
                end -= pad
                if verify_crc:
                    actual = _crc32c(data[start:end])
                    if actual != crc:
                        raise _crc_mismatch(crc, actual, pos)
                flags = w0 >> 28
                if flags & 2:
                    # ``word`` starts the MessagePropertiesHeader: area words in its low 24 bits.
                    split = start + ((word & 0xFFFFFF) << 2)
                    if split <= start or split > end:
                        properties_area_size(data, start, end)  # raises with the details
                    append(new(
                        PutMessage,
                        (queue_id, guid, flags, 0, crc, schema, data[start:split],
                         data[split:end], b"", 9, _NO_INFOS, None),
                    ))  # fmt: skip
                else:
                    append(new(
                        PutMessage,
                        (queue_id, guid, flags, 0, crc, schema, b"", data[start:end], b"", 9,
                         _NO_INFOS, None),
                    ))  # fmt: skip
                pos += size
                continue
        flags, size, hwords, opt_start, start, cat, owords = _message_bounds(
            data, pos, length, 32, "PutHeader"
        )
        queue_id, guid, crc = unpack_body(data, pos + 8)
        schema = _SCHEMA.unpack_from(data, pos + 32)[0] if hwords >= 9 else 0
        end = pos + size
        end -= _pad_count(data, start, end, pos)
        if verify_crc:
            actual = _crc32c(data[start:end])
            if actual != crc:
                raise _crc_mismatch(crc, actual, pos)
        if owords:
            options = data[opt_start:start]
            infos, group_id = parse_options(data, opt_start, start)
        else:
            options, infos, group_id = b"", _NO_INFOS, None
        props, payload = _split_app_data(
            data, start, end, flags, cat, schema, decompress, max_decompressed_size
        )
        append(
            PutMessage(
                queue_id,
                guid,
                flags,
                cat,
                crc,
                schema,
                props,
                payload,
                options,
                hwords,
                infos,
                group_id,
            )
        )
        pos += size
    return out


def iter_push(
    event: Event | bytes | bytearray | memoryview,
    *,
    decompress: bool = True,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> Iterator[PushMessage]:
    """The messages of a PUSH event; properties stay in wire form until ``.properties``.

    The whole event is validated before the first message is returned (a malformed message
    anywhere raises ProtocolError and yields nothing).
    """
    return iter(
        decode_push(event, decompress=decompress, max_decompressed_size=max_decompressed_size)
    )


def decode_push(
    event: Event | bytes | bytearray | memoryview,
    *,
    decompress: bool = True,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> list[PushMessage]:
    """``iter_push`` as a list (the hot path: one list, no generator)."""
    out: list[PushMessage] = []
    append = out.append
    data = bytes(_event_bytes(event))
    hsize, length, _ = _check_event(data, EventType.PUSH)
    pos = hsize
    unpack_body = _PUSH_BODY.unpack_from
    unpack_header = _PUSH_FULL.unpack_from
    schema_word = _SCHEMA.unpack_from
    new = tuple.__new__
    info_cache: dict[object, tuple[SubQueueInfo, ...]] = {}
    no_infos = _NO_INFOS
    record = PushMessage
    limit = length - 36  # a whole 32-byte header and the word after it fit up to here
    while pos < length:
        # The common case (28/32-byte header, no options, no compression) stays inline: one
        # unpack for the whole header and a record made without a Python-level constructor.
        if pos <= limit:
            w0, w1, queue_id, guid, schema, word = unpack_header(data, pos)
            size = (w0 & 0x0FFFFFFF) << 2
            end = pos + size
            if w1 == 8 and size > 32 and end <= length:
                # What the C++ broker sends. ``size > 32`` (a multiple of 4) leaves at least 4
                # bytes of application data, so a padding byte of 1..4 always fits.
                pad = data[end - 1]
                if (pad - 1) >> 2:  # not in 1..4
                    _pad_count(data, pos + 32, end, pos)  # raises with the details
                end -= pad
                start = pos + 32
                flags = w0 >> 28
                pos += size
                if flags & 2:
                    # ``word`` is the first word of the MessagePropertiesHeader: area words in
                    # its low 24 bits.
                    split = start + ((word & 0xFFFFFF) << 2)
                    if split <= start or split > end:
                        properties_area_size(data, start, end)  # raises with the details
                    append(new(record, (queue_id, guid, flags, 0, schema, data[start:split],
                                        data[split:end], b"", 8, no_infos, None)))  # fmt: skip
                else:
                    append(new(record, (queue_id, guid, flags, 0, schema, b"", data[start:end],
                                        b"", 8, no_infos, None)))  # fmt: skip
                continue
            if w1 == 7 and size > 32 and end <= length:
                # No schema id: those bytes already belong to the application data.
                start = pos + 28
                word = (schema_word(data, pos + 28)[0] << 16) | schema_word(data, pos + 30)[0]
                pad = data[end - 1]
                if (pad - 1) >> 2:
                    _pad_count(data, start, end, pos)  # raises with the details
                end -= pad
                flags = w0 >> 28
                split = start
                if flags & 2:
                    split = start + ((word & 0xFFFFFF) << 2)
                    if split <= start or split > end:
                        properties_area_size(data, start, end)  # raises with the details
                append(new(record, (queue_id, guid, flags, 0, 0, data[start:split],
                                    data[split:end], b"", 7, no_infos, None)))  # fmt: skip
                pos += size
                continue
            if (
                (w1 == _ONE_ID_OLD_W1 and word == _ONE_ID_OLD_OPTION)
                or (w1 == _ONE_INFO_W1 and word == _ONE_INFO_OPTION)
                or (w1 == _PACKED_INFO_W1 and word & _PACKED_MASK == _PACKED_OPTION)
            ):
                # What brokers send most: a 32-byte header and ONE sub-queue option (one old-style
                # id, one plain 8-byte info, or packed), no compression. Infos cached per value.
                if w1 == _ONE_ID_OLD_W1:
                    start = pos + 40
                    key = data[pos + 36 : pos + 40]
                elif w1 == _ONE_INFO_W1:
                    start = pos + 44
                    key = data[pos + 35 : pos + 41]  # distinct from the 4-byte old-style key
                else:
                    start = pos + 36
                    key = word & 0xFF
                infos = info_cache.get(key)
                if infos is None:
                    infos = parse_options(data, pos + 32, start)[0]
                    if len(info_cache) < 1024:
                        info_cache[key] = infos
                if end <= length and size > start - pos:
                    pad = data[end - 1]
                    if not 1 <= pad <= 4 or pad > end - start:
                        _pad_count(data, start, end, pos)  # raises with the details
                    end -= pad
                    flags = w0 >> 28
                    split = start
                    if flags & 2:
                        area = (_WORD.unpack_from(data, start)[0] & 0xFFFFFF) << 2
                        split = start + area
                        if area <= 0 or split > end:
                            properties_area_size(data, start, end)  # raises with the details
                    append(new(
                        PushMessage,
                        (queue_id, guid, flags, 0, schema, data[start:split], data[split:end],
                         data[pos + 32 : start], 8, infos, None),
                    ))  # fmt: skip
                    pos += size
                    continue
        flags, size, hwords, opt_start, start, cat, owords = _message_bounds(
            data, pos, length, 28, "PushHeader"
        )
        queue_id, guid = unpack_body(data, pos + 8)
        schema = _SCHEMA.unpack_from(data, pos + 28)[0] if hwords >= 8 else 0
        end = pos + size
        if owords:
            options = data[opt_start:start]
            infos, group_id = parse_options(data, opt_start, start)
        else:
            options, infos, group_id = b"", _NO_INFOS, None
        if flags & PushHeaderFlags.IMPLICIT_PAYLOAD and start == end:
            props, payload = b"", b""
        else:
            end -= _pad_count(data, start, end, pos)
            props, payload = _split_app_data(
                data, start, end, flags, cat, schema, decompress, max_decompressed_size
            )
        append(
            PushMessage(
                queue_id, guid, flags, cat, schema, props, payload, options, hwords, infos, group_id
            )
        )
        pos += size
    return out


def _pad_count(data: bytes, start: int, end: int, msg_offset: int) -> int:
    if end <= start:
        raise ProtocolError(
            "message has no application data (not even padding)", offset=msg_offset, path="message"
        )
    pad = data[end - 1]
    if not 1 <= pad <= 4 or pad > end - start:
        raise ProtocolError(f"invalid padding byte {pad}", offset=end - 1, path="message.padding")
    return pad


class _MessageEventBuilder:
    """Shared by PUT and PUSH builders: accumulate messages, cut events at ``max_event_size``."""

    _event_type: EventType

    def __init__(self, max_event_size: int) -> None:
        if max_event_size < EVENT_HEADER_SIZE + 64:
            raise UsageError(f"max_event_size {max_event_size} is too small")
        self.max_event_size = max_event_size
        self._events: list[bytes] = []
        self._parts: list[bytes | memoryview] = []
        self._size = EVENT_HEADER_SIZE
        self._count = 0
        self.message_count = 0

    def __len__(self) -> int:
        """Messages added since the last ``finish``."""
        return self.message_count

    def _append(self, size: int, parts: tuple[bytes | memoryview, ...]) -> None:
        if self._size + size > self.max_event_size:
            if size + EVENT_HEADER_SIZE > self.max_event_size:
                raise EncodeError(
                    f"a message of {size} bytes cannot fit an event of at most "
                    f"{self.max_event_size} bytes"
                )
            self._close()
        self._parts.extend(parts)
        self._size += size
        self._count += 1
        self.message_count += 1

    def _close(self) -> None:
        if self._count:
            self._events.append(
                b"".join((event_header_bytes(self._event_type, self._size), *self._parts))
            )
        self._parts = []
        self._size = EVENT_HEADER_SIZE
        self._count = 0

    def finish(self) -> list[bytes]:
        """All events built since the last call (possibly several, never an empty one)."""
        self._close()
        events, self._events = self._events, []
        self.message_count = 0
        return events


def _prepare_app_data(
    payload: bytes | memoryview,
    properties: MessageProperties | None,
    compression: int,
    extended: bool,
    threshold: int,
) -> tuple[bytes | memoryview, bytes | memoryview, int, int, int]:
    """(properties wire bytes, payload wire bytes, flags bits, compression, schema id)."""
    props = properties.encode(extended) if properties is not None and len(properties) else b""
    if not props:
        if compression:
            payload, compression = maybe_compress(payload, compression, threshold)
        return b"", payload, 0, compression, 0
    if compression:
        if extended:
            payload, compression = maybe_compress(payload, compression, threshold)
        else:
            app, compression = maybe_compress(props + bytes(payload), compression, threshold)
            if compression:
                return b"", app, _PROPS_FLAG, compression, 0
    return props, payload, _PROPS_FLAG, compression, 1 if extended else 0


class PutEventBuilder(_MessageEventBuilder):
    """Builds PUT events; ``finish()`` returns them (a new event starts when one is full).

    Defaults follow the C++ SDK: 36-byte PutHeader, extended properties (schema id 1) and
    compression only when asked, the data is at least 1024 bytes and it pays off.
    """

    _event_type = EventType.PUT

    def __init__(
        self,
        max_event_size: int = PUT_EVENT_MAX_SIZE_SOFT,
        *,
        compression_threshold: int = COMPRESSION_MIN_APPDATA_SIZE,
    ) -> None:
        super().__init__(max_event_size)
        self.compression_threshold = compression_threshold

    def add(
        self,
        queue_id: int,
        payload: bytes | memoryview,
        *,
        guid: bytes | None = None,
        correlation_id: int | None = None,
        properties: MessageProperties | None = None,
        ack_requested: bool = False,
        compression: int = CompressionAlgorithmType.NONE,
        extended_properties: bool = True,
        msg_group_id: str | None = None,
        flags: int | None = None,
        raw: bool = False,
        schema_id: int | None = None,
        crc32c: int | None = None,
        options: bytes | None = None,
        header_words: int = 9,
    ) -> None:
        """Add one message.

        Give ``guid`` (16 bytes) or a 24-bit ``correlation_id``. With ``raw=True`` the payload is
        the application data exactly as it must go out (properties and compression already
        applied) and ``flags``/``compression``/``schema_id`` are written as given -- for replaying
        captured messages.
        """
        if guid is None:
            if correlation_id is None:
                raise UsageError("a PUT needs a guid or a correlation_id")
            if not 0 <= correlation_id < (1 << 24):
                raise EncodeError(f"correlation_id {correlation_id} does not fit 24 bits")
            guid = b"\0" + correlation_id.to_bytes(3, "big") + b"\0" * 12
        elif len(guid) != 16:
            raise EncodeError(f"guid must be 16 bytes, got {len(guid)}")
        if raw:
            props: bytes | memoryview = b""
            cat = compression
            schema = schema_id or 0
            fbits = flags or 0
        else:
            props, payload, pflag, cat, schema = _prepare_app_data(
                payload, properties, compression, extended_properties, self.compression_threshold
            )
            fbits = (flags if flags is not None else 0) | pflag
            if ack_requested:
                fbits |= PutHeaderFlags.ACK_REQUESTED
            if schema_id is not None:
                schema = schema_id
        if options is None:
            options = encode_msg_group_id(msg_group_id) if msg_group_id else b""
        app_len = len(props) + len(payload)
        if app_len > PUT_MAX_PAYLOAD_SIZE_SOFT:
            # Upstream (PutEventBuilder::packMessageInternal) limits the application data as sent.
            raise EncodeError(
                f"application data of {app_len} bytes exceeds {PUT_MAX_PAYLOAD_SIZE_SOFT}"
            )
        pad = PADDING[app_len & 3]
        if crc32c is None:
            crc32c = _crc32c(payload, _crc32c(props)) if props else _crc32c(payload)
        hsize = header_words * 4
        size = hsize + len(options) + app_len + len(pad)
        try:
            header = PUT_HEADER.pack(
                (fbits << 28) | (size >> 2),
                ((len(options) >> 2) << 8) | (cat << 5) | header_words,
                queue_id,
                guid,
                crc32c,
                schema,
                0,
            )
        except struct.error as exc:
            raise EncodeError(f"PUT header field out of range: {exc}") from None
        if hsize != PUT_HEADER_SIZE:
            header = _resize_header(header, hsize, 32)
        self._append(size, (header, options, props, payload, pad))

    def add_many(
        self,
        queue_id: int,
        payloads: Sequence[bytes],
        guids: Sequence[bytes],
        *,
        properties: MessageProperties | None = None,
        ack_requested: bool = True,
        extended_properties: bool = True,
    ) -> None:
        """The hot path: many uncompressed messages sharing one properties object.

        The properties are encoded (and their CRC32-C computed) once for the whole batch.
        """
        if len(payloads) != len(guids):
            raise UsageError(f"{len(payloads)} payloads but {len(guids)} guids")
        if not -(1 << 31) <= queue_id < (1 << 31):
            raise EncodeError(f"queue_id {queue_id} does not fit a signed 32-bit field")
        props = (
            properties.encode(extended_properties)
            if properties is not None and len(properties)
            else b""
        )
        fbits = (_PROPS_FLAG if props else 0) | (
            PutHeaderFlags.ACK_REQUESTED if ack_requested else 0
        )
        schema = 1 if props and extended_properties else 0
        props_crc = _crc32c(props)
        plen = len(props)
        pack = PUT_HEADER.pack
        crc = _crc32c
        pads = PADDING
        w0_base = fbits << 28
        w1 = 9  # header words; no options, no compression
        max_size = self.max_event_size
        max_app = PUT_MAX_PAYLOAD_SIZE_SOFT
        parts = self._parts
        # The event size and the message counts live in locals in the loop (attribute updates
        # cost more than the rest of the per-message work); they are written back before the
        # checked path runs and when the loop ends.
        total = self._size
        added = 0
        try:
            for payload, guid in zip(payloads, guids):  # noqa: B905 - lengths checked above
                app_len = plen + len(payload)
                pad = pads[app_len & 3]
                size = 36 + app_len + len(pad)
                if total + size > max_size or len(guid) != 16 or app_len > max_app:
                    # Rare: full event, bad guid or oversized data; the checked path handles it.
                    self._size = total
                    self._count += added
                    self.message_count += added
                    added = 0
                    self.add(queue_id, payload, guid=guid, properties=properties,
                             ack_requested=ack_requested,
                             extended_properties=extended_properties)  # fmt: skip
                    parts = self._parts
                    total = self._size
                    continue
                header = pack(
                    w0_base | (size >> 2), w1, queue_id, guid, crc(payload, props_crc), schema, 0
                )
                parts += (
                    header,
                    props,
                    payload,
                    pad,
                )
                total += size
                added += 1
        finally:
            self._size = total
            self._count += added
            self.message_count += added


def _resize_header(header: bytes, size: int, minimum: int) -> bytes:
    if size < minimum:
        raise EncodeError(f"header of {size} bytes is shorter than the {minimum}-byte minimum")
    return header[:size] if size <= len(header) else header + b"\0" * (size - len(header))


class PushEventBuilder(_MessageEventBuilder):
    """Builds PUSH events (the broker side; the simulator uses it)."""

    _event_type = EventType.PUSH

    def __init__(
        self,
        max_event_size: int = MAX_EVENT_SIZE,
        *,
        compression_threshold: int = COMPRESSION_MIN_APPDATA_SIZE,
    ) -> None:
        super().__init__(max_event_size)
        self.compression_threshold = compression_threshold

    def add(
        self,
        queue_id: int,
        guid: bytes,
        payload: bytes | memoryview,
        *,
        properties: MessageProperties | None = None,
        sub_queue_infos: Iterable[tuple[int, int | None]] | None = None,
        packed_rda: int | bool | None = False,
        compression: int = CompressionAlgorithmType.NONE,
        extended_properties: bool = True,
        implicit_payload: bool = False,
        out_of_order: bool = False,
        msg_group_id: str | None = None,
        flags: int | None = None,
        raw: bool = False,
        schema_id: int | None = None,
        options: bytes | None = None,
        header_words: int = 8,
    ) -> None:
        """Add one message. ``sub_queue_infos``: (sub-queue id, RDA counter or None) pairs,
        sent as a SUB_QUEUE_INFOS option; ``packed_rda`` (an int, or None for unlimited) sends the
        packed form for the default sub-queue instead. ``raw`` as in ``PutEventBuilder.add``."""
        if len(guid) != 16:
            raise EncodeError(f"guid must be 16 bytes, got {len(guid)}")
        if raw:
            props: bytes | memoryview = b""
            cat = compression
            schema = schema_id or 0
            fbits = flags or 0
        else:
            props, payload, pflag, cat, schema = _prepare_app_data(
                payload, properties, compression, extended_properties, self.compression_threshold
            )
            fbits = (flags if flags is not None else 0) | pflag
            if implicit_payload:
                fbits |= PushHeaderFlags.IMPLICIT_PAYLOAD
            if out_of_order:
                fbits |= PushHeaderFlags.OUT_OF_ORDER
            if schema_id is not None:
                schema = schema_id
        if options is None:
            chunks = []
            if packed_rda is not False:
                chunks.append(encode_packed_sub_queue_info(packed_rda))  # type: ignore[arg-type]
            elif sub_queue_infos is not None:
                chunks.append(encode_sub_queue_infos(sub_queue_infos))
            if msg_group_id:
                chunks.append(encode_msg_group_id(msg_group_id))
            options = b"".join(chunks)
        if implicit_payload and not props and not payload:
            app_len = 0
            pad = b""
        else:
            app_len = len(props) + len(payload)
            pad = PADDING[app_len & 3]
        hsize = header_words * 4
        size = hsize + len(options) + app_len + len(pad)
        try:
            header = PUSH_HEADER.pack(
                (fbits << 28) | (size >> 2),
                ((len(options) >> 2) << 8) | (cat << 5) | header_words,
                queue_id,
                guid,
                schema,
                0,
            )
        except struct.error as exc:
            raise EncodeError(f"PUSH header field out of range: {exc}") from None
        if hsize != PUSH_HEADER_SIZE:
            header = _resize_header(header, hsize, 28)
        self._append(size, (header, options, props, payload, pad))


# -- ACK, CONFIRM and REJECT: one header, then fixed-size entries ---------------------------------


def _batch_entries(
    data: bytes, hsize: int, length: int, what: str, entry: struct.Struct
) -> tuple[memoryview, struct.Struct, int]:
    """Validate the batch header; return (entries view, entry Struct, flags byte)."""
    if length - hsize < 4:
        raise ProtocolError(f"truncated {what}", offset=hsize, path=what)
    words = data[hsize]
    hwords, pmwords = words >> 4, words & 0xF
    start = hsize + hwords * 4
    size = pmwords * 4
    if hwords < 1 or start > length:
        raise ProtocolError(
            f"{what} of {hwords} words does not fit", offset=hsize, path=f"{what}.headerWords"
        )
    if size < entry.size:
        raise ProtocolError(
            f"{what} entries of {size} bytes are smaller than {entry.size}",
            offset=hsize,
            path=f"{what}.perMessageWords",
        )
    if (length - start) % size:
        raise ProtocolError(
            f"{length - start} bytes of entries are not a multiple of {size}",
            offset=start,
            path=what,
        )
    if size != entry.size:  # a newer peer's longer entries: read the known prefix
        entry = struct.Struct(entry.format + f"{size - entry.size}x")
    return memoryview(data)[start:length], entry, data[hsize + 1]


# Records straight from iter_unpack's tuples, without a Python-level constructor call.
_MAKE_CONFIRM = functools.partial(tuple.__new__, ConfirmMessage)
_MAKE_REJECT = functools.partial(tuple.__new__, RejectMessage)


def iter_ack(event: Event | bytes | bytearray | memoryview) -> Iterator[AckMessage]:
    """The AckMessages of an ACK event (status per AckStatus, 24-bit correlation id)."""
    data = bytes(_event_bytes(event))
    hsize, length, _ = _check_event(data, EventType.ACK)
    view, entry, _ = _batch_entries(data, hsize, length, "AckHeader", ACK_MESSAGE)
    new = tuple.__new__
    return iter(
        [
            new(AckMessage, (w >> 28, (w >> 24) & 0xF, w & 0xFFFFFF, guid, queue_id))
            for w, guid, queue_id in entry.iter_unpack(view)
        ]
    )


def iter_confirm(event: Event | bytes | bytearray | memoryview) -> Iterator[ConfirmMessage]:
    data = bytes(_event_bytes(event))
    hsize, length, _ = _check_event(data, EventType.CONFIRM)
    view, entry, _ = _batch_entries(data, hsize, length, "ConfirmHeader", CONFIRM_MESSAGE)
    return map(_MAKE_CONFIRM, entry.iter_unpack(view))


def iter_reject(event: Event | bytes | bytearray | memoryview) -> Iterator[RejectMessage]:
    data = bytes(_event_bytes(event))
    hsize, length, _ = _check_event(data, EventType.REJECT)
    view, entry, _ = _batch_entries(data, hsize, length, "RejectHeader", REJECT_MESSAGE)
    return map(_MAKE_REJECT, entry.iter_unpack(view))


class _BatchEventBuilder:
    _event_type: EventType
    _entry: struct.Struct

    def __init__(self, max_event_size: int = MAX_EVENT_SIZE) -> None:
        self.max_per_event = (max_event_size - EVENT_HEADER_SIZE - 4) // self._entry.size
        if self.max_per_event < 1:
            raise UsageError(f"max_event_size {max_event_size} is too small")
        self._entries: list[bytes] = []
        self._header_byte = (1 << 4) | (self._entry.size // 4)

    def __len__(self) -> int:
        return len(self._entries)

    def _batch_header(self) -> bytes:
        return bytes((self._header_byte, 0, 0, 0))

    def finish(self) -> list[bytes]:
        """The events holding every entry added since the last call."""
        entries, self._entries = self._entries, []
        events = []
        step = self.max_per_event
        header = self._batch_header()
        for i in range(0, len(entries), step):
            chunk = entries[i : i + step]
            size = EVENT_HEADER_SIZE + 4 + len(chunk) * self._entry.size
            events.append(b"".join((event_header_bytes(self._event_type, size), header, *chunk)))
        return events


class AckEventBuilder(_BatchEventBuilder):
    _event_type = EventType.ACK
    _entry = ACK_MESSAGE

    def add(self, status: int, correlation_id: int, guid: bytes, queue_id: int) -> None:
        if not 0 <= status <= 0xF:
            raise EncodeError(f"ack status {status} does not fit 4 bits")
        if not 0 <= correlation_id < (1 << 24):
            raise EncodeError(f"correlation_id {correlation_id} does not fit 24 bits")
        if len(guid) != 16:
            raise EncodeError(f"guid must be 16 bytes, got {len(guid)}")
        try:
            self._entries.append(ACK_MESSAGE.pack((status << 24) | correlation_id, guid, queue_id))
        except struct.error as exc:
            raise EncodeError(f"ack entry out of range: {exc}") from None

    def add_many(self, entries: Iterable[tuple[int, int, bytes, int]]) -> None:
        """(status, correlation id, guid, queue id) tuples, packed in one pass."""
        pack = ACK_MESSAGE.pack
        try:
            packed = [
                pack((s << 24) | c, g, q)
                for s, c, g, q in entries
                if (0 <= s <= 0xF and 0 <= c <= 0xFFFFFF and len(g) == 16) or _bad_ack(s, c, g)
            ]
        except struct.error as exc:
            raise EncodeError(f"ack entry out of range: {exc}") from None
        self._entries += packed


def _bad_ack(status: int, correlation_id: int, guid: bytes) -> bool:
    raise EncodeError(
        f"invalid ack entry: status {status}, correlation id {correlation_id}, "
        f"guid of {len(guid)} bytes"
    )


class _GuidEntryBuilder(_BatchEventBuilder):
    def add(self, queue_id: int, guid: bytes, sub_queue_id: int = DEFAULT_SUBQUEUE_ID) -> None:
        if len(guid) != 16:
            raise EncodeError(f"guid must be 16 bytes, got {len(guid)}")
        try:
            self._entries.append(self._entry.pack(queue_id, guid, sub_queue_id))
        except struct.error as exc:
            raise EncodeError(f"entry out of range: {exc}") from None

    def add_many(self, entries: Iterable[tuple[int, bytes, int]]) -> None:
        """(queue id, guid, sub-queue id) tuples, packed in one pass."""
        pack = self._entry.pack
        try:
            packed = [pack(q, g, s) for q, g, s in entries if len(g) == 16 or _bad_guid(g)]
        except struct.error as exc:
            raise EncodeError(f"entry out of range: {exc}") from None
        self._entries += packed


def _bad_guid(guid: bytes) -> bool:
    raise EncodeError(f"guid must be 16 bytes, got {len(guid)}")


class ConfirmEventBuilder(_GuidEntryBuilder):
    _event_type = EventType.CONFIRM
    _entry = CONFIRM_MESSAGE


class RejectEventBuilder(_GuidEntryBuilder):
    _event_type = EventType.REJECT
    _entry = REJECT_MESSAGE
