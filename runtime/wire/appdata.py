"""What the PUT and PUSH builders and readers share beyond the layout (which is generated:
``pybmq.generated.wire_messages``): the size-capped event builder both builders extend, the
application data as a builder prepares it (properties encoded, payload compressed or not), and
the decompression the readers are given.
"""

from __future__ import annotations

from pybmq.errors import EncodeError, UsageError
from pybmq.generated.wire_codec import EVENT_HEADER_SIZE, EventType
from pybmq.generated.wire_messages import Inflate
from pybmq.wire.compression import decompress, maybe_compress
from pybmq.wire.framing import event_header_bytes
from pybmq.wire.properties import MessageProperties

__all__ = ["MessageEventBuilder", "inflater", "prepare_app_data"]


def inflater(max_size: int) -> Inflate:
    """What a reader inflates compressed data with: at most ``max_size`` bytes, ProtocolError
    (at the message's offset) for data that is corrupt or bigger."""

    def inflate(data: bytes | bytearray | memoryview, algorithm: int, offset: int) -> bytes:
        return decompress(data, algorithm, max_size, offset=offset)

    return inflate


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
    properties_flag: int,
) -> tuple[bytes | memoryview, bytes | memoryview, int, int, int]:
    """(properties wire bytes, payload wire bytes, flags bits, compression, schema id);
    ``properties_flag`` is the kind's MESSAGE_PROPERTIES flag."""
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
                return b"", app, properties_flag, compression, 0
    return props, payload, properties_flag, compression, 1 if extended else 0
