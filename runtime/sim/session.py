"""One client connection as the simulated broker sees it, from negotiation to disconnect.

The session routes each event and keeps the connection's clocks; its parts do the work: a
``Channel`` (framing, output, heartbeats), ``pybmq.sim.handshake`` (authentication and
negotiation), a ``MessageFlow`` (PUT, CONFIRM, PUSH) and its control requests
(``QueueRequests``). Its state changes only through the table in ``pybmq.sim.states``.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING

from pybmq.errors import ProtocolError
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import PROTOCOL_VERSION, EventType
from pybmq.sim.auth import SessionAuth
from pybmq.sim.dataplane import ack_events
from pybmq.sim.flow import MessageFlow
from pybmq.sim.guard import contained
from pybmq.sim.handshake import authenticate, negotiate
from pybmq.sim.limits import event_limit, keep_record, overdue, worth_logging
from pybmq.sim.requests import REQUESTS, QueueHandle, QueueRequests, RequestRefused
from pybmq.sim.states import SessionInput, SessionState, advance
from pybmq.wire.channel import Channel, Liveness
from pybmq.wire.control import decode_control_as, encode_control
from pybmq.wire.framing import Event

if TYPE_CHECKING:
    from pybmq.sim.broker import Broker

__all__ = ["ClientSession", "SessionState"]

log = logging.getLogger("pybmq.sim")


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
        config = broker.config
        self.channel = Channel(
            limit_for=partial(event_limit, self),
            heartbeat_interval=config.heartbeat_interval_ms / 1000.0,
            max_missed_heartbeats=config.max_missed_heartbeats,
            now=now,
        )
        self.flow = MessageFlow(self)
        self.connected_at = now
        self.improper_count = 0
        self.partial_since: float | None = None  # when the pending partial event started
        self._now = now
        auth = config.auth
        self.auth = SessionAuth(auth) if auth is not None else None
        # Asked once, when the connection is made: False means neither answer nor send them.
        self.channel.answer_heartbeats = broker.hooks.answer_heartbeats(self)

    # -- the shell's interface ---------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self.state is SessionState.CLOSED

    @property
    def negotiated(self) -> bool:
        return self.state is not SessionState.NEGOTIATING

    @property
    def paused(self) -> bool:
        """Backpressure: the shell's write buffer to this client is over its high-water mark,
        so nothing more is pushed to it and its socket is not read (see set_paused)."""
        return self.channel.paused

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete event."""
        return self.channel.buffered

    def receive_data(self, data: bytes, now: float) -> None:
        contained(self, "reading its data", lambda: self._receive(data, now), None)

    def _receive(self, data: bytes, now: float) -> None:
        if self.closed:
            return
        self._now = now
        hooks = self.broker.hooks
        try:
            for event in self.channel.feed_all(data, now):
                if self.state is SessionState.CLOSED or self.state is SessionState.DISCONNECTING:
                    # Nothing may follow a disconnect request.
                    if not self.closed:
                        self._violation(f"{event.type_name} event after disconnect")
                    return
                self._handle_event(event)
                if hooks.drop_connection(self, event.header.type) and not self.closed:
                    self.close("fault injection: connection dropped", level=logging.INFO)
                    return
        except ProtocolError as exc:
            self._violation(str(exc))
        finally:
            if not self.channel.buffered:
                self.partial_since = None
            elif self.partial_since is None:
                self.partial_since = now
            self.flow.deliver_touched()
            self.broker.mark(self)

    def data_to_send(self) -> bytes:
        return contained(self, "preparing its output", self._output, b"")

    def _output(self) -> bytes:
        self._flush_data_plane()
        data = self.channel.take_output()
        return self.broker.hooks.outgoing(self, data) if data else data

    def set_paused(self, paused: bool, now: float) -> None:
        """The shell's write buffer to this client went over (True) or back under (False) its
        high-water mark; the shell stops (resumes) reading the socket at the same time. While
        paused, its consumers take nothing (messages stay in their queues) and neither its
        silence nor an unfinished event counts against it: we are the ones not reading."""
        if self.closed or paused == self.paused:
            return
        self.channel.pause(paused, now)  # resuming restarts the silence clock
        self._now = now
        for handle in self.handles.values():
            for consumer in handle.consumers.values():
                consumer.blocked = paused
        if paused:
            return
        if self.partial_since is not None:
            self.partial_since = now
        if self.auth is not None:
            self.auth.reading_resumed(now)
        queues = {handle.queue for handle in self.handles.values() if handle.consumers}
        for queue in queues:
            self.broker.dispatch(queue.deliver())
        self.broker.mark(self)

    def connection_lost(self, reason: str = "connection lost") -> None:
        """The transport is gone: release everything this session held."""
        if not self.closed:
            self.close(reason, level=logging.INFO)

    def next_deadline(self) -> float | None:
        if self.closed:
            return None
        deadline = self.channel.heartbeat_deadline()
        if not self.negotiated or self.partial_since is not None:
            deadline = min(deadline, self._now + 1.0)  # check the limits at least every second
        acks_due = self.flow.next_deadline()
        if acks_due is not None:
            deadline = min(deadline, acks_due)
        if self.auth is not None and self.auth.expires_at is not None:
            deadline = min(deadline, self.auth.expires_at)
        return deadline

    def on_timer(self, now: float) -> None:
        if self.closed:
            return
        self._now = now
        if self.auth is not None and self.auth.expired(now):
            self.close("credential lifetime expired without re-authentication")
            return
        channel = self.channel
        for acks in self.flow.due_acks(now):
            channel.out.extend(ack_events(acks))
            self.broker.mark(self)
        if self.paused:
            return  # not reading it: its silence tells nothing (see set_paused)
        reason = overdue(self, now)
        if reason is not None:
            self._violation(reason)
            return
        liveness = channel.liveness(now)
        if liveness is Liveness.DEAD:
            self._violation(
                f"no data for {channel.silence(now):.1f}s "
                f"({channel.max_missed_heartbeats} missed heartbeats)"
            )
            self.broker.mark(self)
        elif liveness is Liveness.PROBE and channel.answer_heartbeats:
            self._flush_data_plane()  # keep ACK/PUSH ahead of the probe
            channel.probe(now)
            self.broker.mark(self)

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
            authenticate(self, event, self._now)
        elif self.state is SessionState.NEGOTIATING:
            if etype != EventType.CONTROL:
                raise ProtocolError(
                    f"{event.type_name} event before negotiation",
                    offset=event.offset,
                    path="EventHeader.type",
                )
            negotiate(self, event)
        elif etype == EventType.CONTROL:
            self._control(event)
        elif etype == EventType.PUT:
            self.flow.put(event, self._now)
        elif etype == EventType.CONFIRM:
            self.flow.confirm(event)
        elif etype == EventType.HEARTBEAT_REQ:
            if self.channel.answer_heartbeats:
                self._flush_data_plane()  # keep ACK/PUSH ahead of the answer
                self.channel.answer()
                self.broker.mark(self)
        elif etype == EventType.HEARTBEAT_RSP:
            pass
        else:
            raise ProtocolError(
                f"a client may not send {event.type_name} events",
                offset=event.offset,
                path="EventHeader.type",
            )

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
                    category=ctrl.StatusCategory[refusal.category],
                    code=refusal.code,
                    message=str(refusal),
                )
            )
        response.r_id = message.r_id
        self.send(encode_control(response, encoding))
        if choice == "disconnect":
            self.advance(SessionInput.DISCONNECT)
            self.close("client disconnected", level=logging.INFO)

    # -- output, state and shutdown ----------------------------------------------------------

    def advance(self, event: SessionInput) -> None:
        self.state = advance(self.state, event)

    def _flush_data_plane(self) -> None:
        self.flow.flush(self.channel.out, self._now)

    def send(self, data: bytes) -> None:
        self._flush_data_plane()  # keep ACK/PUSH ahead of what follows them
        self.channel.send(data)
        self.broker.mark(self)

    def improper(self, reason: str) -> None:
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
        self.close(f"protocol violation: {reason}", level=logging.WARNING)

    def close(self, reason: str, level: int = logging.WARNING) -> None:
        if self.closed:
            return
        # One summary line per connection, however many bad events it sent.
        tally = ""
        nacks = self.flow.nack_count
        if self.improper_count or nacks:
            tally = f" ({self.improper_count} improper acts, {nacks} NACKs)"
        log.log(level, "session %d (%s) closing: %s%s", self.session_id, self.peer, reason, tally)
        self.advance(SessionInput.CLOSE)
        self.close_reason = reason
        queues = []
        for handle in self.handles.values():
            self._release(handle)
            handle.queue.handles -= 1
            queues.append(handle.queue)
        self.handles.clear()
        self.by_qid.clear()
        self.flow.pushes = []
        self.channel.drop_partial()  # free a partial event (it may be large)
        self.broker.forget_session(self)
        self.broker.mark(self)
        for queue in dict.fromkeys(queues):  # its messages go to the next consumers
            self.broker.dispatch(queue.deliver())
            self.broker.store.free_if_unused(queue, self._now)
