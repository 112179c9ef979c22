"""Session events with the official SDK's class names, equality and ``repr``.

``repr`` is ``<Name>`` or ``<Name: text>`` (queue events: ``<Name: uri>`` / ``<Name: uri text>``);
two events are equal when they are of the same class with the same text (and queue URI).
"""

from __future__ import annotations

import logging

LOGGER = logging.getLogger(__name__)


class SessionEvent:
    """Base of every event passed to ``on_session_event``."""

    def __init__(self, message: str | None) -> None:
        self._message = message

    def __repr__(self) -> str:
        name = type(self).__name__
        return f"<{name}: {self._message}>" if self._message else f"<{name}>"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SessionEvent):
            return False
        return type(self) is type(other) and vars(self) == vars(other)

    def __ne__(self, other: object) -> bool:
        return not self == other


class QueueEvent(SessionEvent):
    """An event about one queue; ``queue_uri`` names it."""

    def __init__(self, queue_uri: str, message: str | None = None) -> None:
        self.queue_uri = queue_uri
        super().__init__(message)

    def __repr__(self) -> str:
        name = type(self).__name__
        if self._message:
            return f"<{name}: {self.queue_uri} {self._message}>"
        return f"<{name}: {self.queue_uri}>"

    def __eq__(self, other: object) -> bool:
        if type(self) is not type(other):
            return NotImplemented
        return vars(self) == vars(other)  # the same text and queue URI


class Connected(SessionEvent):
    """The session is connected to its broker (sent once, after the session starts)."""


class Disconnected(SessionEvent):
    """The session was stopped and its connection closed (sent before ``stop()`` returns)."""


class ConnectionLost(SessionEvent):
    """The connection dropped without ``stop()``; the session reconnects on its own."""


class Reconnected(SessionEvent):
    """A new connection to the broker negotiated after a ConnectionLost; queues reopen next."""


class StateRestored(SessionEvent):
    """Every queue open before the loss is reopened (or reported failed); posts flow again."""


class ConnectionTimeout(SessionEvent):
    """Never sent by pybmq: a session that cannot connect raises BrokerTimeoutError instead."""


class HostUnhealthy(SessionEvent):
    """The session's BasicHealthMonitor was set unhealthy (also sent at start if it already is)."""


class HostHealthRestored(SessionEvent):
    """The monitor is healthy again; sent after the QueueResumed events."""


class QueueSuspended(QueueEvent):
    """A queue opened with ``suspends_on_bad_host_health=True`` stopped working (host unhealthy)."""


class QueueSuspendFailed(QueueEvent):
    """The broker refused (or did not answer) the request that suspends a queue."""


class QueueResumed(QueueEvent):
    """A suspended queue works again."""


class QueueResumeFailed(QueueEvent):
    """The broker refused (or did not answer) the request that resumes a suspended queue."""


class QueueReopened(QueueEvent):
    """A queue that was open before a reconnect is open again, with its last options."""


class QueueReopenFailed(QueueEvent):
    """A queue could not be reopened after a reconnect; its pending posts were NACKed."""


class SlowConsumerNormal(SessionEvent):
    """The backlog of undelivered messages fell back to the low event-queue watermark."""


class SlowConsumerHighWaterMark(SessionEvent):
    """The backlog of messages waiting for ``on_message`` reached the high event-queue watermark."""


class Error(SessionEvent):
    """Something went wrong outside any call (e.g. the broker broke the protocol)."""


class InterfaceError(SessionEvent):
    """The client itself misbehaved; report it as a bug."""


_INFO = (
    Connected,
    Disconnected,
    StateRestored,
    SlowConsumerNormal,
    QueueReopened,
    HostUnhealthy,
    HostHealthRestored,
    QueueSuspended,
    QueueResumed,
)
_WARNING = (ConnectionLost, Reconnected, SlowConsumerHighWaterMark)


def log_session_event(event: SessionEvent) -> None:
    """A ready-made ``on_session_event``: routine events at INFO, worrying ones at WARNING,
    failures at ERROR, on this module's logger."""
    if isinstance(event, _INFO):
        level = logging.INFO
    elif isinstance(event, _WARNING):
        level = logging.WARNING
    else:
        level = logging.ERROR
    LOGGER.log(level, "Received session event: %s", event)


__all__ = [
    "Connected",
    "ConnectionLost",
    "ConnectionTimeout",
    "Disconnected",
    "Error",
    "HostHealthRestored",
    "HostUnhealthy",
    "InterfaceError",
    "QueueEvent",
    "QueueReopenFailed",
    "QueueReopened",
    "QueueResumeFailed",
    "QueueResumed",
    "QueueSuspendFailed",
    "QueueSuspended",
    "Reconnected",
    "SessionEvent",
    "SlowConsumerHighWaterMark",
    "SlowConsumerNormal",
    "StateRestored",
    "log_session_event",
]
