"""What the simulator stores: a message as its queues keep it (read lazily by subscription
checks, a compressed one inflated only as far as its properties) and the memory budget that
all queues' messages are charged to."""

from __future__ import annotations

import zlib

from pybmq.errors import ProtocolError
from pybmq.generated.wire_codec import CompressionAlgorithmType
from pybmq.wire.properties import decode_properties, properties_area_size

__all__ = [
    "APP_OVERHEAD",
    "GUID_OVERHEAD",
    "MAX_INFLATED_PROPERTIES",
    "MESSAGE_OVERHEAD",
    "MemoryBudget",
    "StoredMessage",
]

# The most a subscription check inflates of an old-format compressed message (whose properties
# are compressed with its payload) to read its properties: only the properties area is inflated,
# and a message whose area is larger than this has no properties for expressions. A zlib bomb
# then costs its evaluation this much at most, not the whole payload.
MAX_INFLATED_PROPERTIES = 1024 * 1024


def _inflated_properties(payload: bytes, compression: int) -> bytes:
    """The properties area at the start of an old-format compressed payload, inflating no more
    than it (ProtocolError if it cannot be read within MAX_INFLATED_PROPERTIES)."""
    if compression != CompressionAlgorithmType.ZLIB:
        raise ProtocolError(f"unknown compression algorithm {compression}")
    inflater = zlib.decompressobj()
    try:
        head = inflater.decompress(payload, 8)
        if len(head) < 4:
            raise ProtocolError("truncated properties header")
        size = properties_area_size(head, 0, MAX_INFLATED_PROPERTIES)
        rest = inflater.decompress(inflater.unconsumed_tail, size - len(head))
    except zlib.error as exc:
        raise ProtocolError(f"corrupt zlib data: {exc}") from None
    area = head + rest
    if len(area) < size:
        raise ProtocolError("truncated properties area")
    return area


class StoredMessage:
    """A message as the producer sent it: application data stays opaque (maybe compressed).

    One record per stored message (slots, no dict): it is shared by every appId's stream and
    every consumer that holds it, and its size is computed once."""

    __slots__ = (
        "_values",
        "compression",
        "guid",
        "has_properties",
        "holders",
        "payload",
        "properties_area",
        "schema_id",
        "size",
    )

    def __init__(
        self,
        guid: bytes,
        properties_area: bytes,  # wire form, as in the PUT
        payload: bytes,  # wire form (still compressed when compression != 0)
        has_properties: bool,
        compression: int,
        schema_id: int,
    ) -> None:
        self.guid = guid
        self.properties_area = properties_area
        self.payload = payload
        self.has_properties = has_properties
        self.compression = compression
        self.schema_id = schema_id
        self.size = len(properties_area) + len(payload)
        self.holders = 0  # appIds still holding it: it counts against the quota until 0
        self._values: dict[str, object] | None = None

    def property_values(self) -> dict[str, object]:
        """Name -> value, decoded once (for subscription expressions); {} if undecodable."""
        values = self._values
        if values is None:
            values = self._values = {}
            if self.has_properties:
                try:
                    area = self.properties_area
                    extended = self.schema_id != 0
                    if not area and self.compression:  # old format: compressed with the payload
                        area = _inflated_properties(self.payload, self.compression)
                    for name, (_type, value) in decode_properties(area, extended=extended).items():
                        values[name] = value
                except ProtocolError:
                    values.clear()
        return values


# What the memory budget (BrokerConfig.memory_limit_bytes) charges beyond a message's own bytes,
# from tracemalloc of 100,000 one-byte messages: about 340 B each in a one-app queue and 550 B
# with three apps (the record, its GUID, its place in each app's stream and in the
# de-duplication window); and a GUID that stays in the window after its message is gone.
MESSAGE_OVERHEAD = 240
APP_OVERHEAD = 100
GUID_OVERHEAD = 160


class MemoryBudget:
    """The simulator's memory budget for all queues together (``used`` of ``limit`` bytes):
    stored messages with their overheads, and the GUIDs of the de-duplication windows. Once it
    is spent, PUTs are NACKed LIMIT_BYTES (as a broker whose storage is full) and the
    connection stays up."""

    __slots__ = ("limit", "used")

    def __init__(self, limit: float = float("inf")) -> None:
        self.limit = limit
        self.used = 0

    @property
    def spent(self) -> bool:
        return self.used > self.limit
