"""Fast codecs for the BlazingMQ binary headers: the hot path of the wire layer.

GENERATED from schema/bmqp_layout.yaml by pybmq.codegen.layout -- do not edit; run `make generate`.

Each struct gets a precompiled ``struct.Struct`` over its units, a NamedTuple of its fields,
``unpack_x(buf, offset)`` (raises DecodeError when the buffer is too short), ``pack_x_into(buf,
offset, ...)`` (unchecked: callers guarantee the ranges) and ``encode_x(value)`` (checked: raises
EncodeError for a value that does not fit its field).
"""

from __future__ import annotations

import enum
import struct
from typing import NamedTuple, Union

from pybmq.errors import DecodeError, EncodeError

__all__ = [
    "ACK_HEADER_HEADER_WORDS_SHIFT",
    "ACK_HEADER_PER_MESSAGE_WORDS_MASK",
    "ACK_HEADER_SIZE",
    "ACK_MESSAGE",
    "ACK_MESSAGE_CORRELATION_ID_MASK",
    "ACK_MESSAGE_RESERVED_SHIFT",
    "ACK_MESSAGE_STATUS_MASK",
    "ACK_MESSAGE_STATUS_SHIFT",
    "AckHeader",
    "AckMessage",
    "AckStatus",
    "BIT_LAYOUTS",
    "Buffer",
    "COMPRESSION_MIN_APPDATA_SIZE",
    "CONFIRM_HEADER_HEADER_WORDS_SHIFT",
    "CONFIRM_HEADER_PER_MESSAGE_WORDS_MASK",
    "CONFIRM_HEADER_SIZE",
    "CONFIRM_MESSAGE",
    "CONTROL_ENCODING_MASK",
    "CONTROL_ENCODING_SHIFT",
    "CompressionAlgorithmType",
    "ConfirmHeader",
    "ConfirmMessage",
    "DEFAULT_APP_ID",
    "DEFAULT_SUBQUEUE_ID",
    "EVENT_BODIES",
    "EVENT_HEADER",
    "EVENT_HEADER_FRAGMENT_BIT_SHIFT",
    "EVENT_HEADER_LENGTH_MASK",
    "EVENT_HEADER_PROTOCOL_VERSION_SHIFT",
    "EVENT_HEADER_SIZE",
    "EVENT_HEADER_TYPE_MASK",
    "EVENT_MAX_SIZE_HARD",
    "EVENT_MAX_SIZE_SOFT",
    "EncodingType",
    "EventHeader",
    "EventType",
    "MAX_MESSAGE_PROPERTIES_SIZE",
    "MAX_NUM_PROPERTIES",
    "MAX_PROPERTIES_AREA_LENGTH",
    "MAX_PROPERTY_NAME_LENGTH",
    "MAX_PROPERTY_VALUE_LENGTH",
    "MESSAGE_GUID",
    "MESSAGE_GUID_COUNTER_MASK",
    "MESSAGE_GUID_COUNTER_SHIFT",
    "MESSAGE_GUID_SIZE",
    "MESSAGE_GUID_TIMER_TICK_LSB_MASK",
    "MESSAGE_GUID_TIMER_TICK_MASK",
    "MESSAGE_GUID_TIMER_TICK_MID_AT",
    "MESSAGE_GUID_TIMER_TICK_MID_MASK",
    "MESSAGE_GUID_TIMER_TICK_MSB_AT",
    "MESSAGE_GUID_TIMER_TICK_MSB_MASK",
    "MESSAGE_GUID_VERSION_SHIFT",
    "MESSAGE_PROPERTIES_HEADER",
    "MESSAGE_PROPERTY_HEADER",
    "MESSAGE_PROPERTY_HEADER_NAME_LENGTH_MASK",
    "MESSAGE_PROPERTY_HEADER_TYPE_MASK",
    "MESSAGE_PROPERTY_HEADER_TYPE_SHIFT",
    "MESSAGE_PROPERTY_HEADER_VALUE_LOWER_MASK",
    "MESSAGE_PROPERTY_HEADER_VALUE_UPPER_AT",
    "MESSAGE_PROPERTY_HEADER_VALUE_UPPER_MASK",
    "MSG_GROUP_ID_MAX_LENGTH",
    "OPTION_HEADER",
    "OptionType",
    "PACKED_RDA_INFO_MASK",
    "PADDING",
    "PROPERTY_VALUE_STRUCTS",
    "PROTOCOL_VERSION",
    "PUSH_HEADER",
    "PUSH_HEADER_SIZE",
    "PUSH_MIN_HEADER_SIZE_FOR_SCHEMA_ID",
    "PUT_EVENT_MAX_SIZE_SOFT",
    "PUT_HEADER_MESSAGE_WORDS_MASK",
    "PUT_MAX_PAYLOAD_SIZE_SOFT",
    "PUT_MIN_HEADER_SIZE_FOR_SCHEMA_ID",
    "PropertyType",
    "PushHeader",
    "PushHeaderFlags",
    "PutHeader",
    "PutHeaderFlags",
    "QueueFlags",
    "REJECT_HEADER_HEADER_WORDS_SHIFT",
    "REJECT_HEADER_PER_MESSAGE_WORDS_MASK",
    "REJECT_HEADER_SIZE",
    "REJECT_MESSAGE",
    "RejectHeader",
    "RejectMessage",
    "STRUCTS",
    "SUB_QUEUE_ID_OLD",
    "SUB_QUEUE_INFO",
    "SubQueueInfo",
    "WORD",
    "WORD_SIZE",
    "unpack_ack_header",
    "unpack_confirm_header",
    "unpack_event_header",
    "unpack_push_header",
    "unpack_put_header",
    "unpack_reject_header",
]

Buffer = Union[bytes, bytearray, memoryview]

# -- constants ----------------------------------------------------------------------------------
WORD_SIZE = 4
PROTOCOL_VERSION = 1
COMPRESSION_MIN_APPDATA_SIZE = 1024
EVENT_MAX_SIZE_HARD = 2147483647
EVENT_MAX_SIZE_SOFT = 536870912
PUT_MAX_PAYLOAD_SIZE_SOFT = 67108864
PUT_EVENT_MAX_SIZE_SOFT = 69206016
MAX_NUM_PROPERTIES = 255
MAX_MESSAGE_PROPERTIES_SIZE = 67108860
MAX_PROPERTIES_AREA_LENGTH = 67108856
MAX_PROPERTY_NAME_LENGTH = 4095
MAX_PROPERTY_VALUE_LENGTH = 67104745
MSG_GROUP_ID_MAX_LENGTH = 31
CONTROL_ENCODING_SHIFT = 5
CONTROL_ENCODING_MASK = 7
PUT_MIN_HEADER_SIZE_FOR_SCHEMA_ID = 36
PUSH_MIN_HEADER_SIZE_FOR_SCHEMA_ID = 32
DEFAULT_SUBQUEUE_ID = 0
DEFAULT_APP_ID = "__default"
PACKED_RDA_INFO_MASK = 255

# Padding after data of length n is PADDING[n % 4]: 1..4 bytes, each holding the count.
PADDING: tuple[bytes, ...] = (
    b"\x04\x04\x04\x04",
    b"\x03\x03\x03",
    b"\x02\x02",
    b"\x01",
)


# -- enums --------------------------------------------------------------------------------------


class EventType(enum.IntEnum):
    """bmqp_protocol.h: struct EventType."""

    UNDEFINED = 0
    CONTROL = 1
    PUT = 2
    CONFIRM = 3
    PUSH = 4
    ACK = 5
    CLUSTER_STATE = 6
    ELECTOR = 7
    STORAGE = 8
    RECOVERY = 9
    PARTITION_SYNC = 10
    HEARTBEAT_REQ = 11
    HEARTBEAT_RSP = 12
    REJECT = 13
    REPLICATION_RECEIPT = 14
    AUTHENTICATION = 15


class EncodingType(enum.IntEnum):
    """bmqp_protocol.h: struct EncodingType (BER must stay 0 for old peers)."""

    BER = 0
    JSON = 1


class OptionType(enum.IntEnum):
    """bmqp_protocol.h: struct OptionType."""

    UNDEFINED = 0
    SUB_QUEUE_IDS_OLD = 1
    MSG_GROUP_ID = 2
    SUB_QUEUE_INFOS = 3


class PropertyType(enum.IntEnum):
    """bmqt_propertytype.h: struct PropertyType."""

    UNDEFINED = 0
    BOOL = 1
    CHAR = 2
    SHORT = 3
    INT32 = 4
    INT64 = 5
    STRING = 6
    BINARY = 7


class CompressionAlgorithmType(enum.IntEnum):
    """bmqt_compressionalgorithmtype.h: struct CompressionAlgorithmType."""

    NONE = 0
    ZLIB = 1


class PutHeaderFlags(enum.IntFlag):
    """bmqp_protocol.h: struct PutHeaderFlags (bit values of PutHeader.flags)."""

    ACK_REQUESTED = 1
    MESSAGE_PROPERTIES = 2
    UNUSED3 = 4
    UNUSED4 = 8


class PushHeaderFlags(enum.IntFlag):
    """bmqp_protocol.h: struct PushHeaderFlags (bit values of PushHeader.flags)."""

    IMPLICIT_PAYLOAD = 1
    MESSAGE_PROPERTIES = 2
    OUT_OF_ORDER = 4
    UNUSED4 = 8


class QueueFlags(enum.IntFlag):
    """bmqt_queueflags.h: struct QueueFlags (QueueHandleParameters.flags of openQueue)."""

    ADMIN = 1
    READ = 2
    WRITE = 4
    ACK = 8


class AckStatus(enum.IntEnum):
    """bmqp_protocolutil.cpp: ProtocolUtil::ackResultToCode (4-bit AckMessage.status)."""

    SUCCESS = 0
    LIMIT_MESSAGES = 1
    LIMIT_BYTES = 2
    UNKNOWN = 5
    STORAGE_FAILURE = 6
    NOT_READY = 7


# -- EventHeader (bmqp_protocol.h: struct EventHeader) ----------------------------------


class EventHeader(NamedTuple):
    """Starts every event; `length` counts the whole event, this header included. [8 bytes; bmqp_protocol.h: struct EventHeader]"""

    fragment_bit: int
    length: int
    protocol_version: int
    type: int
    header_words: int
    type_specific: int
    reserved: int


EVENT_HEADER = struct.Struct(">IBBBB")
EVENT_HEADER_SIZE = 8
EVENT_HEADER_FRAGMENT_BIT_SHIFT = 31
EVENT_HEADER_LENGTH_MASK = 0x7FFFFFFF
EVENT_HEADER_PROTOCOL_VERSION_SHIFT = 6
EVENT_HEADER_TYPE_MASK = 0x3F


def unpack_event_header(buf: Buffer, offset: int = 0) -> EventHeader:
    """Read one EventHeader at ``offset``."""
    try:
        u0, u1, u2, u3, u4 = EVENT_HEADER.unpack_from(buf, offset)
    except struct.error:
        raise DecodeError(
            f"truncated EventHeader: need 8 bytes, {max(len(buf) - offset, 0)} left",
            offset=offset,
            path="EventHeader",
        ) from None
    return EventHeader(
        u0 >> 31,
        u0 & 0x7FFFFFFF,
        u1 >> 6,
        u1 & 0x3F,
        u2,
        u3,
        u4,
    )


# -- OptionHeader (bmqp_protocol.h: struct OptionHeader) --------------------------------


OPTION_HEADER = struct.Struct(">I")


# -- SubQueueInfo (bmqp_protocol.h: struct SubQueueInfo and struct RdaInfo) -------------


class SubQueueInfo(NamedTuple):
    """One item of a non-packed SUB_QUEUE_INFOS option (item size in words is the option's type_specific). RDA = remaining delivery attempts. [8 bytes; bmqp_protocol.h: struct SubQueueInfo and struct RdaInfo]"""

    sub_queue_id: int
    rda_unlimited: int
    rda_poisonous: int
    rda_counter: int
    reserved: bytes


SUB_QUEUE_INFO = struct.Struct(">IB3s")


# -- SubQueueIdOld (bmqp_protocol.h: Protocol::SubQueueIdsArrayOld (option SUB_QUEUE_IDS_OLD))


SUB_QUEUE_ID_OLD = struct.Struct(">I")


# -- MessagePropertiesHeader (bmqp_protocol.h: struct MessagePropertiesHeader) ----------


MESSAGE_PROPERTIES_HEADER = struct.Struct(">BBHBB")


# -- MessagePropertyHeader (bmqp_protocol.h: struct MessagePropertyHeader) --------------


MESSAGE_PROPERTY_HEADER = struct.Struct(">HHH")
MESSAGE_PROPERTY_HEADER_TYPE_SHIFT = 10
MESSAGE_PROPERTY_HEADER_TYPE_MASK = 0x1F
MESSAGE_PROPERTY_HEADER_VALUE_UPPER_MASK = 0x3FF
MESSAGE_PROPERTY_HEADER_NAME_LENGTH_MASK = 0xFFF
MESSAGE_PROPERTY_HEADER_VALUE_UPPER_AT = 16
MESSAGE_PROPERTY_HEADER_VALUE_LOWER_MASK = 0xFFFF


# -- PutHeader (bmqp_protocol.h: struct PutHeader) --------------------------------------


class PutHeader(NamedTuple):
    """One per PUT message. `message_words` counts header, options, application data and padding; application data starts at 4 * (header_words + options_words). The 16-byte guid field holds either a MessageGUID or a 24-bit correlation id in bytes 1..3. crc32c covers the application data as sent (after compression), padding excluded. [36 bytes; bmqp_protocol.h: struct PutHeader]"""

    flags: int
    message_words: int
    options_words: int
    compression: int
    header_words: int
    queue_id: int
    guid: bytes
    crc32c: int
    schema_id: int
    reserved: int


_PUT_HEADER = struct.Struct(">IIi16sIHH")
PUT_HEADER_MESSAGE_WORDS_MASK = 0xFFFFFFF


def unpack_put_header(buf: Buffer, offset: int = 0) -> PutHeader:
    """Read one PutHeader at ``offset``."""
    try:
        u0, u1, u2, u3, u4, u5, u6 = _PUT_HEADER.unpack_from(buf, offset)
    except struct.error:
        raise DecodeError(
            f"truncated PutHeader: need 36 bytes, {max(len(buf) - offset, 0)} left",
            offset=offset,
            path="PutHeader",
        ) from None
    return PutHeader(
        u0 >> 28,
        u0 & 0xFFFFFFF,
        u1 >> 8,
        (u1 >> 5) & 0x7,
        u1 & 0x1F,
        u2,
        u3,
        u4,
        u5,
        u6,
    )


# -- PushHeader (bmqp_protocol.h: struct PushHeader) ------------------------------------


class PushHeader(NamedTuple):
    """One per PUSH message; like PutHeader without crc32c. Older brokers send header_words 7 (no schema id). With IMPLICIT_PAYLOAD there is no application data. [32 bytes; bmqp_protocol.h: struct PushHeader]"""

    flags: int
    message_words: int
    options_words: int
    compression: int
    header_words: int
    queue_id: int
    guid: bytes
    schema_id: int
    reserved: int


PUSH_HEADER = struct.Struct(">IIi16sHH")
PUSH_HEADER_SIZE = 32


def unpack_push_header(buf: Buffer, offset: int = 0) -> PushHeader:
    """Read one PushHeader at ``offset``."""
    try:
        u0, u1, u2, u3, u4, u5 = PUSH_HEADER.unpack_from(buf, offset)
    except struct.error:
        raise DecodeError(
            f"truncated PushHeader: need 32 bytes, {max(len(buf) - offset, 0)} left",
            offset=offset,
            path="PushHeader",
        ) from None
    return PushHeader(
        u0 >> 28,
        u0 & 0xFFFFFFF,
        u1 >> 8,
        (u1 >> 5) & 0x7,
        u1 & 0x1F,
        u2,
        u3,
        u4,
        u5,
    )


# -- AckHeader (bmqp_protocol.h: struct AckHeader) --------------------------------------


class AckHeader(NamedTuple):
    """One per ACK event, followed by AckMessages of per_message_words each. [4 bytes; bmqp_protocol.h: struct AckHeader]"""

    header_words: int
    per_message_words: int
    flags: int
    reserved: int


_ACK_HEADER = struct.Struct(">BBH")
ACK_HEADER_SIZE = 4
ACK_HEADER_HEADER_WORDS_SHIFT = 4
ACK_HEADER_PER_MESSAGE_WORDS_MASK = 0xF


def unpack_ack_header(buf: Buffer, offset: int = 0) -> AckHeader:
    """Read one AckHeader at ``offset``."""
    try:
        u0, u1, u2 = _ACK_HEADER.unpack_from(buf, offset)
    except struct.error:
        raise DecodeError(
            f"truncated AckHeader: need 4 bytes, {max(len(buf) - offset, 0)} left",
            offset=offset,
            path="AckHeader",
        ) from None
    return AckHeader(
        u0 >> 4,
        u0 & 0xF,
        u1,
        u2,
    )


# -- AckMessage (bmqp_protocol.h: struct AckMessage) ------------------------------------


class AckMessage(NamedTuple):
    """Status (AckStatus) and the producer's 24-bit correlation id, then the broker's GUID. [24 bytes; bmqp_protocol.h: struct AckMessage]"""

    reserved: int
    status: int
    correlation_id: int
    guid: bytes
    queue_id: int


ACK_MESSAGE = struct.Struct(">I16si")
ACK_MESSAGE_RESERVED_SHIFT = 28
ACK_MESSAGE_STATUS_SHIFT = 24
ACK_MESSAGE_STATUS_MASK = 0xF
ACK_MESSAGE_CORRELATION_ID_MASK = 0xFFFFFF


# -- ConfirmHeader (bmqp_protocol.h: struct ConfirmHeader) ------------------------------


class ConfirmHeader(NamedTuple):
    """One per CONFIRM event, followed by ConfirmMessages of per_message_words each. [4 bytes; bmqp_protocol.h: struct ConfirmHeader]"""

    header_words: int
    per_message_words: int
    reserved: bytes


_CONFIRM_HEADER = struct.Struct(">B3s")
CONFIRM_HEADER_SIZE = 4
CONFIRM_HEADER_HEADER_WORDS_SHIFT = 4
CONFIRM_HEADER_PER_MESSAGE_WORDS_MASK = 0xF


def unpack_confirm_header(buf: Buffer, offset: int = 0) -> ConfirmHeader:
    """Read one ConfirmHeader at ``offset``."""
    try:
        u0, u1 = _CONFIRM_HEADER.unpack_from(buf, offset)
    except struct.error:
        raise DecodeError(
            f"truncated ConfirmHeader: need 4 bytes, {max(len(buf) - offset, 0)} left",
            offset=offset,
            path="ConfirmHeader",
        ) from None
    return ConfirmHeader(
        u0 >> 4,
        u0 & 0xF,
        u1,
    )


# -- ConfirmMessage (bmqp_protocol.h: struct ConfirmMessage) ----------------------------


class ConfirmMessage(NamedTuple):
    """ConfirmMessage [24 bytes; bmqp_protocol.h: struct ConfirmMessage]"""

    queue_id: int
    guid: bytes
    sub_queue_id: int


CONFIRM_MESSAGE = struct.Struct(">i16si")


# -- RejectHeader (bmqp_protocol.h: struct RejectHeader) --------------------------------


class RejectHeader(NamedTuple):
    """One per REJECT event, followed by RejectMessages of per_message_words each. [4 bytes; bmqp_protocol.h: struct RejectHeader]"""

    header_words: int
    per_message_words: int
    reserved: bytes


_REJECT_HEADER = struct.Struct(">B3s")
REJECT_HEADER_SIZE = 4
REJECT_HEADER_HEADER_WORDS_SHIFT = 4
REJECT_HEADER_PER_MESSAGE_WORDS_MASK = 0xF


def unpack_reject_header(buf: Buffer, offset: int = 0) -> RejectHeader:
    """Read one RejectHeader at ``offset``."""
    try:
        u0, u1 = _REJECT_HEADER.unpack_from(buf, offset)
    except struct.error:
        raise DecodeError(
            f"truncated RejectHeader: need 4 bytes, {max(len(buf) - offset, 0)} left",
            offset=offset,
            path="RejectHeader",
        ) from None
    return RejectHeader(
        u0 >> 4,
        u0 & 0xF,
        u1,
    )


# -- RejectMessage (bmqp_protocol.h: struct RejectMessage) ------------------------------


class RejectMessage(NamedTuple):
    """RejectMessage [24 bytes; bmqp_protocol.h: struct RejectMessage]"""

    queue_id: int
    guid: bytes
    sub_queue_id: int


REJECT_MESSAGE = struct.Struct(">i16si")


# -- MessageGUID (bmqp_messageguidgenerator.h: MessageGUID layout (version 1)) ----------


MESSAGE_GUID = struct.Struct(">IIHHI")
MESSAGE_GUID_SIZE = 16
MESSAGE_GUID_VERSION_SHIFT = 30
MESSAGE_GUID_COUNTER_SHIFT = 8
MESSAGE_GUID_COUNTER_MASK = 0x3FFFFF
MESSAGE_GUID_TIMER_TICK_MSB_MASK = 0xFF
MESSAGE_GUID_TIMER_TICK_MASK = 0xFFFFFFFFFFFFFF
MESSAGE_GUID_TIMER_TICK_MSB_AT = 48
MESSAGE_GUID_TIMER_TICK_MID_AT = 16
MESSAGE_GUID_TIMER_TICK_MID_MASK = 0xFFFFFFFF
MESSAGE_GUID_TIMER_TICK_LSB_MASK = 0xFFFF


# -- views: several fields (and the words after a header) in one unpack ------------------------

# One 32-bit word, the unit all sizes count in.
WORD = struct.Struct(">I")


# The fixed-size property values, by type.
PROPERTY_VALUE_STRUCTS: dict[PropertyType, struct.Struct] = {
    PropertyType.BOOL: struct.Struct(">?"),
    PropertyType.CHAR: struct.Struct(">b"),
    PropertyType.SHORT: struct.Struct(">h"),
    PropertyType.INT32: struct.Struct(">i"),
    PropertyType.INT64: struct.Struct(">q"),
}


# What follows the EventHeader, per event type.
EVENT_BODIES: dict[EventType, str] = {
    EventType.CONTROL: "an encoded ControlMessage or NegotiationMessage (BER or JSON per typeSpecific), padded",
    EventType.PUT: "PutHeader, options, application data (properties + payload), padding; repeated",
    EventType.CONFIRM: "ConfirmHeader, then ConfirmMessage entries",
    EventType.PUSH: "PushHeader, options, application data (properties + payload), padding; repeated",
    EventType.ACK: "AckHeader, then AckMessage entries",
    EventType.HEARTBEAT_REQ: "nothing: a bare EventHeader (bmqp_heartbeatmonitor)",
    EventType.HEARTBEAT_RSP: "nothing: a bare EventHeader, the answer to HEARTBEAT_REQ",
    EventType.REJECT: "RejectHeader, then RejectMessage entries",
    EventType.AUTHENTICATION: "an encoded AuthenticationMessage (encoding per typeSpecific, as CONTROL), padded",
}


# Every struct, for the dissector: its Struct over the units, and (field, first bit, width in bits)
# of each field, bits counted from the start of the struct, MSB first.
STRUCTS: dict[str, struct.Struct] = {
    "EventHeader": EVENT_HEADER,
    "OptionHeader": OPTION_HEADER,
    "SubQueueInfo": SUB_QUEUE_INFO,
    "SubQueueIdOld": SUB_QUEUE_ID_OLD,
    "MessagePropertiesHeader": MESSAGE_PROPERTIES_HEADER,
    "MessagePropertyHeader": MESSAGE_PROPERTY_HEADER,
    "PutHeader": _PUT_HEADER,
    "PushHeader": PUSH_HEADER,
    "AckHeader": _ACK_HEADER,
    "AckMessage": ACK_MESSAGE,
    "ConfirmHeader": _CONFIRM_HEADER,
    "ConfirmMessage": CONFIRM_MESSAGE,
    "RejectHeader": _REJECT_HEADER,
    "RejectMessage": REJECT_MESSAGE,
    "MessageGUID": MESSAGE_GUID,
}
BIT_LAYOUTS: dict[str, tuple[tuple[str, int, int], ...]] = {
    "EventHeader": (
        ("fragment_bit", 0, 1),
        ("length", 1, 31),
        ("protocol_version", 32, 2),
        ("type", 34, 6),
        ("header_words", 40, 8),
        ("type_specific", 48, 8),
        ("reserved", 56, 8),
    ),
    "OptionHeader": (
        ("type", 0, 6),
        ("packed", 6, 1),
        ("type_specific", 7, 4),
        ("words", 11, 21),
    ),
    "SubQueueInfo": (
        ("sub_queue_id", 0, 32),
        ("rda_unlimited", 32, 1),
        ("rda_poisonous", 33, 1),
        ("rda_counter", 34, 6),
        ("reserved", 40, 24),
    ),
    "SubQueueIdOld": (("sub_queue_id", 0, 32),),
    "MessagePropertiesHeader": (
        ("reserved", 0, 2),
        ("property_header_size_2x", 2, 3),
        ("header_size_2x", 5, 3),
        ("area_words_upper", 8, 8),
        ("area_words_lower", 16, 16),
        ("reserved2", 32, 8),
        ("num_properties", 40, 8),
    ),
    "MessagePropertyHeader": (
        ("reserved", 0, 1),
        ("type", 1, 5),
        ("value_upper", 6, 10),
        ("value_lower", 16, 16),
        ("reserved2", 32, 4),
        ("name_length", 36, 12),
    ),
    "PutHeader": (
        ("flags", 0, 4),
        ("message_words", 4, 28),
        ("options_words", 32, 24),
        ("compression", 56, 3),
        ("header_words", 59, 5),
        ("queue_id", 64, 32),
        ("guid", 96, 128),
        ("crc32c", 224, 32),
        ("schema_id", 256, 16),
        ("reserved", 272, 16),
    ),
    "PushHeader": (
        ("flags", 0, 4),
        ("message_words", 4, 28),
        ("options_words", 32, 24),
        ("compression", 56, 3),
        ("header_words", 59, 5),
        ("queue_id", 64, 32),
        ("guid", 96, 128),
        ("schema_id", 224, 16),
        ("reserved", 240, 16),
    ),
    "AckHeader": (
        ("header_words", 0, 4),
        ("per_message_words", 4, 4),
        ("flags", 8, 8),
        ("reserved", 16, 16),
    ),
    "AckMessage": (
        ("reserved", 0, 4),
        ("status", 4, 4),
        ("correlation_id", 8, 24),
        ("guid", 32, 128),
        ("queue_id", 160, 32),
    ),
    "ConfirmHeader": (
        ("header_words", 0, 4),
        ("per_message_words", 4, 4),
        ("reserved", 8, 24),
    ),
    "ConfirmMessage": (
        ("queue_id", 0, 32),
        ("guid", 32, 128),
        ("sub_queue_id", 160, 32),
    ),
    "RejectHeader": (
        ("header_words", 0, 4),
        ("per_message_words", 4, 4),
        ("reserved", 8, 24),
    ),
    "RejectMessage": (
        ("queue_id", 0, 32),
        ("guid", 32, 128),
        ("sub_queue_id", 160, 32),
    ),
    "MessageGUID": (
        ("version", 0, 2),
        ("counter", 2, 22),
        ("timer_tick_msb", 24, 8),
        ("timer_tick_mid", 32, 32),
        ("timer_tick_lsb", 64, 16),
        ("client_id_msb", 80, 16),
        ("client_id_lsb", 96, 32),
    ),
}
