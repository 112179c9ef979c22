"""The engine's byte budget (``SessionOptions.max_buffered_bytes``), bytes only: what it
counts through a post's life (buffered, sent and kept for retransmission, ACKed, timed out,
requeued after a drop, cancelled), and when ``post`` refuses."""

from __future__ import annotations

import pytest
from pybmq.client.events import AckReceived, AckStatus
from pybmq.client.options import SessionOptions
from pybmq.errors import PostBufferFullError
from pybmq.generated.wire_codec import EventType
from pybmq.wire.batches import AckEventBuilder
from pybmq.wire.put import iter_put

from tests.client.test_client_engine import open_queue
from tests.helpers.engine import broker_response, sent_events, serve_control, started_engine

URI = "bmq://bmq.test.mem.priority/budget"
KIB = 1024


def _ack(engine: object, guids: list[bytes], qid: int, now: float = 1.0) -> None:
    acks = AckEventBuilder()
    acks.add_many((0, 0, guid, qid) for guid in guids)
    for event in acks.finish():
        engine.receive_data(event, now)  # type: ignore[attr-defined]


def test_a_post_counts_until_its_batch_is_acknowledged() -> None:
    engine, _ = started_engine(options=SessionOptions(max_buffered_bytes=64 * KIB))
    writer = open_queue(engine, URI, write=True)
    guids = [engine.post(writer, b"a" * KIB, 0.0) for _ in range(10)]
    assert engine.held_bytes == engine.unsent_bytes == 10 * KIB
    [event] = sent_events(engine)  # sent: kept for retransmission until the ACK
    assert engine.held_bytes == 10 * KIB and engine.unsent_bytes == 0
    qid = next(iter(iter_put(event))).queue_id
    _ack(engine, guids[:9], qid)
    assert engine.held_bytes == 10 * KIB  # released with the batch's last ACK
    _ack(engine, guids[9:], qid)
    assert engine.held_bytes == 0


def test_post_refuses_past_the_budget_counting_the_socket_too() -> None:
    engine, _ = started_engine(options=SessionOptions(max_buffered_bytes=4 * KIB))
    writer = open_queue(engine, URI, write=True)
    engine.post(writer, b"b" * (3 * KIB), 0.0)
    engine.post(writer, b"b" * (3 * KIB), 0.0)  # admitted while under: crosses it
    with pytest.raises(PostBufferFullError, match="6144 bytes held"):
        engine.post(writer, b"c", 0.0)
    assert engine.room(1) is not None
    sent_events(engine)
    engine.output_buffered(0)
    assert engine.held_bytes == 6 * KIB  # kept until the ACK
    small, _ = started_engine(options=SessionOptions(max_buffered_bytes=4 * KIB, reconnect=False))
    writer = open_queue(small, URI, write=True)
    small.post(writer, b"d" * (3 * KIB), 0.0)
    sent_events(small)
    assert small.held_bytes == 0  # not kept without reconnect: the socket holds it now
    small.output_buffered(5 * KIB)
    with pytest.raises(PostBufferFullError, match="5120 in the socket"):
        small.post(writer, b"e", 0.0)
    small.output_buffered(0)
    small.post(writer, b"e", 0.0)


def test_timeouts_cancels_and_drops_give_the_bytes_back() -> None:
    options = SessionOptions(max_buffered_bytes=1 << 20, ack_timeout=5.0)
    engine, _ = started_engine(options=options)
    writer = open_queue(engine, URI, write=True)
    for _ in range(4):
        engine.post(writer, b"t" * KIB, 0.0)
    sent_events(engine)
    engine.handle_timeout(10.0)  # no ACK within ack_timeout: local TIMEOUT NACKs
    timeouts = [e for e in engine.next_events() if isinstance(e, AckReceived)]
    assert {e.ack.status for e in timeouts} == {AckStatus.TIMEOUT} and len(timeouts) == 4
    assert engine.held_bytes == 0
    # A drop requeues what was sent: it counts as not sent again, and as kept once resent.
    guids = [engine.post(writer, b"r" * KIB, 10.0) for _ in range(3)]
    [first] = [e for e in sent_events(engine) if e.header.type == EventType.PUT]
    qid = next(iter(iter_put(first))).queue_id
    engine.output_buffered(2 * KIB)
    engine.connection_lost(11.0, None)
    assert engine.held_bytes == engine.unsent_bytes == 3 * KIB
    assert engine.room(1) is None  # the dead connection's socket no longer counts
    engine.connection_made(12.0)
    sent_events(engine)  # the ClientIdentity
    engine.receive_data(broker_response(), 12.0)
    serve_control(engine, 12.0)  # reopened: the posts went again, with their GUIDs
    assert engine.held_bytes == 3 * KIB and engine.unsent_bytes == 0
    _ack(engine, guids, qid, now=13.0)
    assert engine.held_bytes == 0
    # Closing the queue with a post unacknowledged: it is cancelled, its bytes given back.
    engine.post(writer, b"c" * KIB, 14.0)
    engine.close_queue(writer, 14.0)  # the post leaves first, then the close
    assert engine.held_bytes == KIB
    serve_control(engine, 14.0)
    cancelled = [e for e in engine.next_events() if isinstance(e, AckReceived)]
    assert [e.ack.status for e in cancelled][-1:] == [AckStatus.CANCELED]
    assert engine.held_bytes == 0
