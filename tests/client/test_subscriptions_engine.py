"""Subscriptions in the engine, bytes only: each subscription's own ConsumerInfo, stream ids kept
across configures, and the handle a PUSH on a subscription id carries."""

from __future__ import annotations

from pybmq.client.engine import ClientEngine
from pybmq.client.events import MessageReceived
from pybmq.client.options import QueueOptions, SessionOptions
from pybmq.client.subscriptions import Subscription
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.wire.push import PushEventBuilder

from tests.helpers.engine import broker_response, control, reply, sent_events, started_engine

URI = "bmq://bmq.test.mem.priority/q1"


def configured(engine: ClientEngine) -> list[ctrl.Subscription]:
    [event] = sent_events(engine)
    request = control(event)
    reply(engine, request)
    assert request.configure_stream is not None
    return list(request.configure_stream.stream_parameters.subscriptions)


def test_each_subscription_has_its_own_consumer_info_and_keeps_its_id() -> None:
    engine, _ = started_engine()
    fast = Subscription("x > 1", consumer_priority=3, max_unconfirmed_messages=5)
    slow = Subscription("x <= 1", max_unconfirmed_bytes=100)
    options = QueueOptions(max_unconfirmed_messages=7, consumer_priority=1, subscriptions=(fast,))
    _op, queue_id = engine.open_queue(URI, 0.0, read=True, options=options)
    reply(engine, control(sent_events(engine)[0]))
    [first] = configured(engine)
    info = first.consumers[0]
    assert (info.consumer_priority, info.max_unconfirmed_messages) == (3, 5)
    assert info.max_unconfirmed_bytes == options.max_unconfirmed_bytes  # the queue's value
    engine.configure_queue(queue_id, options.with_subscriptions(slow), 0.0)
    kept, added = configured(engine)
    assert kept.s_id == first.s_id  # unchanged on the broker: same stream
    assert added.s_id != first.s_id
    slow_info = added.consumers[0]
    assert (slow_info.consumer_priority, slow_info.max_unconfirmed_messages) == (1, 7)
    assert slow_info.max_unconfirmed_bytes == 100
    engine.configure_queue(queue_id, QueueOptions(subscriptions=(slow,)), 0.0)
    [only] = configured(engine)
    assert only.s_id == added.s_id
    # A PUSH on that subscription id carries the Subscription object the application gave.
    engine.next_events()
    qid = engine.queues[queue_id].qid
    pushes = PushEventBuilder()
    pushes.add(qid, b"\x01" * 16, b"hi", sub_queue_infos=[(only.s_id, None)])
    [event] = pushes.finish()
    engine.receive_data(event, 0.0)
    [received] = [e for e in engine.next_events() if isinstance(e, MessageReceived)]
    assert received.message.subscription is slow


def test_no_subscriptions_is_one_catch_all_keeping_its_id() -> None:
    engine, _ = started_engine()
    _op, queue_id = engine.open_queue(URI, 0.0, read=True)
    reply(engine, control(sent_events(engine)[0]))
    [first] = configured(engine)
    assert first.expression.text == ""
    engine.configure_queue(queue_id, QueueOptions(max_unconfirmed_messages=3), 0.0)
    [again] = configured(engine)
    assert again.s_id == first.s_id
    assert again.consumers[0].max_unconfirmed_messages == 3


def test_a_reopen_after_a_reconnect_keeps_the_subscription_ids() -> None:
    engine = ClientEngine(SessionOptions(reconnect=True))
    engine.start(0.0)
    engine.connection_made(0.0)
    engine.data_to_send()
    engine.receive_data(broker_response(), 0.0)
    red = Subscription("color == 1", consumer_priority=2)
    options = QueueOptions(subscriptions=(red, "color == 2"))
    _op, queue_id = engine.open_queue(URI, 0.0, read=True, options=options)
    reply(engine, control(sent_events(engine)[0]))
    before = [s.s_id for s in configured(engine)]
    engine.connection_lost(1.0)
    engine.connection_made(2.0)
    engine.data_to_send()
    engine.receive_data(broker_response(), 2.0)
    reply(engine, control(sent_events(engine)[0]))  # the reopen
    after = configured(engine)
    assert [s.s_id for s in after] == before
    assert after[0].consumers[0].consumer_priority == 2
    assert engine.table.subscription_handles[(engine.queues[queue_id].qid, before[0])] is red
