"""What PUT and PUSH share: header bounds, application data (properties + payload, compressed
or not) and the size-capped event builder both builders extend.
"""

from __future__ import annotations

from pybmq.errors import EncodeError, ProtocolError, UsageError
from pybmq.generated.wire_codec import (
    EVENT_HEADER_SIZE,
    MESSAGE_SIZES,
    PUT_HEADER_COMPRESSION_MASK,
    PUT_HEADER_COMPRESSION_SHIFT,
    PUT_HEADER_FLAGS_SHIFT,
    PUT_HEADER_HEADER_WORDS_MASK,
    PUT_HEADER_MESSAGE_WORDS_MASK,
    PUT_HEADER_OPTIONS_WORDS_SHIFT,
    PUT_SCHEMA_ID,
    EventType,
    PutHeaderFlags,
    SubQueueInfo,
)
from pybmq.wire.compression import decompress, maybe_compress
from pybmq.wire.framing import (
    event_header_bytes,
)
from pybmq.wire.properties import MessageProperties, properties_area_size

# The first two words and the schema id sit alike in PutHeader and PushHeader (a test holds the
# spec to it): one reader for both.
SCHEMA_ID = PUT_SCHEMA_ID
NO_INFOS: tuple[SubQueueInfo, ...] = ()
# Same bit in PushHeaderFlags; a plain int, as IntFlag & is slow.
PROPS_FLAG = int(PutHeaderFlags.MESSAGE_PROPERTIES)


def split_app_data(
    data: bytes,
    start: int,
    end: int,
    flags: int,
    cat: int,
    schema: int,
    decompress_data: bool,
    max_size: int,
) -> tuple[bytes, bytes]:
    """(properties area, payload) of the application data in ``data[start:end]``."""
    if not flags & PROPS_FLAG:
        payload = data[start:end]
        if cat and decompress_data:
            payload = decompress(payload, cat, max_size, offset=start)
        return b"", payload
    if cat and not schema:
        # Old properties format: properties and payload were compressed together.
        if not decompress_data:
            return b"", data[start:end]
        app = decompress(data[start:end], cat, max_size, offset=start)
        size = properties_area_size(app, 0, len(app))
        return app[:size], app[size:]
    size = properties_area_size(data, start, end)
    payload = data[start + size : end]
    if cat and decompress_data:
        payload = decompress(payload, cat, max_size, offset=start + size)
    return data[start : start + size], payload


def message_bounds(
    data: bytes, pos: int, length: int, min_header: int, what: str
) -> tuple[int, int, int, int, int, int, int]:
    """Common PUT/PUSH header checks -> (flags, size, header words, options start/end, cat, ow)."""
    if length - pos < 8:
        raise ProtocolError(f"truncated {what}", offset=pos, path=what)
    w0, w1 = MESSAGE_SIZES.unpack_from(data, pos)
    size = (w0 & PUT_HEADER_MESSAGE_WORDS_MASK) * 4
    hwords = w1 & PUT_HEADER_HEADER_WORDS_MASK
    owords = w1 >> PUT_HEADER_OPTIONS_WORDS_SHIFT
    opt_start = pos + hwords * 4
    opt_end = opt_start + owords * 4
    if hwords * 4 < min_header:
        raise ProtocolError(
            f"{what} of {hwords} words is shorter than {min_header} bytes",
            offset=pos,
            path=f"{what}.headerWords",
        )
    if size < opt_end - pos or pos + size > length:
        raise ProtocolError(
            f"{what} declares {size} bytes (header + options {opt_end - pos}) with "
            f"{length - pos} left in the event",
            offset=pos,
            path=f"{what}.messageWords",
        )
    return (
        w0 >> PUT_HEADER_FLAGS_SHIFT,
        size,
        hwords,
        opt_start,
        opt_end,
        (w1 >> PUT_HEADER_COMPRESSION_SHIFT) & PUT_HEADER_COMPRESSION_MASK,
        owords,
    )


def pad_count(data: bytes, start: int, end: int, msg_offset: int) -> int:
    if end <= start:
        raise ProtocolError(
            "message has no application data (not even padding)", offset=msg_offset, path="message"
        )
    pad = data[end - 1]
    if not 1 <= pad <= 4 or pad > end - start:
        raise ProtocolError(f"invalid padding byte {pad}", offset=end - 1, path="message.padding")
    return pad


class MessageEventBuilder:
    """Shared by PUT and PUSH builders: accumulate messages, cut events at ``max_event_size``.

    ``max_event_size`` is where a batch is cut; a message too big for it goes alone in its own
    event, up to ``_max_single_event`` (the protocol's limit for the event type)."""

    _event_type: EventType
    _max_single_event: int

    def __init__(self, max_event_size: int) -> None:
        if max_event_size < EVENT_HEADER_SIZE + 64:
            raise UsageError(f"max_event_size {max_event_size} is too small")
        self.max_event_size = max_event_size
        self._events: list[bytes] = []
        self._parts: list[bytes | memoryview] = []
        self._size = EVENT_HEADER_SIZE
        self._count = 0
        self.message_count = 0

    def __len__(self) -> int:
        """Messages added since the last ``finish``."""
        return self.message_count

    def _append(self, size: int, parts: tuple[bytes | memoryview, ...]) -> None:
        if self._size + size > self.max_event_size:
            self._close()
            if size + EVENT_HEADER_SIZE > self.max_event_size:
                # Bigger than the batch limit: it goes alone in its own event, which only the
                # protocol's limit for the event type bounds.
                if size + EVENT_HEADER_SIZE > self._max_single_event:
                    raise EncodeError(
                        f"a message of {size} bytes cannot fit an event of at most "
                        f"{self._max_single_event} bytes"
                    )
                self._parts.extend(parts)
                self._size += size
                self._count = 1
                self.message_count += 1
                self._close()
                return
        self._parts.extend(parts)
        self._size += size
        self._count += 1
        self.message_count += 1

    def _close(self) -> None:
        if self._count:
            self._events.append(
                b"".join((event_header_bytes(self._event_type, self._size), *self._parts))
            )
        self._parts = []
        self._size = EVENT_HEADER_SIZE
        self._count = 0

    def finish(self) -> list[bytes]:
        """All events built since the last call (possibly several, never an empty one)."""
        self._close()
        events, self._events = self._events, []
        self.message_count = 0
        return events


def prepare_app_data(
    payload: bytes | memoryview,
    properties: MessageProperties | None,
    compression: int,
    extended: bool,
    threshold: int,
) -> tuple[bytes | memoryview, bytes | memoryview, int, int, int]:
    """(properties wire bytes, payload wire bytes, flags bits, compression, schema id)."""
    props = properties.encode(extended) if properties is not None and len(properties) else b""
    if not props:
        if compression:
            payload, compression = maybe_compress(payload, compression, threshold)
        return b"", payload, 0, compression, 0
    if compression:
        if extended:
            payload, compression = maybe_compress(payload, compression, threshold)
        else:
            app, compression = maybe_compress(props + bytes(payload), compression, threshold)
            if compression:
                return b"", app, PROPS_FLAG, compression, 0
    return props, payload, PROPS_FLAG, compression, 1 if extended else 0


def resize_header(header: bytes, size: int, minimum: int) -> bytes:
    if size < minimum:
        raise EncodeError(f"header of {size} bytes is shorter than the {minimum}-byte minimum")
    return header[:size] if size <= len(header) else header + b"\0" * (size - len(header))
