"""The simulator's broker engine driven with bytes: no sockets, no clock but the one we pass.

Each test plays one or more clients against a ``Broker``: it encodes requests with the generated
codecs and the wire builders, feeds them to a ``ClientSession`` and decodes what comes back. The
strictness tests check that each thing a real broker refuses is refused, in the way it refuses it
(failure status, NACK, or disconnect with a logged reason).
"""

from __future__ import annotations

from typing import Any

import pytest
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.bmqp_ctrlmsg_ber import decode_ber, encode_ber
from pybmq.generated.bmqp_ctrlmsg_json import decode_json, encode_json
from pybmq.generated.wire_codec import AckStatus, EncodingType, EventType
from pybmq.sim.broker import Broker
from pybmq.sim.config import BrokerConfig
from pybmq.wire.batches import ConfirmEventBuilder, iter_ack
from pybmq.wire.control import HEARTBEAT_REQ_EVENT, decode_control_event, encode_control_event
from pybmq.wire.framing import Event, EventReader, event_header_bytes
from pybmq.wire.properties import MessageProperties
from pybmq.wire.push import iter_push
from pybmq.wire.put import PutEventBuilder

PRIORITY = "bmq://bmq.test.mem.priority/q"
FANOUT = "bmq://bmq.test.mem.fanout/f"
BROADCAST = "bmq://bmq.test.mem.broadcast/b"
READ, WRITE = 2, 4


def guid(n: int) -> bytes:
    return b"\x40" + n.to_bytes(15, "big")


class Peer:
    """A scripted client of one ClientSession."""

    def __init__(self, broker: Broker, encoding: EncodingType = EncodingType.JSON) -> None:
        self.broker = broker
        self.session = broker.connect("test-peer", 0.0)
        self.encoding = encoding
        self.reader = EventReader()
        self.inbox: list[Event] = []
        self.r_id = 0

    # -- plumbing --------------------------------------------------------------------------------

    def send(self, data: bytes, now: float = 0.0) -> None:
        self.session.receive_data(data, now)
        self.pump()

    def pump(self) -> None:
        for peer_session in self.broker.take_dirty():
            data = peer_session.data_to_send()
            owner = PEERS.get(id(peer_session))
            if owner is not None and data:
                owner.inbox.extend(owner.reader.feed(data))

    def take(self, kind: EventType | None = None) -> list[Event]:
        taken = [e for e in self.inbox if kind is None or e.type == kind]
        self.inbox = [e for e in self.inbox if e not in taken]
        return taken

    def encode(self, message: object) -> bytes:
        if self.encoding == EncodingType.BER:
            return encode_control_event(encode_ber(message), EncodingType.BER)
        return encode_control_event(encode_json(message), EncodingType.JSON)

    def control_reply(self, cls: type[Any]) -> Any:
        (event,) = self.take(EventType.CONTROL)
        encoding, payload = decode_control_event(event)
        assert encoding == self.encoding, "the broker answers in the encoding of the request"
        return (
            decode_ber(cls, payload) if encoding == EncodingType.BER else decode_json(cls, payload)
        )

    # -- requests --------------------------------------------------------------------------------

    def negotiate(
        self, features: str = "PROTOCOL_ENCODING:JSON;MPS:MESSAGE_PROPERTIES_EX", version: int = 1
    ) -> ctrl.BrokerResponse:
        identity = ctrl.ClientIdentity(
            protocol_version=version,
            sdk_version=1,
            client_type=ctrl.ClientType.E_TCPCLIENT,
            process_name="test",
            pid=1,
            session_id=1,
            host_name="h",
            features=features,
            cluster_name="",
            cluster_node_id=-1,
            sdk_language=ctrl.ClientLanguage.E_CPP,
            guid_info=ctrl.GuidInfo(client_id="ABCDEF012345", nano_seconds_from_epoch=1),
        )
        self.send(self.encode(ctrl.NegotiationMessage(client_identity=identity)))
        response = self.control_reply(ctrl.NegotiationMessage).broker_response
        assert response is not None
        return response

    def request(self, **choice: Any) -> ctrl.ControlMessage:
        self.r_id += 1
        self.send(self.encode(ctrl.ControlMessage(r_id=self.r_id, **choice)))
        reply: ctrl.ControlMessage = self.control_reply(ctrl.ControlMessage)
        assert reply.r_id == self.r_id
        return reply

    def open(
        self,
        uri: str,
        q_id: int,
        flags: int,
        app_id: str | None = None,
        sub_id: int = 0,
        **counts: int,
    ) -> ctrl.ControlMessage:
        params = ctrl.QueueHandleParameters(
            uri=uri,
            q_id=q_id,
            sub_id_info=ctrl.SubQueueIdInfo(sub_id=sub_id, app_id=app_id) if app_id else None,
            flags=flags,
            read_count=counts.get("read_count", 1 if flags & READ else 0),
            write_count=counts.get("write_count", 1 if flags & WRITE else 0),
            admin_count=counts.get("admin_count", 0),
        )
        return self.request(open_queue=ctrl.OpenQueue(handle_parameters=params))

    def configure(
        self,
        q_id: int,
        app_id: str = "__default",
        messages: int = 1000,
        size: int = 1 << 25,
        priority: int = 0,
        s_id: int = 1,
        expression: str = "",
    ) -> ctrl.ControlMessage:
        consumer = ctrl.ConsumerInfo(
            max_unconfirmed_messages=messages,
            max_unconfirmed_bytes=size,
            consumer_priority=priority,
            consumer_priority_count=1,
        )
        subscription = ctrl.Subscription(
            s_id=s_id,
            expression=ctrl.Expression(version=ctrl.ExpressionVersion.E_UNDEFINED, text=expression),
            consumers=[consumer],
        )
        params = ctrl.StreamParameters(app_id=app_id, subscriptions=[subscription])
        return self.request(
            configure_stream=ctrl.ConfigureStream(q_id=q_id, stream_parameters=params)
        )

    def consumer(self, uri: str, q_id: int = 1, **configure: Any) -> None:
        assert self.open(uri, q_id, READ).open_queue_response is not None
        assert self.configure(q_id, **configure).configure_stream_response is not None

    def producer(self, uri: str, q_id: int = 0) -> None:
        assert self.open(uri, q_id, WRITE).open_queue_response is not None

    def put(self, q_id: int, *numbers: int, **options: Any) -> None:
        builder = PutEventBuilder()
        for n in numbers:
            builder.add(
                q_id,
                options.pop("payload", f"payload {n}".encode()),
                guid=guid(n),
                ack_requested=True,
                **options,
            )
        for event in builder.finish():
            self.send(event)

    def acks(self) -> list[tuple[int, bytes]]:
        return [(a.status, a.guid) for e in self.take(EventType.ACK) for a in iter_ack(e)]

    def pushes(self) -> list[Any]:
        return [p for e in self.take(EventType.PUSH) for p in iter_push(e)]

    def confirm(self, q_id: int, *numbers: int, sub_queue_id: int = 0) -> None:
        builder = ConfirmEventBuilder()
        for n in numbers:
            builder.add(q_id, guid(n), sub_queue_id)
        for event in builder.finish():
            self.send(event)


PEERS: dict[int, Peer] = {}


@pytest.fixture
def broker() -> Broker:
    PEERS.clear()
    return Broker(BrokerConfig(heartbeat_interval_ms=1000, max_missed_heartbeats=3))


def peer(broker: Broker, encoding: EncodingType = EncodingType.JSON, **negotiate: Any) -> Peer:
    p = Peer(broker, encoding)
    PEERS[id(p.session)] = p
    response = p.negotiate(**negotiate)
    assert response.result.category == ctrl.StatusCategory.E_SUCCESS
    return p


def failure(reply: ctrl.ControlMessage) -> tuple[str, str]:
    assert reply.status is not None, reply
    return reply.status.category.name, reply.status.message


# -- negotiation ---------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", [EncodingType.JSON, EncodingType.BER])
def test_negotiation_answers_in_the_request_encoding(
    broker: Broker, encoding: EncodingType
) -> None:
    p = Peer(broker, encoding)
    PEERS[id(p.session)] = p
    response = p.negotiate()
    assert response.result.category == ctrl.StatusCategory.E_SUCCESS
    assert response.protocol_version == 1
    assert response.heartbeat_interval_ms == 1000 and response.max_missed_heartbeats == 3
    assert "SUBSCRIPTIONS:CONFIGURE_STREAM" in response.broker_identity.features
    assert "MPS:MESSAGE_PROPERTIES_EX" in response.broker_identity.features


def test_unsupported_protocol_version_is_refused_then_closed(broker: Broker) -> None:
    p = Peer(broker)
    PEERS[id(p.session)] = p
    response = p.negotiate(version=2)
    assert response.result.category == ctrl.StatusCategory.E_NOT_SUPPORTED
    assert p.session.closed


def test_anything_but_negotiation_first_closes(broker: Broker) -> None:
    p = Peer(broker)
    p.send(HEARTBEAT_REQ_EVENT)
    assert p.session.closed and "before negotiation" in (p.session.close_reason or "")


def test_control_message_in_negotiation_slot_closes(broker: Broker) -> None:
    p = Peer(broker)
    p.send(p.encode(ctrl.ControlMessage(r_id=1, disconnect=ctrl.Disconnect())))
    assert p.session.closed and broker.stats.violations


# -- open / configure / close ----------------------------------------------------------------------


def test_open_response_echoes_the_request_with_routing(broker: Broker) -> None:
    p = peer(broker, EncodingType.BER)
    reply = p.open(FANOUT + "?id=foo", 3, READ, app_id="foo", sub_id=7)
    response = reply.open_queue_response
    assert response is not None
    assert response.original_request.handle_parameters.uri == FANOUT + "?id=foo"
    assert response.original_request.handle_parameters.sub_id_info == ctrl.SubQueueIdInfo(
        sub_id=7, app_id="foo"
    )
    assert response.routing_configuration.flags == (1 << 1) | (1 << 3)


@pytest.mark.parametrize(
    ("uri", "flags", "extra", "category", "text"),
    [
        ("bmq://bmq.test.mem.nosuch/q", WRITE, {}, "E_UNKNOWN", "does not exist"),
        ("not a uri", WRITE, {}, "E_REFUSED", "invalid queue URI"),  # as a broker
        (PRIORITY, WRITE | 1, {}, "E_INVALID_ARGUMENT", "invalid queue flags"),
        (PRIORITY, 0, {}, "E_INVALID_ARGUMENT", "invalid queue flags"),
        (PRIORITY, WRITE, {"write_count": 0}, "E_INVALID_ARGUMENT", "do not match flags"),
        (PRIORITY, READ, {"admin_count": 1}, "E_INVALID_ARGUMENT", "do not match flags"),
        (
            FANOUT + "?id=foo",
            WRITE,
            {"app_id": "foo", "sub_id": 1},
            "E_INVALID_ARGUMENT",
            "writing",
        ),
        (
            PRIORITY + "?id=foo",
            READ,
            {"app_id": "foo", "sub_id": 1},
            "E_UNKNOWN",  # as a broker answers it (tests/differential)
            "no appIds",
        ),
        (
            FANOUT + "?id=foo",
            READ,
            {"app_id": "bar", "sub_id": 1},
            "E_INVALID_ARGUMENT",
            "does not match URI",
        ),
    ],
)
def test_open_refusals(
    broker: Broker, uri: str, flags: int, extra: dict[str, Any], category: str, text: str
) -> None:
    p = peer(broker)
    reply = p.open(uri, 0, flags, **extra)
    got_category, message = failure(reply)
    assert got_category == category and text in message
    assert not p.session.closed


def test_an_appid_the_domain_does_not_list_opens_and_gets_nothing(broker: Broker) -> None:
    """As a broker: the open succeeds (the broker raises an alarm) and nothing is delivered to
    the app, while the listed apps get every message."""
    p = peer(broker)
    reply = p.open(FANOUT + "?id=nope", 1, READ, app_id="nope", sub_id=1)
    assert reply.open_queue_response is not None
    queue = broker.store.queues[FANOUT]
    assert "nope" not in queue.streams and queue.stream("nope").app_id == "nope"
    assert queue.stream("foo") is queue.streams["foo"]


def test_queue_id_reuse_rules(broker: Broker) -> None:
    p = peer(broker)
    assert p.open(FANOUT, 1, READ, app_id="foo", sub_id=1).open_queue_response
    # Another appId of the same queue under the same qId: fine, as with a broker.
    assert p.open(FANOUT, 1, READ, app_id="bar", sub_id=2).open_queue_response
    assert "already open" in failure(p.open(FANOUT, 1, READ, app_id="bar", sub_id=2))[1]
    assert "already in use" in failure(p.open(PRIORITY, 1, WRITE))[1]


def test_configure_and_close_of_unknown_handles_fail(broker: Broker) -> None:
    p = peer(broker)
    assert "not open" in failure(p.configure(9))[1]
    params = ctrl.QueueHandleParameters(uri=PRIORITY, q_id=9, flags=WRITE, write_count=1)
    reply = p.request(close_queue=ctrl.CloseQueue(handle_parameters=params, is_final=True))
    assert "not open" in failure(reply)[1]


def test_invalid_subscription_expression_is_refused(broker: Broker) -> None:
    p = peer(broker)
    p.open(PRIORITY, 1, READ)
    category, message = failure(p.configure(1, expression="x >"))
    assert category == "E_INVALID_ARGUMENT" and "invalid expression" in message


def test_subscriptions_route_by_expression_and_priority(broker: Broker) -> None:
    producer, evens, odds, fallback = peer(broker), peer(broker), peer(broker), peer(broker)
    producer.producer(PRIORITY)
    evens.consumer(PRIORITY, s_id=1, expression="n % 2 == 0", priority=5)
    odds.consumer(PRIORITY, s_id=2, expression='n % 2 == 1 && kind == "x"')
    fallback.consumer(PRIORITY, s_id=3, priority=-1, expression="exists(n)")
    for n in range(1, 7):
        producer.put(0, n, properties=MessageProperties({"n": n, "kind": "x" if n < 5 else "y"}))
    producer.put(0, 99)  # no properties: matches nobody, waits
    assert [p.guid for p in evens.pushes()] == [guid(2), guid(4), guid(6)]
    assert [(p.guid, p.sub_queue_ids) for p in odds.pushes()] == [(guid(1), (2,)), (guid(3), (2,))]
    assert [p.guid for p in fallback.pushes()] == [guid(5)]  # odd but kind "y"
    assert broker.queue(PRIORITY).pending_count() == 1  # type: ignore[union-attr]


def test_several_subscriptions_on_one_handle(broker: Broker) -> None:
    producer, consumer = peer(broker), peer(broker)
    producer.producer(PRIORITY)
    consumer.open(PRIORITY, 1, READ)
    subscriptions = [
        ctrl.Subscription(
            s_id=s_id,
            expression=ctrl.Expression(version=ctrl.ExpressionVersion.E_VERSION_1, text=text),
            consumers=[
                ctrl.ConsumerInfo(max_unconfirmed_messages=10, max_unconfirmed_bytes=1 << 20)
            ],
        )
        for s_id, text in ((7, "n < 3"), (8, "n >= 3"))
    ]
    params = ctrl.StreamParameters(app_id="__default", subscriptions=subscriptions)
    assert consumer.request(
        configure_stream=ctrl.ConfigureStream(q_id=1, stream_parameters=params)
    ).configure_stream_response
    for n in range(1, 5):
        producer.put(0, n, properties=MessageProperties({"n": n}))
    assert [(p.guid, p.sub_queue_ids) for p in consumer.pushes()] == [
        (guid(1), (7,)),
        (guid(2), (7,)),
        (guid(3), (8,)),
        (guid(4), (8,)),
    ]
    consumer.confirm(1, 1, 2, 3, 4)  # confirms name the subId (0), whichever subscription it was
    assert broker.stats.confirms == 4 and not consumer.session.closed


def test_old_style_configure_queue_stream_is_served(broker: Broker) -> None:
    p = peer(broker)
    p.open(PRIORITY, 1, READ)
    params = ctrl.QueueStreamParameters(
        max_unconfirmed_messages=5,
        max_unconfirmed_bytes=1000,
        consumer_priority=1,
        consumer_priority_count=1,
    )
    reply = p.request(
        configure_queue_stream=ctrl.ConfigureQueueStream(q_id=1, stream_parameters=params)
    )
    assert reply.configure_queue_stream_response is not None
    assert reply.configure_queue_stream_response.request.stream_parameters == params


# -- data plane ------------------------------------------------------------------------------------


def test_put_ack_push_confirm(broker: Broker) -> None:
    producer, consumer = peer(broker), peer(broker)
    producer.producer(PRIORITY)
    consumer.consumer(PRIORITY, s_id=5)
    props = MessageProperties({"k": "v", "n": 7})
    producer.put(0, 1, 2, properties=props)
    assert producer.acks() == [(AckStatus.SUCCESS, guid(1)), (AckStatus.SUCCESS, guid(2))]
    pushes = consumer.pushes()
    assert [(p.queue_id, p.guid, p.payload, p.sub_queue_ids) for p in pushes] == [
        (1, guid(1), b"payload 1", (5,)),
        (1, guid(2), b"payload 2", (5,)),
    ]
    assert dict(pushes[0].properties or {}) == {"k": "v", "n": 7}
    consumer.confirm(1, 1, 2, sub_queue_id=0)  # by subId, like the official SDK
    assert not consumer.session.closed and broker.stats.confirms == 2


def test_flow_control_by_unconfirmed_messages(broker: Broker) -> None:
    producer, consumer = peer(broker), peer(broker)
    producer.producer(PRIORITY)
    consumer.consumer(PRIORITY, messages=2)
    producer.put(0, *range(1, 6))
    assert [p.guid for p in consumer.pushes()] == [guid(1), guid(2)]
    consumer.confirm(1, 1)
    assert [p.guid for p in consumer.pushes()] == [guid(3)]


def test_a_paused_connection_is_pushed_nothing_and_not_timed_out(broker: Broker) -> None:
    producer, consumer = peer(broker), peer(broker)
    producer.producer(PRIORITY)
    consumer.consumer(PRIORITY)
    consumer.session.set_paused(True, 1.0)  # the shell: its write buffer is over high water
    producer.put(0, 1, 2)
    assert consumer.pushes() == []
    assert broker.queue(PRIORITY) is not None and broker.queue(PRIORITY).pending_count() == 2
    config = broker.config
    limit = config.heartbeat_interval_ms / 1000 * config.max_missed_heartbeats
    later = 1.0 + 2 * limit
    broker.on_timer(later)  # silent for twice the limit, but it was not being read
    assert not consumer.session.closed
    consumer.session.set_paused(False, later)  # drained: the queued messages go out
    consumer.pump()
    assert [p.guid for p in consumer.pushes()] == [guid(1), guid(2)]
    broker.on_timer(later + 1.0)
    assert not consumer.session.closed


def test_priority_and_round_robin_across_sessions(broker: Broker) -> None:
    producer = peer(broker)
    producer.producer(PRIORITY)
    high_a, high_b, low = peer(broker), peer(broker), peer(broker)
    high_a.consumer(PRIORITY, priority=5)
    high_b.consumer(PRIORITY, priority=5)
    low.consumer(PRIORITY, priority=1)
    producer.put(0, 1, 2, 3, 4)
    assert [p.guid for p in high_a.pushes()] == [guid(1), guid(3)]
    assert [p.guid for p in high_b.pushes()] == [guid(2), guid(4)]
    assert low.pushes() == []


def test_unconfirmed_messages_are_redelivered_when_the_consumer_goes(broker: Broker) -> None:
    producer, first, second = peer(broker), peer(broker), peer(broker)
    producer.producer(PRIORITY)
    first.consumer(PRIORITY, priority=2)
    second.consumer(PRIORITY, priority=1)
    producer.put(0, 1, 2, 3)
    assert len(first.pushes()) == 3
    first.confirm(1, 2)
    first.session.connection_lost()
    first.pump()
    assert [p.guid for p in second.pushes()] == [guid(1), guid(3)]
    assert broker.stats.redelivered == 2


def test_fanout_and_broadcast(broker: Broker) -> None:
    producer = peer(broker)
    producer.producer(FANOUT, 0)
    producer.producer(BROADCAST, 1)
    foo, bar = peer(broker), peer(broker)
    for p, app, sub in ((foo, "foo", 1), (bar, "bar", 2)):
        p.open(FANOUT + f"?id={app}", 1, READ, app_id=app, sub_id=sub)
        p.configure(1, app_id=app, s_id=10 + sub)
    producer.put(0, 1)
    assert [(p.guid, p.sub_queue_ids) for p in foo.pushes()] == [(guid(1), (11,))]
    assert [(p.guid, p.sub_queue_ids) for p in bar.pushes()] == [(guid(1), (12,))]
    foo.confirm(1, 1, sub_queue_id=1)  # by subId
    bar.confirm(1, 1, sub_queue_id=12)  # by subscription id: not a sub-queue of this session
    assert not bar.session.closed  # a real broker logs it and ignores it
    assert "not open for reading" in broker.stats.improper[-1]
    listener = peer(broker)
    producer.put(1, 2)  # nobody listens yet: dropped
    listener.consumer(BROADCAST, q_id=4)
    producer.put(1, 3)
    assert [p.guid for p in listener.pushes()] == [guid(3)]


def test_consumer_without_extended_properties_gets_the_old_format(broker: Broker) -> None:
    producer = peer(broker)
    producer.producer(PRIORITY)
    old = peer(broker, features="PROTOCOL_ENCODING:JSON")
    old.consumer(PRIORITY)
    big = b"z" * 4000
    producer.put(0, 1, payload=big, properties=MessageProperties({"a": 1}), compression=1)
    (push,) = old.pushes()
    assert push.schema_id == 0 and push.compression == 0
    assert push.payload == big and dict(push.properties or {}) == {"a": 1}


def test_compressed_payload_passes_through(broker: Broker) -> None:
    producer, consumer = peer(broker), peer(broker)
    producer.producer(PRIORITY)
    consumer.consumer(PRIORITY)
    producer.put(0, 1, payload=b"y" * 5000, compression=1)
    (push,) = consumer.pushes()
    assert push.compression == 1 and push.payload == b"y" * 5000


# -- NACKs -------------------------------------------------------------------------------------------


def test_nacks(broker: Broker) -> None:
    p = peer(broker)
    p.producer(PRIORITY)
    p.open(PRIORITY + "x", 1, READ)
    p.put(0, 1, crc32c=0xDEADBEEF)  # wrong checksum
    p.put(7, 2)  # unknown queue id
    p.put(1, 3)  # opened for reading only
    p.put(0, 4)  # fine
    assert p.acks() == [
        (AckStatus.UNKNOWN, guid(1)),
        (AckStatus.UNKNOWN, guid(2)),
        (AckStatus.UNKNOWN, guid(3)),
        (AckStatus.SUCCESS, guid(4)),
    ]
    assert broker.stats.nacks == 3 and not p.session.closed


def test_one_put_event_for_several_queues_is_acked_and_delivered_in_order(broker: Broker) -> None:
    """The engine looks a handle up once per run of PUTs to one queue id and delivers once per
    event: interleaved queue ids, refusals in between and a duplicate GUID keep their order. As
    on a broker, the GUID repeated while its ACK is pending gets no ACK of its own (one answers
    both) and is not stored twice."""
    producer, first, second = peer(broker), peer(broker), peer(broker)
    producer.producer(PRIORITY, q_id=0)
    producer.producer(PRIORITY + "2", q_id=3)
    first.consumer(PRIORITY, s_id=1)
    second.consumer(PRIORITY + "2", s_id=2)
    builder = PutEventBuilder()
    plan = [(0, 1), (0, 2), (3, 3), (9, 4), (3, 5), (0, 6), (0, 1), (3, 7)]  # (qId, GUID number)
    for q_id, n in plan:
        builder.add(q_id, f"m{n}".encode(), guid=guid(n), ack_requested=True)
    (event,) = builder.finish()
    producer.send(event)
    unknown, success = AckStatus.UNKNOWN, AckStatus.SUCCESS
    answered = plan[:6] + plan[7:]
    assert producer.acks() == [(unknown if q_id == 9 else success, guid(n)) for q_id, n in answered]
    assert [p.payload for p in first.pushes()] == [b"m1", b"m2", b"m6"]
    assert [p.payload for p in second.pushes()] == [b"m3", b"m5", b"m7"]
    assert broker.stats.pushes == 6 and broker.stats.nacks == 1
    first.confirm(1, 1, 2, 6)
    second.confirm(1, 3, 5, 7, 3)  # the last one twice: improper, ignored
    assert broker.stats.confirms == 6 and broker.stats.improper_total == 2  # and the GUID
    assert all(q.held_messages == 0 == q.held_bytes for q in broker.store.queues.values())


def test_nack_is_sent_even_without_ack_requested(broker: Broker) -> None:
    p = peer(broker)
    builder = PutEventBuilder()
    builder.add(5, b"x", guid=guid(1), ack_requested=False)
    p.send(builder.finish()[0])
    assert p.acks() == [(AckStatus.UNKNOWN, guid(1))]


def test_post_after_close_is_nacked(broker: Broker) -> None:
    p = peer(broker)
    p.producer(PRIORITY)
    params = ctrl.QueueHandleParameters(uri=PRIORITY, q_id=0, flags=WRITE, write_count=1)
    assert p.request(
        close_queue=ctrl.CloseQueue(handle_parameters=params, is_final=True)
    ).close_queue_response
    p.put(0, 1)
    assert p.acks() == [(AckStatus.UNKNOWN, guid(1))]


# -- protocol violations: the connection is closed -------------------------------------------------


def violation(p: Peer, data: bytes, expected: str) -> None:
    p.send(data)
    assert p.session.closed, "the broker should have dropped the connection"
    assert expected in (p.session.close_reason or ""), p.session.close_reason


def test_unsupported_put_flags_close(broker: Broker) -> None:
    p = peer(broker)
    p.producer(PRIORITY)
    builder = PutEventBuilder()
    builder.add(0, b"x", guid=guid(1), flags=4)
    violation(p, builder.finish()[0], "unsupported PUT flags")


# -- what a real broker logs as #CLIENT_IMPROPER_BEHAVIOR and ignores: the session stays open -----


def improper(p: Peer, data: bytes, expected: str) -> None:
    broker = p.session.broker
    before = len(broker.stats.improper)
    p.send(data)
    assert not p.session.closed, p.session.close_reason
    assert len(broker.stats.improper) == before + 1
    assert expected in broker.stats.improper[-1]


def test_confirm_of_a_guid_confirmed_before_is_ignored(broker: Broker) -> None:
    producer, consumer = peer(broker), peer(broker)
    producer.producer(PRIORITY)
    consumer.consumer(PRIORITY)
    producer.put(0, 1)
    consumer.pushes()
    consumer.confirm(1, 1)
    builder = ConfirmEventBuilder()
    builder.add(1, guid(1), 0)  # the same message again
    improper(consumer, builder.finish()[0], "not an unconfirmed message")
    assert broker.stats.confirms == 1
    producer.put(0, 2)  # the session still works
    assert [m.guid for m in consumer.pushes()] == [guid(2)]


def test_confirm_for_a_queue_not_open_for_reading_is_ignored(broker: Broker) -> None:
    p = peer(broker)
    p.producer(PRIORITY)
    builder = ConfirmEventBuilder()
    builder.add(0, guid(1), 0)
    improper(p, builder.finish()[0], "not open for reading")
    assert broker.stats.confirms == 0 and broker.stats.violations == []


@pytest.mark.parametrize("event_type", [EventType.PUSH, EventType.ACK, EventType.STORAGE])
def test_broker_only_event_types_close(broker: Broker, event_type: EventType) -> None:
    p = peer(broker)
    violation(p, event_header_bytes(event_type, 12) + b"\0\0\0\0", "may not send")


def test_malformed_framing_closes(broker: Broker) -> None:
    p = peer(broker)
    violation(p, event_header_bytes(EventType.PUT, 4), "smaller than")


def test_truncated_put_closes(broker: Broker) -> None:
    p = peer(broker)
    p.producer(PRIORITY)
    builder = PutEventBuilder()
    builder.add(0, b"payload", guid=guid(1))
    event = bytearray(builder.finish()[0])
    event[8:12] = (0x0000FFFF).to_bytes(4, "big")  # message words far beyond the event
    violation(p, bytes(event), "PutHeader")


def test_garbage_control_message_closes(broker: Broker) -> None:
    p = peer(broker)
    violation(p, encode_control_event(b'{"openQueue": 5}', EncodingType.JSON), "")
    assert broker.stats.violations


def test_responses_from_a_client_close(broker: Broker) -> None:
    p = peer(broker)
    violation(
        p,
        p.encode(ctrl.ControlMessage(r_id=1, close_queue_response=ctrl.CloseQueueResponse())),
        "may not send",
    )


# -- heartbeats and disconnect ---------------------------------------------------------------------


def test_heartbeats(broker: Broker) -> None:
    p = peer(broker)
    p.send(HEARTBEAT_REQ_EVENT, now=0.1)
    assert [e.type for e in p.take()] == [EventType.HEARTBEAT_RSP]
    broker.on_timer(0.5)
    p.pump()
    assert p.take() == []  # not silent for a whole interval yet
    broker.on_timer(1.2)
    p.pump()
    assert [e.type for e in p.take()] == [EventType.HEARTBEAT_REQ]
    broker.on_timer(3.2)  # 3 intervals without a byte from the client
    p.pump()
    assert p.session.closed and "missed heartbeats" in (p.session.close_reason or "")


def test_disconnect_then_nothing_more(broker: Broker) -> None:
    p = peer(broker)
    p.producer(PRIORITY)
    reply = p.request(disconnect=ctrl.Disconnect())
    assert reply.disconnect_response is not None
    assert p.session.closed and p.session not in broker.sessions
    p.put(0, 1)
    assert p.acks() == []


def test_hooks_can_nack_and_rewrite_output() -> None:
    """BrokerHooks is the fault-injection seam: here it NACKs every other PUT and drops heartbeats."""
    from pybmq.sim.config import BrokerHooks
    from pybmq.sim.session import ClientSession

    class Faults(BrokerHooks):
        def __init__(self) -> None:
            self.count = 0

        def ack_status(
            self, session: ClientSession, queue_uri: str, guid: bytes, status: int
        ) -> int:
            self.count += 1
            return AckStatus.STORAGE_FAILURE if self.count % 2 == 0 else status

        def outgoing(self, session: ClientSession, data: bytes) -> bytes:
            return b"" if data == HEARTBEAT_REQ_EVENT else data

    PEERS.clear()
    broker = Broker(BrokerConfig(heartbeat_interval_ms=1000), hooks=Faults())
    p = peer(broker)
    p.producer(PRIORITY)
    p.put(0, 1, 2, 3)
    assert p.acks() == [
        (AckStatus.SUCCESS, guid(1)),
        (AckStatus.STORAGE_FAILURE, guid(2)),
        (AckStatus.SUCCESS, guid(3)),
    ]
    broker.on_timer(1.5)
    p.pump()
    assert p.take() == []  # the heartbeat request was dropped on its way out


def test_messages_held_by_a_dropped_subscription_can_still_be_confirmed(broker: Broker) -> None:
    """The close sequence (configure to nothing, then closeQueue) may cross the client's confirms."""
    producer, consumer, other = peer(broker), peer(broker), peer(broker)
    producer.producer(PRIORITY)
    consumer.consumer(PRIORITY, priority=2)
    other.consumer(PRIORITY, priority=1)
    producer.put(0, 1, 2)
    assert len(consumer.pushes()) == 2
    params = ctrl.StreamParameters(app_id="__default", subscriptions=[])
    assert consumer.request(
        configure_stream=ctrl.ConfigureStream(q_id=1, stream_parameters=params)
    ).configure_stream_response
    consumer.confirm(1, 1)
    assert not consumer.session.closed and other.pushes() == []
    handle = ctrl.QueueHandleParameters(uri=PRIORITY, q_id=1, flags=READ, read_count=1)
    consumer.request(close_queue=ctrl.CloseQueue(handle_parameters=handle, is_final=True))
    consumer.pump()
    assert [p.guid for p in other.pushes()] == [guid(2)]  # the unconfirmed one moves on
