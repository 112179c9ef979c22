"""The simulator's client session as a state machine: its states, the inputs that move it, and
the table of legal moves. ``ClientSession`` changes state only through :func:`advance`.

Authentication is not a state here: whether a ClientIdentity may come yet, and when the
credential expires, is kept by ``pybmq.sim.auth.SessionAuth`` and checked on each event.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from pybmq.statemachine import step

__all__ = ["SESSION_TRANSITIONS", "SessionInput", "SessionState", "advance"]


class SessionState(enum.Enum):
    NEGOTIATING = "negotiating"  # connected; waiting for the ClientIdentity
    OPEN = "open"  # negotiated: requests and data flow
    DISCONNECTING = "disconnecting"  # the disconnect request was answered; closing now
    CLOSED = "closed"  # released; nothing more is read


class SessionInput(enum.Enum):
    NEGOTIATED = "NEGOTIATED"  # the ClientIdentity was accepted
    DISCONNECT = "DISCONNECT"  # the client asked to disconnect, and was answered
    CLOSE = "CLOSE"  # any end: refusal, violation, lost connection, fault, expiry, our bug


S, E = SessionState, SessionInput
SESSION_TRANSITIONS: Mapping[tuple[SessionState, SessionInput], SessionState] = {
    (S.NEGOTIATING, E.NEGOTIATED): S.OPEN,
    (S.NEGOTIATING, E.CLOSE): S.CLOSED,
    (S.OPEN, E.DISCONNECT): S.DISCONNECTING,
    (S.OPEN, E.CLOSE): S.CLOSED,
    (S.DISCONNECTING, E.CLOSE): S.CLOSED,
}
del S, E


def advance(state: SessionState, event: SessionInput) -> SessionState:
    """The state after ``event``; InvalidTransitionError if the table has no such move."""
    return step("sim session", SESSION_TRANSITIONS, state, event)
