"""The session and queue state machines as tables (h11 style): state x input → next state.

Every state change in the engine goes through :func:`step`, so the legal moves are all visible here
and an illegal one raises :class:`~pybmq.errors.InvalidTransitionError` in one place.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TypeVar

from pybmq.errors import InvalidTransitionError


class SessionState(enum.Enum):
    CREATED = "CREATED"
    CONNECTING = "CONNECTING"  # start() called; waiting for the transport to come up
    AUTHENTICATING = "AUTHENTICATING"  # AuthenticationRequest sent; waiting for the response
    NEGOTIATING = "NEGOTIATING"  # ClientIdentity sent; waiting for BrokerResponse
    STARTED = "STARTED"
    STOPPING = "STOPPING"  # closing queues, then Disconnect → DisconnectResponse
    STOPPED = "STOPPED"
    RECONNECTING = "RECONNECTING"  # connection lost; the shell is reconnecting (queues kept)


class SessionInput(enum.Enum):
    START = "START"  # user
    CONNECTED = "CONNECTED"  # transport
    CONNECTED_AUTH = "CONNECTED_AUTH"  # transport up, and a credential to present first
    AUTHENTICATED = "AUTHENTICATED"  # broker accepted the credential
    AUTHENTICATION_FAILED = "AUTHENTICATION_FAILED"  # refused, timed out or no credential
    NEGOTIATED = "NEGOTIATED"  # broker accepted the ClientIdentity
    NEGOTIATION_FAILED = "NEGOTIATION_FAILED"  # broker refused, or answered nonsense
    STOP = "STOP"  # user
    DISCONNECTED = "DISCONNECTED"  # DisconnectResponse received
    STOP_TIMED_OUT = "STOP_TIMED_OUT"  # the broker never answered our Disconnect
    CONNECTION_LOST = "CONNECTION_LOST"  # transport closed or failed, or heartbeats missed
    CONNECTION_DROPPED = "CONNECTION_DROPPED"  # the same, with reconnect enabled


S, E = SessionState, SessionInput
SESSION_TRANSITIONS: Mapping[tuple[SessionState, SessionInput], SessionState] = {
    (S.CREATED, E.START): S.CONNECTING,
    (S.CREATED, E.STOP): S.STOPPED,
    (S.CONNECTING, E.CONNECTED): S.NEGOTIATING,
    (S.CONNECTING, E.CONNECTED_AUTH): S.AUTHENTICATING,
    (S.AUTHENTICATING, E.AUTHENTICATED): S.NEGOTIATING,
    (S.AUTHENTICATING, E.AUTHENTICATION_FAILED): S.STOPPED,
    (S.AUTHENTICATING, E.STOP): S.STOPPED,
    (S.AUTHENTICATING, E.CONNECTION_LOST): S.STOPPED,
    (S.AUTHENTICATING, E.CONNECTION_DROPPED): S.RECONNECTING,  # only while reconnecting
    (S.RECONNECTING, E.CONNECTED_AUTH): S.AUTHENTICATING,
    (S.CONNECTING, E.STOP): S.STOPPED,
    (S.CONNECTING, E.CONNECTION_LOST): S.STOPPED,
    (S.NEGOTIATING, E.NEGOTIATED): S.STARTED,
    (S.NEGOTIATING, E.NEGOTIATION_FAILED): S.STOPPED,
    (S.NEGOTIATING, E.STOP): S.STOPPED,
    (S.NEGOTIATING, E.CONNECTION_LOST): S.STOPPED,
    (S.STARTED, E.STOP): S.STOPPING,
    (S.STARTED, E.CONNECTION_LOST): S.STOPPED,
    (S.STOPPING, E.STOP): S.STOPPING,
    (S.STOPPING, E.DISCONNECTED): S.STOPPED,
    (S.STOPPING, E.STOP_TIMED_OUT): S.STOPPED,
    (S.STOPPING, E.CONNECTION_LOST): S.STOPPED,
    (S.STARTED, E.CONNECTION_DROPPED): S.RECONNECTING,
    (S.NEGOTIATING, E.CONNECTION_DROPPED): S.RECONNECTING,  # only while reconnecting
    (S.RECONNECTING, E.CONNECTION_DROPPED): S.RECONNECTING,
    (S.RECONNECTING, E.CONNECTED): S.NEGOTIATING,
    (S.RECONNECTING, E.STOP): S.STOPPED,
    (S.RECONNECTING, E.CONNECTION_LOST): S.STOPPED,
    (S.STOPPED, E.STOP): S.STOPPED,
    (S.STOPPED, E.CONNECTION_LOST): S.STOPPED,
}
del S, E


class QueueState(enum.Enum):
    """Our side of a queue (proton's local endpoint state)."""

    CLOSED = "CLOSED"
    OPENING = "OPENING"  # OpenQueue sent
    CONFIGURING = "CONFIGURING"  # OpenQueue accepted; ConfigureStream sent
    OPENED = "OPENED"
    CLOSING = "CLOSING"  # ConfigureStream(empty) and/or CloseQueue sent


class QueueInput(enum.Enum):
    OPEN = "OPEN"  # user
    OPEN_OK = "OPEN_OK"
    OPEN_FAILED = "OPEN_FAILED"
    CONFIGURE_OK = "CONFIGURE_OK"  # the open's ConfigureStream
    CONFIGURE_FAILED = "CONFIGURE_FAILED"  # the open's ConfigureStream: undo the open
    CONFIGURE = "CONFIGURE"  # user: standalone reconfigure of an open queue
    CLOSE = "CLOSE"  # user
    CLOSE_DONE = "CLOSE_DONE"  # CloseQueue answered (either way: we are detached)
    SESSION_DOWN = "SESSION_DOWN"  # the session stopped or lost its connection


class RemoteQueueState(enum.Enum):
    """The broker's side of a queue as last confirmed by a response (proton's remote state)."""

    CLOSED = "CLOSED"
    OPENED = "OPENED"  # OpenQueueResponse seen
    CONFIGURED = "CONFIGURED"  # ConfigureStreamResponse seen: messages can flow


Q, J = QueueState, QueueInput
QUEUE_TRANSITIONS: Mapping[tuple[QueueState, QueueInput], QueueState] = {
    (Q.CLOSED, J.OPEN): Q.OPENING,
    (Q.OPENING, J.OPEN_OK): Q.CONFIGURING,
    (Q.OPENING, J.OPEN_FAILED): Q.CLOSED,
    (Q.CONFIGURING, J.CONFIGURE_OK): Q.OPENED,
    (Q.CONFIGURING, J.CONFIGURE_FAILED): Q.CLOSING,
    (Q.OPENED, J.CONFIGURE): Q.OPENED,
    (Q.OPENED, J.CLOSE): Q.CLOSING,
    (Q.CLOSING, J.CLOSE_DONE): Q.CLOSED,
    **{(state, J.SESSION_DOWN): Q.CLOSED for state in Q},
}
del Q, J


class HealthState(enum.Enum):
    """A host-health-sensitive queue's suspension (``bmqimp::Queue``'s isSuspended and
    isSuspendedWithBroker), orthogonal to QueueState: posts are refused unless ACTIVE."""

    ACTIVE = "ACTIVE"
    SUSPENDING = "SUSPENDING"  # the host turned unhealthy; ConfigureStream(nothing) sent
    SUSPENDED = "SUSPENDED"  # the broker delivers nothing to this queue
    RESUMING = "RESUMING"  # the host is healthy again; ConfigureStream(options) sent


class HealthInput(enum.Enum):
    SUSPEND = "SUSPEND"  # the host is unhealthy (a reader then asks the broker to stop)
    SUSPEND_AT_OPEN = "SUSPEND_AT_OPEN"  # opened while the host is unhealthy: configured empty
    RESUME = "RESUME"  # the host is healthy again
    DONE = "DONE"  # the broker answered the suspend/resume (either way), or nothing to send
    CONNECTION_DROPPED = "CONNECTION_DROPPED"  # the request is gone; reopen configures empty


H, K = HealthState, HealthInput
HEALTH_TRANSITIONS: Mapping[tuple[HealthState, HealthInput], HealthState] = {
    (H.ACTIVE, K.SUSPEND): H.SUSPENDING,
    (H.ACTIVE, K.SUSPEND_AT_OPEN): H.SUSPENDED,
    (H.SUSPENDING, K.DONE): H.SUSPENDED,
    (H.SUSPENDED, K.RESUME): H.RESUMING,
    (H.RESUMING, K.DONE): H.ACTIVE,
    (H.ACTIVE, K.CONNECTION_DROPPED): H.ACTIVE,
    (H.SUSPENDING, K.CONNECTION_DROPPED): H.SUSPENDED,
    (H.SUSPENDED, K.CONNECTION_DROPPED): H.SUSPENDED,
    (H.RESUMING, K.CONNECTION_DROPPED): H.SUSPENDED,  # resumed again once reopened
}
del H, K

StateT = TypeVar("StateT", bound=enum.Enum)
InputT = TypeVar("InputT", bound=enum.Enum)


def step(
    machine: str,
    table: Mapping[tuple[StateT, InputT], StateT],
    state: StateT,
    event: InputT,
) -> StateT:
    """The state after ``event`` in ``state``; raises InvalidTransitionError if the table has none."""
    try:
        return table[(state, event)]
    except KeyError:
        raise InvalidTransitionError(machine, state.value, event.value) from None
