"""Readers and builders of the PUT and PUSH messages: header, options, properties area framing,
payload and padding, repeated after an EventHeader. The wire layer's hot paths.

GENERATED from schema/bmqp_layout.yaml by pybmq.codegen.layout -- do not edit; run `make generate`.

Each message kind of the spec's ``messages`` section gets a record of one message
(``<Kind>Fields``), a reader of a whole event (``read_<kind>``, the common shapes inline, every
other one through the checked path), the checked bounds of one message (``<kind>_bounds``), its
header builder (``<kind>_message_header``) and, for a kind with a checksum, the builder of a run
of messages sharing properties (``pack_<kind>_run``). The options (sub-queue infos, group
id), the properties area's framing and the padding rule they share come first. What is not
layout (decompression, the checksum function, the record's own methods) comes in as arguments.
The construct model in ``wire_layout`` is the reference the tests hold all of it to.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple, TypeVar, Union

from pybmq.errors import EncodeError, ProtocolError
from pybmq.generated.wire_codec import (
    DEFAULT_SUBQUEUE_ID,
    MESSAGE_PROPERTIES_HEADER,
    MSG_GROUP_ID_MAX_LENGTH,
    OPTION_HEADER,
    PACKED_RDA_INFO_MASK,
    PADDING,
    PUT_MAX_PAYLOAD_SIZE_SOFT,
    SUB_QUEUE_ID_OLD,
    SUB_QUEUE_INFO,
    WORD,
    OptionType,
    SubQueueInfo,
)

__all__ = [
    "Buffer",
    "Checksum",
    "Inflate",
    "NO_INFOS",
    "ONE_SUB_QUEUE_ID_OLD_OPTION",
    "ONE_SUB_QUEUE_INFO_OPTION",
    "OPTION_HEADER_SIZE",
    "PACKED_OPTION_MASK",
    "PACKED_SUB_QUEUE_INFO_OPTION",
    "PADDING_MAX",
    "PROPERTIES_AREA_WORDS_MASK",
    "PROPERTIES_HEADER_MAX_SIZE",
    "PROPERTIES_HEADER_SIZE",
    "PROPERTY_HEADER_MAX_SIZE",
    "PROPERTY_HEADER_SIZE",
    "PUSH_FIELD_OFFSETS",
    "PUSH_HEADER_WORDS",
    "PUSH_IMPLICIT_PAYLOAD_FLAG",
    "PUSH_PROPERTIES_FLAG",
    "PUSH_REQUIRED_HEADER_SIZE",
    "PUSH_SCHEMA_ID",
    "PUT_FIELD_OFFSETS",
    "PUT_HEADER_WORDS",
    "PUT_PROPERTIES_FLAG",
    "PUT_REQUIRED_HEADER_SIZE",
    "PUT_SCHEMA_ID",
    "PushFields",
    "PutFields",
    "RDA_UNLIMITED",
    "WORD_SIZE",
    "declared_area",
    "encode_msg_group_id",
    "encode_packed_sub_queue_info",
    "encode_sub_queue_ids_old",
    "encode_sub_queue_infos",
    "pack_put_run",
    "pad_count",
    "padding_for",
    "properties_area_size",
    "properties_header",
    "push_bounds",
    "push_message_header",
    "push_schema_id",
    "put_bounds",
    "put_message_header",
    "put_schema_id",
    "rda_byte",
    "rda_info",
    "read_options",
    "read_properties_header",
    "read_push",
    "read_put",
    "resize_header",
    "split_app_data",
    "unpadded_length",
]

Buffer = Union[bytes, bytearray, memoryview]
# ``inflate(data, compression, offset)``: the data inflated (ProtocolError naming ``offset`` if
# it cannot be); None reads compressed data as it is.
Inflate = Callable[[Buffer, int, int], bytes]
# ``crc(data, crc)``: the CRC32-C of ``data`` continuing from ``crc``.
Checksum = Callable[..., int]
R = TypeVar("R")

WORD_SIZE = 4
PADDING_MAX = 4  # bytes of padding at most (at least 1)
NO_INFOS: tuple[SubQueueInfo, ...] = ()


# -- padding (4 bytes at most, each holding the count) ----------------------------------------


def padding_for(length: int) -> bytes:
    """The padding bytes that follow ``length`` bytes of data."""
    return PADDING[length % 4]


def pad_count(data: Buffer, start: int, end: int, msg_offset: int) -> int:
    """How many padding bytes end the application data ``data[start:end]``."""
    if end <= start:
        raise ProtocolError(
            "message has no application data (not even padding)", offset=msg_offset, path="message"
        )
    pad = data[end - 1]
    if not 1 <= pad <= 4 or pad > end - start:
        raise ProtocolError(f"invalid padding byte {pad}", offset=end - 1, path="message.padding")
    return pad


def unpadded_length(buf: Buffer, start: int, end: int, what: str) -> int:
    """Length of the data in ``buf[start:end]`` once its padding is removed (only the last byte
    is read, as upstream's ProtocolUtil::calcUnpaddedLength does)."""
    if end <= start:
        raise ProtocolError(f"{what}: empty area where padded data was expected", offset=start)
    pad = buf[end - 1]
    if not 1 <= pad <= 4 or pad > end - start:
        raise ProtocolError(f"{what}: invalid padding byte {pad}", offset=end - 1, path=what)
    return end - start - pad


# -- options (bmqp_protocol.h: struct OptionHeader) --------------------------------------------------

OPTION_HEADER_SIZE = 4
# The RdaInfo byte of an unlimited number of delivery attempts.
RDA_UNLIMITED = 0x80
# The first word of one SUB_QUEUE_IDS_OLD option with one id, of one plain SUB_QUEUE_INFOS option
# with one item, and of a packed one (whose low byte is the RdaInfo: masked out).
ONE_SUB_QUEUE_ID_OLD_OPTION = (OptionType.SUB_QUEUE_IDS_OLD << 26) | 2
ONE_SUB_QUEUE_INFO_OPTION = (OptionType.SUB_QUEUE_INFOS << 26) | (2 << 21) | 3
PACKED_SUB_QUEUE_INFO_OPTION = (OptionType.SUB_QUEUE_INFOS << 26) | (1 << 25)
PACKED_OPTION_MASK = ~PACKED_RDA_INFO_MASK


def rda_byte(rda: int | None) -> int:
    """The RdaInfo byte of an RDA counter (None: unlimited)."""
    if rda is None:
        return RDA_UNLIMITED
    if not 0 <= rda <= 0x3F:
        raise EncodeError(f"RDA counter must be within 0..63 or None (unlimited), got {rda!r}")
    return rda


def rda_info(sub_queue_id: int, rda: int) -> SubQueueInfo:
    """The SubQueueInfo of a sub-queue id and its RdaInfo byte."""
    return SubQueueInfo(
        sub_queue_id,
        rda >> 7,
        (rda >> 6) & 0x1,
        rda & 0x3F,
        bytes(3),
    )


def encode_sub_queue_infos(infos: Iterable[tuple[int, int | None]]) -> bytes:
    """A non-packed SUB_QUEUE_INFOS option: (sub-queue id, RDA counter or None for unlimited)."""
    items = [
        SUB_QUEUE_INFO.pack(sub_queue_id, rda_byte(rda), bytes(3)) for sub_queue_id, rda in infos
    ]
    words = 1 + 2 * len(items)
    header = OPTION_HEADER.pack((OptionType.SUB_QUEUE_INFOS << 26) | (2 << 21) | words)
    return header + b"".join(items)


def encode_packed_sub_queue_info(rda: int | None) -> bytes:
    """The packed SUB_QUEUE_INFOS option: default sub-queue only, RDA in the words field."""
    return OPTION_HEADER.pack(PACKED_SUB_QUEUE_INFO_OPTION | rda_byte(rda))


def encode_sub_queue_ids_old(ids: Iterable[int]) -> bytes:
    """The deprecated SUB_QUEUE_IDS_OLD option (bare ids) that older brokers send."""
    items = [SUB_QUEUE_ID_OLD.pack(i) for i in ids]
    words = 1 + 1 * len(items)
    return OPTION_HEADER.pack((OptionType.SUB_QUEUE_IDS_OLD << 26) | words) + b"".join(items)


def encode_msg_group_id(group_id: str) -> bytes:
    """The MSG_GROUP_ID option: the id's bytes, padded."""
    raw = group_id.encode("utf-8")
    if not 0 < len(raw) <= MSG_GROUP_ID_MAX_LENGTH:
        raise EncodeError(f"message group id must be 1..{MSG_GROUP_ID_MAX_LENGTH} bytes")
    pad = padding_for(len(raw))
    words = 1 + (len(raw) + len(pad)) // 4
    return OPTION_HEADER.pack((OptionType.MSG_GROUP_ID << 26) | words) + raw + pad


def read_options(data: Buffer, start: int, end: int) -> tuple[tuple[SubQueueInfo, ...], str | None]:
    """Walk an options area; return its sub-queue infos and message group id.

    Options of unknown types are skipped (they are forward-compatible by design); malformed
    sizes raise ProtocolError naming the option's offset.
    """
    infos: list[SubQueueInfo] = []
    group_id: str | None = None
    if end > len(data):
        raise ProtocolError(
            f"options area ends at byte {end}, past the {len(data)}-byte event",
            offset=start,
            path="OptionHeader",
        )
    pos = start
    while pos < end:
        if end - pos < 4:
            raise ProtocolError("truncated OptionHeader", offset=pos, path="OptionHeader")
        (word,) = OPTION_HEADER.unpack_from(data, pos)
        otype = word >> 26
        packed = (word >> 25) & 0x1
        tspec = (word >> 21) & 0xF
        words = word & 0x1FFFFF
        if otype == OptionType.UNDEFINED:
            raise ProtocolError("option of type UNDEFINED", offset=pos, path="OptionHeader.type")
        if packed:
            if otype != OptionType.SUB_QUEUE_INFOS:
                raise ProtocolError(
                    f"packed option of type {otype}", offset=pos, path="OptionHeader.packed"
                )
            infos.append(rda_info(DEFAULT_SUBQUEUE_ID, words & PACKED_RDA_INFO_MASK))
            pos += 4
            continue
        size = words * 4
        if words < 1 or pos + size > end:
            raise ProtocolError(
                f"option of {words} words does not fit the options area",
                offset=pos,
                path="OptionHeader.words",
            )
        body = pos + 4
        if otype == OptionType.SUB_QUEUE_IDS_OLD:
            infos.extend(
                rda_info(sub_id, RDA_UNLIMITED)
                for (sub_id,) in SUB_QUEUE_ID_OLD.iter_unpack(data[body : pos + size])
            )
        elif otype == OptionType.SUB_QUEUE_INFOS:
            item = tspec * 4
            if item < 8 or (size - 4) % item:
                raise ProtocolError(
                    f"SUB_QUEUE_INFOS items of {item} bytes in a {size - 4}-byte option",
                    offset=pos,
                    path="OptionHeader.typeSpecific",
                )
            for at in range(body, pos + size, item):
                sub_id, rda, _ = SUB_QUEUE_INFO.unpack_from(data, at)
                infos.append(rda_info(sub_id, rda))
        elif otype == OptionType.MSG_GROUP_ID:
            end_id = body + unpadded_length(data, body, pos + size, "MsgGroupIdOption")
            group_id = bytes(data[body:end_id]).decode("utf-8", "surrogateescape")
        pos += size
    return tuple(infos), group_id


# -- the properties area's framing (bmqp_protocol.h: struct MessagePropertiesHeader) --------------------

# Header sizes are counted in 2-byte units (3 bits): at least the struct, at most this.
PROPERTIES_HEADER_SIZE = 6
PROPERTIES_HEADER_MAX_SIZE = 14
PROPERTY_HEADER_SIZE = 6
PROPERTY_HEADER_MAX_SIZE = 14
# The area's size in words, over 24 bits of the header's first word.
PROPERTIES_AREA_WORDS_MASK = 0xFFFFFF


def properties_area_size(buf: Buffer, start: int, end: int) -> int:
    """Size in bytes (padding included) of the properties area starting at ``start``."""
    if end - start < 4:
        raise ProtocolError(
            "truncated MessagePropertiesHeader", offset=start, path="MessagePropertiesHeader"
        )
    size: int = (WORD.unpack_from(buf, start)[0] & PROPERTIES_AREA_WORDS_MASK) * 4
    if size <= 0 or size > end - start:
        raise ProtocolError(
            f"message properties area of {size} bytes does not fit the {end - start} available",
            offset=start,
            path="MessagePropertiesHeader.messagePropertiesAreaWords",
        )
    return size


def declared_area(area: bytes) -> bytes:
    """``area`` cut to the size its header declares, when that is shorter (and plausible)."""
    if len(area) >= 4:
        size = (WORD.unpack_from(area)[0] & PROPERTIES_AREA_WORDS_MASK) * 4
        if 0 < size < len(area):
            return area[:size]
    return area


def read_properties_header(area: bytes, offset: int = 0) -> tuple[int, int, int, int]:
    """(header size, property header size, area size, number of properties) of a properties
    area's header, each checked; ProtocolError naming ``offset`` (where the area is) if not."""

    def fail(msg: str, at: int, path: str) -> ProtocolError:
        return ProtocolError(msg, offset=offset + at, path=path)

    size = len(area)
    if size < 6:
        raise fail("truncated MessagePropertiesHeader", 0, "MessagePropertiesHeader")
    sizes, upper, lower, _reserved, count = MESSAGE_PROPERTIES_HEADER.unpack_from(area, 0)
    header_size = (sizes & 0x7) * 2
    property_header_size = ((sizes >> 3) & 0x7) * 2
    area_size = ((upper << 16) | lower) * 4
    if header_size < 6:
        raise fail(f"MessagePropertiesHeader size {header_size} < 6", 0, "MessagePropertiesHeader")
    if property_header_size < 6:
        raise fail(
            f"MessagePropertyHeader size {property_header_size} < 6", 0, "MessagePropertiesHeader"
        )
    if area_size <= 0 or area_size > size:
        raise fail(
            f"properties area of {area_size} bytes does not fit the {size} available",
            1,
            "MessagePropertiesHeader.messagePropertiesAreaWords",
        )
    if not 0 < count <= 255:
        raise fail(f"invalid number of properties {count}", 5, "MessagePropertiesHeader")
    return header_size, property_header_size, area_size, count


def properties_header(
    header_size: int, property_header_size: int, data_size: int, count: int
) -> tuple[bytes, bytes]:
    """The header of an area of ``count`` properties whose headers and data take ``data_size``
    bytes after it, and the padding that ends the area."""
    total = header_size + data_size
    pad = PADDING[total % 4]
    words = (total + len(pad)) // 4
    header = MESSAGE_PROPERTIES_HEADER.pack(
        (property_header_size // 2 << 3) | (header_size // 2),
        words >> 16,
        words & 0xFFFF,
        0,
        count,
    ) + bytes(header_size - 6)
    return header, pad


# -- messages --------------------------------------------------------------------------------------

# The first two words of every message's header: flags and sizes.
_SIZES = struct.Struct(">II")


def split_app_data(
    data: bytes,
    start: int,
    end: int,
    flags: int,
    compression: int,
    schema: int,
    properties_flag: int,
    inflate: Inflate | None,
) -> tuple[bytes, bytes]:
    """(properties area, payload) of the application data in ``data[start:end]`` (inflated
    when ``inflate`` is given and the message is compressed)."""
    if not flags & properties_flag:
        payload = data[start:end]
        if compression and inflate is not None:
            payload = inflate(payload, compression, start)
        return b"", payload
    if compression and not schema:
        # Old properties format: properties and payload were compressed together.
        if inflate is None:
            return b"", data[start:end]
        app = inflate(data[start:end], compression, start)
        size = properties_area_size(app, 0, len(app))
        return app[:size], app[size:]
    size = properties_area_size(data, start, end)
    payload = data[start + size : end]
    if compression and inflate is not None:
        payload = inflate(payload, compression, start + size)
    return data[start : start + size], payload


def resize_header(header: bytes, size: int, minimum: int) -> bytes:
    """``header`` cut or zero-extended to ``size`` bytes, at least ``minimum``."""
    if size < minimum:
        raise EncodeError(f"header of {size} bytes is shorter than the {minimum}-byte minimum")
    return header[:size] if size <= len(header) else header + bytes(size - len(header))


# -- PUT: PutHeader (bmqp_protocol.h: struct PutHeader) ----------------------------

PUT_HEADER_WORDS = 9
# What every PutHeader holds (the rest only when header_words says so).
PUT_REQUIRED_HEADER_SIZE = 32
PUT_PROPERTIES_FLAG = 2  # PutHeaderFlags.MESSAGE_PROPERTIES
# The whole header (reserved fields skipped) and the word after it, in one unpack.
_PUT_FULL = struct.Struct(">IIi16sIH2xI")
# What every header holds after its two words of sizes.
_PUT_BODY = struct.Struct(">i16sI")
PUT_SCHEMA_ID = struct.Struct(">H")  # at byte 32, in a header of 36 bytes or more
_PUT_HEADER = struct.Struct(">IIi16sIHH")
# Where each field of a PutHeader starts (a field of bits: its unit).
PUT_FIELD_OFFSETS: dict[str, int] = {
    "flags": 0,
    "message_words": 0,
    "options_words": 4,
    "compression": 4,
    "header_words": 4,
    "queue_id": 8,
    "guid": 12,
    "crc32c": 28,
    "schema_id": 32,
}


class PutFields(NamedTuple):
    """One message of a PUT event: its header's queue_id, guid, flags, compression, crc32c, schema_id, then the framing's.

    ``payload`` is inflated (unless read without ``inflate``: the wire bytes); ``properties_area``
    is the wire-form properties (b"" without properties)."""

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


def put_bounds(data: bytes, pos: int, length: int) -> tuple[int, int, int, int, int, int, int]:
    """The checked bounds of the message at ``pos``: (flags, size, header words, options start,
    application data start, compression, options words)."""
    if length - pos < _SIZES.size:
        raise ProtocolError("truncated PutHeader", offset=pos, path="PutHeader")
    w0, w1 = _SIZES.unpack_from(data, pos)
    size = (w0 & 0xFFFFFFF) * 4
    hwords = w1 & 0x1F
    owords = w1 >> 8
    opt_start = pos + hwords * 4
    opt_end = opt_start + owords * 4
    if hwords * 4 < 32:
        raise ProtocolError(
            f"PutHeader of {hwords} words is shorter than 32 bytes",
            offset=pos,
            path="PutHeader.headerWords",
        )
    if size < opt_end - pos or pos + size > length:
        raise ProtocolError(
            f"PutHeader declares {size} bytes (header + options {opt_end - pos}) with "
            f"{length - pos} left in the event",
            offset=pos,
            path="PutHeader.messageWords",
        )
    return w0 >> 28, size, hwords, opt_start, opt_end, (w1 >> 5) & 0x7, owords


def put_schema_id(data: bytes, pos: int, header_words: int) -> int:
    """The schema_id of the message at ``pos`` (0 when its header is too short to hold one)."""
    if header_words * 4 >= 36:
        value: int = PUT_SCHEMA_ID.unpack_from(data, pos + 32)[0]
        return value
    return 0


def read_put(
    data: bytes,
    pos: int,
    length: int,
    record: type[R],
    inflate: Inflate | None,
    crc: Checksum | None,
) -> list[R]:
    """The messages of a PUT event, ``data[pos:length]`` after its EventHeader, as ``record``s
    (``PutFields`` or a subclass of it). ``inflate`` inflates compressed data (None: kept as
    sent); ``crc`` checks each message's crc32c. The whole event is read
    before anything is returned: a malformed message anywhere raises ProtocolError."""
    out: list[R] = []
    append = out.append
    new = tuple.__new__  # the records without their Python-level constructor
    unpack_full = _PUT_FULL.unpack_from
    props_flag, area_mask, no_infos = PUT_PROPERTIES_FLAG, PROPERTIES_AREA_WORDS_MASK, NO_INFOS
    limit = length - 40  # a whole header and the word after it fit up to here
    while pos < length:
        # The common shapes stay inline: one unpack for the whole header and a record made
        # without a Python-level constructor.
        if pos <= limit:
            w0, w1, queue_id, guid, crc32c, schema_id, word = unpack_full(data, pos)
            size = (w0 & 0xFFFFFFF) * 4
            end = pos + size
            if w1 == 9 and size > 36 and end <= length:
                # A full header, no options, no compression. ``size > 36`` (a
                # multiple of 4) leaves room for a padding byte of 1..4.
                start = pos + 36
                pad = data[end - 1]
                if (pad - 1) // 4:  # not 1..4
                    pad_count(data, start, end, pos)  # raises with the details
                end -= pad
                if crc is not None:
                    actual = crc(data[start:end])
                    if actual != crc32c:
                        raise _put_checksum_error(crc32c, actual, pos)
                flags = w0 >> 28
                pos += size
                if flags & props_flag:
                    # ``word`` starts the MessagePropertiesHeader, with the area's size in words.
                    split = start + (word & area_mask) * 4
                    if split <= start or split > end:
                        properties_area_size(data, start, end)  # raises with the details
                    append(
                        new(
                            record,
                            (
                                queue_id,
                                guid,
                                flags,
                                0,
                                crc32c,
                                schema_id,
                                data[start:split],
                                data[split:end],
                                b"",
                                9,
                                no_infos,
                                None,
                            ),
                        )
                    )
                else:
                    append(
                        new(
                            record,
                            (
                                queue_id,
                                guid,
                                flags,
                                0,
                                crc32c,
                                schema_id,
                                b"",
                                data[start:end],
                                b"",
                                9,
                                no_infos,
                                None,
                            ),
                        )
                    )
                continue
        # Every other shape: checked step by step.
        flags, size, hwords, opt_start, start, compression, owords = put_bounds(data, pos, length)
        queue_id, guid, crc32c = _PUT_BODY.unpack_from(data, pos + 8)
        schema_id = put_schema_id(data, pos, hwords)
        end = pos + size
        end -= pad_count(data, start, end, pos)
        if crc is not None:
            actual = crc(data[start:end])
            if actual != crc32c:
                raise _put_checksum_error(crc32c, actual, pos)
        if owords:
            options = data[opt_start:start]
            infos, group_id = read_options(data, opt_start, start)
        else:
            options, infos, group_id = b"", no_infos, None
        properties_area, payload = split_app_data(
            data, start, end, flags, compression, schema_id, props_flag, inflate
        )
        append(
            new(
                record,
                (
                    queue_id,
                    guid,
                    flags,
                    compression,
                    crc32c,
                    schema_id,
                    properties_area,
                    payload,
                    options,
                    hwords,
                    infos,
                    group_id,
                ),
            )
        )
        pos += size
    return out


def put_message_header(
    flags: int,
    options_size: int,
    app_size: int,
    compression: int,
    header_words: int,
    queue_id: int,
    guid: bytes,
    crc32c: int,
    schema_id: int,
) -> tuple[bytes, bytes, int]:
    """(header, padding, size) of a message with ``options_size`` bytes of options and
    ``app_size`` bytes of application data, its PutHeader as long as ``header_words`` says (at
    least what every header holds)."""
    pad = PADDING[app_size % 4]
    size = header_words * 4 + options_size + app_size + len(pad)
    try:
        header = _PUT_HEADER.pack(
            (flags << 28) | (size // 4),
            (options_size // 4 << 8) | (compression << 5) | header_words,
            queue_id,
            guid,
            crc32c,
            schema_id,
            0,
        )
    except struct.error as exc:
        raise EncodeError(f"PUT header field out of range: {exc}") from None
    if header_words != 9:
        header = resize_header(header, header_words * 4, 32)
    return header, pad, size


def pack_put_run(
    parts: list[bytes | memoryview],
    queue_id: int,
    payloads: Sequence[bytes],
    guids: Sequence[bytes],
    properties: bytes,
    properties_crc: int,
    flags: int,
    schema_id: int,
    total: int,
    max_total: int,
    crc: Checksum,
) -> tuple[int, int]:
    """Append to ``parts`` the uncompressed messages (full headers, no options) of ``payloads``
    with ``guids``, sharing the wire-form ``properties`` (whose crc32c is ``properties_crc``),
    while the event (``total`` bytes so far) stays within ``max_total``: (the event's size after
    them, how many were packed). One that does not fit, has a bad GUID or too much data stops
    the run: the caller's checked path takes it."""
    pack = _PUT_HEADER.pack
    pads = PADDING
    plen = len(properties)
    w0_base = flags << 28
    guid_size = 16
    max_app = PUT_MAX_PAYLOAD_SIZE_SOFT
    count = 0
    for payload, guid in zip(payloads, guids):  # noqa: B905 - the caller checks the lengths
        app_len = plen + len(payload)
        pad = pads[app_len % 4]
        size = 36 + app_len + len(pad)
        if total + size > max_total or len(guid) != guid_size or app_len > max_app:
            break
        parts += (
            pack(
                w0_base | (size // 4), 9, queue_id, guid, crc(payload, properties_crc), schema_id, 0
            ),
            properties,
            payload,
            pad,
        )
        total += size
        count += 1
    return total, count


def _put_checksum_error(expected: int, actual: int, offset: int) -> ProtocolError:
    return ProtocolError(
        f"CRC32-C mismatch: header says {expected:#010x}, data gives {actual:#010x}",
        offset=offset,
        path="PutHeader.crc32c",
    )


# -- PUSH: PushHeader (bmqp_protocol.h: struct PushHeader) --------------------------

PUSH_HEADER_WORDS = 8
# What every PushHeader holds (the rest only when header_words says so).
PUSH_REQUIRED_HEADER_SIZE = 28
PUSH_PROPERTIES_FLAG = 2  # PushHeaderFlags.MESSAGE_PROPERTIES
PUSH_IMPLICIT_PAYLOAD_FLAG = 1  # PushHeaderFlags.IMPLICIT_PAYLOAD
# The whole header (reserved fields skipped) and the word after it, in one unpack.
_PUSH_FULL = struct.Struct(">IIi16sH2xI")
# What every header holds after its two words of sizes.
_PUSH_BODY = struct.Struct(">i16s")
PUSH_SCHEMA_ID = struct.Struct(">H")  # at byte 28, in a header of 32 bytes or more
_PUSH_HEADER = struct.Struct(">IIi16sHH")
# Where each field of a PushHeader starts (a field of bits: its unit).
PUSH_FIELD_OFFSETS: dict[str, int] = {
    "flags": 0,
    "message_words": 0,
    "options_words": 4,
    "compression": 4,
    "header_words": 4,
    "queue_id": 8,
    "guid": 12,
    "schema_id": 28,
}


class PushFields(NamedTuple):
    """One message of a PUSH event: its header's queue_id, guid, flags, compression, schema_id, then the framing's.

    ``payload`` is inflated (unless read without ``inflate``: the wire bytes); ``properties_area``
    is the wire-form properties (b"" without properties)."""

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


def push_bounds(data: bytes, pos: int, length: int) -> tuple[int, int, int, int, int, int, int]:
    """The checked bounds of the message at ``pos``: (flags, size, header words, options start,
    application data start, compression, options words)."""
    if length - pos < _SIZES.size:
        raise ProtocolError("truncated PushHeader", offset=pos, path="PushHeader")
    w0, w1 = _SIZES.unpack_from(data, pos)
    size = (w0 & 0xFFFFFFF) * 4
    hwords = w1 & 0x1F
    owords = w1 >> 8
    opt_start = pos + hwords * 4
    opt_end = opt_start + owords * 4
    if hwords * 4 < 28:
        raise ProtocolError(
            f"PushHeader of {hwords} words is shorter than 28 bytes",
            offset=pos,
            path="PushHeader.headerWords",
        )
    if size < opt_end - pos or pos + size > length:
        raise ProtocolError(
            f"PushHeader declares {size} bytes (header + options {opt_end - pos}) with "
            f"{length - pos} left in the event",
            offset=pos,
            path="PushHeader.messageWords",
        )
    return w0 >> 28, size, hwords, opt_start, opt_end, (w1 >> 5) & 0x7, owords


def push_schema_id(data: bytes, pos: int, header_words: int) -> int:
    """The schema_id of the message at ``pos`` (0 when its header is too short to hold one)."""
    if header_words * 4 >= 32:
        value: int = PUSH_SCHEMA_ID.unpack_from(data, pos + 28)[0]
        return value
    return 0


def read_push(
    data: bytes,
    pos: int,
    length: int,
    record: type[R],
    inflate: Inflate | None,
) -> list[R]:
    """The messages of a PUSH event, ``data[pos:length]`` after its EventHeader, as ``record``s
    (``PushFields`` or a subclass of it). ``inflate`` inflates compressed data (None: kept as
    sent). The whole event is read
    before anything is returned: a malformed message anywhere raises ProtocolError."""
    out: list[R] = []
    append = out.append
    new = tuple.__new__  # the records without their Python-level constructor
    unpack_full = _PUSH_FULL.unpack_from
    props_flag, area_mask, no_infos = PUSH_PROPERTIES_FLAG, PROPERTIES_AREA_WORDS_MASK, NO_INFOS
    unpack_word = WORD.unpack_from
    info_cache: dict[object, tuple[SubQueueInfo, ...]] = {}
    limit = length - 36  # a whole header and the word after it fit up to here
    while pos < length:
        # The common shapes stay inline: one unpack for the whole header and a record made
        # without a Python-level constructor.
        if pos <= limit:
            w0, w1, queue_id, guid, schema_id, word = unpack_full(data, pos)
            size = (w0 & 0xFFFFFFF) * 4
            end = pos + size
            if w1 == 8 and size > 32 and end <= length:
                # A full header, no options, no compression. ``size > 32`` (a
                # multiple of 4) leaves room for a padding byte of 1..4.
                start = pos + 32
                pad = data[end - 1]
                if (pad - 1) // 4:  # not 1..4
                    pad_count(data, start, end, pos)  # raises with the details
                end -= pad
                flags = w0 >> 28
                pos += size
                if flags & props_flag:
                    # ``word`` starts the MessagePropertiesHeader, with the area's size in words.
                    split = start + (word & area_mask) * 4
                    if split <= start or split > end:
                        properties_area_size(data, start, end)  # raises with the details
                    append(
                        new(
                            record,
                            (
                                queue_id,
                                guid,
                                flags,
                                0,
                                schema_id,
                                data[start:split],
                                data[split:end],
                                b"",
                                8,
                                no_infos,
                                None,
                            ),
                        )
                    )
                else:
                    append(
                        new(
                            record,
                            (
                                queue_id,
                                guid,
                                flags,
                                0,
                                schema_id,
                                b"",
                                data[start:end],
                                b"",
                                8,
                                no_infos,
                                None,
                            ),
                        )
                    )
                continue
            if w1 == 7 and size > 32 and end <= length:
                # An older peer's header without the schema_id: those bytes already belong to the
                # application data.
                start = pos + 28
                word = unpack_word(data, start)[0]
                pad = data[end - 1]
                if (pad - 1) // 4:  # not 1..4
                    pad_count(data, start, end, pos)  # raises with the details
                end -= pad
                flags = w0 >> 28
                split = start
                if flags & props_flag:
                    split = start + (word & area_mask) * 4
                    if split <= start or split > end:
                        properties_area_size(data, start, end)  # raises with the details
                append(
                    new(
                        record,
                        (
                            queue_id,
                            guid,
                            flags,
                            0,
                            0,
                            data[start:split],
                            data[split:end],
                            b"",
                            7,
                            no_infos,
                            None,
                        ),
                    )
                )
                pos += size
                continue
            # Header words, when the compression bits (above them) are 0.
            hwords = w1 & 0xFF
            owords = w1 >> 8
            if hwords == 8 or hwords == 7:
                if hwords == 7:  # a short header: the options start in its place
                    oword = unpack_word(data, pos + 28)[0]
                    schema_id = 0
                else:
                    oword = word
                if (
                    (owords == 2 and oword == ONE_SUB_QUEUE_ID_OLD_OPTION)
                    or (owords == 3 and oword == ONE_SUB_QUEUE_INFO_OPTION)
                    or (owords == 1 and oword & PACKED_OPTION_MASK == PACKED_SUB_QUEUE_INFO_OPTION)
                ):
                    # What brokers send most: one sub-queue option (one old-style id, one
                    # plain info, or packed), no compression. Infos cached per value.
                    ostart = pos + hwords * 4
                    start = ostart + owords * 4
                    if owords == 2:
                        key: object = data[ostart + 4 : ostart + 8]
                    elif owords == 3:
                        # distinct from the old-style key: one byte longer and shifted
                        key = data[ostart + 3 : ostart + 9]
                    else:
                        key = oword & PACKED_RDA_INFO_MASK
                    infos = info_cache.get(key)
                    if infos is None:
                        infos = read_options(data, ostart, start)[0]
                        if len(info_cache) < 1024:
                            info_cache[key] = infos
                    if end <= length and size > start - pos:
                        pad = data[end - 1]
                        if not 1 <= pad <= 4 or pad > end - start:
                            pad_count(data, start, end, pos)  # raises with the details
                        end -= pad
                        flags = w0 >> 28
                        split = start
                        if flags & props_flag:
                            area = (unpack_word(data, start)[0] & area_mask) * 4
                            split = start + area
                            if area <= 0 or split > end:
                                properties_area_size(data, start, end)  # raises with the details
                        append(
                            new(
                                record,
                                (
                                    queue_id,
                                    guid,
                                    flags,
                                    0,
                                    schema_id,
                                    data[start:split],
                                    data[split:end],
                                    data[ostart:start],
                                    hwords,
                                    infos,
                                    None,
                                ),
                            )
                        )
                        pos += size
                        continue
        # Every other shape: checked step by step.
        flags, size, hwords, opt_start, start, compression, owords = push_bounds(data, pos, length)
        queue_id, guid = _PUSH_BODY.unpack_from(data, pos + 8)
        schema_id = push_schema_id(data, pos, hwords)
        end = pos + size
        if owords:
            options = data[opt_start:start]
            infos, group_id = read_options(data, opt_start, start)
        else:
            options, infos, group_id = b"", no_infos, None
        if flags & PUSH_IMPLICIT_PAYLOAD_FLAG and start == end:
            properties_area, payload = b"", b""
        else:
            end -= pad_count(data, start, end, pos)
            properties_area, payload = split_app_data(
                data, start, end, flags, compression, schema_id, props_flag, inflate
            )
        append(
            new(
                record,
                (
                    queue_id,
                    guid,
                    flags,
                    compression,
                    schema_id,
                    properties_area,
                    payload,
                    options,
                    hwords,
                    infos,
                    group_id,
                ),
            )
        )
        pos += size
    return out


def push_message_header(
    flags: int,
    options_size: int,
    app_size: int,
    compression: int,
    header_words: int,
    queue_id: int,
    guid: bytes,
    schema_id: int,
    implicit: bool = False,
) -> tuple[bytes, bytes, int]:
    """(header, padding, size) of a message with ``options_size`` bytes of options and
    ``app_size`` bytes of application data, its PushHeader as long as ``header_words`` says (at
    least what every header holds); ``implicit``: a message with the
    IMPLICIT_PAYLOAD flag and no application data, not even padding."""
    pad = b"" if implicit and not app_size else PADDING[app_size % 4]
    size = header_words * 4 + options_size + app_size + len(pad)
    try:
        header = _PUSH_HEADER.pack(
            (flags << 28) | (size // 4),
            (options_size // 4 << 8) | (compression << 5) | header_words,
            queue_id,
            guid,
            schema_id,
            0,
        )
    except struct.error as exc:
        raise EncodeError(f"PUSH header field out of range: {exc}") from None
    if header_words != 8:
        header = resize_header(header, header_words * 4, 28)
    return header, pad, size
