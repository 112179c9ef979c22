"""Authentication, the engine's top layer: the AUTHENTICATION exchange before negotiation, and
re-authentication before the broker's ``lifetimeMs`` runs out, without pausing traffic.

Facts from bmqimp_authenticatedchannelfactory (C++ SDK): the request goes first on a new
connection, in BER, only when a credential callback is set (without one the broker applies its
anonymous credential on the ClientIdentity); the wait is bounded by the connect timeout; a
lifetime in the response schedules the next request at min(90 % of it, it - 5 s); the response
to a re-authentication arrives among ordinary traffic.
"""

from __future__ import annotations

import logging

from pybmq.client.events import SessionStopped
from pybmq.client.fsm import SessionInput, SessionState
from pybmq.client.handshake import authentication_event, reauthentication_delay
from pybmq.client.session import SessionLayer
from pybmq.errors import AuthenticationError, AuthenticationTimeoutError, ProtocolError
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import EventType
from pybmq.wire.control import decode_authentication
from pybmq.wire.framing import Event

log = logging.getLogger("pybmq.client.engine")


class AuthenticationLayer(SessionLayer):
    """Presents the credential from ``SessionOptions.credential_provider`` before negotiating,
    and again before it expires; without a provider the session never authenticates."""

    _auth_deadline: float | None = None  # a request is out: its answer is due by then
    _reauth_at: float | None = None  # when to send the next re-authentication
    authentications = 0  # requests the broker accepted (first and re-authentications)

    def connection_made(self, now: float) -> None:
        self._auth_deadline = self._reauth_at = None
        if self.options.credential_provider is None:
            super().connection_made(now)
            return
        self._now = self._last_received = self._last_probe = now
        self._session_step(SessionInput.CONNECTED_AUTH)
        self._send_authentication()

    def connection_lost(self, now: float, error: Exception | None = None) -> None:
        if (
            error is None
            and self.state is SessionState.NEGOTIATING
            and self.options.credential_provider is None
        ):
            error = ConnectionError(
                "closed by the broker during negotiation (a broker that requires "
                "authentication or TLS closes a client that presents no credential or "
                "speaks plain TCP)"
            )
        super().connection_lost(now, error)

    def _send_authentication(self) -> None:
        provider = self.options.credential_provider
        assert provider is not None
        try:
            self._out.append(authentication_event(provider))
        except AuthenticationError as exc:
            self._authentication_failed(exc)
            return
        self._auth_deadline = self._now + self.options.request_timeout
        self._reauth_at = None

    def _on_event(self, event_type: int, event: Event) -> None:
        if event_type == EventType.AUTHENTICATION:
            self._on_authentication(event)
        elif self.state is SessionState.AUTHENTICATING:
            raise ProtocolError(
                f"expected an AUTHENTICATION event while authenticating, got type {event_type}",
                offset=0,
                path="EventHeader.type",
            )
        else:
            super()._on_event(event_type, event)

    def _on_authentication(self, event: Event) -> None:
        message, _encoding = decode_authentication(event)
        response = message.authentication_response
        if response is None:
            raise ProtocolError(
                f"expected an authenticationResponse, got {message.selection}",
                path="AuthenticationMessage",
            )
        if self._auth_deadline is None:
            log.warning("unsolicited authenticationResponse ignored")
            return
        self._auth_deadline = None
        status = response.status
        if status.category != ctrl.StatusCategory.E_SUCCESS:
            self._authentication_failed(
                AuthenticationError(
                    f"authentication refused by the broker: {status.category.name} "
                    f"({status.code}) {status.message}".rstrip(),
                    category=status.category.name,
                    code=status.code,
                )
            )
            return
        self.authentications += 1
        if response.lifetime_ms is not None:
            self._reauth_at = self._now + reauthentication_delay(response.lifetime_ms)
        log.info("authenticated (lifetime %s ms)", response.lifetime_ms)
        if self.state is SessionState.AUTHENTICATING:
            self._session_step(SessionInput.AUTHENTICATED)
            self._send_identity()

    def _authentication_failed(self, error: AuthenticationError) -> None:
        self._auth_deadline = self._reauth_at = None
        if self._can_reconnect():
            self._drop_connection(str(error))
        elif self.state is SessionState.AUTHENTICATING:
            self._session_step(SessionInput.AUTHENTICATION_FAILED)
            self._fail_everything("authentication failed")
            self._events.append(SessionStopped(str(error), error))
        else:  # a re-authentication: the broker closes the connection, so do we
            self._fail_session(str(error), error)

    def next_deadline(self) -> float | None:
        if self.state is SessionState.AUTHENTICATING:
            return self._auth_deadline
        deadline = super().next_deadline()
        if self.state in (SessionState.STARTED, SessionState.STOPPING):
            for candidate in (self._auth_deadline, self._reauth_at):
                if candidate is not None and (deadline is None or candidate < deadline):
                    deadline = candidate
        return deadline

    def handle_timeout(self, now: float) -> None:
        self._now = now
        live = self.state in (SessionState.STARTED, SessionState.STOPPING)
        waiting = self.state is SessionState.AUTHENTICATING or live
        if waiting and self._auth_deadline is not None and self._auth_deadline <= now:
            self._authentication_failed(
                AuthenticationTimeoutError(
                    f"no authenticationResponse within {self.options.request_timeout:g}s"
                )
            )
            return
        if live and self._reauth_at is not None and self._reauth_at <= now:
            self._send_authentication()
            if self.stopped:
                return
        if self.state is not SessionState.AUTHENTICATING:
            super().handle_timeout(now)
