"""The client session engine: sans-I/O (no sockets, threads or clocks), one object per connection.

The shell feeds it what happened — ``receive_data(bytes, now)``, user commands (``open_queue``,
``post``, ``confirm``, ``stop`` …, each with ``now``), ``connection_made``/``connection_lost`` and
``handle_timeout(now)`` — and takes out what to do: ``data_to_send()`` (bytes for the socket),
``next_events()`` (records from :mod:`pybmq.client.events`) and ``next_deadline()`` (when to call
``handle_timeout`` next). All state changes go through the tables in :mod:`pybmq.client.fsm`.

It holds parts with one job each (h11's connection, proton's connection + transport +
collector) and is the only router between them: no part holds the engine. An input goes to the
part it is for; what a part reports (an answer's kind, a lost connection, the end of the
session) the engine tells every part it concerns, with the time. The parts: ``channel``
(framing, output buffer, heartbeats), ``connection`` (authentication, negotiation, stop, loss:
reported as outcomes), ``requests`` (control requests in flight), ``table`` (the queues and
their ids), ``queue_control`` (open, configure, close, reopen), ``host_health`` (suspend,
resume), ``publisher`` (posts, PUT, ACK), ``consumer`` (PUSH, credit, CONFIRM), ``output`` (what
leaves, in order) and ``collector`` (the events for the shell). The options reach every part
once, as one ``SharedOptions``, which ``update_options`` changes.

Posts and confirms are only buffered by the commands; ``data_to_send()`` turns everything
buffered since the last call into one PUT event and one CONFIRM event, which is how a shell that
flushes once per loop turn gets one event per turn. About 590 lines, on purpose: the routing is
all here, so that no part routes.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pybmq.client.collector import Collector
from pybmq.client.configure import StreamConfigurer
from pybmq.client.connection import Connection, Drop, End, Outcome
from pybmq.client.consuming import Consumer
from pybmq.client.credit import CreditLedger
from pybmq.client.events import ClientEvent, ConnectionLost
from pybmq.client.fsm import SessionState
from pybmq.client.handshake import Negotiated
from pybmq.client.lifecycle import Lifecycle
from pybmq.client.options import QueueOptions, SessionOptions, SharedOptions
from pybmq.client.output import Output
from pybmq.client.publishing import Publisher
from pybmq.client.queue_table import QueueTable
from pybmq.client.queues import QueueControl
from pybmq.client.records import PendingRequest, QueueRecord, Req
from pybmq.client.requests import CLOSES_CHANNEL, RequestTable
from pybmq.client.stats import SessionStats
from pybmq.client.suspension import HostHealth
from pybmq.errors import (
    ProtocolError,
    PybmqError,
    RequestTimeoutError,
    SessionStoppedError,
)
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import EventType
from pybmq.wire.channel import Channel
from pybmq.wire.control import decode_control_as
from pybmq.wire.framing import Event, client_event_limit
from pybmq.wire.guid import MessageGuidGenerator

__all__ = ["ClientEngine"]

log = logging.getLogger("pybmq.client.engine")

_STOPPED = SessionState.STOPPED
_RECONNECTING = SessionState.RECONNECTING
_AUTHENTICATING = SessionState.AUTHENTICATING
_NEGOTIATING = SessionState.NEGOTIATING
_AUTHENTICATION = EventType.AUTHENTICATION
_HOST_HEALTH_REQUESTS = (Req.SUSPEND, Req.RESUME)
_REOPENS = (Req.REOPEN, Req.REOPEN_CONFIGURE)


class ClientEngine:
    """One BlazingMQ client session over one connection, without I/O. See the module docstring."""

    def __init__(self, options: SessionOptions | None = None) -> None:
        shared = self._options = SharedOptions(options or SessionOptions())
        self._now = 0.0  # the time of the latest input (the shell's clock)
        self.lifecycle = Lifecycle()
        self.collector = Collector()
        self.table = QueueTable()
        guids = MessageGuidGenerator(shared.current.session_id)
        self.publisher = Publisher(shared, self.lifecycle, self.table, self.collector, guids)
        self.consumer = Consumer(shared, self.lifecycle, self.table, self.collector)
        credit = self.consumer.credit
        self.channel = Channel(
            limit_for=lambda event_type: client_event_limit(event_type, credit.total_bytes),
            steady_probe_clock=True,
        )
        self.output = Output(
            self.channel, self.publisher, self.consumer, shared.current.negotiation_encoding
        )
        self.requests = RequestTable(self.output.send_control, shared)
        configurer = StreamConfigurer(self.table, self.requests, self.consumer.credit)
        self.host_health = HostHealth(self.lifecycle, self.table, configurer, self.collector)
        self.queue_control = QueueControl(
            self.lifecycle,
            self.table,
            self.requests,
            configurer,
            self.host_health,
            self.publisher,
            self.consumer.credit,
            self.collector,
        )
        self.connection = Connection(
            shared, self.lifecycle, self.channel, self.requests, self.collector, guids
        )
        # What each incoming event type is for (heartbeats never get here: the channel
        # answers them).
        self._handlers: dict[int, Callable[[Event, float], None]] = {
            EventType.PUSH: self.consumer.on_push,
            EventType.ACK: self.publisher.on_ack,
            EventType.CONTROL: self._on_control,
            EventType.AUTHENTICATION: self._on_authentication,
        }

    # -- the shell's inputs ---------------------------------------------------------------

    def start(self, now: float) -> None:
        """The user wants a session; the shell should now open the transport."""
        self._now = now
        self.connection.start()

    def connection_made(self, now: float) -> None:
        """The transport is up: authenticate if a credential is set, then negotiate."""
        self._now = now
        self._apply(self.connection.connection_made(now))

    def connection_lost(self, now: float, error: Exception | None = None) -> None:
        """The transport closed. With reconnect on, the session waits for a new connection;
        otherwise everything still pending fails and the session is over."""
        self._now = now
        self._apply(self.connection.connection_lost(error))

    def stop(self, now: float) -> int:
        """Start a graceful stop; returns the op id that completes when the session is stopped."""
        self._now = now
        op_id, began, outcome = self.connection.stop(now)
        if began:
            self.queue_control.session_stopping(now)
            self.connection.maybe_disconnect(now)
        self._apply(outcome)
        return op_id

    def receive_data(self, data: bytes, now: float) -> None:
        """Bytes from the socket. Malformed input stops the session and raises ProtocolError."""
        self._now = now
        lifecycle = self.lifecycle
        state = lifecycle.state
        if state is _STOPPED or state is _RECONNECTING:
            self.channel.last_received = now
            return
        handlers = self._handlers
        try:
            for event in self.channel.feed(data, now):
                event_type = event.header.type
                if lifecycle.state is _AUTHENTICATING and event_type != _AUTHENTICATION:
                    raise ProtocolError(
                        "expected an AUTHENTICATION event while authenticating, got type "
                        f"{event_type}",
                        offset=0,
                        path="EventHeader.type",
                    )
                handler = handlers.get(event_type)
                if handler is None:
                    raise ProtocolError(
                        f"unexpected event type {event_type} for a client", offset=0
                    )
                handler(event, now)
                if lifecycle.state is _STOPPED:
                    return
        except ProtocolError as exc:
            error, outcome = self.connection.protocol_error(exc, data)
            self._apply(outcome)
            raise error from None

    def handle_timeout(self, now: float) -> None:
        """Expire requests and ACKs whose deadline passed; probe or give up on a silent broker;
        authenticate again when due."""
        self._now = now
        lifecycle, connection = self.lifecycle, self.connection
        outcome = connection.authentication_timers(now)
        if outcome is not None or lifecycle.state is _AUTHENTICATING:
            self._apply(outcome)
            return
        outcome = connection.negotiation_timer(now)
        if outcome is not None:
            self._apply(outcome)
            return
        self._expire_requests(now)
        if lifecycle.state is _STOPPED:
            return
        self.publisher.expire(now)
        outcome = connection.stop_and_liveness_timers(now)
        if outcome is not None:
            self._apply(outcome)
            return
        connection.maybe_disconnect(now)

    def pause_reading(self, paused: bool, now: float) -> None:
        """The shell stopped (True) or resumed (False) reading the socket because the
        application is behind: no heartbeat is missed while we are the ones not reading."""
        self._now = now
        self.channel.pause(paused, now)

    def write_blocked(self, blocked: bool, now: float) -> None:
        """The shell's channel reached its high watermark (True) or is back to its low one
        (False). While blocked, heartbeat requests are not answered (see ``WriteState``)."""
        self._now = now
        self.connection.write_blocked(blocked)

    def set_host_health(self, healthy: bool, now: float) -> None:
        """The host health monitor's verdict; sensitive queues suspend or resume accordingly."""
        self._now = now
        self.host_health.set(healthy, now)

    # -- the user's commands --------------------------------------------------------------

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
        """Start opening ``uri``; returns (op id, queue id). The op completes once configured.
        ``timeout`` bounds each answer (None: ``options.open_timeout``)."""
        self._now = now
        return self.queue_control.open_queue(
            uri, now, read=read, write=write, ack=ack, options=options, timeout=timeout
        )

    def configure_queue(
        self,
        queue_id: int,
        options: QueueOptions,
        now: float,
        *,
        suspended: bool = False,
        timeout: float | None = None,
    ) -> int:
        """Standalone ConfigureStream on an open queue; returns the op id. ``suspended`` sends
        no subscription at all (the broker stops delivering; the options are kept for the next
        configure), as the official SDK suspends a queue when the host turns unhealthy."""
        self._now = now
        return self.queue_control.configure_queue(
            queue_id, options, now, suspended=suspended, timeout=timeout
        )

    def close_queue(self, queue_id: int, now: float, timeout: float | None = None) -> int:
        """ConfigureStream to nothing, then CloseQueue(isFinal); returns the op id."""
        self._now = now
        return self.queue_control.close_queue(queue_id, now, timeout)

    def post(
        self,
        queue_id: int,
        payload: bytes,
        now: float,
        *,
        properties: Mapping[str, Any] | None = None,
        context: object = None,
        ack: bool = True,
        compression: str | None = None,
    ) -> bytes:
        """Buffer one message for the next PUT event; returns its GUID. ``context`` comes back
        with the ACK (or local NACK) for it. ``ack=False`` asks the broker for no ACK for this
        post even on a queue opened with ACKs (as the official SDK does for a post without
        ``on_ack``); such a post is not tracked, so it is not retransmitted after a reconnect.
        Every check runs here, so a bad post raises at the call and changes nothing.
        ``compression`` (``"none"``/``"zlib"``) overrides the session's threshold for this one
        message."""
        guid = self.publisher.post(
            queue_id, payload, properties=properties, context=context, ack=ack,
            compression=compression,
        )  # fmt: skip
        # The flush that sends it starts its ACK deadline (and latency) now.
        self._now = now
        return guid

    def post_many(
        self,
        queue_id: int,
        payloads: Sequence[bytes],
        now: float,
        *,
        properties: Mapping[str, Any] | None = None,
        context: object = None,
        ack: bool = True,
    ) -> list[bytes]:
        """``post`` for a batch sharing one queue, one set of properties and one ``context``
        (the fast path: the checks, the properties and the GUID clock are done once). All or
        nothing: if one payload is refused, none is buffered. Returns the GUIDs in order."""
        guids = self.publisher.post_many(
            queue_id, payloads, properties=properties, context=context, ack=ack
        )
        self._now = now
        return guids

    def confirm(
        self,
        queue_id: int,
        guid: bytes,
        generation: int | None = None,
        latency: float | None = None,
    ) -> None:
        """Buffer a CONFIRM (for the message ``guid`` on queue handle ``queue_id``).

        ``generation`` is ``self.generation`` when the message arrived: a message of an earlier
        connection is not confirmed (that broker session is gone; it will be redelivered).
        ``latency`` (seconds from delivery to this confirm, measured by the shell) goes into
        the queue's stats."""
        self.consumer.confirm(queue_id, guid, generation, latency)

    def confirm_many(
        self, queue_id: int, guids: Iterable[bytes], generation: int | None = None
    ) -> None:
        """``confirm`` for many messages of one queue handle (the fast path: checked once)."""
        self.consumer.confirm_many(queue_id, guids, generation)

    def update_options(self, **changes: Any) -> None:
        """Replace fields of the session's options (e.g. ``request_timeout``) for what follows:
        every part sees the new ones (they all hold the one ``SharedOptions``)."""
        self._options.current = dataclasses.replace(self._options.current, **changes)

    # -- the shell's outputs --------------------------------------------------------------

    def data_to_send(self) -> bytes:
        """Everything to write to the socket now (buffered posts and confirms become events)."""
        self.output.flush(self._now)
        return self.channel.take_output()

    def next_events(self) -> list[ClientEvent]:
        return self.collector.take()

    def next_deadline(self) -> float | None:
        """When ``handle_timeout`` must run next (absolute, on the caller's clock), or None."""
        state = self.lifecycle.state
        if state is _AUTHENTICATING or state is _NEGOTIATING:
            return self.connection.handshake_deadline()
        parts = (self.requests, self.publisher, self.connection)
        return min((d for p in parts if (d := p.next_deadline()) is not None), default=None)

    # -- routing --------------------------------------------------------------------------

    def _on_authentication(self, event: Event, now: float) -> None:
        self._apply(self.connection.on_authentication(event, now))

    def _on_control(self, event: Event, now: float) -> None:
        """An answer to one of our requests goes to the part its kind belongs to (during
        negotiation: the broker's answer to our ClientIdentity)."""
        if self.lifecycle.state is _NEGOTIATING:
            self._on_negotiation(event, now)
            return
        message, _encoding = decode_control_as(event, ctrl.ControlMessage)
        rid = message.r_id
        if rid is None:
            log.warning("control message without rId ignored: %s", message.selection)
            return
        request = self.requests.answered(rid)
        if request is None:
            self.queue_control.on_unexpected(rid, message, now)
            return
        error = self.requests.refusal(request, message)
        if error is not None:
            self._request_failed(request, error, now)
            return
        kind = request.kind
        if kind == Req.DISCONNECT:
            self._apply(self.connection.disconnected())
        elif kind in _HOST_HEALTH_REQUESTS:
            self.host_health.on_answer(request, None, now)
        else:
            self.queue_control.on_answer(request, message, now)
        self.connection.maybe_disconnect(now)

    def _request_failed(self, request: PendingRequest, error: PybmqError, now: float) -> None:
        kind = request.kind
        if kind == Req.DISCONNECT:
            self._apply(
                self.connection.disconnected(f"stopped without DisconnectResponse: {error}")
            )
        elif kind in _HOST_HEALTH_REQUESTS:
            self.host_health.on_answer(request, error, now)
        else:
            self.queue_control.on_failure(request, error, now)
        self.connection.maybe_disconnect(now)

    def _on_negotiation(self, event: Event, now: float) -> None:
        outcome = self.connection.on_negotiation(event)
        if not isinstance(outcome, Negotiated):
            self._apply(outcome)
            return
        self.output.negotiated(outcome)
        self.queue_control.negotiated(outcome)
        self.publisher.negotiated(outcome)
        if self.connection.started(outcome):
            self.queue_control.start_reopen(now)

    def _expire_requests(self, now: float) -> None:
        lifecycle = self.lifecycle
        closes_channel = self._options.current.close_channel_on_timeout
        for held in self.requests.expired_held(now):  # made while reconnecting, never sent
            error = RequestTimeoutError(f"no connection for {held.kind} within its timeout")
            self._request_failed(held, error, now)
        for rid, request in self.requests.expired(now):
            if lifecycle.state is _STOPPED:
                return
            if request.kind in _REOPENS and closes_channel:
                why = f"no response to {request.kind} (rId {rid})"
                if (drop := self.connection.reopen_timed_out(why)) is not None:
                    self._apply(drop)  # the queue is kept, for the next connection
                    return
            self.queue_control.request_expired(rid, request)
            error = RequestTimeoutError(f"no response to {request.kind} (rId {rid})")
            self._request_failed(request, error, now)
            if request.kind in CLOSES_CHANNEL and closes_channel:
                self._apply(self.connection.request_timed_out(error))
                return

    def _apply(self, outcome: Outcome) -> None:
        """What the connection reported, told to every part it concerns."""
        if outcome is None:
            return
        if isinstance(outcome, Drop):
            self._connection_dropped(outcome.reason)
        else:
            self._session_ended(outcome)

    def _connection_dropped(self, reason: str) -> None:
        """The connection is gone but the session lives on: open queues are kept for a reopen,
        every sent-but-unacknowledged post goes back in front of the held ones (same GUIDs),
        the user operations in flight fail, and the shell is told to reconnect."""
        self.host_health.connection_dropped()
        first = self.connection.dropped()
        self.consumer.connection_dropped()
        self._fail_requests(reason)
        self.queue_control.connection_dropped(reason)
        self.publisher.connection_dropped(reason, first)
        self.collector.emit(ConnectionLost(reason))

    def _session_ended(self, end: End) -> None:
        """The session is over: every request and post still pending fails (SessionStoppedError
        / NOT_CONNECTED), then the connection reports the end."""
        if end.failed is not None:
            reason = end.failed
            self._fail_requests(reason, self.lifecycle.stop_op)
            self.queue_control.session_ended(reason)
            self.publisher.session_ended(reason)
            self.table.clear()
            self.consumer.session_ended()
        self.connection.ended(end)

    def _fail_requests(self, reason: str, spared: int | None = None) -> None:
        """Every request is forgotten; the user operations waiting on them fail (but
        ``spared``, the stop, which the end completes)."""
        for request in self.requests.clear():
            if request.op_id is not None and request.op_id != spared:
                self.collector.complete(
                    request.op_id, SessionStoppedError(f"{reason} ({request.kind})")
                )

    # -- what the shells read -------------------------------------------------------------

    @property
    def options(self) -> SessionOptions:
        return self._options.current

    @property
    def state(self) -> SessionState:
        return self.lifecycle.state

    @property
    def stopped(self) -> bool:
        """True once the session is over (the shell should close its transport)."""
        return self.lifecycle.state is _STOPPED

    @property
    def restoring(self) -> bool:
        """True from a connection drop until every queue is reopened (posts are held)."""
        return self.lifecycle.restoring

    @property
    def awaiting_response(self) -> bool:
        """True while a control request (open, configure, close, disconnect) is unanswered."""
        return bool(self.requests)

    @property
    def now(self) -> float:
        """The time of the latest input, on the shell's clock."""
        return self._now

    @property
    def generation(self) -> int:
        """Counts connections: messages of an earlier one are not confirmed (redelivered)."""
        return self.lifecycle.generation

    @property
    def queues(self) -> dict[int, QueueRecord]:
        return self.table.queues

    @property
    def credit(self) -> CreditLedger:
        return self.consumer.credit

    @property
    def encoding(self) -> str:
        """The control encoding negotiated with the broker."""
        return self.output.encoding

    @property
    def heartbeat_interval(self) -> float:
        return self.channel.heartbeat_interval

    @property
    def max_missed_heartbeats(self) -> int:
        return self.channel.max_missed_heartbeats

    @property
    def incoming_buffered(self) -> int:
        """Bytes held for an incomplete incoming event."""
        return self.channel.buffered

    @property
    def extended_properties(self) -> bool:
        """The broker reads MESSAGE_PROPERTIES_EX (else posts carry old-format properties)."""
        return self.publisher.extended_properties

    @property
    def host_healthy(self) -> bool:
        return self.host_health.healthy

    @property
    def authentications(self) -> int:
        """Authentications the broker accepted (the first and every renewal)."""
        return self.connection.authenticator.accepted

    @property
    def unacked_count(self) -> int:
        return len(self.publisher.unacked)

    @property
    def pending_ack_batches(self) -> int:
        """Flushes that still have unacknowledged posts (each holds one ACK deadline)."""
        return len(self.publisher.ack_deadlines)

    @property
    def retry_not_before(self) -> float:
        """When the broker asked us to try authenticating again at the earliest (a throttled
        refusal's hint; 0: no such wait): a reconnect waits for it."""
        return self.connection.retry_not_before

    @property
    def held_bytes(self) -> int:
        """Payload bytes held for the broker: buffered, and kept to be retransmitted until
        their ACK (the byte budget counts these and the socket's ``output_buffered``)."""
        return self.publisher.held_bytes

    @property
    def unsent_bytes(self) -> int:
        """Payload bytes of the posts buffered for the next ``data_to_send()``."""
        return self.publisher.unsent_bytes

    @property
    def unsent_posts(self) -> int:
        """Posts buffered for the next ``data_to_send()``."""
        return self.publisher.buffered

    def room(self, count: int) -> str | None:
        """Why ``count`` more posts cannot be taken now (the byte budget; ``max_buffered_posts``
        while reconnecting), or None. A shell waits while this says why; ``post`` raises
        PostBufferFullError with it."""
        return self.publisher.room(count)

    def output_buffered(self, size: int) -> None:
        """The shell's socket still holds ``size`` bytes of what ``data_to_send`` returned: they
        count against the byte budget (``held_bytes`` is the engine's own part) until the next
        report. A shell reports it after each write and while it waits for room."""
        self.publisher.output_buffered(size)

    @property
    def buffered_count(self) -> int:
        """Posts and confirms waiting for the next ``data_to_send()``."""
        return self.publisher.buffered + len(self.consumer.confirms)

    def stats(self) -> SessionStats:
        """A typed snapshot of the session's statistics (per open queue, and totals)."""
        return self.table.stats()
