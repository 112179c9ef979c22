"""The connection core both ends hold: framing, heartbeats answered (or left to an owner that
checks them), and the heartbeat clock."""

from __future__ import annotations

from pybmq.generated.wire_codec import EventType
from pybmq.wire.channel import Channel, Liveness
from pybmq.wire.control import HEARTBEAT_REQ_EVENT, HEARTBEAT_RSP_EVENT
from pybmq.wire.framing import event_header_bytes

PUSH = event_header_bytes(EventType.PUSH, 8)


def test_feed_answers_heartbeats_and_swallows_answers() -> None:
    channel = Channel()
    events = list(channel.feed(HEARTBEAT_REQ_EVENT + HEARTBEAT_RSP_EVENT + PUSH, 1.0))
    assert [e.header.type for e in events] == [EventType.PUSH]
    assert channel.take_output() == HEARTBEAT_RSP_EVENT
    assert channel.last_received == 1.0


def test_a_peer_that_must_not_answer_does_not() -> None:
    channel = Channel(answer_heartbeats=False)
    assert list(channel.feed(HEARTBEAT_REQ_EVENT, 1.0)) == []
    assert channel.take_output() == b""


def test_silence_is_probed_once_per_interval_then_dead() -> None:
    channel = Channel(heartbeat_interval=1.0, max_missed_heartbeats=3)
    assert channel.liveness(0.5) is Liveness.ALIVE
    assert channel.liveness(1.0) is Liveness.PROBE
    channel.probe(1.0)
    assert channel.take_output() == HEARTBEAT_REQ_EVENT
    assert channel.liveness(1.5) is Liveness.ALIVE  # probed less than an interval ago
    assert channel.liveness(2.0) is Liveness.PROBE
    assert channel.liveness(3.0) is Liveness.DEAD


def test_a_paused_owner_hears_no_silence_and_resuming_restarts_the_clock() -> None:
    channel = Channel(heartbeat_interval=1.0, max_missed_heartbeats=3)
    channel.pause(True, 0.5)
    assert channel.liveness(10.0) is Liveness.ALIVE
    channel.pause(False, 10.0)
    assert channel.silence(10.5) == 0.5


def test_the_restarting_clock_follows_every_read() -> None:
    channel = Channel(heartbeat_interval=1.0)
    assert channel.heartbeat_deadline() == 1.0
    list(channel.feed(PUSH, 0.7))
    assert channel.heartbeat_deadline() == 1.7


def test_the_steady_clock_ticks_once_per_interval_whatever_the_traffic() -> None:
    channel = Channel(heartbeat_interval=1.0, steady_probe_clock=True)
    list(channel.feed(PUSH, 0.7))
    assert channel.heartbeat_deadline() == 1.0  # not moved by the read
    assert channel.liveness(1.0) is Liveness.ALIVE  # heard from 0.3 s ago: nothing to probe
    assert channel.heartbeat_deadline() == 2.0  # the clock ticked on
    assert channel.liveness(2.0) is Liveness.PROBE  # silent for 1.3 s


def test_reset_drops_a_partial_event_and_unsent_output() -> None:
    channel = Channel()
    list(channel.feed(PUSH[:5], 0.0))
    channel.send(b"x")
    assert channel.buffered == 5
    channel.reset(2.0)
    assert channel.buffered == 0 and channel.take_output() == b""
    assert channel.last_received == channel.last_probe == 2.0


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
