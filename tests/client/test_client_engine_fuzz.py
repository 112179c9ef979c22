"""Whatever a broker sends, the engine answers with a typed ProtocolError (and a stopped session)
or accepts it; never another exception."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pybmq.client.engine import ClientEngine
from pybmq.client.events import SessionStopped
from pybmq.client.fsm import SessionState
from pybmq.errors import ProtocolError
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.wire.batches import AckEventBuilder
from pybmq.wire.control import HEARTBEAT_REQ_EVENT
from pybmq.wire.options import parse_options
from pybmq.wire.push import PushEventBuilder

from tests.helpers.engine import reply_bytes, sent_events, serve_control, started_engine

URI = "bmq://bmq.test.mem.priority/fuzz"


def engine_with_reader_and_writer() -> tuple[ClientEngine, list[bytes]]:
    """A started engine with one queue open for read+write and a few valid broker events."""
    engine, _ = started_engine()
    _op, handle = engine.open_queue(URI, 0.0, read=True, write=True)
    serve_control(engine)
    engine.next_events()
    qid = engine.queues[handle].qid
    guid = engine.post(handle, b"x", 0.0)
    engine.data_to_send()
    acks = AckEventBuilder()
    acks.add(0, 0, guid, qid)
    pushes = PushEventBuilder()
    pushes.add(
        qid, guid, b"payload", sub_queue_infos=[(engine.queues[handle].subscription_ids[0], None)]
    )
    samples = [*acks.finish(), *pushes.finish(), HEARTBEAT_REQ_EVENT]
    # A control message nobody asked for (unknown rId): logged and dropped.
    samples.append(reply_bytes(ctrl.ControlMessage(r_id=98, disconnect=ctrl.Disconnect())))
    return engine, samples


def feed(engine: ClientEngine, data: bytes) -> None:
    try:
        engine.receive_data(data, 1.0)
    except ProtocolError:
        assert engine.state is SessionState.STOPPED
        assert isinstance(engine.next_events()[-1], SessionStopped)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_random_bytes(data: bytes) -> None:
    engine, _ = engine_with_reader_and_writer()
    feed(engine, data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_valid_events(data: st.DataObject) -> None:
    engine, samples = engine_with_reader_and_writer()
    event = bytearray(data.draw(st.sampled_from(samples)))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(event) - 1))
        event[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(1, len(event)))
    feed(engine, bytes(event[:cut]))


def test_samples_are_valid_as_sent() -> None:
    """The unmutated samples are accepted (so the mutation test starts from good events)."""
    engine, samples = engine_with_reader_and_writer()
    for sample in samples:
        engine.receive_data(sample, 1.0)
    assert engine.state is SessionState.STARTED
    assert sent_events(engine)  # the heartbeat was answered


def test_options_area_past_the_event_is_a_protocol_error() -> None:
    """Found by the mutation test: a PUSH whose header words put its options area past the end of
    a 47-byte event. It raised a raw struct.error from inside the options walker."""
    engine, _ = engine_with_reader_and_writer()
    event = bytes.fromhex(
        "0000002f440200000000000d000003080000000040000000000000046b3fcc360eaa3367"
        "000000000c400003000064"
    )
    feed(engine, event)
    assert engine.state is SessionState.STOPPED


def test_parse_options_refuses_an_end_past_the_data() -> None:
    with pytest.raises(ProtocolError, match="past the 8-byte event"):
        parse_options(b"\0" * 8, 0, 12)
