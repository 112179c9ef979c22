"""PUT events: the reader (``iter_put``/``decode_put``, a broker's hot path) and the writer
(``PutEventBuilder``, a client's hot path).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from pybmq.errors import EncodeError, ProtocolError, UsageError
from pybmq.generated.wire_codec import (
    ACK_MESSAGE_CORRELATION_ID_MASK,
    COMPRESSION_MIN_APPDATA_SIZE,
    MESSAGE_PROPERTIES_HEADER_AREA_WORDS_MASK,
    PADDING,
    PUT_BODY,
    PUT_BODY_OFFSET,
    PUT_EVENT_MAX_SIZE_SOFT,
    PUT_FULL,
    PUT_HEADER,
    PUT_HEADER_COMPRESSION_SHIFT,
    PUT_HEADER_FLAGS_SHIFT,
    PUT_HEADER_MESSAGE_WORDS_MASK,
    PUT_HEADER_OPTIONS_WORDS_SHIFT,
    PUT_HEADER_SIZE,
    PUT_MAX_PAYLOAD_SIZE_SOFT,
    PUT_MIN_HEADER_SIZE_FOR_SCHEMA_ID,
    PUT_SCHEMA_ID,
    PUT_SCHEMA_ID_OFFSET,
    WORD_SIZE,
    CompressionAlgorithmType,
    EventType,
    PutHeaderFlags,
    SubQueueInfo,
)
from pybmq.wire import checksum
from pybmq.wire.appdata import (
    NO_INFOS,
    PROPS_FLAG,
    MessageEventBuilder,
    message_bounds,
    pad_count,
    prepare_app_data,
    resize_header,
    split_app_data,
)
from pybmq.wire.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from pybmq.wire.framing import (
    Event,
    check_event,
    event_bytes,
)
from pybmq.wire.options import (
    encode_msg_group_id,
    parse_options,
)
from pybmq.wire.properties import MessageProperties, properties_area_size


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
    data = bytes(event_bytes(event))
    hsize, length, _ = check_event(data, EventType.PUT)
    pos = hsize
    unpack_body = PUT_BODY.unpack_from
    unpack_header = PUT_FULL.unpack_from
    new = tuple.__new__
    words_mask, flags_shift = PUT_HEADER_MESSAGE_WORDS_MASK, PUT_HEADER_FLAGS_SHIFT
    area_mask, props_flag = MESSAGE_PROPERTIES_HEADER_AREA_WORDS_MASK, PROPS_FLAG
    while pos < length:
        # The common case (36-byte header, no options, no compression) stays inline, as in
        # decode_push.
        if length - pos >= 40:
            w0, w1, queue_id, guid, crc, schema, word = unpack_header(data, pos)
            size = (w0 & words_mask) * 4
            end = pos + size
            if w1 == 9 and end <= length and size > 36:
                start = pos + 36
                pad = data[end - 1]
                if not 1 <= pad <= 4 or pad > end - start:
                    pad_count(data, start, end, pos)  # raises with the details
                end -= pad
                if verify_crc:
                    actual = checksum.raw_crc32c(data[start:end])
                    if actual != crc:
                        raise _crc_mismatch(crc, actual, pos)
                flags = w0 >> flags_shift
                if flags & props_flag:
                    # ``word`` starts the MessagePropertiesHeader, with the area's size in words.
                    split = start + (word & area_mask) * 4
                    if split <= start or split > end:
                        properties_area_size(data, start, end)  # raises with the details
                    append(new(
                        PutMessage,
                        (queue_id, guid, flags, 0, crc, schema, data[start:split],
                         data[split:end], b"", 9, NO_INFOS, None),
                    ))  # fmt: skip
                else:
                    append(new(
                        PutMessage,
                        (queue_id, guid, flags, 0, crc, schema, b"", data[start:end], b"", 9,
                         NO_INFOS, None),
                    ))  # fmt: skip
                pos += size
                continue
        flags, size, hwords, opt_start, start, cat, owords = message_bounds(
            data, pos, length, 32, "PutHeader"
        )
        queue_id, guid, crc = unpack_body(data, pos + PUT_BODY_OFFSET)
        if hwords * 4 >= PUT_MIN_HEADER_SIZE_FOR_SCHEMA_ID:
            schema = PUT_SCHEMA_ID.unpack_from(data, pos + PUT_SCHEMA_ID_OFFSET)[0]
        else:
            schema = 0
        end = pos + size
        end -= pad_count(data, start, end, pos)
        if verify_crc:
            actual = checksum.raw_crc32c(data[start:end])
            if actual != crc:
                raise _crc_mismatch(crc, actual, pos)
        if owords:
            options = data[opt_start:start]
            infos, group_id = parse_options(data, opt_start, start)
        else:
            options, infos, group_id = b"", NO_INFOS, None
        props, payload = split_app_data(
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


class PutEventBuilder(MessageEventBuilder):
    """Builds PUT events; ``finish()`` returns them (a new event starts when one is full).

    Defaults follow the C++ SDK: 36-byte PutHeader, extended properties (schema id 1) and
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
            if not 0 <= correlation_id <= ACK_MESSAGE_CORRELATION_ID_MASK:  # as the ACK echoes it
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
            props, payload, pflag, cat, schema = prepare_app_data(
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
        pad = PADDING[app_len % WORD_SIZE]
        if crc32c is None:
            crc = checksum.raw_crc32c
            crc32c = crc(payload, crc(props)) if props else crc(payload)
        hsize = header_words * 4
        size = hsize + len(options) + app_len + len(pad)
        try:
            header = PUT_HEADER.pack(
                (fbits << PUT_HEADER_FLAGS_SHIFT) | (size // WORD_SIZE),
                (len(options) // WORD_SIZE << PUT_HEADER_OPTIONS_WORDS_SHIFT)
                | (cat << PUT_HEADER_COMPRESSION_SHIFT)
                | header_words,
                queue_id,
                guid,
                crc32c,
                schema,
                0,
            )
        except struct.error as exc:
            raise EncodeError(f"PUT header field out of range: {exc}") from None
        if hsize != PUT_HEADER_SIZE:
            header = resize_header(header, hsize, 32)
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
        fbits = (PROPS_FLAG if props else 0) | (
            PutHeaderFlags.ACK_REQUESTED if ack_requested else 0
        )
        schema = 1 if props and extended_properties else 0
        props_crc = checksum.raw_crc32c(props)  # the first call loads it: bind it after
        plen = len(props)
        pack = PUT_HEADER.pack
        crc = checksum.raw_crc32c
        pads = PADDING
        w0_base = fbits << PUT_HEADER_FLAGS_SHIFT
        wsize = WORD_SIZE
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
                pad = pads[app_len % wsize]
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
                    w0_base | (size // wsize),
                    w1,
                    queue_id,
                    guid,
                    crc(payload, props_crc),
                    schema,
                    0,
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
