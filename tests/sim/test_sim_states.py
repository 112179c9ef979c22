"""The simulator session's transition table, walked move by move, and the session following it."""

from __future__ import annotations

import pytest
from pybmq.errors import InvalidTransitionError
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.bmqp_ctrlmsg_json import encode_json
from pybmq.sim.broker import Broker
from pybmq.sim.config import BrokerConfig
from pybmq.sim.states import SESSION_TRANSITIONS, SessionInput, SessionState, advance
from pybmq.wire.control import encode_control_event

S, E = SessionState, SessionInput

# Every legal move, as the session makes them.
EXPECTED = {
    (S.NEGOTIATING, E.NEGOTIATED): S.OPEN,
    (S.NEGOTIATING, E.CLOSE): S.CLOSED,
    (S.OPEN, E.DISCONNECT): S.DISCONNECTING,
    (S.OPEN, E.CLOSE): S.CLOSED,
    (S.DISCONNECTING, E.CLOSE): S.CLOSED,
}


@pytest.mark.parametrize("state", list(S))
@pytest.mark.parametrize("event", list(E))
def test_every_pair_follows_the_table_or_raises(state: SessionState, event: SessionInput) -> None:
    expected = EXPECTED.get((state, event))
    if expected is None:
        with pytest.raises(InvalidTransitionError) as caught:
            advance(state, event)
        assert caught.value.machine == "sim session"
    else:
        assert advance(state, event) is expected


def test_the_table_is_exactly_the_expected_moves() -> None:
    assert dict(SESSION_TRANSITIONS) == EXPECTED


def test_closed_is_final_and_every_other_state_can_close() -> None:
    assert not [key for key in SESSION_TRANSITIONS if key[0] is S.CLOSED]
    assert all(SESSION_TRANSITIONS.get((s, E.CLOSE)) is S.CLOSED for s in S if s is not S.CLOSED)


def _identity() -> bytes:
    identity = ctrl.ClientIdentity(
        protocol_version=1,
        sdk_version=1,
        client_type=ctrl.ClientType.E_TCPCLIENT,
        process_name="t",
        pid=1,
        session_id=1,
        host_name="h",
        features="PROTOCOL_ENCODING:JSON",
        cluster_name="",
        cluster_node_id=-1,
        sdk_language=ctrl.ClientLanguage.E_CPP,
        guid_info=ctrl.GuidInfo(client_id="", nano_seconds_from_epoch=0),
    )
    return encode_control_event(encode_json(ctrl.NegotiationMessage(client_identity=identity)))


def test_a_session_walks_negotiating_open_disconnecting_closed() -> None:
    broker = Broker(BrokerConfig())
    session = broker.connect("peer", 0.0)
    seen = [session.state]
    original = session.advance

    def spy(event: SessionInput) -> None:
        original(event)
        seen.append(session.state)

    session.advance = spy  # type: ignore[method-assign]
    session.receive_data(_identity(), 0.0)
    disconnect = ctrl.ControlMessage(r_id=1, disconnect=ctrl.Disconnect())
    session.receive_data(encode_control_event(encode_json(disconnect)), 0.1)
    assert seen == [S.NEGOTIATING, S.OPEN, S.DISCONNECTING, S.CLOSED]
    assert session.close_reason == "client disconnected"
