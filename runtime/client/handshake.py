"""The client's side of a connection's start: who we are (the ClientIdentity) and the
authentication sub-machine, shared by the session engine and the admin connection.

Facts from bmqimp_authenticatedchannelfactory (C++ SDK): the request goes first on a new
connection, in BER, only when a credential callback is set (without one the broker applies its
anonymous credential on the ClientIdentity); the wait is bounded; a lifetime in the response
schedules the next request at min(90 % of it, it - 5 s); the response to a re-authentication
arrives among ordinary traffic.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass

from pybmq._version import __version__
from pybmq.client.events import SessionStarted
from pybmq.client.options import Credential, SessionOptions
from pybmq.client.records import FEATURE_CONFIGURE_STREAM, PROTOCOL_VERSION, SDK_VERSION
from pybmq.errors import AuthenticationError, BrokerError, ProtocolError
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.printable import printable_ascii
from pybmq.wire.control import encode_authentication, has_feature, parse_features
from pybmq.wire.framing import SMALL_EVENT_SIZE

__all__ = [
    "HEARTBEAT_INTERVAL_RANGE_MS",
    "IDENTITY_LIMITS",
    "MAX_AUTHENTICATION_EVENT_SIZE",
    "MAX_MISSED_HEARTBEATS_RANGE",
    "MAX_RETRY_HINT_MS",
    "REAUTH_EARLY_BUFFER_S",
    "REAUTH_EARLY_RATIO",
    "RETRY_HINT",
    "Authenticator",
    "Negotiated",
    "authentication_event",
    "clamped",
    "client_identity",
    "negotiated",
    "reauthentication_delay",
    "sanitised",
    "user_agent",
]

log = logging.getLogger("pybmq.client.engine")

# bmqimp_authenticatedchannelfactory.cpp: k_REAUTHN_EARLY_RATIO, k_REAUTHN_EARLY_BUFFER (ms).
REAUTH_EARLY_RATIO = 0.9
REAUTH_EARLY_BUFFER_S = 5.0
# The heartbeat settings taken from a broker, in ms and beats: a value outside is clamped to the
# range with a warning (0 would stop the session at once, 2**31-1 would turn dead-peer detection
# off). The default broker's 3000 ms x 10 is well inside.
HEARTBEAT_INTERVAL_RANGE_MS = (10, 120_000)
# The biggest AUTHENTICATION event sent: what a broker takes before negotiation (the simulator's
# limit for any event but control then); bigger credential material is refused here.
MAX_AUTHENTICATION_EVENT_SIZE = SMALL_EVENT_SIZE
MAX_MISSED_HEARTBEATS_RANGE = (1, 100)
# A throttled refusal (pybmq sim's authentication backoff; the real broker has none) says how
# long to wait: "... retry in N ms". The client waits that long before its next attempt, at
# most MAX_RETRY_HINT_MS, instead of reconnecting into the backoff.
RETRY_HINT = re.compile(r"retry in (\d{1,9}) ms")
MAX_RETRY_HINT_MS = 60_000
# The identity's strings as sent: printable ASCII (upstream's negotiation asks it of every string
# field and its broker flags violations, a495f02b1) and at most this long. A process or host
# name that is not (a script named in another alphabet, a control character in a container's
# host name) goes as its printable-ASCII form, each other character a "?", cut to the bound.
IDENTITY_LIMITS = {
    "process_name": 64,
    "host_name": 253,  # the longest DNS name
    "features": 1024,
    "user_agent": 256,  # a prefix of at most 128 characters, then "pybmq:<version>"
}


def clamped(name: str, value: int, bounds: tuple[int, int]) -> int:
    """``value`` within ``bounds``, with a warning naming the broker's setting if it was not."""
    low, high = bounds
    if low <= value <= high:
        return value
    kept = min(max(value, low), high)
    log.warning(
        "the broker's %s %d is outside %d..%d: using %d instead", name, value, low, high, kept
    )
    return kept


def reauthentication_delay(lifetime_ms: int) -> float:
    """Seconds after a successful authentication at which to authenticate again."""
    lifetime = lifetime_ms / 1000.0
    return max(min(lifetime * REAUTH_EARLY_RATIO, lifetime - REAUTH_EARLY_BUFFER_S), 0.0)


def authentication_event(provider: Callable[[], Credential | None]) -> bytes:
    """The AUTHENTICATION event presenting the credential ``provider`` returns now.
    AuthenticationError if it raises (its text is not repeated: it may hold secrets) or returns
    no Credential."""
    try:
        credential = provider()
    except Exception as exc:  # a provider's failure, not ours
        log.error("credential provider raised %s", type(exc).__name__)
        credential = None
    if not isinstance(credential, Credential):
        raise AuthenticationError("the credential provider returned no Credential")
    request = ctrl.AuthenticationRequest(mechanism=credential.mechanism, data=credential.data)
    log.info("authenticating with mechanism %r", credential.mechanism[:64])
    event = encode_authentication(ctrl.AuthenticationMessage(authentication_request=request))
    if len(event) > MAX_AUTHENTICATION_EVENT_SIZE:
        # A broker would close the connection on the event's header: say why, here.
        raise AuthenticationError(
            f"the credential is too big: its AUTHENTICATION event is {len(event)} bytes "
            f"(at most {MAX_AUTHENTICATION_EVENT_SIZE})"
        )
    return event


def client_identity(
    options: SessionOptions,
    *,
    client_type: ctrl.ClientType,
    features: str,
    session_id: int,
    guid_info: ctrl.GuidInfo,
) -> ctrl.ClientIdentity:
    """The ClientIdentity a pybmq connection of ``client_type`` presents, its strings as
    ``sanitised`` makes them."""
    return ctrl.ClientIdentity(
        protocol_version=PROTOCOL_VERSION,
        sdk_version=SDK_VERSION,
        client_type=client_type,
        process_name=sanitised("process_name", options.process_name),
        pid=options.pid,
        session_id=session_id,
        host_name=sanitised("host_name", options.host_name),
        features=sanitised("features", features),
        cluster_name="",
        cluster_node_id=-1,
        sdk_language=ctrl.ClientLanguage.E_UNKNOWN,
        guid_info=guid_info,
        user_agent=sanitised("user_agent", user_agent(options.user_agent_prefix)),
    )


def sanitised(field_name: str, value: str) -> str:
    """An identity string as sent: printable ASCII within ``IDENTITY_LIMITS`` (logged once per
    connection when that changed it)."""
    sent = printable_ascii(value, IDENTITY_LIMITS[field_name])
    if sent != value:
        log.info(
            "the %s is sent as %r: the negotiation takes printable ASCII of at most %d characters",
            field_name,
            sent,
            IDENTITY_LIMITS[field_name],
        )
    return sent


def user_agent(prefix: str = "") -> str:
    """What the negotiation's userAgent says: ``pybmq:<version>``, in the ``name:version`` form
    the C++ SDK (``libbmq:``) and the broker (``bmqbrkr:``) use, after the application's or
    wrapping library's ``user_agent_prefix`` when there is one (upstream's userAgentPrefix)."""
    own = f"pybmq:{__version__}"
    return f"{prefix} {own}" if prefix else own


class Authenticator:
    """Presents the credential from a provider, and again before the broker's lifetime for it
    runs out. It only keeps the clock of the exchange; its owner gives the provider and the
    bound with each request, and decides what a failure ends.
    """

    def __init__(self) -> None:
        self.request_timeout = 0.0  # the bound on the answer to the request out (or the last)
        self.deadline: float | None = None  # a request is out: its answer is due by then
        self.renew_at: float | None = None  # when to send the next re-authentication
        self.accepted = 0  # requests the broker accepted (first and re-authentications)

    def reset(self) -> None:
        """A new connection: nothing is out and nothing is scheduled."""
        self.deadline = self.renew_at = None

    def request(
        self, now: float, provider: Callable[[], Credential | None], timeout: float
    ) -> bytes:
        """The AUTHENTICATION event presenting what ``provider`` returns now, answered within
        ``timeout`` seconds (AuthenticationError: no credential)."""
        event = authentication_event(provider)
        self.request_timeout = timeout
        self.deadline = now + timeout
        self.renew_at = None
        return event

    def next_deadline(self) -> float | None:
        """The earlier of the answer's deadline and the next renewal, if any."""
        candidates = [t for t in (self.deadline, self.renew_at) if t is not None]
        return min(candidates) if candidates else None

    def timed_out(self, now: float) -> bool:
        return self.deadline is not None and self.deadline <= now

    def renewal_due(self, now: float) -> bool:
        return self.renew_at is not None and self.renew_at <= now

    def on_response(self, message: ctrl.AuthenticationMessage, now: float) -> bool | None:
        """The broker's answer: True accepted, None unsolicited (ignored). A refusal raises
        AuthenticationError; an answer that is not an authenticationResponse, ProtocolError.
        """
        response = message.authentication_response
        if response is None:
            raise ProtocolError(
                f"expected an authenticationResponse, got {message.selection}",
                path="AuthenticationMessage",
            )
        if self.deadline is None:
            log.warning("unsolicited authenticationResponse ignored")
            return None
        self.deadline = None
        status = response.status
        if status.category != ctrl.StatusCategory.E_SUCCESS:
            self.renew_at = None
            hint = RETRY_HINT.search(status.message or "")
            raise AuthenticationError(
                f"authentication refused by the broker: {status.category.name} "
                f"({status.code}) {status.message}".rstrip(),
                category=status.category.name,
                code=status.code,
                retry_after=min(int(hint.group(1)), MAX_RETRY_HINT_MS) / 1000 if hint else None,
            )
        self.accepted += 1
        if response.lifetime_ms is not None:
            self.renew_at = now + reauthentication_delay(response.lifetime_ms)
        log.info("authenticated (lifetime %s ms)", response.lifetime_ms)
        return True


@dataclass(frozen=True)
class Negotiated:
    """What a session's negotiation settled: the control encoding, the broker's features, the
    heartbeat schedule, and the SessionStarted event that reports it."""

    encoding: str
    configure_stream: bool  # the broker takes ConfigureStream (subscriptions)
    extended_properties: bool  # the broker reads MESSAGE_PROPERTIES_EX
    heartbeat_interval: float  # seconds
    max_missed_heartbeats: int
    started: SessionStarted


def negotiated(
    message: ctrl.NegotiationMessage, response_encoding: str, encodings: tuple[str, ...]
) -> Negotiated:
    """The outcome of the broker's answer to our ClientIdentity. BrokerError if it refused us;
    ProtocolError if it answered something else or shares no control encoding with us.
    """
    response = message.broker_response
    if response is None:
        raise ProtocolError(
            f"expected a brokerResponse during negotiation, got {message.selection}",
            path="NegotiationMessage",
        )
    result = response.result
    if result.category != ctrl.StatusCategory.E_SUCCESS:
        raise BrokerError("negotiation", result.category.name, result.code, result.message)
    features = response.broker_identity.features
    encoding = _pick_encoding(features, response_encoding, encodings)
    return Negotiated(
        encoding=encoding,
        configure_stream=has_feature(features, "SUBSCRIPTIONS", FEATURE_CONFIGURE_STREAM),
        # As the C++ SDK (bmqimp_negotiatedchannelfactory.cpp sets the channel's MPS_EX
        # property, bmqimp_brokersession.cpp converts PUTs without it): an older broker gets
        # old-format message properties.
        extended_properties=has_feature(features, "MPS", "MESSAGE_PROPERTIES_EX"),
        heartbeat_interval=clamped(
            "heartbeat interval (ms)", response.heartbeat_interval_ms, HEARTBEAT_INTERVAL_RANGE_MS
        )
        / 1000.0,
        max_missed_heartbeats=clamped(
            "max missed heartbeats", response.max_missed_heartbeats, MAX_MISSED_HEARTBEATS_RANGE
        ),
        started=SessionStarted(
            broker_version=response.broker_version,
            protocol_version=response.protocol_version,
            encoding=encoding,
            heartbeat_interval_ms=response.heartbeat_interval_ms,
            max_missed_heartbeats=response.max_missed_heartbeats,
        ),
    )


def _pick_encoding(features: str, response_encoding: str, ours: tuple[str, ...]) -> str:
    """First of our encodings the broker lists; its response's encoding if it lists none."""
    theirs = parse_features(features).get("PROTOCOL_ENCODING", [])
    if not theirs:
        return response_encoding
    for encoding in ours:
        if encoding in theirs:
            return encoding
    raise ProtocolError(
        f"no common control encoding: broker offers {theirs}, we accept {list(ours)}",
        path="BrokerResponse.brokerIdentity.features",
    )
