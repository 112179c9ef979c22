"""The session's life on its connection: authenticate, negotiate, answer the control requests
in flight, stop gracefully, and lose (and regain) the connection.

It is the part of the engine that moves ``Lifecycle``'s machines, and it routes each answer to
a control request to the handler for that request's kind (``ok_handlers``/``failed_handlers``):
the Disconnect to the stop, suspends and resumes to host health, the rest to the queue part.

Facts from bmqimp_authenticatedchannelfactory (C++ SDK): with a credential callback, the
AUTHENTICATION request goes first on a new connection; the response to a re-authentication
arrives among ordinary traffic (see :mod:`pybmq.client.handshake`).

Longer than the other parts (about 550 lines) on purpose: every path that starts, ends, or
suspends and resumes a session is here, next to the others it must agree with (a stop racing a
drop, a refused renewal during a stop, a reconnect during negotiation).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from pybmq.client.events import (
    AckStatus,
    ClientEvent,
    ConnectionLost,
    OperationCompleted,
    Reconnected,
    SessionStopped,
)
from pybmq.client.fsm import (
    DisconnectInput,
    QueueInput,
    QueueState,
    RecoveryInput,
    RecoveryState,
    RemoteQueueInput,
    SessionInput,
    SessionState,
    WriteInput,
    WriteState,
)
from pybmq.client.handshake import Authenticator, client_identity, negotiated
from pybmq.client.options import SessionOptions
from pybmq.client.records import (
    EXPECTED_RESPONSE,
    FEATURES_MPS,
    PendingRequest,
    Req,
)
from pybmq.errors import (
    AuthenticationError,
    AuthenticationTimeoutError,
    BrokerError,
    ProtocolError,
    PybmqError,
    RequestTimeoutError,
    SessionStoppedError,
)
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.uri import require_queue_uri
from pybmq.wire.channel import Liveness
from pybmq.wire.control import decode_authentication, decode_control_as, encode_control
from pybmq.wire.framing import Event

if TYPE_CHECKING:
    from pybmq.client.engine import ClientEngine

log = logging.getLogger("pybmq.client.engine")

S = SessionState
_LIVE_STATES = (S.STARTED, S.STOPPING)


# Requests whose timeout closes the channel (upstream 894fa9fbf: open, reopen and close).
CLOSES_CHANNEL = frozenset(
    (Req.OPEN, Req.CONFIGURE_OPEN, Req.REOPEN, Req.REOPEN_CONFIGURE, Req.CONFIGURE_CLOSE, Req.CLOSE)
)


class Connection:
    """Connect, authenticate, negotiate, stop, drop and reconnect one session."""

    def __init__(self, engine: ClientEngine) -> None:
        self._engine = engine  # for its options, which compat may replace
        self.lifecycle = engine.lifecycle
        self.channel = engine.channel
        self.collector = engine.collector
        self.requests = engine.requests
        self.table = engine.table
        self.queue_control = engine.queue_control
        self.publisher = engine.publisher
        self.consumer = engine.consumer
        self.host_health = engine.host_health
        options = engine.options
        self.encoding = options.negotiation_encoding
        self.authenticator = Authenticator(options.credential_provider, options.timeout("start"))
        self.negotiation_deadline = 0.0
        # A throttled authentication refusal's hint: no new attempt before this time.
        self.retry_not_before = 0.0
        self.ok_handlers: dict[str, Callable[[PendingRequest, ctrl.ControlMessage], None]] = {
            Req.DISCONNECT: lambda _request, _message: self._finish_stop("stopped"),
            Req.SUSPEND: lambda request, _message: self.host_health.on_answer(request, None),
            Req.RESUME: lambda request, _message: self.host_health.on_answer(request, None),
        }
        self.failed_handlers: dict[str, Callable[[PendingRequest, PybmqError], None]] = {
            Req.DISCONNECT: lambda _request, error: self._finish_stop(
                f"stopped without DisconnectResponse: {error}"
            ),
            Req.SUSPEND: self.host_health.on_answer,
            Req.RESUME: self.host_health.on_answer,
        }

    @property
    def options(self) -> SessionOptions:
        return self._engine.options

    def _emit(self, event: ClientEvent) -> None:
        self.collector.emit(event)

    # -- connecting -----------------------------------------------------------------------

    def start(self, now: float) -> None:
        self.lifecycle.now = now
        self.lifecycle.step(SessionInput.START)

    def connection_made(self, now: float) -> None:
        self.lifecycle.now = now
        self.write_blocked(False, now, new_connection=True)
        self.channel.last_received = self.channel.last_probe = now
        self.authenticator.reset()
        if self.authenticator.enabled:
            self.lifecycle.step(SessionInput.CONNECTED_AUTH)
            self._send_authentication()
        else:
            self.lifecycle.step(SessionInput.CONNECTED)
            self._send_identity()

    def write_blocked(self, blocked: bool, now: float, *, new_connection: bool = False) -> None:
        """``ClientEngine.write_blocked`` (and a new connection's empty buffer)."""
        self.lifecycle.now = now
        if new_connection:
            event = WriteInput.NEW_CONNECTION
        else:
            event = WriteInput.HIGH_WATERMARK if blocked else WriteInput.LOW_WATERMARK
        self.lifecycle.write_step(event)
        self.channel.answer_heartbeats = self.lifecycle.writes is WriteState.OPEN

    def _send_identity(self) -> None:
        options = self.options
        self.negotiation_deadline = self.lifecycle.now + options.timeout("start")
        guids = self.publisher.guids
        identity = client_identity(
            options,
            client_type=ctrl.ClientType.E_TCPCLIENT,
            features=f"PROTOCOL_ENCODING:{','.join(options.encodings)};{FEATURES_MPS}",
            session_id=options.session_id,
            guid_info=ctrl.GuidInfo(
                client_id=guids.client_id_hex,
                nano_seconds_from_epoch=guids.nanoseconds_from_epoch,
            ),
        )
        message = ctrl.NegotiationMessage(client_identity=identity)
        self.channel.send(encode_control(message, options.negotiation_encoding))

    def _send_authentication(self) -> None:
        self.authenticator.request_timeout = self.options.timeout("start")
        try:
            self.channel.send(self.authenticator.request(self.lifecycle.now))
        except AuthenticationError as exc:
            self._authentication_failed(exc)

    def on_authentication(self, event: Event) -> None:
        message, _encoding = decode_authentication(event)
        try:
            accepted = self.authenticator.on_response(message, self.lifecycle.now)
        except AuthenticationError as exc:
            self._authentication_failed(exc)
            return
        if accepted and self.lifecycle.state is S.AUTHENTICATING:
            self.lifecycle.step(SessionInput.AUTHENTICATED)
            self._send_identity()

    def _authentication_failed(self, error: AuthenticationError) -> None:
        self.authenticator.reset()
        if error.retry_after is not None:  # the broker's hint: no attempt before it
            self.retry_not_before = self.lifecycle.now + error.retry_after
        if self._can_reconnect():
            self._drop_connection(str(error))
        elif self.lifecycle.state is S.AUTHENTICATING:
            self.lifecycle.step(SessionInput.AUTHENTICATION_FAILED)
            self._fail_everything("authentication failed")
            self._emit(SessionStopped(str(error), error))
        else:  # a re-authentication: the broker closes the connection, so do we
            self._fail_session(str(error), error)

    def on_control(self, event: Event) -> None:
        if self.lifecycle.state is S.NEGOTIATING:
            self._on_negotiation(event)
            return
        message, _encoding = decode_control_as(event, ctrl.ControlMessage)
        rid = message.r_id
        if rid is None:
            log.warning("control message without rId ignored: %s", message.selection)
            return
        request = self.requests.answered(rid)
        if request is None:
            self._on_unexpected(rid, message)
            return
        if message.selection == "status":
            status = message.status
            assert status is not None
            if status.category != ctrl.StatusCategory.E_SUCCESS:
                error = BrokerError(request.kind, status.category.name, status.code, status.message)
                self._failed(request, error)
                return
        else:
            expected = EXPECTED_RESPONSE[request.kind]
            if message.selection not in expected:
                raise ProtocolError(
                    f"response to {request.kind} (rId {rid}) is {message.selection}, "
                    f"expected {' or '.join(expected)}",
                    path="ControlMessage",
                )
        handler = self.ok_handlers.get(request.kind)
        if handler is not None:
            handler(request, message)
        else:
            self.queue_control.on_answer(request, message)
        self._maybe_disconnect()

    def _failed(self, request: PendingRequest, error: PybmqError) -> None:
        handler = self.failed_handlers.get(request.kind)
        if handler is not None:
            handler(request, error)
        else:
            self.queue_control.on_failure(request, error)
        self._maybe_disconnect()

    def _on_unexpected(self, rid: int, message: ctrl.ControlMessage) -> None:
        abandoned = self.requests.abandoned_opens.pop(rid, None)
        if abandoned is not None and message.selection == "open_queue_response":
            log.warning("late open of %s (rId %s): closing it again", abandoned.uri, rid)
            if self.lifecycle.state in _LIVE_STATES:
                base_uri = require_queue_uri(abandoned.uri).base
                self.queue_control.close_abandoned(abandoned, self.table.handles_on(base_uri))
            return
        log.warning("late or unknown response (rId %s, %s) dropped", rid, message.selection)

    def _on_negotiation(self, event: Event) -> None:
        message, encoding = decode_control_as(event, ctrl.NegotiationMessage)
        try:
            outcome = negotiated(message, encoding.name, tuple(self.options.encodings))
        except BrokerError as error:
            if self._can_reconnect():
                self._drop_connection(str(error))
                return
            self.lifecycle.step(SessionInput.NEGOTIATION_FAILED)
            self._fail_everything("negotiation refused")
            self._emit(SessionStopped(str(error), error))
            return
        self.encoding = outcome.encoding
        self.queue_control.broker_configure_stream = outcome.configure_stream
        self.publisher.extended_properties = outcome.extended_properties
        if not outcome.extended_properties:
            log.info("the broker lacks MPS:MESSAGE_PROPERTIES_EX: posting old-format properties")
        self.channel.configure_heartbeats(outcome.heartbeat_interval, outcome.max_missed_heartbeats)
        self.lifecycle.step(SessionInput.NEGOTIATED)
        if self.lifecycle.recovery is RecoveryState.RESTORING:
            self._emit(Reconnected(outcome.started))
            self.queue_control.start_reopen()
        else:
            self._emit(outcome.started)

    def protocol_error(self, exc: ProtocolError, data: bytes) -> ProtocolError:
        """Malformed input: the session is over. Returns the error for the engine to raise."""
        if self.lifecycle.state is S.NEGOTIATING:
            # Garbage before any negotiation answer: most likely another protocol (HTTP …).
            exc = ProtocolError(
                f"the peer is not a BlazingMQ broker (it sent {bytes(data[:16])!r}…): "
                f"{exc.reason}",
                offset=exc.offset,
            )
        if self.lifecycle.state is not S.STOPPED:
            self._fail_session(f"protocol error from the broker: {exc}", exc)
        return exc

    # -- timers ---------------------------------------------------------------------------

    def next_deadline(self) -> float | None:
        state = self.lifecycle.state
        auth = self.authenticator
        if state is S.AUTHENTICATING:
            return auth.deadline
        if state is S.NEGOTIATING:
            return self.negotiation_deadline
        candidates = []
        request_deadline = self.requests.next_deadline()
        if request_deadline is not None:
            candidates.append(request_deadline)
        ack_deadline = self.publisher.next_deadline()
        if ack_deadline is not None:
            candidates.append(ack_deadline)
        stop_deadline = self.lifecycle.stop_deadline
        if stop_deadline is not None and state is S.STOPPING:
            candidates.append(stop_deadline)
        if state in _LIVE_STATES:
            candidates.append(self.channel.heartbeat_deadline())
            auth_deadline = auth.next_deadline()
            if auth_deadline is not None:
                candidates.append(auth_deadline)
        return min(candidates) if candidates else None

    def handle_timeout(self, now: float) -> None:
        lifecycle = self.lifecycle
        lifecycle.now = now
        auth = self.authenticator
        live = lifecycle.state in _LIVE_STATES
        if (lifecycle.state is S.AUTHENTICATING or live) and auth.timed_out(now):
            self._authentication_failed(
                AuthenticationTimeoutError(
                    f"no authenticationResponse within {auth.request_timeout:g}s"
                )
            )
            return
        if lifecycle.state is S.AUTHENTICATING:
            return
        if live and auth.renewal_due(now):
            self._send_authentication()
            if lifecycle.state is S.STOPPED:
                return
        if lifecycle.state is S.NEGOTIATING and self.negotiation_deadline <= now:
            error = RequestTimeoutError("no BrokerResponse to our ClientIdentity")
            if self._can_reconnect():
                self._drop_connection(str(error))
                return
            lifecycle.step(SessionInput.NEGOTIATION_FAILED)
            self._emit(SessionStopped(str(error), error))
            return
        self._expire_requests(now)
        if lifecycle.state is S.STOPPED:
            return
        self.publisher.expire(now)
        stop_deadline = lifecycle.stop_deadline
        if lifecycle.state is S.STOPPING and stop_deadline is not None and stop_deadline <= now:
            self._finish_stop("stop timed out: no DisconnectResponse")
            return
        if lifecycle.state in _LIVE_STATES:
            liveness = self.channel.liveness(now)
            if liveness is Liveness.DEAD:
                silent = self.channel.silence(now)
                reason = f"no traffic from the broker for {silent:.1f}s"
                if self._can_reconnect():
                    self._drop_connection(f"{reason} (missed heartbeats)")
                    return
                self._fail_session(reason, SessionStoppedError(reason))
            elif liveness is Liveness.PROBE:
                self.channel.probe(now)
        self._maybe_disconnect()

    def _expire_requests(self, now: float) -> None:
        for held in self.requests.expired_held(now):
            error = RequestTimeoutError(f"no connection for {held.kind} within its timeout")
            self._failed(held, error)
        for rid, request in self.requests.expired(now):
            if self.lifecycle.state is S.STOPPED:
                return
            if (
                request.kind in (Req.REOPEN, Req.REOPEN_CONFIGURE)
                and self.options.close_channel_on_timeout
                and self._can_reconnect()
            ):
                # As the C++ SDK: an unanswered reopen says nothing about the queue. The channel
                # goes and the queue, kept, is reopened on the next connection (no failed
                # QueueReopened; upstream's test_client_timeout_reopen).
                self._drop_connection(
                    f"no response to {request.kind} (rId {rid}): closing the channel"
                )
                return
            if request.kind in (Req.OPEN, Req.REOPEN) and request.queue_id in self.table.queues:
                # If the broker opens it after all, its late response gets a CloseQueue.
                abandoned = self.table.queues[request.queue_id]
                self.requests.abandoned_opens[rid] = self.table.handle_parameters(abandoned)
            error = RequestTimeoutError(f"no response to {request.kind} (rId {rid})")
            self._failed(request, error)
            if request.kind in CLOSES_CHANNEL and self.options.close_channel_on_timeout:
                # As upstream: a broker that does not answer an open, reopen or close is not
                # trusted with the session any more; the channel goes (and, with reconnect,
                # comes back, reopening the queues).
                reason = f"{error}: closing the channel"
                if self._can_reconnect():
                    self._drop_connection(reason)
                elif not self._engine.stopped:  # (the failure above may have ended it)
                    self._fail_session(reason, error)
                return

    # -- stopping -------------------------------------------------------------------------

    def stop(self, now: float) -> int:
        lifecycle = self.lifecycle
        lifecycle.now = now
        op_id = self.collector.new_op()
        if lifecycle.state is S.STOPPED:
            self._emit(OperationCompleted(op_id))
            return op_id
        if lifecycle.state is S.STOPPING:
            # Already on its way: the earlier stop's completion also completes this one.
            lifecycle.extra_stop_ops.append(op_id)
            return op_id
        if lifecycle.state is not S.STARTED or lifecycle.restoring:
            if lifecycle.state is S.STARTED:
                lifecycle.step(SessionInput.CONNECTION_LOST)
            else:
                lifecycle.step(SessionInput.STOP)
            self._fail_everything("session stopped before it started (or while reconnecting)")
            self._emit(OperationCompleted(op_id))
            self._emit(SessionStopped("stopped before the session started"))
            return op_id
        lifecycle.step(SessionInput.STOP)
        lifecycle.stop_op = op_id
        lifecycle.stop_deadline = now + self.options.stop_timeout
        for queue in list(self.table.queues.values()):
            if queue.op_id is not None and queue.state in (
                QueueState.OPENING,
                QueueState.CONFIGURING,
            ):
                self.collector.complete(
                    queue.op_id, SessionStoppedError(f"session stopping: {queue.uri}")
                )
                queue.op_id = None
            if queue.state is QueueState.OPENED and queue.op_id is None:
                queue.step(QueueInput.CLOSE)
                self.queue_control.start_close(queue)
        self._maybe_disconnect()
        return op_id

    def _maybe_disconnect(self) -> None:
        """Send Disconnect once no queue is mid-request (the broker then sends nothing more)."""
        lifecycle = self.lifecycle
        if lifecycle.state is not S.STOPPING or lifecycle.disconnect_sent:
            return
        if not self.requests.only_disconnect_left():
            return
        lifecycle.disconnect_step(DisconnectInput.SEND)
        message = ctrl.ControlMessage(disconnect=ctrl.Disconnect())
        self.requests.send(message, Req.DISCONNECT, None, None, lifecycle.now)

    def _finish_stop(self, reason: str) -> None:
        if self.lifecycle.state is not S.STOPPED:
            self.lifecycle.step(
                SessionInput.DISCONNECTED if reason == "stopped" else SessionInput.STOP_TIMED_OUT
            )
        self._end(reason, None)

    def _fail_session(self, reason: str, error: PybmqError) -> None:
        self.lifecycle.step(SessionInput.CONNECTION_LOST)
        self._end(reason, error)

    def _end(self, reason: str, error: PybmqError | None) -> None:
        self._fail_everything("session stopped" if error is None else reason)
        self.channel.drop_partial()  # free a partial event (it may be large)
        lifecycle = self.lifecycle
        if lifecycle.stop_op is not None:
            self.collector.complete(lifecycle.stop_op, None)
            lifecycle.stop_op = None
        for op_id in lifecycle.extra_stop_ops:
            self.collector.complete(op_id, None)
        lifecycle.extra_stop_ops.clear()
        self._emit(SessionStopped(reason, error))

    def _fail_everything(self, reason: str) -> None:
        """Every request and post still pending fails with SessionStoppedError / NOT_CONNECTED."""
        lifecycle = self.lifecycle
        for request in self.requests.clear():
            if request.op_id is not None and request.op_id != lifecycle.stop_op:
                self.collector.complete(
                    request.op_id, SessionStoppedError(f"{reason} ({request.kind})")
                )
        self.requests.held.clear()  # their queues' ops fail below
        lifecycle.recovery_step(RecoveryInput.SESSION_ENDED)
        self.queue_control.reopening.clear()
        for queue in self.table.queues.values():
            if queue.op_id is not None:
                self.collector.complete(queue.op_id, SessionStoppedError(f"{reason} ({queue.uri})"))
                queue.op_id = None
            queue.step(QueueInput.SESSION_DOWN)
            queue.remote_step(RemoteQueueInput.CLOSED)
        self.publisher.fail_all(AckStatus.NOT_CONNECTED, reason)
        self.table.clear()
        self.consumer.reset()

    # -- losing the connection ------------------------------------------------------------

    def connection_lost(self, now: float, error: Exception | None = None) -> None:
        lifecycle = self.lifecycle
        lifecycle.now = now
        if lifecycle.state in (S.STOPPED, S.RECONNECTING):
            return
        if error is None and lifecycle.state is S.NEGOTIATING and not self.authenticator.enabled:
            error = ConnectionError(
                "closed by the broker during negotiation (a broker that requires "
                "authentication or TLS closes a client that presents no credential or "
                "speaks plain TCP)"
            )
        reason = f"connection lost: {error}" if error else "connection closed by the broker"
        if self._can_reconnect():
            self._drop_connection(reason)
            return
        if lifecycle.state is S.STOPPING and lifecycle.disconnect_sent:
            self._finish_stop("stopped")
            return
        self._fail_session(reason, SessionStoppedError(reason))

    def _can_reconnect(self) -> bool:
        lifecycle = self.lifecycle
        return self.options.reconnect and (
            lifecycle.state is S.STARTED
            or (
                lifecycle.recovery is RecoveryState.RESTORING
                and lifecycle.state in (S.AUTHENTICATING, S.NEGOTIATING, S.RECONNECTING)
            )
        )

    def _drop_connection(self, reason: str) -> None:
        """The connection is gone but the session lives on: keep open queues for a reopen, put
        every sent-but-unacknowledged post back in front of the held ones (same GUIDs), fail
        the user operations in flight, and tell the shell to reconnect (ConnectionLost).
        """
        self.host_health.connection_dropped()
        lifecycle = self.lifecycle
        lifecycle.step(SessionInput.CONNECTION_DROPPED)
        lifecycle.generation += 1
        self.consumer.new_connection()
        self.channel.reset()
        first_drop = lifecycle.recovery is not RecoveryState.RESTORING
        lifecycle.recovery_step(RecoveryInput.CONNECTION_DROPPED)
        self.queue_control.reopening.clear()
        for request in self.requests.clear():
            if request.op_id is not None:
                self.collector.complete(
                    request.op_id, SessionStoppedError(f"{reason} ({request.kind})")
                )
        self.table.pending_subscriptions.clear()
        for queue in list(self.table.queues.values()):
            queue.remote_step(RemoteQueueInput.CLOSED)
            if queue.queue_id in self.requests.held:  # opened while reconnecting: still held
                continue
            if queue.state is QueueState.OPENED:
                if queue.op_id is not None:  # a reconfigure in flight: reopened with old options
                    self.collector.complete(
                        queue.op_id, SessionStoppedError(f"{reason} ({queue.uri})")
                    )
                    queue.op_id = None
                continue
            # Opening: failed. Closing: the lost connection detached it, so the close succeeded.
            error = (
                None
                if queue.state is QueueState.CLOSING
                else SessionStoppedError(f"{reason} ({queue.uri})")
            )
            queue.step(QueueInput.SESSION_DOWN)
            if queue.op_id is not None:
                self.collector.complete(queue.op_id, error)
                queue.op_id = None
            self.publisher.cancel(
                queue, AckStatus.CANCELED, "queue closed" if error is None else reason
            )
            self.queue_control.forget(queue)
        if first_drop:
            resent = self.publisher.requeue_unacked()
            log.warning("connection dropped (%s): %d posts to retransmit", reason, resent)
        self._emit(ConnectionLost(reason))
