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


def _check_uint(struct_name: str, name: str, value: int, width: int) -> None:
    if not isinstance(value, int) or not 0 <= value < (1 << width):
        raise EncodeError(f"{struct_name}.{name} = {value!r} does not fit in {width} unsigned bits")


def _check_int32(struct_name: str, name: str, value: int) -> None:
    if not isinstance(value, int) or not -(1 << 31) <= value < (1 << 31):
        raise EncodeError(f"{struct_name}.{name} = {value!r} does not fit in a signed 32-bit int")


def _check_bytes(struct_name: str, name: str, value: bytes, size: int) -> None:
    if not isinstance(value, (bytes, bytearray)) or len(value) != size:
        raise EncodeError(f"{struct_name}.{name} must be {size} bytes, got {value!r}")


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
EVENT_HEADER_FIELDS = (
    "fragment_bit",
    "length",
    "protocol_version",
    "type",
    "header_words",
    "type_specific",
    "reserved",
)
# (field, first bit, width in bits), bits counted from the start of the struct, MSB first.
EVENT_HEADER_BITS = (
    ("fragment_bit", 0, 1),
    ("length", 1, 31),
    ("protocol_version", 32, 2),
    ("type", 34, 6),
    ("header_words", 40, 8),
    ("type_specific", 48, 8),
    ("reserved", 56, 8),
)


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


def pack_event_header_into(
    buf: bytearray | memoryview,
    offset: int,
    fragment_bit: int,
    length: int,
    protocol_version: int,
    type: int,
    header_words: int,
    type_specific: int,
    reserved: int,
) -> None:
    """Write one EventHeader at ``offset`` (no range checks: the hot path)."""
    EVENT_HEADER.pack_into(
        buf,
        offset,
        (fragment_bit << 31) | length,
        (protocol_version << 6) | type,
        header_words,
        type_specific,
        reserved,
    )


def encode_event_header(value: EventHeader) -> bytes:
    """The bytes of ``value``, after checking every field fits its width."""
    _check_uint("EventHeader", "fragment_bit", value.fragment_bit, 1)
    _check_uint("EventHeader", "length", value.length, 31)
    _check_uint("EventHeader", "protocol_version", value.protocol_version, 2)
    _check_uint("EventHeader", "type", value.type, 6)
    _check_uint("EventHeader", "header_words", value.header_words, 8)
    _check_uint("EventHeader", "type_specific", value.type_specific, 8)
    _check_uint("EventHeader", "reserved", value.reserved, 8)
    return EVENT_HEADER.pack(
        (value.fragment_bit << 31) | value.length,
        (value.protocol_version << 6) | value.type,
        value.header_words,
        value.type_specific,
        value.reserved,
    )


# -- OptionHeader (bmqp_protocol.h: struct OptionHeader) --------------------------------


class OptionHeader(NamedTuple):
    """Starts every option of a PUT/PUSH message. When `packed` is set there is no content and `words` is reused as type-specific data (the RDA counter of the default sub-queue). [4 bytes; bmqp_protocol.h: struct OptionHeader]"""

    type: int
    packed: int
    type_specific: int
    words: int


OPTION_HEADER = struct.Struct(">I")
OPTION_HEADER_SIZE = 4
OPTION_HEADER_FIELDS = (
    "type",
    "packed",
    "type_specific",
    "words",
)
# (field, first bit, width in bits), bits counted from the start of the struct, MSB first.
OPTION_HEADER_BITS = (
    ("type", 0, 6),
    ("packed", 6, 1),
    ("type_specific", 7, 4),
    ("words", 11, 21),
)


def unpack_option_header(buf: Buffer, offset: int = 0) -> OptionHeader:
    """Read one OptionHeader at ``offset``."""
    try:
        (u0,) = OPTION_HEADER.unpack_from(buf, offset)
    except struct.error:
        raise DecodeError(
            f"truncated OptionHeader: need 4 bytes, {max(len(buf) - offset, 0)} left",
            offset=offset,
            path="OptionHeader",
        ) from None
    return OptionHeader(
        u0 >> 26,
        (u0 >> 25) & 0x1,
        (u0 >> 21) & 0xF,
        u0 & 0x1FFFFF,
    )


def pack_option_header_into(
    buf: bytearray | memoryview,
    offset: int,
    type: int,
    packed: int,
    type_specific: int,
    words: int,
) -> None:
    """Write one OptionHeader at ``offset`` (no range checks: the hot path)."""
    OPTION_HEADER.pack_into(
        buf,
        offset,
        (type << 26) | (packed << 25) | (type_specific << 21) | words,
    )


def encode_option_header(value: OptionHeader) -> bytes:
    """The bytes of ``value``, after checking every field fits its width."""
    _check_uint("OptionHeader", "type", value.type, 6)
    _check_uint("OptionHeader", "packed", value.packed, 1)
    _check_uint("OptionHeader", "type_specific", value.type_specific, 4)
    _check_uint("OptionHeader", "words", value.words, 21)
    return OPTION_HEADER.pack(
        (value.type << 26) | (value.packed << 25) | (value.type_specific << 21) | value.words,
    )


# -- SubQueueInfo (bmqp_protocol.h: struct SubQueueInfo and struct RdaInfo) -------------


class SubQueueInfo(NamedTuple):
    """One item of a non-packed SUB_QUEUE_INFOS option (item size in words is the option's type_specific). RDA = remaining delivery attempts. [8 bytes; bmqp_protocol.h: struct SubQueueInfo and struct RdaInfo]"""

    sub_queue_id: int
    rda_unlimited: int
    rda_poisonous: int
    rda_counter: int
    reserved: bytes


SUB_QUEUE_INFO = struct.Struct(">IB3s")
SUB_QUEUE_INFO_SIZE = 8
SUB_QUEUE_INFO_FIELDS = (
    "sub_queue_id",
    "rda_unlimited",
    "rda_poisonous",
    "rda_counter",
    "reserved",
)
# (field, first bit, width in bits), bits counted from the start of the struct, MSB first.
SUB_QUEUE_INFO_BITS = (
    ("sub_queue_id", 0, 32),
    ("rda_unlimited", 32, 1),
    ("rda_poisonous", 33, 1),
    ("rda_counter", 34, 6),
    ("reserved", 40, 24),
)


def unpack_sub_queue_info(buf: Buffer, offset: int = 0) -> SubQueueInfo:
    """Read one SubQueueInfo at ``offset``."""
    try:
        u0, u1, u2 = SUB_QUEUE_INFO.unpack_from(buf, offset)
    except struct.error:
        raise DecodeError(
            f"truncated SubQueueInfo: need 8 bytes, {max(len(buf) - offset, 0)} left",
            offset=offset,
            path="SubQueueInfo",
        ) from None
    return SubQueueInfo(
        u0,
        u1 >> 7,
        (u1 >> 6) & 0x1,
        u1 & 0x3F,
        u2,
    )


def pack_sub_queue_info_into(
    buf: bytearray | memoryview,
    offset: int,
    sub_queue_id: int,
    rda_unlimited: int,
    rda_poisonous: int,
    rda_counter: int,
    reserved: bytes,
) -> None:
    """Write one SubQueueInfo at ``offset`` (no range checks: the hot path)."""
    SUB_QUEUE_INFO.pack_into(
        buf,
        offset,
        sub_queue_id,
        (rda_unlimited << 7) | (rda_poisonous << 6) | rda_counter,
        reserved,
    )


def encode_sub_queue_info(value: SubQueueInfo) -> bytes:
    """The bytes of ``value``, after checking every field fits its width."""
    _check_uint("SubQueueInfo", "sub_queue_id", value.sub_queue_id, 32)
    _check_uint("SubQueueInfo", "rda_unlimited", value.rda_unlimited, 1)
    _check_uint("SubQueueInfo", "rda_poisonous", value.rda_poisonous, 1)
    _check_uint("SubQueueInfo", "rda_counter", value.rda_counter, 6)
    _check_bytes("SubQueueInfo", "reserved", value.reserved, 3)
    return SUB_QUEUE_INFO.pack(
        value.sub_queue_id,
        (value.rda_unlimited << 7) | (value.rda_poisonous << 6) | value.rda_counter,
        value.reserved,
    )


# -- SubQueueIdOld (bmqp_protocol.h: Protocol::SubQueueIdsArrayOld (option SUB_QUEUE_IDS_OLD))


class SubQueueIdOld(NamedTuple):
    """One item of the deprecated SUB_QUEUE_IDS_OLD option: a bare sub-queue id. [4 bytes; bmqp_protocol.h: Protocol::SubQueueIdsArrayOld (option SUB_QUEUE_IDS_OLD)]"""

    sub_queue_id: int


SUB_QUEUE_ID_OLD = struct.Struct(">I")
SUB_QUEUE_ID_OLD_SIZE = 4
SUB_QUEUE_ID_OLD_FIELDS = ("sub_queue_id",)
# (field, first bit, width in bits), bits counted from the start of the struct, MSB first.
SUB_QUEUE_ID_OLD_BITS = (("sub_queue_id", 0, 32),)


def unpack_sub_queue_id_old(buf: Buffer, offset: int = 0) -> SubQueueIdOld:
    """Read one SubQueueIdOld at ``offset``."""
    try:
        (u0,) = SUB_QUEUE_ID_OLD.unpack_from(buf, offset)
    except struct.error:
        raise DecodeError(
            f"truncated SubQueueIdOld: need 4 bytes, {max(len(buf) - offset, 0)} left",
            offset=offset,
            path="SubQueueIdOld",
        ) from None
    return SubQueueIdOld(
        u0,
    )


def pack_sub_queue_id_old_into(
    buf: bytearray | memoryview,
    offset: int,
    sub_queue_id: int,
) -> None:
    """Write one SubQueueIdOld at ``offset`` (no range checks: the hot path)."""
    SUB_QUEUE_ID_OLD.pack_into(
        buf,
        offset,
        sub_queue_id,
    )


def encode_sub_queue_id_old(value: SubQueueIdOld) -> bytes:
    """The bytes of ``value``, after checking every field fits its width."""
    _check_uint("SubQueueIdOld", "sub_queue_id", value.sub_queue_id, 32)
    return SUB_QUEUE_ID_OLD.pack(
        value.sub_queue_id,
    )


# -- MessagePropertiesHeader (bmqp_protocol.h: struct MessagePropertiesHeader) ----------


class MessagePropertiesHeader(NamedTuple):
    """Starts a message-properties area. Sizes of this header and of each property header are in 2-byte units; the area size (this header, property headers, names, values and the final word-alignment padding) is in words, split over 24 bits (upper 8 + lower 16). [6 bytes; bmqp_protocol.h: struct MessagePropertiesHeader]"""

    reserved: int
    property_header_size_2x: int
    header_size_2x: int
    area_words_upper: int
    area_words_lower: int
    reserved2: int
    num_properties: int


MESSAGE_PROPERTIES_HEADER = struct.Struct(">BBHBB")
MESSAGE_PROPERTIES_HEADER_SIZE = 6
MESSAGE_PROPERTIES_HEADER_FIELDS = (
    "reserved",
    "property_header_size_2x",
    "header_size_2x",
    "area_words_upper",
    "area_words_lower",
    "reserved2",
    "num_properties",
)
# (field, first bit, width in bits), bits counted from the start of the struct, MSB first.
MESSAGE_PROPERTIES_HEADER_BITS = (
    ("reserved", 0, 2),
    ("property_header_size_2x", 2, 3),
    ("header_size_2x", 5, 3),
    ("area_words_upper", 8, 8),
    ("area_words_lower", 16, 16),
    ("reserved2", 32, 8),
    ("num_properties", 40, 8),
)


def unpack_message_properties_header(buf: Buffer, offset: int = 0) -> MessagePropertiesHeader:
    """Read one MessagePropertiesHeader at ``offset``."""
    try:
        u0, u1, u2, u3, u4 = MESSAGE_PROPERTIES_HEADER.unpack_from(buf, offset)
    except struct.error:
        raise DecodeError(
            f"truncated MessagePropertiesHeader: need 6 bytes, {max(len(buf) - offset, 0)} left",
            offset=offset,
            path="MessagePropertiesHeader",
        ) from None
    return MessagePropertiesHeader(
        u0 >> 6,
        (u0 >> 3) & 0x7,
        u0 & 0x7,
        u1,
        u2,
        u3,
        u4,
    )


def pack_message_properties_header_into(
    buf: bytearray | memoryview,
    offset: int,
    reserved: int,
    property_header_size_2x: int,
    header_size_2x: int,
    area_words_upper: int,
    area_words_lower: int,
    reserved2: int,
    num_properties: int,
) -> None:
    """Write one MessagePropertiesHeader at ``offset`` (no range checks: the hot path)."""
    MESSAGE_PROPERTIES_HEADER.pack_into(
        buf,
        offset,
        (reserved << 6) | (property_header_size_2x << 3) | header_size_2x,
        area_words_upper,
        area_words_lower,
        reserved2,
        num_properties,
    )


def encode_message_properties_header(value: MessagePropertiesHeader) -> bytes:
    """The bytes of ``value``, after checking every field fits its width."""
    _check_uint("MessagePropertiesHeader", "reserved", value.reserved, 2)
    _check_uint(
        "MessagePropertiesHeader", "property_header_size_2x", value.property_header_size_2x, 3
    )
    _check_uint("MessagePropertiesHeader", "header_size_2x", value.header_size_2x, 3)
    _check_uint("MessagePropertiesHeader", "area_words_upper", value.area_words_upper, 8)
    _check_uint("MessagePropertiesHeader", "area_words_lower", value.area_words_lower, 16)
    _check_uint("MessagePropertiesHeader", "reserved2", value.reserved2, 8)
    _check_uint("MessagePropertiesHeader", "num_properties", value.num_properties, 8)
    return MESSAGE_PROPERTIES_HEADER.pack(
        (value.reserved << 6) | (value.property_header_size_2x << 3) | value.header_size_2x,
        value.area_words_upper,
        value.area_words_lower,
        value.reserved2,
        value.num_properties,
    )


# -- MessagePropertyHeader (bmqp_protocol.h: struct MessagePropertyHeader) --------------


class MessagePropertyHeader(NamedTuple):
    """One per property, all placed before the names and values. The 26-bit value field is the value length in the old format, and in the extended format (MPS:MESSAGE_PROPERTIES_EX, signalled by a non-zero schema id in the PUT/PUSH header) the offset of this property's name from the end of the property headers. [6 bytes; bmqp_protocol.h: struct MessagePropertyHeader]"""

    reserved: int
    type: int
    value_upper: int
    value_lower: int
    reserved2: int
    name_length: int


MESSAGE_PROPERTY_HEADER = struct.Struct(">HHH")
MESSAGE_PROPERTY_HEADER_SIZE = 6
MESSAGE_PROPERTY_HEADER_FIELDS = (
    "reserved",
    "type",
    "value_upper",
    "value_lower",
    "reserved2",
    "name_length",
)
# (field, first bit, width in bits), bits counted from the start of the struct, MSB first.
MESSAGE_PROPERTY_HEADER_BITS = (
    ("reserved", 0, 1),
    ("type", 1, 5),
    ("value_upper", 6, 10),
    ("value_lower", 16, 16),
    ("reserved2", 32, 4),
    ("name_length", 36, 12),
)


def unpack_message_property_header(buf: Buffer, offset: int = 0) -> MessagePropertyHeader:
    """Read one MessagePropertyHeader at ``offset``."""
    try:
        u0, u1, u2 = MESSAGE_PROPERTY_HEADER.unpack_from(buf, offset)
    except struct.error:
        raise DecodeError(
            f"truncated MessagePropertyHeader: need 6 bytes, {max(len(buf) - offset, 0)} left",
            offset=offset,
            path="MessagePropertyHeader",
        ) from None
    return MessagePropertyHeader(
        u0 >> 15,
        (u0 >> 10) & 0x1F,
        u0 & 0x3FF,
        u1,
        u2 >> 12,
        u2 & 0xFFF,
    )


def pack_message_property_header_into(
    buf: bytearray | memoryview,
    offset: int,
    reserved: int,
    type: int,
    value_upper: int,
    value_lower: int,
    reserved2: int,
    name_length: int,
) -> None:
    """Write one MessagePropertyHeader at ``offset`` (no range checks: the hot path)."""
    MESSAGE_PROPERTY_HEADER.pack_into(
        buf,
        offset,
        (reserved << 15) | (type << 10) | value_upper,
        value_lower,
        (reserved2 << 12) | name_length,
    )


def encode_message_property_header(value: MessagePropertyHeader) -> bytes:
    """The bytes of ``value``, after checking every field fits its width."""
    _check_uint("MessagePropertyHeader", "reserved", value.reserved, 1)
    _check_uint("MessagePropertyHeader", "type", value.type, 5)
    _check_uint("MessagePropertyHeader", "value_upper", value.value_upper, 10)
    _check_uint("MessagePropertyHeader", "value_lower", value.value_lower, 16)
    _check_uint("MessagePropertyHeader", "reserved2", value.reserved2, 4)
    _check_uint("MessagePropertyHeader", "name_length", value.name_length, 12)
    return MESSAGE_PROPERTY_HEADER.pack(
        (value.reserved << 15) | (value.type << 10) | value.value_upper,
        value.value_lower,
        (value.reserved2 << 12) | value.name_length,
    )


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


PUT_HEADER = struct.Struct(">IIi16sIHH")
PUT_HEADER_SIZE = 36
PUT_HEADER_FIELDS = (
    "flags",
    "message_words",
    "options_words",
    "compression",
    "header_words",
    "queue_id",
    "guid",
    "crc32c",
    "schema_id",
    "reserved",
)
# (field, first bit, width in bits), bits counted from the start of the struct, MSB first.
PUT_HEADER_BITS = (
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
)


def unpack_put_header(buf: Buffer, offset: int = 0) -> PutHeader:
    """Read one PutHeader at ``offset``."""
    try:
        u0, u1, u2, u3, u4, u5, u6 = PUT_HEADER.unpack_from(buf, offset)
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


def pack_put_header_into(
    buf: bytearray | memoryview,
    offset: int,
    flags: int,
    message_words: int,
    options_words: int,
    compression: int,
    header_words: int,
    queue_id: int,
    guid: bytes,
    crc32c: int,
    schema_id: int,
    reserved: int,
) -> None:
    """Write one PutHeader at ``offset`` (no range checks: the hot path)."""
    PUT_HEADER.pack_into(
        buf,
        offset,
        (flags << 28) | message_words,
        (options_words << 8) | (compression << 5) | header_words,
        queue_id,
        guid,
        crc32c,
        schema_id,
        reserved,
    )


def encode_put_header(value: PutHeader) -> bytes:
    """The bytes of ``value``, after checking every field fits its width."""
    _check_uint("PutHeader", "flags", value.flags, 4)
    _check_uint("PutHeader", "message_words", value.message_words, 28)
    _check_uint("PutHeader", "options_words", value.options_words, 24)
    _check_uint("PutHeader", "compression", value.compression, 3)
    _check_uint("PutHeader", "header_words", value.header_words, 5)
    _check_int32("PutHeader", "queue_id", value.queue_id)
    _check_bytes("PutHeader", "guid", value.guid, 16)
    _check_uint("PutHeader", "crc32c", value.crc32c, 32)
    _check_uint("PutHeader", "schema_id", value.schema_id, 16)
    _check_uint("PutHeader", "reserved", value.reserved, 16)
    return PUT_HEADER.pack(
        (value.flags << 28) | value.message_words,
        (value.options_words << 8) | (value.compression << 5) | value.header_words,
        value.queue_id,
        value.guid,
        value.crc32c,
        value.schema_id,
        value.reserved,
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
PUSH_HEADER_FIELDS = (
    "flags",
    "message_words",
    "options_words",
    "compression",
    "header_words",
    "queue_id",
    "guid",
    "schema_id",
    "reserved",
)
# (field, first bit, width in bits), bits counted from the start of the struct, MSB first.
PUSH_HEADER_BITS = (
    ("flags", 0, 4),
    ("message_words", 4, 28),
    ("options_words", 32, 24),
    ("compression", 56, 3),
    ("header_words", 59, 5),
    ("queue_id", 64, 32),
    ("guid", 96, 128),
    ("schema_id", 224, 16),
    ("reserved", 240, 16),
)


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


def pack_push_header_into(
    buf: bytearray | memoryview,
    offset: int,
    flags: int,
    message_words: int,
    options_words: int,
    compression: int,
    header_words: int,
    queue_id: int,
    guid: bytes,
    schema_id: int,
    reserved: int,
) -> None:
    """Write one PushHeader at ``offset`` (no range checks: the hot path)."""
    PUSH_HEADER.pack_into(
        buf,
        offset,
        (flags << 28) | message_words,
        (options_words << 8) | (compression << 5) | header_words,
        queue_id,
        guid,
        schema_id,
        reserved,
    )


def encode_push_header(value: PushHeader) -> bytes:
    """The bytes of ``value``, after checking every field fits its width."""
    _check_uint("PushHeader", "flags", value.flags, 4)
    _check_uint("PushHeader", "message_words", value.message_words, 28)
    _check_uint("PushHeader", "options_words", value.options_words, 24)
    _check_uint("PushHeader", "compression", value.compression, 3)
    _check_uint("PushHeader", "header_words", value.header_words, 5)
    _check_int32("PushHeader", "queue_id", value.queue_id)
    _check_bytes("PushHeader", "guid", value.guid, 16)
    _check_uint("PushHeader", "schema_id", value.schema_id, 16)
    _check_uint("PushHeader", "reserved", value.reserved, 16)
    return PUSH_HEADER.pack(
        (value.flags << 28) | value.message_words,
        (value.options_words << 8) | (value.compression << 5) | value.header_words,
        value.queue_id,
        value.guid,
        value.schema_id,
        value.reserved,
    )


# -- AckHeader (bmqp_protocol.h: struct AckHeader) --------------------------------------


class AckHeader(NamedTuple):
    """One per ACK event, followed by AckMessages of per_message_words each. [4 bytes; bmqp_protocol.h: struct AckHeader]"""

    header_words: int
    per_message_words: int
    flags: int
    reserved: int


ACK_HEADER = struct.Struct(">BBH")
ACK_HEADER_SIZE = 4
ACK_HEADER_FIELDS = (
    "header_words",
    "per_message_words",
    "flags",
    "reserved",
)
# (field, first bit, width in bits), bits counted from the start of the struct, MSB first.
ACK_HEADER_BITS = (
    ("header_words", 0, 4),
    ("per_message_words", 4, 4),
    ("flags", 8, 8),
    ("reserved", 16, 16),
)


def unpack_ack_header(buf: Buffer, offset: int = 0) -> AckHeader:
    """Read one AckHeader at ``offset``."""
    try:
        u0, u1, u2 = ACK_HEADER.unpack_from(buf, offset)
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


def pack_ack_header_into(
    buf: bytearray | memoryview,
    offset: int,
    header_words: int,
    per_message_words: int,
    flags: int,
    reserved: int,
) -> None:
    """Write one AckHeader at ``offset`` (no range checks: the hot path)."""
    ACK_HEADER.pack_into(
        buf,
        offset,
        (header_words << 4) | per_message_words,
        flags,
        reserved,
    )


def encode_ack_header(value: AckHeader) -> bytes:
    """The bytes of ``value``, after checking every field fits its width."""
    _check_uint("AckHeader", "header_words", value.header_words, 4)
    _check_uint("AckHeader", "per_message_words", value.per_message_words, 4)
    _check_uint("AckHeader", "flags", value.flags, 8)
    _check_uint("AckHeader", "reserved", value.reserved, 16)
    return ACK_HEADER.pack(
        (value.header_words << 4) | value.per_message_words,
        value.flags,
        value.reserved,
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
ACK_MESSAGE_SIZE = 24
ACK_MESSAGE_FIELDS = (
    "reserved",
    "status",
    "correlation_id",
    "guid",
    "queue_id",
)
# (field, first bit, width in bits), bits counted from the start of the struct, MSB first.
ACK_MESSAGE_BITS = (
    ("reserved", 0, 4),
    ("status", 4, 4),
    ("correlation_id", 8, 24),
    ("guid", 32, 128),
    ("queue_id", 160, 32),
)


def unpack_ack_message(buf: Buffer, offset: int = 0) -> AckMessage:
    """Read one AckMessage at ``offset``."""
    try:
        u0, u1, u2 = ACK_MESSAGE.unpack_from(buf, offset)
    except struct.error:
        raise DecodeError(
            f"truncated AckMessage: need 24 bytes, {max(len(buf) - offset, 0)} left",
            offset=offset,
            path="AckMessage",
        ) from None
    return AckMessage(
        u0 >> 28,
        (u0 >> 24) & 0xF,
        u0 & 0xFFFFFF,
        u1,
        u2,
    )


def pack_ack_message_into(
    buf: bytearray | memoryview,
    offset: int,
    reserved: int,
    status: int,
    correlation_id: int,
    guid: bytes,
    queue_id: int,
) -> None:
    """Write one AckMessage at ``offset`` (no range checks: the hot path)."""
    ACK_MESSAGE.pack_into(
        buf,
        offset,
        (reserved << 28) | (status << 24) | correlation_id,
        guid,
        queue_id,
    )


def encode_ack_message(value: AckMessage) -> bytes:
    """The bytes of ``value``, after checking every field fits its width."""
    _check_uint("AckMessage", "reserved", value.reserved, 4)
    _check_uint("AckMessage", "status", value.status, 4)
    _check_uint("AckMessage", "correlation_id", value.correlation_id, 24)
    _check_bytes("AckMessage", "guid", value.guid, 16)
    _check_int32("AckMessage", "queue_id", value.queue_id)
    return ACK_MESSAGE.pack(
        (value.reserved << 28) | (value.status << 24) | value.correlation_id,
        value.guid,
        value.queue_id,
    )


# -- ConfirmHeader (bmqp_protocol.h: struct ConfirmHeader) ------------------------------


class ConfirmHeader(NamedTuple):
    """One per CONFIRM event, followed by ConfirmMessages of per_message_words each. [4 bytes; bmqp_protocol.h: struct ConfirmHeader]"""

    header_words: int
    per_message_words: int
    reserved: bytes


CONFIRM_HEADER = struct.Struct(">B3s")
CONFIRM_HEADER_SIZE = 4
CONFIRM_HEADER_FIELDS = (
    "header_words",
    "per_message_words",
    "reserved",
)
# (field, first bit, width in bits), bits counted from the start of the struct, MSB first.
CONFIRM_HEADER_BITS = (
    ("header_words", 0, 4),
    ("per_message_words", 4, 4),
    ("reserved", 8, 24),
)


def unpack_confirm_header(buf: Buffer, offset: int = 0) -> ConfirmHeader:
    """Read one ConfirmHeader at ``offset``."""
    try:
        u0, u1 = CONFIRM_HEADER.unpack_from(buf, offset)
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


def pack_confirm_header_into(
    buf: bytearray | memoryview,
    offset: int,
    header_words: int,
    per_message_words: int,
    reserved: bytes,
) -> None:
    """Write one ConfirmHeader at ``offset`` (no range checks: the hot path)."""
    CONFIRM_HEADER.pack_into(
        buf,
        offset,
        (header_words << 4) | per_message_words,
        reserved,
    )


def encode_confirm_header(value: ConfirmHeader) -> bytes:
    """The bytes of ``value``, after checking every field fits its width."""
    _check_uint("ConfirmHeader", "header_words", value.header_words, 4)
    _check_uint("ConfirmHeader", "per_message_words", value.per_message_words, 4)
    _check_bytes("ConfirmHeader", "reserved", value.reserved, 3)
    return CONFIRM_HEADER.pack(
        (value.header_words << 4) | value.per_message_words,
        value.reserved,
    )


# -- ConfirmMessage (bmqp_protocol.h: struct ConfirmMessage) ----------------------------


class ConfirmMessage(NamedTuple):
    """ConfirmMessage [24 bytes; bmqp_protocol.h: struct ConfirmMessage]"""

    queue_id: int
    guid: bytes
    sub_queue_id: int


CONFIRM_MESSAGE = struct.Struct(">i16si")
CONFIRM_MESSAGE_SIZE = 24
CONFIRM_MESSAGE_FIELDS = (
    "queue_id",
    "guid",
    "sub_queue_id",
)
# (field, first bit, width in bits), bits counted from the start of the struct, MSB first.
CONFIRM_MESSAGE_BITS = (
    ("queue_id", 0, 32),
    ("guid", 32, 128),
    ("sub_queue_id", 160, 32),
)


def unpack_confirm_message(buf: Buffer, offset: int = 0) -> ConfirmMessage:
    """Read one ConfirmMessage at ``offset``."""
    try:
        u0, u1, u2 = CONFIRM_MESSAGE.unpack_from(buf, offset)
    except struct.error:
        raise DecodeError(
            f"truncated ConfirmMessage: need 24 bytes, {max(len(buf) - offset, 0)} left",
            offset=offset,
            path="ConfirmMessage",
        ) from None
    return ConfirmMessage(
        u0,
        u1,
        u2,
    )


def pack_confirm_message_into(
    buf: bytearray | memoryview,
    offset: int,
    queue_id: int,
    guid: bytes,
    sub_queue_id: int,
) -> None:
    """Write one ConfirmMessage at ``offset`` (no range checks: the hot path)."""
    CONFIRM_MESSAGE.pack_into(
        buf,
        offset,
        queue_id,
        guid,
        sub_queue_id,
    )


def encode_confirm_message(value: ConfirmMessage) -> bytes:
    """The bytes of ``value``, after checking every field fits its width."""
    _check_int32("ConfirmMessage", "queue_id", value.queue_id)
    _check_bytes("ConfirmMessage", "guid", value.guid, 16)
    _check_int32("ConfirmMessage", "sub_queue_id", value.sub_queue_id)
    return CONFIRM_MESSAGE.pack(
        value.queue_id,
        value.guid,
        value.sub_queue_id,
    )


# -- RejectHeader (bmqp_protocol.h: struct RejectHeader) --------------------------------


class RejectHeader(NamedTuple):
    """One per REJECT event, followed by RejectMessages of per_message_words each. [4 bytes; bmqp_protocol.h: struct RejectHeader]"""

    header_words: int
    per_message_words: int
    reserved: bytes


REJECT_HEADER = struct.Struct(">B3s")
REJECT_HEADER_SIZE = 4
REJECT_HEADER_FIELDS = (
    "header_words",
    "per_message_words",
    "reserved",
)
# (field, first bit, width in bits), bits counted from the start of the struct, MSB first.
REJECT_HEADER_BITS = (
    ("header_words", 0, 4),
    ("per_message_words", 4, 4),
    ("reserved", 8, 24),
)


def unpack_reject_header(buf: Buffer, offset: int = 0) -> RejectHeader:
    """Read one RejectHeader at ``offset``."""
    try:
        u0, u1 = REJECT_HEADER.unpack_from(buf, offset)
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


def pack_reject_header_into(
    buf: bytearray | memoryview,
    offset: int,
    header_words: int,
    per_message_words: int,
    reserved: bytes,
) -> None:
    """Write one RejectHeader at ``offset`` (no range checks: the hot path)."""
    REJECT_HEADER.pack_into(
        buf,
        offset,
        (header_words << 4) | per_message_words,
        reserved,
    )


def encode_reject_header(value: RejectHeader) -> bytes:
    """The bytes of ``value``, after checking every field fits its width."""
    _check_uint("RejectHeader", "header_words", value.header_words, 4)
    _check_uint("RejectHeader", "per_message_words", value.per_message_words, 4)
    _check_bytes("RejectHeader", "reserved", value.reserved, 3)
    return REJECT_HEADER.pack(
        (value.header_words << 4) | value.per_message_words,
        value.reserved,
    )


# -- RejectMessage (bmqp_protocol.h: struct RejectMessage) ------------------------------


class RejectMessage(NamedTuple):
    """RejectMessage [24 bytes; bmqp_protocol.h: struct RejectMessage]"""

    queue_id: int
    guid: bytes
    sub_queue_id: int


REJECT_MESSAGE = struct.Struct(">i16si")
REJECT_MESSAGE_SIZE = 24
REJECT_MESSAGE_FIELDS = (
    "queue_id",
    "guid",
    "sub_queue_id",
)
# (field, first bit, width in bits), bits counted from the start of the struct, MSB first.
REJECT_MESSAGE_BITS = (
    ("queue_id", 0, 32),
    ("guid", 32, 128),
    ("sub_queue_id", 160, 32),
)


def unpack_reject_message(buf: Buffer, offset: int = 0) -> RejectMessage:
    """Read one RejectMessage at ``offset``."""
    try:
        u0, u1, u2 = REJECT_MESSAGE.unpack_from(buf, offset)
    except struct.error:
        raise DecodeError(
            f"truncated RejectMessage: need 24 bytes, {max(len(buf) - offset, 0)} left",
            offset=offset,
            path="RejectMessage",
        ) from None
    return RejectMessage(
        u0,
        u1,
        u2,
    )


def pack_reject_message_into(
    buf: bytearray | memoryview,
    offset: int,
    queue_id: int,
    guid: bytes,
    sub_queue_id: int,
) -> None:
    """Write one RejectMessage at ``offset`` (no range checks: the hot path)."""
    REJECT_MESSAGE.pack_into(
        buf,
        offset,
        queue_id,
        guid,
        sub_queue_id,
    )


def encode_reject_message(value: RejectMessage) -> bytes:
    """The bytes of ``value``, after checking every field fits its width."""
    _check_int32("RejectMessage", "queue_id", value.queue_id)
    _check_bytes("RejectMessage", "guid", value.guid, 16)
    _check_int32("RejectMessage", "sub_queue_id", value.sub_queue_id)
    return REJECT_MESSAGE.pack(
        value.queue_id,
        value.guid,
        value.sub_queue_id,
    )


# -- MessageGUID (bmqp_messageguidgenerator.h: MessageGUID layout (version 1)) ----------


class MessageGUID(NamedTuple):
    """16 opaque bytes on the wire; version-1 GUIDs made by the C++ SDK carry a 22-bit counter, a 56-bit nanosecond timer tick (since the generator started) and a 48-bit client id (first 6 bytes of an MD5 over host address, start time, pid and session id). [16 bytes; bmqp_messageguidgenerator.h: MessageGUID layout (version 1)]"""

    version: int
    counter: int
    timer_tick_msb: int
    timer_tick_mid: int
    timer_tick_lsb: int
    client_id_msb: int
    client_id_lsb: int


MESSAGE_GUID = struct.Struct(">IIHHI")
MESSAGE_GUID_SIZE = 16
MESSAGE_GUID_FIELDS = (
    "version",
    "counter",
    "timer_tick_msb",
    "timer_tick_mid",
    "timer_tick_lsb",
    "client_id_msb",
    "client_id_lsb",
)
# (field, first bit, width in bits), bits counted from the start of the struct, MSB first.
MESSAGE_GUID_BITS = (
    ("version", 0, 2),
    ("counter", 2, 22),
    ("timer_tick_msb", 24, 8),
    ("timer_tick_mid", 32, 32),
    ("timer_tick_lsb", 64, 16),
    ("client_id_msb", 80, 16),
    ("client_id_lsb", 96, 32),
)


def unpack_message_guid(buf: Buffer, offset: int = 0) -> MessageGUID:
    """Read one MessageGUID at ``offset``."""
    try:
        u0, u1, u2, u3, u4 = MESSAGE_GUID.unpack_from(buf, offset)
    except struct.error:
        raise DecodeError(
            f"truncated MessageGUID: need 16 bytes, {max(len(buf) - offset, 0)} left",
            offset=offset,
            path="MessageGUID",
        ) from None
    return MessageGUID(
        u0 >> 30,
        (u0 >> 8) & 0x3FFFFF,
        u0 & 0xFF,
        u1,
        u2,
        u3,
        u4,
    )


def pack_message_guid_into(
    buf: bytearray | memoryview,
    offset: int,
    version: int,
    counter: int,
    timer_tick_msb: int,
    timer_tick_mid: int,
    timer_tick_lsb: int,
    client_id_msb: int,
    client_id_lsb: int,
) -> None:
    """Write one MessageGUID at ``offset`` (no range checks: the hot path)."""
    MESSAGE_GUID.pack_into(
        buf,
        offset,
        (version << 30) | (counter << 8) | timer_tick_msb,
        timer_tick_mid,
        timer_tick_lsb,
        client_id_msb,
        client_id_lsb,
    )


def encode_message_guid(value: MessageGUID) -> bytes:
    """The bytes of ``value``, after checking every field fits its width."""
    _check_uint("MessageGUID", "version", value.version, 2)
    _check_uint("MessageGUID", "counter", value.counter, 22)
    _check_uint("MessageGUID", "timer_tick_msb", value.timer_tick_msb, 8)
    _check_uint("MessageGUID", "timer_tick_mid", value.timer_tick_mid, 32)
    _check_uint("MessageGUID", "timer_tick_lsb", value.timer_tick_lsb, 16)
    _check_uint("MessageGUID", "client_id_msb", value.client_id_msb, 16)
    _check_uint("MessageGUID", "client_id_lsb", value.client_id_lsb, 32)
    return MESSAGE_GUID.pack(
        (value.version << 30) | (value.counter << 8) | value.timer_tick_msb,
        value.timer_tick_mid,
        value.timer_tick_lsb,
        value.client_id_msb,
        value.client_id_lsb,
    )


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


STRUCTS: dict[str, struct.Struct] = {
    "EventHeader": EVENT_HEADER,
    "OptionHeader": OPTION_HEADER,
    "SubQueueInfo": SUB_QUEUE_INFO,
    "SubQueueIdOld": SUB_QUEUE_ID_OLD,
    "MessagePropertiesHeader": MESSAGE_PROPERTIES_HEADER,
    "MessagePropertyHeader": MESSAGE_PROPERTY_HEADER,
    "PutHeader": PUT_HEADER,
    "PushHeader": PUSH_HEADER,
    "AckHeader": ACK_HEADER,
    "AckMessage": ACK_MESSAGE,
    "ConfirmHeader": CONFIRM_HEADER,
    "ConfirmMessage": CONFIRM_MESSAGE,
    "RejectHeader": REJECT_HEADER,
    "RejectMessage": REJECT_MESSAGE,
    "MessageGUID": MESSAGE_GUID,
}
