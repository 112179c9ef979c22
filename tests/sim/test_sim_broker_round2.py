"""The simulator held to the real broker, round two, driven with bytes: what a broker does with a
consumer's bad priorities and negative flow control, the same GUID twice while its ACK is
pending, an empty message, properties that do not decode, and the codes of an open's refusals
(each seen on the real broker; the differential catalogue holds them too)."""

from __future__ import annotations

import pytest
from pybmq.errors import ProtocolError
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import AckStatus, PutHeaderFlags
from pybmq.sim.broker import Broker
from pybmq.wire.properties import MessageProperties
from pybmq.wire.put import PutEventBuilder

from tests.sim.test_sim_engine import PRIORITY, READ, WRITE, Peer, broker, guid, peer

__all__ = ["broker"]  # the fixture, used by name

INT_MIN = -(2**31)
ACK = int(PutHeaderFlags.ACK_REQUESTED)
PROPERTIES = int(PutHeaderFlags.MESSAGE_PROPERTIES)


def _configure(p: Peer, q_id: int, **consumer: int) -> ctrl.ControlMessage:
    info = ctrl.ConsumerInfo(
        **{
            "max_unconfirmed_messages": 10,
            "max_unconfirmed_bytes": 1 << 20,
            "consumer_priority": 0,
            "consumer_priority_count": 1,
            **consumer,
        }
    )
    subscription = ctrl.Subscription(s_id=1, expression=ctrl.Expression(), consumers=[info])
    params = ctrl.StreamParameters(subscriptions=[subscription])
    return p.request(configure_stream=ctrl.ConfigureStream(q_id=q_id, stream_parameters=params))


def _status(reply: ctrl.ControlMessage) -> str:
    return "ok" if reply.status is None else f"{reply.status.category.name} {reply.status.code}"


@pytest.mark.parametrize(
    ("consumer", "answer"),
    [
        ({"consumer_priority": INT_MIN, "consumer_priority_count": 1}, "E_UNKNOWN -1"),
        ({"consumer_priority_count": 0}, "E_UNKNOWN -1"),
        ({"consumer_priority_count": -1}, "E_UNKNOWN -1"),
        ({"consumer_priority": INT_MIN, "consumer_priority_count": 0}, "ok"),  # no consumer
        ({"consumer_priority": 2**31 - 1}, "ok"),
        ({"max_unconfirmed_messages": -1}, "E_INVALID_ARGUMENT -1"),  # a broker aborts
        ({"max_unconfirmed_bytes": -1}, "E_INVALID_ARGUMENT -1"),  # a broker aborts
    ],
)
def test_consumer_parameters_are_refused_as_a_broker_refuses_them(
    broker: Broker, consumer: dict[str, int], answer: str
) -> None:
    p = peer(broker)
    assert p.open(PRIORITY, 1, READ).open_queue_response is not None
    assert _status(_configure(p, 1, **consumer)) == answer
    assert not p.session.closed
    assert _status(_configure(p, 1)) == "ok"  # the handle is still usable


def test_a_writers_stream_parameters_are_not_looked_at(broker: Broker) -> None:
    p = peer(broker)
    p.producer(PRIORITY, q_id=1)
    assert _status(_configure(p, 1, max_unconfirmed_messages=-1)) == "ok"


def test_the_old_configure_is_held_to_the_same_rules(broker: Broker) -> None:
    p = peer(broker)
    assert p.open(PRIORITY, 1, READ).open_queue_response is not None

    def old(priority: int, count: int, messages: int = 10) -> str:
        params = ctrl.QueueStreamParameters(
            max_unconfirmed_messages=messages,
            max_unconfirmed_bytes=1 << 20,
            consumer_priority=priority,
            consumer_priority_count=count,
        )
        request = ctrl.ConfigureQueueStream(q_id=1, stream_parameters=params)
        return _status(p.request(configure_queue_stream=request))

    assert old(0, 0) == "E_UNKNOWN -1"
    assert old(0, 1, messages=-5) == "E_INVALID_ARGUMENT -1"
    assert old(INT_MIN, 0, messages=0) == "ok"  # how a client stops a consumer
    assert old(3, 1) == "ok"


@pytest.mark.parametrize(
    ("params", "answer"),
    [
        ({"uri": "not a uri"}, "E_REFUSED 0"),
        ({"uri": "bmq://bmq.test.mem.priority"}, "E_REFUSED 0"),
        ({"uri": PRIORITY[: -len("q")] + "q" * 65}, "E_REFUSED 0"),
        ({"flags": 0, "write_count": 0}, "E_INVALID_ARGUMENT 0"),
        ({"write_count": 0}, "E_INVALID_ARGUMENT 0"),
        ({"uri": "bmq://bmq.no.such.priority.domain/q"}, "E_UNKNOWN -1"),
    ],
)
def test_an_opens_refusal_has_the_brokers_code(
    broker: Broker, params: dict[str, object], answer: str
) -> None:
    p = peer(broker)
    handle = {"uri": PRIORITY, "q_id": 1, "flags": WRITE, "write_count": 1, **params}
    request = ctrl.OpenQueue(handle_parameters=ctrl.QueueHandleParameters(**handle))
    assert _status(p.request(open_queue=request)) == answer


def _send(p: Peer, *messages: tuple[int, bytes, int]) -> None:
    """One PUT event on queue id 0: (GUID number, application data as it goes out, flags)."""
    builder = PutEventBuilder()
    for n, data, flags in messages:
        schema = 1 if flags & PROPERTIES else None
        builder.add(0, data, guid=guid(n), raw=True, flags=flags, schema_id=schema)
    for event in builder.finish():
        p.send(event)


def test_an_empty_message_ends_its_event_without_an_answer(broker: Broker) -> None:
    producer, consumer = peer(broker), peer(broker)
    producer.producer(PRIORITY)
    consumer.consumer(PRIORITY)
    _send(producer, (1, b"first", ACK), (2, b"", ACK), (3, b"third", ACK))
    assert producer.acks() == [(AckStatus.SUCCESS, guid(1))]
    assert [m.payload for m in consumer.pushes()] == [b"first"]
    assert not producer.session.closed and broker.stats.nacks == 0
    assert "an empty message" in broker.stats.improper[-1]
    _send(producer, (4, b"next", ACK))  # the connection goes on
    assert producer.acks() == [(AckStatus.SUCCESS, guid(4))]


def test_the_same_guid_while_its_ack_is_pending_gets_no_ack_of_its_own(broker: Broker) -> None:
    producer, consumer = peer(broker), peer(broker)
    producer.producer(PRIORITY)
    consumer.consumer(PRIORITY)
    _send(producer, (1, b"a", ACK), (2, b"b", 0), (1, b"a again", ACK), (3, b"c", ACK))
    assert producer.acks() == [(AckStatus.SUCCESS, guid(1)), (AckStatus.SUCCESS, guid(3))]
    assert [m.payload for m in consumer.pushes()] == [b"a", b"b", b"c"]
    # Its ACK sent, the same GUID again (a retransmission) is ACKed, and not stored twice.
    _send(producer, (1, b"a once more", ACK))
    assert producer.acks() == [(AckStatus.SUCCESS, guid(1))]
    # The first without ACK_REQUESTED leaves nothing pending: the second is ACKed.
    _send(producer, (4, b"d", 0), (4, b"d again", ACK))
    assert producer.acks() == [(AckStatus.SUCCESS, guid(4))]
    assert [m.payload for m in consumer.pushes()] == [b"d"]


def test_properties_that_do_not_decode_are_stored_and_delivered(broker: Broker) -> None:
    producer, consumer = peer(broker), peer(broker)
    producer.producer(PRIORITY)
    consumer.consumer(PRIORITY)
    area = bytearray(MessageProperties({"n": 3}).encode(extended=True))
    area[5] = 2  # two properties claimed, one there: the area's size is still right
    _send(producer, (1, bytes(area) + b"bad", ACK | PROPERTIES))
    assert producer.acks() == [(AckStatus.SUCCESS, guid(1))]
    (push,) = consumer.pushes()
    assert push.payload == b"bad" and push.properties_area == bytes(area)
    with pytest.raises(ProtocolError, match="propert"):
        dict(push.properties or {})  # the consumer is the one to find out
