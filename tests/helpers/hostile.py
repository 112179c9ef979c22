"""What hostile peers send, for the reliability tests: poison messages stored in a simulator."""

from __future__ import annotations

import asyncio
import os
import zlib

from pybmq.generated.wire_codec import CompressionAlgorithmType
from pybmq.sim.dataplane import PushItem, push_events
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
    old_format_properties: bool = False,
) -> bytes:
    """Store ``payload`` in ``uri`` as a producer's PUT would leave it (claiming zlib when
    ``zlib_flag``), push it to the queue's consumers, and return its GUID. A broker stores
    application data opaquely, so this is exactly what a poison PUT leaves behind.
    ``old_format_properties``: the payload starts with an old-format properties area (schema
    id 0: properties and payload compressed together)."""
    guid = os.urandom(16)
    compression = CompressionAlgorithmType.ZLIB if zlib_flag else CompressionAlgorithmType.NONE
    queue = sim.broker.queue(uri)
    assert queue is not None, f"{uri} is not open in the simulator"
    has_properties = bool(properties_area) or old_format_properties
    schema_id = 0 if old_format_properties else 1
    message = StoredMessage(guid, properties_area, payload, has_properties, compression, schema_id)
    queue.store(message, sim._now())
    sim.broker.dispatch(queue.deliver())
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


def push_event_for(sim: BrokerSimulator, count: int, size: int = 280) -> bytes:
    """One PUSH event of ``count`` messages of ``size`` bytes for the only reader connected to
    ``sim``, addressed as the simulator addresses it (queue id, subscription id): what a broker
    that ignores the reader's credit would send."""
    (session,) = [s for s in sim._transports if any(h.consumers for h in s.handles.values())]
    handle = next(h for h in session.handles.values() if h.consumers)
    consumer = next(iter(handle.consumers.values()))
    items = [
        PushItem(consumer.queue_id, consumer.sub_queue_id, os.urandom(16), b"", bytes(size),
                 False, 0, 0)
        for _ in range(count)
    ]  # fmt: skip
    (event,) = push_events(items)
    return event


async def flood(sim: BrokerSimulator, event: bytes, times: int) -> int:
    """Write ``event`` to every client of ``sim`` up to ``times`` times, as fast as the sockets
    take it (the writer waits while its buffer is over 1 MiB); stop early once no client is
    left. Returns how many times it was written."""
    written = 0
    while written < times and sim._transports:
        transports = [t for t in sim._transports.values() if not t.is_closing()]
        if not transports:
            break
        if max(t.get_write_buffer_size() for t in transports) > 1 << 20:
            await asyncio.sleep(0.005)
            continue
        for transport in transports:
            transport.write(event)
        written += 1
    return written
