"""The engine's AUTHENTICATION exchange, driven with bytes: order (before negotiation), refusal,
timeout, re-authentication before the lifetime runs out, and after a reconnect."""

from __future__ import annotations

import pytest
from pybmq.client.engine import ClientEngine
from pybmq.client.events import (
    ConnectionLost,
    MessageReceived,
    Reconnected,
    SessionStarted,
    SessionStopped,
)
from pybmq.client.fsm import SessionState
from pybmq.client.handshake import reauthentication_delay
from pybmq.client.options import Credential, SessionOptions
from pybmq.errors import AuthenticationError, AuthenticationTimeoutError, ProtocolError
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import EncodingType, EventType
from pybmq.wire.control import decode_authentication, decode_control_as, encode_authentication
from pybmq.wire.push import PushEventBuilder

from tests.helpers.engine import broker_response, sent_events, serve_control

SECRET = b"alice:s3cret-material"


def auth_response(code: int = 0, lifetime_ms: int | None = None, message: str = "") -> bytes:
    category = ctrl.StatusCategory.E_SUCCESS if code == 0 else ctrl.StatusCategory.E_REFUSED
    response = ctrl.AuthenticationResponse(
        status=ctrl.Status(category=category, code=code, message=message),
        lifetime_ms=lifetime_ms,
    )
    return encode_authentication(ctrl.AuthenticationMessage(authentication_response=response))


def engine_with(calls: list[int] | None = None, **values: object) -> ClientEngine:
    counter = calls if calls is not None else []

    def provider() -> Credential:
        counter.append(1)
        return Credential("BASIC", SECRET)

    return ClientEngine(SessionOptions(credential_provider=provider, **values))  # type: ignore[arg-type]


def authentication_requests(engine: ClientEngine) -> list[ctrl.AuthenticationRequest]:
    out = []
    for event in sent_events(engine):
        if event.header.type == EventType.AUTHENTICATION:
            message, encoding = decode_authentication(event)
            assert encoding is EncodingType.BER
            assert message.authentication_request is not None
            out.append(message.authentication_request)
    return out


def test_authenticates_before_negotiating() -> None:
    engine = engine_with()
    engine.start(0.0)
    engine.connection_made(0.0)
    (event,) = sent_events(engine)
    assert event.header.type == EventType.AUTHENTICATION
    request = decode_authentication(event)[0].authentication_request
    assert request == ctrl.AuthenticationRequest(mechanism="BASIC", data=SECRET)
    assert engine.state is SessionState.AUTHENTICATING
    engine.receive_data(auth_response(), 0.1)
    (identity,) = sent_events(engine)
    assert identity.header.type == EventType.CONTROL
    assert decode_control_as(identity, ctrl.NegotiationMessage)[0].client_identity is not None
    engine.receive_data(broker_response(), 0.2)
    assert any(isinstance(e, SessionStarted) for e in engine.next_events())


def test_without_a_provider_no_authentication_is_sent() -> None:
    engine = ClientEngine()
    engine.start(0.0)
    engine.connection_made(0.0)
    assert [e.header.type for e in sent_events(engine)] == [EventType.CONTROL]


def test_refusal_stops_with_the_broker_status_and_no_secret() -> None:
    engine = engine_with()
    engine.start(0.0)
    engine.connection_made(0.0)
    engine.data_to_send()
    engine.receive_data(auth_response(-11, message="Invalid username or password"), 0.1)
    (stopped,) = [e for e in engine.next_events() if isinstance(e, SessionStopped)]
    assert isinstance(stopped.error, AuthenticationError)
    assert stopped.error.category == "E_REFUSED" and stopped.error.code == -11
    assert SECRET.decode() not in str(stopped.error) and "s3cret" not in repr(engine.options)
    assert engine.stopped


def test_no_answer_is_an_authentication_timeout() -> None:
    engine = engine_with(request_timeout=2.0)
    engine.start(0.0)
    engine.connection_made(0.0)
    assert engine.next_deadline() == 2.0
    engine.handle_timeout(2.0)
    (stopped,) = [e for e in engine.next_events() if isinstance(e, SessionStopped)]
    assert isinstance(stopped.error, AuthenticationTimeoutError)


def test_provider_failure_is_an_authentication_error() -> None:
    def broken() -> Credential:
        raise RuntimeError("token service down: password=hunter2")

    engine = ClientEngine(SessionOptions(credential_provider=broken))
    engine.start(0.0)
    engine.connection_made(0.0)
    (stopped,) = [e for e in engine.next_events() if isinstance(e, SessionStopped)]
    assert isinstance(stopped.error, AuthenticationError)
    assert "hunter2" not in str(stopped.error)


def test_other_events_while_authenticating_are_a_protocol_error() -> None:
    engine = engine_with()
    engine.start(0.0)
    engine.connection_made(0.0)
    with pytest.raises(ProtocolError):
        engine.receive_data(broker_response(), 0.1)


def started(engine: ClientEngine, lifetime_ms: int | None) -> None:
    engine.start(0.0)
    engine.connection_made(0.0)
    engine.data_to_send()
    engine.receive_data(auth_response(lifetime_ms=lifetime_ms), 0.0)
    engine.data_to_send()
    engine.receive_data(broker_response(heartbeat_ms=60_000), 0.0)  # no heartbeat noise
    engine.next_events()


def test_reauthenticates_before_the_lifetime_runs_out() -> None:
    calls: list[int] = []
    engine = engine_with(calls)
    started(engine, lifetime_ms=60_000)
    due = reauthentication_delay(60_000)
    assert due == 54.0
    assert engine.next_deadline() is not None and engine.next_deadline() <= due  # type: ignore[operator]
    engine.handle_timeout(due)
    assert len(authentication_requests(engine)) == 1 and len(calls) == 2
    assert engine.state is SessionState.STARTED  # traffic goes on meanwhile
    engine.receive_data(auth_response(lifetime_ms=60_000), due + 0.1)
    assert engine.authentications == 2 and engine.state is SessionState.STARTED


def test_a_refused_reauthentication_ends_the_session() -> None:
    # Reconnect is on by default (issue 28), and with it a refused renewal drops the connection
    # to authenticate again from scratch; without it the session ends, as tested here.
    engine = engine_with(reconnect=False)
    started(engine, lifetime_ms=10_000)
    engine.handle_timeout(reauthentication_delay(10_000))
    engine.data_to_send()
    engine.receive_data(auth_response(-1, message="Principal cannot change"), 9.5)
    assert engine.stopped
    (stopped,) = [e for e in engine.next_events() if isinstance(e, SessionStopped)]
    assert isinstance(stopped.error, AuthenticationError)


def test_short_lifetimes_reauthenticate_at_ninety_percent() -> None:
    assert reauthentication_delay(1000) == 0.0  # 1 s - 5 s saturates at 0
    assert reauthentication_delay(100_000) == 90.0
    assert reauthentication_delay(20_000) == 15.0


def test_after_a_reconnect_authenticates_again_before_negotiating() -> None:
    engine = engine_with(reconnect=True)
    started(engine, lifetime_ms=None)
    engine.connection_lost(1.0)
    assert any(isinstance(e, ConnectionLost) for e in engine.next_events())
    engine.connection_made(2.0)
    (event,) = sent_events(engine)
    assert event.header.type == EventType.AUTHENTICATION
    engine.receive_data(auth_response(), 2.1)
    engine.data_to_send()
    engine.receive_data(broker_response(), 2.2)
    assert any(isinstance(e, Reconnected) for e in engine.next_events())


def test_a_refusal_while_reconnecting_drops_and_retries() -> None:
    engine = engine_with(reconnect=True)
    started(engine, lifetime_ms=None)
    engine.connection_lost(1.0)
    engine.next_events()
    engine.connection_made(2.0)
    engine.data_to_send()
    engine.receive_data(auth_response(-2, message="mechanism not supported"), 2.1)
    assert engine.state is SessionState.RECONNECTING
    assert any(isinstance(e, ConnectionLost) for e in engine.next_events())


def test_credential_repr_hides_the_material() -> None:
    credential = Credential("BASIC", SECRET)
    assert "s3cret" not in repr(credential) and "s3cret" not in str(credential)
    assert "BASIC" in repr(credential)


def test_traffic_is_not_held_while_a_reauthentication_is_outstanding() -> None:
    """No stall: between the re-authentication request and its answer, a post goes out at once
    and a PUSH is delivered (the exchange never gates the data plane)."""
    engine = engine_with()
    started(engine, lifetime_ms=60_000)
    _op, handle = engine.open_queue(
        "bmq://bmq.test.mem.priority/reauth", 1.0, read=True, write=True
    )
    serve_control(engine, 1.0)
    engine.next_events()
    due = reauthentication_delay(60_000)
    engine.handle_timeout(due)
    assert len(authentication_requests(engine)) == 1  # outstanding: no answer yet
    guid = engine.post(handle, b"during", due + 0.01)
    assert [e.header.type for e in sent_events(engine)] == [EventType.PUT]
    queue = engine.queues[handle]
    pushes = PushEventBuilder()
    pushes.add(queue.qid, guid, b"pushed", sub_queue_infos=[(queue.subscription_ids[0], None)])
    for event in pushes.finish():
        engine.receive_data(event, due + 0.02)
    received = [e for e in engine.next_events() if isinstance(e, MessageReceived)]
    assert len(received) == 1
    engine.receive_data(auth_response(lifetime_ms=60_000), due + 0.1)
    assert engine.authentications == 2 and engine.state is SessionState.STARTED
