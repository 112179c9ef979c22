"""Consumer-side de-duplication (``QueueOptions.dedup_window``): the window on its own (its size
and age bounds, at and over them), then the engine driven with bytes: a repeat of a confirmed
message is confirmed again and not delivered, a repeat of one the application holds is not
delivered and the application's confirm goes to the connection that pushed it again, and with
the window off every repeat is delivered."""

from __future__ import annotations

import math

import pytest
from pybmq.client.dedup import CONFIRMED, HELD, NEW, DedupWindow, window_for
from pybmq.client.engine import ClientEngine
from pybmq.client.events import MessageReceived
from pybmq.client.options import MAX_DEDUP_WINDOW, QueueOptions, SessionOptions
from pybmq.errors import UsageError
from pybmq.generated.wire_codec import CompressionAlgorithmType, EventType
from pybmq.wire.batches import iter_confirm
from pybmq.wire.framing import EventReader
from pybmq.wire.push import PushEventBuilder

from tests.helpers.engine import broker_response, control, reply, sent_events, serve_control

URI = "bmq://bmq.test.mem.priority/dedup"
FANOUT = "bmq://bmq.test.mem.fanout/dedup"


def guid(i: int) -> bytes:
    return bytes([0x40, i % 256, i // 256]) + b"\0" * 13


# ------------------------------------------------------------------ the window


def test_window_remembers_at_most_limit_guids_oldest_forgotten_first() -> None:
    window = DedupWindow(3, 60.0)
    assert [window.pushed(guid(i), 0.0, 1) for i in range(3)] == [NEW] * 3
    assert len(window) == 3  # at the limit: all kept
    assert window.pushed(guid(0), 0.0, 1) == HELD
    assert window.pushed(guid(3), 0.0, 1) == NEW  # over it: the oldest goes
    assert len(window) == 3 and guid(0) not in window
    assert window.pushed(guid(0), 0.0, 1) == NEW  # forgotten: a repeat is new again
    assert guid(1) not in window and guid(2) in window


def test_window_forgets_guids_older_than_max_age() -> None:
    window = DedupWindow(100, 10.0)
    window.pushed(guid(1), 0.0, 1)
    window.pushed(guid(2), 5.0, 1)
    window.expire(10.0)  # exactly max_age old: kept
    assert guid(1) in window
    window.expire(10.001)  # older: forgotten, the younger one kept
    assert guid(1) not in window and guid(2) in window
    assert window.pushed(guid(1), 10.001, 1) == NEW
    window.expire(1e6)
    assert len(window) == 0


def test_window_states_confirmed_and_late_confirms() -> None:
    window = DedupWindow(10, 60.0)
    for i in range(3):
        window.pushed(guid(i), 0.0, 1)
    window.confirmed([guid(0), guid(9)])  # one not in the window: ignored
    assert window.pushed(guid(0), 1.0, 2) == CONFIRMED
    assert window.pushed(guid(1), 1.0, 2) == HELD  # now belongs to connection 2
    # Confirms of connection 1's deliveries, made on connection 2: guid 1 was pushed there again.
    assert window.confirmed_late([guid(1), guid(2)], 2) == [guid(1)]
    assert window.pushed(guid(2), 2.0, 2) == CONFIRMED  # marked: its repeat is confirmed
    assert window.confirmed_late([guid(1)], 2) == []  # confirmed once is enough


def test_window_for_follows_the_options() -> None:
    assert window_for(None, QueueOptions()) is None
    window = window_for(None, QueueOptions(dedup_window=4, dedup_window_age=9.0))
    assert window is not None and (window.limit, window.max_age) == (4, 9.0)
    for i in range(4):
        window.pushed(guid(i), 0.0, 1)
    assert window_for(window, QueueOptions(dedup_window=2)) is window
    assert len(window) == 2 and guid(3) in window and guid(0) not in window
    assert window_for(window, QueueOptions()) is None


@pytest.mark.parametrize(
    "values",
    [
        {"dedup_window": -1},
        {"dedup_window": MAX_DEDUP_WINDOW + 1},
        {"dedup_window": 1.5},
        {"dedup_window": True},
        {"dedup_window_age": 0.0},
        {"dedup_window_age": -1.0},
        {"dedup_window_age": math.nan},
        {"dedup_window_age": 2.0**31},
    ],
)
def test_bad_dedup_options_are_usage_errors(values: dict[str, object]) -> None:
    with pytest.raises(UsageError, match="dedup_window"):
        QueueOptions(**values)


def test_dedup_options_at_their_limits_are_taken() -> None:
    options = QueueOptions(dedup_window=MAX_DEDUP_WINDOW, dedup_window_age=1e-3)
    assert options.dedup_window == MAX_DEDUP_WINDOW


# ------------------------------------------------------------------ the engine


def reader(engine: ClientEngine, uri: str = URI, **options: object) -> int:
    _op, handle = engine.open_queue(uri, 0.0, read=True, options=QueueOptions(**options))
    serve_control(engine)
    engine.next_events()
    return handle


def connected(reconnect: bool = True) -> ClientEngine:
    engine = ClientEngine(SessionOptions(reconnect=reconnect))
    engine.start(0.0)
    reconnect_to(engine, 0.0)
    return engine


def reconnect_to(engine: ClientEngine, now: float) -> None:
    engine.connection_made(now)
    engine.data_to_send()
    engine.receive_data(broker_response(), now)
    serve_control(engine, now)  # the reopens, when there are queues


def push(
    engine: ClientEngine, handle: int, guids: list[bytes], now: float = 0.0, **extra: object
) -> list[bytes]:
    """PUSH ``guids`` to ``handle``'s subscription; the GUIDs delivered to the application."""
    queue = engine.queues[handle]
    stream = queue.subscription_ids[0]
    builder = PushEventBuilder(compression_threshold=1)
    for g in guids:
        builder.add(queue.qid, g, b"x" * 100, sub_queue_infos=[(stream, None)], **extra)
    for event in builder.finish():
        engine.receive_data(event, now)
    return [e.message.guid for e in engine.next_events() if isinstance(e, MessageReceived)]


def confirms_sent(engine: ClientEngine) -> list[tuple[int, bytes, int]]:
    return [
        (c.queue_id, c.guid, c.sub_queue_id)
        for event in EventReader().feed(engine.data_to_send())
        if event.header.type == EventType.CONFIRM
        for c in iter_confirm(event)
    ]


def test_without_a_window_every_repeat_is_delivered() -> None:
    engine = connected()
    handle = reader(engine)
    assert push(engine, handle, [guid(1), guid(1)]) == [guid(1), guid(1)]
    assert engine.stats().total.duplicates == 0


def test_a_repeat_of_a_confirmed_message_is_confirmed_again_and_not_delivered() -> None:
    engine = connected()
    handle = reader(engine, dedup_window=100)
    qid = engine.queues[handle].qid
    assert push(engine, handle, [guid(1), guid(2)]) == [guid(1), guid(2)]
    engine.confirm(handle, guid(1), engine.generation)
    assert confirms_sent(engine) == [(qid, guid(1), 0)]
    assert push(engine, handle, [guid(1), guid(3)]) == [guid(3)]
    assert confirms_sent(engine) == [(qid, guid(1), 0)]  # confirmed again, at once
    stats = engine.stats().total
    assert (stats.received, stats.duplicates, stats.confirmed) == (3, 1, 1)
    assert engine.credit.unconfirmed(handle) == 2  # guid 2 and 3: the repeat took no credit


def test_a_repeat_of_a_held_message_on_the_same_connection_is_not_delivered() -> None:
    engine = connected()
    handle = reader(engine, dedup_window=100)
    assert push(engine, handle, [guid(1)]) == [guid(1)]
    assert push(engine, handle, [guid(1)]) == []
    assert confirms_sent(engine) == []  # the application has it and will confirm it
    assert engine.credit.unconfirmed(handle) == 1
    engine.confirm_many(handle, [guid(1)], engine.generation)
    assert [g for _q, g, _s in confirms_sent(engine)] == [guid(1)]
    assert engine.credit.unconfirmed(handle) == 0


def test_a_held_message_pushed_again_after_a_reconnect_is_confirmed_on_the_new_connection() -> None:
    engine = connected()
    handle = reader(engine, dedup_window=100)
    assert push(engine, handle, [guid(1), guid(2)], now=1.0) == [guid(1), guid(2)]
    first = engine.generation
    engine.connection_lost(2.0, ConnectionResetError("reset"))
    engine.next_events()
    reconnect_to(engine, 3.0)
    # The broker redelivers both (they were never confirmed) and one new message.
    assert push(engine, handle, [guid(1), guid(2), guid(3)], now=4.0) == [guid(3)]
    assert engine.credit.unconfirmed(handle) == 3  # as the broker counts them
    # The application confirms what it holds from the first connection: without the window
    # those confirms are dropped; here they go to the connection that pushed them again.
    engine.confirm(handle, guid(1), first)
    engine.confirm_many(handle, [guid(2)], first)
    qid = engine.queues[handle].qid
    assert confirms_sent(engine) == [(qid, guid(1), 0), (qid, guid(2), 0)]
    assert engine.credit.unconfirmed(handle) == 1
    stats = engine.stats().total
    assert (stats.received, stats.duplicates, stats.confirmed) == (3, 2, 2)


def test_a_message_confirmed_during_the_outage_is_confirmed_when_redelivered() -> None:
    engine = connected()
    handle = reader(engine, dedup_window=100)
    push(engine, handle, [guid(1)], now=1.0)
    first = engine.generation
    engine.connection_lost(2.0, ConnectionResetError("reset"))
    engine.confirm(handle, guid(1), first)  # void on the lost connection: not sent
    reconnect_to(engine, 3.0)
    assert confirms_sent(engine) == []
    assert push(engine, handle, [guid(1)], now=4.0) == []
    assert [g for _q, g, _s in confirms_sent(engine)] == [guid(1)]
    assert engine.credit.unconfirmed(handle) == 0


def test_without_a_window_a_redelivery_after_a_reconnect_is_delivered_again() -> None:
    engine = connected()
    handle = reader(engine)
    push(engine, handle, [guid(1)], now=1.0)
    first = engine.generation
    engine.connection_lost(2.0, ConnectionResetError("reset"))
    reconnect_to(engine, 3.0)
    assert push(engine, handle, [guid(1)], now=4.0) == [guid(1)]
    engine.confirm(handle, guid(1), first)
    assert confirms_sent(engine) == []  # the first delivery's confirm is void
    engine.confirm(handle, guid(1), engine.generation)
    assert [g for _q, g, _s in confirms_sent(engine)] == [guid(1)]


def test_a_repeat_older_than_the_window_age_or_pushed_out_by_its_size_is_delivered() -> None:
    engine = connected()
    handle = reader(engine, dedup_window=2, dedup_window_age=10.0)
    push(engine, handle, [guid(1)], now=0.0)
    assert push(engine, handle, [guid(1)], now=10.0) == []  # at the age limit: still a repeat
    assert push(engine, handle, [guid(1)], now=10.5) == [guid(1)]  # over it: delivered
    push(engine, handle, [guid(2), guid(3)], now=11.0)  # over the size limit: guid 1 goes
    assert push(engine, handle, [guid(1), guid(3)], now=11.0) == [guid(1)]


def test_compressed_repeats_are_suppressed_too() -> None:
    engine = connected()
    handle = reader(engine, dedup_window=10)
    zlib = CompressionAlgorithmType.ZLIB
    assert push(engine, handle, [guid(1)], compression=zlib) == [guid(1)]
    assert push(engine, handle, [guid(1)], compression=zlib) == []


def test_fanout_each_handle_has_its_own_window() -> None:
    """One PUSH for two appIds of this client (the multi-subscription path): the handle with a
    window drops its repeat, the one without delivers it."""
    engine = connected()
    foo = reader(engine, FANOUT + "?id=foo", dedup_window=10)
    bar = reader(engine, FANOUT + "?id=bar")
    qid = engine.queues[foo].qid
    infos = [(engine.queues[h].subscription_ids[0], None) for h in (foo, bar)]
    delivered = []
    for _ in range(2):
        builder = PushEventBuilder()
        builder.add(qid, guid(7), b"fan", sub_queue_infos=infos)
        [event] = builder.finish()
        engine.receive_data(event, 0.0)
        delivered += [
            e.message.queue_id for e in engine.next_events() if isinstance(e, MessageReceived)
        ]
    assert delivered == [foo, bar, bar]
    assert engine.stats().queues[FANOUT + "?id=foo"].duplicates == 1


def test_the_window_is_never_sent_to_the_broker() -> None:
    """The dedup options are the client's own: the ConfigureStream is the same without them."""

    def configure_stream(options: QueueOptions) -> object:
        engine = connected()
        engine.open_queue(URI, 0.0, read=True, options=options)
        reply(engine, control(sent_events(engine)[0]))
        [event] = sent_events(engine)
        message = control(event)
        return message.configure_stream

    plain = configure_stream(QueueOptions())
    assert configure_stream(QueueOptions(dedup_window=5, dedup_window_age=1.0)) == plain


def test_a_reconfigure_turns_the_window_off_and_on() -> None:
    engine = connected()
    handle = reader(engine, dedup_window=10)
    push(engine, handle, [guid(1)])
    engine.configure_queue(handle, QueueOptions(), 0.0)
    serve_control(engine)
    assert push(engine, handle, [guid(1)]) == [guid(1)]  # off: delivered again
    assert engine.queues[handle].dedup is None
    engine.configure_queue(handle, QueueOptions(dedup_window=10), 0.0)
    serve_control(engine)
    assert push(engine, handle, [guid(1), guid(1)]) == [guid(1)]  # a new, empty window


def test_a_message_delivered_while_other_queues_reopen_is_confirmed() -> None:
    """After a reconnect one queue is reopened and another is not yet (the session is still
    restoring): a message the broker pushes on the reopened queue came on this connection, so
    its confirm is sent, with or without a window (it was dropped, and the message stayed
    unconfirmed at the broker for as long as the connection lasted)."""
    engine = connected()
    ready = reader(engine)
    late = reader(engine, "bmq://bmq.test.mem.priority/dedup-late")
    engine.connection_lost(1.0, ConnectionResetError("reset"))
    engine.next_events()
    engine.connection_made(2.0)
    engine.data_to_send()
    engine.receive_data(broker_response(), 2.0)
    late_uri = engine.queues[late].uri
    held = []
    while requests := [e for e in sent_events(engine) if e.header.type == EventType.CONTROL]:
        for event in requests:
            message = control(event)
            opening = message.open_queue
            configuring = message.configure_stream
            if (opening is not None and opening.handle_parameters.uri == late_uri) or (
                configuring is not None and configuring.q_id == engine.queues[late].qid
            ):
                held.append(message)  # the broker has not answered this queue's reopen yet
            else:
                reply(engine, message, 2.0)
    assert held and engine.restoring
    engine.next_events()
    assert push(engine, ready, [guid(7)], now=3.0) == [guid(7)]
    engine.confirm(ready, guid(7), engine.generation)
    assert confirms_sent(engine) == [(engine.queues[ready].qid, guid(7), 0)]
    # A confirm of the lost connection's messages is still void.
    engine.confirm(ready, guid(8), engine.generation - 1)
    assert confirms_sent(engine) == []
