"""A client facing a hostile broker or a careless application, round 2: subscription limits
learnt before anything is sent, heartbeat settings clamped, liveness that needs whole events,
unknown ACKs logged rate-limited, credential material over the limit named as such."""

from __future__ import annotations

import logging

import pytest
from pybmq.client.engine import ClientEngine
from pybmq.client.events import SessionStopped
from pybmq.client.fsm import SessionState
from pybmq.client.handshake import (
    HEARTBEAT_INTERVAL_RANGE_MS,
    MAX_AUTHENTICATION_EVENT_SIZE,
    MAX_MISSED_HEARTBEATS_RANGE,
)
from pybmq.client.options import Credential, QueueOptions, SessionOptions
from pybmq.client.subscriptions import Subscription
from pybmq.errors import AuthenticationError
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import AckStatus, EventType
from pybmq.wire.batches import AckEventBuilder
from pybmq.wire.channel import MIN_PROGRESS_BYTES, Channel, Liveness
from pybmq.wire.control import decode_control_as, encode_control
from pybmq.wire.expressions import ExpressionLimitError
from pybmq.wire.framing import EventReader, event_header_bytes
from pybmq.wire.logbudget import LOG_FIRST

from tests.helpers.engine import broker_response, started_engine


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("||".join(["x"] * 1365), "e_TOO_LONG"),  # the expression that took a queue down
        ("!" * 11 + "x", "e_TOO_COMPLEX"),
        ("a == 1 && b == 2 && c == 3 && d == 4", "e_TOO_COMPLEX"),
    ],
)
def test_a_subscription_the_broker_would_not_apply_is_refused_locally(text: str, code: str) -> None:
    with pytest.raises(ExpressionLimitError) as refused:
        Subscription(text)
    assert refused.value.code == code
    with pytest.raises(ExpressionLimitError):
        QueueOptions(subscriptions=(text,))
    Subscription("a == 1 && b == 2 && c == 3")  # 8 operators: fine


def _negotiated(interval_ms: int, missed: int) -> ClientEngine:
    # Without reconnect: a dead peer then ends the session, which the test can see.
    engine = ClientEngine(SessionOptions(reconnect=False))
    engine.start(0.0)
    engine.connection_made(0.0)
    engine.data_to_send()
    (event,) = EventReader().feed(broker_response(heartbeat_ms=interval_ms))
    message = decode_control_as(event, ctrl.NegotiationMessage)[0]
    assert message.broker_response is not None
    message.broker_response.max_missed_heartbeats = missed
    data = encode_control(message, "JSON")
    engine.receive_data(data, 0.0)
    return engine


def test_heartbeat_settings_from_the_broker_are_clamped(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        zero = _negotiated(0, 0)
    assert zero.heartbeat_interval == HEARTBEAT_INTERVAL_RANGE_MS[0] / 1000
    assert zero.max_missed_heartbeats == MAX_MISSED_HEARTBEATS_RANGE[0]
    assert "outside" in caplog.text
    huge = _negotiated(2**31 - 1, 2**31 - 1)
    assert huge.heartbeat_interval == HEARTBEAT_INTERVAL_RANGE_MS[1] / 1000
    assert huge.max_missed_heartbeats == MAX_MISSED_HEARTBEATS_RANGE[1]
    # Dead-peer detection still works: silence for the clamped maximum stops the session.
    limit = huge.heartbeat_interval * huge.max_missed_heartbeats
    huge.handle_timeout(limit + 1)
    assert huge.state is SessionState.STOPPED


def test_a_byte_now_and_then_is_not_liveness() -> None:
    channel = Channel(heartbeat_interval=1.0, max_missed_heartbeats=3, steady_probe_clock=True)
    partial = event_header_bytes(EventType.CONTROL, 1000)
    now = 0.0
    for byte in partial:
        now += 0.5
        assert channel.feed_all(bytes([byte]), now) == []
    assert channel.liveness(now + 0.1) is Liveness.DEAD  # 4 s of drip, no whole event
    # A big event on a slow link still counts: it grows by MIN_PROGRESS_BYTES at a time.
    slow = Channel(heartbeat_interval=1.0, max_missed_heartbeats=3)
    big = event_header_bytes(EventType.CONTROL, 8 * MIN_PROGRESS_BYTES) + bytes(
        8 * MIN_PROGRESS_BYTES - 8
    )
    for n, start in enumerate(range(0, len(big) - 1, MIN_PROGRESS_BYTES)):
        slow.feed_all(big[start : start + MIN_PROGRESS_BYTES], n * 1.0)
        assert slow.liveness(n * 1.0 + 0.5) is Liveness.ALIVE


def test_acks_for_unknown_guids_are_logged_rate_limited(caplog: pytest.LogCaptureFixture) -> None:
    engine, _ = started_engine()
    builder = AckEventBuilder()
    for n in range(5000):
        builder.add(AckStatus.SUCCESS, n, n.to_bytes(16, "big"), 0)
    with caplog.at_level(logging.INFO, logger="pybmq.client.engine"):
        for event in builder.finish():
            engine.receive_data(event, 1.0)
    lines = [r for r in caplog.records if "unknown or expired GUID" in r.getMessage()]
    assert LOG_FIRST <= len(lines) <= LOG_FIRST + 5
    assert engine.state is SessionState.STARTED


def test_credential_material_over_the_limit_is_an_authentication_error() -> None:
    big = Credential("BASIC", b"user:" + b"x" * MAX_AUTHENTICATION_EVENT_SIZE)
    engine = ClientEngine(SessionOptions(credential_provider=lambda: big))
    engine.start(0.0)
    engine.connection_made(0.0)
    (stopped,) = [e for e in engine.next_events() if isinstance(e, SessionStopped)]
    assert isinstance(stopped.error, AuthenticationError)
    assert "too big" in str(stopped.error) and "xxxx" not in str(stopped.error)
