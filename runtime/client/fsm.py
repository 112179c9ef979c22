"""Every state machine of the client engine as a table (h11 style): state x input → next state.

Every state change in the engine goes through :func:`step` on one of these tables, so the legal
moves are all visible here and an illegal one raises :class:`~pybmq.errors.InvalidTransitionError`
in one place (``tests/test_architecture.py`` fails on a state attribute assigned any other way).

The machines: the session (``SessionState``); whether its queues are being restored after a
reconnect (``RecoveryState``); whether the Disconnect of a graceful stop went out
(``DisconnectState``); the host's health as the session tracks it (``HostState``); the channel's write side (``WriteState``); the application's backlog (``BacklogState``); and per
queue, our side (``QueueState``), the broker's side (``RemoteQueueState``) and its suspension
(``HealthState``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from pybmq.statemachine import step


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


class RemoteQueueInput(enum.Enum):
    OPENED = "OPENED"  # OpenQueueResponse (open or reopen)
    CONFIGURED = "CONFIGURED"  # the open's (or reopen's) ConfigureStreamResponse
    DECONFIGURED = "DECONFIGURED"  # the close's ConfigureStream(nothing) answered
    CLOSED = "CLOSED"  # CloseQueueResponse, or the session or its connection went away


R, X = RemoteQueueState, RemoteQueueInput
REMOTE_QUEUE_TRANSITIONS: Mapping[tuple[RemoteQueueState, RemoteQueueInput], RemoteQueueState] = {
    (R.CLOSED, X.OPENED): R.OPENED,
    (R.OPENED, X.CONFIGURED): R.CONFIGURED,
    (R.CONFIGURED, X.CONFIGURED): R.CONFIGURED,  # a reopen's configure after an open one
    (R.CONFIGURED, X.DECONFIGURED): R.OPENED,
    (R.OPENED, X.DECONFIGURED): R.OPENED,  # a write-only or never-configured queue
    **{(state, X.CLOSED): R.CLOSED for state in R},
}
del R, X


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


class RecoveryState(enum.Enum):
    """Whether the session is restoring its queues after a reconnect (posts are held, confirms
    of the lost connection's messages dropped) — orthogonal to SessionState."""

    LIVE = "LIVE"  # nothing to restore
    RESTORING = "RESTORING"  # from a connection drop until every queue is reopened


class RecoveryInput(enum.Enum):
    CONNECTION_DROPPED = "CONNECTION_DROPPED"
    QUEUES_RESTORED = "QUEUES_RESTORED"  # the last reopen answered: StateRestored
    SESSION_ENDED = "SESSION_ENDED"  # stopped or failed: nothing left to restore


V, W = RecoveryState, RecoveryInput
RECOVERY_TRANSITIONS: Mapping[tuple[RecoveryState, RecoveryInput], RecoveryState] = {
    (V.LIVE, W.CONNECTION_DROPPED): V.RESTORING,
    (V.RESTORING, W.CONNECTION_DROPPED): V.RESTORING,
    (V.RESTORING, W.QUEUES_RESTORED): V.LIVE,
    (V.LIVE, W.SESSION_ENDED): V.LIVE,
    (V.RESTORING, W.SESSION_ENDED): V.LIVE,
}
del V, W


class DisconnectState(enum.Enum):
    """A graceful stop's last request: Disconnect goes out once no queue is mid-request."""

    NOT_SENT = "NOT_SENT"
    SENT = "SENT"


class DisconnectInput(enum.Enum):
    SEND = "SEND"


DISCONNECT_TRANSITIONS: Mapping[tuple[DisconnectState, DisconnectInput], DisconnectState] = {
    (DisconnectState.NOT_SENT, DisconnectInput.SEND): DisconnectState.SENT,
}


class HostState(enum.Enum):
    """The host's health as the session tracks it (the C++ SDK's HostUnhealthy /
    HostHealthRestored pair): HostHealthRestored is owed from UNHEALTHY until every sensitive
    queue has resumed."""

    HEALTHY = "HEALTHY"
    UNHEALTHY = "UNHEALTHY"
    RECOVERING = "RECOVERING"  # healthy again; queues resuming, HostHealthRestored owed


class HostInput(enum.Enum):
    UNHEALTHY = "UNHEALTHY"  # the monitor's verdict
    HEALTHY = "HEALTHY"  # the monitor's verdict
    ALL_RESUMED = "ALL_RESUMED"  # every queue active again: HostHealthRestored


T, U = HostState, HostInput
HOST_TRANSITIONS: Mapping[tuple[HostState, HostInput], HostState] = {
    (T.HEALTHY, U.UNHEALTHY): T.UNHEALTHY,
    (T.UNHEALTHY, U.HEALTHY): T.RECOVERING,
    (T.RECOVERING, U.UNHEALTHY): T.UNHEALTHY,
    (T.RECOVERING, U.ALL_RESUMED): T.HEALTHY,
}
del T, U


class WriteState(enum.Enum):
    """The channel's write side as the shell reports it: BLOCKED from its high watermark down to
    its low one (the broker is not reading what we send). While BLOCKED the engine answers no
    HEARTBEAT_REQ (what is already queued tells the broker we are alive as well as an answer
    would), so a broker that sends and never reads cannot grow the client's buffer."""

    OPEN = "OPEN"
    BLOCKED = "BLOCKED"


class WriteInput(enum.Enum):
    HIGH_WATERMARK = "HIGH_WATERMARK"
    LOW_WATERMARK = "LOW_WATERMARK"
    NEW_CONNECTION = "NEW_CONNECTION"  # an empty buffer again


WS, WI = WriteState, WriteInput
WRITE_TRANSITIONS: Mapping[tuple[WriteState, WriteInput], WriteState] = {
    (WS.OPEN, WI.HIGH_WATERMARK): WS.BLOCKED,
    (WS.BLOCKED, WI.HIGH_WATERMARK): WS.BLOCKED,
    (WS.BLOCKED, WI.LOW_WATERMARK): WS.OPEN,
    (WS.OPEN, WI.LOW_WATERMARK): WS.OPEN,
    (WS.OPEN, WI.NEW_CONNECTION): WS.OPEN,
    (WS.BLOCKED, WI.NEW_CONNECTION): WS.OPEN,
}
del WS, WI


class BacklogState(enum.Enum):
    """The application's backlog as the asyncio shell sees it (messages delivered to its queues
    and not taken yet): HIGH from ``slow_consumer_watermarks``' high mark down to its low one
    (the native SlowConsumerHighWatermark / SlowConsumerNormal events)."""

    NORMAL = "NORMAL"
    HIGH = "HIGH"


class BacklogInput(enum.Enum):
    REACHED_HIGH = "REACHED_HIGH"
    DOWN_TO_LOW = "DOWN_TO_LOW"


BACKLOG_TRANSITIONS: Mapping[tuple[BacklogState, BacklogInput], BacklogState] = {
    (BacklogState.NORMAL, BacklogInput.REACHED_HIGH): BacklogState.HIGH,
    (BacklogState.HIGH, BacklogInput.DOWN_TO_LOW): BacklogState.NORMAL,
}

__all__ = [
    "BACKLOG_TRANSITIONS",
    "DISCONNECT_TRANSITIONS",
    "HEALTH_TRANSITIONS",
    "HOST_TRANSITIONS",
    "QUEUE_TRANSITIONS",
    "RECOVERY_TRANSITIONS",
    "REMOTE_QUEUE_TRANSITIONS",
    "SESSION_TRANSITIONS",
    "WRITE_TRANSITIONS",
    "BacklogInput",
    "BacklogState",
    "DisconnectInput",
    "DisconnectState",
    "HealthInput",
    "HealthState",
    "HostInput",
    "HostState",
    "QueueInput",
    "QueueState",
    "RecoveryInput",
    "RecoveryState",
    "RemoteQueueInput",
    "RemoteQueueState",
    "SessionInput",
    "SessionState",
    "WriteInput",
    "WriteState",
    "step",
]
