"""Whatever a client sends, the simulator's broker engine logs a violation and closes the session
or accepts it; never another exception. Plus memory bounds for both engines under long streams."""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pybmq.client.engine import ClientEngine
from pybmq.client.fsm import SessionState
from pybmq.client.options import SessionOptions
from pybmq.errors import ProtocolError
from pybmq.generated.wire_codec import EventType
from pybmq.sim.broker import Broker
from pybmq.wire.batches import AckEventBuilder, ConfirmEventBuilder
from pybmq.wire.control import HEARTBEAT_REQ_EVENT, HEARTBEAT_RSP_EVENT
from pybmq.wire.put import PutEventBuilder

from tests.helpers.engine import broker_response, serve_control
from tests.sim.test_sim_engine import PEERS, PRIORITY, Peer, guid, peer

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def ready_peer() -> tuple[Broker, Peer, list[bytes]]:
    """A negotiated client with a producer and a consumer queue, and valid events it could send."""
    PEERS.clear()
    broker = Broker()
    p = peer(broker)
    p.producer(PRIORITY, q_id=0)
    p.consumer(PRIORITY, q_id=1)
    puts = PutEventBuilder()
    puts.add(0, b"payload", guid=guid(1), ack_requested=True)
    confirms = ConfirmEventBuilder()
    confirms.add(1, guid(1), 0)
    samples = [
        *puts.finish(),
        *confirms.finish(),
        HEARTBEAT_REQ_EVENT,
        HEARTBEAT_RSP_EVENT,
    ]
    return broker, p, samples


def feed_broker(p: Peer, data: bytes) -> None:
    p.session.receive_data(data, 1.0)  # must not raise: violations close the session
    p.pump()
    if p.session.closed:
        reason = p.session.close_reason or ""
        assert reason.startswith("protocol violation") or reason == "client disconnected", reason


@SETTINGS
@given(st.binary(max_size=300))
def test_broker_random_bytes_after_negotiation(data: bytes) -> None:
    _, p, _ = ready_peer()
    feed_broker(p, data)


@SETTINGS
@given(st.binary(max_size=300))
def test_broker_random_bytes_before_negotiation(data: bytes) -> None:
    PEERS.clear()
    p = Peer(Broker())
    PEERS[id(p.session)] = p
    feed_broker(p, data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_broker_mutated_valid_events(data: st.DataObject) -> None:
    _, p, samples = ready_peer()
    event = bytearray(data.draw(st.sampled_from(samples)))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(event) - 1))
        event[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(1, len(event)))
    feed_broker(p, bytes(event[:cut]))


def test_broker_samples_are_valid_as_sent() -> None:
    _, p, samples = ready_peer()
    for sample in samples:
        feed_broker(p, sample)
    assert not p.session.closed


@SETTINGS
@given(st.binary(max_size=300))
def test_reconnecting_client_still_stops_on_malformed_bytes(data: bytes) -> None:
    """Reconnect is for lost connections; a broker that sends garbage is a ProtocolError."""
    engine = ClientEngine(SessionOptions(reconnect=True))
    engine.start(0.0)
    engine.connection_made(0.0)
    engine.data_to_send()
    engine.receive_data(broker_response(), 0.0)
    try:
        engine.receive_data(data, 1.0)
    except ProtocolError:
        assert engine.state is SessionState.STOPPED


def test_oversized_event_header_is_refused_at_once_by_both_engines() -> None:
    """A length beyond the protocol's maximum is refused from its first 4 bytes, not buffered."""
    huge = (0x7FFFFFF0).to_bytes(4, "big") + bytes(4)
    engine = ClientEngine()
    engine.start(0.0)
    engine.connection_made(0.0)
    engine.data_to_send()
    engine.receive_data(broker_response(), 0.0)
    with pytest.raises(ProtocolError, match="length"):
        engine.receive_data(huge, 1.0)
    assert engine.state is SessionState.STOPPED
    _, p, _ = ready_peer()
    feed_broker(p, huge)
    assert p.session.closed


def _growth(rounds: int, one_round: object) -> int:
    """Bytes still allocated after ``rounds`` more rounds, once a warm-up has run."""
    run = one_round  # type: ignore[assignment]
    for _ in range(200):
        run()  # type: ignore[operator]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(rounds):
            run()  # type: ignore[operator]
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_client_engine_memory_is_bounded_over_a_long_stream() -> None:
    """Heartbeats, unknown ACKs and late responses, drained like a shell does: nothing piles up."""
    engine = ClientEngine()
    engine.start(0.0)
    engine.connection_made(0.0)
    engine.data_to_send()
    engine.receive_data(broker_response(), 0.0)
    _op, handle = engine.open_queue(PRIORITY, 0.0, write=True)
    serve_control(engine)
    engine.next_events()
    qid = engine.queues[handle].qid
    acks = AckEventBuilder()
    acks.add(0, 0, guid(99), qid)  # an ACK for a GUID we never posted: logged, dropped
    (unknown_ack,) = acks.finish()
    now = [1.0]

    def one_round() -> None:
        now[0] += 0.01
        engine.post(handle, b"m", now[0])
        engine.data_to_send()
        engine.receive_data(HEARTBEAT_REQ_EVENT + unknown_ack, now[0])
        engine.handle_timeout(now[0])
        engine.data_to_send()
        engine.next_events()

    # Posts are never ACKed here, but they expire at the ACK timeout (30 s = 3000 rounds).
    assert _growth(6000, one_round) < 2_000_000
    assert engine.unacked_count <= 3001


def test_broker_session_memory_is_bounded_over_a_long_stream() -> None:
    _, p, _ = ready_peer()
    n = [1000]

    def one_round() -> None:
        n[0] += 1
        p.put(0, n[0])  # stored, pushed to our consumer, confirmed: nothing stays
        for push in p.pushes():
            confirms = ConfirmEventBuilder()
            confirms.add(1, push.guid, 0)
            for event in confirms.finish():
                p.send(event)
        p.send(HEARTBEAT_REQ_EVENT)
        p.take(EventType.HEARTBEAT_RSP)
        p.take()

    # The de-duplication window keeps each GUID for 300 s of the clock we pass (always 0 here):
    # about 100 bytes a message, so 3000 messages stay well under the bound below.
    assert _growth(3000, one_round) < 2_000_000
    assert not p.session.closed
