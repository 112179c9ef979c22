"""The sans-I/O client engine alone (no socket, no broker): its three data-plane paths, each next to
the wire codec doing that path's encoding or decoding, measured in the same run.

Workload as in the issue: 100-byte payloads with 2 properties, one queue, CPU time of this
thread, best of several samples (a shared machine slows every figure; the ratio to the codec
measured a moment earlier survives it). The garbage collector stays on: the objects a path makes
per message are part of its cost.

- post → PUT bytes: ``post()`` per message (properties as a dict, as users write it) and
  ``post_many()`` (batches of 1000), then ``data_to_send()``; codec: ``PutEventBuilder.add_many``.
- ACK event → resolved posts (``AckReceived`` records); codec: ``iter_ack``.
- PUSH event → messages → CONFIRM bytes: ``receive_data`` per event, ``next_events``, then
  ``confirm()`` per message or ``confirm_many()`` per event, and ``data_to_send()``; codec:
  ``decode_push`` plus ``ConfirmEventBuilder.add_many``.
- the same with a de-duplication window (``QueueOptions.dedup_window``) as large as the run:
  its cost as a ratio to the run without one.
- bytes held per posted-but-unacknowledged message (tracemalloc).
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Callable

from pybmq.client.engine import ClientEngine
from pybmq.client.events import Ack, MessageReceived
from pybmq.client.loadgen import make_payload
from pybmq.client.options import QueueOptions
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.wire.batches import AckEventBuilder, ConfirmEventBuilder, iter_ack
from pybmq.wire.control import decode_control_as, encode_control
from pybmq.wire.framing import EventReader
from pybmq.wire.guid import MessageGuidGenerator
from pybmq.wire.properties import MessageProperties
from pybmq.wire.push import PushEventBuilder, decode_push
from pybmq.wire.put import PutEventBuilder

from bench.common import Result

PAYLOAD = make_payload(100)
PROPERTIES = {"encoding": 3, "source": "bench"}
BATCH = 1000


def started_engine(
    *, read: bool = False, write: bool = False, options: QueueOptions | None = None
) -> tuple[ClientEngine, int]:
    """A sans-I/O engine with a started session and one queue open, fed scripted replies."""
    engine = ClientEngine()
    engine.start(0.0)
    engine.connection_made(0.0)
    engine.data_to_send()
    identity = ctrl.ClientIdentity(
        protocol_version=1,
        client_type=ctrl.ClientType.E_TCPBROKER,
        features="PROTOCOL_ENCODING:JSON;MPS:MESSAGE_PROPERTIES_EX;SUBSCRIPTIONS:CONFIGURE_STREAM",
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
        "bmq://bmq.test.mem.priority/bench-engine", 0.0, read=read, write=write, options=options
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


def _on_ack(ack: Ack) -> None:
    return None


def best_cpu_rate(setup: Callable[[], Callable[[], int]], samples: int, name: str = "") -> float:
    """Messages per second of this thread's CPU time, best of ``samples``: ``setup()`` (not
    timed) prepares a fresh run and returns it; the run returns how many messages it handled."""
    best = 0.0
    for _ in range(samples):
        run = setup()
        gc.collect()
        start = time.thread_time()
        count = run()
        elapsed = time.thread_time() - start
        best = max(best, count / elapsed if elapsed > 0 else 0.0)
    return best


def bytes_per_unacked(count: int) -> float:
    """Client memory held per posted-but-unacknowledged message (shared ACK callback, as with
    ``post_nowait(on_ack=...)``): traced bytes after the PUT is sent, over ``count``."""
    engine, queue_id = started_engine(write=True)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(count):
        engine.post(queue_id, PAYLOAD, 0.0, context=_on_ack)
    engine.data_to_send()  # the PUT event leaves; only the bookkeeping stays
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert engine.unacked_count == count
    return (after - before) / count


def run(quick: bool) -> list[Result]:
    n = 2_000 if quick else 50_000
    samples = 1 if quick else 5
    props = MessageProperties(PROPERTIES)

    # -- post → PUT bytes -----------------------------------------------------------------------
    def post_each() -> Callable[[], int]:
        engine, queue = started_engine(write=True)

        def go() -> int:
            post = engine.post
            for _ in range(n):
                post(queue, PAYLOAD, 0.0, properties=PROPERTIES, context=_on_ack)
            assert engine.data_to_send()
            return n

        return go

    def post_many() -> Callable[[], int]:
        engine, queue = started_engine(write=True)
        batch = [PAYLOAD] * BATCH

        def go() -> int:
            for _ in range(n // BATCH):
                engine.post_many(queue, batch, 0.0, properties=PROPERTIES, context=_on_ack)
            assert engine.data_to_send()
            return n // BATCH * BATCH

        return go

    def put_codec() -> Callable[[], int]:
        guids = MessageGuidGenerator().generate_many(n)
        payloads = [PAYLOAD] * BATCH

        def go() -> int:
            for i in range(0, n - BATCH + 1, BATCH):
                builder = PutEventBuilder(1 << 20)
                builder.add_many(5, payloads, guids[i : i + BATCH], properties=props)
                builder.finish()
            return n // BATCH * BATCH

        return go

    # -- ACK event → resolved --------------------------------------------------------------------
    def acked_engine() -> tuple[ClientEngine, list[bytes]]:
        engine, queue = started_engine(write=True)
        guids: list[bytes] = []
        for _ in range(n // BATCH):
            guids += engine.post_many(queue, [PAYLOAD] * BATCH, 0.0, context=_on_ack)
        engine.data_to_send()
        qid = engine.queues[queue].qid
        builder = AckEventBuilder()
        builder.add_many((0, 0, guid, qid) for guid in guids)
        return engine, builder.finish()

    def ack_resolve() -> Callable[[], int]:
        engine, events = acked_engine()

        def go() -> int:
            for event in events:
                engine.receive_data(event, 0.0)
            return len(engine.next_events())

        return go

    def ack_codec() -> Callable[[], int]:
        _engine, events = acked_engine()

        def go() -> int:
            return sum(len(list(iter_ack(event))) for event in events)

        return go

    # -- PUSH event → messages → CONFIRM bytes ---------------------------------------------------
    def push_events(qid: int) -> list[bytes]:
        builder = PushEventBuilder(1 << 20)  # what pybmq sim sends: events of up to 1 MiB
        for guid in MessageGuidGenerator().generate_many(n):
            builder.add(qid, guid, PAYLOAD, properties=props)
        return builder.finish()

    def push_confirm(many: bool, window: int = 0) -> Callable[[], Callable[[], int]]:
        def setup() -> Callable[[], int]:
            engine, queue = started_engine(read=True, options=QueueOptions(dedup_window=window))
            events = push_events(engine.queues[queue].qid)

            def go() -> int:
                count = 0
                for event in events:
                    engine.receive_data(event, 0.0)
                    received = engine.next_events()
                    if many:
                        engine.confirm_many(queue, [e.message.guid for e in received])  # type: ignore[union-attr]
                    else:
                        for item in received:
                            assert isinstance(item, MessageReceived)
                            engine.confirm(item.message.queue_id, item.message.guid)
                    engine.data_to_send()
                    count += len(received)
                return count

            return go

        return setup

    def push_codec() -> Callable[[], int]:
        events = push_events(5)

        def go() -> int:
            count = 0
            for event in events:
                messages = decode_push(event, decompress=False)
                builder = ConfirmEventBuilder()
                builder.add_many([(5, m.guid, 0) for m in messages])
                builder.finish()
                count += len(messages)
            return count

        return go

    put_ref = best_cpu_rate(put_codec, samples)
    post_rate = best_cpu_rate(post_each, samples)
    post_many_rate = best_cpu_rate(post_many, samples)
    ack_ref = best_cpu_rate(ack_codec, samples)
    ack_rate = best_cpu_rate(ack_resolve, samples)
    push_ref = best_cpu_rate(push_codec, samples)
    push_rate = best_cpu_rate(push_confirm(False), samples)
    push_many_rate = best_cpu_rate(push_confirm(True), samples)
    dedup_rate = best_cpu_rate(push_confirm(True, window=n), samples)
    per_message = bytes_per_unacked(2_000 if quick else 50_000)

    def vs(rate: float, ref: float, goal: str) -> str:
        return f"{rate / ref:.2f}x the codec; {goal}"

    return [
        Result("engine codec: PUT add_many (reference)", put_ref, "msgs/s (CPU)", "100 B + 2 props"),
        Result("engine post→PUT bytes, post()", post_rate, "msgs/s (CPU)", vs(post_rate, put_ref, "goal 400k/s")),
        Result("engine post→PUT bytes, post_many()", post_many_rate, "msgs/s (CPU)", vs(post_many_rate, put_ref, "goal 400k/s")),
        Result("engine codec: ACK parse (reference)", ack_ref, "msgs/s (CPU)", ""),
        Result("engine ACK event→resolved", ack_rate, "msgs/s (CPU)", vs(ack_rate, ack_ref, "goal 600k/s")),
        Result("engine codec: PUSH decode + CONFIRM build (reference)", push_ref, "msgs/s (CPU)", "100 B + 2 props"),
        Result("engine PUSH→message→CONFIRM, confirm()", push_rate, "msgs/s (CPU)", vs(push_rate, push_ref, "goal 300k/s")),
        Result("engine PUSH→message→CONFIRM, confirm_many()", push_many_rate, "msgs/s (CPU)", vs(push_many_rate, push_ref, "goal 300k/s")),
        Result("engine PUSH→message→CONFIRM, confirm_many(), dedup window", dedup_rate, "msgs/s (CPU)", f"{dedup_rate / push_many_rate:.2f}x without the window"),
        Result("engine bytes per unacked message", per_message, "B", "tracemalloc, goal ≤ 300"),
    ]  # fmt: skip
