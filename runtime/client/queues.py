"""Queues: open, configure, close and reopen, each as a chain of control requests whose answers
move the queue through ``QUEUE_TRANSITIONS`` (our side) and ``REMOTE_QUEUE_TRANSITIONS`` (the
broker's side). Each request kind has its handler for an answer and for a failure
(``ok_handlers``/``failed_handlers``), so an answer goes straight to the code for its step.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from pybmq.client.collector import Collector
from pybmq.client.consuming import Consumer
from pybmq.client.credit import at_most_once
from pybmq.client.events import (
    AckStatus,
    QueueReopened,
    StateRestored,
)
from pybmq.client.fsm import (
    HealthInput,
    QueueInput,
    RecoveryInput,
    RecoveryState,
    RemoteQueueInput,
    SessionState,
)
from pybmq.client.lifecycle import Lifecycle
from pybmq.client.options import QueueOptions, SessionOptions, checked_timeout
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
from pybmq.client.subscriptions import Subscription, effective, wire_subscriptions
from pybmq.errors import (
    PybmqError,
    UsageError,
)
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import (
    DEFAULT_APP_ID,
)
from pybmq.uri import QUEUE_NAME_MAX_LENGTH, require_queue_uri

if TYPE_CHECKING:
    from pybmq.client.suspension import HostHealth

log = logging.getLogger("pybmq.client.engine")

CONFIGURE_REQUESTS = (Req.CONFIGURE_OPEN, Req.CONFIGURE, Req.CONFIGURE_CLOSE, Req.REOPEN_CONFIGURE)
OkHandler = Callable[[QueueRecord, ctrl.ControlMessage], None]
FailedHandler = Callable[[QueueRecord, PybmqError], None]


class QueueControl:
    """The queue operations and their request chains, over the queue table."""

    def __init__(
        self,
        options: SessionOptions,
        lifecycle: Lifecycle,
        table: QueueTable,
        requests: RequestTable,
        publisher: Publisher,
        consumer: Consumer,
        collector: Collector,
    ) -> None:
        self.options = options
        self._lifecycle = lifecycle
        self._table = table
        self._requests = requests
        self._publisher = publisher
        self._consumer = consumer
        self._collector = collector
        self.host_health: HostHealth | None = None  # set by the engine once the part exists
        # The broker takes ConfigureStream (subscriptions); older ones ConfigureQueueStream.
        self.broker_configure_stream = True
        self.reopening: set[int] = set()  # queue handles whose reopen is unanswered
        self.ok_handlers: dict[str, OkHandler] = {
            Req.OPEN: self._opened,
            Req.CONFIGURE_OPEN: self._configured_for_open,
            Req.CONFIGURE: self._configured,
            Req.CONFIGURE_CLOSE: self._deconfigured,
            Req.CLOSE: lambda queue, _message: self._closed(queue, None),
            Req.REOPEN: self._reopened_remote,
            Req.REOPEN_CONFIGURE: self._reconfigured,
        }
        self.failed_handlers: dict[str, FailedHandler] = {
            Req.OPEN: self._open_failed,
            Req.CONFIGURE_OPEN: self._configure_for_open_failed,
            Req.CONFIGURE: self._configure_failed,
            Req.CONFIGURE_CLOSE: lambda queue, _error: self._send_close(queue),
            Req.CLOSE: self._closed,
            Req.REOPEN: self._reopen_failed,
            Req.REOPEN_CONFIGURE: self._reopen_failed,
        }

    def _request(
        self, message: ctrl.ControlMessage, kind: str, queue_id: int | None, op_id: int | None
    ) -> None:
        queue = self._table.queues.get(queue_id) if queue_id is not None else None
        timeout = queue.op_timeout if queue is not None and queue.op_id is not None else None
        self._requests.send(message, kind, queue_id, op_id, self._lifecycle.now, timeout)

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
        lifecycle.now = now
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
        op_id = self._collector.new_op()
        queue.op_id = op_id
        queue.op_timeout = checked_timeout(timeout)
        if self.host_health is not None and self.host_health.wants_suspended(queue):
            # Configured empty, posts refused from the start.
            queue.health_step(HealthInput.SUSPEND_AT_OPEN)
        message = ctrl.ControlMessage(
            open_queue=ctrl.OpenQueue(handle_parameters=self._table.handle_parameters(queue))
        )
        if offline:
            self._requests.hold(message, Req.OPEN, queue.queue_id, now, queue.op_timeout)
        else:
            self._request(message, Req.OPEN, queue.queue_id, None)
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
        self._lifecycle.now = now
        self._lifecycle.require_started("configure a queue")
        queue = self._table.get(queue_id)
        if not queue.readable:
            raise UsageError(f"only a reader can be configured; {queue.uri} was opened write-only")
        if queue.suspended and self.host_health is not None:
            return self.host_health.configure_suspended(queue, options)
        if queue.op_id is not None:
            raise UsageError(f"queue {queue.uri} already has an operation in progress")
        queue.step(QueueInput.CONFIGURE)
        op_id = self._collector.new_op()
        queue.op_id = op_id
        queue.op_timeout = checked_timeout(timeout)
        self.send_configure(queue, Req.CONFIGURE, options, empty=suspended)
        return op_id

    def close_queue(self, queue_id: int, now: float, timeout: float | None = None) -> int:
        """``ClientEngine.close_queue``."""
        self._lifecycle.now = now
        if self._lifecycle.state is not SessionState.RECONNECTING:
            self._lifecycle.require_started("close a queue")
        queue = self._table.get(queue_id)
        if queue.op_id is not None:
            raise UsageError(f"queue {queue.uri} already has an operation in progress")
        queue.step(QueueInput.CLOSE)
        op_id = self._collector.new_op()
        if self._lifecycle.state is SessionState.RECONNECTING:
            # No connection, so nothing is attached on the broker's side: closed here, and
            # not reopened after the reconnect (the C++ SDK closes a pending queue so too).
            queue.step(QueueInput.SESSION_DOWN)
            self._publisher.cancel(queue, AckStatus.CANCELED, "queue closed")
            self.forget(queue)
            self._collector.complete(op_id, None)
            return op_id
        queue.op_id = op_id
        queue.op_timeout = checked_timeout(timeout)
        self.start_close(queue)
        return op_id

    def start_close(self, queue: QueueRecord) -> None:
        """A reader first configures its stream to nothing; a writer goes straight to CloseQueue."""
        if queue.readable:
            self.send_configure(queue, Req.CONFIGURE_CLOSE, None, empty=True)
        else:
            self._send_close(queue)

    # -- the requests ---------------------------------------------------------------------

    def send_configure(
        self, queue: QueueRecord, kind: str, options: QueueOptions | None, *, empty: bool = False
    ) -> None:
        """ConfigureStream (or, to an old broker, ConfigureQueueStream) for ``queue``; ``empty``
        sends no subscription (the broker stops delivering)."""
        if kind in (Req.CONFIGURE_OPEN, Req.REOPEN_CONFIGURE) and queue.suspended:
            empty = True
        options = options or queue.options
        subscriptions: list[ctrl.Subscription] = []
        ids: list[int] = []
        if queue.readable and not empty:
            # Before the first configure is answered there are no ids yet (zip stops short).
            previous = dict(
                zip(queue.options.subscription_objects, queue.subscription_ids, strict=False)
            )
            if not queue.options.subscriptions and queue.subscription_ids:
                previous = {Subscription(): queue.subscription_ids[0]}
            subscriptions, ids = wire_subscriptions(
                options.subscription_objects, options, previous, self._table.new_stream_id
            )
            self._table.pending_subscriptions[queue.queue_id] = (ids, options)
        if queue.readable:
            # Each stream's own credit: a subscription's limits (or the queue's), per stream id.
            limits: dict[int, tuple[int, int]] = {}
            if self.broker_configure_stream:
                wanted = options.subscription_objects or (Subscription(),)
                for sid, subscription in zip(ids, wanted, strict=False):
                    _, messages, size = effective(subscription, options)
                    limits[sid] = (messages, size)
            elif not empty:
                limits[queue.sub_id] = (
                    options.max_unconfirmed_messages,
                    options.max_unconfirmed_bytes,
                )
            self._consumer.credit.configuring(queue.queue_id, limits)
        if self.broker_configure_stream:
            message = ctrl.ControlMessage(
                configure_stream=ctrl.ConfigureStream(
                    q_id=queue.qid,
                    stream_parameters=ctrl.StreamParameters(
                        app_id=queue.app_id or DEFAULT_APP_ID, subscriptions=subscriptions
                    ),
                )
            )
        else:
            flowing = queue.readable and not empty
            message = ctrl.ControlMessage(
                configure_queue_stream=ctrl.ConfigureQueueStream(
                    q_id=queue.qid,
                    stream_parameters=ctrl.QueueStreamParameters(
                        sub_id_info=(
                            ctrl.SubQueueIdInfo(sub_id=queue.sub_id, app_id=queue.app_id)
                            if queue.app_id is not None
                            else None
                        ),
                        max_unconfirmed_messages=options.max_unconfirmed_messages if flowing else 0,
                        max_unconfirmed_bytes=options.max_unconfirmed_bytes if flowing else 0,
                        consumer_priority=options.consumer_priority if flowing else -(2**31),
                        consumer_priority_count=1 if flowing else 0,
                    ),
                )
            )
        self._request(message, kind, queue.queue_id, None)

    def _send_close(self, queue: QueueRecord) -> None:
        # As the C++ SDK: isFinal only for the last handle on the queue id (the broker releases
        # the whole queue id on a final close, whatever other appIds or writer still use it).
        final = self._table.handles_on(queue.base_uri) <= 1
        message = ctrl.ControlMessage(
            close_queue=ctrl.CloseQueue(
                handle_parameters=self._table.handle_parameters(queue), is_final=final
            )
        )
        self._request(message, Req.CLOSE, queue.queue_id, None)

    def close_abandoned(self, parameters: ctrl.QueueHandleParameters, others: int) -> None:
        """Release a queue the broker opened for a request we gave up on (or a failed reopen);
        final unless ``others`` of our handles still use its queue id."""
        close = ctrl.CloseQueue(handle_parameters=parameters, is_final=others == 0)
        self._request(ctrl.ControlMessage(close_queue=close), Req.CLOSE_ABANDONED, None, None)

    # -- answers: one handler per request kind, for success and for failure ----------------

    def on_answer(self, request: PendingRequest, message: ctrl.ControlMessage) -> None:
        """A successful answer to one of the queue requests."""
        if request.kind == Req.CLOSE_ABANDONED:
            return
        queue = self._answered_queue(request)
        if queue is None:
            log.warning("response to %s for a queue no longer known dropped", request.kind)
            return
        if request.kind in CONFIGURE_REQUESTS:
            self._consumer.credit.configured(queue.queue_id, ok=True)
        elif message.open_queue_response is not None:  # OPEN or REOPEN
            routing = message.open_queue_response.routing_configuration
            if routing is not None and at_most_once(routing.flags):
                self._consumer.credit.untracked(queue.queue_id)
        self.ok_handlers[request.kind](queue, message)

    def on_failure(self, request: PendingRequest, error: PybmqError) -> None:
        """A refused (or timed-out) queue request."""
        queue = self._answered_queue(request)
        if queue is None or request.kind == Req.CLOSE_ABANDONED:
            return
        if request.kind in CONFIGURE_REQUESTS:
            self._consumer.credit.configured(queue.queue_id, ok=False)
        self.failed_handlers[request.kind](queue, error)

    def _answered_queue(self, request: PendingRequest) -> QueueRecord | None:
        return self._table.queues.get(request.queue_id) if request.queue_id is not None else None

    def _opened(self, queue: QueueRecord, _message: ctrl.ControlMessage) -> None:
        queue.remote_step(RemoteQueueInput.OPENED)
        queue.step(QueueInput.OPEN_OK)
        if self._lifecycle.state is SessionState.STOPPING:
            queue.step(QueueInput.CONFIGURE_FAILED)  # → CLOSING: undo the open
            self._send_close(queue)
        elif not queue.readable:
            # Like the official SDKs: a write-only queue has no stream to configure.
            queue.step(QueueInput.CONFIGURE_OK)
            self.finish_op(queue, None)
        else:
            self.send_configure(queue, Req.CONFIGURE_OPEN, None)

    def _configured_for_open(self, queue: QueueRecord, _message: ctrl.ControlMessage) -> None:
        queue.remote_step(RemoteQueueInput.CONFIGURED)
        self._table.apply_subscriptions(queue)
        if self._lifecycle.state is SessionState.STOPPING:
            queue.step(QueueInput.CONFIGURE_FAILED)
            self.send_configure(queue, Req.CONFIGURE_CLOSE, None, empty=True)
        else:
            queue.step(QueueInput.CONFIGURE_OK)
            self.finish_op(queue, None)

    def _configured(self, queue: QueueRecord, _message: ctrl.ControlMessage) -> None:
        self._table.apply_subscriptions(queue)
        self.finish_op(queue, None)

    def _deconfigured(self, queue: QueueRecord, _message: ctrl.ControlMessage) -> None:
        queue.remote_step(RemoteQueueInput.DECONFIGURED)
        self._send_close(queue)

    def _reopened_remote(self, queue: QueueRecord, _message: ctrl.ControlMessage) -> None:
        queue.remote_step(RemoteQueueInput.OPENED)
        if queue.readable:
            self.send_configure(queue, Req.REOPEN_CONFIGURE, None)
        else:
            self._reopened(queue, None)

    def _reconfigured(self, queue: QueueRecord, _message: ctrl.ControlMessage) -> None:
        queue.remote_step(RemoteQueueInput.CONFIGURED)
        self._table.apply_subscriptions(queue)
        self._reopened(queue, None)

    def _open_failed(self, queue: QueueRecord, error: PybmqError) -> None:
        queue.step(QueueInput.OPEN_FAILED)
        self.finish_op(queue, error)
        self.forget(queue)

    def _configure_for_open_failed(self, queue: QueueRecord, error: PybmqError) -> None:
        # The broker holds the queue open: fail the open now and release the queue.
        queue.step(QueueInput.CONFIGURE_FAILED)
        self.finish_op(queue, error)
        self._send_close(queue)

    def _configure_failed(self, queue: QueueRecord, error: PybmqError) -> None:
        self._table.pending_subscriptions.pop(queue.queue_id, None)
        self.finish_op(queue, error)

    def _reopen_failed(self, queue: QueueRecord, error: PybmqError) -> None:
        if queue.remote is not queue.remote.CLOSED:  # the broker holds it open: release it
            others = self._table.handles_on(queue.base_uri) - 1
            self.close_abandoned(self._table.handle_parameters(queue), others)
        self._reopened(queue, error)

    def _closed(self, queue: QueueRecord, error: PybmqError | None) -> None:
        queue.step(QueueInput.CLOSE_DONE)
        queue.remote_step(RemoteQueueInput.CLOSED)
        self.finish_op(queue, error)
        self.forget(queue)
        # Posts to a closed queue can no longer be acknowledged.
        self._publisher.cancel(queue, AckStatus.CANCELED, "queue closed", held=False)

    # -- bookkeeping ----------------------------------------------------------------------

    def finish_op(self, queue: QueueRecord, error: PybmqError | None) -> None:
        """The user operation waiting on ``queue`` (if any) completes; host health may then
        move the queue."""
        if queue.op_id is not None:
            self._collector.complete(queue.op_id, error)
            queue.op_id = None
            queue.op_timeout = None
        if self.host_health is not None and queue.queue_id in self._table.queues:
            self.host_health.sync(queue)

    def forget(self, queue: QueueRecord) -> None:
        """Drop ``queue`` and its credit."""
        self._table.forget(queue)
        self._consumer.credit.forget(queue.queue_id)

    def start_reopen(self) -> None:
        """After a reconnect's negotiation: reopen (and reconfigure) every queue that was open
        (one whose open is held goes out with the held requests, after the reopens)."""
        for queue in self._table.queues.values():
            if queue.queue_id in self._requests.held:
                continue
            self.reopening.add(queue.queue_id)
            message = ctrl.ControlMessage(
                open_queue=ctrl.OpenQueue(handle_parameters=self._table.handle_parameters(queue))
            )
            self._request(message, Req.REOPEN, queue.queue_id, None)
        self.maybe_restored()

    def _reopened(self, queue: QueueRecord, error: PybmqError | None) -> None:
        self.reopening.discard(queue.queue_id)
        self._collector.emit(QueueReopened(queue.queue_id, queue.uri, error))
        if error is not None:
            queue.step(QueueInput.SESSION_DOWN)
            self._publisher.cancel(queue, AckStatus.NOT_CONNECTED, f"queue not reopened: {error}")
            self.forget(queue)
        self.maybe_restored()

    def maybe_restored(self) -> None:
        """StateRestored once every queue is reopened; host health then moves the queues."""
        lifecycle = self._lifecycle
        if (
            lifecycle.recovery is RecoveryState.RESTORING
            and not self.reopening
            and lifecycle.state is SessionState.STARTED
        ):
            lifecycle.recovery_step(RecoveryInput.QUEUES_RESTORED)
            self._requests.send_held(lifecycle.now)
            self._collector.emit(StateRestored())
            if self.host_health is not None:
                self.host_health.queues_restored()
