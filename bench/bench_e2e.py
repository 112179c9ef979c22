"""End to end on loopback through ``pybmq sim``: post→ACK and consume→confirm rates, ACK latency
and the client's memory per in-flight (unacknowledged) message. 100-byte payloads throughout."""

from __future__ import annotations

import asyncio
import statistics
import time
import tracemalloc

from pybmq.aio import AsyncSession
from pybmq.client_events import Ack
from pybmq.engine import ClientEngine, decode_control, encode_control
from pybmq.framing import EventReader
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.loadgen import consume_messages, make_payload, post_messages
from pybmq.sim import BrokerSimulator

from bench.common import Result

PAYLOAD = make_payload(100)


async def _rates(count: int) -> tuple[float, float]:
    uri = "bmq://bmq.test.mem.priority/bench-rate"
    async with (
        BrokerSimulator(host="127.0.0.1", port=0) as sim,
        AsyncSession(f"tcp://127.0.0.1:{sim.port}") as session,
    ):
        writer = await session.open_queue(uri, write=True)
        posted = await post_messages(writer, count, PAYLOAD)
        reader = await session.open_queue(uri, read=True)
        consumed = await consume_messages(reader, count, confirm=True)
        assert posted.count == count and consumed.count == count, (posted, consumed)
    return posted.rate, consumed.rate


async def _latency(samples: int) -> list[float]:
    """One post at a time: the time from post() to its ACK, with nothing else in flight."""
    uri = "bmq://bmq.test.mem.priority/bench-latency"
    async with (
        BrokerSimulator(host="127.0.0.1", port=0) as sim,
        AsyncSession(f"tcp://127.0.0.1:{sim.port}") as session,
    ):
        writer = await session.open_queue(uri, write=True)
        latencies = []
        for _ in range(samples):
            start = time.perf_counter()
            ack = await writer.post(PAYLOAD)
            latencies.append(time.perf_counter() - start)
            assert ack.ok
    return latencies


def _started_writer() -> tuple[ClientEngine, int]:
    """A sans-I/O engine with a session started and one write queue open, fed scripted replies."""
    engine = ClientEngine()
    engine.start(0.0)
    engine.connection_made(0.0)
    engine.data_to_send()
    identity = ctrl.ClientIdentity(
        protocol_version=1, sdk_version=1, client_type=ctrl.ClientType.E_TCPBROKER,
        process_name="bench", pid=1, session_id=1, host_name="", features="PROTOCOL_ENCODING:JSON",
        cluster_name="", cluster_node_id=-1, sdk_language=ctrl.ClientLanguage.E_CPP,
        guid_info=ctrl.GuidInfo(client_id="", nano_seconds_from_epoch=0), user_agent="",
    )
    response = ctrl.BrokerResponse(
        result=ctrl.Status(category=ctrl.StatusCategory.E_SUCCESS, code=0, message=""),
        protocol_version=1, broker_version=1, is_deprecated_sdk=False, broker_identity=identity,
        heartbeat_interval_ms=3000, max_missed_heartbeats=10,
    )
    engine.receive_data(encode_control(ctrl.NegotiationMessage(broker_response=response), "JSON"), 0.0)
    _op, queue_id = engine.open_queue("bmq://bmq.test.mem.priority/bench-memory", 0.0, write=True)
    [event] = EventReader().feed(engine.data_to_send())
    request, _ = decode_control(event, ctrl.ControlMessage)
    assert request.open_queue is not None
    answer = ctrl.ControlMessage(
        r_id=request.r_id,
        open_queue_response=ctrl.OpenQueueResponse(
            original_request=request.open_queue,
            routing_configuration=ctrl.RoutingConfiguration(flags=0),
            deduplication_time_ms=300000,
        ),
    )
    engine.receive_data(encode_control(answer, "JSON"), 0.0)
    engine.next_events()
    return engine, queue_id


def _bytes_per_unacked(count: int) -> float:
    """Client memory held per posted-but-unacknowledged message (sans-I/O engine, shared ACK
    callback as with ``post_nowait(on_ack=...)``): traced bytes after the PUT is sent, over N."""
    engine, queue_id = _started_writer()

    def on_ack(ack: Ack) -> None:
        return None

    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(count):
        engine.post(queue_id, PAYLOAD, 0.0, context=on_ack)
    engine.data_to_send()  # the PUT event leaves; only the bookkeeping stays
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert engine.unacked_count == count
    return (after - before) / count


def run(quick: bool) -> list[Result]:
    count = 2_000 if quick else 50_000
    post_rate, consume_rate = asyncio.run(_rates(count))
    latencies = asyncio.run(_latency(50 if quick else 2_000))
    quantiles = statistics.quantiles(latencies, n=100)
    per_message = _bytes_per_unacked(2_000 if quick else 50_000)
    return [
        Result("e2e pybmq post→ACK", post_rate, "msgs/s", f"{count} x 100 B via pybmq sim"),
        Result("e2e pybmq consume→confirm", consume_rate, "msgs/s", f"{count} x 100 B"),
        Result("e2e pybmq ACK latency p50", quantiles[49] * 1e6, "µs", "one post in flight"),
        Result("e2e pybmq ACK latency p99", quantiles[98] * 1e6, "µs", "one post in flight"),
        Result("pybmq bytes per unacked message", per_message, "B", "tracemalloc, goal ≤ 300"),
    ]
