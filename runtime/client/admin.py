"""An admin connection to a broker, sans-I/O: bytes in, bytes and answers out.

What upstream's admin clients do (bloomberg/blazingmq, ``blazingmq.dev.it.process.admin``):
negotiate with a ClientIdentity whose clientType is ``E_TCPADMIN``, then send each command as a
CONTROL message ``{"rId": N, "adminCommand": {"command": "<words>"}}``; the broker answers each
with ``adminCommandResponse`` whose ``text`` is the result, for people or as JSON when the
command starts with ``ENCODING JSON_COMPACT`` or ``ENCODING JSON_PRETTY`` (mqbcmd.xsd). Both
directions use JSON encoding, as upstream's admin client does.

With a ``credential_provider`` in the options the engine first authenticates (an
AUTHENTICATION request in BER, as the C++ SDK sends it) and negotiates only once the broker
accepted it; commands are held until the negotiation is answered. When the broker grants a
``lifetimeMs``, the engine authenticates again before it runs out, as the client does
(``pybmq.client.handshake``: the same schedule, min(90 % of the lifetime, the lifetime - 5 s)), so a
long admin session is not closed by the broker when its credential expires; the answer is due
within ``start_timeout`` (or ``request_timeout`` when that is set).

The shell (``pybmq admin``) opens the socket (TCP or TLS), feeds ``receive_data`` and writes
``data_to_send``, and calls ``handle_timeout`` at ``next_deadline``. The connection's framing,
output and heartbeat answers are a ``pybmq.wire.channel.Channel`` (it answers heartbeats and
never probes), and the authentication clock is the client's ``Authenticator``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pybmq.client.handshake import Authenticator, client_identity
from pybmq.client.options import SessionOptions
from pybmq.errors import (
    AuthenticationTimeoutError,
    BrokerError,
    ProtocolError,
    SessionStoppedError,
    UsageError,
)
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import EncodingType, EventType
from pybmq.wire.channel import Channel
from pybmq.wire.control import decode_authentication, decode_control_as, encode_control
from pybmq.wire.framing import MAX_CONTROL_EVENT_SIZE

__all__ = ["MAX_ADMIN_EVENT_SIZE", "MAX_PENDING_COMMANDS", "AdminAnswer", "AdminEngine"]

# Largest answer accepted: a broker's admin results can be big (a whole broker config, every
# queue of a cluster), far more than a client's control messages.
MAX_ADMIN_EVENT_SIZE = 64 << 20
# Commands in flight at once (each waits for its answer); more is a UsageError.
MAX_PENDING_COMMANDS = 64


@dataclass(frozen=True)
class AdminAnswer:
    """The broker's answer to one command."""

    r_id: int
    command: str
    text: str


class AdminEngine:
    """Negotiate as an admin client, send commands, collect their answers."""

    def __init__(
        self,
        options: SessionOptions | None = None,
        max_event_size: int = MAX_ADMIN_EVENT_SIZE,
        now: float = 0.0,
    ) -> None:
        """``now``: the time on the clock the shell will give ``receive_data`` and
        ``handle_timeout``."""
        if max_event_size < MAX_CONTROL_EVENT_SIZE:
            raise ValueError(f"max_event_size must be at least {MAX_CONTROL_EVENT_SIZE}")
        options = options or SessionOptions()
        self.negotiated = False
        self.broker_version: int | None = None
        self._channel = Channel(max_event_size=max_event_size, now=now)
        self._pending: dict[int, str] = {}
        self._next_id = 1
        identity = client_identity(
            options,
            client_type=ctrl.ClientType.E_TCPADMIN,
            features="PROTOCOL_ENCODING:JSON",
            session_id=1,
            guid_info=ctrl.GuidInfo(client_id="", nano_seconds_from_epoch=0),
        )
        negotiation = ctrl.NegotiationMessage(client_identity=identity)
        self._negotiation = encode_control(negotiation, EncodingType.JSON)
        self._held: list[bytes] = []  # commands waiting for the negotiation's answer
        self._auth = Authenticator()
        self._provider = options.credential_provider
        self._auth_timeout = options.timeout("start")
        self._now = now  # the latest time the shell gave
        self.authenticated = self._provider is None
        if self._provider is not None:
            self._channel.send(self._auth.request(now, self._provider, self._auth_timeout))
        else:
            self._channel.send(self._negotiation)

    @property
    def authentications(self) -> int:
        """Requests the broker accepted (first and re-authentications)."""
        return self._auth.accepted

    @property
    def pending(self) -> int:
        """Commands sent and not answered yet."""
        return len(self._pending)

    def command(self, text: str) -> int:
        """Queue ``text`` for the broker (sent once negotiated); returns its request id."""
        if len(self._pending) >= MAX_PENDING_COMMANDS:
            raise UsageError(f"at most {MAX_PENDING_COMMANDS} admin commands may wait at once")
        r_id = self._next_id
        self._next_id += 1
        self._pending[r_id] = text
        message = ctrl.ControlMessage(r_id=r_id, admin_command=ctrl.AdminCommand(command=text))
        data = encode_control(message, EncodingType.JSON)
        if self.negotiated:
            self._channel.send(data)
        else:
            self._held.append(data)
        return r_id

    def data_to_send(self) -> bytes:
        return self._channel.take_output()

    def next_deadline(self) -> float | None:
        """When ``handle_timeout`` is next due (None: nothing scheduled)."""
        return self._auth.next_deadline()

    def handle_timeout(self, now: float) -> None:
        """Time has come to ``now``: authenticate again if due. AuthenticationTimeoutError if
        the broker did not answer an authentication within ``start_timeout``."""
        self._now = now
        auth = self._auth
        if auth.timed_out(now):
            auth.reset()
            raise AuthenticationTimeoutError(
                f"no authenticationResponse within {auth.request_timeout:g}s"
            )
        if auth.renewal_due(now) and self._provider is not None:
            self._channel.send(auth.request(now, self._provider, self._auth_timeout))

    def receive_data(self, data: bytes, now: float | None = None) -> list[AdminAnswer]:
        """Bytes from the broker (received at ``now``; default: the latest time given) -> the
        answers they complete. A refused negotiation raises BrokerError; a refused
        authentication, AuthenticationError; bytes that are not BlazingMQ events,
        ProtocolError."""
        if now is not None:
            self._now = now
        answers = []
        try:
            events = list(self._channel.feed(data, self._now))
        except ProtocolError as exc:
            if not self.negotiated:
                raise ProtocolError(
                    f"the peer is not a BlazingMQ broker (it sent {bytes(data[:16])!r}…): "
                    f"{exc.reason}",
                    offset=exc.offset,
                ) from None
            raise
        for event in events:  # heartbeats were answered by the channel
            if event.type == EventType.AUTHENTICATION:
                self._on_authentication(decode_authentication(event)[0])
            elif event.type != EventType.CONTROL:
                continue  # nothing else is meant for an admin session
            elif not self.negotiated:
                self._on_negotiation(decode_control_as(event, ctrl.NegotiationMessage)[0])
            else:
                answer = self._on_control(decode_control_as(event, ctrl.ControlMessage)[0])
                if answer is not None:
                    answers.append(answer)
        return answers

    def closed_error(self) -> SessionStoppedError:
        """What to say when the broker closes the connection: before the negotiation was
        answered, most likely it wants a credential or TLS."""
        if self.negotiated:
            return SessionStoppedError("the broker closed the connection")
        return SessionStoppedError(
            "the broker closed the connection before answering the negotiation (a broker "
            "that requires authentication or TLS closes a client without a credential or "
            "on plain TCP)"
        )

    def _on_negotiation(self, message: ctrl.NegotiationMessage) -> None:
        response = message.broker_response
        if response is None:
            raise ProtocolError(f"expected a brokerResponse, got {message.selection}")
        status = response.result
        if status.category != ctrl.StatusCategory.E_SUCCESS:
            raise BrokerError(
                "admin negotiation", status.category.name, status.code, status.message
            )
        self.negotiated = True
        self.broker_version = response.broker_version
        for command in self._held:
            self._channel.send(command)
        self._held = []

    def _on_authentication(self, message: ctrl.AuthenticationMessage) -> None:
        if self._auth.on_response(message, self._now) and not self.authenticated:
            self.authenticated = True
            self._channel.send(self._negotiation)

    def _on_control(self, message: ctrl.ControlMessage) -> AdminAnswer | None:
        r_id = message.r_id
        if r_id is None or r_id not in self._pending:
            return None  # not an answer to us (a broker may send others)
        command = self._pending.pop(r_id)
        if message.admin_command_response is not None:
            return AdminAnswer(r_id, command, message.admin_command_response.text)
        if message.status is not None:
            s = message.status
            raise BrokerError(f"admin command {command!r}", s.category.name, s.code, s.message)
        raise ProtocolError(f"expected an adminCommandResponse, got {message.selection}")
