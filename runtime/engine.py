"""The client session engine: sans-I/O (no sockets, threads or clocks), one object per connection.

The shell feeds it what happened — ``receive_data(bytes, now)``, user commands (``open_queue``,
``post``, ``confirm``, ``stop`` …, each with ``now``), ``connection_made``/``connection_lost`` and
``handle_timeout(now)`` — and takes out what to do: ``data_to_send()`` (bytes for the socket),
``next_events()`` (records from :mod:`pybmq.client_events`) and ``next_deadline()`` (when to call
``handle_timeout`` next). All state changes go through the tables in :mod:`pybmq.fsm`.

Posts and confirms are only buffered by the commands; ``data_to_send()`` turns everything buffered
since the last call into one PUT event and one CONFIRM event, which is how a shell that flushes
once per loop turn gets one event per turn.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

from pybmq import __version__
from pybmq import events as wire
from pybmq.client_events import (
    Ack,
    AckReceived,
    AckStatus,
    ClientEvent,
    ConnectionLost,
    Message,
    MessageReceived,
    OperationCompleted,
    QueueReopened,
    Reconnected,
    SessionStarted,
    SessionStopped,
    StateRestored,
)
from pybmq.client_options import QueueOptions, SessionOptions
from pybmq.errors import (
    BrokerError,
    PostBufferFullError,
    ProtocolError,
    PybmqError,
    RequestTimeoutError,
    SessionStoppedError,
    UsageError,
)
from pybmq.framing import Event, EventReader
from pybmq.fsm import (
    QUEUE_TRANSITIONS,
    SESSION_TRANSITIONS,
    QueueInput,
    QueueState,
    RemoteQueueState,
    SessionInput,
    SessionState,
    step,
)
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.bmqp_ctrlmsg_ber import decode_ber
from pybmq.generated.bmqp_ctrlmsg_json import decode_json
from pybmq.generated.wire_codec import CompressionAlgorithmType, EncodingType, EventType
from pybmq.guid import MessageGuidGenerator
from pybmq.properties import MessageProperties

log = logging.getLogger("pybmq.engine")

PROTOCOL_VERSION = 1
# sdkVersion as the C++ SDK writes it: major*10000 + minor*100 + patch.
SDK_VERSION = int("".join(f"{int(p):02d}" for p in __version__.split(".")[:3]))
FEATURES_MPS = "MPS:MESSAGE_PROPERTIES_EX"

# bmqt::QueueFlags bits.
FLAG_READ = 1 << 1
FLAG_WRITE = 1 << 2
FLAG_ACK = 1 << 3

DEFAULT_APP_ID = "__default"
_ZLIB = CompressionAlgorithmType.ZLIB


class _Req:
    """Why a control request was sent, so its response (or its timeout) lands in the right place."""

    OPEN = "openQueue"
    CONFIGURE_OPEN = "configureStream (open)"
    CONFIGURE = "configureStream"
    CONFIGURE_CLOSE = "configureStream (close)"
    CLOSE = "closeQueue"
    CLOSE_ABANDONED = "closeQueue (after a late open)"
    DISCONNECT = "disconnect"
    REOPEN = "openQueue (reopen)"
    REOPEN_CONFIGURE = "configureStream (reopen)"


_CONFIGURE_RESPONSES = ("configure_stream_response", "configure_queue_stream_response")
_EXPECTED_RESPONSE: dict[str, tuple[str, ...]] = {
    _Req.OPEN: ("open_queue_response",),
    _Req.CONFIGURE_OPEN: _CONFIGURE_RESPONSES,
    _Req.CONFIGURE: _CONFIGURE_RESPONSES,
    _Req.CONFIGURE_CLOSE: _CONFIGURE_RESPONSES,
    _Req.CLOSE: ("close_queue_response",),
    _Req.CLOSE_ABANDONED: ("close_queue_response",),
    _Req.DISCONNECT: ("disconnect_response",),
    _Req.REOPEN: ("open_queue_response",),
    _Req.REOPEN_CONFIGURE: _CONFIGURE_RESPONSES,
}
# A broker listing this feature takes ConfigureStream (subscriptions); older ones only
# ConfigureQueueStream (flat flow-control parameters).
FEATURE_CONFIGURE_STREAM = "CONFIGURE_STREAM"


@dataclass(slots=True)
class _PendingRequest:
    kind: str
    deadline: float
    queue_id: int | None
    op_id: int | None


# (queue handle, guid, payload, properties, ack requested, compress)
_Put = tuple[int, bytes, bytes, "MessageProperties | None", bool, bool]


class _PendingPut:
    """One unacknowledged post; kept small because there can be millions in flight."""

    __slots__ = ("batch", "context", "put", "queue_id")

    def __init__(self, queue_id: int, context: object, put: _Put | None) -> None:
        self.queue_id = queue_id
        self.context = context
        self.put = put  # kept to retransmit it (same GUID) after a reconnect
        self.batch: _AckBatch | None = None  # set when the post leaves in a PUT event


class _AckBatch:
    """The posts that left in one flush share one ACK deadline. ``remaining`` counts those still
    unacknowledged, so a fully acknowledged batch is dropped at once instead of holding its
    GUIDs until the deadline."""

    __slots__ = ("deadline", "guids", "remaining")

    def __init__(self, deadline: float, guids: list[bytes]) -> None:
        self.deadline = deadline
        self.guids = guids
        self.remaining = len(guids)


class QueueRecord:
    """What the engine knows about one open(ing) queue: our state and the broker's last known."""

    __slots__ = (
        "app_id",
        "base_uri",
        "flags",
        "op_id",
        "options",
        "qid",
        "queue_id",
        "remote",
        "state",
        "sub_id",
        "subscription_ids",
        "uri",
    )

    def __init__(
        self, queue_id: int, qid: int, uri: str, app_id: str | None, sub_id: int, flags: int
    ) -> None:
        self.queue_id = queue_id  # our handle for this open; unique in the session
        self.qid = qid  # the wire queue id: shared by every appId of one queue URI
        self.base_uri = uri
        # What goes on the wire (and what users see): the URI with its ?id= when there is one.
        uri = f"{uri}?id={app_id}" if app_id is not None else uri
        self.uri = uri
        self.app_id = app_id
        self.sub_id = sub_id
        self.flags = flags
        self.options = QueueOptions()
        self.state = QueueState.CLOSED
        self.remote = RemoteQueueState.CLOSED
        self.op_id: int | None = None  # the user operation waiting on this queue, if any
        self.subscription_ids: list[int] = []

    @property
    def readable(self) -> bool:
        return bool(self.flags & FLAG_READ)

    @property
    def writable(self) -> bool:
        return bool(self.flags & FLAG_WRITE)

    def step(self, event: QueueInput) -> None:
        self.state = step(f"queue {self.uri}", QUEUE_TRANSITIONS, self.state, event)

    def __repr__(self) -> str:
        return f"<Queue {self.queue_id} {self.uri} {self.state.value}/{self.remote.value}>"


ControlT = TypeVar("ControlT", ctrl.ControlMessage, ctrl.NegotiationMessage)


def encode_control(message: ctrl.ControlMessage | ctrl.NegotiationMessage, encoding: str) -> bytes:
    """A CONTROL event carrying ``message`` in ``encoding`` ("JSON" or "BER")."""
    return wire.encode_control(message, EncodingType[encoding])


def decode_control(event: Event, cls: type[ControlT]) -> tuple[ControlT, str]:
    """The message in a CONTROL event, in whichever encoding the peer chose, and that encoding
    (typed: the caller says which message it expects)."""
    encoding, payload = wire.decode_control_event(event)
    if encoding == EncodingType.JSON:
        return decode_json(cls, payload), "JSON"
    return decode_ber(cls, payload), "BER"


def split_queue_uri(uri: str) -> tuple[str, str | None]:
    """``bmq://domain/queue?id=app`` → (uri without the query, app id or None). Validates the form."""
    parts = urlsplit(uri)
    if parts.scheme != "bmq" or not parts.netloc or len(parts.path) < 2:
        raise UsageError(f"queue URI must look like bmq://domain/queue[?id=appId], got {uri!r}")
    app_ids = parse_qs(parts.query).get("id", [])
    if len(app_ids) > 1:
        raise UsageError(f"queue URI has more than one id= parameter: {uri!r}")
    return f"bmq://{parts.netloc}{parts.path}", (app_ids[0] if app_ids else None)


class ClientEngine:
    """One BlazingMQ client session over one connection, without I/O. See the module docstring."""

    def __init__(self, options: SessionOptions | None = None) -> None:
        self.options = options or SessionOptions()
        self.state = SessionState.CREATED
        self.encoding = self.options.negotiation_encoding
        self.heartbeat_interval = 3.0
        self.max_missed_heartbeats = 10
        self.broker_configure_stream = True
        self.queues: dict[int, QueueRecord] = {}
        self._reader = EventReader()
        self._out: list[bytes] = []
        self._events: collections.deque[ClientEvent] = collections.deque()
        self._requests: dict[int, _PendingRequest] = {}
        self._next_rid = 1
        self._next_op = 1
        self._next_qid = 0
        self._next_sub_id = 1
        self._guids = MessageGuidGenerator(self.options.session_id)
        self._puts: list[_Put] = []
        self._confirms: list[tuple[int, bytes, int]] = []  # (wire qid, guid, subQueueId)
        # (wire qid, subQueueId or subscription id) → queue handle, for PUSH routing.
        self._routes: dict[tuple[int, int], int] = {}
        self._next_handle = 0
        self._unacked: dict[bytes, _PendingPut] = {}
        # (deadline, guids sent in one flush): ACK deadlines per batch, not per message.
        self._ack_deadlines: collections.deque[_AckBatch] = collections.deque()
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
        # Counts connections; a CONFIRM for a message of an earlier one is dropped (redelivered).
        self.generation = 0

    # ------------------------------------------------------------------ session lifecycle

    def _session_step(self, event: SessionInput) -> None:
        self.state = step("session", SESSION_TRANSITIONS, self.state, event)

    def start(self, now: float) -> None:
        """The user wants a session; the shell should now open the transport."""
        self._now = now
        self._session_step(SessionInput.START)

    def connection_made(self, now: float) -> None:
        """The transport is up: send our ClientIdentity."""
        self._now = self._last_received = self._last_probe = now
        self._session_step(SessionInput.CONNECTED)
        self._negotiation_deadline = now + self.options.request_timeout
        identity = ctrl.ClientIdentity(
            protocol_version=PROTOCOL_VERSION,
            sdk_version=SDK_VERSION,
            client_type=ctrl.ClientType.E_TCPCLIENT,
            process_name=self.options.process_name,
            pid=self.options.pid,
            session_id=self.options.session_id,
            host_name=self.options.host_name,
            features=self._features(),
            cluster_name="",
            cluster_node_id=-1,
            sdk_language=ctrl.ClientLanguage.E_UNKNOWN,
            guid_info=ctrl.GuidInfo(
                client_id=self._guids.client_id_hex,
                nano_seconds_from_epoch=self._guids.nanoseconds_from_epoch,
            ),
            user_agent=f"pybmq/{__version__}",
        )
        message = ctrl.NegotiationMessage(client_identity=identity)
        self._out.append(encode_control(message, self.options.negotiation_encoding))

    def _features(self) -> str:
        return f"PROTOCOL_ENCODING:{','.join(self.options.encodings)};{FEATURES_MPS}"

    def connection_lost(self, now: float, error: Exception | None = None) -> None:
        """The transport closed. Everything still pending fails; the session is over."""
        self._now = now
        if self.state in (SessionState.STOPPED, SessionState.RECONNECTING):
            return
        if self._can_reconnect():
            self._drop_connection(
                f"connection lost: {error}" if error else "connection closed by the broker"
            )
            return
        if self.state is SessionState.STOPPING and self._disconnect_sent:
            self._finish_stop("stopped")
            return
        reason = f"connection lost: {error}" if error else "connection closed by the broker"
        self._fail_session(reason, SessionStoppedError(reason))

    def _can_reconnect(self) -> bool:
        return self.options.reconnect and (
            self.state is SessionState.STARTED
            or (
                self._restoring
                and self.state in (SessionState.NEGOTIATING, SessionState.RECONNECTING)
            )
        )

    def _drop_connection(self, reason: str) -> None:
        """The connection is gone but the session lives on: keep open queues for a reopen, put
        every sent-but-unacknowledged post back in front of the held ones (same GUIDs), fail
        the user operations in flight, and tell the shell to reconnect (ConnectionLost)."""
        self._session_step(SessionInput.CONNECTION_DROPPED)
        self.generation += 1
        self._reader = EventReader()
        self._out.clear()
        self._confirms.clear()
        first_drop = not self._restoring
        self._restoring = True
        self._reopening.clear()
        for request in self._requests.values():
            if request.op_id is not None:
                self._complete(request.op_id, SessionStoppedError(f"{reason} ({request.kind})"))
        self._requests.clear()
        self._abandoned_opens.clear()
        self._pending_subscriptions.clear()
        for queue in list(self.queues.values()):
            queue.remote = RemoteQueueState.CLOSED
            if queue.state is QueueState.OPENED:
                if queue.op_id is not None:  # a reconfigure in flight: reopened with old options
                    self._complete(queue.op_id, SessionStoppedError(f"{reason} ({queue.uri})"))
                    queue.op_id = None
                continue
            # Opening: failed. Closing: the lost connection detached it, so the close succeeded.
            error = (
                None
                if queue.state is QueueState.CLOSING
                else SessionStoppedError(f"{reason} ({queue.uri})")
            )
            queue.step(QueueInput.SESSION_DOWN)
            self._finish_queue_op(queue, error)
            self._cancel_posts(
                queue, AckStatus.CANCELED, "queue closed" if error is None else reason
            )
            self._forget(queue)
        if first_drop:
            resend = [
                p.put for p in self._unacked.values() if p.batch is not None and p.put is not None
            ]
            for pending in self._unacked.values():
                pending.batch = None
            self._ack_deadlines.clear()
            self._puts[:0] = resend
            log.warning("connection dropped (%s): %d posts to retransmit", reason, len(resend))
        self._events.append(ConnectionLost(reason))

    def _cancel_posts(self, queue: QueueRecord, status: AckStatus, reason: str) -> None:
        """Resolve every post to ``queue`` still pending or held (each exactly once)."""
        for guid, pending in list(self._unacked.items()):
            if pending.queue_id == queue.queue_id:
                del self._unacked[guid]
                if pending.batch is not None:
                    pending.batch.remaining -= 1
                ack = Ack(guid, queue.uri, status, local=True, reason=reason)
                self._events.append(AckReceived(ack, pending.context))
        self._puts = [p for p in self._puts if p[0] != queue.queue_id]

    def _start_reopen(self) -> None:
        """After a reconnect's negotiation: reopen (and reconfigure) every queue that was open."""
        for queue in self.queues.values():
            self._reopening.add(queue.queue_id)
            message = ctrl.ControlMessage(
                open_queue=ctrl.OpenQueue(handle_parameters=self._handle_parameters(queue))
            )
            self._request(message, _Req.REOPEN, queue.queue_id, None)
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

    def stop(self, now: float) -> int:
        """Start a graceful stop; returns the op id that completes when the session is stopped."""
        self._now = now
        op_id = self._new_op()
        if self.state is SessionState.STOPPED:
            self._events.append(OperationCompleted(op_id))
            return op_id
        if self.state is SessionState.STOPPING:
            # Already on its way: the earlier stop's completion also completes this one.
            self._extra_stop_ops.append(op_id)
            return op_id
        if self.state is not SessionState.STARTED or self._restoring:
            if self.state is SessionState.STARTED:
                self._session_step(SessionInput.CONNECTION_LOST)
            else:
                self._session_step(SessionInput.STOP)
            self._fail_everything("session stopped before it started (or while reconnecting)")
            self._events.append(OperationCompleted(op_id))
            self._events.append(SessionStopped("stopped before the session started"))
            return op_id
        self._session_step(SessionInput.STOP)
        self._stop_op = op_id
        self._stop_deadline = now + self.options.stop_timeout
        for queue in list(self.queues.values()):
            if queue.op_id is not None and queue.state in (
                QueueState.OPENING,
                QueueState.CONFIGURING,
            ):
                self._complete(queue.op_id, SessionStoppedError(f"session stopping: {queue.uri}"))
                queue.op_id = None
            if queue.state is QueueState.OPENED and queue.op_id is None:
                queue.step(QueueInput.CLOSE)
                self._start_close(queue)
        self._maybe_disconnect()
        return op_id

    def _maybe_disconnect(self) -> None:
        """Send Disconnect once no queue is mid-request (the broker then sends nothing more)."""
        if self.state is not SessionState.STOPPING or self._disconnect_sent:
            return
        if any(r.kind != _Req.DISCONNECT for r in self._requests.values()):
            return
        self._disconnect_sent = True
        self._request(
            ctrl.ControlMessage(disconnect=ctrl.Disconnect()), _Req.DISCONNECT, None, None
        )

    def _finish_stop(self, reason: str) -> None:
        if self.state is not SessionState.STOPPED:
            self._session_step(
                SessionInput.DISCONNECTED if reason == "stopped" else SessionInput.STOP_TIMED_OUT
            )
        self._fail_everything("session stopped")
        if self._stop_op is not None:
            self._complete(self._stop_op, None)
            self._stop_op = None
        for op_id in self._extra_stop_ops:
            self._complete(op_id, None)
        self._extra_stop_ops.clear()
        self._events.append(SessionStopped(reason))

    def _fail_session(self, reason: str, error: PybmqError) -> None:
        self._session_step(SessionInput.CONNECTION_LOST)
        self._fail_everything(reason)
        if self._stop_op is not None:
            self._complete(self._stop_op, None)
            self._stop_op = None
        for op_id in self._extra_stop_ops:
            self._complete(op_id, None)
        self._extra_stop_ops.clear()
        self._events.append(SessionStopped(reason, error))

    def _fail_everything(self, reason: str) -> None:
        """Every request and post still pending fails with SessionStoppedError / NOT_CONNECTED."""
        for request in self._requests.values():
            if request.op_id is not None and request.op_id != self._stop_op:
                self._complete(request.op_id, SessionStoppedError(f"{reason} ({request.kind})"))
        self._requests.clear()
        self._abandoned_opens.clear()
        self._restoring = False
        self._reopening.clear()
        for queue in self.queues.values():
            if queue.op_id is not None:
                self._complete(queue.op_id, SessionStoppedError(f"{reason} ({queue.uri})"))
                queue.op_id = None
            queue.step(QueueInput.SESSION_DOWN)
            queue.remote = RemoteQueueState.CLOSED
        self._nack_all(AckStatus.NOT_CONNECTED, reason)
        self.queues.clear()
        self._routes.clear()
        self._puts.clear()
        self._confirms.clear()

    def _nack_all(self, status: AckStatus, reason: str) -> None:
        # Posts still buffered (never sent) are in _unacked too, so they fail the same way.
        for guid, pending in self._unacked.items():
            queue = self.queues.get(pending.queue_id)
            ack = Ack(guid, queue.uri if queue else "", status, local=True, reason=reason)
            self._events.append(AckReceived(ack, pending.context))
        self._unacked.clear()
        self._ack_deadlines.clear()

    # ------------------------------------------------------------------ queues

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
        base_uri, app_id = split_queue_uri(uri)
        if app_id is not None and not read:
            raise UsageError(f"an appId (?id=) only makes sense for a reader: {uri!r}")
        for other in self.queues.values():
            if other.base_uri == base_uri and other.app_id == app_id:
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
        qid = next((q.qid for q in self.queues.values() if q.base_uri == base_uri), None)
        if qid is None:
            qid = self._next_qid
            self._next_qid += 1
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
        self._request(message, _Req.OPEN, queue_id, None)
        return op_id, queue_id

    def configure_queue(self, queue_id: int, options: QueueOptions, now: float) -> int:
        """Standalone ConfigureStream on an open queue; returns the op id."""
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
        self._send_configure(queue, _Req.CONFIGURE, options)
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
            self._send_configure(queue, _Req.CONFIGURE_CLOSE, None, empty=True)
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
        if queue.readable and not empty:
            expressions = options.subscriptions or ("",)
            ids = []
            for text in expressions:
                sid = self._new_stream_id()
                ids.append(sid)
                subscriptions.append(
                    ctrl.Subscription(
                        s_id=sid,
                        expression=ctrl.Expression(
                            version=(
                                ctrl.ExpressionVersion.E_VERSION_1
                                if text
                                else ctrl.ExpressionVersion.E_UNDEFINED
                            ),
                            text=text,
                        ),
                        consumers=[
                            ctrl.ConsumerInfo(
                                max_unconfirmed_messages=options.max_unconfirmed_messages,
                                max_unconfirmed_bytes=options.max_unconfirmed_bytes,
                                consumer_priority=options.consumer_priority,
                                consumer_priority_count=1,
                            )
                        ],
                    )
                )
            self._pending_subscriptions[queue.queue_id] = (ids, options)
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

    def _new_stream_id(self) -> int:
        """subIds and subscription ids from one counter, so a PUSH's id names one stream."""
        value = self._next_sub_id
        self._next_sub_id += 1
        return value

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

    # ------------------------------------------------------------------ data plane

    def post(
        self,
        queue_id: int,
        payload: bytes,
        now: float,
        *,
        properties: Mapping[str, Any] | None = None,
        context: object = None,
    ) -> bytes:
        """Buffer one message for the next PUT event; returns its GUID. ``context`` comes back
        with the ACK (or local NACK) for it."""
        if self._restoring and self.state is not SessionState.STOPPED:
            if len(self._puts) >= self.options.max_buffered_posts:
                raise PostBufferFullError(
                    f"cannot post while reconnecting: {len(self._puts)} posts already held "
                    f"(max_buffered_posts={self.options.max_buffered_posts})"
                )
        elif self.state is not SessionState.STARTED:
            self._require_started("post")
        queue = self.queues.get(queue_id)
        if queue is None or queue.state is not QueueState.OPENED:
            state = queue.state.value if queue else "unknown"
            raise UsageError(f"cannot post: queue {queue_id} is not open ({state})")
        if not queue.writable:
            raise UsageError(f"cannot post: queue {queue.uri} was not opened with write=True")
        if not payload:
            raise UsageError("cannot post an empty payload")
        if not isinstance(payload, (bytes, bytearray, memoryview)):
            raise UsageError(f"payload must be bytes, not {type(payload).__name__}")
        if properties:
            props = (
                properties
                if isinstance(properties, MessageProperties)
                else MessageProperties(properties)
            )
        else:
            props = None
        threshold = self.options.compression_threshold
        compress = bool(threshold) and len(payload) >= threshold
        wants_ack = bool(queue.flags & FLAG_ACK)
        if context is not None and not wants_ack:
            raise UsageError(
                f"{queue.uri} was opened with ack=False: no ACK will come to wait for or call back"
            )
        guid = self._guids.generate()
        put = (queue_id, guid, payload, props, wants_ack, compress)
        self._puts.append(put)
        if wants_ack:
            # The payload is kept until the ACK only when it may have to be retransmitted.
            self._unacked[guid] = _PendingPut(
                queue_id, context, put if self.options.reconnect else None
            )
        return guid

    def confirm(self, queue_id: int, guid: bytes, generation: int | None = None) -> None:
        """Buffer a CONFIRM (for the message ``guid`` on queue handle ``queue_id``).

        ``generation`` is ``self.generation`` when the message arrived: a message of an earlier
        connection is not confirmed (that broker session is gone; it will be redelivered)."""
        if (generation is not None and generation != self.generation) or (
            self._restoring and self.state is not SessionState.STOPPED
        ):
            return
        if self.state not in (SessionState.STARTED, SessionState.STOPPING):
            raise SessionStoppedError(f"cannot confirm: session is {self.state.value}")
        queue = self.queues.get(queue_id)
        if queue is None or queue.state not in (QueueState.OPENED, QueueState.CLOSING):
            raise UsageError(f"cannot confirm: queue {queue_id} is not open")
        if not queue.readable:
            raise UsageError(f"cannot confirm on {queue.uri}: it was not opened with read=True")
        self._confirms.append((queue.qid, guid, queue.sub_id))

    @property
    def unacked_count(self) -> int:
        return len(self._unacked)

    @property
    def pending_ack_batches(self) -> int:
        """Flushes that still have unacknowledged posts (each holds one ACK deadline)."""
        return len(self._ack_deadlines)

    @property
    def buffered_count(self) -> int:
        """Posts and confirms waiting for the next ``data_to_send()``."""
        return len(self._puts) + len(self._confirms)

    def _flush_data(self) -> None:
        if self._puts and not self._restoring:
            self._flush_puts()
        if self._confirms:
            builder = wire.ConfirmEventBuilder()
            builder.add_many(self._confirms)
            self._out.extend(builder.finish())
            self._confirms.clear()

    def _flush_puts(self) -> None:
        threshold = self.options.compression_threshold or 1
        builder = wire.PutEventBuilder(
            self.options.max_put_event_bytes, compression_threshold=threshold
        )
        queues = self.queues
        acked: list[bytes] = []
        puts = self._puts
        i, n = 0, len(puts)
        while i < n:
            queue_id, guid, payload, props, wants_ack, compress = puts[i]
            qid = queues[queue_id].qid
            if wants_ack:
                acked.append(guid)
            if compress:
                builder.add(
                    qid, payload, guid=guid, properties=props, ack_requested=wants_ack,
                    compression=_ZLIB,
                )  # fmt: skip
                i += 1
                continue
            # The fast path: a run of uncompressed posts to one queue sharing one properties
            # object (the common case: a loop posting to one queue) is packed in one call.
            j = i + 1
            while j < n:
                other = puts[j]
                if (
                    other[0] != queue_id
                    or other[3] is not props
                    or other[4] != wants_ack
                    or other[5]
                ):
                    break
                if wants_ack:
                    acked.append(other[1])
                j += 1
            run = puts[i:j]
            builder.add_many(
                qid, [p[2] for p in run], [p[1] for p in run], properties=props,
                ack_requested=wants_ack,
            )  # fmt: skip
            i = j
        self._out.extend(builder.finish())
        puts.clear()
        if acked:
            batch = _AckBatch(self._now + self.options.ack_timeout, acked)
            unacked = self._unacked
            for guid in acked:
                unacked[guid].batch = batch
            self._ack_deadlines.append(batch)

    # ------------------------------------------------------------------ bytes out / events out

    def data_to_send(self) -> bytes:
        """Everything to write to the socket now (buffered posts and confirms become events)."""
        self._flush_data()
        if not self._out:
            return b""
        data = b"".join(self._out)
        self._out.clear()
        return data

    def next_events(self) -> list[ClientEvent]:
        events = list(self._events)
        self._events.clear()
        return events

    def next_deadline(self) -> float | None:
        """When ``handle_timeout`` must run next (absolute, on the caller's clock), or None."""
        if self.state is SessionState.NEGOTIATING:
            return self._negotiation_deadline
        candidates = [r.deadline for r in self._requests.values()]
        if self._ack_deadlines:
            candidates.append(self._ack_deadlines[0].deadline)
        if self._stop_deadline is not None and self.state is SessionState.STOPPING:
            candidates.append(self._stop_deadline)
        if self.state in (SessionState.STARTED, SessionState.STOPPING):
            candidates.append(self._last_probe + self.heartbeat_interval)
        return min(candidates) if candidates else None

    def handle_timeout(self, now: float) -> None:
        """Expire requests and ACKs whose deadline passed; probe or give up on a silent broker."""
        self._now = now
        if self.state is SessionState.NEGOTIATING and self._negotiation_deadline <= now:
            error = RequestTimeoutError("no BrokerResponse to our ClientIdentity")
            if self._can_reconnect():
                self._drop_connection(str(error))
                return
            self._session_step(SessionInput.NEGOTIATION_FAILED)
            self._events.append(SessionStopped(str(error), error))
            return
        for rid, request in list(self._requests.items()):
            if self.state is SessionState.STOPPED:
                return
            if request.deadline <= now and rid in self._requests:
                del self._requests[rid]
                if request.kind in (_Req.OPEN, _Req.REOPEN) and request.queue_id in self.queues:
                    # If the broker opens it after all, its late response gets a CloseQueue.
                    abandoned = self.queues[request.queue_id]
                    self._abandoned_opens[rid] = self._handle_parameters(abandoned)
                self._on_request_failed(
                    request, RequestTimeoutError(f"no response to {request.kind} (rId {rid})")
                )
        while self._ack_deadlines and self._ack_deadlines[0].deadline <= now:
            for guid in self._ack_deadlines.popleft().guids:
                pending = self._unacked.pop(guid, None)
                if pending is not None:
                    queue = self.queues.get(pending.queue_id)
                    reason = f"no ACK within {self.options.ack_timeout:g}s"
                    ack = Ack(
                        guid,
                        queue.uri if queue else "",
                        AckStatus.TIMEOUT,
                        local=True,
                        reason=reason,
                    )
                    self._events.append(AckReceived(ack, pending.context))
        stop_deadline = self._stop_deadline
        if (
            self.state is SessionState.STOPPING
            and stop_deadline is not None
            and stop_deadline <= now
        ):
            self._finish_stop("stop timed out: no DisconnectResponse")
            return
        if self.state in (SessionState.STARTED, SessionState.STOPPING):
            silent = now - self._last_received
            if silent >= self.heartbeat_interval * self.max_missed_heartbeats:
                reason = f"no traffic from the broker for {silent:.1f}s"
                if self._can_reconnect():
                    self._drop_connection(f"{reason} (missed heartbeats)")
                    return
                self._fail_session(reason, SessionStoppedError(reason))
            elif now - self._last_probe >= self.heartbeat_interval:
                self._last_probe = now
                if silent >= self.heartbeat_interval:
                    self._out.append(wire.HEARTBEAT_REQ_EVENT)
        self._maybe_disconnect()

    # ------------------------------------------------------------------ control requests

    def _new_op(self) -> int:
        op_id = self._next_op
        self._next_op += 1
        return op_id

    def _complete(self, op_id: int, error: PybmqError | None) -> None:
        self._events.append(OperationCompleted(op_id, error))

    def _request(
        self, message: ctrl.ControlMessage, kind: str, queue_id: int | None, op_id: int | None
    ) -> None:
        rid = self._next_rid
        self._next_rid = self._next_rid + 1 if self._next_rid < 2**31 - 1 else 1
        message.r_id = rid
        self._requests[rid] = _PendingRequest(
            kind, self._now + self.options.request_timeout, queue_id, op_id
        )
        self._send_control(message)

    def _send_control(self, message: ctrl.ControlMessage | ctrl.NegotiationMessage) -> None:
        # Data buffered before this request must reach the broker before it (post, then close).
        self._flush_data()
        self._out.append(encode_control(message, self.encoding))

    # ------------------------------------------------------------------ bytes in

    def receive_data(self, data: bytes, now: float) -> None:
        """Bytes from the socket. Malformed input stops the session and raises ProtocolError."""
        self._now = self._last_received = now
        if self.stopped or self.state is SessionState.RECONNECTING:
            return
        try:
            for event in self._reader.feed(data):
                self._on_event(event.header.type, event)
                if self.stopped:
                    return
        except ProtocolError as exc:
            if not self.stopped:
                self._fail_session(f"protocol error from the broker: {exc}", exc)
            raise

    @property
    def stopped(self) -> bool:
        """True once the session is over (the shell should close its transport)."""
        return self.state is SessionState.STOPPED

    def _on_event(self, event_type: int, event: Event) -> None:
        if event_type == EventType.PUSH:
            self._on_push(event)
        elif event_type == EventType.ACK:
            self._on_ack(event)
        elif event_type == EventType.CONTROL:
            self._on_control(event)
        elif event_type == EventType.HEARTBEAT_REQ:
            self._out.append(wire.HEARTBEAT_RSP_EVENT)
        elif event_type == EventType.HEARTBEAT_RSP:
            pass
        else:
            raise ProtocolError(f"unexpected event type {event_type} for a client", offset=0)

    def _on_ack(self, event: Event) -> None:
        pop = self._unacked.pop
        queues = self.queues
        append = self._events.append
        status_of = AckStatus.from_wire
        for _reserved, status, correlation_id, guid, _qid in wire.iter_ack(event):
            pending = pop(guid, None)
            if pending is None:
                log.info("ACK for unknown or expired GUID %s dropped", guid.hex())
                continue
            batch = pending.batch
            if batch is not None:
                batch.remaining -= 1
            queue = queues.get(pending.queue_id)
            uri = queue.uri if queue is not None else ""
            append(AckReceived(Ack(guid, uri, status_of(status), correlation_id), pending.context))
        batches = self._ack_deadlines
        while batches and batches[0].remaining <= 0:
            batches.popleft()

    def _on_push(self, event: Event) -> None:
        queues = self.queues
        routes = self._routes
        append = self._events.append
        default_ids = (0,)
        for push in wire.iter_push(event):
            qid = push.queue_id
            infos = push.sub_queue_infos
            ids = [info.sub_queue_id for info in infos] if infos else default_ids
            for stream_id in ids:
                handle = routes.get((qid, stream_id))
                queue = queues.get(handle) if handle is not None else None
                if queue is None or not queue.flags & FLAG_READ:
                    raise ProtocolError(
                        f"PUSH for unknown queue id {qid} / subQueueId {stream_id}",
                        path="PushHeader.queueId",
                    )
                properties = push.properties if push.properties_area else None
                append(
                    MessageReceived(Message(queue.queue_id, push.guid, push.payload, properties))
                )

    def _on_control(self, event: Event) -> None:
        if self.state is SessionState.NEGOTIATING:
            self._on_negotiation(event)
            return
        message, _encoding = decode_control(event, ctrl.ControlMessage)
        rid = message.r_id
        if rid is None:
            log.warning("control message without rId ignored: %s", message.selection)
            return
        request = self._requests.pop(rid, None)
        if request is None:
            abandoned = self._abandoned_opens.pop(rid, None)
            if abandoned is not None and message.selection == "open_queue_response":
                log.warning("late open of %s (rId %s): closing it again", abandoned.uri, rid)
                if self.state in (SessionState.STARTED, SessionState.STOPPING):
                    close = ctrl.CloseQueue(handle_parameters=abandoned, is_final=True)
                    self._request(
                        ctrl.ControlMessage(close_queue=close), _Req.CLOSE_ABANDONED, None, None
                    )
                return
            log.warning("late or unknown response (rId %s, %s) dropped", rid, message.selection)
            return
        if message.selection == "status":
            status = message.status
            assert status is not None
            if status.category == ctrl.StatusCategory.E_SUCCESS:
                self._on_request_ok(request, message)
            else:
                self._on_request_failed(
                    request,
                    BrokerError(request.kind, status.category.name, status.code, status.message),
                )
            return
        expected = _EXPECTED_RESPONSE[request.kind]
        if message.selection not in expected:
            raise ProtocolError(
                f"response to {request.kind} (rId {rid}) is {message.selection}, expected {' or '.join(expected)}",
                path="ControlMessage",
            )
        self._on_request_ok(request, message)

    def _on_negotiation(self, event: Event) -> None:
        message, encoding = decode_control(event, ctrl.NegotiationMessage)
        response = message.broker_response
        if response is None:
            raise ProtocolError(
                f"expected a brokerResponse during negotiation, got {message.selection}",
                path="NegotiationMessage",
            )
        result = response.result
        if result.category != ctrl.StatusCategory.E_SUCCESS:
            error = BrokerError("negotiation", result.category.name, result.code, result.message)
            if self._can_reconnect():
                self._drop_connection(str(error))
                return
            self._session_step(SessionInput.NEGOTIATION_FAILED)
            self._fail_everything("negotiation refused")
            self._events.append(SessionStopped(str(error), error))
            return
        features = response.broker_identity.features
        self.encoding = self._pick_encoding(features, encoding)
        self.broker_configure_stream = FEATURE_CONFIGURE_STREAM in features
        self.heartbeat_interval = max(response.heartbeat_interval_ms, 1) / 1000.0
        self.max_missed_heartbeats = max(response.max_missed_heartbeats, 1)
        self._session_step(SessionInput.NEGOTIATED)
        info = SessionStarted(
            broker_version=response.broker_version,
            protocol_version=response.protocol_version,
            encoding=self.encoding,
            heartbeat_interval_ms=response.heartbeat_interval_ms,
            max_missed_heartbeats=response.max_missed_heartbeats,
        )
        if self._restoring:
            self._events.append(Reconnected(info))
            self._start_reopen()
        else:
            self._events.append(info)

    def _pick_encoding(self, features: str, response_encoding: str) -> str:
        """First of our encodings the broker lists; its response's encoding if it lists none."""
        theirs: list[str] = []
        for item in features.split(";"):
            name, _, values = item.partition(":")
            if name.strip() == "PROTOCOL_ENCODING":
                theirs = [v.strip() for v in values.split(",") if v.strip()]
        if not theirs:
            return response_encoding
        for encoding in self.options.encodings:
            if encoding in theirs:
                return encoding
        raise ProtocolError(
            f"no common control encoding: broker offers {theirs}, we accept {list(self.options.encodings)}",
            path="BrokerResponse.brokerIdentity.features",
        )

    def _on_request_ok(self, request: _PendingRequest, message: ctrl.ControlMessage) -> None:
        kind = request.kind
        if kind == _Req.DISCONNECT:
            self._finish_stop("stopped")
            return
        if kind == _Req.CLOSE_ABANDONED:
            self._maybe_disconnect()
            return
        queue = self.queues.get(request.queue_id) if request.queue_id is not None else None
        if queue is None:
            log.warning("response to %s for a queue no longer known dropped", kind)
            return
        if kind == _Req.REOPEN:
            queue.remote = RemoteQueueState.OPENED
            if queue.readable:
                self._send_configure(queue, _Req.REOPEN_CONFIGURE, None)
            else:
                self._reopened(queue, None)
        elif kind == _Req.REOPEN_CONFIGURE:
            queue.remote = RemoteQueueState.CONFIGURED
            self._apply_subscriptions(queue)
            self._reopened(queue, None)
        elif kind == _Req.OPEN:
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
                self._send_configure(queue, _Req.CONFIGURE_OPEN, None)
        elif kind == _Req.CONFIGURE_OPEN:
            queue.remote = RemoteQueueState.CONFIGURED
            self._apply_subscriptions(queue)
            if self.state is SessionState.STOPPING:
                queue.step(QueueInput.CONFIGURE_FAILED)
                self._send_configure(queue, _Req.CONFIGURE_CLOSE, None, empty=True)
            else:
                queue.step(QueueInput.CONFIGURE_OK)
                self._finish_queue_op(queue, None)
        elif kind == _Req.CONFIGURE:
            self._apply_subscriptions(queue)
            self._finish_queue_op(queue, None)
        elif kind == _Req.CONFIGURE_CLOSE:
            queue.remote = RemoteQueueState.OPENED
            self._send_close(queue)
        elif kind == _Req.CLOSE:
            self._closed(queue, None)
        self._maybe_disconnect()

    def _on_request_failed(self, request: _PendingRequest, error: PybmqError) -> None:
        kind = request.kind
        if kind == _Req.DISCONNECT:
            self._finish_stop(f"stopped without DisconnectResponse: {error}")
            return
        queue = self.queues.get(request.queue_id) if request.queue_id is not None else None
        if queue is None:
            self._maybe_disconnect()
            return
        if kind in (_Req.REOPEN, _Req.REOPEN_CONFIGURE):
            if kind == _Req.REOPEN_CONFIGURE:  # the broker holds it open: release it
                close = ctrl.CloseQueue(
                    handle_parameters=self._handle_parameters(queue), is_final=True
                )
                self._request(
                    ctrl.ControlMessage(close_queue=close), _Req.CLOSE_ABANDONED, None, None
                )
            self._reopened(queue, error)
        elif kind == _Req.OPEN:
            queue.step(QueueInput.OPEN_FAILED)
            self._finish_queue_op(queue, error)
            self._forget(queue)
        elif kind == _Req.CONFIGURE_OPEN:
            # The broker holds the queue open: fail the open now and release the queue.
            queue.step(QueueInput.CONFIGURE_FAILED)
            self._finish_queue_op(queue, error)
            self._send_close(queue)
        elif kind == _Req.CONFIGURE:
            self._pending_subscriptions.pop(queue.queue_id, None)
            self._finish_queue_op(queue, error)
        elif kind == _Req.CONFIGURE_CLOSE:
            # Still detach: a refused reconfigure must not keep the queue attached.
            self._send_close(queue)
        elif kind == _Req.CLOSE:
            self._closed(queue, error)
        self._maybe_disconnect()

    def _send_close(self, queue: QueueRecord) -> None:
        message = ctrl.ControlMessage(
            close_queue=ctrl.CloseQueue(
                handle_parameters=self._handle_parameters(queue), is_final=True
            )
        )
        self._request(message, _Req.CLOSE, queue.queue_id, None)

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
        del self.queues[queue.queue_id]
        for key in [k for k, handle in self._routes.items() if handle == queue.queue_id]:
            del self._routes[key]

    def _apply_subscriptions(self, queue: QueueRecord) -> None:
        pending = self._pending_subscriptions.pop(queue.queue_id, None)
        if pending is not None:
            for sid in queue.subscription_ids:
                self._routes.pop((queue.qid, sid), None)
            queue.subscription_ids, queue.options = pending
            for sid in queue.subscription_ids:
                self._routes[(queue.qid, sid)] = queue.queue_id

    def _finish_queue_op(self, queue: QueueRecord, error: PybmqError | None) -> None:
        if queue.op_id is not None:
            self._complete(queue.op_id, error)
            queue.op_id = None
