"""PUSH events: the reader (``iter_push``/``decode_push``, a client's hot path) and the writer
(``PushEventBuilder``, the simulator's).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from pybmq.errors import EncodeError, ProtocolError
from pybmq.generated.wire_codec import (
    COMPRESSION_MIN_APPDATA_SIZE,
    DEFAULT_SUBQUEUE_ID,
    MESSAGE_PROPERTIES_HEADER_AREA_WORDS_MASK,
    OPTION_HEADER_PACKED_SHIFT,
    OPTION_HEADER_SIZE,
    OPTION_HEADER_TYPE_SHIFT,
    OPTION_HEADER_TYPE_SPECIFIC_SHIFT,
    PACKED_RDA_INFO_MASK,
    PADDING,
    PUSH_BODY,
    PUSH_BODY_OFFSET,
    PUSH_FULL,
    PUSH_HEADER,
    PUSH_HEADER_COMPRESSION_SHIFT,
    PUSH_HEADER_FLAGS_SHIFT,
    PUSH_HEADER_MESSAGE_WORDS_MASK,
    PUSH_HEADER_OPTIONS_WORDS_SHIFT,
    PUSH_HEADER_SIZE,
    PUSH_MIN_HEADER_SIZE_FOR_SCHEMA_ID,
    PUSH_SCHEMA_ID,
    PUSH_SCHEMA_ID_OFFSET,
    PUT_MAX_PAYLOAD_SIZE_SOFT,
    SUB_QUEUE_ID_OLD_SIZE,
    SUB_QUEUE_INFO_SIZE,
    WORD,
    WORD_SIZE,
    CompressionAlgorithmType,
    EventType,
    OptionType,
    PushHeaderFlags,
    SubQueueInfo,
)
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
from pybmq.wire.compression import DEFAULT_MAX_DECOMPRESSED_SIZE, decompress
from pybmq.wire.framing import (
    MAX_EVENT_SIZE,
    Event,
    check_event,
    event_bytes,
)
from pybmq.wire.options import (
    encode_msg_group_id,
    encode_packed_sub_queue_info,
    encode_sub_queue_infos,
    parse_options,
)
from pybmq.wire.properties import MessageProperties, properties_area_size

# The first option word of a PushHeader (8 or 7 header words) followed by one SUB_QUEUE_IDS_OLD
# option with one id (2 words), one plain SUB_QUEUE_INFOS option of 3 words (header + one 8-byte
# item) or one packed option (1 word).
_ONE_ID_OLD_OPTION = (OptionType.SUB_QUEUE_IDS_OLD << OPTION_HEADER_TYPE_SHIFT) | (
    OPTION_HEADER_SIZE + SUB_QUEUE_ID_OLD_SIZE
) // WORD_SIZE
_ONE_INFO_OPTION = (
    (OptionType.SUB_QUEUE_INFOS << OPTION_HEADER_TYPE_SHIFT)
    | (SUB_QUEUE_INFO_SIZE // WORD_SIZE << OPTION_HEADER_TYPE_SPECIFIC_SHIFT)
    | (OPTION_HEADER_SIZE + SUB_QUEUE_INFO_SIZE) // WORD_SIZE
)
_PACKED_MASK = ~PACKED_RDA_INFO_MASK  # all but the RdaInfo byte
_PACKED_OPTION = (OptionType.SUB_QUEUE_INFOS << OPTION_HEADER_TYPE_SHIFT) | (
    1 << OPTION_HEADER_PACKED_SHIFT
)
# The low bits of a PushHeader's second word: compression and header words (both 0 and 8 or 7
# header words in the common case, checked with one comparison).
_BELOW_OPTIONS = (1 << PUSH_HEADER_OPTIONS_WORDS_SHIFT) - 1


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


def inflate_push(push: PushMessage, max_size: int) -> tuple[bytes, bytes]:
    """(properties area, payload) of a message read with ``decompress=False``, inflated to at
    most ``max_size`` bytes. ProtocolError if the data is corrupt or too big: the caller decides
    whether that ends the event or only this message."""
    if not push.compression:
        return push.properties_area, push.payload
    app = decompress(push.payload, push.compression, max_size)
    if push.flags & PushHeaderFlags.MESSAGE_PROPERTIES and not push.schema_id:
        # Old properties format: properties and payload were compressed together.
        size = properties_area_size(app, 0, len(app))
        return app[:size], app[size:]
    return push.properties_area, app


def inflate_properties(push: PushMessage, limit: int) -> bytes:
    """The properties area of a message read with ``decompress=False`` (empty when it has none)
    without inflating its payload: as it came (MESSAGE_PROPERTIES_EX leaves it uncompressed),
    or, in the old format that compresses properties and payload together, inflated only as far
    as the area goes. ProtocolError if that area is corrupt or longer than ``limit`` bytes."""
    if not push.flags & PushHeaderFlags.MESSAGE_PROPERTIES:
        return b""
    if not push.compression or push.schema_id:
        return push.properties_area
    if push.compression != CompressionAlgorithmType.ZLIB:
        raise ProtocolError(f"unknown compression algorithm {push.compression}", path="compression")
    inflater = zlib.decompressobj()
    try:
        head = inflater.decompress(push.payload, 4)
        size = properties_area_size(head, 0, limit)
        area = head + inflater.decompress(inflater.unconsumed_tail, size - len(head))
    except zlib.error as exc:
        raise ProtocolError(f"corrupt zlib data: {exc}", path="payload") from None
    if len(area) < size:
        raise ProtocolError("truncated properties area", path="MessageProperties")
    return area


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
    data = bytes(event_bytes(event))
    hsize, length, _ = check_event(data, EventType.PUSH)
    pos = hsize
    unpack_body = PUSH_BODY.unpack_from
    unpack_header = PUSH_FULL.unpack_from
    unpack_word = WORD.unpack_from
    words_mask, flags_shift = PUSH_HEADER_MESSAGE_WORDS_MASK, PUSH_HEADER_FLAGS_SHIFT
    area_mask, props_flag = MESSAGE_PROPERTIES_HEADER_AREA_WORDS_MASK, PROPS_FLAG
    new = tuple.__new__
    info_cache: dict[object, tuple[SubQueueInfo, ...]] = {}
    no_infos = NO_INFOS
    record = PushMessage
    limit = length - 36  # a whole 32-byte header and the word after it fit up to here
    while pos < length:
        # The common case (28/32-byte header, no options, no compression) stays inline: one
        # unpack for the whole header and a record made without a Python-level constructor.
        if pos <= limit:
            w0, w1, queue_id, guid, schema, word = unpack_header(data, pos)
            size = (w0 & words_mask) * 4
            end = pos + size
            if w1 == 8 and size > 32 and end <= length:
                # What the C++ broker sends. ``size > 32`` (a multiple of 4) leaves at least 4
                # bytes of application data, so a padding byte of 1..4 always fits.
                pad = data[end - 1]
                if (pad - 1) // 4:  # not in 1..4
                    pad_count(data, pos + 32, end, pos)  # raises with the details
                end -= pad
                start = pos + 32
                flags = w0 >> flags_shift
                pos += size
                if flags & props_flag:
                    # ``word`` is the first word of the MessagePropertiesHeader, with the area's
                    # size in words.
                    split = start + (word & area_mask) * 4
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
                word = unpack_word(data, start)[0]
                pad = data[end - 1]
                if (pad - 1) // 4:
                    pad_count(data, start, end, pos)  # raises with the details
                end -= pad
                flags = w0 >> flags_shift
                split = start
                if flags & props_flag:
                    split = start + (word & area_mask) * 4
                    if split <= start or split > end:
                        properties_area_size(data, start, end)  # raises with the details
                append(new(record, (queue_id, guid, flags, 0, 0, data[start:split],
                                    data[split:end], b"", 7, no_infos, None)))  # fmt: skip
                pos += size
                continue
            hwords = w1 & _BELOW_OPTIONS  # header words, if the compression bits are 0
            if hwords == 7:  # an older peer's 28-byte header: the options start in ``schema``
                oword = unpack_word(data, pos + 28)[0]
                schema = 0
            else:
                oword = word
            owords = w1 >> PUSH_HEADER_OPTIONS_WORDS_SHIFT
            if (hwords == 8 or hwords == 7) and (
                (owords == 2 and oword == _ONE_ID_OLD_OPTION)
                or (owords == 3 and oword == _ONE_INFO_OPTION)
                or (owords == 1 and oword & _PACKED_MASK == _PACKED_OPTION)
            ):
                # What brokers send most: a 32-byte (or an older peer's 28-byte) header and ONE
                # sub-queue option (one old-style id, one plain 8-byte info, or packed), no
                # compression. Infos cached per value.
                ostart = pos + hwords * 4
                start = ostart + owords * 4
                if owords == 2:
                    key = data[ostart + 4 : ostart + 8]
                elif owords == 3:
                    key = data[ostart + 3 : ostart + 9]  # distinct from the 4-byte old-style key
                else:
                    key = oword & PACKED_RDA_INFO_MASK
                infos = info_cache.get(key)
                if infos is None:
                    infos = parse_options(data, ostart, start)[0]
                    if len(info_cache) < 1024:
                        info_cache[key] = infos
                if end <= length and size > start - pos:
                    pad = data[end - 1]
                    if not 1 <= pad <= 4 or pad > end - start:
                        pad_count(data, start, end, pos)  # raises with the details
                    end -= pad
                    flags = w0 >> flags_shift
                    split = start
                    if flags & props_flag:
                        area = (unpack_word(data, start)[0] & area_mask) * 4
                        split = start + area
                        if area <= 0 or split > end:
                            properties_area_size(data, start, end)  # raises with the details
                    append(new(
                        PushMessage,
                        (queue_id, guid, flags, 0, schema, data[start:split], data[split:end],
                         data[ostart:start], hwords, infos, None),
                    ))  # fmt: skip
                    pos += size
                    continue
        flags, size, hwords, opt_start, start, cat, owords = message_bounds(
            data, pos, length, 28, "PushHeader"
        )
        queue_id, guid = unpack_body(data, pos + PUSH_BODY_OFFSET)
        if hwords * 4 >= PUSH_MIN_HEADER_SIZE_FOR_SCHEMA_ID:
            schema = PUSH_SCHEMA_ID.unpack_from(data, pos + PUSH_SCHEMA_ID_OFFSET)[0]
        else:
            schema = 0
        end = pos + size
        if owords:
            options = data[opt_start:start]
            infos, group_id = parse_options(data, opt_start, start)
        else:
            options, infos, group_id = b"", NO_INFOS, None
        if flags & PushHeaderFlags.IMPLICIT_PAYLOAD and start == end:
            props, payload = b"", b""
        else:
            end -= pad_count(data, start, end, pos)
            props, payload = split_app_data(
                data, start, end, flags, cat, schema, decompress, max_decompressed_size
            )
        append(
            PushMessage(
                queue_id, guid, flags, cat, schema, props, payload, options, hwords, infos, group_id
            )
        )
        pos += size
    return out


class PushEventBuilder(MessageEventBuilder):
    """Builds PUSH events (the broker side; the simulator uses it)."""

    _event_type = EventType.PUSH
    _max_single_event = MAX_EVENT_SIZE

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
            props, payload, pflag, cat, schema = prepare_app_data(
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
            pad = PADDING[app_len % WORD_SIZE]
        if app_len > PUT_MAX_PAYLOAD_SIZE_SOFT:
            # PushHeader::k_MAX_PAYLOAD_SIZE_SOFT, which upstream asserts equals the PutHeader's.
            raise EncodeError(
                f"application data of {app_len} bytes exceeds {PUT_MAX_PAYLOAD_SIZE_SOFT}"
            )
        hsize = header_words * 4
        size = hsize + len(options) + app_len + len(pad)
        try:
            header = PUSH_HEADER.pack(
                (fbits << PUSH_HEADER_FLAGS_SHIFT) | (size // WORD_SIZE),
                (len(options) // WORD_SIZE << PUSH_HEADER_OPTIONS_WORDS_SHIFT)
                | (cat << PUSH_HEADER_COMPRESSION_SHIFT)
                | header_words,
                queue_id,
                guid,
                schema,
                0,
            )
        except struct.error as exc:
            raise EncodeError(f"PUSH header field out of range: {exc}") from None
        if hsize != PUSH_HEADER_SIZE:
            header = resize_header(header, hsize, 28)
        self._append(size, (header, options, props, payload, pad))
