"""PUSH events: the reader (``iter_push``/``decode_push``, a client's hot path) and the writer
(``PushEventBuilder``, the simulator's).

The layout work (header, options, properties framing, padding, the inline common shapes: a full
or an older peer's short header, one sub-queue option) is the generated
``pybmq.generated.wire_messages``, rendered from the layout spec's ``messages`` section; this
module adds what is not layout: the record's methods, decompression, the properties and the
event builder's bookkeeping.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator

from pybmq.errors import EncodeError, ProtocolError
from pybmq.generated.wire_codec import (
    COMPRESSION_MIN_APPDATA_SIZE,
    DEFAULT_SUBQUEUE_ID,
    PUT_MAX_PAYLOAD_SIZE_SOFT,
    CompressionAlgorithmType,
    EventType,
    PushHeaderFlags,
)
from pybmq.generated.wire_messages import (
    PUSH_HEADER_WORDS,
    PUSH_PROPERTIES_FLAG,
    WORD_SIZE,
    PushFields,
    properties_area_size,
    push_message_header,
    read_push,
)
from pybmq.wire.appdata import MessageEventBuilder, inflater, prepare_app_data
from pybmq.wire.compression import DEFAULT_MAX_DECOMPRESSED_SIZE, decompress
from pybmq.wire.framing import MAX_EVENT_SIZE, Event, check_event, event_bytes
from pybmq.wire.options import (
    encode_msg_group_id,
    encode_packed_sub_queue_info,
    encode_sub_queue_infos,
)
from pybmq.wire.properties import MessageProperties

__all__ = [
    "PushEventBuilder",
    "PushMessage",
    "decode_push",
    "inflate_properties",
    "inflate_push",
    "iter_push",
]


class PushMessage(PushFields):
    """One message of a PUSH event (its fields: ``PushFields``, from the layout spec; as
    ``PutMessage``'s, without the CRC)."""

    __slots__ = ()

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
    stream = zlib.decompressobj()
    try:
        head = stream.decompress(push.payload, WORD_SIZE)  # the header's area size
        size = properties_area_size(head, 0, limit)
        area = head + stream.decompress(stream.unconsumed_tail, size - len(head))
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
    data = bytes(event_bytes(event))
    hsize, length, _ = check_event(data, EventType.PUSH)
    return read_push(
        data, hsize, length, PushMessage, inflater(max_decompressed_size) if decompress else None
    )


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
        header_words: int = PUSH_HEADER_WORDS,
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
                payload, properties, compression, extended_properties, self.compression_threshold,
                PUSH_PROPERTIES_FLAG,
            )  # fmt: skip
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
        app_len = len(props) + len(payload)
        if app_len > PUT_MAX_PAYLOAD_SIZE_SOFT:
            # PushHeader::k_MAX_PAYLOAD_SIZE_SOFT, which upstream asserts equals the PutHeader's.
            raise EncodeError(
                f"application data of {app_len} bytes exceeds {PUT_MAX_PAYLOAD_SIZE_SOFT}"
            )
        header, pad, size = push_message_header(
            fbits, len(options), app_len, cat, header_words, queue_id, guid, schema,
            implicit=implicit_payload,
        )  # fmt: skip
        self._append(size, (header, options, props, payload, pad))
