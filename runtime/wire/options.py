"""Options of PUT/PUSH messages: sub-queue infos (old, packed and plain forms) and group ids.

Every option starts with an OptionHeader (bmqp_protocol.h); a packed SUB_QUEUE_INFOS option has no
content and carries the default sub-queue's RDA counter in its words field. Older brokers send
bare sub-queue ids (SUB_QUEUE_IDS_OLD); readers turn every form into ``SubQueueInfo`` records.
"""

from __future__ import annotations

from collections.abc import Iterable

from pybmq.errors import EncodeError, ProtocolError
from pybmq.generated.wire_codec import (
    DEFAULT_SUBQUEUE_ID,
    MSG_GROUP_ID_MAX_LENGTH,
    OPTION_HEADER,
    OPTION_HEADER_PACKED_MASK,
    OPTION_HEADER_PACKED_SHIFT,
    OPTION_HEADER_TYPE_SHIFT,
    OPTION_HEADER_TYPE_SPECIFIC_MASK,
    OPTION_HEADER_TYPE_SPECIFIC_SHIFT,
    OPTION_HEADER_WORDS_MASK,
    PACKED_RDA_INFO_MASK,
    SUB_QUEUE_ID_OLD,
    SUB_QUEUE_INFO,
    SUB_QUEUE_INFO_RDA_COUNTER_MASK,
    SUB_QUEUE_INFO_RDA_POISONOUS_MASK,
    SUB_QUEUE_INFO_RDA_POISONOUS_SHIFT,
    SUB_QUEUE_INFO_RDA_UNLIMITED_SHIFT,
    SUB_QUEUE_INFO_SIZE,
    OptionType,
    SubQueueInfo,
)
from pybmq.wire.padding import padding_for, unpadded_length

__all__ = [
    "encode_msg_group_id",
    "encode_packed_sub_queue_info",
    "encode_sub_queue_ids_old",
    "encode_sub_queue_infos",
    "parse_options",
]


def encode_sub_queue_infos(infos: Iterable[tuple[int, int | None]]) -> bytes:
    """A non-packed SUB_QUEUE_INFOS option: (sub-queue id, RDA counter or None for unlimited)."""
    items = []
    for sub_queue_id, rda in infos:
        items.append(SUB_QUEUE_INFO.pack(sub_queue_id, _rda_byte(rda), b"\0\0\0"))
    words = 1 + 2 * len(items)
    header = OPTION_HEADER.pack(
        (OptionType.SUB_QUEUE_INFOS << OPTION_HEADER_TYPE_SHIFT)
        | (SUB_QUEUE_INFO_SIZE // 4 << OPTION_HEADER_TYPE_SPECIFIC_SHIFT)
        | words
    )
    return header + b"".join(items)


def encode_packed_sub_queue_info(rda: int | None) -> bytes:
    """The packed SUB_QUEUE_INFOS option: default sub-queue only, RDA in the words field."""
    return OPTION_HEADER.pack(
        (OptionType.SUB_QUEUE_INFOS << OPTION_HEADER_TYPE_SHIFT)
        | (1 << OPTION_HEADER_PACKED_SHIFT)
        | _rda_byte(rda)
    )


def encode_sub_queue_ids_old(ids: Iterable[int]) -> bytes:
    """The deprecated SUB_QUEUE_IDS_OLD option (bare ids) that older brokers send."""
    items = [SUB_QUEUE_ID_OLD.pack(i) for i in ids]
    word = (OptionType.SUB_QUEUE_IDS_OLD << OPTION_HEADER_TYPE_SHIFT) | (1 + len(items))
    return OPTION_HEADER.pack(word) + b"".join(items)


def encode_msg_group_id(group_id: str) -> bytes:
    raw = group_id.encode("utf-8")
    if not 0 < len(raw) <= MSG_GROUP_ID_MAX_LENGTH:
        raise EncodeError(f"message group id must be 1..{MSG_GROUP_ID_MAX_LENGTH} bytes")
    pad = padding_for(len(raw))
    words = 1 + (len(raw) + len(pad)) // 4
    return (
        OPTION_HEADER.pack((OptionType.MSG_GROUP_ID << OPTION_HEADER_TYPE_SHIFT) | words)
        + raw
        + pad
    )


def _rda_byte(rda: int | None) -> int:
    if rda is None:
        return 1 << SUB_QUEUE_INFO_RDA_UNLIMITED_SHIFT  # RdaInfo: unlimited
    if not 0 <= rda <= SUB_QUEUE_INFO_RDA_COUNTER_MASK:
        raise EncodeError(f"RDA counter must be within 0..63 or None (unlimited), got {rda!r}")
    return rda


def _rda_info(sub_queue_id: int, rda: int) -> SubQueueInfo:
    return SubQueueInfo(
        sub_queue_id,
        rda >> SUB_QUEUE_INFO_RDA_UNLIMITED_SHIFT,  # the top bit of the RdaInfo byte
        (rda >> SUB_QUEUE_INFO_RDA_POISONOUS_SHIFT) & SUB_QUEUE_INFO_RDA_POISONOUS_MASK,
        rda & SUB_QUEUE_INFO_RDA_COUNTER_MASK,
        b"\0\0\0",
    )


def parse_options(
    data: bytes | bytearray | memoryview, start: int, end: int
) -> tuple[tuple[SubQueueInfo, ...], str | None]:
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
        otype = word >> OPTION_HEADER_TYPE_SHIFT
        packed = (word >> OPTION_HEADER_PACKED_SHIFT) & OPTION_HEADER_PACKED_MASK
        tspec = (word >> OPTION_HEADER_TYPE_SPECIFIC_SHIFT) & OPTION_HEADER_TYPE_SPECIFIC_MASK
        words = word & OPTION_HEADER_WORDS_MASK
        if otype == OptionType.UNDEFINED:
            raise ProtocolError("option of type UNDEFINED", offset=pos, path="OptionHeader.type")
        if packed:
            if otype != OptionType.SUB_QUEUE_INFOS:
                raise ProtocolError(
                    f"packed option of type {otype}", offset=pos, path="OptionHeader.packed"
                )
            infos.append(_rda_info(DEFAULT_SUBQUEUE_ID, words & PACKED_RDA_INFO_MASK))
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
                _rda_info(sub_id, 0x80)
                for (sub_id,) in SUB_QUEUE_ID_OLD.iter_unpack(data[body : pos + size])
            )
        elif otype == OptionType.SUB_QUEUE_INFOS:
            item = tspec * 4
            if item < SUB_QUEUE_INFO_SIZE or (size - 4) % item:
                raise ProtocolError(
                    f"SUB_QUEUE_INFOS items of {item} bytes in a {size - 4}-byte option",
                    offset=pos,
                    path="OptionHeader.typeSpecific",
                )
            for at in range(body, pos + size, item):
                sub_id, rda, _ = SUB_QUEUE_INFO.unpack_from(data, at)
                infos.append(_rda_info(sub_id, rda))
        elif otype == OptionType.MSG_GROUP_ID:
            end_id = body + unpadded_length(data, body, pos + size, "MsgGroupIdOption")
            group_id = bytes(data[body:end_id]).decode("utf-8", "surrogateescape")
        pos += size
    return tuple(infos), group_id
