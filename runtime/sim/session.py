"""One client connection as the simulated broker sees it, from negotiation to disconnect:
framing, negotiation, heartbeats, the data plane (PUT, CONFIRM, PUSH) and its control requests
(``QueueRequests``).
"""

from __future__ import annotations

import enum
import logging
import os
from functools import partial
from typing import TYPE_CHECKING

from pybmq._version import __version__
from pybmq.errors import ProtocolError
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import PROTOCOL_VERSION, AckStatus, EventType
from pybmq.sim.auth import SessionAuth
from pybmq.sim.config import (
    BROKER_VERSION,
    BrokerHooks,
)
from pybmq.sim.dataplane import (
    ACK_REQUESTED,
    MESSAGE_PROPERTIES,
    AckEntry,
    ack_events,
    push_run_events,
    put_problem,
    read_confirm_event,
    read_put_event,
)
from pybmq.sim.guard import contained
from pybmq.sim.limits import event_limit, keep_record, overdue, worth_logging
from pybmq.sim.queues import SUCCESS, Consumer, Run, SimQueue, StoredMessage
from pybmq.sim.requests import REQUESTS, QueueHandle, QueueRequests, RequestRefused
from pybmq.sim.routing import (
    RoutingMode,
)
from pybmq.wire.control import (
    HEARTBEAT_REQ_EVENT,
    HEARTBEAT_RSP_EVENT,
    decode_authentication,
    decode_control_as,
    encode_authentication,
    encode_control,
    has_feature,
)
from pybmq.wire.framing import Event, EventReader

if TYPE_CHECKING:
    from pybmq.sim.broker import Broker

log = logging.getLogger("pybmq.sim")
UNKNOWN = int(AckStatus.UNKNOWN)


class SessionState(enum.Enum):
    NEGOTIATING = "negotiating"
    OPEN = "open"
    CLOSED = "closed"


class ClientSession(QueueRequests):
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
        self.by_qid: dict[int, dict[int, QueueHandle]] = {}
        self._reader = EventReader(limit_for=partial(event_limit, self))
        self.connected_at = now
        self.improper_count = 0
        self.nack_count = 0  # PUTs refused (each logged only as worth_logging allows)
        self.partial_since: float | None = None  # when the pending partial event started
        self._out: list[bytes] = []
        self._acks: list[AckEntry] = []
        self._pushes: list[Run] = []  # what to push, per consumer, in order
        self._last_received = now
        self._last_heartbeat_sent = now
        self._now = now
        self._delayed_acks: list[tuple[float, list[AckEntry]]] = []
        self._disconnecting = False
        self._touched: set[SimQueue] = set()  # queues with room freed by CONFIRMs, to deliver
        # Backpressure: the shell's write buffer to this client is over its high-water mark, so
        # nothing more is pushed to it and its socket is not read (see set_paused).
        self.paused = False
        auth = broker.config.auth
        self.auth = SessionAuth(auth) if auth is not None else None

    # -- the shell's interface ---------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self.state is SessionState.CLOSED

    @property
    def negotiated(self) -> bool:
        return self.state is not SessionState.NEGOTIATING

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete event."""
        return self._reader.buffered

    def receive_data(self, data: bytes, now: float) -> None:
        contained(self, "reading its data", lambda: self._receive(data, now), None)

    def _receive(self, data: bytes, now: float) -> None:
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
            if not self._reader.buffered:
                self.partial_since = None
            elif self.partial_since is None:
                self.partial_since = now
            if self._touched:
                touched, self._touched = self._touched, set()
                for queue in touched:
                    self.broker._dispatch(queue.deliver())
            self.broker._mark(self)

    def data_to_send(self) -> bytes:
        return contained(self, "preparing its output", self._output, b"")

    def _output(self) -> bytes:
        self._flush_data_plane()
        data = b"".join(self._out)
        self._out.clear()
        return self.broker.hooks.outgoing(self, data) if data else data

    def set_paused(self, paused: bool, now: float) -> None:
        """The shell's write buffer to this client went over (True) or back under (False) its
        high-water mark; the shell stops (resumes) reading the socket at the same time. While
        paused, its consumers take nothing (messages stay in their queues) and neither its
        silence nor an unfinished event counts against it: we are the ones not reading."""
        if self.closed or paused == self.paused:
            return
        self.paused = paused
        self._now = now
        for handle in self.handles.values():
            for consumer in handle.consumers.values():
                consumer.blocked = paused
        if paused:
            return
        self._last_received = now
        if self.partial_since is not None:
            self.partial_since = now
        if self.auth is not None:
            self.auth.reading_resumed(now)
        queues = {handle.queue for handle in self.handles.values() if handle.consumers}
        for queue in queues:
            self.broker._dispatch(queue.deliver())
        self.broker._mark(self)

    def connection_lost(self, reason: str = "connection lost") -> None:
        """The transport is gone: release everything this session held."""
        if not self.closed:
            self._close(reason, level=logging.INFO)

    def next_deadline(self) -> float | None:
        if self.closed:
            return None
        interval = self.broker.config.heartbeat_interval_ms / 1000.0
        deadline = max(self._last_received, self._last_heartbeat_sent) + interval
        if not self.negotiated or self.partial_since is not None:
            deadline = min(deadline, self._now + 1.0)  # check the limits at least every second
        if self._delayed_acks:
            deadline = min(deadline, self._delayed_acks[0][0])
        if self.auth is not None and self.auth.expires_at is not None:
            deadline = min(deadline, self.auth.expires_at)
        return deadline

    def on_timer(self, now: float) -> None:
        if self.closed:
            return
        self._now = now
        if self.auth is not None and self.auth.expired(now):
            self._close("credential lifetime expired without re-authentication")
            return
        while self._delayed_acks and self._delayed_acks[0][0] <= now:
            self._out.extend(ack_events(self._delayed_acks.pop(0)[1]))
            self.broker._mark(self)
        if self.paused:
            return  # not reading it: its silence tells nothing (see set_paused)
        reason = overdue(self, now)
        if reason is not None:
            self._violation(reason)
            return
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
        if etype == EventType.AUTHENTICATION and self.auth is not None:
            self._authenticate(event)
        elif self.state is SessionState.NEGOTIATING:
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

    # -- authentication and negotiation ------------------------------------------------------

    def _authenticate(self, event: Event) -> None:
        assert self.auth is not None
        message, encoding = decode_authentication(event)
        request = message.authentication_request
        if request is None:
            raise ProtocolError(
                f"a client may only send an authenticationRequest, got {message.selection}",
                offset=event.offset,
                path="AuthenticationMessage",
            )
        response, accepted = self.auth.answer(request, self._now)
        self._send(encode_authentication(response, encoding))
        if not accepted:
            self._close(f"authentication refused (mechanism {request.mechanism!r})")

    def _negotiate(self, event: Event) -> None:
        if self.auth is not None and not self.auth.may_negotiate():
            self._close("negotiation without authentication (anonymous access is off)")
            return
        message, encoding = decode_control_as(event, ctrl.NegotiationMessage)
        identity = message.client_identity if message.selection == "client_identity" else None
        if identity is None:
            raise ProtocolError(
                f"negotiation must carry a clientIdentity, got {message.selection}",
                offset=event.offset,
                path="NegotiationMessage",
            )
        self.client_identity = identity
        self.extended_properties = self.broker.config.extended_properties and has_feature(
            identity.features, "MPS", "MESSAGE_PROPERTIES_EX"
        )
        problem = None
        if identity.protocol_version != PROTOCOL_VERSION:
            problem = (
                "E_NOT_SUPPORTED",
                f"unsupported protocol version {identity.protocol_version}",
            )
        elif identity.client_type not in (ctrl.ClientType.E_TCPCLIENT, ctrl.ClientType.E_TCPADMIN):
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
        self._send(encode_control(response, encoding))
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
        message, encoding = decode_control_as(event, ctrl.ControlMessage)
        choice = message.selection or ""
        handler = REQUESTS.get(choice)
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
        self._send(encode_control(response, encoding))
        if choice == "disconnect":
            self._disconnecting = True
            self._close("client disconnected", level=logging.INFO)

    # -- data plane --------------------------------------------------------------------------

    def _put(self, event: Event) -> None:
        """Store each message and queue its ACK; NACK what a broker refuses. The hot path: the
        handle is looked up once per run of messages to one queue id, and stored messages are
        delivered once per event (after all of them are stored), not once per message."""
        broker = self.broker
        stats = broker.stats
        hooks = broker.hooks if type(broker.hooks) is not BrokerHooks else None
        acks = self._acks
        handles = self.handles
        config = broker.config
        now = self._now
        dedup_window = config.deduplication_time_ms / 1000.0
        dedup_max = config.deduplication_max_guids
        limit_messages = config.queue_limit_messages
        limit_bytes = config.queue_limit_bytes
        old_properties_only = not config.extended_properties
        success = SUCCESS
        puts = read_put_event(event)
        stats.puts += len(puts)
        stored: list[SimQueue] = []  # queues that got messages, to deliver from at the end
        last_queue_id = None
        refusal: str | None = None
        queue: SimQueue | None = None
        acked = 0
        for put in puts:
            queue_id, guid, flags, compression, _crc, schema_id, area, payload, _o, _h, _i, _g = put
            if queue_id != last_queue_id:
                last_queue_id = queue_id
                handle = handles.get((queue_id, 0))  # writers always use the default subId
                if handle is None:
                    refusal, queue = "unknown queue id", None
                elif not handle.writable:
                    refusal, queue = "queue not opened for writing", None
                else:
                    refusal, queue = None, handle.queue
                    if queue not in stored:
                        stored.append(queue)
            if compression:
                stats.compressed_puts += 1
            if refusal is not None:
                problem: str | None = refusal
            elif old_properties_only and schema_id:
                problem = "extended message properties (schema id), which this broker does not take"
            else:
                problem = put_problem(put)
            status = success
            if problem is None:
                assert queue is not None
                message = StoredMessage(
                    guid, area, payload, flags & MESSAGE_PROPERTIES != 0, compression, schema_id
                )
                status = queue.admit(
                    message, now, dedup_window, dedup_max, limit_messages, limit_bytes
                )
                if status != success:
                    problem = f"queue over its quota ({AckStatus(status).name})"
            if problem is not None:
                status = status or UNKNOWN
                self._nack(guid, queue_id, problem)
            if hooks is not None:
                status = hooks.ack_status(self, queue.uri if queue else "", guid, status)
            if status != success:
                stats.nacks += 1
                acks.append((status, 0, guid, queue_id))
            elif flags & ACK_REQUESTED:
                acked += 1
                acks.append((status, 0, guid, queue_id))
        stats.acks += acked
        dispatch = broker._dispatch
        for queue in stored:
            dispatch(queue.deliver())

    def _nack(self, guid: bytes, queue_id: int, problem: str) -> None:
        self.nack_count += 1
        if worth_logging(self.nack_count):
            log.warning(
                "session %d: NACK GUID %s, queue id %d: %s (#%d)",
                self.session_id,
                guid.hex(),
                queue_id,
                problem,
                self.nack_count,
            )

    def _confirm(self, event: Event) -> None:
        """Release confirmed messages; delivery into the freed room waits for the end of the
        received chunk (``receive_data``), so many one-message CONFIRM events make one PUSH.
        The handle is looked up once per run of entries with the same (qId, subId), and the
        quota is released once per run."""
        handles = self.handles
        last: tuple[int, int] | None = None
        consumers: list[Consumer] = []
        queue: SimQueue | None = None
        released = released_bytes = 0
        for index, (queue_id, guid, sub_queue_id) in enumerate(read_confirm_event(event)):
            if last is None or queue_id != last[0] or sub_queue_id != last[1]:
                if released:
                    assert queue is not None
                    self._released(queue, released, released_bytes)
                    released = released_bytes = 0
                # Keyed by subId, as a broker keys it (the official SDK confirms with the subId
                # even when the PUSH carried a subscription id).
                last = (queue_id, sub_queue_id)
                handle = handles.get(last)
                if handle is None or not handle.readable or not handle.consumers:
                    last = None
                    self._improper(
                        f"CONFIRM #{index} for queue id {queue_id}, subQueueId "
                        f"{sub_queue_id}, which is not open for reading (or not configured)"
                    )
                    continue
                queue = handle.queue
                # Broadcast: at most once, nothing is kept to confirm.
                consumers = (
                    [] if queue.mode is RoutingMode.BROADCAST else [*handle.consumers.values()]
                )
                if not consumers:
                    continue
            elif not consumers:
                continue
            for consumer in consumers:
                message = consumer.unconfirmed.pop(guid, None)
                if message is not None:
                    consumer.unconfirmed_bytes -= message.size
                    released += 1
                    released_bytes += message.size
                    break
            else:
                # Confirmed twice, never delivered here, or delivered before a broker restart.
                self._improper(
                    f"CONFIRM #{index} of GUID {guid.hex()}, which is not an unconfirmed "
                    f"message of queue id {queue_id}"
                )
        if released:
            assert queue is not None
            self._released(queue, released, released_bytes)

    def _released(self, queue: SimQueue, count: int, size: int) -> None:
        """``count`` messages of ``size`` bytes in all were confirmed in ``queue``."""
        self.broker.stats.confirms += count
        queue.release(count, size)
        self._touched.add(queue)

    def _push(self, consumer: Consumer, messages: list[StoredMessage]) -> None:
        self.broker.stats.pushes += len(messages)
        self._pushes.append((consumer, messages))
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
            runs = [(c.queue_id, c.sub_queue_id, messages) for c, messages in self._pushes]
            self._out.extend(push_run_events(runs, not self.extended_properties))
            self._pushes = []

    def _send(self, data: bytes) -> None:
        self._flush_data_plane()  # keep ACK/PUSH ahead of what follows them
        self._out.append(data)
        self.broker._mark(self)

    def _improper(self, reason: str) -> None:
        """Log and record what a real broker tolerates with a warning; the session stays open.
        Bounded: a client repeating it (bogus CONFIRMs by the million) costs no memory or log."""
        self.improper_count += 1
        self.broker.stats.improper_total += 1
        text = f"session {self.session_id} ({self.peer}): {reason}"
        if worth_logging(self.improper_count):
            log.warning("#CLIENT_IMPROPER_BEHAVIOR %s (ignored; #%d)", text, self.improper_count)
        keep_record(self.broker.stats.improper, text)

    def _violation(self, reason: str) -> None:
        text = f"session {self.session_id} ({self.peer}): {reason}"
        keep_record(self.broker.stats.violations, text)
        self._close(f"protocol violation: {reason}", level=logging.WARNING)

    def _close(self, reason: str, level: int = logging.WARNING) -> None:
        if self.closed:
            return
        # One summary line per connection, however many bad events it sent.
        tally = ""
        if self.improper_count or self.nack_count:
            tally = f" ({self.improper_count} improper acts, {self.nack_count} NACKs)"
        log.log(level, "session %d (%s) closing: %s%s", self.session_id, self.peer, reason, tally)
        self.state = SessionState.CLOSED
        self.close_reason = reason
        queues = []
        for handle in self.handles.values():
            self._release(handle)
            handle.queue.handles -= 1
            queues.append(handle.queue)
        self.handles.clear()
        self.by_qid.clear()
        self._pushes = []
        self._reader = EventReader()  # free a partial event (it may be large)
        self.broker._forget(self)
        self.broker._mark(self)
        for queue in dict.fromkeys(queues):  # its messages go to the next consumers
            self.broker._dispatch(queue.deliver())
            self.broker.store.free_if_unused(queue, self._now)
