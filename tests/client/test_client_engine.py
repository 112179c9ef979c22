"""The client engine driven purely with bytes: negotiation, heartbeats, request correlation and
deadlines, batching of posts and confirms, and stop failing everything still pending."""

from __future__ import annotations

import logging

import pytest
from pybmq._version import __version__
from pybmq.client.engine import ClientEngine
from pybmq.client.events import (
    AckReceived,
    AckStatus,
    MessageReceived,
    OperationCompleted,
    SessionStarted,
    SessionStopped,
)
from pybmq.client.fsm import QueueState, RemoteQueueState, SessionState
from pybmq.client.options import QueueOptions, SessionOptions
from pybmq.client.records import FLAG_ACK, FLAG_READ, FLAG_WRITE
from pybmq.errors import (
    BrokerError,
    InvalidTransitionError,
    RequestTimeoutError,
    SessionStoppedError,
    UsageError,
)
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import EventType
from pybmq.wire.batches import AckEventBuilder, iter_confirm
from pybmq.wire.control import (
    HEARTBEAT_REQ_EVENT,
    HEARTBEAT_RSP_EVENT,
    decode_control_as,
    encode_control,
)
from pybmq.wire.framing import event_header_bytes
from pybmq.wire.push import PushEventBuilder
from pybmq.wire.put import iter_put

from tests.helpers.engine import (
    broker_response,
    control,
    reply,
    sent_events,
    serve_control,
    started_engine,
)

URI = "bmq://bmq.test.mem.priority/q1"


def completed(events: list[object]) -> dict[int, OperationCompleted]:
    return {e.op_id: e for e in events if isinstance(e, OperationCompleted)}


def open_queue(engine: ClientEngine, uri: str = URI, **flags: bool) -> int:
    op_id, queue_id = engine.open_queue(uri, 0.0, **flags)
    serve_control(engine)
    done = completed(engine.next_events())
    assert done[op_id].error is None
    return queue_id


# ------------------------------------------------------------------ negotiation


def test_client_identity_is_the_first_event() -> None:
    engine = ClientEngine(SessionOptions(process_name="proc", host_name="h", pid=42))
    engine.start(0.0)
    assert engine.data_to_send() == b""  # nothing before the transport is up
    engine.connection_made(0.0)
    [event] = sent_events(engine)
    message, encoding = decode_control_as(event, ctrl.NegotiationMessage)
    assert encoding.name == "JSON"
    identity = message.client_identity
    assert identity is not None
    assert identity.client_type == ctrl.ClientType.E_TCPCLIENT
    assert identity.protocol_version == 1
    assert (identity.process_name, identity.pid, identity.host_name) == ("proc", 42, "h")
    assert identity.features == "PROTOCOL_ENCODING:JSON,BER;MPS:MESSAGE_PROPERTIES_EX"
    assert identity.user_agent == f"pybmq:{__version__}"
    assert len(identity.guid_info.client_id) == 12
    assert engine.state is SessionState.NEGOTIATING


def test_negotiation_picks_encoding_and_heartbeat_settings() -> None:
    engine = ClientEngine(SessionOptions(encodings=("BER", "JSON")))
    engine.start(0.0)
    engine.connection_made(0.0)
    engine.data_to_send()
    engine.receive_data(broker_response(heartbeat_ms=500), 0.0)
    [started] = engine.next_events()
    assert isinstance(started, SessionStarted)
    assert started.encoding == "BER" and engine.encoding == "BER"
    assert engine.heartbeat_interval == 0.5
    # Later requests use the agreed encoding.
    engine.open_queue(URI, 0.0, write=True)
    [event] = sent_events(engine)
    assert decode_control_as(event, ctrl.ControlMessage)[1].name == "BER"


def test_refused_negotiation_stops_the_session() -> None:
    engine = ClientEngine()
    engine.start(0.0)
    engine.connection_made(0.0)
    engine.receive_data(broker_response(category=ctrl.StatusCategory.E_REFUSED), 0.0)
    [stopped] = engine.next_events()
    assert isinstance(stopped, SessionStopped)
    assert isinstance(stopped.error, BrokerError) and stopped.error.category == "E_REFUSED"
    assert engine.state is SessionState.STOPPED


def test_no_common_encoding_is_a_protocol_error() -> None:
    engine = ClientEngine(SessionOptions(encodings=("JSON",)))
    engine.start(0.0)
    engine.connection_made(0.0)
    with pytest.raises(Exception, match="no common control encoding"):
        engine.receive_data(broker_response(features="PROTOCOL_ENCODING:BER"), 0.0)
    assert engine.state is SessionState.STOPPED


def test_engine_rejects_commands_out_of_order() -> None:
    engine = ClientEngine()
    with pytest.raises(InvalidTransitionError):
        engine.connection_made(0.0)
    engine.start(0.0)
    with pytest.raises(UsageError, match="not STARTED"):
        engine.open_queue(URI, 0.0, write=True)


# ------------------------------------------------------------------ heartbeats


def test_heartbeat_request_is_answered_at_once() -> None:
    engine, _ = started_engine()
    engine.receive_data(HEARTBEAT_REQ_EVENT, 1.0)
    assert engine.data_to_send() == HEARTBEAT_RSP_EVENT


def test_silent_broker_is_probed_then_dropped() -> None:
    # Reconnect is on by default (issue 28); this is about the session that ends on it.
    engine, _ = started_engine(options=SessionOptions(reconnect=False))
    assert engine.next_deadline() == 3.0
    engine.handle_timeout(3.0)
    assert engine.data_to_send() == HEARTBEAT_REQ_EVENT
    engine.handle_timeout(30.0)
    [stopped] = engine.next_events()
    assert isinstance(stopped, SessionStopped) and "no traffic" in stopped.reason


# ------------------------------------------------------------------ requests


def test_open_queue_sends_open_then_configure_and_tracks_both_states() -> None:
    engine, _ = started_engine()
    op_id, queue_id = engine.open_queue(URI + "?id=foo", 0.0, read=True)
    queue = engine.queues[queue_id]
    assert (queue.state, queue.remote) == (QueueState.OPENING, RemoteQueueState.CLOSED)
    [event] = sent_events(engine)
    request = control(event)
    params = request.open_queue.handle_parameters  # type: ignore[union-attr]
    assert params.uri == URI + "?id=foo" and params.q_id == queue.qid == 0
    assert params.flags == FLAG_READ and (params.read_count, params.write_count) == (1, 0)
    assert params.sub_id_info is not None and params.sub_id_info.app_id == "foo"
    reply(engine, request)
    assert (queue.state, queue.remote) == (QueueState.CONFIGURING, RemoteQueueState.OPENED)
    [event] = sent_events(engine)
    configure = control(event)
    stream = configure.configure_stream.stream_parameters  # type: ignore[union-attr]
    assert stream.app_id == "foo"
    [subscription] = stream.subscriptions
    assert subscription.consumers[0].max_unconfirmed_messages == 1000
    reply(engine, configure)
    assert (queue.state, queue.remote) == (QueueState.OPENED, RemoteQueueState.CONFIGURED)
    assert completed(engine.next_events())[op_id].error is None


def test_writer_opens_with_ack_flag_and_no_configure() -> None:
    engine, _ = started_engine()
    op_id, queue_id = engine.open_queue(URI, 0.0, write=True)
    assert serve_control(engine) == ["open_queue"]
    assert engine.queues[queue_id].flags == FLAG_WRITE | FLAG_ACK
    assert completed(engine.next_events())[op_id].error is None


def test_request_timeout_then_late_response_is_dropped(caplog: pytest.LogCaptureFixture) -> None:
    # Issue 28: open's default timeout is upstream's 300 s, and a timed-out open closes the
    # channel by default; this test is about the engine that keeps it, with a 30 s timeout.
    options = SessionOptions(open_timeout=30.0, close_timeout=30.0, close_channel_on_timeout=False)
    engine, _ = started_engine(options=options)
    op_id, queue_id = engine.open_queue(URI, 0.0, write=True)
    [event] = sent_events(engine)
    request = control(event)
    assert engine.next_deadline() == pytest.approx(3.0)  # heartbeat first
    engine.handle_timeout(29.0)
    assert completed(engine.next_events()) == {}
    engine.receive_data(HEARTBEAT_RSP_EVENT, 29.5)  # keep the session alive
    engine.handle_timeout(30.0)
    error = completed(engine.next_events())[op_id].error
    assert isinstance(error, RequestTimeoutError) and "openQueue" in str(error)
    assert queue_id not in engine.queues
    with caplog.at_level(logging.WARNING, logger="pybmq.client.engine"):
        reply(engine, request, 31.0)
    assert engine.next_events() == []
    assert "late open" in caplog.text
    # The broker opened it after all: the engine detaches again, for nobody's operation.
    [event] = [e for e in sent_events(engine) if e.header.type == EventType.CONTROL]
    close = control(event)
    assert close.close_queue is not None and close.close_queue.is_final
    assert close.close_queue.handle_parameters.uri == URI
    reply(engine, close, 31.5)
    assert engine.next_events() == []
    # Any other late or unknown response is only logged.
    with caplog.at_level(logging.WARNING, logger="pybmq.client.engine"):
        reply(engine, close, 32.0)
    assert "late or unknown response" in caplog.text
    assert engine.data_to_send() == b""


def test_broker_failure_status_fails_the_operation() -> None:
    engine, _ = started_engine()
    op_id, _queue_id = engine.open_queue(URI, 0.0, write=True)
    [event] = sent_events(engine)
    request = control(event)
    failure = ctrl.ControlMessage(
        r_id=request.r_id,
        status=ctrl.Status(
            category=ctrl.StatusCategory.E_REFUSED, code=-1, message="no such domain"
        ),
    )
    engine.receive_data(encode_control(failure, "JSON"), 0.0)
    error = completed(engine.next_events())[op_id].error
    assert isinstance(error, BrokerError) and "no such domain" in str(error)


def test_close_reader_configures_to_nothing_then_closes_final() -> None:
    engine, _ = started_engine()
    queue_id = open_queue(engine, read=True)
    op_id = engine.close_queue(queue_id, 0.0)
    [event] = sent_events(engine)
    configure = control(event)
    assert configure.configure_stream.stream_parameters.subscriptions == []  # type: ignore[union-attr]
    reply(engine, configure)
    [event] = sent_events(engine)
    close = control(event)
    assert close.close_queue.is_final is True  # type: ignore[union-attr]
    reply(engine, close)
    assert completed(engine.next_events())[op_id].error is None
    assert queue_id not in engine.queues


def test_only_the_last_handle_of_a_shared_queue_id_closes_final() -> None:
    """As the C++ SDK: appIds and the writer of one queue share a qId, and the broker releases
    the whole qId on a final close, so only the last of them closes with isFinal."""
    engine, _ = started_engine()
    fanout = "bmq://bmq.test.mem.fanout/shared"
    handles = [
        open_queue(engine, fanout + "?id=foo", read=True),
        open_queue(engine, fanout + "?id=bar", read=True),
        open_queue(engine, fanout, write=True),
    ]
    finals = []
    for queue_id in handles:
        engine.close_queue(queue_id, 0.0)
        for _ in range(2):
            events = sent_events(engine)
            if not events:
                break
            request = control(events[0])
            if request.close_queue is not None:
                finals.append(request.close_queue.is_final)
            reply(engine, request)
    assert finals == [False, False, True]
    assert not engine.queues


def test_stop_closes_queues_disconnects_and_fails_pending() -> None:
    engine, _ = started_engine()
    reader = open_queue(engine, read=True)
    writer = open_queue(engine, URI.replace("q1", "q2"), write=True)
    engine.post(writer, b"x", 0.0, context="ctx")
    pending_op, _ = engine.open_queue(URI.replace("q1", "q3"), 0.0, write=True)
    stop_op = engine.stop(0.0)
    with pytest.raises(SessionStoppedError):
        engine.post(writer, b"y", 0.0)
    events = engine.next_events()
    assert isinstance(completed(events)[pending_op].error, SessionStoppedError)
    kinds = serve_control(engine)
    assert kinds[:4] == ["open_queue", "configure_stream", "close_queue", "close_queue"]
    assert kinds[-1] == "disconnect"
    events = engine.next_events()
    assert completed(events)[stop_op].error is None
    acks = [e for e in events if isinstance(e, AckReceived)]
    assert [(a.ack.status, a.context) for a in acks] == [(AckStatus.CANCELED, "ctx")]
    assert isinstance(events[-1], SessionStopped)
    assert engine.state is SessionState.STOPPED
    assert reader not in engine.queues


def test_connection_lost_fails_every_pending_operation_and_post() -> None:
    # Reconnect is on by default (issue 28); this is about the session that ends on it.
    engine, _ = started_engine(options=SessionOptions(reconnect=False))
    writer = open_queue(engine, write=True)
    engine.post(writer, b"x", 0.0, context=1)
    op_id, _ = engine.open_queue(URI.replace("q1", "q2"), 0.0, read=True)
    engine.connection_lost(1.0, ConnectionResetError("reset"))
    events = engine.next_events()
    assert isinstance(completed(events)[op_id].error, SessionStoppedError)
    [ack] = [e for e in events if isinstance(e, AckReceived)]
    assert ack.ack.status is AckStatus.NOT_CONNECTED and ack.ack.local
    assert isinstance(events[-1], SessionStopped) and "reset" in events[-1].reason


def test_post_validation() -> None:
    engine, _ = started_engine()
    reader = open_queue(engine, read=True)
    writer = open_queue(engine, URI.replace("q1", "q2"), write=True)
    with pytest.raises(UsageError, match="empty payload"):
        engine.post(writer, b"", 0.0)
    with pytest.raises(UsageError, match="must be bytes"):
        engine.post(writer, "text", 0.0)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="no property type"):
        engine.post(writer, b"x", 0.0, properties={"bad": 1.5})
    with pytest.raises(UsageError, match="write=True"):
        engine.post(reader, b"x", 0.0)
    with pytest.raises(UsageError, match="not open"):
        engine.post(99, b"x", 0.0)
    with pytest.raises(UsageError, match="bmq://"):
        engine.open_queue("http://x/y", 0.0, read=True)
    with pytest.raises(UsageError, match="already open"):
        engine.open_queue(URI, 0.0, read=True)


def test_unexpected_event_type_is_a_protocol_error() -> None:
    engine, _ = started_engine()
    junk = event_header_bytes(EventType.STORAGE, 8)
    with pytest.raises(Exception, match="unexpected event type"):
        engine.receive_data(junk, 0.0)
    assert isinstance(engine.next_events()[-1], SessionStopped)


# ------------------------------------------------------------------ data plane


def test_posts_of_one_turn_leave_in_one_put_event() -> None:
    engine, _ = started_engine()
    writer = open_queue(engine, write=True)
    guids = [engine.post(writer, b"payload-%d" % i, 0.0, context=i) for i in range(50)]
    guids.append(engine.post(writer, b"with props", 0.0, properties={"k": "v", "n": 3}))
    assert engine.buffered_count == 51
    [event] = sent_events(engine)
    assert event.header.type == EventType.PUT
    puts = list(iter_put(event))
    assert [p.guid for p in puts] == guids
    assert [p.payload for p in puts[:50]] == [b"payload-%d" % i for i in range(50)]
    assert all(p.ack_requested for p in puts)
    assert dict(puts[-1].properties or {}) == {"k": "v", "n": 3}
    assert len({p.queue_id for p in puts}) == 1
    assert engine.data_to_send() == b""  # nothing left over


def test_post_without_ack_asks_for_none_and_is_not_tracked() -> None:
    engine, _ = started_engine()
    writer = open_queue(engine, write=True)
    engine.post(writer, b"quiet", 0.0, ack=False)
    engine.post(writer, b"acked", 0.0, context="ctx")
    engine.post(writer, b"quiet again", 0.0, ack=False)
    [event] = sent_events(engine)
    assert [(p.payload, p.ack_requested) for p in iter_put(event)] == [
        (b"quiet", False),
        (b"acked", True),
        (b"quiet again", False),
    ]
    assert engine.unacked_count == 1
    with pytest.raises(UsageError, match="no ACK will come"):
        engine.post(writer, b"x", 0.0, context="ctx", ack=False)


def test_ack_resolves_the_matching_post_and_unknown_acks_are_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine, _ = started_engine()
    writer = open_queue(engine, write=True)
    g1 = engine.post(writer, b"a", 0.0, context="first")
    g2 = engine.post(writer, b"b", 0.0, context="second")
    [event] = sent_events(engine)
    qid = next(iter_put(event)).queue_id
    acks = AckEventBuilder()
    acks.add(0, 0, g2, qid)
    acks.add(2, 0, g1, qid)  # LIMIT_BYTES
    acks.add(0, 0, b"\x01" * 16, qid)  # never posted
    [ack_event] = acks.finish()
    with caplog.at_level(logging.INFO, logger="pybmq.client.engine"):
        engine.receive_data(ack_event, 1.0)
    results = [
        (e.context, e.ack.status) for e in engine.next_events() if isinstance(e, AckReceived)
    ]
    assert results == [("second", AckStatus.SUCCESS), ("first", AckStatus.LIMIT_BYTES)]
    assert "unknown or expired GUID" in caplog.text
    assert engine.unacked_count == 0


def test_missing_ack_becomes_a_local_timeout_nack() -> None:
    engine, _ = started_engine()
    writer = open_queue(engine, write=True)
    guid = engine.post(writer, b"a", 0.0, context="ctx")
    engine.data_to_send()
    engine.receive_data(HEARTBEAT_REQ_EVENT, 29.0)
    engine.handle_timeout(29.9)
    assert not [e for e in engine.next_events() if isinstance(e, AckReceived)]
    engine.handle_timeout(30.0)
    [nack] = [e for e in engine.next_events() if isinstance(e, AckReceived)]
    assert nack.context == "ctx" and nack.ack.guid == guid
    assert nack.ack.status is AckStatus.TIMEOUT and nack.ack.local and "30s" in nack.ack.reason


def test_compression_above_the_threshold_only() -> None:
    engine = ClientEngine(SessionOptions(compression_threshold=1024))
    engine.start(0.0)
    engine.connection_made(0.0)
    engine.data_to_send()
    engine.receive_data(broker_response(), 0.0)
    writer = open_queue(engine, write=True)
    big = b"abc" * 2000
    engine.post(writer, big, 0.0)
    engine.post(writer, b"small", 0.0)
    [event] = sent_events(engine)
    first, second = iter_put(event, decompress=False)
    assert first.compression == 1 and len(first.payload) < len(big)
    assert second.compression == 0 and second.payload == b"small"
    assert [p.payload for p in iter_put(event)] == [big, b"small"]


def test_push_dispatch_in_order_and_confirms_batched() -> None:
    engine, _ = started_engine()
    plain = open_queue(engine, read=True)
    fanout_uri = "bmq://bmq.test.mem.fanout/f1"
    foo = open_queue(engine, fanout_uri + "?id=foo", read=True)
    qid_plain = engine.queues[plain].qid
    qid_fan = engine.queues[foo].qid
    sub_foo = engine.queues[foo].sub_id
    assert sub_foo != 0
    pushes = PushEventBuilder()
    guids = [bytes([0x40, i]) + b"\0" * 14 for i in range(6)]
    for i, guid in enumerate(guids[:5]):
        pushes.add(qid_plain, guid, b"m%d" % i)
    pushes.add(qid_fan, guids[5], b"fan", sub_queue_infos=[(sub_foo, None)])
    [event] = pushes.finish()
    engine.receive_data(event, 0.0)
    messages = [e.message for e in engine.next_events() if isinstance(e, MessageReceived)]
    assert [(m.queue_id, m.payload) for m in messages] == [
        *[(plain, b"m%d" % i) for i in range(5)],
        (foo, b"fan"),
    ]
    for message in messages:
        engine.confirm(message.queue_id, message.guid)
    [confirm_event] = sent_events(engine)
    confirms = list(iter_confirm(confirm_event))
    assert [(c.queue_id, c.guid, c.sub_queue_id) for c in confirms] == [
        *[(qid_plain, g, 0) for g in guids[:5]],
        (qid_fan, guids[5], sub_foo),
    ]


def test_push_for_an_unknown_queue_is_a_protocol_error() -> None:
    engine, _ = started_engine()
    pushes = PushEventBuilder()
    pushes.add(7, b"\x40" + b"\0" * 15, b"stray")
    [event] = pushes.finish()
    with pytest.raises(Exception, match="PUSH for unknown queue id 7"):
        engine.receive_data(event, 0.0)
    assert engine.state is SessionState.STOPPED


def test_subscription_expressions_and_flow_control_go_into_configure_stream() -> None:
    engine, _ = started_engine()
    options = QueueOptions(
        max_unconfirmed_messages=10,
        max_unconfirmed_bytes=4096,
        consumer_priority=7,
        subscriptions=("price > 10", 'kind == "x"'),
    )
    _op, _queue_id = engine.open_queue(URI, 0.0, read=True, options=options)
    reply(engine, control(sent_events(engine)[0]))
    [event] = sent_events(engine)
    stream = control(event).configure_stream.stream_parameters  # type: ignore[union-attr]
    assert [s.expression.text for s in stream.subscriptions] == ["price > 10", 'kind == "x"']
    assert {s.expression.version for s in stream.subscriptions} == {
        ctrl.ExpressionVersion.E_VERSION_1
    }
    assert len({s.s_id for s in stream.subscriptions}) == 2
    for subscription in stream.subscriptions:
        [consumer] = subscription.consumers
        assert (consumer.max_unconfirmed_messages, consumer.max_unconfirmed_bytes) == (10, 4096)
        assert (consumer.consumer_priority, consumer.consumer_priority_count) == (7, 1)


def test_failed_configure_fails_the_open_and_releases_the_queue() -> None:
    engine, _ = started_engine()
    op_id, queue_id = engine.open_queue(URI, 0.0, read=True)
    reply(engine, control(sent_events(engine)[0]))
    [event] = sent_events(engine)
    configure = control(event)
    refusal = ctrl.ControlMessage(
        r_id=configure.r_id,
        status=ctrl.Status(category=ctrl.StatusCategory.E_NOT_SUPPORTED, code=-1, message="no"),
    )
    engine.receive_data(encode_control(refusal, "JSON"), 0.0)
    error = completed(engine.next_events())[op_id].error
    assert isinstance(error, BrokerError) and error.category == "E_NOT_SUPPORTED"
    [event] = sent_events(engine)
    close = control(event)
    assert close.close_queue is not None  # the broker had opened it: detach again
    reply(engine, close)
    assert queue_id not in engine.queues


def test_acknowledged_batches_release_their_guids_before_the_deadline() -> None:
    engine, _ = started_engine()
    writer = open_queue(engine, write=True)
    first = [engine.post(writer, b"a", 0.0) for _ in range(3)]
    engine.data_to_send()
    second = [engine.post(writer, b"b", 0.0) for _ in range(2)]
    [event] = sent_events(engine)
    qid = next(iter_put(event)).queue_id
    assert engine.pending_ack_batches == 2
    acks = AckEventBuilder()
    for guid in first:
        acks.add(0, 0, guid, qid)
    [ack_event] = acks.finish()
    engine.receive_data(ack_event, 1.0)
    assert engine.pending_ack_batches == 1  # the first flush is fully acknowledged: dropped
    engine.handle_timeout(30.0)
    nacks = [e.ack for e in engine.next_events() if isinstance(e, AckReceived) and e.ack.local]
    assert [n.guid for n in nacks] == second
    assert engine.pending_ack_batches == 0
