"""Queues: open, configure, close and reopen, each as a chain of control requests whose answers
move the queue through ``QUEUE_TRANSITIONS``.
"""

from __future__ import annotations

import logging

from pybmq.client.credit import at_most_once
from pybmq.client.events import (
    Ack,
    AckReceived,
    AckStatus,
    QueueReopened,
    StateRestored,
)
from pybmq.client.fsm import (
    QueueInput,
    RemoteQueueState,
    SessionState,
)
from pybmq.client.options import QueueOptions
from pybmq.client.records import (
    FLAG_ACK,
    FLAG_READ,
    FLAG_WRITE,
    PendingRequest,
    QueueRecord,
    Req,
)
from pybmq.client.requests import Requests
from pybmq.client.subscriptions import Subscription, effective, wire_subscriptions
from pybmq.errors import (
    PybmqError,
    UsageError,
)
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import (
    DEFAULT_APP_ID,
)
from pybmq.uri import require_queue_uri

log = logging.getLogger("pybmq.client.engine")

CONFIGURE_REQUESTS = (Req.CONFIGURE_OPEN, Req.CONFIGURE, Req.CONFIGURE_CLOSE, Req.REOPEN_CONFIGURE)


class Queues(Requests):
    """Queues: open, configure, close and reopen, each as a chain of control requests whose answers"""

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
        """Start opening ``uri``; returns (op id, queue id). The op completes once configured."""
        self._now = now
        self._require_started("open a queue")
        if not (read or write):
            raise UsageError("open_queue needs read=True and/or write=True")
        parsed = require_queue_uri(uri)
        base_uri, app_id = parsed.base, parsed.app_id
        if app_id is not None and not read:
            raise UsageError(f"an appId (?id=) only makes sense for a reader: {uri!r}")
        if (base_uri, app_id) in self._by_uri:
            raise UsageError(
                f"queue {uri!r} is already open (or opening) in this session; "
                "open it once with read=True and write=True to do both"
            )
        flags = (FLAG_READ if read else 0) | (FLAG_WRITE if write else 0)
        if write and ack:
            flags |= FLAG_ACK
        queue_id = self._next_handle
        self._next_handle += 1
        # Like the official SDK: one wire qId per queue URI; each appId gets its own subId.
        users = self._qids.get(base_uri)
        if users is None:
            users = self._qids[base_uri] = [self._next_qid, 0]
            self._next_qid += 1
        users[1] += 1
        qid = users[0]
        self._by_uri[(base_uri, app_id)] = queue_id
        sub_id = self._new_stream_id() if app_id is not None else 0
        queue = QueueRecord(queue_id, qid, base_uri, app_id, sub_id, flags)
        self._routes[(qid, sub_id)] = queue_id
        queue.options = options or QueueOptions()
        queue.step(QueueInput.OPEN)
        self.queues[queue_id] = queue
        op_id = self._new_op()
        queue.op_id = op_id
        message = ctrl.ControlMessage(
            open_queue=ctrl.OpenQueue(handle_parameters=self._handle_parameters(queue))
        )
        self._request(message, Req.OPEN, queue_id, None)
        return op_id, queue_id

    def configure_queue(
        self, queue_id: int, options: QueueOptions, now: float, *, suspended: bool = False
    ) -> int:
        """Standalone ConfigureStream on an open queue; returns the op id. ``suspended`` sends
        no subscription at all (the broker stops delivering; the options are kept for the next
        configure), as the official SDK suspends a queue when the host turns unhealthy."""
        self._now = now
        self._require_started("configure a queue")
        queue = self._queue(queue_id)
        if not queue.readable:
            raise UsageError(f"only a reader can be configured; {queue.uri} was opened write-only")
        if queue.op_id is not None:
            raise UsageError(f"queue {queue.uri} already has an operation in progress")
        queue.step(QueueInput.CONFIGURE)
        op_id = self._new_op()
        queue.op_id = op_id
        self._send_configure(queue, Req.CONFIGURE, options, empty=suspended)
        return op_id

    def close_queue(self, queue_id: int, now: float) -> int:
        """ConfigureStream to nothing, then CloseQueue(isFinal); returns the op id."""
        self._now = now
        self._require_started("close a queue")
        queue = self._queue(queue_id)
        if queue.op_id is not None:
            raise UsageError(f"queue {queue.uri} already has an operation in progress")
        queue.step(QueueInput.CLOSE)
        op_id = self._new_op()
        queue.op_id = op_id
        self._start_close(queue)
        return op_id

    def _start_close(self, queue: QueueRecord) -> None:
        """A reader first configures its stream to nothing; a writer goes straight to CloseQueue."""
        if queue.readable:
            self._send_configure(queue, Req.CONFIGURE_CLOSE, None, empty=True)
        else:
            self._send_close(queue)

    def _handle_parameters(self, queue: QueueRecord) -> ctrl.QueueHandleParameters:
        sub_info = (
            ctrl.SubQueueIdInfo(sub_id=queue.sub_id, app_id=queue.app_id)
            if queue.app_id is not None
            else None
        )
        return ctrl.QueueHandleParameters(
            uri=queue.uri,
            q_id=queue.qid,
            sub_id_info=sub_info,
            flags=queue.flags,
            read_count=1 if queue.readable else 0,
            write_count=1 if queue.writable else 0,
            admin_count=0,
        )

    def _send_configure(
        self, queue: QueueRecord, kind: str, options: QueueOptions | None, *, empty: bool = False
    ) -> None:
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
                options.subscription_objects, options, previous, self._new_stream_id
            )
            self._pending_subscriptions[queue.queue_id] = (ids, options)
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
            self.credit.configuring(queue.queue_id, limits)
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

    def _on_request_ok(self, request: PendingRequest, message: ctrl.ControlMessage) -> None:
        kind = request.kind
        if kind == Req.CLOSE_ABANDONED:
            self._maybe_disconnect()
            return
        queue = self.queues.get(request.queue_id) if request.queue_id is not None else None
        if queue is None:
            log.warning("response to %s for a queue no longer known dropped", kind)
            return
        if kind in CONFIGURE_REQUESTS:
            self.credit.configured(queue.queue_id, ok=True)
        elif kind in (Req.OPEN, Req.REOPEN) and message.open_queue_response is not None:
            routing = message.open_queue_response.routing_configuration
            if routing is not None and at_most_once(routing.flags):
                self.credit.untracked(queue.queue_id)
        if kind == Req.REOPEN:
            queue.remote = RemoteQueueState.OPENED
            if queue.readable:
                self._send_configure(queue, Req.REOPEN_CONFIGURE, None)
            else:
                self._reopened(queue, None)
        elif kind == Req.REOPEN_CONFIGURE:
            queue.remote = RemoteQueueState.CONFIGURED
            self._apply_subscriptions(queue)
            self._reopened(queue, None)
        elif kind == Req.OPEN:
            queue.remote = RemoteQueueState.OPENED
            queue.step(QueueInput.OPEN_OK)
            if self.state is SessionState.STOPPING:
                queue.step(QueueInput.CONFIGURE_FAILED)  # → CLOSING: undo the open
                self._send_close(queue)
            elif not queue.readable:
                # Like the official SDKs: a write-only queue has no stream to configure.
                queue.step(QueueInput.CONFIGURE_OK)
                self._finish_queue_op(queue, None)
            else:
                self._send_configure(queue, Req.CONFIGURE_OPEN, None)
        elif kind == Req.CONFIGURE_OPEN:
            queue.remote = RemoteQueueState.CONFIGURED
            self._apply_subscriptions(queue)
            if self.state is SessionState.STOPPING:
                queue.step(QueueInput.CONFIGURE_FAILED)
                self._send_configure(queue, Req.CONFIGURE_CLOSE, None, empty=True)
            else:
                queue.step(QueueInput.CONFIGURE_OK)
                self._finish_queue_op(queue, None)
        elif kind == Req.CONFIGURE:
            self._apply_subscriptions(queue)
            self._finish_queue_op(queue, None)
        elif kind == Req.CONFIGURE_CLOSE:
            queue.remote = RemoteQueueState.OPENED
            self._send_close(queue)
        elif kind == Req.CLOSE:
            self._closed(queue, None)
        self._maybe_disconnect()

    def _on_request_failed(self, request: PendingRequest, error: PybmqError) -> None:
        kind = request.kind
        queue = self.queues.get(request.queue_id) if request.queue_id is not None else None
        if queue is None:
            self._maybe_disconnect()
            return
        if kind in CONFIGURE_REQUESTS:
            self.credit.configured(queue.queue_id, ok=False)
        if kind in (Req.REOPEN, Req.REOPEN_CONFIGURE):
            if kind == Req.REOPEN_CONFIGURE:  # the broker holds it open: release it
                close = ctrl.CloseQueue(
                    handle_parameters=self._handle_parameters(queue), is_final=True
                )
                self._request(
                    ctrl.ControlMessage(close_queue=close), Req.CLOSE_ABANDONED, None, None
                )
            self._reopened(queue, error)
        elif kind == Req.OPEN:
            queue.step(QueueInput.OPEN_FAILED)
            self._finish_queue_op(queue, error)
            self._forget(queue)
        elif kind == Req.CONFIGURE_OPEN:
            # The broker holds the queue open: fail the open now and release the queue.
            queue.step(QueueInput.CONFIGURE_FAILED)
            self._finish_queue_op(queue, error)
            self._send_close(queue)
        elif kind == Req.CONFIGURE:
            self._pending_subscriptions.pop(queue.queue_id, None)
            self._finish_queue_op(queue, error)
        elif kind == Req.CONFIGURE_CLOSE:
            # Still detach: a refused reconfigure must not keep the queue attached.
            self._send_close(queue)
        elif kind == Req.CLOSE:
            self._closed(queue, error)
        self._maybe_disconnect()

    def _send_close(self, queue: QueueRecord) -> None:
        message = ctrl.ControlMessage(
            close_queue=ctrl.CloseQueue(
                handle_parameters=self._handle_parameters(queue), is_final=True
            )
        )
        self._request(message, Req.CLOSE, queue.queue_id, None)

    def _closed(self, queue: QueueRecord, error: PybmqError | None) -> None:
        queue.step(QueueInput.CLOSE_DONE)
        queue.remote = RemoteQueueState.CLOSED
        self._finish_queue_op(queue, error)
        self._forget(queue)
        # Posts to a closed queue can no longer be acknowledged.
        for guid, pending in list(self._unacked.items()):
            if pending.queue_id == queue.queue_id:
                del self._unacked[guid]
                if pending.batch is not None:
                    pending.batch.remaining -= 1
                ack = Ack(guid, queue.uri, AckStatus.CANCELED, local=True, reason="queue closed")
                self._events.append(AckReceived(ack, pending.context))

    def _forget(self, queue: QueueRecord) -> None:
        """Drop everything kept for ``queue`` (its own entries only: O(1) in the queue count)."""
        del self.queues[queue.queue_id]
        self.credit.forget(queue.queue_id)
        queue.counters.add_into(self._closed_counters)
        self._pending_subscriptions.pop(queue.queue_id, None)
        self._by_uri.pop((queue.base_uri, queue.app_id), None)
        users = self._qids.get(queue.base_uri)
        if users is not None:
            users[1] -= 1
            if not users[1]:
                del self._qids[queue.base_uri]
        for sid in (queue.sub_id, *queue.subscription_ids):
            if self._routes.get((queue.qid, sid)) == queue.queue_id:
                del self._routes[(queue.qid, sid)]
                self._subscription_handles.pop((queue.qid, sid), None)

    def _apply_subscriptions(self, queue: QueueRecord) -> None:
        pending = self._pending_subscriptions.pop(queue.queue_id, None)
        if pending is not None:
            for sid in queue.subscription_ids:
                self._routes.pop((queue.qid, sid), None)
                self._subscription_handles.pop((queue.qid, sid), None)
            queue.subscription_ids, queue.options = pending
            for sid in queue.subscription_ids:
                self._routes[(queue.qid, sid)] = queue.queue_id
            # The handle each message carries: the application's own Subscription objects.
            for sid, subscription in zip(
                queue.subscription_ids, queue.options.subscription_objects, strict=False
            ):
                self._subscription_handles[(queue.qid, sid)] = subscription

    def _finish_queue_op(self, queue: QueueRecord, error: PybmqError | None) -> None:
        if queue.op_id is not None:
            self._complete(queue.op_id, error)
            queue.op_id = None

    def _start_reopen(self) -> None:
        """After a reconnect's negotiation: reopen (and reconfigure) every queue that was open."""
        for queue in self.queues.values():
            self._reopening.add(queue.queue_id)
            message = ctrl.ControlMessage(
                open_queue=ctrl.OpenQueue(handle_parameters=self._handle_parameters(queue))
            )
            self._request(message, Req.REOPEN, queue.queue_id, None)
        self._maybe_restored()

    def _reopened(self, queue: QueueRecord, error: PybmqError | None) -> None:
        self._reopening.discard(queue.queue_id)
        self._events.append(QueueReopened(queue.queue_id, queue.uri, error))
        if error is not None:
            queue.step(QueueInput.SESSION_DOWN)
            self._cancel_posts(queue, AckStatus.NOT_CONNECTED, f"queue not reopened: {error}")
            self._forget(queue)
        self._maybe_restored()

    def _maybe_restored(self) -> None:
        if self._restoring and not self._reopening and self.state is SessionState.STARTED:
            self._restoring = False
            self._events.append(StateRestored())
