"""The engine's batch entry points (``post_many``, ``confirm_many``) and the shortcuts of its
hot paths (properties cached by content, one route check per PUSH event), bytes only."""

from __future__ import annotations

import pytest
from pybmq.client.events import AckReceived, AckStatus, MessageReceived
from pybmq.client.options import SessionOptions
from pybmq.errors import SessionStoppedError, UsageError
from pybmq.generated.wire_codec import PUT_MAX_PAYLOAD_SIZE_SOFT, EventType, PropertyType
from pybmq.wire.batches import AckEventBuilder, iter_confirm
from pybmq.wire.push import PushEventBuilder
from pybmq.wire.put import iter_put

from tests.client.test_client_engine import open_queue
from tests.helpers.engine import sent_events, started_engine

URI = "bmq://bmq.test.mem.priority/batches"


def test_post_many_is_post_in_a_loop_in_one_put_event() -> None:
    engine, _ = started_engine()
    writer = open_queue(engine, URI, write=True)
    payloads = [b"m-%d" % i for i in range(300)]
    guids = engine.post_many(writer, payloads, 0.0, properties={"k": "v", "n": 3}, context="c")
    assert len(set(guids)) == 300 and engine.unacked_count == 300
    [event] = sent_events(engine)
    puts = list(iter_put(event, verify_crc=True))
    assert [(p.guid, p.payload) for p in puts] == list(zip(guids, payloads, strict=True))
    assert all(p.ack_requested and dict(p.properties or {}) == {"k": "v", "n": 3} for p in puts)
    acks = AckEventBuilder()
    acks.add_many((0, 0, guid, puts[0].queue_id) for guid in reversed(guids))
    for ack_event in acks.finish():
        engine.receive_data(ack_event, 1.0)
    resolved = [e for e in engine.next_events() if isinstance(e, AckReceived)]
    assert [e.ack.guid for e in resolved] == guids[::-1]
    assert all(e.context == "c" and e.ack.status is AckStatus.SUCCESS for e in resolved)
    assert all(e.ack.queue_uri == URI for e in resolved)
    assert engine.unacked_count == 0 and engine.pending_ack_batches == 0


def test_post_many_is_all_or_nothing() -> None:
    engine, _ = started_engine()
    writer = open_queue(engine, URI, write=True)
    reader = open_queue(engine, URI.replace("batches", "reader"), read=True)
    too_big = bytes(PUT_MAX_PAYLOAD_SIZE_SOFT + 1)
    cases = [
        ([b"a", b"", b"c"], "empty payload"),
        ([b"a", "text"], "payload must be bytes, not str"),
        ([b"a", too_big], f"payload of {PUT_MAX_PAYLOAD_SIZE_SOFT + 1} bytes exceeds the limit"),
    ]
    for payloads, error in cases:
        with pytest.raises(UsageError, match=error):
            engine.post_many(writer, payloads, 0.0)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="no property type"):
        engine.post_many(writer, [b"a"], 0.0, properties={"bad": 1.5})
    with pytest.raises(UsageError, match="write=True"):
        engine.post_many(reader, [b"a"], 0.0)
    assert engine.buffered_count == 0 and engine.unacked_count == 0
    assert engine.data_to_send() == b""
    # bytes-like payloads are taken (copied) like post() takes them
    engine.post_many(writer, [bytearray(b"ba"), memoryview(b"mv")], 0.0)
    [event] = sent_events(engine)
    assert [p.payload for p in iter_put(event)] == [b"ba", b"mv"]


def test_post_many_after_stop_is_a_session_error() -> None:
    # Reconnect is on by default (issue 28); this is about the session that ends on it.
    engine, _ = started_engine(options=SessionOptions(reconnect=False))
    writer = open_queue(engine, URI, write=True)
    engine.connection_lost(1.0, ConnectionResetError("reset"))
    with pytest.raises(SessionStoppedError):
        engine.post_many(writer, [b"a"], 1.0)


def test_properties_cached_by_content_keep_their_types() -> None:
    engine, _ = started_engine()
    writer = open_queue(engine, URI, write=True)
    engine.post(writer, b"1", 0.0, properties={"x": True})
    engine.post(writer, b"2", 0.0, properties={"x": 1})  # equal to True, but an INT32
    engine.post(writer, b"3", 0.0, properties={"x": True})
    engine.post(writer, b"4", 0.0, properties={"x": bytearray(b"raw")})  # unhashable: not cached
    engine.post(writer, b"5", 0.0, properties={"x": (PropertyType.INT64, 1)})
    engine.post(writer, b"6", 0.0, properties={"x": (PropertyType.INT32, 1)})
    with pytest.raises(UsageError, match="INT32 needs an int"):  # (INT32, True) == (INT32, 1)
        engine.post(writer, b"7", 0.0, properties={"x": (PropertyType.INT32, True)})
    [event] = sent_events(engine)
    types = [p.properties.get_typed("x") for p in iter_put(event)]  # type: ignore[union-attr]
    assert types == [
        (PropertyType.BOOL, True),
        (PropertyType.INT32, 1),
        (PropertyType.BOOL, True),
        (PropertyType.BINARY, b"raw"),
        (PropertyType.INT64, 1),
        (PropertyType.INT32, 1),
    ]


def test_a_small_properties_cache_still_posts_correctly() -> None:
    engine, _ = started_engine()
    writer = open_queue(engine, URI, write=True)
    for i in range(600):  # more distinct mappings than the cache holds
        engine.post(writer, b"p", 0.0, properties={"i": i})
    assert 0 < len(engine.publisher.properties_cache) <= 256
    engine.post(writer, b"p", 0.0, properties={"big": bytes(2048)})  # too big to be kept
    assert not any(
        len(props.encode()) > 1024 for props, _ in engine.publisher.properties_cache.values()
    )
    engine.data_to_send()
    for i in range(600):
        engine.post(writer, b"p", 0.0, properties={"i": i})
    [event] = sent_events(engine)
    assert [p.properties["i"] for p in iter_put(event)] == list(range(600))  # type: ignore[index]


def test_confirm_many_is_one_confirm_event_and_skips_an_old_generation() -> None:
    engine, _ = started_engine()
    reader = open_queue(engine, URI, read=True)
    record = engine.queues[reader]
    guids = [bytes([0x40, i]) + bytes(14) for i in range(100)]
    engine.confirm_many(reader, guids[:60], engine.generation)
    engine.confirm_many(reader, guids[60:])
    engine.confirm_many(reader, [b"\x01" * 16], engine.generation + 1)  # an earlier connection
    [event] = sent_events(engine)
    assert event.header.type == EventType.CONFIRM
    assert [(c.queue_id, c.guid, c.sub_queue_id) for c in iter_confirm(event)] == [
        (record.qid, guid, record.sub_id) for guid in guids
    ]
    with pytest.raises(UsageError, match="not open"):
        engine.confirm_many(99, guids)


def test_a_push_for_several_subscriptions_reaches_each_and_routes_are_checked() -> None:
    engine, _ = started_engine()
    uri = "bmq://bmq.test.mem.fanout/subs"
    foo = open_queue(engine, uri + "?id=foo", read=True)
    bar = open_queue(engine, uri + "?id=bar", read=True)
    qid = engine.queues[foo].qid
    infos = [(engine.queues[foo].sub_id, None), (engine.queues[bar].sub_id, None)]
    pushes = PushEventBuilder()
    pushes.add(qid, b"\x40" + bytes(15), b"both", sub_queue_infos=infos, properties=None)
    pushes.add(qid, b"\x41" + bytes(15), b"foo", sub_queue_infos=infos[:1])
    pushes.add(qid, b"\x42" + bytes(15), b"foo again", sub_queue_infos=infos[:1])
    [event] = pushes.finish()
    engine.receive_data(event, 0.0)
    got = [(e.message.queue_id, e.message.payload) for e in engine.next_events()
           if isinstance(e, MessageReceived)]  # fmt: skip
    assert got == [(foo, b"both"), (bar, b"both"), (foo, b"foo"), (foo, b"foo again")]
    bad = PushEventBuilder()
    bad.add(qid, b"\x43" + bytes(15), b"x", sub_queue_infos=[(9999, None)])
    [bad_event] = bad.finish()
    with pytest.raises(Exception, match="subQueueId 9999"):
        engine.receive_data(bad_event, 0.0)


def test_one_push_event_interleaving_queues_routes_and_counts_each_message() -> None:
    engine, _ = started_engine()
    uri = "bmq://bmq.test.mem.fanout/runs"
    foo = open_queue(engine, uri + "?id=foo", read=True)
    bar = open_queue(engine, uri + "?id=bar", read=True)
    other = open_queue(engine, URI, read=True)
    qid, other_qid = engine.queues[foo].qid, engine.queues[other].qid
    foo_only = [(engine.queues[foo].sub_id, None)]
    both = [(engine.queues[foo].sub_id, None), (engine.queues[bar].sub_id, None)]
    plan = [  # (wire queue id, sub-queue infos, payload): runs, switches and a shared message
        (qid, foo_only, b"f1"), (qid, foo_only, b"f22"), (other_qid, None, b"o1"),
        (qid, both, b"both"), (qid, foo_only, b"f333"), (other_qid, None, b"o22"),
        (other_qid, None, b"o333"),
    ]  # fmt: skip
    pushes = PushEventBuilder()
    for n, (wire_qid, infos, payload) in enumerate(plan):
        pushes.add(wire_qid, bytes([n]) * 16, payload, sub_queue_infos=infos)
    [event] = pushes.finish()
    engine.receive_data(event, 0.0)
    got = [(e.message.queue_id, e.message.payload) for e in engine.next_events()
           if isinstance(e, MessageReceived)]  # fmt: skip
    assert got == [
        (foo, b"f1"), (foo, b"f22"), (other, b"o1"), (foo, b"both"), (bar, b"both"),
        (foo, b"f333"), (other, b"o22"), (other, b"o333"),
    ]  # fmt: skip
    counts = {
        handle: (engine.queues[handle].counters.received,
                 engine.queues[handle].counters.received_bytes)
        for handle in (foo, bar, other)
    }  # fmt: skip
    assert counts == {foo: (4, 13), bar: (1, 4), other: (3, 9)}


def test_compressed_post_many_uses_the_threshold_per_payload() -> None:
    engine, _ = started_engine(options=SessionOptions(compression_threshold=1024))
    writer = open_queue(engine, URI, write=True)
    big = b"xyz" * 1000
    engine.post_many(writer, [big, b"small", big], 0.0)
    [event] = sent_events(engine)
    assert [p.compression for p in iter_put(event, decompress=False)] == [1, 0, 1]
    assert [p.payload for p in iter_put(event)] == [big, b"small", big]
