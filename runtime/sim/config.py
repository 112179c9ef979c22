"""What the simulated broker advertises and enforces (``BrokerConfig``), where fault injection
plugs in (``BrokerHooks``), what it counts (``BrokerStats``), and its protocol constants.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pybmq.errors import UsageError
from pybmq.generated.wire_codec import (
    QueueFlags,
)
from pybmq.wire.expressions import BROKER_LIMITS, ExpressionLimits

if TYPE_CHECKING:
    from pybmq.sim.auth import AuthConfig
    from pybmq.sim.session import ClientSession

__all__ = [
    "BROKER_VERSION",
    "FLAG_ACK",
    "FLAG_ADMIN",
    "FLAG_READ",
    "FLAG_WRITE",
    "KNOWN_QUEUE_FLAGS",
    "RESERVED_QUEUE_ID",
    "BrokerConfig",
    "BrokerHooks",
    "BrokerStats",
]


FLAG_ADMIN = int(QueueFlags.ADMIN)
FLAG_READ = int(QueueFlags.READ)
FLAG_WRITE = int(QueueFlags.WRITE)
FLAG_ACK = int(QueueFlags.ACK)
KNOWN_QUEUE_FLAGS = FLAG_ADMIN | FLAG_READ | FLAG_WRITE | FLAG_ACK
RESERVED_QUEUE_ID = 2**32 - 10  # bmqp::QueueId::k_RESERVED_QUEUE_ID: qIds from here up are reserved
BROKER_VERSION = 999999  # what a broker built from source reports


# The BrokerConfig limits that must be positive (a zero would disable a bound or divide by it).
_AT_LEAST_ONE = (
    "heartbeat_interval_ms",
    "max_missed_heartbeats",
    "deduplication_max_guids",
    "negotiation_timeout_ms",
    "queue_limit_messages",
    "queue_limit_bytes",
    "memory_limit_bytes",
    "partial_event_timeout_ms",
    "write_high_water_bytes",
    "tls_handshake_timeout_ms",
    "max_connections",
)


@dataclass
class BrokerConfig:
    """What the simulated broker advertises and enforces."""

    heartbeat_interval_ms: int = 3000
    max_missed_heartbeats: int = 10
    # Advertise SUBSCRIPTIONS:CONFIGURE_STREAM like a current broker (clients then send
    # configureStream; without it they send the older configureQueueStream). Both are served.
    advertise_subscriptions: bool = True
    # Advertise MPS:MESSAGE_PROPERTIES_EX like a current broker. False plays a broker from
    # before extended message properties: clients must post the old format (a PUT with a
    # schema id is NACKed) and every consumer is pushed the old format.
    extended_properties: bool = True
    deduplication_time_ms: int = 300000
    # Authentication (pybmq.sim.auth.AuthConfig); None: no AUTHENTICATION exchange is served and
    # every client is let in, as a broker with only its default anonymous authenticator.
    auth: AuthConfig | None = None
    deduplication_max_guids: int = 100_000  # per queue; the oldest GUIDs are forgotten first
    # A connection must finish negotiating within this time, and complete any event it has
    # started sending within this time (a slow drip is closed; see pybmq.sim.limits).
    negotiation_timeout_ms: int = 10000
    # Per-queue quota (a domain's queueLimits): messages held (not yet confirmed, counted once
    # per app) and their bytes; once a queue holds more than either, a PUT is NACKed
    # LIMIT_MESSAGES / LIMIT_BYTES (as a broker, the PUT that crosses the limit is taken).
    queue_limit_messages: int = 1_000_000
    queue_limit_bytes: int = 128 * 1024 * 1024
    # The memory budget of all queues together (a broker's storage limits): the bytes of every
    # stored message plus what keeping it costs (about 300 B, more per fan-out app) and each GUID
    # in a de-duplication window. Once spent, PUTs are NACKed LIMIT_BYTES and clients stay
    # connected; confirms free it again. ``pybmq sim --max-memory``.
    memory_limit_bytes: int = 1024 * 1024 * 1024
    partial_event_timeout_ms: int = 60000
    # Backpressure: once this many bytes wait in a client's socket write buffer, the simulator
    # stops pushing to it and stops reading from it (its messages stay in their queues) until
    # the buffer drains to a quarter of it.
    write_high_water_bytes: int = 4 * 1024 * 1024
    # Subscription expressions over these limits (the broker evaluator's: 128 characters, 10
    # operators, 10 properties) are refused at configure with E_INVALID_ARGUMENT.
    subscription_limits: ExpressionLimits = BROKER_LIMITS
    # Who may run admin commands (the broker's authorizer): None lets every admin connection
    # (negotiated as E_TCPADMIN) run them; a set lets only sessions authenticated as one of these
    # users. An ordinary client (E_TCPCLIENT) that sends one is always disconnected.
    admin_users: frozenset[str] | None = None
    # A TLS handshake not finished within this time is dropped (asyncio's default is 60 s).
    tls_handshake_timeout_ms: int = 10000
    # Connections served at once, TLS handshakes in progress included; one more is closed at
    # once (with TLS, when its handshake ends) and counted in BrokerStats.refused_connections.
    max_connections: int = 10000

    def __post_init__(self) -> None:
        """Refuse a setting the simulator cannot run with, before any client depends on it."""
        for name in _AT_LEAST_ONE:
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise UsageError(f"BrokerConfig.{name} must be an int of at least 1, not {value!r}")
        if type(self.deduplication_time_ms) is not int or self.deduplication_time_ms < 0:
            raise UsageError(
                "BrokerConfig.deduplication_time_ms must be an int of at least 0, "
                f"not {self.deduplication_time_ms!r}"
            )

    def features(self) -> str:
        parts = ["PROTOCOL_ENCODING:BER,JSON"]
        if self.extended_properties:
            parts.append("MPS:MESSAGE_PROPERTIES_EX")
        if self.advertise_subscriptions:
            parts.append("SUBSCRIPTIONS:CONFIGURE_STREAM")
        return ";".join(parts)


class BrokerHooks:
    """Where fault injection plugs in; the default changes nothing.

    Subclass and pass to ``Broker(hooks=...)``: ``ack_status`` may replace the status of the
    ACK for each PUT (it only changes what the producer is told: a message that passed the broker's
    checks is already stored); ``outgoing`` may rewrite or drop (return b"") a session's bytes;
    ``drop_connection`` may close a session after an event it sent; ``ack_delay`` holds ACKs back;
    ``answer_heartbeats`` False (asked once per connection, when it is made) makes the broker
    silent on heartbeats; ``refuse_negotiation`` returning a reason turns the session's
    ClientIdentity down. ``pybmq.sim.faults`` uses them.
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
    refused_connections: int = 0  # over BrokerConfig.max_connections
    internal_errors: int = 0  # connections closed because serving them raised (see sim.guard)
    # What a real broker logs as #CLIENT_IMPROPER_BEHAVIOR and ignores (the session stays open).
    improper: list[str] = field(default_factory=list)  # the newest (see sim.limits.MAX_RECORDS)
    improper_total: int = 0
