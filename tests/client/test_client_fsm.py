"""The session and queue state tables: every legal move, and illegal ones raising a typed error."""

from __future__ import annotations

import pytest
from pybmq.client.fsm import (
    QUEUE_TRANSITIONS,
    SESSION_TRANSITIONS,
    QueueInput,
    QueueState,
    SessionInput,
    SessionState,
    step,
)
from pybmq.errors import InvalidTransitionError, UsageError


def walk_session(*inputs: SessionInput) -> SessionState:
    state = SessionState.CREATED
    for event in inputs:
        state = step("session", SESSION_TRANSITIONS, state, event)
    return state


def test_session_happy_path() -> None:
    i = SessionInput
    assert walk_session(i.START, i.CONNECTED, i.NEGOTIATED) is SessionState.STARTED
    assert (
        walk_session(i.START, i.CONNECTED, i.NEGOTIATED, i.STOP, i.DISCONNECTED)
        is SessionState.STOPPED
    )


@pytest.mark.parametrize(
    "inputs",
    [
        (SessionInput.CONNECTED,),  # transport before start()
        (SessionInput.START, SessionInput.NEGOTIATED),  # broker response before we connected
        (SessionInput.START, SessionInput.CONNECTED, SessionInput.NEGOTIATED, SessionInput.START),
        (SessionInput.START, SessionInput.CONNECTED, SessionInput.DISCONNECTED),
    ],
)
def test_session_illegal_transitions(inputs: tuple[SessionInput, ...]) -> None:
    with pytest.raises(InvalidTransitionError) as info:
        walk_session(*inputs)
    assert isinstance(info.value, UsageError)
    assert info.value.event == inputs[-1].value


def test_connection_loss_always_ends_in_stopped() -> None:
    for state in SessionState:
        if state in (SessionState.CREATED, SessionState.RECONNECTING):
            continue
        assert SESSION_TRANSITIONS[(state, SessionInput.CONNECTION_LOST)] is SessionState.STOPPED


def test_queue_lifecycle_and_illegal_moves() -> None:
    q, j = QueueState, QueueInput
    state = q.CLOSED
    for event, expected in [
        (j.OPEN, q.OPENING),
        (j.OPEN_OK, q.CONFIGURING),
        (j.CONFIGURE_OK, q.OPENED),
        (j.CONFIGURE, q.OPENED),
        (j.CLOSE, q.CLOSING),
        (j.CLOSE_DONE, q.CLOSED),
    ]:
        state = step("queue", QUEUE_TRANSITIONS, state, event)
        assert state is expected
    with pytest.raises(InvalidTransitionError, match="CLOSE is not allowed in state CLOSED"):
        step("queue", QUEUE_TRANSITIONS, q.CLOSED, j.CLOSE)
    with pytest.raises(InvalidTransitionError):
        step("queue", QUEUE_TRANSITIONS, q.OPENING, j.CONFIGURE)
    for state in QueueState:
        assert QUEUE_TRANSITIONS[(state, j.SESSION_DOWN)] is q.CLOSED
