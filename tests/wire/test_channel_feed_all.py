"""``Channel.feed_all`` and ``Channel.answer``: heartbeats left to an owner that checks them."""

from __future__ import annotations

from pybmq.generated.wire_codec import EventType
from pybmq.wire.channel import Channel
from pybmq.wire.control import HEARTBEAT_REQ_EVENT, HEARTBEAT_RSP_EVENT


def test_feed_all_yields_heartbeats_and_answers_nothing_itself() -> None:
    channel = Channel(now=0.0)
    events = channel.feed_all(HEARTBEAT_REQ_EVENT + HEARTBEAT_RSP_EVENT, 2.5)
    assert [e.type for e in events] == [EventType.HEARTBEAT_REQ, EventType.HEARTBEAT_RSP]
    assert channel.take_output() == b""
    assert channel.silence(3.0) == 0.5  # what arrived counts as activity


def test_answer_follows_answer_heartbeats() -> None:
    channel = Channel()
    channel.answer()
    assert channel.take_output() == HEARTBEAT_RSP_EVENT
    channel.answer_heartbeats = False
    channel.answer()
    assert channel.take_output() == b""
