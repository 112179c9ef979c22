"""The broker's side of the data plane, on top of ``pybmq.events`` (the codecs the client uses).

Adds what a broker checks beyond structure: unsupported PUT flags and unknown compression are
protocol violations (the connection is closed); message properties that do not decode and a
CRC32-C that does not match are per-message failures (NACK). Also converts extended properties
to the old format for a consumer that did not advertise ``MPS:MESSAGE_PROPERTIES_EX``, as a
broker does.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pybmq.checksum import crc32c
from pybmq.compression import decompress
from pybmq.errors import ProtocolError
from pybmq.events import (
    AckEventBuilder,
    PushEventBuilder,
    encode_sub_queue_ids_old,
    iter_confirm,
    iter_put,
)
from pybmq.framing import Event
from pybmq.generated.wire_codec import CompressionAlgorithmType, PushHeaderFlags, PutHeaderFlags
from pybmq.properties import MessageProperties, decode_properties

SUPPORTED_PUT_FLAGS = PutHeaderFlags.ACK_REQUESTED | PutHeaderFlags.MESSAGE_PROPERTIES
KNOWN_COMPRESSION = frozenset(int(c) for c in CompressionAlgorithmType)
MAX_PUSH_EVENT_SIZE = 1 << 20  # batch PUSH messages into events of at most 1 MiB


@dataclass(frozen=True)
class PutRecord:
    """One PUT message, structurally valid; ``app_data`` is exactly what the producer sent."""

    index: int  # position of the message in its event (for logs)
    flags: int
    queue_id: int
    guid: bytes
    crc32c: int
    schema_id: int
    compression: int
    options: bytes
    properties_area: bytes  # b"" without properties or in old-format compressed data
    payload: bytes  # wire form (still compressed if compression != 0)

    @property
    def ack_requested(self) -> bool:
        return bool(self.flags & PutHeaderFlags.ACK_REQUESTED)

    @property
    def has_properties(self) -> bool:
        return bool(self.flags & PutHeaderFlags.MESSAGE_PROPERTIES)

    @property
    def app_data(self) -> bytes:
        return self.properties_area + self.payload

    def problem(self) -> str | None:
        """Why a broker would refuse this message (NACK), or None."""
        actual = crc32c(self.payload, crc32c(self.properties_area))
        if actual != self.crc32c:
            return f"CRC32-C mismatch (header {self.crc32c:#010x}, data {actual:#010x})"
        if not any(self.guid):
            return "unset GUID"
        if self.options:
            return "PUT options are not supported"
        if self.has_properties and self.properties_area:
            try:
                decode_properties(self.properties_area, extended=self.schema_id != 0)
            except ProtocolError as exc:
                return f"malformed message properties: {exc}"
        if not self.payload and not self.properties_area:
            return "empty message"
        return None


def read_put_event(event: Event) -> Iterator[PutRecord]:
    """The messages of a PUT event; ProtocolError for anything that breaks the framing."""
    for index, put in enumerate(iter_put(event, decompress=False)):
        if put.flags & ~SUPPORTED_PUT_FLAGS:
            raise ProtocolError(
                f"message {index}: unsupported PUT flags {put.flags:#x}",
                offset=event.offset,
                path="PutHeader.flags",
            )
        if put.compression not in KNOWN_COMPRESSION:
            raise ProtocolError(
                f"message {index}: unknown compression algorithm {put.compression}",
                offset=event.offset,
                path="PutHeader.compressionAlgorithmType",
            )
        yield PutRecord(
            index,
            put.flags,
            put.queue_id,
            put.guid,
            put.crc32c,
            put.schema_id,
            put.compression,
            put.options,
            put.properties_area,
            put.payload,
        )


@dataclass(frozen=True)
class ConfirmRecord:
    index: int
    queue_id: int
    guid: bytes
    sub_queue_id: int


def read_confirm_event(event: Event) -> Iterator[ConfirmRecord]:
    for index, confirm in enumerate(iter_confirm(event)):
        yield ConfirmRecord(index, confirm.queue_id, confirm.guid, confirm.sub_queue_id)


def ack_events(acks: Sequence[tuple[int, bytes, int]]) -> list[bytes]:
    """ACK events for (status, guid, queue_id) triples (correlation ids are always 0)."""
    builder = AckEventBuilder()
    builder.add_many((status, 0, guid, queue_id) for status, guid, queue_id in acks)
    return builder.finish()


@dataclass(frozen=True)
class PushItem:
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


def push_events(items: Sequence[PushItem]) -> list[bytes]:
    """PUSH events holding ``items`` in order.

    Each message carries a SUB_QUEUE_IDS_OLD option with its consumer's id: what a broker sends
    to a first-hop SDK client.
    """
    builder = PushEventBuilder(MAX_PUSH_EVENT_SIZE)
    for item in items:
        app_data = item.properties_area + item.payload
        compression, schema = item.compression, item.schema_id
        if item.old_properties and item.has_properties and schema and item.properties_area:
            app_data, compression, schema = _to_old_format(item)
        builder.add(
            item.queue_id,
            item.guid,
            app_data,
            raw=True,
            flags=PushHeaderFlags.MESSAGE_PROPERTIES if item.has_properties else 0,
            compression=compression,
            schema_id=schema,
            options=encode_sub_queue_ids_old((item.sub_queue_id,)),
        )
    return builder.finish()
