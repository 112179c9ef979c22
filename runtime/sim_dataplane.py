"""The broker's side of the data plane: read PUT and CONFIRM events, write ACK and PUSH events.

Strict on purpose: every structural fault raises ProtocolError naming the field and offset, so the
simulator can close the connection with a clear log instead of guessing. Built on the generated
struct codec (``pybmq.generated.wire_codec``), the same one the client uses.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pybmq.errors import ProtocolError
from pybmq.events import event_header_bytes, padding_for, unpadded_length
from pybmq.framing import Event
from pybmq.generated.wire_codec import (
    ACK_HEADER,
    ACK_MESSAGE,
    ACK_MESSAGE_SIZE,
    CONFIRM_MESSAGE,
    CONFIRM_MESSAGE_SIZE,
    EVENT_HEADER_SIZE,
    MESSAGE_PROPERTIES_HEADER_SIZE,
    OPTION_HEADER,
    PUSH_HEADER,
    PUSH_HEADER_SIZE,
    PUT_HEADER_SIZE,
    CompressionAlgorithmType,
    EventType,
    OptionType,
    PushHeaderFlags,
    PutHeaderFlags,
    unpack_confirm_header,
    unpack_message_properties_header,
    unpack_put_header,
)

SUPPORTED_PUT_FLAGS = PutHeaderFlags.ACK_REQUESTED | PutHeaderFlags.MESSAGE_PROPERTIES
PUT_HEADER_WORDS_MIN = 8  # a PutHeader without the schema id word (older clients)
MAX_PUSH_EVENT_SIZE = 1 << 20  # batch PUSH messages into events of at most ~1 MiB


@dataclass(frozen=True)
class PutRecord:
    """One PUT message, checked for structure but not for meaning."""

    offset: int  # of the PutHeader within the event
    flags: int
    queue_id: int
    guid: bytes
    crc32c: int
    schema_id: int
    compression: int
    options: bytes
    app_data: bytes  # properties area + payload, padding removed

    @property
    def ack_requested(self) -> bool:
        return bool(self.flags & PutHeaderFlags.ACK_REQUESTED)

    @property
    def has_properties(self) -> bool:
        return bool(self.flags & PutHeaderFlags.MESSAGE_PROPERTIES)


def read_put_event(event: Event) -> Iterator[PutRecord]:
    data = event.data
    pos = event.header_size
    end = event.header.length
    if pos >= end:
        raise ProtocolError("PUT event carries no message", offset=pos, path="PutEvent")
    while pos < end:
        if end - pos < PUT_HEADER_WORDS_MIN * 4:
            raise ProtocolError(
                f"truncated PutHeader: {end - pos} bytes left", offset=pos, path="PutHeader"
            )
        header = unpack_put_header(data, pos) if end - pos >= PUT_HEADER_SIZE else None
        if header is None:  # an 8-word header at the very end cannot hold a message anyway
            raise ProtocolError("truncated PUT message", offset=pos, path="PutHeader")
        if header.flags & ~SUPPORTED_PUT_FLAGS:
            raise ProtocolError(
                f"unsupported PUT flags {header.flags:#x}", offset=pos, path="PutHeader.flags"
            )
        if header.header_words < PUT_HEADER_WORDS_MIN:
            raise ProtocolError(
                f"PutHeader.headerWords {header.header_words} is below {PUT_HEADER_WORDS_MIN}",
                offset=pos,
                path="PutHeader.headerWords",
            )
        size = header.message_words * 4
        data_start = pos + 4 * (header.header_words + header.options_words)
        if size == 0 or pos + size > end or data_start >= pos + size:
            raise ProtocolError(
                f"PutHeader declares {header.message_words} message words "
                f"({header.header_words} header, {header.options_words} options) "
                f"with {end - pos} bytes left in the event",
                offset=pos,
                path="PutHeader.messageWords",
            )
        try:
            CompressionAlgorithmType(header.compression)
        except ValueError:
            raise ProtocolError(
                f"unknown compression algorithm {header.compression}",
                offset=pos,
                path="PutHeader.compressionAlgorithmType",
            ) from None
        app_end = pos + size
        app_len = unpadded_length(data, data_start, app_end, "PutMessage.padding")
        schema_id = header.schema_id if header.header_words * 4 >= PUT_HEADER_SIZE else 0
        yield PutRecord(
            offset=pos,
            flags=header.flags,
            queue_id=header.queue_id,
            guid=header.guid,
            crc32c=header.crc32c,
            schema_id=schema_id,
            compression=header.compression,
            options=bytes(data[pos + 4 * header.header_words : data_start]),
            app_data=bytes(data[data_start : data_start + app_len]),
        )
        pos = app_end


def properties_problem(app_data: bytes) -> str | None:
    """Why the properties area at the start of ``app_data`` is malformed, or None."""
    if len(app_data) < MESSAGE_PROPERTIES_HEADER_SIZE:
        return "message properties flag set but the message is shorter than their header"
    header = unpack_message_properties_header(app_data, 0)
    header_size = 2 * header.header_size_2x
    area_words = (header.area_words_upper << 16) | header.area_words_lower
    if header_size < MESSAGE_PROPERTIES_HEADER_SIZE:
        return f"message properties header size {header_size} is below 6"
    if area_words * 4 > len(app_data) or area_words * 4 < header_size:
        return f"message properties area of {area_words} words does not fit the message"
    return None


@dataclass(frozen=True)
class ConfirmRecord:
    offset: int
    queue_id: int
    guid: bytes
    sub_queue_id: int


def read_confirm_event(event: Event) -> Iterator[ConfirmRecord]:
    data = event.data
    pos = event.header_size
    end = event.header.length
    if end - pos < 4:
        raise ProtocolError("CONFIRM event has no ConfirmHeader", offset=pos, path="ConfirmHeader")
    header = unpack_confirm_header(data, pos)
    hsize = header.header_words * 4
    msize = header.per_message_words * 4
    if hsize < 4 or msize < CONFIRM_MESSAGE_SIZE:
        raise ProtocolError(
            f"ConfirmHeader declares {header.header_words} header words and "
            f"{header.per_message_words} words per message",
            offset=pos,
            path="ConfirmHeader",
        )
    pos += hsize
    if pos >= end or (end - pos) % msize:
        raise ProtocolError(
            f"CONFIRM body of {end - pos} bytes is not a positive multiple of {msize}",
            offset=pos,
            path="ConfirmEvent",
        )
    while pos < end:
        queue_id, guid, sub_queue_id = CONFIRM_MESSAGE.unpack_from(data, pos)
        yield ConfirmRecord(pos, queue_id, guid, sub_queue_id)
        pos += msize


def ack_event(acks: Sequence[tuple[int, bytes, int]]) -> bytes:
    """One ACK event for (status, guid, queue_id) triples (correlation ids are always 0)."""
    length = EVENT_HEADER_SIZE + 4 + ACK_MESSAGE_SIZE * len(acks)
    parts = [
        event_header_bytes(EventType.ACK, length),
        ACK_HEADER.pack((1 << 4) | (ACK_MESSAGE_SIZE // 4), 0, 0),
    ]
    parts.extend(ACK_MESSAGE.pack(status << 24, guid, queue_id) for status, guid, queue_id in acks)
    return b"".join(parts)


@dataclass(frozen=True)
class PushItem:
    queue_id: int
    sub_queue_id: int
    guid: bytes
    app_data: bytes
    has_properties: bool
    compression: int
    schema_id: int


def _push_message(item: PushItem) -> bytes:
    # SUB_QUEUE_IDS_OLD with one id: what a broker sends to a first-hop SDK client.
    option = OPTION_HEADER.pack((OptionType.SUB_QUEUE_IDS_OLD << 26) | 2) + item.sub_queue_id.to_bytes(
        4, "big"
    )
    pad = padding_for(len(item.app_data))
    words = (PUSH_HEADER_SIZE + len(option) + len(item.app_data) + len(pad)) // 4
    flags = PushHeaderFlags.MESSAGE_PROPERTIES if item.has_properties else 0
    header = PUSH_HEADER.pack(
        (int(flags) << 28) | words,
        ((len(option) // 4) << 8) | (item.compression << 5) | (PUSH_HEADER_SIZE // 4),
        item.queue_id,
        item.guid,
        item.schema_id,
        0,
    )
    return b"".join((header, option, item.app_data, pad))


def push_events(items: Sequence[PushItem]) -> list[bytes]:
    """PUSH events holding ``items`` in order, each at most about MAX_PUSH_EVENT_SIZE bytes."""
    events: list[bytes] = []
    batch: list[bytes] = []
    size = EVENT_HEADER_SIZE
    for item in items:
        message = _push_message(item)
        if batch and size + len(message) > MAX_PUSH_EVENT_SIZE:
            events.append(event_header_bytes(EventType.PUSH, size) + b"".join(batch))
            batch, size = [], EVENT_HEADER_SIZE
        batch.append(message)
        size += len(message)
    if batch:
        events.append(event_header_bytes(EventType.PUSH, size) + b"".join(batch))
    return events
