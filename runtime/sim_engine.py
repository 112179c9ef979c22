"""The broker simulator's engine: sans-I/O, one ``Broker`` hub and one ``ClientSession`` per peer.

The shell (``pybmq.sim``) owns sockets and clocks. It calls ``broker.connect()`` for a new peer,
``session.receive_data(data, now)`` with its bytes, ``broker.on_timer(now)`` at
``broker.next_deadline()``, and after each call writes ``session.data_to_send()`` for every
session in ``broker.take_dirty()`` (closing the ones whose ``closed`` is set). A PUT on one
session produces PUSH bytes on others, which is why output is collected per session.

Strict like a real broker: a peer that breaks the protocol's structure (bad framing, unknown
event type, unsupported flags ...) is disconnected with a log line that says why and where; a
well-formed request that cannot be served gets the failure a broker would give (a failure status,
a NACK). A CONFIRM the broker cannot apply (a GUID it does not hold, a sub-queue not open for
reading) is what a real broker logs as ``#CLIENT_IMPROPER_BEHAVIOR`` and ignores (mqbblp
QueueHandle): so does this one, and it records it in ``stats.improper`` for tests to assert on.
"""

from __future__ import annotations

import enum
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pybmq import __version__
from pybmq.errors import ProtocolError, PybmqError
from pybmq.events import (
    HEARTBEAT_REQ_EVENT,
    HEARTBEAT_RSP_EVENT,
    decode_control_event,
    encode_control_event,
)
from pybmq.framing import Event, EventReader
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.bmqp_ctrlmsg_ber import decode_ber, encode_ber
from pybmq.generated.bmqp_ctrlmsg_json import decode_json, encode_json
from pybmq.generated.wire_codec import AckStatus, EncodingType, EventType
from pybmq.sim_dataplane import (
    ACK_REQUESTED,
    MESSAGE_PROPERTIES,
    PushItem,
    ack_events,
    push_events,
    put_problem,
    read_confirm_event,
    read_put_event,
)
from pybmq.sim_expressions import ExpressionError, compile_expression
from pybmq.sim_queues import Consumer, QueueStore, SimQueue, StoredMessage
from pybmq.sim_routing import (
    DEFAULT_APP_ID,
    FANOUT_APP_IDS,
    ROUTING_FLAGS,
    QueueUri,
    RoutingMode,
    parse_queue_uri,
    routing_mode,
)

log = logging.getLogger("pybmq.sim")
T = TypeVar("T")

# bmqt_queueflags.h
FLAG_ADMIN, FLAG_READ, FLAG_WRITE, FLAG_ACK = 1, 2, 4, 8
KNOWN_QUEUE_FLAGS = FLAG_ADMIN | FLAG_READ | FLAG_WRITE | FLAG_ACK
PROTOCOL_VERSION = 1
RESERVED_QUEUE_ID = 2**32 - 10  # bmqp::QueueId::k_RESERVED_QUEUE_ID: qIds from here up are reserved
BROKER_VERSION = 999999  # what a broker built from source reports


@dataclass
class BrokerConfig:
    """What the simulated broker advertises and enforces."""

    heartbeat_interval_ms: int = 3000
    max_missed_heartbeats: int = 10
    # Advertise SUBSCRIPTIONS:CONFIGURE_STREAM like a current broker (clients then send
    # configureStream; without it they send the older configureQueueStream). Both are served.
    advertise_subscriptions: bool = True
    deduplication_time_ms: int = 300000

    def features(self) -> str:
        parts = ["PROTOCOL_ENCODING:BER,JSON", "MPS:MESSAGE_PROPERTIES_EX"]
        if self.advertise_subscriptions:
            parts.append("SUBSCRIPTIONS:CONFIGURE_STREAM")
        return ";".join(parts)


class BrokerHooks:
    """Where fault injection plugs in; the default changes nothing.

    Subclass and pass to ``Broker(hooks=...)``: ``ack_status`` may replace the status of the
    ACK for each PUT (it only changes what the producer is told: a message that passed the broker's
    checks is already stored); ``outgoing`` may rewrite or drop (return b"") a session's bytes;
    ``drop_connection`` may close a session after an event it sent; ``ack_delay`` holds ACKs back;
    ``answer_heartbeats`` False makes the broker silent on heartbeats; ``refuse_negotiation``
    returning a reason turns the session's ClientIdentity down. ``pybmq.sim_faults`` uses them.
    """

    def ack_status(self, session: ClientSession, queue_uri: str, guid: bytes, status: int) -> int:
        return status

    def outgoing(self, session: ClientSession, data: bytes) -> bytes:
        return data

    def drop_connection(self, session: ClientSession, event_type: int) -> bool:
        return False

    def ack_delay(self, session: ClientSession) -> float:
        return 0.0

    def answer_heartbeats(self, session: ClientSession) -> bool:
        return True

    def refuse_negotiation(self, session: ClientSession) -> str | None:
        return None


class SessionState(enum.Enum):
    NEGOTIATING = "negotiating"
    OPEN = "open"
    CLOSED = "closed"


class RequestRefused(PybmqError):
    """A well-formed request the broker turns down; becomes a failure status response."""

    def __init__(self, category: str, message: str) -> None:
        super().__init__(message)
        self.category = category


@dataclass(eq=False)
class QueueHandle:
    """A queue as opened by one session under one queue id."""

    queue_id: int
    uri: QueueUri
    queue: SimQueue
    app_id: str
    sub_id: int
    parameters: ctrl.QueueHandleParameters
    readable: bool
    writable: bool
    # The handle's subscriptions by id (the sId, or the subId for configureQueueStream).
    consumers: dict[int, Consumer] = field(default_factory=dict)


@dataclass
class BrokerStats:
    sessions: int = 0
    puts: int = 0
    compressed_puts: int = 0
    acks: int = 0
    nacks: int = 0
    pushes: int = 0
    confirms: int = 0
    redelivered: int = 0
    violations: list[str] = field(default_factory=list)
    # What a real broker logs as #CLIENT_IMPROPER_BEHAVIOR and ignores (the session stays open).
    improper: list[str] = field(default_factory=list)


class Broker:
    """Shared state of the simulated broker: queues, sessions, which sessions have output."""

    def __init__(
        self, config: BrokerConfig | None = None, hooks: BrokerHooks | None = None
    ) -> None:
        self.config = config or BrokerConfig()
        self.hooks = hooks or BrokerHooks()
        self.store = QueueStore()
        self.sessions: list[ClientSession] = []
        self.stats = BrokerStats()
        self._dirty: dict[ClientSession, None] = {}
        self._next_session_id = 1

    def connect(self, peer: str, now: float) -> ClientSession:
        session = ClientSession(self, peer, self._next_session_id, now)
        self._next_session_id += 1
        self.sessions.append(session)
        self.stats.sessions += 1
        return session

    def take_dirty(self) -> list[ClientSession]:
        """Sessions with bytes to send or that just closed, since the last call."""
        dirty = list(self._dirty)
        self._dirty.clear()
        return dirty

    def next_deadline(self) -> float | None:
        deadlines = [d for s in self.sessions if (d := s.next_deadline()) is not None]
        return min(deadlines, default=None)

    def on_timer(self, now: float) -> None:
        for session in list(self.sessions):
            session.on_timer(now)

    def queue(self, uri: str) -> SimQueue | None:
        return self.store.queues.get(uri)

    # -- internal ----------------------------------------------------------------------------

    def _mark(self, session: ClientSession) -> None:
        self._dirty[session] = None

    def _dispatch(self, deliveries: Iterable[tuple[Consumer, StoredMessage]]) -> None:
        for consumer, message in deliveries:
            owner = consumer.owner
            assert isinstance(owner, ClientSession)
            owner._push(consumer, message)

    def _forget(self, session: ClientSession) -> None:
        if session in self.sessions:
            self.sessions.remove(session)


class ClientSession:
    """One peer connection, from negotiation to disconnect."""

    def __init__(self, broker: Broker, peer: str, session_id: int, now: float) -> None:
        self.broker = broker
        self.peer = peer
        self.session_id = session_id
        self.state = SessionState.NEGOTIATING
        self.close_reason: str | None = None
        self.client_identity: ctrl.ClientIdentity | None = None
        self.extended_properties = False  # the client reads MESSAGE_PROPERTIES_EX
        # Keyed like a broker keys them: (qId, subId). A client may open several appIds of one
        # fan-out queue under one qId, each with its own subId.
        self.handles: dict[tuple[int, int], QueueHandle] = {}
        self._reader = EventReader()
        self._out: list[bytes] = []
        self._acks: list[tuple[int, bytes, int]] = []
        self._pushes: list[PushItem] = []
        self._last_received = now
        self._last_heartbeat_sent = now
        self._now = now
        self._delayed_acks: list[tuple[float, list[tuple[int, bytes, int]]]] = []
        self._disconnecting = False
        self._touched: set[SimQueue] = set()  # queues with room freed by CONFIRMs, to deliver

    # -- the shell's interface ---------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self.state is SessionState.CLOSED

    def receive_data(self, data: bytes, now: float) -> None:
        if self.closed:
            return
        self._last_received = self._now = now
        hooks = self.broker.hooks
        try:
            events = self._reader.feed(data)
            for event in events:
                if self.closed or self._disconnecting:
                    # Nothing may follow a disconnect request.
                    if not self.closed:
                        self._violation(f"{event.type_name} event after disconnect")
                    return
                self._handle_event(event)
                if hooks.drop_connection(self, event.header.type) and not self.closed:
                    self._close("fault injection: connection dropped", level=logging.INFO)
                    return
        except ProtocolError as exc:
            self._violation(str(exc))
        finally:
            if self._touched:
                touched, self._touched = self._touched, set()
                for queue in touched:
                    self.broker._dispatch(queue.deliver())
            self.broker._mark(self)

    def data_to_send(self) -> bytes:
        self._flush_data_plane()
        data = b"".join(self._out)
        self._out.clear()
        return self.broker.hooks.outgoing(self, data) if data else data

    def connection_lost(self, reason: str = "connection lost") -> None:
        """The transport is gone: release everything this session held."""
        if not self.closed:
            self._close(reason, level=logging.INFO)

    def next_deadline(self) -> float | None:
        if self.closed:
            return None
        interval = self.broker.config.heartbeat_interval_ms / 1000.0
        deadline = max(self._last_received, self._last_heartbeat_sent) + interval
        if self._delayed_acks:
            deadline = min(deadline, self._delayed_acks[0][0])
        return deadline

    def on_timer(self, now: float) -> None:
        if self.closed:
            return
        self._now = now
        while self._delayed_acks and self._delayed_acks[0][0] <= now:
            self._out.extend(ack_events(self._delayed_acks.pop(0)[1]))
            self.broker._mark(self)
        config = self.broker.config
        interval = config.heartbeat_interval_ms / 1000.0
        silent = now - self._last_received
        if silent >= interval * config.max_missed_heartbeats:
            self._violation(
                f"no data for {silent:.1f}s ({config.max_missed_heartbeats} missed heartbeats)"
            )
            self.broker._mark(self)
            return
        if (
            silent >= interval
            and now - self._last_heartbeat_sent >= interval
            and self.broker.hooks.answer_heartbeats(self)
        ):
            self._last_heartbeat_sent = now
            self._send(HEARTBEAT_REQ_EVENT)

    # -- events ------------------------------------------------------------------------------

    def _handle_event(self, event: Event) -> None:
        header = event.header
        if header.fragment_bit:
            raise ProtocolError(
                "fragment bit set", offset=event.offset, path="EventHeader.fragmentBit"
            )
        if header.protocol_version != PROTOCOL_VERSION:
            raise ProtocolError(
                f"protocol version {header.protocol_version} (expected {PROTOCOL_VERSION})",
                offset=event.offset,
                path="EventHeader.protocolVersion",
            )
        etype = header.type
        if self.state is SessionState.NEGOTIATING:
            if etype != EventType.CONTROL:
                raise ProtocolError(
                    f"{event.type_name} event before negotiation",
                    offset=event.offset,
                    path="EventHeader.type",
                )
            self._negotiate(event)
        elif etype == EventType.CONTROL:
            self._control(event)
        elif etype == EventType.PUT:
            self._put(event)
        elif etype == EventType.CONFIRM:
            self._confirm(event)
        elif etype == EventType.HEARTBEAT_REQ:
            if self.broker.hooks.answer_heartbeats(self):
                self._send(HEARTBEAT_RSP_EVENT)
        elif etype == EventType.HEARTBEAT_RSP:
            pass
        else:
            raise ProtocolError(
                f"a client may not send {event.type_name} events",
                offset=event.offset,
                path="EventHeader.type",
            )

    # -- negotiation -------------------------------------------------------------------------

    def _negotiate(self, event: Event) -> None:
        message, encoding = _decode_control(event, ctrl.NegotiationMessage)
        identity = message.client_identity if message.selection == "client_identity" else None
        if identity is None:
            raise ProtocolError(
                f"negotiation must carry a clientIdentity, got {message.selection}",
                offset=event.offset,
                path="NegotiationMessage",
            )
        self.client_identity = identity
        self.extended_properties = _has_feature(identity.features, "MPS", "MESSAGE_PROPERTIES_EX")
        problem = None
        if identity.protocol_version != PROTOCOL_VERSION:
            problem = (
                "E_NOT_SUPPORTED",
                f"unsupported protocol version {identity.protocol_version}",
            )
        elif identity.client_type != ctrl.ClientType.E_TCPCLIENT:
            problem = ("E_NOT_SUPPORTED", f"unsupported client type {identity.client_type.name}")
        elif (refusal := self.broker.hooks.refuse_negotiation(self)) is not None:
            problem = ("E_REFUSED", refusal)
        category, text = problem or ("E_SUCCESS", "")
        config = self.broker.config
        response = ctrl.NegotiationMessage(
            broker_response=ctrl.BrokerResponse(
                result=ctrl.Status(
                    category=ctrl.StatusCategory[category],
                    code=0 if not problem else -1,
                    message=text,
                ),
                protocol_version=PROTOCOL_VERSION,
                broker_version=BROKER_VERSION,
                is_deprecated_sdk=False,
                broker_identity=ctrl.ClientIdentity(
                    protocol_version=PROTOCOL_VERSION,
                    sdk_version=BROKER_VERSION,
                    client_type=ctrl.ClientType.E_TCPBROKER,
                    process_name=f"pybmq-sim/{__version__}",
                    pid=os.getpid(),
                    session_id=self.session_id,
                    host_name="localhost",
                    features=config.features(),
                    cluster_name="pybmq-sim",
                    cluster_node_id=-1,
                    sdk_language=ctrl.ClientLanguage.E_CPP,
                    guid_info=ctrl.GuidInfo(client_id="", nano_seconds_from_epoch=0),
                ),
                heartbeat_interval_ms=config.heartbeat_interval_ms,
                max_missed_heartbeats=config.max_missed_heartbeats,
            )
        )
        self._send(_encode_control(response, encoding))
        if problem:
            self._close(f"negotiation refused: {text}")
            return
        self.state = SessionState.OPEN
        log.info(
            "session %d (%s): negotiated, features %r",
            self.session_id,
            self.peer,
            identity.features,
        )

    # -- control requests --------------------------------------------------------------------

    def _control(self, event: Event) -> None:
        message, encoding = _decode_control(event, ctrl.ControlMessage)
        choice = message.selection or ""
        handler = _REQUESTS.get(choice)
        if handler is None:
            raise ProtocolError(
                f"a client may not send a {choice} control message",
                offset=event.offset,
                path="ControlMessage",
            )
        if choice != "disconnect" and message.r_id is None:
            raise ProtocolError(
                f"{choice} request without rId", offset=event.offset, path="ControlMessage.rId"
            )
        try:
            response = handler(self, getattr(message, choice))
        except RequestRefused as refusal:
            log.info("session %d: %s refused: %s", self.session_id, choice, refusal)
            response = ctrl.ControlMessage(
                status=ctrl.Status(
                    category=ctrl.StatusCategory[refusal.category], code=-1, message=str(refusal)
                )
            )
        response.r_id = message.r_id
        self._send(_encode_control(response, encoding))
        if choice == "disconnect":
            self._disconnecting = True
            self._close("client disconnected", level=logging.INFO)
        else:
            self.broker._dispatch(
                d for q in list(self.broker.store.queues.values()) for d in q.deliver()
            )

    def _open_queue(self, request: ctrl.OpenQueue) -> ctrl.ControlMessage:
        params = request.handle_parameters
        uri = parse_queue_uri(params.uri)
        if uri is None:
            raise RequestRefused("E_INVALID_ARGUMENT", f"invalid queue URI {params.uri!r}")
        mode = routing_mode(uri.domain)
        if mode is None:
            raise RequestRefused("E_UNKNOWN", f"domain {uri.domain!r} does not exist")
        flags = params.flags
        if flags & ~KNOWN_QUEUE_FLAGS or flags & FLAG_ADMIN or not flags & (FLAG_READ | FLAG_WRITE):
            raise RequestRefused("E_INVALID_ARGUMENT", f"invalid queue flags {flags:#x}")
        readable, writable = bool(flags & FLAG_READ), bool(flags & FLAG_WRITE)
        if (
            (params.read_count > 0) != readable
            or (params.write_count > 0) != writable
            or params.admin_count
        ):
            raise RequestRefused(
                "E_INVALID_ARGUMENT",
                f"counts read={params.read_count} write={params.write_count} admin={params.admin_count} "
                f"do not match flags {flags:#x}",
            )
        if params.q_id >= RESERVED_QUEUE_ID:
            raise RequestRefused(
                "E_INVALID_ARGUMENT", f"queue id {params.q_id} is in the reserved range"
            )
        info = params.sub_id_info
        # The appId comes from subIdInfo (as for a broker); a ?id= in the URI must agree with it.
        app_id = info.app_id if info is not None else (uri.app_id or DEFAULT_APP_ID)
        sub_id = info.sub_id if info is not None else 0
        if uri.app_id is not None and uri.app_id != app_id:
            raise RequestRefused(
                "E_INVALID_ARGUMENT", f"subIdInfo appId {app_id!r} does not match URI {uri.text!r}"
            )
        if (app_id == DEFAULT_APP_ID) != (sub_id == 0):
            raise RequestRefused("E_INVALID_ARGUMENT", f"subId {sub_id} with appId {app_id!r}")
        if writable and app_id != DEFAULT_APP_ID:
            raise RequestRefused(
                "E_INVALID_ARGUMENT", "an appId may not be given when opening for writing"
            )
        if mode is RoutingMode.FANOUT:
            if readable and app_id not in FANOUT_APP_IDS:
                raise RequestRefused(
                    "E_INVALID_ARGUMENT",
                    f"fan-out queue {uri.canonical} has appIds {', '.join(FANOUT_APP_IDS)}; got {app_id!r}",
                )
        elif app_id != DEFAULT_APP_ID:
            raise RequestRefused(
                "E_INVALID_ARGUMENT", f"{mode.value} queues have no appIds; got {app_id!r}"
            )
        if (params.q_id, sub_id) in self.handles:
            raise RequestRefused(
                "E_INVALID_ARGUMENT", f"queue id {params.q_id}, subId {sub_id} is already open"
            )
        for (q_id, _), other in self.handles.items():
            if q_id == params.q_id and other.queue.uri != uri.canonical:
                raise RequestRefused(
                    "E_INVALID_ARGUMENT", f"queue id {q_id} is already in use for {other.queue.uri}"
                )
        queue = self.broker.store.get_or_create(uri.canonical, mode)
        self.handles[(params.q_id, sub_id)] = QueueHandle(
            params.q_id, uri, queue, app_id, sub_id, params, readable, writable
        )
        log.info(
            "session %d: opened %s as queue id %d (flags %#x)",
            self.session_id,
            uri.text,
            params.q_id,
            flags,
        )
        return ctrl.ControlMessage(
            open_queue_response=ctrl.OpenQueueResponse(
                original_request=request,
                routing_configuration=ctrl.RoutingConfiguration(flags=ROUTING_FLAGS[mode]),
                deduplication_time_ms=self.broker.config.deduplication_time_ms,
            )
        )

    def _handle_for_configure(self, q_id: int, app_id: str, sub_id: int | None) -> QueueHandle:
        """The handle a configure request names: by subId (old style) or by appId (new style)."""
        for (handle_q_id, handle_sub_id), handle in self.handles.items():
            if handle_q_id == q_id and handle.app_id == app_id and sub_id in (None, handle_sub_id):
                return handle
        raise RequestRefused(
            "E_INVALID_ARGUMENT",
            f"configure of queue id {q_id}, appId {app_id!r}, which is not open",
        )

    def _configure_queue_stream(self, request: ctrl.ConfigureQueueStream) -> ctrl.ControlMessage:
        params = request.stream_parameters
        info = params.sub_id_info
        handle = self._handle_for_configure(
            request.q_id, info.app_id if info else DEFAULT_APP_ID, info.sub_id if info else 0
        )
        if handle.readable:
            self._set_consumers(
                handle,
                [
                    (
                        handle.sub_id,
                        params.consumer_priority,
                        params.max_unconfirmed_messages,
                        params.max_unconfirmed_bytes,
                        None,
                    )
                ],
            )
        return ctrl.ControlMessage(
            configure_queue_stream_response=ctrl.ConfigureQueueStreamResponse(request=request)
        )

    def _configure_stream(self, request: ctrl.ConfigureStream) -> ctrl.ControlMessage:
        params = request.stream_parameters
        handle = self._handle_for_configure(request.q_id, params.app_id, None)
        wanted: list[tuple[int, int, int, int, Callable[[Mapping[str, object]], bool] | None]] = []
        for subscription in params.subscriptions:
            if len(subscription.consumers) != 1:
                raise RequestRefused(
                    "E_INVALID_ARGUMENT",
                    f"subscription {subscription.s_id} needs one ConsumerInfo, got {len(subscription.consumers)}",
                )
            matches = None
            if subscription.expression.text:
                try:
                    matches = compile_expression(subscription.expression.text)
                except ExpressionError as exc:
                    raise RequestRefused(
                        "E_INVALID_ARGUMENT",
                        f"subscription {subscription.s_id}: invalid expression: {exc}",
                    ) from None
            info = subscription.consumers[0]
            wanted.append(
                (
                    subscription.s_id,
                    info.consumer_priority,
                    info.max_unconfirmed_messages,
                    info.max_unconfirmed_bytes,
                    matches,
                )
            )
        if len({w[0] for w in wanted}) != len(wanted):
            raise RequestRefused("E_INVALID_ARGUMENT", "subscription ids must be unique")
        if handle.readable:
            self._set_consumers(handle, wanted)
        return ctrl.ControlMessage(
            configure_stream_response=ctrl.ConfigureStreamResponse(request=request)
        )

    def _set_consumers(
        self,
        handle: QueueHandle,
        wanted: list[tuple[int, int, int, int, Callable[[Mapping[str, object]], bool] | None]],
    ) -> None:
        """Make the handle's subscriptions exactly ``wanted`` (id, priority, max messages, max
        bytes, expression)."""
        stream = handle.queue.streams[handle.app_id]
        keep = {w[0] for w in wanted}
        for sub_queue_id in [i for i in handle.consumers if i not in keep]:
            dropped = handle.consumers[sub_queue_id]
            if dropped.unconfirmed:
                # Retired, not detached: the client may still confirm what it holds (it does
                # while closing); what stays unconfirmed is redelivered when the queue closes.
                dropped.max_messages = dropped.max_bytes = 0
                dropped.matches = None
            else:
                self._detach(handle, handle.consumers.pop(sub_queue_id))
        for sub_queue_id, priority, messages, size, matches in wanted:
            existing = handle.consumers.get(sub_queue_id)
            if existing is None:
                consumer = handle.consumers[sub_queue_id] = Consumer(
                    self, handle.queue_id, sub_queue_id
                )
                stream.attach(consumer)
            else:
                consumer = existing
            consumer.priority = priority
            consumer.max_messages = max(messages, 0)
            consumer.max_bytes = max(size, 0)
            consumer.matches = matches
        stream.changed()

    def _close_queue(self, request: ctrl.CloseQueue) -> ctrl.ControlMessage:
        params = request.handle_parameters
        key = (params.q_id, params.sub_id_info.sub_id if params.sub_id_info else 0)
        handle = self.handles.get(key)
        if handle is None:
            raise RequestRefused(
                "E_INVALID_ARGUMENT",
                f"close of queue id {key[0]}, subId {key[1]}, which is not open",
            )
        if params.uri != handle.parameters.uri:
            raise RequestRefused(
                "E_INVALID_ARGUMENT",
                f"close of queue id {params.q_id} names {params.uri!r}, opened as {handle.uri.text!r}",
            )
        self._release(handle)
        del self.handles[key]
        log.info(
            "session %d: closed %s (queue id %d)", self.session_id, handle.uri.text, params.q_id
        )
        return ctrl.ControlMessage(close_queue_response=ctrl.CloseQueueResponse())

    def _disconnect(self, request: ctrl.Disconnect) -> ctrl.ControlMessage:
        return ctrl.ControlMessage(disconnect_response=ctrl.DisconnectResponse())

    def _release(self, handle: QueueHandle) -> None:
        """Detach a handle's consumers; their unconfirmed messages go to the next consumer."""
        for consumer in handle.consumers.values():
            self._detach(handle, consumer)
        handle.consumers.clear()

    def _detach(self, handle: QueueHandle, consumer: Consumer) -> None:
        if handle.queue.mode is not RoutingMode.BROADCAST:
            self.broker.stats.redelivered += len(consumer.unconfirmed)
        handle.queue.streams[handle.app_id].detach(consumer)
        # PUSHes not yet written for this consumer: their messages were just returned.
        self._pushes = [
            p
            for p in self._pushes
            if not (p.queue_id == consumer.queue_id and p.sub_queue_id == consumer.sub_queue_id)
        ]

    # -- data plane --------------------------------------------------------------------------

    def _put(self, event: Event) -> None:
        """Store each message and queue its ACK; NACK what a broker refuses. The hot path."""
        broker = self.broker
        stats = broker.stats
        hooks = broker.hooks if type(broker.hooks) is not BrokerHooks else None
        acks = self._acks
        handles = self.handles
        dispatch = broker._dispatch
        dedup_window = broker.config.deduplication_time_ms / 1000.0
        for put in read_put_event(event):
            stats.puts += 1
            flags = put.flags
            if put.compression:
                stats.compressed_puts += 1
            handle = handles.get((put.queue_id, 0))  # writers always use the default subId
            if handle is None:
                problem: str | None = "unknown queue id"
            elif not handle.writable:
                problem = "queue not opened for writing"
            else:
                problem = put_problem(put)
            status: int = AckStatus.SUCCESS
            if problem is None:
                assert handle is not None
                message = StoredMessage(
                    put.guid,
                    put.properties_area,
                    put.payload,
                    bool(flags & MESSAGE_PROPERTIES),
                    put.compression,
                    put.schema_id,
                )
                deliveries = handle.queue.post(message, self._now, dedup_window)
                if deliveries:
                    dispatch(deliveries)
            else:
                status = AckStatus.UNKNOWN
                log.warning(
                    "session %d: NACK GUID %s, queue id %d: %s",
                    self.session_id,
                    put.guid.hex(),
                    put.queue_id,
                    problem,
                )
            if hooks is not None:
                uri = handle.queue.uri if handle is not None else ""
                status = hooks.ack_status(self, uri, put.guid, status)
            if status != AckStatus.SUCCESS:
                stats.nacks += 1
                acks.append((status, put.guid, put.queue_id))
            elif flags & ACK_REQUESTED:
                stats.acks += 1
                acks.append((status, put.guid, put.queue_id))

    def _confirm(self, event: Event) -> None:
        """Release confirmed messages; delivery into the freed room waits for the end of the
        received chunk (``receive_data``), so many one-message CONFIRM events make one PUSH."""
        handles = self.handles
        touched = self._touched
        stats = self.broker.stats
        for index, record in enumerate(read_confirm_event(event)):
            # Keyed by subId, as a broker keys it (the official SDK confirms with the subId even
            # when the PUSH carried a subscription id).
            handle = handles.get((record.queue_id, record.sub_queue_id))
            if handle is None or not handle.readable or not handle.consumers:
                self._improper(
                    f"CONFIRM #{index} for queue id {record.queue_id}, subQueueId "
                    f"{record.sub_queue_id}, which is not open for reading (or not configured)"
                )
                continue
            queue = handle.queue
            if queue.mode is RoutingMode.BROADCAST:
                continue  # at most once: nothing is kept to confirm
            if not any(c.confirm(record.guid) for c in handle.consumers.values()):
                # Confirmed twice, never delivered here, or delivered before a broker restart.
                self._improper(
                    f"CONFIRM #{index} of GUID {record.guid.hex()}, which is not an unconfirmed "
                    f"message of queue id {record.queue_id}"
                )
                continue
            stats.confirms += 1
            touched.add(queue)

    def _push(self, consumer: Consumer, message: StoredMessage) -> None:
        self.broker.stats.pushes += 1
        self._pushes.append(
            PushItem(
                consumer.queue_id,
                consumer.sub_queue_id,
                message.guid,
                message.properties_area,
                message.payload,
                message.has_properties,
                message.compression,
                message.schema_id,
                not self.extended_properties,
            )
        )
        self.broker._mark(self)

    # -- output and shutdown -----------------------------------------------------------------

    def _flush_data_plane(self) -> None:
        if self._acks:
            delay = self.broker.hooks.ack_delay(self)
            if delay > 0:
                self._delayed_acks.append((self._now + delay, self._acks))
            else:
                self._out.extend(ack_events(self._acks))
            self._acks = []
        if self._pushes:
            self._out.extend(push_events(self._pushes))
            self._pushes = []

    def _send(self, data: bytes) -> None:
        self._flush_data_plane()  # keep ACK/PUSH ahead of what follows them
        self._out.append(data)
        self.broker._mark(self)

    def _improper(self, reason: str) -> None:
        """Log and record what a real broker tolerates with a warning; the session stays open."""
        text = f"session {self.session_id} ({self.peer}): {reason}"
        log.warning("#CLIENT_IMPROPER_BEHAVIOR %s (ignored)", text)
        self.broker.stats.improper.append(text)

    def _violation(self, reason: str) -> None:
        self.broker.stats.violations.append(f"session {self.session_id} ({self.peer}): {reason}")
        self._close(f"protocol violation: {reason}", level=logging.WARNING)

    def _close(self, reason: str, level: int = logging.WARNING) -> None:
        if self.closed:
            return
        log.log(level, "session %d (%s) closing: %s", self.session_id, self.peer, reason)
        self.state = SessionState.CLOSED
        self.close_reason = reason
        for handle in self.handles.values():
            self._release(handle)
        self.handles.clear()
        self._pushes = []
        self.broker._forget(self)
        self.broker._mark(self)
        self.broker._dispatch(
            d for q in list(self.broker.store.queues.values()) for d in q.deliver()
        )


_REQUESTS: dict[str, Callable[[ClientSession, Any], ctrl.ControlMessage]] = {
    "open_queue": ClientSession._open_queue,
    "configure_queue_stream": ClientSession._configure_queue_stream,
    "configure_stream": ClientSession._configure_stream,
    "close_queue": ClientSession._close_queue,
    "disconnect": ClientSession._disconnect,
}


def _has_feature(features: str, field: str, value: str) -> bool:
    """Whether ``features`` ("A:x,y;B:z") lists ``value`` under ``field``."""
    for part in features.split(";"):
        name, _, values = part.partition(":")
        if name.strip() == field and value in (v.strip() for v in values.split(",")):
            return True
    return False


def _decode_control(event: Event, cls: type[T]) -> tuple[T, EncodingType]:
    encoding, payload = decode_control_event(event)
    if encoding == EncodingType.BER:
        return decode_ber(cls, payload), encoding
    return decode_json(cls, payload), encoding


def _encode_control(message: object, encoding: int) -> bytes:
    if encoding == EncodingType.BER:
        return encode_control_event(encode_ber(message), EncodingType.BER)
    return encode_control_event(encode_json(message), EncodingType.JSON)
