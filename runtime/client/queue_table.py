"""The queue table: every queue handle of the session, how PUSHes find their handle, and the
ids the session hands out (handles, wire queue ids, subQueueIds and subscription ids).

O(1) per open and close however many queues a session holds: each index is keyed so that a
queue's own entries can be found and dropped without a scan."""

from __future__ import annotations

from pybmq.client.fsm import RemoteQueueInput
from pybmq.client.options import QueueOptions
from pybmq.client.records import QueueRecord
from pybmq.client.stats import QueueCounters, SessionStats, snapshot
from pybmq.client.subscriptions import Subscription
from pybmq.errors import UsageError
from pybmq.generated import bmqp_ctrlmsg as ctrl

__all__ = ["QueueTable"]


class QueueTable:
    """The session's queues and the indexes over them."""

    def __init__(self) -> None:
        self.queues: dict[int, QueueRecord] = {}
        # (wire qid, subQueueId or subscription id) → queue handle, for PUSH routing.
        self.routes: dict[tuple[int, int], int] = {}
        # (queue URI, appId) → queue handle, and queue URI → [wire qid, handles using it].
        self.by_uri: dict[tuple[str, str | None], int] = {}
        self.qids: dict[str, list[int]] = {}
        # (wire qid, subscription id) → the Subscription a PUSH on it matched (user-given only).
        self.subscription_handles: dict[tuple[int, int], Subscription] = {}
        # Subscription ids sent in a ConfigureStream, applied to the queue once it is answered.
        self.pending_subscriptions: dict[int, tuple[list[int], QueueOptions]] = {}
        # Stats of queues closed or lost in this session (the totals include them).
        self.closed_counters = QueueCounters()
        self._next_handle = 0
        self._next_qid = 0
        self._next_stream_id = 1

    def get(self, queue_id: int) -> QueueRecord:
        """The queue with handle ``queue_id``; UsageError if there is none."""
        try:
            return self.queues[queue_id]
        except KeyError:
            raise UsageError(f"no open queue with id {queue_id}") from None

    def new_stream_id(self) -> int:
        """subIds and subscription ids from one counter, so a PUSH's id names one stream."""
        value = self._next_stream_id
        self._next_stream_id += 1
        return value

    def add(self, uri: str, base_uri: str, app_id: str | None, flags: int) -> QueueRecord:
        """A new queue record for ``uri`` (``base_uri`` with ``app_id``); UsageError if it is
        open already. Like the official SDK: one wire qId per queue URI; each appId gets its
        own subId."""
        if (base_uri, app_id) in self.by_uri:
            raise UsageError(
                f"queue {uri!r} is already open (or opening) in this session; "
                "open it once with read=True and write=True to do both"
            )
        queue_id = self._next_handle
        self._next_handle += 1
        users = self.qids.get(base_uri)
        if users is None:
            users = self.qids[base_uri] = [self._next_qid, 0]
            self._next_qid += 1
        users[1] += 1
        qid = users[0]
        self.by_uri[(base_uri, app_id)] = queue_id
        sub_id = self.new_stream_id() if app_id is not None else 0
        queue = QueueRecord(queue_id, qid, base_uri, app_id, sub_id, flags)
        self.routes[(qid, sub_id)] = queue_id
        self.queues[queue_id] = queue
        return queue

    def forget(self, queue: QueueRecord) -> None:
        """Drop everything kept for ``queue`` (its own entries only)."""
        del self.queues[queue.queue_id]
        queue.counters.add_into(self.closed_counters)
        self.pending_subscriptions.pop(queue.queue_id, None)
        self.by_uri.pop((queue.base_uri, queue.app_id), None)
        users = self.qids.get(queue.base_uri)
        if users is not None:
            users[1] -= 1
            if not users[1]:
                del self.qids[queue.base_uri]
        for sid in (queue.sub_id, *queue.subscription_ids):
            if self.routes.get((queue.qid, sid)) == queue.queue_id:
                del self.routes[(queue.qid, sid)]
                self.subscription_handles.pop((queue.qid, sid), None)

    def clear(self) -> None:
        """The session is over: every queue is gone (its stats go to the closed totals)."""
        for queue in self.queues.values():
            queue.remote_step(RemoteQueueInput.CLOSED)
            queue.counters.add_into(self.closed_counters)
        self.queues.clear()
        self.routes.clear()
        self.by_uri.clear()
        self.qids.clear()
        self.subscription_handles.clear()
        self.pending_subscriptions.clear()

    def apply_subscriptions(self, queue: QueueRecord) -> None:
        """The broker accepted the subscriptions sent for ``queue``: route their ids to it."""
        pending = self.pending_subscriptions.pop(queue.queue_id, None)
        if pending is None:
            return
        routes, handles = self.routes, self.subscription_handles
        for sid in queue.subscription_ids:
            routes.pop((queue.qid, sid), None)
            handles.pop((queue.qid, sid), None)
        queue.subscription_ids, queue.options = pending
        for sid in queue.subscription_ids:
            routes[(queue.qid, sid)] = queue.queue_id
        # The handle each message carries: the application's own Subscription objects.
        for sid, subscription in zip(
            queue.subscription_ids, queue.options.subscription_objects, strict=False
        ):
            handles[(queue.qid, sid)] = subscription

    def handles_on(self, base_uri: str) -> int:
        """How many of our queue handles share the wire queue id of ``base_uri``."""
        users = self.qids.get(base_uri)
        return users[1] if users is not None else 0

    def route(self, qid: int, stream_id: int) -> QueueRecord | None:
        """The queue a PUSH for (``qid``, ``stream_id``) belongs to, if any."""
        handle = self.routes.get((qid, stream_id))
        return self.queues.get(handle) if handle is not None else None

    @staticmethod
    def handle_parameters(queue: QueueRecord) -> ctrl.QueueHandleParameters:
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

    def stats(self) -> SessionStats:
        """A typed snapshot of the session's statistics (per open queue, and totals)."""
        return snapshot(
            {q.uri: q.counters for q in list(self.queues.values())}, self.closed_counters
        )
