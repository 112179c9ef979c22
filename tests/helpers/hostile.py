"""What hostile peers send, for the reliability tests: poison messages stored in a simulator."""

from __future__ import annotations

import os
import zlib

from pybmq.generated.wire_codec import CompressionAlgorithmType
from pybmq.sim.queues import StoredMessage
from pybmq.sim.server import BrokerSimulator


def zlib_bomb(inflated_size: int) -> bytes:
    """A valid zlib stream of zeros that inflates to ``inflated_size`` bytes (about 1000:1)."""
    packer = zlib.compressobj(9)
    chunk = bytes(1 << 20)
    out = []
    left = inflated_size
    while left > 0:
        out.append(packer.compress(chunk[: min(left, len(chunk))]))
        left -= len(chunk)
    out.append(packer.flush())
    return b"".join(out)


def store_raw(
    sim: BrokerSimulator,
    uri: str,
    payload: bytes,
    *,
    zlib_flag: bool = True,
    properties_area: bytes = b"",
) -> bytes:
    """Store ``payload`` in ``uri`` as a producer's PUT would leave it (claiming zlib when
    ``zlib_flag``), push it to the queue's consumers, and return its GUID. A broker stores
    application data opaquely, so this is exactly what a poison PUT leaves behind."""
    guid = os.urandom(16)
    compression = CompressionAlgorithmType.ZLIB if zlib_flag else CompressionAlgorithmType.NONE
    queue = sim.broker.queue(uri)
    assert queue is not None, f"{uri} is not open in the simulator"
    message = StoredMessage(guid, properties_area, payload, bool(properties_area), compression, 1)
    deliveries = queue.post(message, sim._now())
    if deliveries:
        sim.broker._dispatch(deliveries)
    sim._flush()
    return guid


def unconfirmed(sim: BrokerSimulator, uri: str) -> int:
    """Messages of ``uri`` delivered and not confirmed yet, over all its consumers."""
    queue = sim.broker.queue(uri)
    assert queue is not None, f"{uri} is not open in the simulator"
    return sum(len(c.unconfirmed) for s in queue.streams.values() for c in s.consumers)


def write_to_clients(sim: BrokerSimulator, data: bytes) -> None:
    """Send ``data`` as is to every client connected to ``sim`` (a hostile broker's bytes)."""
    for transport in list(sim._transports.values()):
        transport.write(data)
