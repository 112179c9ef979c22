"""construct model of the BlazingMQ binary headers: the readable reference (used by the dissector).

GENERATED from schema/bmqp_layout.yaml by pybmq.codegen.layout -- do not edit; run `make generate`.

Every header is one big-endian ``BitStruct`` whose fields are listed most significant bit first,
exactly as the spec lays them out; field names match ``pybmq.generated.wire_codec``. This model is
slow and obviously right; the codec is fast and tested against it.
"""

from __future__ import annotations

from typing import Any

from construct import BitsInteger, BitStruct, Bytes, Bytewise, Struct, this

__all__ = [
    "AckHeader",
    "AckMessage",
    "ConfirmHeader",
    "ConfirmMessage",
    "EventHeader",
    "MESSAGES",
    "MessageGUID",
    "MessagePropertiesHeader",
    "MessagePropertyHeader",
    "OptionHeader",
    "PushHeader",
    "PushMessage",
    "PutHeader",
    "PutMessage",
    "RejectHeader",
    "RejectMessage",
    "STRUCTS",
    "SubQueueIdOld",
    "SubQueueInfo",
]


# bmqp_protocol.h: struct EventHeader: 8 bytes.
EventHeader: Any = BitStruct(
    "fragment_bit" / BitsInteger(1),
    "length" / BitsInteger(31),
    "protocol_version" / BitsInteger(2),
    "type" / BitsInteger(6),  # EventType
    "header_words" / BitsInteger(8),
    "type_specific" / BitsInteger(8),
    "reserved" / BitsInteger(8),
)

# bmqp_protocol.h: struct OptionHeader: 4 bytes.
OptionHeader: Any = BitStruct(
    "type" / BitsInteger(6),  # OptionType
    "packed" / BitsInteger(1),
    "type_specific" / BitsInteger(4),
    "words" / BitsInteger(21),
)

# bmqp_protocol.h: struct SubQueueInfo and struct RdaInfo: 8 bytes.
SubQueueInfo: Any = BitStruct(
    "sub_queue_id" / BitsInteger(32),
    "rda_unlimited" / BitsInteger(1),
    "rda_poisonous" / BitsInteger(1),
    "rda_counter" / BitsInteger(6),
    "reserved" / Bytewise(Bytes(3)),
)

# bmqp_protocol.h: Protocol::SubQueueIdsArrayOld (option SUB_QUEUE_IDS_OLD): 4 bytes.
SubQueueIdOld: Any = BitStruct(
    "sub_queue_id" / BitsInteger(32),
)

# bmqp_protocol.h: struct MessagePropertiesHeader: 6 bytes.
MessagePropertiesHeader: Any = BitStruct(
    "reserved" / BitsInteger(2),
    "property_header_size_2x" / BitsInteger(3),
    "header_size_2x" / BitsInteger(3),
    "area_words_upper" / BitsInteger(8),
    "area_words_lower" / BitsInteger(16),
    "reserved2" / BitsInteger(8),
    "num_properties" / BitsInteger(8),
)

# bmqp_protocol.h: struct MessagePropertyHeader: 6 bytes.
MessagePropertyHeader: Any = BitStruct(
    "reserved" / BitsInteger(1),
    "type" / BitsInteger(5),  # PropertyType
    "value_upper" / BitsInteger(10),
    "value_lower" / BitsInteger(16),
    "reserved2" / BitsInteger(4),
    "name_length" / BitsInteger(12),
)

# bmqp_protocol.h: struct PutHeader: 36 bytes.
PutHeader: Any = BitStruct(
    "flags" / BitsInteger(4),  # PutHeaderFlags
    "message_words" / BitsInteger(28),
    "options_words" / BitsInteger(24),
    "compression" / BitsInteger(3),  # CompressionAlgorithmType
    "header_words" / BitsInteger(5),
    "queue_id" / BitsInteger(32, signed=True),
    "guid" / Bytewise(Bytes(16)),
    "crc32c" / BitsInteger(32),
    "schema_id" / BitsInteger(16),
    "reserved" / BitsInteger(16),
)

# bmqp_protocol.h: struct PushHeader: 32 bytes.
PushHeader: Any = BitStruct(
    "flags" / BitsInteger(4),  # PushHeaderFlags
    "message_words" / BitsInteger(28),
    "options_words" / BitsInteger(24),
    "compression" / BitsInteger(3),  # CompressionAlgorithmType
    "header_words" / BitsInteger(5),
    "queue_id" / BitsInteger(32, signed=True),
    "guid" / Bytewise(Bytes(16)),
    "schema_id" / BitsInteger(16),
    "reserved" / BitsInteger(16),
)

# bmqp_protocol.h: struct AckHeader: 4 bytes.
AckHeader: Any = BitStruct(
    "header_words" / BitsInteger(4),
    "per_message_words" / BitsInteger(4),
    "flags" / BitsInteger(8),
    "reserved" / BitsInteger(16),
)

# bmqp_protocol.h: struct AckMessage: 24 bytes.
AckMessage: Any = BitStruct(
    "reserved" / BitsInteger(4),
    "status" / BitsInteger(4),  # AckStatus
    "correlation_id" / BitsInteger(24),
    "guid" / Bytewise(Bytes(16)),
    "queue_id" / BitsInteger(32, signed=True),
)

# bmqp_protocol.h: struct ConfirmHeader: 4 bytes.
ConfirmHeader: Any = BitStruct(
    "header_words" / BitsInteger(4),
    "per_message_words" / BitsInteger(4),
    "reserved" / Bytewise(Bytes(3)),
)

# bmqp_protocol.h: struct ConfirmMessage: 24 bytes.
ConfirmMessage: Any = BitStruct(
    "queue_id" / BitsInteger(32, signed=True),
    "guid" / Bytewise(Bytes(16)),
    "sub_queue_id" / BitsInteger(32, signed=True),
)

# bmqp_protocol.h: struct RejectHeader: 4 bytes.
RejectHeader: Any = BitStruct(
    "header_words" / BitsInteger(4),
    "per_message_words" / BitsInteger(4),
    "reserved" / Bytewise(Bytes(3)),
)

# bmqp_protocol.h: struct RejectMessage: 24 bytes.
RejectMessage: Any = BitStruct(
    "queue_id" / BitsInteger(32, signed=True),
    "guid" / Bytewise(Bytes(16)),
    "sub_queue_id" / BitsInteger(32, signed=True),
)

# bmqp_messageguidgenerator.h: MessageGUID layout (version 1): 16 bytes.
MessageGUID: Any = BitStruct(
    "version" / BitsInteger(2),
    "counter" / BitsInteger(22),
    "timer_tick_msb" / BitsInteger(8),
    "timer_tick_mid" / BitsInteger(32),
    "timer_tick_lsb" / BitsInteger(16),
    "client_id_msb" / BitsInteger(16),
    "client_id_lsb" / BitsInteger(32),
)


# One PUT message as a builder writes it (a full PutHeader, 9 words): the
# header, the options, then the application data and its padding, to the size the header declares.
PutMessage: Any = Struct(
    "header" / PutHeader,
    "options" / Bytes(this.header.options_words * 4),
    "app_data" / Bytes((this.header.message_words - this.header.options_words) * 4 - 36),
)

# One PUSH message as a builder writes it (a full PushHeader, 8 words): the
# header, the options, then the application data and its padding, to the size the header declares.
PushMessage: Any = Struct(
    "header" / PushHeader,
    "options" / Bytes(this.header.options_words * 4),
    "app_data" / Bytes((this.header.message_words - this.header.options_words) * 4 - 32),
)

MESSAGES: dict[str, Any] = {
    "PUT": PutMessage,
    "PUSH": PushMessage,
}

STRUCTS: dict[str, Any] = {
    "EventHeader": EventHeader,
    "OptionHeader": OptionHeader,
    "SubQueueInfo": SubQueueInfo,
    "SubQueueIdOld": SubQueueIdOld,
    "MessagePropertiesHeader": MessagePropertiesHeader,
    "MessagePropertyHeader": MessagePropertyHeader,
    "PutHeader": PutHeader,
    "PushHeader": PushHeader,
    "AckHeader": AckHeader,
    "AckMessage": AckMessage,
    "ConfirmHeader": ConfirmHeader,
    "ConfirmMessage": ConfirmMessage,
    "RejectHeader": RejectHeader,
    "RejectMessage": RejectMessage,
    "MessageGUID": MessageGUID,
}
