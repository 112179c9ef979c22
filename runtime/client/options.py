"""Settings of a client session and of one queue, with the defaults the official SDKs use."""

from __future__ import annotations

import os
import socket
import ssl
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any, cast

from pybmq.client.reconnect import ReconnectPolicy
from pybmq.client.subscriptions import Subscription, as_subscriptions
from pybmq.errors import UsageError
from pybmq.printable import is_printable_ascii
from pybmq.uri import default_broker, parse_broker_url
from pybmq.wire.compression import DEFAULT_MAX_DECOMPRESSED_SIZE

__all__ = [
    "BATCHES_PER_BUDGET",
    "MAX_DEDUP_WINDOW",
    "Credential",
    "CredentialProvider",
    "QueueOptions",
    "SessionOptions",
    "SharedOptions",
    "checked_timeout",
    "queue_options",
]


def _process_name() -> str:
    """What the negotiation calls this process: the module a ``python -m`` run started (its
    ``__main__.py`` would name every such program alike), else the script's or entry point's
    file name, as the C++ SDK sends its executable's name (made printable ASCII when sent)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if spec is not None and spec.name:
        return str(spec.name).removesuffix(".__main__") or "python"
    return (os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "") or "python"


@dataclass(frozen=True)
class Credential:
    """What the session presents in an AuthenticationRequest (bmqt::AuthnCredential): a
    mechanism (``"BASIC"``, ``"ANONYMOUS"``, a plugin's name) and its material. The material
    never appears in a repr, a log line or an error."""

    mechanism: str
    data: bytes = field(default=b"", repr=False)

    def __post_init__(self) -> None:
        if not self.mechanism:
            raise UsageError("a credential needs a mechanism")
        if not isinstance(self.data, bytes):
            raise UsageError("credential data must be bytes")

    def __repr__(self) -> str:
        return f"Credential(mechanism={self.mechanism!r}, data=<{len(self.data)} bytes hidden>)"


# Called before every (re-)authentication, so a token can be refreshed; None or an exception
# means no credential can be had (the session fails with AuthenticationError, as in the C++ SDK).
CredentialProvider = Callable[[], "Credential | None"]


# A batch posted in one piece (the blocking ``post_many``'s slices, the load generator's chunks)
# is admitted whole while the session is under ``max_buffered_bytes``: it takes at most the
# budget over this, so it cannot carry the session far past its budget.
BATCHES_PER_BUDGET = 4

# The official SDKs' defaults (bmqt::SessionOptions) for the timeouts left None.
_REQUEST_TIMEOUTS = {
    "request_timeout": 30.0,
    "start_timeout": 60.0,
    "open_timeout": 300.0,
    "configure_timeout": 300.0,
    "close_timeout": 300.0,
    "disconnect_timeout": 30.0,
}


@dataclass(frozen=True)
class SessionOptions:
    """How the engine talks to its broker. Times are in seconds."""

    # The broker a session connects to when it is given none: $BMQ_BROKER_URI or localhost:30114.
    broker_uri: str = field(default_factory=default_broker)
    # Timeouts, with the official SDKs' defaults (bmqt::SessionOptions): ``start_timeout`` bounds
    # authentication and negotiation (60 s), ``open_timeout``, ``configure_timeout`` and
    # ``close_timeout`` a queue operation's answers (300 s each), ``disconnect_timeout`` the
    # Disconnect's answer (30 s). Each None field takes ``request_timeout`` when that is set (the
    # single knob of earlier versions, still honoured), else its default. Every operation also
    # takes a ``timeout=`` of its own (see the shells).
    request_timeout: float | None = None
    start_timeout: float | None = None
    open_timeout: float | None = None
    configure_timeout: float | None = None
    close_timeout: float | None = None
    disconnect_timeout: float | None = None
    # An open, reopen or close left unanswered past its timeout closes the channel (and, with
    # reconnect, the session reconnects and reopens), as upstream does since 0.95.0.
    close_channel_on_timeout: bool = True
    ack_timeout: float = 30.0  # after this, a post resolves with a local TIMEOUT NACK
    stop_timeout: float = 10.0
    # How long a post (or drain()) may wait while the channel is at its high watermark before it
    # raises ChannelWriteTimeoutError (bmqt::SessionOptions::channelWriteTimeout, 5 s; 0: fail at
    # once). While the channel is that full, reading from the broker is paused as well (resumed
    # at the low watermark), so a broker that sends and never reads cannot grow the client.
    channel_write_timeout: float = 5.0
    # ``stop()`` waits up to this long for the ACKs of posts already sent before it closes
    # anything (Java's linger, Kafka's and NATS's flush; 0: do not wait); what is still
    # unacknowledged then fails with LingerTimeoutError naming how many.
    linger: float = 0.0
    # Prepended to pybmq's user agent in the negotiation (upstream's userAgentPrefix), so a
    # library built on pybmq can be told apart in broker telemetry.
    user_agent_prefix: str = ""
    # Payloads of at least this many bytes are zlib-compressed (0 = never compress).
    compression_threshold: int = 0
    # A compressed message may inflate to at most this many bytes; a bigger one (or a corrupt
    # one) is delivered with ``error`` set (MessageDecodeError) instead of a payload.
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE
    # A PUT event is cut when it reaches this size; the next post starts another event.
    max_put_event_bytes: int = 1 << 20
    # Control encodings we accept, in order of preference; the broker's list decides the rest.
    encodings: tuple[str, ...] = ("JSON", "BER")
    negotiation_encoding: str = "JSON"
    process_name: str = field(default_factory=_process_name)
    host_name: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)
    session_id: int = 1
    # Resilience: reconnect (with backoff over ``endpoints``) instead of stopping on a lost
    # connection, then reopen queues and retransmit unacknowledged posts with their GUIDs. On by
    # default, as in every official SDK; ``reconnect=False`` ends the session on a lost connection.
    reconnect: bool = True
    endpoints: tuple[str, ...] = ()  # more brokers to try, after the one the session was given
    reconnect_policy: ReconnectPolicy = field(default_factory=ReconnectPolicy)
    # Posts held while disconnected (including those to retransmit): past this many, a post
    # waits for room (``buffer_wait_timeout``) and ``post_nowait`` raises PostBufferFullError.
    max_buffered_posts: int = 10000
    # The byte budget of what a session holds for its broker (Kafka's ``buffer.memory``):
    # payloads not sent yet, the socket's write buffer, and payloads kept to be retransmitted
    # until their ACK. A post is admitted while less than this is held (so one post may go past
    # it, and a payload bigger than the budget is admitted when nothing else is held); past
    # it, ``await queue.post()`` and ``await session.drain()`` wait for room, flushing as they
    # go, up to ``buffer_wait_timeout`` seconds (Kafka's ``max.block.ms``), while reconnecting
    # too, then raise PostBufferFullError; ``post_nowait`` raises it at once.
    max_buffered_bytes: int = 32 * 1024 * 1024
    buffer_wait_timeout: float = 60.0
    # Flow control: the shells stop reading the socket while more messages than this were
    # received and not yet taken by the application (0: the readers' credit, the sum of their
    # max_unconfirmed_messages), and read again once the backlog is down to half of it.
    max_undelivered_messages: int = 0
    # (low, high): on_event gets SlowConsumerHighWatermark once that backlog (messages received
    # and not yet taken by the application) reaches ``high``, then SlowConsumerNormal once it is
    # back down to ``low`` (Java's InboundEventBufferWaterMark; compat's event-queue marks). The
    # default high mark is the default read pause of one queue (its 1000 messages of credit).
    slow_consumer_watermarks: tuple[int, int] = (50, 1000)
    # Authentication (the AUTHENTICATION exchange before negotiation, re-authentication before
    # the broker's lifetimeMs runs out). None: do not authenticate, as the C++ SDK without a
    # credential callback; the broker then applies its anonymous credential.
    credential_provider: CredentialProvider | None = field(default=None, repr=False)
    # TLS: a ready context, or CA/cert/key paths (PEM) to build one; the broker's certificate
    # must match ``tls_server_name`` (default: the host of the broker URL).
    tls: ssl.SSLContext | None = field(default=None, repr=False)
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_server_name: str | None = None
    # The TLS handshake starts right after the TCP connect and must end within this many
    # seconds, else TlsHandshakeError (reason "timeout"): a plain BlazingMQ port never answers a
    # ClientHello, so without this bound a TLS client pointed at one would wait out the whole
    # connect timeout. A handshake on a loopback or LAN link takes milliseconds.
    tls_handshake_timeout: float = 2.0
    # Log session.stats() to the "pybmq.stats" logger every this many seconds (0: never), as
    # the official SDKs' statsDumpInterval.
    stats_dump_interval: float = 0.0
    # Distributed tracing (OpenTelemetry, the ``otel`` extra; see pybmq.client.tracing): off
    # unless ``tracer_provider`` is given or ``tracing`` is True (OpenTelemetry's global
    # provider). A post carries its W3C trace context in the message properties named
    # ``trace_property`` (traceparent) and ``trace_state_property`` (tracestate, when any).
    tracer_provider: Any = field(default=None, repr=False, compare=False)
    tracing: bool = False
    trace_property: str = "traceparent"
    trace_state_property: str = "tracestate"

    @property
    def traced(self) -> bool:
        """True when this session records spans (a provider, or ``tracing=True``)."""
        return self.tracer_provider is not None or self.tracing

    def timeout(self, name: str) -> float:
        """The effective ``<name>_timeout`` (start, open, configure, close, disconnect): the
        field if set, else ``request_timeout`` if set, else the official SDKs' default."""
        value = getattr(self, f"{name}_timeout")
        if value is None:
            value = self.request_timeout
        return float(value if value is not None else _REQUEST_TIMEOUTS[f"{name}_timeout"])

    @property
    def uses_tls(self) -> bool:
        """True when the session connects over TLS (``tls`` or ``tls_ca`` is set)."""
        return self.tls is not None or self.tls_ca is not None

    def __post_init__(self) -> None:
        if self.max_buffered_posts < 1:
            raise UsageError("max_buffered_posts must be >= 1")
        if self.max_buffered_bytes < 1:
            raise UsageError("max_buffered_bytes must be >= 1")
        if not 0 <= self.buffer_wait_timeout < 2**31:
            raise UsageError("buffer_wait_timeout must be >= 0 seconds (0: fail at once)")
        low, high = self.slow_consumer_watermarks
        if not 0 <= low < high:
            raise UsageError("slow_consumer_watermarks must be (low, high) with 0 <= low < high")
        if self.max_undelivered_messages < 0:
            raise UsageError("max_undelivered_messages must be >= 0 (0: the readers' credit)")
        for url in (self.broker_uri, *self.endpoints):
            parse_broker_url(url)
        for name in ("ack_timeout", "stop_timeout", *_REQUEST_TIMEOUTS):
            value = getattr(self, name)
            if value is not None and not 0 < value < 2**31:
                raise UsageError(f"{name} must be > 0 seconds")
        if not 0 < self.tls_handshake_timeout < 2**31:
            raise UsageError("tls_handshake_timeout must be > 0 seconds")
        if not 0 <= self.channel_write_timeout < 2**31:
            raise UsageError("channel_write_timeout must be >= 0 seconds (0: fail at once)")
        if not 0 <= self.linger < 2**31:
            raise UsageError("linger must be >= 0 seconds (0: do not wait for ACKs)")
        if len(self.user_agent_prefix) > 128 or not is_printable_ascii(self.user_agent_prefix):
            raise UsageError("user_agent_prefix must be printable ASCII, at most 128 characters")
        if not 0 < self.max_decompressed_size <= DEFAULT_MAX_DECOMPRESSED_SIZE:
            raise UsageError(
                f"max_decompressed_size must be in 1..{DEFAULT_MAX_DECOMPRESSED_SIZE} bytes"
            )
        if not 0 <= self.stats_dump_interval < 2**31:
            raise UsageError("stats_dump_interval must be >= 0 seconds (0: never)")
        if self.compression_threshold < 0:
            raise UsageError("compression_threshold must be >= 0")
        if not self.encodings or any(e not in ("JSON", "BER") for e in self.encodings):
            raise UsageError(f"encodings must be a non-empty subset of JSON, BER: {self.encodings}")
        if self.negotiation_encoding not in ("JSON", "BER"):
            raise UsageError("negotiation_encoding must be JSON or BER")
        if self.credential_provider is not None and not callable(self.credential_provider):
            raise UsageError("credential_provider must be callable (returning a Credential)")
        if self.tls is not None and self.tls_ca is not None:
            raise UsageError("give tls=SSLContext or tls_ca= (with tls_cert/tls_key), not both")
        if (self.tls_cert is None) != (self.tls_key is None):
            raise UsageError("tls_cert and tls_key go together")
        if not self.trace_property or self.trace_property == self.trace_state_property:
            raise UsageError("trace_property and trace_state_property must be distinct names")
        if self.tls_cert is not None and not self.uses_tls:
            raise UsageError("tls_cert/tls_key need tls_ca (or a tls context)")


class SharedOptions:
    """The session's options as every part of the engine sees them: each part is handed this one
    holder at construction and reads ``current`` when it needs a setting, and
    ``ClientEngine.update_options`` replaces them here, so no part keeps options of its own."""

    __slots__ = ("current",)

    def __init__(self, options: SessionOptions) -> None:
        self.current = options


# The most GUIDs a queue's de-duplication window may remember (about 150 bytes each, so at most
# about 1.5 GB: a bound on a typo, not a recommendation).
MAX_DEDUP_WINDOW = 10_000_000


@dataclass(frozen=True)
class QueueOptions:
    """Consumer flow control and routing (``ConfigureStream``). Producers can keep the defaults."""

    max_unconfirmed_messages: int = 1000  # the official SDKs' default
    max_unconfirmed_bytes: int = 32 * 1024 * 1024
    consumer_priority: int = 0
    # Subscriptions: ``Subscription`` objects (an expression with its own priority and flow
    # control) or bare expressions (e.g. ``"price > 10"``, the queue's priority and flow
    # control); kept as Subscription objects. Empty = one catch-all subscription.
    subscriptions: tuple[Subscription | str, ...] = ()
    # Suspend this queue while the session's host health monitor says unhealthy (the broker
    # delivers nothing to a reader, posts are refused), as the official SDKs do.
    suspends_on_bad_host_health: bool = False
    # Consumer-side de-duplication (client-side only, never sent to the broker): remember the
    # GUIDs of the latest ``dedup_window`` messages delivered on this queue handle, for at most
    # ``dedup_window_age`` seconds after their first delivery, and do not deliver one of them
    # again (a failover can redeliver a message, same GUID, even after its confirm). A repeat
    # of a confirmed message is confirmed again at once; a repeat of one the application still
    # holds is confirmed when the application confirms it. 0: off (every PUSH is delivered).
    # See pybmq.client.dedup.
    dedup_window: int = 0
    dedup_window_age: float = 300.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "subscriptions", as_subscriptions(self.subscriptions))
        if self.max_unconfirmed_messages < 0 or self.max_unconfirmed_bytes < 0:
            raise UsageError("max_unconfirmed_messages/bytes must be >= 0")
        if not -(2**31) < self.consumer_priority < 2**31:
            raise UsageError("consumer_priority must fit in a signed 32-bit int")
        window = self.dedup_window
        if type(window) is not int or not 0 <= window <= MAX_DEDUP_WINDOW:
            raise UsageError(
                f"dedup_window must be a GUID count in 0..{MAX_DEDUP_WINDOW} (0: off), "
                f"got {self.dedup_window!r}"
            )
        if not 0 < self.dedup_window_age < 2**31:
            raise UsageError(f"dedup_window_age must be > 0 seconds, got {self.dedup_window_age!r}")

    @property
    def subscription_objects(self) -> tuple[Subscription, ...]:
        """``subscriptions``, typed as what they are once built: Subscription objects."""
        return cast(tuple[Subscription, ...], self.subscriptions)

    def with_subscriptions(self, *added: Subscription | str) -> QueueOptions:
        """These options with ``added`` subscribed too (configure the queue with the result)."""
        return replace(self, subscriptions=(*self.subscriptions, *as_subscriptions(added)))

    def without_subscriptions(self, *removed: Subscription | str) -> QueueOptions:
        """These options without ``removed`` (configure the queue with the result)."""
        gone = set(as_subscriptions(removed))
        missing = gone - set(self.subscription_objects)
        if missing:
            raise UsageError(f"not subscribed: {', '.join(map(repr, missing))}")
        return replace(
            self, subscriptions=tuple(s for s in self.subscription_objects if s not in gone)
        )


def checked_timeout(timeout: float | None, name: str = "timeout") -> float | None:
    """A per-call ``timeout=`` (seconds, > 0), or None for the session's."""
    if timeout is not None and not 0 < timeout < 2**31:
        raise UsageError(f"{name} must be > 0 seconds (or None: the session's)")
    return timeout


def queue_options(options: QueueOptions | None, values: dict[str, Any]) -> QueueOptions:
    """``options`` itself, or QueueOptions built from keyword values (not both)."""
    if not values:
        return options or QueueOptions()
    if options is not None:
        raise UsageError("give options=QueueOptions(...) or its fields as keywords, not both")
    unknown = set(values) - {f.name for f in fields(QueueOptions)}
    if unknown:
        raise UsageError(f"unknown queue option(s): {', '.join(sorted(unknown))}")
    if "subscriptions" in values:
        values = {**values, "subscriptions": tuple(values["subscriptions"])}
    return QueueOptions(**values)
