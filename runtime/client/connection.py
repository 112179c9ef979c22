"""The session's life on its connection: authenticate, negotiate, stop gracefully, and lose (and
regain) the connection.

It is the part that moves ``Lifecycle``'s machines. It touches no other part: what a change means
for the rest of the session it reports to the engine as an outcome, ``Drop`` (the connection is
gone, the session lives on) or ``End`` (the session is over), and the engine tells each part.

Facts from bmqimp_authenticatedchannelfactory (C++ SDK): with a credential callback, the
AUTHENTICATION request goes first on a new connection; the response to a re-authentication
arrives among ordinary traffic (see :mod:`pybmq.client.handshake`).
"""

from __future__ import annotations

import logging
from typing import NamedTuple

from pybmq.client.collector import Collector
from pybmq.client.events import Reconnected, SessionStopped
from pybmq.client.fsm import (
    DisconnectInput,
    RecoveryInput,
    RecoveryState,
    SessionInput,
    SessionState,
    WriteInput,
    WriteState,
)
from pybmq.client.handshake import Authenticator, Negotiated, client_identity, negotiated
from pybmq.client.lifecycle import Lifecycle
from pybmq.client.options import SharedOptions
from pybmq.client.records import FEATURES_MPS, Req
from pybmq.client.requests import RequestTable
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
from pybmq.wire.channel import Channel, Liveness
from pybmq.wire.control import decode_authentication, decode_control_as, encode_control
from pybmq.wire.framing import Event
from pybmq.wire.guid import MessageGuidGenerator

__all__ = ["Connection", "Drop", "End", "Outcome"]

log = logging.getLogger("pybmq.client.engine")

_S = SessionState
_LIVE_STATES = (_S.STARTED, _S.STOPPING)


class Drop(NamedTuple):
    """The connection is gone but the session lives on (it reconnects): every part is told."""

    reason: str


class End(NamedTuple):
    """The session is over. The engine fails what is still pending with ``failed`` (None:
    nothing can be pending), then ``Connection.ended`` reports the end."""

    reason: str  # SessionStopped.reason
    error: PybmqError | None  # SessionStopped.error
    failed: str | None
    # A session that ran: its partial incoming event is freed and its stop operations complete.
    ran: bool = True
    # A stop made before the session started: it completes just before SessionStopped.
    stop_op: int | None = None


Outcome = Drop | End | None


class Connection:
    """Connect, authenticate, negotiate, stop, drop and reconnect one session."""

    def __init__(
        self,
        options: SharedOptions,
        lifecycle: Lifecycle,
        channel: Channel,
        requests: RequestTable,
        collector: Collector,
        guids: MessageGuidGenerator,
    ) -> None:
        self._options = options
        self._lifecycle = lifecycle
        self._channel = channel
        self._requests = requests
        self._collector = collector
        self._guids = guids  # the GUID generator's identity goes into the ClientIdentity
        self.encoding = options.current.negotiation_encoding
        self.authenticator = Authenticator()
        self.negotiation_deadline = 0.0
        # A throttled authentication refusal's hint: no new attempt before this time.
        self.retry_not_before = 0.0

    # -- connecting -----------------------------------------------------------------------

    def start(self) -> None:
        self._lifecycle.step(SessionInput.START)

    def connection_made(self, now: float) -> Outcome:
        self.write_blocked(False, new_connection=True)
        self._channel.last_received = self._channel.last_probe = now
        self.authenticator.reset()
        if self._options.current.credential_provider is not None:
            self._lifecycle.step(SessionInput.CONNECTED_AUTH)
            return self._send_authentication(now)
        self._lifecycle.step(SessionInput.CONNECTED)
        self._send_identity(now)
        return None

    def write_blocked(self, blocked: bool, *, new_connection: bool = False) -> None:
        """``ClientEngine.write_blocked`` (and a new connection's empty buffer)."""
        if new_connection:
            event = WriteInput.NEW_CONNECTION
        else:
            event = WriteInput.HIGH_WATERMARK if blocked else WriteInput.LOW_WATERMARK
        self._lifecycle.write_step(event)
        self._channel.answer_heartbeats = self._lifecycle.writes is WriteState.OPEN

    def _send_identity(self, now: float) -> None:
        options = self._options.current
        self.negotiation_deadline = now + options.timeout("start")
        guids = self._guids
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
        self._channel.send(encode_control(message, options.negotiation_encoding))

    def _send_authentication(self, now: float) -> Outcome:
        options = self._options.current
        provider = options.credential_provider
        assert provider is not None
        try:
            self._channel.send(self.authenticator.request(now, provider, options.timeout("start")))
        except AuthenticationError as exc:
            return self._authentication_failed(exc, now)
        return None

    def on_authentication(self, event: Event, now: float) -> Outcome:
        message, _encoding = decode_authentication(event)
        try:
            accepted = self.authenticator.on_response(message, now)
        except AuthenticationError as exc:
            return self._authentication_failed(exc, now)
        if accepted and self._lifecycle.state is _S.AUTHENTICATING:
            self._lifecycle.step(SessionInput.AUTHENTICATED)
            self._send_identity(now)
        return None

    def _authentication_failed(self, error: AuthenticationError, now: float) -> Outcome:
        self.authenticator.reset()
        if error.retry_after is not None:  # the broker's hint: no attempt before it
            self.retry_not_before = now + error.retry_after
        if self._can_reconnect():
            return Drop(str(error))
        if self._lifecycle.state is _S.AUTHENTICATING:
            self._lifecycle.step(SessionInput.AUTHENTICATION_FAILED)
            return self._ending(str(error), error, "authentication failed", ran=False)
        # A re-authentication: the broker closes the connection, so do we.
        return self._fail_session(str(error), error)

    def on_negotiation(self, event: Event) -> Negotiated | Outcome:
        """The broker's answer to our ClientIdentity: what was settled (the engine hands it to
        the parts, then calls ``started``), or the outcome of a refusal."""
        message, encoding = decode_control_as(event, ctrl.NegotiationMessage)
        try:
            return negotiated(message, encoding.name, tuple(self._options.current.encodings))
        except BrokerError as error:
            if self._can_reconnect():
                return Drop(str(error))
            self._lifecycle.step(SessionInput.NEGOTIATION_FAILED)
            return self._ending(str(error), error, "negotiation refused", ran=False)

    def started(self, outcome: Negotiated) -> bool:
        """The session is started (or back); True when it is back after a reconnect (its
        queues are then reopened)."""
        self.encoding = outcome.encoding
        if not outcome.extended_properties:
            log.info("the broker lacks MPS:MESSAGE_PROPERTIES_EX: posting old-format properties")
        self._channel.configure_heartbeats(
            outcome.heartbeat_interval, outcome.max_missed_heartbeats
        )
        self._lifecycle.step(SessionInput.NEGOTIATED)
        if self._lifecycle.recovery is RecoveryState.RESTORING:
            self._collector.emit(Reconnected(outcome.started))
            return True
        self._collector.emit(outcome.started)
        return False

    def protocol_error(self, exc: ProtocolError, data: bytes) -> tuple[ProtocolError, Outcome]:
        """Malformed input: the session is over. The error for the engine to raise, and the
        outcome."""
        state = self._lifecycle.state
        if state is _S.NEGOTIATING:
            # Garbage before any negotiation answer: most likely another protocol (HTTP …).
            exc = ProtocolError(
                f"the peer is not a BlazingMQ broker (it sent {bytes(data[:16])!r}…): "
                f"{exc.reason}",
                offset=exc.offset,
            )
        if state is _S.STOPPED:
            return exc, None
        return exc, self._fail_session(f"protocol error from the broker: {exc}", exc)

    # -- timers ---------------------------------------------------------------------------

    def handshake_deadline(self) -> float | None:
        """While authenticating or negotiating, the one deadline that matters."""
        if self._lifecycle.state is _S.AUTHENTICATING:
            return self.authenticator.deadline
        return self.negotiation_deadline

    def next_deadline(self) -> float | None:
        """The stop's deadline, the heartbeat clock and the re-authentication, when they run."""
        lifecycle = self._lifecycle
        state = lifecycle.state
        candidates = []
        stop_deadline = lifecycle.stop_deadline
        if stop_deadline is not None and state is _S.STOPPING:
            candidates.append(stop_deadline)
        if state in _LIVE_STATES:
            candidates.append(self._channel.heartbeat_deadline())
            auth_deadline = self.authenticator.next_deadline()
            if auth_deadline is not None:
                candidates.append(auth_deadline)
        return min(candidates) if candidates else None

    def authentication_timers(self, now: float) -> Outcome:
        """An authentication answer overdue, or a re-authentication due."""
        state = self._lifecycle.state
        auth = self.authenticator
        live = state in _LIVE_STATES
        if (state is _S.AUTHENTICATING or live) and auth.timed_out(now):
            return self._authentication_failed(
                AuthenticationTimeoutError(
                    f"no authenticationResponse within {auth.request_timeout:g}s"
                ),
                now,
            )
        if live and auth.renewal_due(now):
            return self._send_authentication(now)
        return None

    def negotiation_timer(self, now: float) -> Outcome:
        """No BrokerResponse by the negotiation's deadline."""
        if self._lifecycle.state is not _S.NEGOTIATING or self.negotiation_deadline > now:
            return None
        error = RequestTimeoutError("no BrokerResponse to our ClientIdentity")
        if self._can_reconnect():
            return Drop(str(error))
        self._lifecycle.step(SessionInput.NEGOTIATION_FAILED)
        return End(str(error), error, None, ran=False)

    def stop_and_liveness_timers(self, now: float) -> Outcome:
        """A stop the broker did not answer in time; a broker silent too long (or to probe)."""
        lifecycle = self._lifecycle
        stop_deadline = lifecycle.stop_deadline
        if lifecycle.state is _S.STOPPING and stop_deadline is not None and stop_deadline <= now:
            return self.disconnected("stop timed out: no DisconnectResponse")
        if lifecycle.state in _LIVE_STATES:
            channel = self._channel
            liveness = channel.liveness(now)
            if liveness is Liveness.DEAD:
                silent = channel.silence(now)
                reason = f"no traffic from the broker for {silent:.1f}s"
                if self._can_reconnect():
                    return Drop(f"{reason} (missed heartbeats)")
                return self._fail_session(reason, SessionStoppedError(reason))
            if liveness is Liveness.PROBE:
                channel.probe(now)
        return None

    def reopen_timed_out(self, reason: str) -> Outcome:
        """A reopen went unanswered: with reconnect the channel goes and the queue, kept, is
        reopened on the next connection, as the C++ SDK does (an unanswered reopen says nothing
        about the queue; upstream's test_client_timeout_reopen). None without reconnect."""
        return Drop(f"{reason}: closing the channel") if self._can_reconnect() else None

    def request_timed_out(self, error: RequestTimeoutError) -> Outcome:
        """A request whose timeout closes the channel went unanswered (as upstream: a broker
        that does not answer an open, reopen or close is not trusted with the session any
        more; with reconnect the session comes back and reopens its queues)."""
        reason = f"{error}: closing the channel"
        if self._can_reconnect():
            return Drop(reason)
        if self._lifecycle.state is _S.STOPPED:  # (the failure may have ended it)
            return None
        return self._fail_session(reason, error)

    # -- stopping -------------------------------------------------------------------------

    def stop(self, now: float) -> tuple[int, bool, Outcome]:
        """A stop asked for: its op id, whether a graceful stop begins now (the engine then
        closes the queues), and the outcome when the session ends at once."""
        lifecycle = self._lifecycle
        op_id = self._collector.new_op()
        if lifecycle.state is _S.STOPPED:
            self._collector.complete(op_id, None)
            return op_id, False, None
        if lifecycle.state is _S.STOPPING:
            # Already on its way: the earlier stop's completion also completes this one.
            lifecycle.extra_stop_ops.append(op_id)
            return op_id, False, None
        if lifecycle.state is not _S.STARTED or lifecycle.restoring:
            if lifecycle.state is _S.STARTED:
                lifecycle.step(SessionInput.CONNECTION_LOST)
            else:
                lifecycle.step(SessionInput.STOP)
            return (
                op_id,
                False,
                self._ending(
                    "stopped before the session started",
                    None,
                    "session stopped before it started (or while reconnecting)",
                    ran=False,
                    stop_op=op_id,
                ),
            )
        lifecycle.step(SessionInput.STOP)
        lifecycle.stop_op = op_id
        lifecycle.stop_deadline = now + self._options.current.stop_timeout
        return op_id, True, None

    def maybe_disconnect(self, now: float) -> None:
        """Send Disconnect once no queue is mid-request (the broker then sends nothing more)."""
        lifecycle = self._lifecycle
        if lifecycle.state is not _S.STOPPING or lifecycle.disconnect_sent:
            return
        if not self._requests.only_disconnect_left():
            return
        lifecycle.disconnect_step(DisconnectInput.SEND)
        message = ctrl.ControlMessage(disconnect=ctrl.Disconnect())
        self._requests.send(message, Req.DISCONNECT, None, None, now)

    def disconnected(self, reason: str = "stopped") -> End:
        """The stop is over: answered (``"stopped"``), refused or timed out."""
        lifecycle = self._lifecycle
        if lifecycle.state is not _S.STOPPED:
            lifecycle.step(
                SessionInput.DISCONNECTED if reason == "stopped" else SessionInput.STOP_TIMED_OUT
            )
        return self._ending(reason, None, "session stopped")

    def _fail_session(self, reason: str, error: PybmqError) -> End:
        self._lifecycle.step(SessionInput.CONNECTION_LOST)
        return self._ending(reason, error, reason)

    def _ending(
        self,
        reason: str,
        error: PybmqError | None,
        failed: str,
        *,
        ran: bool = True,
        stop_op: int | None = None,
    ) -> End:
        """The session ends and what is pending fails: nothing is left to restore."""
        self._lifecycle.recovery_step(RecoveryInput.SESSION_ENDED)
        return End(reason, error, failed, ran, stop_op)

    def ended(self, end: End) -> None:
        """Report the end (after the engine failed what was pending)."""
        if end.ran:
            self._channel.drop_partial()  # free a partial event (it may be large)
            lifecycle = self._lifecycle
            if lifecycle.stop_op is not None:
                self._collector.complete(lifecycle.stop_op, None)
                lifecycle.stop_op = None
            for op_id in lifecycle.extra_stop_ops:
                self._collector.complete(op_id, None)
            lifecycle.extra_stop_ops.clear()
        if end.stop_op is not None:
            self._collector.complete(end.stop_op, None)
        self._collector.emit(SessionStopped(end.reason, end.error))

    # -- losing the connection ------------------------------------------------------------

    def connection_lost(self, error: Exception | None) -> Outcome:
        lifecycle = self._lifecycle
        if lifecycle.state in (_S.STOPPED, _S.RECONNECTING):
            return None
        if (
            error is None
            and lifecycle.state is _S.NEGOTIATING
            and self._options.current.credential_provider is None
        ):
            error = ConnectionError(
                "closed by the broker during negotiation (a broker that requires "
                "authentication or TLS closes a client that presents no credential or "
                "speaks plain TCP)"
            )
        reason = f"connection lost: {error}" if error else "connection closed by the broker"
        if self._can_reconnect():
            return Drop(reason)
        if lifecycle.state is _S.STOPPING and lifecycle.disconnect_sent:
            return self.disconnected("stopped")
        return self._fail_session(reason, SessionStoppedError(reason))

    def _can_reconnect(self) -> bool:
        lifecycle = self._lifecycle
        return self._options.current.reconnect and (
            lifecycle.state is _S.STARTED
            or (
                lifecycle.recovery is RecoveryState.RESTORING
                and lifecycle.state in (_S.AUTHENTICATING, _S.NEGOTIATING, _S.RECONNECTING)
            )
        )

    def dropped(self) -> bool:
        """Its side of a drop: a new connection begins and the channel starts afresh. True
        for the first drop (unacknowledged posts are then sent again once restored)."""
        first = self._lifecycle.connection_dropped()
        self._channel.reset()
        return first
