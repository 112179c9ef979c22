"""The state every layer of the client engine shares, and the few helpers all of them call."""

from __future__ import annotations

import collections
import dataclasses
import logging
from typing import Any

from pybmq.client.credit import CreditLedger
from pybmq.client.events import (
    ClientEvent,
    OperationCompleted,
)
from pybmq.client.fsm import (
    SESSION_TRANSITIONS,
    SessionInput,
    SessionState,
    step,
)
from pybmq.client.options import QueueOptions, SessionOptions
from pybmq.client.records import (
    AckBatch,
    PendingPut,
    PendingRequest,
    Put,
    QueueRecord,
)
from pybmq.client.stats import QueueCounters, SessionStats, snapshot
from pybmq.client.subscriptions import Subscription
from pybmq.errors import (
    PybmqError,
    SessionStoppedError,
    UsageError,
)
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import PUT_EVENT_MAX_SIZE_SOFT, EventType
from pybmq.wire.framing import (
    MAX_CONTROL_EVENT_SIZE,
    MAX_EVENT_SIZE,
    SMALL_EVENT_SIZE,
    EventReader,
)
from pybmq.wire.guid import MessageGuidGenerator
from pybmq.wire.properties import MessageProperties

log = logging.getLogger("pybmq.client.engine")


class EngineCore:
    """The state every layer of the client engine shares, and the few helpers all of them call."""

    def __init__(self, options: SessionOptions | None = None) -> None:
        self.options = options or SessionOptions()
        self.state = SessionState.CREATED
        self.encoding = self.options.negotiation_encoding
        self.heartbeat_interval = 3.0
        self.max_missed_heartbeats = 10
        self.broker_configure_stream = True
        # The broker advertised MPS:MESSAGE_PROPERTIES_EX; without it posts use the old format.
        self.extended_properties = True
        self.queues: dict[int, QueueRecord] = {}
        # Flow control: the credit each reader gave and what the broker pushed against it.
        self.credit = CreditLedger()
        self.reading_paused = False  # the shell stopped reading (the application is behind)
        self._reader = self._new_reader()
        self._out: list[bytes] = []
        self._events: collections.deque[ClientEvent] = collections.deque()
        self._requests: dict[int, PendingRequest] = {}
        self._next_rid = 1
        self._next_op = 1
        self._next_qid = 0
        self._next_sub_id = 1
        self._guids = MessageGuidGenerator(self.options.session_id)
        # Property mappings posted → (MessageProperties, wire size); see Publishing._properties.
        self._properties_cache: dict[object, tuple[MessageProperties, int]] = {}
        self._puts: list[Put] = []
        self._confirms: list[tuple[int, bytes, int]] = []  # (wire qid, guid, subQueueId)
        # (wire qid, subQueueId or subscription id) → queue handle, for PUSH routing.
        self._routes: dict[tuple[int, int], int] = {}
        # (queue URI, appId) → queue handle, and queue URI → [wire qid, handles using it]: O(1)
        # opens however many queues a session holds.
        self._by_uri: dict[tuple[str, str | None], int] = {}
        self._qids: dict[str, list[int]] = {}
        # (wire qid, subscription id) → the Subscription a PUSH on it matched (user-given only).
        self._subscription_handles: dict[tuple[int, int], Subscription] = {}
        self._next_handle = 0
        self._unacked: dict[bytes, PendingPut] = {}
        # (deadline, guids sent in one flush): ACK deadlines per batch, not per message.
        self._ack_deadlines: collections.deque[AckBatch] = collections.deque()
        self._now = 0.0
        self._last_received = 0.0
        self._last_probe = 0.0
        self._stop_op: int | None = None
        self._stop_deadline: float | None = None
        self._disconnect_sent = False
        self._negotiation_deadline = 0.0
        self._extra_stop_ops: list[int] = []
        # rId of a timed-out OpenQueue → its parameters, to undo the open if it succeeds late.
        self._abandoned_opens: dict[int, ctrl.QueueHandleParameters] = {}
        # Subscription ids sent in a ConfigureStream, applied to the queue once it is answered.
        self._pending_subscriptions: dict[int, tuple[list[int], QueueOptions]] = {}
        # Resilience: True from a connection drop until every queue is reopened (posts are held).
        self._restoring = False
        self._reopening: set[int] = set()
        # Stats of queues closed or lost in this session (the totals include them).
        self._closed_counters = QueueCounters()
        # Counts connections; a CONFIRM for a message of an earlier one is dropped (redelivered).
        self.generation = 0

    def _session_step(self, event: SessionInput) -> None:
        self.state = step("session", SESSION_TRANSITIONS, self.state, event)

    def _new_op(self) -> int:
        op_id = self._next_op
        self._next_op += 1
        return op_id

    def _complete(self, op_id: int, error: PybmqError | None) -> None:
        self._events.append(OperationCompleted(op_id, error))

    def _queue(self, queue_id: int) -> QueueRecord:
        try:
            return self.queues[queue_id]
        except KeyError:
            raise UsageError(f"no open queue with id {queue_id}") from None

    def _require_started(self, what: str) -> None:
        if self._restoring and self.state is not SessionState.STOPPED:
            raise UsageError(f"cannot {what}: the session is reconnecting (wait for StateRestored)")
        if self.state is not SessionState.STARTED:
            if self.state in (SessionState.STOPPING, SessionState.STOPPED):
                raise SessionStoppedError(f"cannot {what}: session is {self.state.value}")
            raise UsageError(f"cannot {what}: session is {self.state.value}, not STARTED")

    @property
    def now(self) -> float:
        """The time of the last input (the ``now`` the shell passed with it)."""
        return self._now

    def update_options(self, **changes: Any) -> None:
        """Replace fields of ``options`` (read again where the engine uses them, e.g. the
        request timeout when a request is sent)."""
        self.options = dataclasses.replace(self.options, **changes)

    @property
    def awaiting_response(self) -> bool:
        """True while a control request (open, configure, close, disconnect) is unanswered."""
        return bool(self._requests)

    @property
    def stopped(self) -> bool:
        """True once the session is over (the shell should close its transport)."""
        return self.state is SessionState.STOPPED

    def _new_reader(self) -> EventReader:
        return EventReader(limit_for=self._event_limit)

    def _event_limit(self, event_type: int) -> int:
        """The biggest event of ``event_type`` a well-behaved broker can send us now: PUSH is
        bounded by our credit (the broker may overshoot it by one message), ACK by what a PUT
        event can carry, control by MAX_CONTROL_EVENT_SIZE, heartbeats are tiny."""
        if event_type == EventType.PUSH:
            return min(MAX_EVENT_SIZE, self.credit.total_bytes + PUT_EVENT_MAX_SIZE_SOFT)
        if event_type == EventType.ACK:
            return PUT_EVENT_MAX_SIZE_SOFT
        if event_type == EventType.CONTROL:
            return MAX_CONTROL_EVENT_SIZE
        return SMALL_EVENT_SIZE

    def stats(self) -> SessionStats:
        """A typed snapshot of the session's statistics (per open queue, and totals)."""
        return snapshot(
            {q.uri: q.counters for q in list(self.queues.values())}, self._closed_counters
        )

    def _new_stream_id(self) -> int:
        """subIds and subscription ids from one counter, so a PUSH's id names one stream."""
        value = self._next_sub_id
        self._next_sub_id += 1
        return value
