"""ACK, CONFIRM and REJECT events: one header, then fixed-size entries; readers and writers."""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from pybmq.errors import EncodeError, ProtocolError, UsageError
from pybmq.generated.wire_codec import (
    ACK_HEADER_HEADER_WORDS_SHIFT,
    ACK_HEADER_PER_MESSAGE_WORDS_MASK,
    ACK_HEADER_SIZE,
    ACK_MESSAGE,
    ACK_MESSAGE_CORRELATION_ID_MASK,
    ACK_MESSAGE_RESERVED_SHIFT,
    ACK_MESSAGE_STATUS_MASK,
    ACK_MESSAGE_STATUS_SHIFT,
    CONFIRM_HEADER_HEADER_WORDS_SHIFT,
    CONFIRM_HEADER_PER_MESSAGE_WORDS_MASK,
    CONFIRM_HEADER_SIZE,
    CONFIRM_MESSAGE,
    DEFAULT_SUBQUEUE_ID,
    EVENT_HEADER_SIZE,
    REJECT_HEADER_HEADER_WORDS_SHIFT,
    REJECT_HEADER_PER_MESSAGE_WORDS_MASK,
    REJECT_HEADER_SIZE,
    REJECT_MESSAGE,
    WORD_SIZE,
    AckMessage,
    ConfirmMessage,
    EventType,
    RejectMessage,
)
from pybmq.wire.framing import (
    MAX_EVENT_SIZE,
    Event,
    check_event,
    event_bytes,
    event_header_bytes,
)

__all__ = [
    "AckEventBuilder",
    "ConfirmEventBuilder",
    "RejectEventBuilder",
    "iter_ack",
    "iter_ack_entries",
    "iter_confirm",
    "iter_confirm_entries",
    "iter_reject",
]

# -- ACK, CONFIRM and REJECT: one header, then fixed-size entries ---------------------------------


class _Layout(NamedTuple):
    """One batch event's header (its first byte: header words and words per entry) and entry."""

    header: str  # its name, for errors
    size: int
    header_words_shift: int
    per_message_words_mask: int
    entry: struct.Struct

    @property
    def first_byte(self) -> int:
        """The header's first byte as a builder writes it: itself and its entries' sizes."""
        return (self.size // WORD_SIZE << self.header_words_shift) | (self.entry.size // WORD_SIZE)


_ACK = _Layout(
    "AckHeader",
    ACK_HEADER_SIZE,
    ACK_HEADER_HEADER_WORDS_SHIFT,
    ACK_HEADER_PER_MESSAGE_WORDS_MASK,
    ACK_MESSAGE,
)
_CONFIRM = _Layout(
    "ConfirmHeader",
    CONFIRM_HEADER_SIZE,
    CONFIRM_HEADER_HEADER_WORDS_SHIFT,
    CONFIRM_HEADER_PER_MESSAGE_WORDS_MASK,
    CONFIRM_MESSAGE,
)
_REJECT = _Layout(
    "RejectHeader",
    REJECT_HEADER_SIZE,
    REJECT_HEADER_HEADER_WORDS_SHIFT,
    REJECT_HEADER_PER_MESSAGE_WORDS_MASK,
    REJECT_MESSAGE,
)


def _batch_entries(
    data: bytes, hsize: int, length: int, layout: _Layout
) -> tuple[memoryview, struct.Struct, int]:
    """Validate the batch header; return (entries view, entry Struct, flags byte)."""
    what, entry = layout.header, layout.entry
    if length - hsize < layout.size:
        raise ProtocolError(f"truncated {what}", offset=hsize, path=what)
    words = data[hsize]
    hwords = words >> layout.header_words_shift
    pmwords = words & layout.per_message_words_mask
    start = hsize + hwords * WORD_SIZE
    size = pmwords * WORD_SIZE
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
    data = bytes(event_bytes(event))
    hsize, length, _ = check_event(data, EventType.ACK)
    view, entry, _ = _batch_entries(data, hsize, length, _ACK)
    new = tuple.__new__
    top, shift, mask, cid = (
        ACK_MESSAGE_RESERVED_SHIFT,
        ACK_MESSAGE_STATUS_SHIFT,
        ACK_MESSAGE_STATUS_MASK,
        ACK_MESSAGE_CORRELATION_ID_MASK,
    )
    return iter(
        [
            new(AckMessage, (w >> top, (w >> shift) & mask, w & cid, guid, queue_id))
            for w, guid, queue_id in entry.iter_unpack(view)
        ]
    )


def iter_ack_entries(
    event: Event | bytes | bytearray | memoryview,
) -> Iterator[tuple[int, bytes, int]]:
    """The entries of an ACK event as raw tuples, for a hot loop: (first word, guid, queue id),
    where the first word holds the status (bits 24..27) and the correlation id (bits 0..23)."""
    data = bytes(event_bytes(event))
    hsize, length, _ = check_event(data, EventType.ACK)
    view, entry, _ = _batch_entries(data, hsize, length, _ACK)
    return entry.iter_unpack(view)


def iter_confirm(event: Event | bytes | bytearray | memoryview) -> Iterator[ConfirmMessage]:
    data = bytes(event_bytes(event))
    hsize, length, _ = check_event(data, EventType.CONFIRM)
    view, entry, _ = _batch_entries(data, hsize, length, _CONFIRM)
    return map(_MAKE_CONFIRM, entry.iter_unpack(view))


def iter_confirm_entries(
    event: Event | bytes | bytearray | memoryview,
) -> Iterator[tuple[int, bytes, int]]:
    """The entries of a CONFIRM event as raw (queue id, guid, sub-queue id) tuples, for a hot
    loop (``iter_confirm`` makes ``ConfirmMessage`` records of the same values)."""
    data = bytes(event_bytes(event))
    hsize, length, _ = check_event(data, EventType.CONFIRM)
    view, entry, _ = _batch_entries(data, hsize, length, _CONFIRM)
    return entry.iter_unpack(view)


def iter_reject(event: Event | bytes | bytearray | memoryview) -> Iterator[RejectMessage]:
    data = bytes(event_bytes(event))
    hsize, length, _ = check_event(data, EventType.REJECT)
    view, entry, _ = _batch_entries(data, hsize, length, _REJECT)
    return map(_MAKE_REJECT, entry.iter_unpack(view))


class _BatchEventBuilder:
    _event_type: EventType
    _layout: _Layout
    _entry: struct.Struct

    def __init__(self, max_event_size: int = MAX_EVENT_SIZE) -> None:
        layout = self._layout
        self.max_per_event = (max_event_size - EVENT_HEADER_SIZE - layout.size) // self._entry.size
        if self.max_per_event < 1:
            raise UsageError(f"max_event_size {max_event_size} is too small")
        self._entries: list[bytes] = []

    def __len__(self) -> int:
        return len(self._entries)

    def _batch_header(self) -> bytes:
        layout = self._layout
        return bytes((layout.first_byte,)) + bytes(layout.size - 1)

    def finish(self) -> list[bytes]:
        """The events holding every entry added since the last call."""
        entries, self._entries = self._entries, []
        events = []
        step = self.max_per_event
        header = self._batch_header()
        for i in range(0, len(entries), step):
            chunk = entries[i : i + step]
            size = EVENT_HEADER_SIZE + self._layout.size + len(chunk) * self._entry.size
            events.append(b"".join((event_header_bytes(self._event_type, size), header, *chunk)))
        return events


class AckEventBuilder(_BatchEventBuilder):
    _event_type = EventType.ACK
    _layout = _ACK
    _entry = ACK_MESSAGE

    def add(self, status: int, correlation_id: int, guid: bytes, queue_id: int) -> None:
        if not 0 <= status <= ACK_MESSAGE_STATUS_MASK:
            raise EncodeError(f"ack status {status} does not fit 4 bits")
        if not 0 <= correlation_id <= ACK_MESSAGE_CORRELATION_ID_MASK:
            raise EncodeError(f"correlation_id {correlation_id} does not fit 24 bits")
        if len(guid) != 16:
            raise EncodeError(f"guid must be 16 bytes, got {len(guid)}")
        try:
            self._entries.append(
                ACK_MESSAGE.pack(
                    (status << ACK_MESSAGE_STATUS_SHIFT) | correlation_id, guid, queue_id
                )
            )
        except struct.error as exc:
            raise EncodeError(f"ack entry out of range: {exc}") from None

    def add_many(self, entries: Iterable[tuple[int, int, bytes, int]]) -> None:
        """(status, correlation id, guid, queue id) tuples, packed in one pass."""
        pack = ACK_MESSAGE.pack
        shift, smax, cmax = (
            ACK_MESSAGE_STATUS_SHIFT,
            ACK_MESSAGE_STATUS_MASK,
            ACK_MESSAGE_CORRELATION_ID_MASK,
        )
        try:
            packed = [
                pack((s << shift) | c, g, q)
                for s, c, g, q in entries
                if (0 <= s <= smax and 0 <= c <= cmax and len(g) == 16) or _bad_ack(s, c, g)
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
    _layout = _CONFIRM
    _entry = CONFIRM_MESSAGE


class RejectEventBuilder(_GuidEntryBuilder):
    _event_type = EventType.REJECT
    _layout = _REJECT
    _entry = REJECT_MESSAGE
