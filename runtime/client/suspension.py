"""Host health: suspending and resuming host-health-sensitive queues on the broker, as the C++
core does (``bmqimp_brokersession.cpp``: ``handleQueueSuspend``/``handleQueueResume``).

When the host turns unhealthy, each queue opened with ``suspends_on_bad_host_health`` refuses
posts and, if it reads, sends a ConfigureStream without subscriptions (the broker stops
delivering); when it is healthy again the queue sends its options again. Each answer (or refusal,
or timeout) gives QueueSuspended/QueueResumed, with ``error`` set for the C++ SDK's …Failed
events; HostHealthRestored follows the last resume. A configure made while suspended is kept and
sent on resume, and a queue opened or reopened while the host is unhealthy is configured empty.
Every change of a queue's suspension goes through ``HEALTH_TRANSITIONS``.
"""

from __future__ import annotations

import logging

from pybmq.client.auth import AuthenticationLayer
from pybmq.client.events import (
    HostHealthRestored,
    HostUnhealthy,
    QueueResumed,
    QueueSuspended,
)
from pybmq.client.fsm import HealthInput, HealthState, QueueState
from pybmq.client.options import QueueOptions
from pybmq.client.records import PendingRequest, QueueRecord, Req
from pybmq.errors import PybmqError, UsageError
from pybmq.generated import bmqp_ctrlmsg as ctrl

log = logging.getLogger("pybmq.client.engine")


class HostHealthLayer(AuthenticationLayer):
    """Host health: suspending and resuming sensitive queues on the broker."""

    host_healthy = True
    _restore_pending = False  # HostHealthRestored is owed once every queue has resumed

    def set_host_health(self, healthy: bool, now: float) -> None:
        """The host health monitor's verdict; sensitive queues suspend or resume accordingly."""
        self._now = now
        if healthy == self.host_healthy:
            return
        self.host_healthy = healthy
        if not healthy:
            log.warning("host unhealthy: suspending host-health-sensitive queues")
            self._restore_pending = True
            self._events.append(HostUnhealthy())
        for queue in list(self.queues.values()):
            self._sync_health(queue)
        self._maybe_health_restored()

    def _wants_suspended(self, queue: QueueRecord) -> bool:
        options = queue.deferred_options or queue.options  # a configure made while suspended
        return not self.host_healthy and options.suspends_on_bad_host_health

    def _sync_health(self, queue: QueueRecord) -> None:
        """Move ``queue`` toward what the host health asks, one request at a time; a user
        operation in flight (or a reopen) goes first, as the C++ core defers to it."""
        if (
            queue.state is not QueueState.OPENED
            or queue.op_id is not None
            or self._restoring
            or queue.health in (HealthState.SUSPENDING, HealthState.RESUMING)
        ):
            return
        wanted = self._wants_suspended(queue)
        if wanted and queue.health is HealthState.ACTIVE:
            queue.health_step(HealthInput.SUSPEND)
            if queue.readable:
                self._send_configure(queue, Req.SUSPEND, None, empty=True)
            else:
                self._health_answered(queue, Req.SUSPEND, None)
        elif not wanted and queue.health is HealthState.SUSPENDED:
            queue.health_step(HealthInput.RESUME)
            if queue.readable:
                options, queue.deferred_options = queue.deferred_options, None
                self._send_configure(queue, Req.RESUME, options)
            else:
                self._health_answered(queue, Req.RESUME, None)

    def _health_answered(self, queue: QueueRecord, kind: str, error: PybmqError | None) -> None:
        queue.health_step(HealthInput.DONE)
        if kind == Req.SUSPEND:
            if error is not None:
                log.error("suspending %s failed: %s", queue.uri, error)
            self._events.append(QueueSuspended(queue.queue_id, queue.uri, error))
        else:
            if error is None:
                self._apply_subscriptions(queue)
            else:
                log.error("resuming %s failed: %s", queue.uri, error)
                self._pending_subscriptions.pop(queue.queue_id, None)
            self._events.append(QueueResumed(queue.queue_id, queue.uri, error))
        self._sync_health(queue)  # the host may have changed its mind meanwhile
        self._maybe_health_restored()

    def _maybe_health_restored(self) -> None:
        if (
            self._restore_pending
            and self.host_healthy
            and all(q.health is HealthState.ACTIVE for q in self.queues.values())
        ):
            self._restore_pending = False
            self._events.append(HostHealthRestored())

    # -- where the other layers meet host health ------------------------------------------

    def open_queue(
        self,
        uri: str,
        now: float,
        *,
        read: bool = False,
        write: bool = False,
        ack: bool = True,
        options: QueueOptions | None = None,
    ) -> tuple[int, int]:
        op_id, queue_id = super().open_queue(
            uri, now, read=read, write=write, ack=ack, options=options
        )
        queue = self.queues[queue_id]
        if self._wants_suspended(queue):  # configured empty, posts refused from the start
            queue.health_step(HealthInput.SUSPEND_AT_OPEN)
        return op_id, queue_id

    def configure_queue(
        self, queue_id: int, options: QueueOptions, now: float, *, suspended: bool = False
    ) -> int:
        queue = self.queues.get(queue_id)
        if queue is None or queue.health is HealthState.ACTIVE:
            return super().configure_queue(queue_id, options, now, suspended=suspended)
        self._now = now
        self._require_started("configure a queue")
        if not queue.readable:
            raise UsageError(f"only a reader can be configured; {queue.uri} was opened write-only")
        if queue.op_id is not None or queue.health is HealthState.RESUMING:
            raise UsageError(f"queue {queue.uri} already has an operation in progress")
        # Suspended: keep the options for the resume (the C++ core does not send them now);
        # options that are no longer host-health-sensitive resume the queue at once.
        queue.deferred_options = options
        op_id = self._new_op()
        self._complete(op_id, None)
        self._sync_health(queue)
        return op_id

    def _send_configure(
        self, queue: QueueRecord, kind: str, options: QueueOptions | None, *, empty: bool = False
    ) -> None:
        if kind in (Req.CONFIGURE_OPEN, Req.REOPEN_CONFIGURE) and queue.suspended:
            empty = True
        super()._send_configure(queue, kind, options, empty=empty)

    def _finish_queue_op(self, queue: QueueRecord, error: PybmqError | None) -> None:
        super()._finish_queue_op(queue, error)
        if queue.queue_id in self.queues:
            self._sync_health(queue)

    def _on_request_ok(self, request: PendingRequest, message: ctrl.ControlMessage) -> None:
        if request.kind in (Req.SUSPEND, Req.RESUME):
            self._on_health_answer(request, None)
        else:
            super()._on_request_ok(request, message)

    def _on_request_failed(self, request: PendingRequest, error: PybmqError) -> None:
        if request.kind in (Req.SUSPEND, Req.RESUME):
            self._on_health_answer(request, error)
        else:
            super()._on_request_failed(request, error)

    def _on_health_answer(self, request: PendingRequest, error: PybmqError | None) -> None:
        queue = self.queues.get(request.queue_id) if request.queue_id is not None else None
        if queue is not None and queue.health in (HealthState.SUSPENDING, HealthState.RESUMING):
            if queue.state is QueueState.OPENED:
                self._health_answered(queue, request.kind, error)
            else:  # closing meanwhile: nothing to tell
                queue.health_step(HealthInput.DONE)
        self._maybe_disconnect()

    def _drop_connection(self, reason: str) -> None:
        for queue in self.queues.values():
            if queue.health is HealthState.SUSPENDING:
                # The reopen configures it empty: the suspension holds.
                self._events.append(QueueSuspended(queue.queue_id, queue.uri, None))
            if queue.health is HealthState.RESUMING:
                # The options the resume carried are sent again by the next resume.
                pending = self._pending_subscriptions.pop(queue.queue_id, None)
                if pending is not None and pending[1] is not queue.options:
                    queue.deferred_options = pending[1]
            queue.health_step(HealthInput.CONNECTION_DROPPED)
        super()._drop_connection(reason)

    def _maybe_restored(self) -> None:
        was_restoring = self._restoring
        super()._maybe_restored()
        if was_restoring and not self._restoring:
            for queue in list(self.queues.values()):
                self._sync_health(queue)
            self._maybe_health_restored()
