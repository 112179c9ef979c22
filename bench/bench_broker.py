"""The simulator's sans-I/O broker engine alone (no socket, no event loop), next to the wire codecs
doing the same encoding and decoding, measured in the same run.

One producer and one consumer session of a ``Broker``, one priority queue, 100-byte payloads
without properties (what ``bench_sim`` sends). Each round feeds the producer one PUT event of
1000 messages (ACK requested) and the consumer the CONFIRM event for them, and collects every
session's output (ACK and PUSH events): PUT → stored → ACK and PUSH → CONFIRM → released, as
``pybmq sim`` does per received chunk. CPU time of this thread, best of several samples.

Reference (the floor the engine is compared with): per message, the wire codecs' share of that
work: ``decode_put``, ``AckEventBuilder.add_many``, ``PushEventBuilder.add`` and
``iter_confirm_entries``.
"""

from __future__ import annotations

from collections.abc import Callable

from pybmq.client.loadgen import make_payload
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.sim.broker import Broker
from pybmq.sim.session import ClientSession
from pybmq.wire.batches import AckEventBuilder, ConfirmEventBuilder, iter_confirm_entries
from pybmq.wire.control import encode_control
from pybmq.wire.guid import MessageGuidGenerator
from pybmq.wire.options import encode_sub_queue_ids_old
from pybmq.wire.push import PushEventBuilder
from pybmq.wire.put import PutEventBuilder, decode_put

from bench.bench_engine import best_cpu_rate
from bench.common import Result

PAYLOAD = make_payload(100)
BATCH = 1000
URI = "bmq://bmq.test.mem.priority/bench-broker"
READ, WRITE = 2, 4


def _session(broker: Broker) -> ClientSession:
    """A negotiated session, its output drained."""
    session = broker.connect("bench", 0.0)
    identity = ctrl.ClientIdentity(
        protocol_version=1,
        sdk_version=1,
        client_type=ctrl.ClientType.E_TCPCLIENT,
        process_name="bench",
        pid=1,
        session_id=1,
        host_name="localhost",
        features="PROTOCOL_ENCODING:JSON;MPS:MESSAGE_PROPERTIES_EX",
        cluster_name="",
        cluster_node_id=-1,
        sdk_language=ctrl.ClientLanguage.E_CPP,
        guid_info=ctrl.GuidInfo(client_id="ABCDEF012345", nano_seconds_from_epoch=1),
    )
    _request(broker, session, ctrl.NegotiationMessage(client_identity=identity))
    return session


def _request(broker: Broker, session: ClientSession, message: object) -> None:
    session.receive_data(encode_control(message, "JSON"), 0.0)
    for dirty in broker.take_dirty():
        dirty.data_to_send()
    assert not session.closed, session.close_reason


def _open(broker: Broker, session: ClientSession, q_id: int, flags: int) -> None:
    params = ctrl.QueueHandleParameters(
        uri=URI,
        q_id=q_id,
        flags=flags,
        read_count=int(flags == READ),
        write_count=int(flags == WRITE),
        admin_count=0,
    )
    open_queue = ctrl.OpenQueue(handle_parameters=params)
    _request(broker, session, ctrl.ControlMessage(r_id=1, open_queue=open_queue))


def routed_broker() -> tuple[Broker, ClientSession, ClientSession]:
    """A broker with a producer (queue id 0) and a consumer (queue id 1, room for 5000)."""
    broker = Broker()
    producer, consumer = _session(broker), _session(broker)
    _open(broker, producer, 0, WRITE)
    _open(broker, consumer, 1, READ)
    info = ctrl.ConsumerInfo(
        max_unconfirmed_messages=5000,
        max_unconfirmed_bytes=1 << 30,
        consumer_priority=0,
        consumer_priority_count=1,
    )
    subscription = ctrl.Subscription(
        s_id=1,
        expression=ctrl.Expression(version=ctrl.ExpressionVersion.E_UNDEFINED, text=""),
        consumers=[info],
    )
    stream = ctrl.StreamParameters(app_id="__default", subscriptions=[subscription])
    configure = ctrl.ConfigureStream(q_id=1, stream_parameters=stream)
    _request(broker, consumer, ctrl.ControlMessage(r_id=2, configure_stream=configure))
    return broker, producer, consumer


def _events(n: int) -> tuple[list[bytes], list[bytes], list[bytes]]:
    """(GUIDs, PUT events, CONFIRM events) for ``n`` messages in rounds of BATCH."""
    guids = MessageGuidGenerator().generate_many(n)
    puts: list[bytes] = []
    confirms: list[bytes] = []
    for i in range(0, n - BATCH + 1, BATCH):
        put = PutEventBuilder(1 << 20)
        put.add_many(0, [PAYLOAD] * BATCH, guids[i : i + BATCH])
        puts += put.finish()
        confirm = ConfirmEventBuilder()
        confirm.add_many([(1, guid, 0) for guid in guids[i : i + BATCH]])
        confirms += confirm.finish()
    assert len(puts) == len(confirms) == n // BATCH
    return guids, puts, confirms


def run(quick: bool) -> list[Result]:
    n = 5_000 if quick else 100_000
    samples = 1 if quick else 5
    _guids, puts, confirms = _events(n)

    def broker_round() -> Callable[[], int]:
        broker, producer, consumer = routed_broker()

        def go() -> int:
            out = 0
            for put, confirm in zip(puts, confirms, strict=True):
                producer.receive_data(put, 0.0)
                for session in broker.take_dirty():
                    out += len(session.data_to_send())
                consumer.receive_data(confirm, 0.0)
                for session in broker.take_dirty():
                    out += len(session.data_to_send())
            stats = broker.stats
            assert stats.acks == stats.pushes == stats.confirms == n and out, stats
            assert not producer.closed and not consumer.closed
            return n

        return go

    def codec_round() -> Callable[[], int]:
        option = encode_sub_queue_ids_old((1,))

        def go() -> int:
            for put, confirm in zip(puts, confirms, strict=True):
                messages = decode_put(put, decompress=False)
                acks = AckEventBuilder()
                acks.add_many([(0, 0, m.guid, m.queue_id) for m in messages])
                acks.finish()
                push = PushEventBuilder(1 << 20)
                for m in messages:
                    push.add(1, m.guid, m.payload, raw=True, options=option)
                push.finish()
                assert len(list(iter_confirm_entries(confirm))) == len(messages)
            return n

        return go

    reference = best_cpu_rate(codec_round, samples)
    rate = best_cpu_rate(broker_round, samples)
    return [
        Result("sim engine codec: PUT decode + ACK + PUSH + CONFIRM (reference)", reference, "msgs/s (CPU)", "100 B"),
        Result("sim engine PUT→ACK + PUSH→CONFIRM, in process", rate, "msgs/s (CPU)", f"{rate / reference:.2f}x the codec; sans-I/O, 1000 per event"),
    ]  # fmt: skip
