"""PUT events: the reader (``iter_put``/``decode_put``, a broker's hot path) and the writer
(``PutEventBuilder``, a client's hot path).

The layout work (header, options, properties framing, padding, the inline common shapes) is the
generated ``pybmq.generated.wire_messages``, rendered from the layout spec's ``messages``
section; this module adds what is not layout: the record's methods, decompression and the
CRC32-C function, the properties and the event builder's bookkeeping.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pybmq.errors import EncodeError, UsageError
from pybmq.generated.wire_codec import (
    ACK_MESSAGE_CORRELATION_ID_MASK,
    COMPRESSION_MIN_APPDATA_SIZE,
    PUT_EVENT_MAX_SIZE_SOFT,
    PUT_MAX_PAYLOAD_SIZE_SOFT,
    CompressionAlgorithmType,
    EventType,
    PutHeaderFlags,
)
from pybmq.generated.wire_messages import (
    PUT_FIELD_OFFSETS,
    PUT_HEADER_WORDS,
    PUT_PROPERTIES_FLAG,
    PutFields,
    pack_put_run,
    put_message_header,
    read_put,
)
from pybmq.wire import checksum
from pybmq.wire.appdata import MessageEventBuilder, inflater, prepare_app_data
from pybmq.wire.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from pybmq.wire.framing import Event, check_event, event_bytes
from pybmq.wire.options import encode_msg_group_id
from pybmq.wire.properties import MessageProperties

__all__ = ["PutEventBuilder", "PutMessage", "decode_put", "iter_put"]

_GUID_SIZE = PUT_FIELD_OFFSETS["crc32c"] - PUT_FIELD_OFFSETS["guid"]


class PutMessage(PutFields):
    """One message of a PUT event (its fields: ``PutFields``, from the layout spec).

    ``payload`` is decompressed (unless iterated with ``decompress=False``, when it is the wire
    bytes); ``properties_area`` is the wire-form properties (b"" without properties), decoded
    lazily by the ``properties`` attribute.
    """

    __slots__ = ()

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


def decode_put(
    event: Event | bytes | bytearray | memoryview,
    *,
    decompress: bool = True,
    verify_crc: bool = False,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> list[PutMessage]:
    """``iter_put`` as a list (the broker side's hot path: one list, no generator)."""
    data = bytes(event_bytes(event))
    hsize, length, _ = check_event(data, EventType.PUT)
    return read_put(
        data,
        hsize,
        length,
        PutMessage,
        inflater(max_decompressed_size) if decompress else None,
        checksum.raw_crc32c if verify_crc else None,
    )


class PutEventBuilder(MessageEventBuilder):
    """Builds PUT events; ``finish()`` returns them (a new event starts when one is full).

    Defaults follow the C++ SDK: a full PutHeader, extended properties (schema id 1) and
    compression only when asked, the data is at least 1024 bytes and it pays off.
    """

    _event_type = EventType.PUT
    _max_single_event = PUT_EVENT_MAX_SIZE_SOFT

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
        header_words: int = PUT_HEADER_WORDS,
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
            if not 0 <= correlation_id <= ACK_MESSAGE_CORRELATION_ID_MASK:  # as the ACK echoes it
                raise EncodeError(f"correlation_id {correlation_id} does not fit 24 bits")
            guid = b"\0" + correlation_id.to_bytes(3, "big") + b"\0" * 12
        elif len(guid) != _GUID_SIZE:
            raise EncodeError(f"guid must be {_GUID_SIZE} bytes, got {len(guid)}")
        if raw:
            props: bytes | memoryview = b""
            cat = compression
            schema = schema_id or 0
            fbits = flags or 0
        else:
            props, payload, pflag, cat, schema = prepare_app_data(
                payload, properties, compression, extended_properties, self.compression_threshold,
                PUT_PROPERTIES_FLAG,
            )  # fmt: skip
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
        if crc32c is None:
            crc = checksum.raw_crc32c
            crc32c = crc(payload, crc(props)) if props else crc(payload)
        header, pad, size = put_message_header(
            fbits, len(options), app_len, cat, header_words, queue_id, guid, crc32c, schema
        )
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
        if not -(2**31) <= queue_id < 2**31:  # a signed 32-bit field
            raise EncodeError(f"queue_id {queue_id} does not fit a signed 32-bit field")
        props = (
            properties.encode(extended_properties)
            if properties is not None and len(properties)
            else b""
        )
        fbits = (PUT_PROPERTIES_FLAG if props else 0) | (
            PutHeaderFlags.ACK_REQUESTED if ack_requested else 0
        )
        schema = 1 if props and extended_properties else 0
        props_crc = checksum.raw_crc32c(props)  # the first call loads it: bind it after
        crc = checksum.raw_crc32c
        while True:
            total, packed = pack_put_run(
                self._parts, queue_id, payloads, guids, props, props_crc, fbits, schema,
                self._size, self.max_event_size, crc,
            )  # fmt: skip
            self._size = total
            self._count += packed
            self.message_count += packed
            if packed == len(payloads):
                return
            # Rare: a full event, a bad GUID or oversized data; the checked path takes that one.
            self.add(queue_id, payloads[packed], guid=guids[packed], properties=properties,
                     ack_requested=ack_requested,
                     extended_properties=extended_properties)  # fmt: skip
            payloads, guids = payloads[packed + 1 :], guids[packed + 1 :]
