"""The client session engine: sans-I/O (no sockets, threads or clocks), one object per connection.

The shell feeds it what happened — ``receive_data(bytes, now)``, user commands (``open_queue``,
``post``, ``confirm``, ``stop`` …, each with ``now``), ``connection_made``/``connection_lost`` and
``handle_timeout(now)`` — and takes out what to do: ``data_to_send()`` (bytes for the socket),
``next_events()`` (records from :mod:`pybmq.client.events`) and ``next_deadline()`` (when to call
``handle_timeout`` next). All state changes go through the tables in :mod:`pybmq.client.fsm`.

The engine holds parts with one job each (h11's connection, proton's connection + transport +
collector) and routes between them; none inherits another's job:

- ``channel`` (:mod:`pybmq.wire.channel`): framing, the output buffer, heartbeats;
- ``connection`` (:mod:`pybmq.client.connection`): the session's life on its connection — authentication,
  negotiation, graceful stop, connection loss and reconnect;
- ``requests`` (:mod:`pybmq.client.requests`): control requests in flight, by rId;
- ``table`` (:mod:`pybmq.client.queue_table`): the queues, their routes and ids;
- ``queue_control`` (:mod:`pybmq.client.queues`): open, configure, close and reopen;
- ``publisher`` (:mod:`pybmq.client.publishing`): posts, PUT events, ACKs;
- ``consumer`` (:mod:`pybmq.client.consuming`): PUSH events, credit, CONFIRMs;
- ``host_health`` (:mod:`pybmq.client.suspension`): host health;
- ``collector`` (:mod:`pybmq.client.collector`): the events for the shell, in order.

Posts and confirms are only buffered by the commands; ``data_to_send()`` turns everything buffered
since the last call into one PUT event and one CONFIRM event, which is how a shell that flushes
once per loop turn gets one event per turn.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pybmq.client.collector import Collector
from pybmq.client.connection import Connection
from pybmq.client.consuming import Consumer
from pybmq.client.credit import CreditLedger
from pybmq.client.events import ClientEvent
from pybmq.client.fsm import SessionState
from pybmq.client.lifecycle import Lifecycle
from pybmq.client.options import QueueOptions, SessionOptions
from pybmq.client.publishing import Publisher
from pybmq.client.queue_table import QueueTable
from pybmq.client.queues import QueueControl
from pybmq.client.records import QueueRecord
from pybmq.client.requests import RequestTable
from pybmq.client.stats import SessionStats
from pybmq.client.suspension import HostHealth
from pybmq.errors import ProtocolError
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import PUT_EVENT_MAX_SIZE_SOFT, EventType
from pybmq.wire.channel import Channel
from pybmq.wire.control import encode_control
from pybmq.wire.framing import (
    MAX_CONTROL_EVENT_SIZE,
    MAX_EVENT_SIZE,
    SMALL_EVENT_SIZE,
    Event,
)

_STOPPED = SessionState.STOPPED
_RECONNECTING = SessionState.RECONNECTING
_AUTHENTICATING = SessionState.AUTHENTICATING
_AUTHENTICATION = EventType.AUTHENTICATION


class ClientEngine:
    """One BlazingMQ client session over one connection, without I/O. See the module docstring."""

    def __init__(self, options: SessionOptions | None = None) -> None:
        options = options or SessionOptions()
        self.options = options
        self.lifecycle = Lifecycle()
        self.collector = Collector()
        self.channel = Channel(limit_for=self._event_limit, steady_probe_clock=True)
        self.table = QueueTable()
        self.requests = RequestTable(self.send_control, options)
        self.publisher = Publisher(options, self.lifecycle, self.table, self.collector)
        self.consumer = Consumer(options, self.lifecycle, self.table, self.collector)
        self.queue_control = QueueControl(
            options,
            self.lifecycle,
            self.table,
            self.requests,
            self.publisher,
            self.consumer,
            self.collector,
        )
        self.host_health = HostHealth(
            self.lifecycle, self.table, self.queue_control, self.collector
        )
        self.queue_control.host_health = self.host_health
        self.connection = Connection(self)
        # What each incoming event type is for (heartbeats never get here: the channel
        # answers them).
        self._handlers: dict[int, Callable[[Event], None]] = {
            EventType.PUSH: self.consumer.on_push,
            EventType.ACK: self.publisher.on_ack,
            EventType.CONTROL: self.connection.on_control,
            EventType.AUTHENTICATION: self.connection.on_authentication,
        }

    # -- the shell's inputs ---------------------------------------------------------------

    def start(self, now: float) -> None:
        """The user wants a session; the shell should now open the transport."""
        self.connection.start(now)

    def connection_made(self, now: float) -> None:
        """The transport is up: authenticate if a credential is set, then negotiate."""
        self.connection.connection_made(now)

    def connection_lost(self, now: float, error: Exception | None = None) -> None:
        """The transport closed. With reconnect on, the session waits for a new connection;
        otherwise everything still pending fails and the session is over."""
        self.connection.connection_lost(now, error)

    def stop(self, now: float) -> int:
        """Start a graceful stop; returns the op id that completes when the session is stopped."""
        return self.connection.stop(now)

    def receive_data(self, data: bytes, now: float) -> None:
        """Bytes from the socket. Malformed input stops the session and raises ProtocolError."""
        lifecycle = self.lifecycle
        lifecycle.now = now
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
                handler(event)
                if lifecycle.state is _STOPPED:
                    return
        except ProtocolError as exc:
            raise self.connection.protocol_error(exc, data) from None

    def handle_timeout(self, now: float) -> None:
        """Expire requests and ACKs whose deadline passed; probe or give up on a silent broker;
        authenticate again when due."""
        self.connection.handle_timeout(now)

    def pause_reading(self, paused: bool, now: float) -> None:
        """The shell stopped (True) or resumed (False) reading the socket because the
        application is behind: no heartbeat is missed while we are the ones not reading."""
        self.channel.pause(paused, now)

    def write_blocked(self, blocked: bool, now: float) -> None:
        """The shell's channel reached its high watermark (True) or is back to its low one
        (False). While blocked, heartbeat requests are not answered (see ``WriteState``)."""
        self.connection.write_blocked(blocked, now)

    def set_host_health(self, healthy: bool, now: float) -> None:
        """The host health monitor's verdict; sensitive queues suspend or resume accordingly."""
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
        return self.queue_control.configure_queue(
            queue_id, options, now, suspended=suspended, timeout=timeout
        )

    def close_queue(self, queue_id: int, now: float, timeout: float | None = None) -> int:
        """ConfigureStream to nothing, then CloseQueue(isFinal); returns the op id."""
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
        return self.publisher.post(
            queue_id,
            payload,
            now,
            properties=properties,
            context=context,
            ack=ack,
            compression=compression,
        )

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
        return self.publisher.post_many(
            queue_id, payloads, now, properties=properties, context=context, ack=ack
        )

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
        """Replace fields of the session's options (e.g. ``request_timeout``) for what follows."""
        options = dataclasses.replace(self.options, **changes)
        self.options = options
        for part in (self.requests, self.publisher, self.consumer, self.queue_control):
            part.options = options

    # -- the shell's outputs --------------------------------------------------------------

    def data_to_send(self) -> bytes:
        """Everything to write to the socket now (buffered posts and confirms become events)."""
        self.flush_data()
        return self.channel.take_output()

    def next_events(self) -> list[ClientEvent]:
        return self.collector.take()

    def next_deadline(self) -> float | None:
        """When ``handle_timeout`` must run next (absolute, on the caller's clock), or None."""
        return self.connection.next_deadline()

    # -- what the parts share -------------------------------------------------------------

    def flush_data(self) -> None:
        """Posts, then confirms, buffered since the last flush become events."""
        out = self.channel.out
        self.publisher.flush(out)
        self.consumer.flush(out)

    def send_control(self, message: ctrl.ControlMessage | ctrl.NegotiationMessage) -> None:
        # Data buffered before this request must reach the broker before it (post, then close).
        self.flush_data()
        self.channel.send(encode_control(message, self.connection.encoding))

    def _event_limit(self, event_type: int) -> int:
        """The biggest event of ``event_type`` a well-behaved broker can send us now: PUSH is
        bounded by our credit (the broker may overshoot it by one message), ACK by what a PUT
        event can carry, control by MAX_CONTROL_EVENT_SIZE, heartbeats are tiny."""
        if event_type == EventType.PUSH:
            return min(MAX_EVENT_SIZE, self.consumer.credit.total_bytes + PUT_EVENT_MAX_SIZE_SOFT)
        if event_type == EventType.ACK:
            return PUT_EVENT_MAX_SIZE_SOFT
        if event_type == EventType.CONTROL:
            return MAX_CONTROL_EVENT_SIZE
        return SMALL_EVENT_SIZE

    # -- what the shells read -------------------------------------------------------------

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
        return self.lifecycle.now

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
        return self.connection.encoding

    @property
    def heartbeat_interval(self) -> float:
        return self.channel.heartbeat_interval

    @property
    def max_missed_heartbeats(self) -> int:
        return self.channel.max_missed_heartbeats

    @property
    def reading_paused(self) -> bool:
        return self.channel.paused

    @property
    def incoming_buffered(self) -> int:
        """Bytes held for an incomplete incoming event."""
        return self.channel.buffered

    @property
    def extended_properties(self) -> bool:
        """The broker reads MESSAGE_PROPERTIES_EX (else posts carry old-format properties)."""
        return self.publisher.extended_properties

    @property
    def broker_configure_stream(self) -> bool:
        return self.queue_control.broker_configure_stream

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
        return len(self.publisher.puts)

    def room(self, count: int) -> str | None:
        """Why ``count`` more posts cannot be taken now (the byte budget; ``max_buffered_posts``
        while reconnecting), or None. A shell waits while this says why; ``post`` raises
        PostBufferFullError with it."""
        return self.publisher.room(count)

    def output_buffered(self, size: int) -> None:
        """The shell's socket still holds ``size`` bytes of what ``data_to_send`` returned: they
        count against the byte budget (``held_bytes`` is the engine's own part) until the next
        report. A shell reports it after each write and while it waits for room."""
        self.publisher.socket_bytes = size

    @property
    def buffered_count(self) -> int:
        """Posts and confirms waiting for the next ``data_to_send()``."""
        return len(self.publisher.puts) + len(self.consumer.confirms)

    def stats(self) -> SessionStats:
        """A typed snapshot of the session's statistics (per open queue, and totals)."""
        return self.table.stats()
