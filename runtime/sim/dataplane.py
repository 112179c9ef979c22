"""The broker's side of the data plane, on top of ``pybmq.wire`` (the codecs the client uses).

Adds what a broker checks beyond structure: unsupported PUT flags and unknown compression are
protocol violations (the connection is closed); a CRC32-C that does not match is a per-message
failure (NACK). Message properties are not parsed, as a broker does not parse them: a message
whose properties do not decode is stored and delivered, for its consumer to report. Also converts
extended properties to the old format for a consumer that did not advertise
``MPS:MESSAGE_PROPERTIES_EX``, as a broker does.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import NamedTuple, Protocol

from pybmq.errors import ProtocolError
from pybmq.generated.wire_codec import (
    EVENT_HEADER_SIZE,
    PADDING,
    PUSH_HEADER,
    PUSH_HEADER_SIZE,
    CompressionAlgorithmType,
    EventType,
    PutHeaderFlags,
)
from pybmq.wire.batches import AckEventBuilder, iter_confirm_entries
from pybmq.wire.checksum import application_data_crc32c
from pybmq.wire.compression import decompress
from pybmq.wire.framing import Event, event_header_bytes
from pybmq.wire.options import encode_sub_queue_ids_old
from pybmq.wire.properties import MessageProperties
from pybmq.wire.push import PushEventBuilder
from pybmq.wire.put import PutMessage, decode_put

__all__ = [
    "ACK_REQUESTED",
    "KNOWN_COMPRESSION",
    "MAX_PUSH_EVENT_SIZE",
    "MESSAGE_PROPERTIES",
    "SUPPORTED_PUT_FLAGS",
    "AckEntry",
    "PushItem",
    "PushRun",
    "ack_events",
    "pack_push_runs",
    "push_events",
    "push_run_events",
    "put_problem",
    "read_confirm_event",
    "read_put_event",
]

log = logging.getLogger("pybmq.sim")

SUPPORTED_PUT_FLAGS = int(PutHeaderFlags.ACK_REQUESTED | PutHeaderFlags.MESSAGE_PROPERTIES)
_UNSUPPORTED_PUT_FLAGS = 0xF & ~SUPPORTED_PUT_FLAGS
ACK_REQUESTED = int(PutHeaderFlags.ACK_REQUESTED)
MESSAGE_PROPERTIES = int(PutHeaderFlags.MESSAGE_PROPERTIES)  # the same bit in PUT and PUSH
KNOWN_COMPRESSION = frozenset(int(c) for c in CompressionAlgorithmType)
MAX_PUSH_EVENT_SIZE = 1 << 20  # batch PUSH messages into events of at most 1 MiB


_UNSET_GUID = bytes(16)


def put_problem(put: PutMessage) -> str | None:
    """Why a broker would refuse this message (NACK), or None. Cheapest checks first."""
    actual = application_data_crc32c(put.properties_area, put.payload)
    if actual != put.crc32c:
        return f"CRC32-C mismatch (header {put.crc32c:#010x}, data {actual:#010x})"
    if put.guid == _UNSET_GUID:
        return "unset GUID"
    if put.options:
        return "PUT options are not supported"
    return None


def read_put_event(event: Event) -> list[PutMessage]:
    """The messages of a PUT event (wire form: still compressed); ProtocolError for anything
    that breaks the framing or that no broker accepts (unknown flags or compression)."""
    puts = decode_put(event, decompress=False)
    unsupported = _UNSUPPORTED_PUT_FLAGS
    if all(not put.flags & unsupported and not put.compression for put in puts):
        return puts  # the common case, checked in one pass
    for put in puts:
        if put.flags & unsupported:
            raise ProtocolError(
                f"unsupported PUT flags {put.flags:#x} (GUID {put.guid.hex()})",
                offset=event.offset,
                path="PutHeader.flags",
            )
        if put.compression and put.compression not in KNOWN_COMPRESSION:
            raise ProtocolError(
                f"unknown compression algorithm {put.compression} (GUID {put.guid.hex()})",
                offset=event.offset,
                path="PutHeader.compressionAlgorithmType",
            )
    return puts


def read_confirm_event(event: Event) -> Iterator[tuple[int, bytes, int]]:
    """The (queue_id, guid, sub_queue_id) entries of a CONFIRM event, as plain tuples."""
    return iter_confirm_entries(event)


# An ACK to send: (status, correlation id, guid, queue id), as AckEventBuilder.add_many takes it.
AckEntry = tuple[int, int, bytes, int]


def ack_events(acks: Sequence[AckEntry]) -> list[bytes]:
    """ACK events for (status, correlation id, guid, queue id) entries (the broker's
    correlation ids are always 0)."""
    builder = AckEventBuilder()
    builder.add_many(acks)
    return builder.finish()


class PushItem(NamedTuple):
    queue_id: int
    sub_queue_id: int
    guid: bytes
    properties_area: bytes
    payload: bytes
    has_properties: bool
    compression: int
    schema_id: int
    old_properties: bool = False  # the consumer did not advertise MESSAGE_PROPERTIES_EX


def _to_old_format(item: PushItem) -> tuple[bytes, int, int]:
    """(application data, compression, schema id) with old-style properties, uncompressed."""
    props = MessageProperties.decode(item.properties_area, extended=True).encode(extended=False)
    payload = decompress(item.payload, item.compression) if item.compression else item.payload
    return props + payload, CompressionAlgorithmType.NONE, 0


_OPTIONS: dict[int, bytes] = {}


def _option(sub_queue_id: int) -> bytes:
    option = _OPTIONS.get(sub_queue_id)
    if option is None:
        option = encode_sub_queue_ids_old((sub_queue_id,))
        if len(_OPTIONS) < 4096:
            _OPTIONS[sub_queue_id] = option
    return option


class _Stored(Protocol):
    """What the PUSH packer reads of a message (a stored message or a ``PushItem``)."""

    @property
    def guid(self) -> bytes: ...
    @property
    def properties_area(self) -> bytes: ...
    @property
    def payload(self) -> bytes: ...
    @property
    def has_properties(self) -> bool: ...
    @property
    def compression(self) -> int: ...
    @property
    def schema_id(self) -> int: ...


# (queue id, subQueueId, messages): one consumer's messages, in order.
PushRun = tuple[int, int, Sequence[_Stored]]


def push_events(items: Sequence[PushItem]) -> list[bytes]:
    """PUSH events holding ``items`` in order, cut at about MAX_PUSH_EVENT_SIZE bytes."""
    if any(i.old_properties and i.has_properties and i.schema_id for i in items):
        return _push_events_converting(items)
    return pack_push_runs([(i.queue_id, i.sub_queue_id, (i,)) for i in items])


def push_run_events(runs: Sequence[PushRun], old_properties: bool) -> list[bytes]:
    """PUSH events for runs of one consumer's messages (``old_properties``: the consumer did
    not advertise MESSAGE_PROPERTIES_EX, so extended properties are converted)."""
    if old_properties and any(m.has_properties and m.schema_id for *_, ms in runs for m in ms):
        return _push_events_converting(
            [
                PushItem(q, s, m.guid, m.properties_area, m.payload, m.has_properties,
                         m.compression, m.schema_id, True)
                for q, s, ms in runs
                for m in ms
            ]
        )  # fmt: skip
    return pack_push_runs(runs)


def pack_push_runs(runs: Sequence[PushRun]) -> list[bytes]:
    """PUSH events holding every run's messages in order, cut at about MAX_PUSH_EVENT_SIZE bytes.

    Each message carries a SUB_QUEUE_IDS_OLD option with its consumer's id: what a broker sends
    to a first-hop SDK client. Packed here with the generated PushHeader struct; the option and
    the header's fixed words are computed once per run, not per message.
    """
    events: list[bytes] = []
    parts: list[bytes] = [b""]  # [0]: the EventHeader, written when the event is cut
    size = EVENT_HEADER_SIZE
    pack = PUSH_HEADER.pack
    pads = PADDING
    max_size = MAX_PUSH_EVENT_SIZE
    hwords = PUSH_HEADER_SIZE >> 2
    props_flag = MESSAGE_PROPERTIES << 28
    for queue_id, sub_queue_id, messages in runs:
        option = _option(sub_queue_id)
        fixed = PUSH_HEADER_SIZE + len(option)
        w1 = ((len(option) >> 2) << 8) | hwords
        for m in messages:
            area, payload = m.properties_area, m.payload
            app_len = len(area) + len(payload)
            pad = pads[app_len & 3]
            length = fixed + app_len + len(pad)
            if size + length > max_size and len(parts) > 1:
                # One join with the header in front: a big message is copied once, not twice.
                parts[0] = event_header_bytes(EventType.PUSH, size)
                events.append(b"".join(parts))
                parts, size = [b""], EVENT_HEADER_SIZE
            header = pack(
                (props_flag if m.has_properties else 0) | (length >> 2),
                w1 | (m.compression << 5),
                queue_id,
                m.guid,
                m.schema_id,
                0,
            )
            parts += (header, option, area, payload, pad)
            size += length
    if len(parts) > 1:
        parts[0] = event_header_bytes(EventType.PUSH, size)
        events.append(b"".join(parts))
    return events


def _push_events_converting(items: Sequence[PushItem]) -> list[bytes]:
    builder = PushEventBuilder(MAX_PUSH_EVENT_SIZE)
    for item in items:
        app_data = item.properties_area + item.payload
        compression, schema = item.compression, item.schema_id
        if item.old_properties and item.has_properties and schema and item.properties_area:
            try:
                app_data, compression, schema = _to_old_format(item)
            except ProtocolError as exc:
                # A poison message (corrupt compression or properties): pass it on as stored,
                # for the consumer to report, rather than fail every consumer it reaches.
                log.warning("message %s sent unconverted: %s", item.guid.hex(), exc)
        builder.add(
            item.queue_id,
            item.guid,
            app_data,
            raw=True,
            flags=MESSAGE_PROPERTIES if item.has_properties else 0,
            compression=compression,
            schema_id=schema,
            options=_option(item.sub_queue_id),
        )
    return builder.finish()
