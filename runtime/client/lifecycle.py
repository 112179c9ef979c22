"""The session's own state: where it is in its life (``SessionState``), whether it is restoring
its queues after a reconnect (``RecoveryState``), whether a graceful stop's Disconnect went out
(``DisconnectState``), whether the channel's writes are blocked (``WriteState``), which
connection it is on (``generation``), and the user operations a stop completes. Every change of
state is a row of a table in :mod:`pybmq.client.fsm`.

The connection (:mod:`pybmq.client.connection`) moves these machines; the other parts only read
them. The time is not kept here: every input brings its ``now``, and the parts get it as an
argument.
"""

from __future__ import annotations

from pybmq.client.fsm import (
    DISCONNECT_TRANSITIONS,
    RECOVERY_TRANSITIONS,
    SESSION_TRANSITIONS,
    WRITE_TRANSITIONS,
    DisconnectInput,
    DisconnectState,
    RecoveryInput,
    RecoveryState,
    SessionInput,
    SessionState,
    WriteInput,
    WriteState,
    step,
)
from pybmq.errors import SessionStoppedError, UsageError

__all__ = ["Lifecycle"]

_STARTED = SessionState.STARTED
_STOPPED = SessionState.STOPPED
_RESTORING = RecoveryState.RESTORING
_OFFLINE = (SessionState.RECONNECTING, SessionState.AUTHENTICATING, SessionState.NEGOTIATING)


class Lifecycle:
    """The session's states and the stop's bookkeeping; the parts read it, the connection
    moves it."""

    def __init__(self) -> None:
        self.state = SessionState.CREATED
        self.recovery = RecoveryState.LIVE
        self.disconnect = DisconnectState.NOT_SENT
        self.writes = WriteState.OPEN  # the channel's write side, as the shell reports it
        # Counts connections; a CONFIRM for a message of an earlier one is dropped (redelivered).
        self.generation = 0
        self.stop_op: int | None = None
        self.stop_deadline: float | None = None
        self.extra_stop_ops: list[int] = []  # later stop() calls, completed with the first

    def step(self, event: SessionInput) -> None:
        self.state = step("session", SESSION_TRANSITIONS, self.state, event)

    def recovery_step(self, event: RecoveryInput) -> None:
        self.recovery = step("session recovery", RECOVERY_TRANSITIONS, self.recovery, event)

    def disconnect_step(self, event: DisconnectInput) -> None:
        self.disconnect = step("disconnect", DISCONNECT_TRANSITIONS, self.disconnect, event)

    def write_step(self, event: WriteInput) -> None:
        self.writes = step("channel writes", WRITE_TRANSITIONS, self.writes, event)

    def connection_dropped(self) -> bool:
        """The connection is gone and the session lives on: the session reconnects, a new
        connection (generation) begins and the queues are to be restored. True for the first
        drop (nothing was being restored yet)."""
        self.step(SessionInput.CONNECTION_DROPPED)
        self.generation += 1
        first = self.recovery is not _RESTORING
        self.recovery_step(RecoveryInput.CONNECTION_DROPPED)
        return first

    @property
    def restoring(self) -> bool:
        """Reconnecting or reopening queues (posts are held), in a session not over."""
        return self.recovery is _RESTORING and self.state is not _STOPPED

    @property
    def disconnect_sent(self) -> bool:
        return self.disconnect is DisconnectState.SENT

    @property
    def offline(self) -> bool:
        """Reconnecting and not yet negotiated again: a request made now is held."""
        return self.recovery is _RESTORING and self.state in _OFFLINE

    def require_started(self, what: str) -> None:
        """UsageError (SessionStoppedError once stopping) unless ``what`` can be done now."""
        if self.recovery is _RESTORING and self.state is not _STOPPED:
            raise UsageError(f"cannot {what}: the session is reconnecting (wait for StateRestored)")
        if self.state is not _STARTED:
            if self.state in (SessionState.STOPPING, _STOPPED):
                raise SessionStoppedError(f"cannot {what}: session is {self.state.value}")
            raise UsageError(f"cannot {what}: session is {self.state.value}, not STARTED")
