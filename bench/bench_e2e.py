"""pybmq's side of the end-to-end benchmark (the official SDK's side is bench_official.py).

On loopback through ``pybmq sim`` running in its own process: post→ACK and consume→confirm rates,
ACK latency (one post in flight, and under a flood), the client's memory per in-flight
(unacknowledged) message, and the sans-I/O engine's own ceilings. 100-byte payloads throughout."""

from __future__ import annotations

import asyncio
import statistics
import time
import tracemalloc

from pybmq.client.aio import AsyncSession
from pybmq.client.engine import ClientEngine
from pybmq.client.events import Ack, MessageReceived
from pybmq.client.loadgen import Stats, consume_messages, make_payload, post_messages
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.wire.batches import AckEventBuilder
from pybmq.wire.control import decode_control_as, encode_control
from pybmq.wire.framing import EventReader
from pybmq.wire.push import PushEventBuilder
from pybmq.wire.put import iter_put

from bench.common import Result, sim_process

PAYLOAD = make_payload(100)


async def _rates(url: str, count: int) -> tuple[Stats, Stats]:
    uri = "bmq://bmq.test.mem.priority/bench-rate"
    async with AsyncSession(url) as session, AsyncSession(url) as consumer:
        writer = await session.open_queue(uri, write=True)
        # Everything posted at once (the window is the whole run), as bench_official does.
        posted = await post_messages(writer, count, PAYLOAD, window=count, measure_latency=True)
        reader = await consumer.open_queue(uri, read=True)
        consumed = await consume_messages(reader, count, confirm=True)
        assert posted.count == count and consumed.count == count, (posted, consumed)
    return posted, consumed


async def _latency(url: str, samples: int) -> list[float]:
    """One post at a time: the time from post() to its ACK, with nothing else in flight."""
    uri = "bmq://bmq.test.mem.priority/bench-latency"
    async with AsyncSession(url) as session:
        writer = await session.open_queue(uri, write=True)
        latencies = []
        for _ in range(samples):
            start = time.perf_counter()
            ack = await writer.post(PAYLOAD)
            latencies.append(time.perf_counter() - start)
            assert ack.ok
    return latencies


def _started_engine(*, read: bool = False, write: bool = False) -> tuple[ClientEngine, int]:
    """A sans-I/O engine with a started session and one queue open, fed scripted replies."""
    engine = ClientEngine()
    engine.start(0.0)
    engine.connection_made(0.0)
    engine.data_to_send()
    identity = ctrl.ClientIdentity(
        protocol_version=1,
        client_type=ctrl.ClientType.E_TCPBROKER,
        features="PROTOCOL_ENCODING:JSON;SUBSCRIPTIONS:CONFIGURE_STREAM",
    )
    response = ctrl.BrokerResponse(
        result=ctrl.Status(category=ctrl.StatusCategory.E_SUCCESS),
        protocol_version=1,
        broker_identity=identity,
    )
    engine.receive_data(
        encode_control(ctrl.NegotiationMessage(broker_response=response), "JSON"), 0.0
    )
    _op, queue_id = engine.open_queue(
        "bmq://bmq.test.mem.priority/bench-engine", 0.0, read=read, write=write
    )
    while events := EventReader().feed(engine.data_to_send()):
        for event in events:
            request, _ = decode_control_as(event, ctrl.ControlMessage)
            if request.open_queue is not None:
                answer = ctrl.ControlMessage(
                    open_queue_response=ctrl.OpenQueueResponse(original_request=request.open_queue)
                )
            else:
                assert request.configure_stream is not None
                answer = ctrl.ControlMessage(
                    configure_stream_response=ctrl.ConfigureStreamResponse(
                        request=request.configure_stream
                    )
                )
            answer.r_id = request.r_id
            engine.receive_data(encode_control(answer, "JSON"), 0.0)
    engine.next_events()
    return engine, queue_id


def _engine_rates(count: int) -> list[Result]:
    """The client's own ceiling, without sockets or a broker: the sans-I/O engine alone."""

    def on_ack(ack: Ack) -> None:
        return None

    writer, wq = _started_engine(write=True)
    start = time.perf_counter()
    guids = [writer.post(wq, PAYLOAD, 0.0, context=on_ack) for _ in range(count)]
    put_bytes = writer.data_to_send()
    post_rate = count / (time.perf_counter() - start)
    qid = writer.queues[wq].qid
    acks = AckEventBuilder()
    acks.add_many((0, 0, guid, qid) for guid in guids)
    ack_events = acks.finish()
    start = time.perf_counter()
    for event in ack_events:
        writer.receive_data(event, 0.0)
    assert len(writer.next_events()) == count
    ack_rate = count / (time.perf_counter() - start)

    reader, rq = _started_engine(read=True)
    pushes = PushEventBuilder()
    rqid = reader.queues[rq].qid
    for put_event in EventReader().feed(put_bytes):
        for put in iter_put(put_event):
            pushes.add(rqid, put.guid, put.payload)
    push_events = pushes.finish()
    start = time.perf_counter()
    for event in push_events:
        reader.receive_data(event, 0.0)
    received_events = reader.next_events()
    assert len(received_events) == count
    for received in received_events:
        assert isinstance(received, MessageReceived)
        reader.confirm(received.message.queue_id, received.message.guid)
    reader.data_to_send()
    push_rate = count / (time.perf_counter() - start)
    return [
        Result("engine post→PUT bytes", post_rate, "msgs/s", "sans-I/O, 100 B"),
        Result("engine ACK event→AckReceived", ack_rate, "msgs/s", "sans-I/O"),
        Result("engine PUSH→message→CONFIRM bytes", push_rate, "msgs/s", "sans-I/O"),
    ]


def _bytes_per_unacked(count: int) -> float:
    """Client memory held per posted-but-unacknowledged message (sans-I/O engine, shared ACK
    callback as with ``post_nowait(on_ack=...)``): traced bytes after the PUT is sent, over N."""
    engine, queue_id = _started_engine(write=True)

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


def _quantiles(values: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(values, n=100)
    return cuts[49], cuts[98]


def run(quick: bool) -> list[Result]:
    count = 2_000 if quick else 50_000
    with sim_process() as url:
        posted, consumed = asyncio.run(_rates(url, count))
        p50, p99 = _quantiles(asyncio.run(_latency(url, 50 if quick else 2_000)))
    flood50, flood99 = _quantiles(posted.latencies)
    per_message = _bytes_per_unacked(2_000 if quick else 50_000)
    note = f"{count} x 100 B via pybmq sim (own process)"
    return [
        *_engine_rates(2_000 if quick else 100_000),
        Result("e2e pybmq post→ACK", posted.rate, "msgs/s", note),
        Result("e2e pybmq consume→confirm", consumed.rate, "msgs/s", note),
        Result("e2e pybmq ACK latency p50", p50 * 1e6, "µs", "one post in flight"),
        Result("e2e pybmq ACK latency p99", p99 * 1e6, "µs", "one post in flight"),
        Result("e2e pybmq ACK latency p50 (flood)", flood50 * 1e6, "µs", f"{count} posted at once"),
        Result("e2e pybmq ACK latency p99 (flood)", flood99 * 1e6, "µs", f"{count} posted at once"),
        Result("pybmq bytes per unacked message", per_message, "B", "tracemalloc, goal ≤ 300"),
    ]
