"""Host health: suspending and resuming host-health-sensitive queues on the broker, as the C++
core does (``bmqimp_brokersession.cpp``: ``handleQueueSuspend``/``handleQueueResume``).

When the host turns unhealthy, each queue opened with ``suspends_on_bad_host_health`` refuses
posts and, if it reads, sends a ConfigureStream without subscriptions (the broker stops
delivering); when it is healthy again the queue sends its options again. Each answer (or refusal,
or timeout) gives QueueSuspended/QueueResumed, with ``error`` set for the C++ SDK's …Failed
events; HostHealthRestored follows the last resume. A configure made while suspended is kept and
sent on resume, and a queue opened or reopened while the host is unhealthy is configured empty.
Every change of a queue's suspension goes through ``HEALTH_TRANSITIONS``, and of the host's
health through ``HOST_TRANSITIONS``.
"""

from __future__ import annotations

import logging

from pybmq.client.collector import Collector
from pybmq.client.configure import StreamConfigurer
from pybmq.client.events import (
    HostHealthRestored,
    HostUnhealthy,
    QueueResumed,
    QueueSuspended,
)
from pybmq.client.fsm import (
    HOST_TRANSITIONS,
    HealthInput,
    HealthState,
    HostInput,
    HostState,
    QueueState,
    RecoveryState,
    step,
)
from pybmq.client.lifecycle import Lifecycle
from pybmq.client.options import QueueOptions
from pybmq.client.queue_table import QueueTable
from pybmq.client.records import PendingRequest, QueueRecord, Req
from pybmq.errors import PybmqError, UsageError

__all__ = ["HostHealth"]

log = logging.getLogger("pybmq.client.engine")


class HostHealth:
    """Host health: suspending and resuming sensitive queues on the broker."""

    def __init__(
        self,
        lifecycle: Lifecycle,
        table: QueueTable,
        configurer: StreamConfigurer,
        collector: Collector,
    ) -> None:
        self.state = HostState.HEALTHY
        self._lifecycle = lifecycle
        self._table = table
        self._configurer = configurer
        self._collector = collector

    @property
    def healthy(self) -> bool:
        return self.state is not HostState.UNHEALTHY

    def _step(self, event: HostInput) -> None:
        self.state = step("host health", HOST_TRANSITIONS, self.state, event)

    def set(self, healthy: bool, now: float) -> None:
        """The host health monitor's verdict; sensitive queues suspend or resume accordingly."""
        if healthy == self.healthy:
            return
        if healthy:
            self._step(HostInput.HEALTHY)
        else:
            log.warning("host unhealthy: suspending host-health-sensitive queues")
            self._step(HostInput.UNHEALTHY)
            self._collector.emit(HostUnhealthy())
        for queue in list(self._table.queues.values()):
            self.sync(queue, now)
        self._maybe_health_restored()

    def wants_suspended(self, queue: QueueRecord) -> bool:
        options = queue.deferred_options or queue.options  # a configure made while suspended
        return not self.healthy and options.suspends_on_bad_host_health

    def sync(self, queue: QueueRecord, now: float) -> None:
        """Move ``queue`` toward what the host health asks, one request at a time; a user
        operation in flight (or a reopen) goes first, as the C++ core defers to it."""
        if (
            queue.state is not QueueState.OPENED
            or queue.op_id is not None
            or self._lifecycle.recovery is RecoveryState.RESTORING
            or queue.health in (HealthState.SUSPENDING, HealthState.RESUMING)
        ):
            return
        wanted = self.wants_suspended(queue)
        if wanted and queue.health is HealthState.ACTIVE:
            queue.health_step(HealthInput.SUSPEND)
            if queue.readable:
                self._configurer.send(queue, Req.SUSPEND, None, now, empty=True)
            else:
                self._answered(queue, Req.SUSPEND, None, now)
        elif not wanted and queue.health is HealthState.SUSPENDED:
            queue.health_step(HealthInput.RESUME)
            if queue.readable:
                options, queue.deferred_options = queue.deferred_options, None
                self._configurer.send(queue, Req.RESUME, options, now)
            else:
                self._answered(queue, Req.RESUME, None, now)

    def configure_suspended(self, queue: QueueRecord, options: QueueOptions, now: float) -> int:
        """A configure of a suspended queue: the options are kept for the resume (the C++ core
        does not send them now); options no longer host-health-sensitive resume it at once."""
        if queue.op_id is not None or queue.health is HealthState.RESUMING:
            raise UsageError(f"queue {queue.uri} already has an operation in progress")
        queue.deferred_options = options
        op_id = self._collector.new_op()
        self._collector.complete(op_id, None)
        self.sync(queue, now)
        return op_id

    def _answered(
        self, queue: QueueRecord, kind: str, error: PybmqError | None, now: float
    ) -> None:
        queue.health_step(HealthInput.DONE)
        if kind == Req.SUSPEND:
            if error is not None:
                log.error("suspending %s failed: %s", queue.uri, error)
            self._collector.emit(QueueSuspended(queue.queue_id, queue.uri, error))
        else:
            if error is None:
                self._table.apply_subscriptions(queue)
            else:
                log.error("resuming %s failed: %s", queue.uri, error)
                self._table.pending_subscriptions.pop(queue.queue_id, None)
            self._collector.emit(QueueResumed(queue.queue_id, queue.uri, error))
        self.sync(queue, now)  # the host may have changed its mind meanwhile
        self._maybe_health_restored()

    def _maybe_health_restored(self) -> None:
        if self.state is HostState.RECOVERING and all(
            q.health is HealthState.ACTIVE for q in self._table.queues.values()
        ):
            self._step(HostInput.ALL_RESUMED)
            self._collector.emit(HostHealthRestored())

    def on_answer(self, request: PendingRequest, error: PybmqError | None, now: float) -> None:
        """The broker's answer (or refusal) to a suspend or resume."""
        queue = self._table.queues.get(request.queue_id) if request.queue_id is not None else None
        if queue is not None and queue.health in (HealthState.SUSPENDING, HealthState.RESUMING):
            if queue.state is QueueState.OPENED:
                self._answered(queue, request.kind, error, now)
            else:  # closing meanwhile: nothing to tell
                queue.health_step(HealthInput.DONE)

    def connection_dropped(self) -> None:
        """Suspends and resumes in flight are gone; the reopen configures suspended queues
        empty, and the next resume sends the options a lost resume carried."""
        for queue in self._table.queues.values():
            if queue.health is HealthState.SUSPENDING:
                # The reopen configures it empty: the suspension holds.
                self._collector.emit(QueueSuspended(queue.queue_id, queue.uri, None))
            if queue.health is HealthState.RESUMING:
                pending = self._table.pending_subscriptions.pop(queue.queue_id, None)
                if pending is not None and pending[1] is not queue.options:
                    queue.deferred_options = pending[1]
            queue.health_step(HealthInput.CONNECTION_DROPPED)

    def queues_restored(self, now: float) -> None:
        """Every queue is reopened: bring each to what the host health asks."""
        for queue in list(self._table.queues.values()):
            self.sync(queue, now)
        self._maybe_health_restored()
