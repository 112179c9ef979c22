"""Queues: open, configure, close and reopen, each as a chain of control requests whose answers
move the queue through ``QUEUE_TRANSITIONS`` (our side) and ``REMOTE_QUEUE_TRANSITIONS`` (the
broker's side). Each request kind has its handler for an answer and for a failure
(``ok_handlers``/``failed_handlers``), so an answer goes straight to the code for its step.

It is also where the session's news reaches each queue: a stop closes them, a lost connection
keeps the open ones for a reopen and drops the others, and the end of the session ends them all
(the engine tells it: ``session_stopping``, ``connection_dropped``, ``session_ended``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from pybmq.client.collector import Collector
from pybmq.client.configure import StreamConfigurer
from pybmq.client.credit import CreditLedger, at_most_once
from pybmq.client.events import (
    AckStatus,
    QueueReopened,
    StateRestored,
)
from pybmq.client.fsm import (
    HealthInput,
    QueueInput,
    QueueState,
    RecoveryInput,
    RecoveryState,
    RemoteQueueInput,
    SessionState,
)
from pybmq.client.handshake import Negotiated
from pybmq.client.lifecycle import Lifecycle
from pybmq.client.options import QueueOptions, checked_timeout
from pybmq.client.publishing import Publisher
from pybmq.client.queue_table import QueueTable
from pybmq.client.records import (
    FLAG_ACK,
    FLAG_READ,
    FLAG_WRITE,
    PendingRequest,
    QueueRecord,
    Req,
)
from pybmq.client.requests import RequestTable
from pybmq.client.suspension import HostHealth
from pybmq.errors import (
    PybmqError,
    SessionStoppedError,
    UsageError,
)
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.uri import QUEUE_NAME_MAX_LENGTH, require_queue_uri

__all__ = ["CONFIGURE_REQUESTS", "FailedHandler", "OkHandler", "QueueControl"]

log = logging.getLogger("pybmq.client.engine")

CONFIGURE_REQUESTS = (Req.CONFIGURE_OPEN, Req.CONFIGURE, Req.CONFIGURE_CLOSE, Req.REOPEN_CONFIGURE)
OkHandler = Callable[[QueueRecord, ctrl.ControlMessage, float], None]
FailedHandler = Callable[[QueueRecord, PybmqError, float], None]
_LIVE_STATES = (SessionState.STARTED, SessionState.STOPPING)


class QueueControl:
    """The queue operations and their request chains, over the queue table."""

    def __init__(
        self,
        lifecycle: Lifecycle,
        table: QueueTable,
        requests: RequestTable,
        configurer: StreamConfigurer,
        host_health: HostHealth,
        publisher: Publisher,
        credit: CreditLedger,
        collector: Collector,
    ) -> None:
        self._lifecycle = lifecycle
        self._table = table
        self._requests = requests
        self._configurer = configurer
        self._host_health = host_health
        self._publisher = publisher  # the posts of a queue that goes away are cancelled
        self._credit = credit
        self._collector = collector
        self.reopening: set[int] = set()  # queue handles whose reopen is unanswered
        self.ok_handlers: dict[str, OkHandler] = {
            Req.OPEN: self._opened,
            Req.CONFIGURE_OPEN: self._configured_for_open,
            Req.CONFIGURE: self._configured,
            Req.CONFIGURE_CLOSE: self._deconfigured,
            Req.CLOSE: lambda queue, _message, now: self._closed(queue, None, now),
            Req.REOPEN: self._reopened_remote,
            Req.REOPEN_CONFIGURE: self._reconfigured,
        }
        self.failed_handlers: dict[str, FailedHandler] = {
            Req.OPEN: self._open_failed,
            Req.CONFIGURE_OPEN: self._configure_for_open_failed,
            Req.CONFIGURE: self._configure_failed,
            Req.CONFIGURE_CLOSE: lambda queue, _error, now: self._send_close(queue, now),
            Req.CLOSE: self._closed,
            Req.REOPEN: self._reopen_failed,
            Req.REOPEN_CONFIGURE: self._reopen_failed,
        }

    @property
    def broker_configure_stream(self) -> bool:
        return self._configurer.broker_configure_stream

    def negotiated(self, outcome: Negotiated) -> None:
        """Whether the broker takes ConfigureStream (subscriptions)."""
        self._configurer.broker_configure_stream = outcome.configure_stream

    def _request(
        self, message: ctrl.ControlMessage, kind: str, queue: QueueRecord, now: float
    ) -> None:
        self._requests.send(message, kind, queue.queue_id, None, now, queue.request_timeout)

    def _start_op(self, queue: QueueRecord, timeout: float | None) -> int:
        op_id = self._collector.new_op()
        queue.op_id = op_id
        queue.op_timeout = checked_timeout(timeout)
        return op_id

    # -- the user's operations ------------------------------------------------------------

    def open_queue(
        self,
        uri: str,
        now: float,
        *,
        read: bool = False,
        write: bool = False,
        ack: bool = True,
        options: QueueOptions | None = None,
        timeout: float | None = None,
    ) -> tuple[int, int]:
        """``ClientEngine.open_queue``: OpenQueue now, ConfigureStream once it is answered.
        While the session reconnects the OpenQueue is held (its timeout running) and sent once
        the session's queues are restored, as the C++ SDK does; once connected again it goes
        out at once, beside the reopens."""
        lifecycle = self._lifecycle
        offline = lifecycle.offline
        if not (offline or (lifecycle.restoring and lifecycle.state is SessionState.STARTED)):
            lifecycle.require_started("open a queue")
        if not (read or write):
            raise UsageError("open_queue needs read=True and/or write=True")
        parsed = require_queue_uri(uri)
        if len(parsed.queue) > QUEUE_NAME_MAX_LENGTH:
            raise UsageError(
                f"QUEUE_NAME_TOO_LONG: the queue name of {uri!r} exceeds "
                f"{QUEUE_NAME_MAX_LENGTH} characters"
            )
        base_uri, app_id = parsed.base, parsed.app_id
        if app_id is not None and not read:
            raise UsageError(f"an appId (?id=) only makes sense for a reader: {uri!r}")
        flags = (FLAG_READ if read else 0) | (FLAG_WRITE if write else 0)
        if write and ack:
            flags |= FLAG_ACK
        queue = self._table.add(uri, base_uri, app_id, flags)
        queue.options = options or QueueOptions()
        queue.step(QueueInput.OPEN)
        op_id = self._start_op(queue, timeout)
        if self._host_health.wants_suspended(queue):
            # Configured empty, posts refused from the start.
            queue.health_step(HealthInput.SUSPEND_AT_OPEN)
        if offline:
            self._requests.hold(
                self._open_message(queue), Req.OPEN, queue.queue_id, now, queue.request_timeout
            )
        else:
            self._request(self._open_message(queue), Req.OPEN, queue, now)
        return op_id, queue.queue_id

    def configure_queue(
        self,
        queue_id: int,
        options: QueueOptions,
        now: float,
        *,
        suspended: bool = False,
        timeout: float | None = None,
    ) -> int:
        """``ClientEngine.configure_queue``; a queue suspended for host health keeps the
        options for its resume instead."""
        self._lifecycle.require_started("configure a queue")
        queue = self._table.get(queue_id)
        if not queue.readable:
            raise UsageError(f"only a reader can be configured; {queue.uri} was opened write-only")
        if queue.suspended:
            return self._host_health.configure_suspended(queue, options, now)
        if queue.op_id is not None:
            raise UsageError(f"queue {queue.uri} already has an operation in progress")
        queue.step(QueueInput.CONFIGURE)
        op_id = self._start_op(queue, timeout)
        self._configurer.send(queue, Req.CONFIGURE, options, now, empty=suspended)
        return op_id

    def close_queue(self, queue_id: int, now: float, timeout: float | None = None) -> int:
        """``ClientEngine.close_queue``."""
        if self._lifecycle.state is not SessionState.RECONNECTING:
            self._lifecycle.require_started("close a queue")
        queue = self._table.get(queue_id)
        if queue.op_id is not None:
            raise UsageError(f"queue {queue.uri} already has an operation in progress")
        queue.step(QueueInput.CLOSE)
        if self._lifecycle.state is SessionState.RECONNECTING:
            # No connection, so nothing is attached on the broker's side: closed here, and
            # not reopened after the reconnect (the C++ SDK closes a pending queue so too).
            op_id = self._collector.new_op()
            queue.step(QueueInput.SESSION_DOWN)
            self._publisher.cancel(queue, AckStatus.CANCELED, "queue closed")
            self._forget(queue)
            self._collector.complete(op_id, None)
            return op_id
        op_id = self._start_op(queue, timeout)
        self._start_close(queue, now)
        return op_id

    def _start_close(self, queue: QueueRecord, now: float) -> None:
        """A reader first configures its stream to nothing; a writer goes straight to CloseQueue."""
        if queue.readable:
            self._configurer.send(queue, Req.CONFIGURE_CLOSE, None, now, empty=True)
        else:
            self._send_close(queue, now)

    # -- the requests ---------------------------------------------------------------------

    def _open_message(self, queue: QueueRecord) -> ctrl.ControlMessage:
        return ctrl.ControlMessage(
            open_queue=ctrl.OpenQueue(handle_parameters=self._table.handle_parameters(queue))
        )

    def _send_close(self, queue: QueueRecord, now: float) -> None:
        # As the C++ SDK: isFinal only for the last handle on the queue id (the broker releases
        # the whole queue id on a final close, whatever other appIds or writer still use it).
        final = self._table.handles_on(queue.base_uri) <= 1
        message = ctrl.ControlMessage(
            close_queue=ctrl.CloseQueue(
                handle_parameters=self._table.handle_parameters(queue), is_final=final
            )
        )
        self._request(message, Req.CLOSE, queue, now)

    def _close_abandoned(
        self, parameters: ctrl.QueueHandleParameters, others: int, now: float
    ) -> None:
        """Release a queue the broker opened for a request we gave up on (or a failed reopen);
        final unless ``others`` of our handles still use its queue id."""
        close = ctrl.CloseQueue(handle_parameters=parameters, is_final=others == 0)
        message = ctrl.ControlMessage(close_queue=close)
        self._requests.send(message, Req.CLOSE_ABANDONED, None, None, now)

    def request_expired(self, rid: int, request: PendingRequest) -> None:
        """A request timed out: an open or reopen the broker may still answer is remembered,
        so that its late answer gets a CloseQueue."""
        queues = self._table.queues
        if request.kind in (Req.OPEN, Req.REOPEN) and request.queue_id in queues:
            abandoned = queues[request.queue_id]
            self._requests.abandoned_opens[rid] = self._table.handle_parameters(abandoned)

    def on_unexpected(self, rid: int, message: ctrl.ControlMessage, now: float) -> None:
        """An answer no request waits for: a late open we gave up on is closed again."""
        abandoned = self._requests.abandoned_opens.pop(rid, None)
        if abandoned is not None and message.selection == "open_queue_response":
            log.warning("late open of %s (rId %s): closing it again", abandoned.uri, rid)
            if self._lifecycle.state in _LIVE_STATES:
                base_uri = require_queue_uri(abandoned.uri).base
                self._close_abandoned(abandoned, self._table.handles_on(base_uri), now)
            return
        log.warning("late or unknown response (rId %s, %s) dropped", rid, message.selection)

    # -- answers: one handler per request kind, for success and for failure ----------------

    def on_answer(self, request: PendingRequest, message: ctrl.ControlMessage, now: float) -> None:
        """A successful answer to one of the queue requests."""
        if request.kind == Req.CLOSE_ABANDONED:
            return
        queue = self._answered_queue(request)
        if queue is None:
            log.warning("response to %s for a queue no longer known dropped", request.kind)
            return
        if request.kind in CONFIGURE_REQUESTS:
            self._credit.configured(queue.queue_id, ok=True)
        elif message.open_queue_response is not None:  # OPEN or REOPEN
            routing = message.open_queue_response.routing_configuration
            if routing is not None and at_most_once(routing.flags):
                self._credit.untracked(queue.queue_id)
        self.ok_handlers[request.kind](queue, message, now)

    def on_failure(self, request: PendingRequest, error: PybmqError, now: float) -> None:
        """A refused (or timed-out) queue request."""
        queue = self._answered_queue(request)
        if queue is None or request.kind == Req.CLOSE_ABANDONED:
            return
        if request.kind in CONFIGURE_REQUESTS:
            self._credit.configured(queue.queue_id, ok=False)
        self.failed_handlers[request.kind](queue, error, now)

    def _answered_queue(self, request: PendingRequest) -> QueueRecord | None:
        return self._table.queues.get(request.queue_id) if request.queue_id is not None else None

    def _opened(self, queue: QueueRecord, _message: ctrl.ControlMessage, now: float) -> None:
        queue.remote_step(RemoteQueueInput.OPENED)
        queue.step(QueueInput.OPEN_OK)
        if self._lifecycle.state is SessionState.STOPPING:
            queue.step(QueueInput.CONFIGURE_FAILED)  # → CLOSING: undo the open
            self._send_close(queue, now)
        elif not queue.readable:
            # Like the official SDKs: a write-only queue has no stream to configure.
            queue.step(QueueInput.CONFIGURE_OK)
            self._finish_op(queue, None, now)
        else:
            self._configurer.send(queue, Req.CONFIGURE_OPEN, None, now)

    def _configured_for_open(
        self, queue: QueueRecord, _message: ctrl.ControlMessage, now: float
    ) -> None:
        queue.remote_step(RemoteQueueInput.CONFIGURED)
        self._table.apply_subscriptions(queue)
        if self._lifecycle.state is SessionState.STOPPING:
            queue.step(QueueInput.CONFIGURE_FAILED)
            self._configurer.send(queue, Req.CONFIGURE_CLOSE, None, now, empty=True)
        else:
            queue.step(QueueInput.CONFIGURE_OK)
            self._finish_op(queue, None, now)

    def _configured(self, queue: QueueRecord, _message: ctrl.ControlMessage, now: float) -> None:
        self._table.apply_subscriptions(queue)
        self._finish_op(queue, None, now)

    def _deconfigured(self, queue: QueueRecord, _message: ctrl.ControlMessage, now: float) -> None:
        queue.remote_step(RemoteQueueInput.DECONFIGURED)
        self._send_close(queue, now)

    def _reopened_remote(
        self, queue: QueueRecord, _message: ctrl.ControlMessage, now: float
    ) -> None:
        queue.remote_step(RemoteQueueInput.OPENED)
        if queue.readable:
            self._configurer.send(queue, Req.REOPEN_CONFIGURE, None, now)
        else:
            self._reopened(queue, None, now)

    def _reconfigured(self, queue: QueueRecord, _message: ctrl.ControlMessage, now: float) -> None:
        queue.remote_step(RemoteQueueInput.CONFIGURED)
        self._table.apply_subscriptions(queue)
        self._reopened(queue, None, now)

    def _open_failed(self, queue: QueueRecord, error: PybmqError, now: float) -> None:
        queue.step(QueueInput.OPEN_FAILED)
        self._finish_op(queue, error, now)
        self._forget(queue)

    def _configure_for_open_failed(self, queue: QueueRecord, error: PybmqError, now: float) -> None:
        # The broker holds the queue open: fail the open now and release the queue.
        queue.step(QueueInput.CONFIGURE_FAILED)
        self._finish_op(queue, error, now)
        self._send_close(queue, now)

    def _configure_failed(self, queue: QueueRecord, error: PybmqError, now: float) -> None:
        self._table.pending_subscriptions.pop(queue.queue_id, None)
        self._finish_op(queue, error, now)

    def _reopen_failed(self, queue: QueueRecord, error: PybmqError, now: float) -> None:
        if queue.remote is not queue.remote.CLOSED:  # the broker holds it open: release it
            others = self._table.handles_on(queue.base_uri) - 1
            self._close_abandoned(self._table.handle_parameters(queue), others, now)
        self._reopened(queue, error, now)

    def _closed(self, queue: QueueRecord, error: PybmqError | None, now: float) -> None:
        queue.step(QueueInput.CLOSE_DONE)
        queue.remote_step(RemoteQueueInput.CLOSED)
        self._finish_op(queue, error, now)
        self._forget(queue)
        # Posts to a closed queue can no longer be acknowledged.
        self._publisher.cancel(queue, AckStatus.CANCELED, "queue closed", held=False)

    # -- bookkeeping ----------------------------------------------------------------------

    def _finish_op(self, queue: QueueRecord, error: PybmqError | None, now: float) -> None:
        """The user operation waiting on ``queue`` (if any) completes; host health may then
        move the queue."""
        if queue.op_id is not None:
            self._collector.complete(queue.op_id, error)
            queue.op_id = None
            queue.op_timeout = None
        if queue.queue_id in self._table.queues:
            self._host_health.sync(queue, now)

    def _forget(self, queue: QueueRecord) -> None:
        """Drop ``queue`` and its credit."""
        self._table.forget(queue)
        self._credit.forget(queue.queue_id)

    def start_reopen(self, now: float) -> None:
        """After a reconnect's negotiation: reopen (and reconfigure) every queue that was open
        (one whose open is held goes out with the held requests, after the reopens)."""
        for queue in self._table.queues.values():
            if queue.queue_id in self._requests.held:
                continue
            self.reopening.add(queue.queue_id)
            self._request(self._open_message(queue), Req.REOPEN, queue, now)
        self._maybe_restored(now)

    def _reopened(self, queue: QueueRecord, error: PybmqError | None, now: float) -> None:
        self.reopening.discard(queue.queue_id)
        self._collector.emit(QueueReopened(queue.queue_id, queue.uri, error))
        if error is not None:
            queue.step(QueueInput.SESSION_DOWN)
            self._publisher.cancel(queue, AckStatus.NOT_CONNECTED, f"queue not reopened: {error}")
            self._forget(queue)
        self._maybe_restored(now)

    def _maybe_restored(self, now: float) -> None:
        """StateRestored once every queue is reopened; host health then moves the queues."""
        lifecycle = self._lifecycle
        if (
            lifecycle.recovery is RecoveryState.RESTORING
            and not self.reopening
            and lifecycle.state is SessionState.STARTED
        ):
            lifecycle.recovery_step(RecoveryInput.QUEUES_RESTORED)
            self._requests.send_held(now)
            self._collector.emit(StateRestored())
            self._host_health.queues_restored(now)

    # -- the session's news ---------------------------------------------------------------

    def session_stopping(self, now: float) -> None:
        """A graceful stop began: opens in flight fail, open queues close."""
        for queue in list(self._table.queues.values()):
            if queue.op_id is not None and queue.state in (
                QueueState.OPENING,
                QueueState.CONFIGURING,
            ):
                self._collector.complete(
                    queue.op_id, SessionStoppedError(f"session stopping: {queue.uri}")
                )
                queue.op_id = None
            if queue.state is QueueState.OPENED and queue.op_id is None:
                queue.step(QueueInput.CLOSE)
                self._start_close(queue, now)

    def connection_dropped(self, reason: str) -> None:
        """The connection is gone but the session lives on: open queues are kept for a reopen
        (a reconfigure in flight fails; they are reopened with their old options), an opening
        queue fails and a closing one is closed (the lost connection detached it)."""
        self.reopening.clear()
        self._table.pending_subscriptions.clear()
        for queue in list(self._table.queues.values()):
            queue.remote_step(RemoteQueueInput.CLOSED)
            if queue.queue_id in self._requests.held:  # opened while reconnecting: still held
                continue
            if queue.state is QueueState.OPENED:
                if queue.op_id is not None:
                    self._collector.complete(
                        queue.op_id, SessionStoppedError(f"{reason} ({queue.uri})")
                    )
                    queue.op_id = None
                continue
            error = (
                None
                if queue.state is QueueState.CLOSING
                else SessionStoppedError(f"{reason} ({queue.uri})")
            )
            queue.step(QueueInput.SESSION_DOWN)
            if queue.op_id is not None:
                self._collector.complete(queue.op_id, error)
                queue.op_id = None
            self._publisher.cancel(
                queue, AckStatus.CANCELED, "queue closed" if error is None else reason
            )
            self._forget(queue)

    def session_ended(self, reason: str) -> None:
        """The session is over: every queue's operation fails and every queue is closed."""
        self.reopening.clear()
        self._requests.held.clear()  # their queues' operations fail below
        for queue in self._table.queues.values():
            if queue.op_id is not None:
                self._collector.complete(
                    queue.op_id, SessionStoppedError(f"{reason} ({queue.uri})")
                )
                queue.op_id = None
            queue.step(QueueInput.SESSION_DOWN)
            queue.remote_step(RemoteQueueInput.CLOSED)
