"""The per-task queue work of the Spark data source, against the simulator (no JVM needed)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest
from pybmq.errors import DeliveryError, SessionStoppedError
from pybmq.generated.wire_codec import CompressionAlgorithmType
from pybmq.sim.broker import Broker
from pybmq.sim.config import BrokerHooks
from pybmq.sim.queues import StoredMessage
from pybmq.sim.routing import RoutingMode
from pybmq.sim.server import ThreadedBrokerSimulator
from pybmq.sim.session import ClientSession
from pybmq.spark.datasource import READ_SCHEMA, _arrow_schema
from pybmq.spark.io import consume, post_all, probe
from pybmq.spark.options import ReadOptions, Target, WriteOptions
from pybmq.spark.rows import Outgoing
from pybmq.wire.properties import MessageProperties, PropertyType

Q = "bmq://bmq.test.mem.priority/spark-io"


def messages(count: int) -> Iterator[Outgoing]:
    for i in range(count):
        properties = {"i": (PropertyType.INT32, i), "s": (PropertyType.STRING, "x")}
        yield f"m{i}".encode(), MessageProperties(properties)


def write_options(url: str, **extra: str) -> WriteOptions:
    return WriteOptions.parse({"broker": url, "queue": Q, **extra})


def test_post_all_waits_for_every_ack_then_consume_confirms(
    bmq_sim: ThreadedBrokerSimulator,
) -> None:
    result = post_all(write_options(bmq_sim.url, maxinflight="100"), messages(1500))
    assert (result.posted, result.acked) == (1500, 1500)
    stats = bmq_sim.call(lambda broker: broker.stats)
    assert (stats.puts, stats.acks, stats.nacks) == (1500, 1500, 0)

    read = ReadOptions.parse(
        {"broker": bmq_sim.url, "queue": Q, "confirm": "true", "idletimeoutms": "2000"}
    )
    rows = [row for buffer in consume(read, 1000, batch_rows=300) for row in buffer.guids]
    assert len(set(rows)) == 1000  # the limit, in buffers of at most 300
    rest = [buffer for buffer in consume(read, 5000)]
    assert sum(len(b) for b in rest) == 500
    first = rest[0].to_batch(_arrow_schema(READ_SCHEMA)).to_pylist()[0]
    assert dict(first["typed_properties"])["i"]["int32"] == 1000
    deadline = time.monotonic() + 10  # confirms are one-way: wait for the broker to count them
    while bmq_sim.call(lambda broker: broker.stats.confirms) < 1500:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert bmq_sim.call(lambda broker: broker.stats.confirms) == 1500


class NackEveryTenth(BrokerHooks):
    def __init__(self) -> None:
        self.count = 0

    def ack_status(self, session: ClientSession, queue_uri: str, guid: bytes, status: int) -> int:
        self.count += 1
        return 6 if self.count % 10 == 0 else status  # STORAGE_FAILURE


def test_a_nack_fails_the_task() -> None:
    expected = "were NACKed; first: STORAGE_FAILURE"
    with (
        ThreadedBrokerSimulator(hooks=NackEveryTenth()) as sim,
        pytest.raises(DeliveryError, match=expected) as info,
    ):
        post_all(write_options(sim.url, maxinflight="5"), messages(200))
    assert info.value.acked < info.value.posted


class DropAcks(BrokerHooks):
    def outgoing(self, session: ClientSession, data: bytes) -> bytes:
        # ACK events (type 5 in the event header's second byte's low 6 bits) never leave.
        return b"" if len(data) >= 8 and data[4] & 0x3F == 5 else data


def test_missing_acks_fail_the_task_after_the_ack_timeout() -> None:
    with ThreadedBrokerSimulator(hooks=DropAcks()) as sim, pytest.raises(DeliveryError) as info:
        post_all(write_options(sim.url, acktimeoutms="500"), messages(20))
    assert info.value.acked == 0 and info.value.posted == 20


def test_probe_reports_an_unreachable_broker() -> None:
    with ThreadedBrokerSimulator() as sim:
        url = sim.url
    with pytest.raises(SessionStoppedError, match="cannot connect to"):
        probe(Target(url, Q, 2.0), read=False)


def test_a_poison_message_becomes_an_empty_row_and_is_confirmed(
    bmq_sim: ThreadedBrokerSimulator,
) -> None:
    extended_junk = b"\x00\x00\x00\x07not properties at all"

    def store(broker: Broker) -> None:
        queue = broker.store.get_or_create(Q, RoutingMode.PRIORITY)
        for area, payload, compression in (
            (b"", b"junk claiming to be zlib", int(CompressionAlgorithmType.ZLIB)),
            (extended_junk, b"bad properties", 0),
            (b"", b"good", 0),
        ):
            queue.post(StoredMessage(os.urandom(16), area, payload, bool(area), compression, 1))

    bmq_sim.call(store)
    read = ReadOptions.parse(
        {"broker": bmq_sim.url, "queue": Q, "confirm": "true", "idletimeoutms": "1000"}
    )
    (buffer,) = list(consume(read, 10))
    assert buffer.payloads == [b"", b"", b"good"]
    assert buffer.offsets == [0, 0, 0, 0] and not buffer.keys  # no row has properties
    deadline = time.monotonic() + 10  # all three confirmed: the poison does not come back
    while bmq_sim.call(lambda broker: broker.stats.confirms) < 3:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    queue = bmq_sim.call(lambda broker: broker.queue(Q))
    assert queue is None or queue.pending_count() == 0  # (freed once nothing is left in it)
