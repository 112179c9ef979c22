"""What the client engine tells its shell: immutable event records (the engine's whole vocabulary).

The engine never calls user code. It queues these; the shell drains them with
``ClientEngine.next_events()`` and turns them into future results, callbacks and queue iterators.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

from pybmq.client.subscriptions import Subscription
from pybmq.errors import MessageDecodeError, ProtocolError, PybmqError
from pybmq.generated.wire_codec import AckStatus as WireAckStatus
from pybmq.wire.properties import MessageProperties
from pybmq.wire.push import PushMessage, inflate_properties, inflate_push

__all__ = [
    "WIRE_ACK_STATUS",
    "Ack",
    "AckReceived",
    "AckStatus",
    "CallbackFailed",
    "ChannelHighWatermark",
    "ChannelLowWatermark",
    "ClientEvent",
    "CompressedMessage",
    "ConnectionLost",
    "HealthEvent",
    "HostHealthRestored",
    "HostUnhealthy",
    "Message",
    "MessageReceived",
    "OperationCompleted",
    "QueueReopened",
    "QueueResumed",
    "QueueSuspended",
    "R",
    "Reconnected",
    "ResilienceEvent",
    "ResilienceListener",
    "SessionStarted",
    "SessionStopped",
    "SlowConsumerHighWatermark",
    "SlowConsumerNormal",
    "StateRestored",
    "WatermarkEvent",
    "built_in_order",
]

log = logging.getLogger("pybmq.client.engine")

R = TypeVar("R", bound=tuple[Any, ...])


def built_in_order(record: type[R], *fields: str) -> type[R]:
    """``record``, once ``fields`` are checked to be its fields, in order. The data paths build a
    few records per message with ``tuple.__new__(record, (values...))``, a third of the cost of
    the constructor; each such place declares the order it writes the values in with this, next
    to it, so that a field added, removed or moved in the record fails at import there instead
    of shifting values silently."""
    if tuple(fields) != record._fields:  # type: ignore[attr-defined]
        raise TypeError(
            f"{record.__name__} has the fields {record._fields}, not {fields}"  # type: ignore[attr-defined]
        )
    return record


class AckStatus(enum.Enum):
    """Outcome of a post. Broker codes come from the ACK wire status; the rest are local NACKs."""

    SUCCESS = "SUCCESS"
    LIMIT_MESSAGES = "LIMIT_MESSAGES"
    LIMIT_BYTES = "LIMIT_BYTES"
    STORAGE_FAILURE = "STORAGE_FAILURE"
    NOT_READY = "NOT_READY"
    UNKNOWN = "UNKNOWN"
    # Local outcomes (never on the wire).
    TIMEOUT = "TIMEOUT"
    NOT_CONNECTED = "NOT_CONNECTED"  # the session stopped or lost its connection
    CANCELED = "CANCELED"  # the queue was closed before its ACK came

    @classmethod
    def from_wire(cls, code: int) -> AckStatus:
        """Map the 4-bit ACK status code the way the broker defines it (5 and unknowns: UNKNOWN)."""
        return WIRE_ACK_STATUS.get(code, cls.UNKNOWN)


# The ACK wire codes by the layout spec's AckStatus, each to the outcome of the same name.
WIRE_ACK_STATUS = {int(code): AckStatus[code.name] for code in WireAckStatus}


class Ack(NamedTuple):
    """The result of one post: which message (GUID), on which queue, and whether it was stored.

    A NamedTuple rather than a dataclass: one is made per message, on the hot path."""

    guid: bytes
    queue_uri: str
    status: AckStatus
    correlation_id: int = 0
    local: bool = False  # True when pybmq produced this NACK itself (timeout, session stopped)
    reason: str = ""

    @property
    def ok(self) -> bool:
        """True when the broker accepted the message (status SUCCESS)."""
        return self.status is AckStatus.SUCCESS

    def __repr__(self) -> str:
        origin = "local " if self.local else ""
        why = f" {self.reason!r}" if self.reason else ""
        return f"<Ack {origin}{self.status.value} {self.guid.hex()} {self.queue_uri}{why}>"


class Message(NamedTuple):
    """One PUSHed message as the engine decoded it (``queue_id`` is the engine's queue handle)."""

    queue_id: int
    guid: bytes
    payload: bytes
    properties: MessageProperties | None = None  # parsed lazily on first access
    # Set when the message could not be decoded: ``payload`` is then empty and unavailable, but
    # the message can (and should) still be confirmed.
    error: MessageDecodeError | None = None
    # The subscription (from QueueOptions.subscriptions) this message matched; None when the
    # queue was configured without subscriptions (its one catch-all).
    subscription: Subscription | None = None
    # The application data's size on the wire: properties area and payload, as compressed when
    # the message was (upstream's Message::totalSize).
    total_size: int = 0


class CompressedMessage:
    """A PUSHed message whose data is compressed, with the attributes of ``Message``.

    Nothing is inflated when it arrives: the first read of ``payload``, ``properties`` or
    ``error`` inflates it, to at most ``max_size`` bytes (``zlib``'s ``max_length``, so a bomb
    never allocates beyond the limit). A PUSH event full of bombs therefore costs its compressed
    bytes until the application reads each message. A message that cannot be inflated (corrupt,
    or bigger than ``max_size``) gets ``error`` set and an empty payload instead of failing the
    event, the session and every consumer of the queue."""

    __slots__ = (
        "_decoded",
        "_max_size",
        "_push",
        "guid",
        "queue_id",
        "subscription",
        "total_size",
    )

    def __init__(
        self,
        queue_id: int,
        push: PushMessage,
        max_size: int,
        subscription: Subscription | None = None,
    ) -> None:
        self.queue_id = queue_id
        self.guid = push.guid
        self.subscription = subscription
        self.total_size = len(push.properties_area) + len(push.payload)  # compressed
        self._push: PushMessage | None = push
        self._max_size = max_size
        self._decoded: Message | None = None

    def _decode(self) -> Message:
        decoded = self._decoded
        if decoded is None:
            push = self._push
            assert push is not None
            try:
                area, payload = inflate_push(push, self._max_size)
            except ProtocolError as exc:
                log.warning("message %s: payload cannot be decoded: %s", self.guid.hex(), exc)
                error = MessageDecodeError(
                    f"message {self.guid.hex()}: {exc.reason}", path=exc.path
                )
                decoded = Message(
                    self.queue_id, self.guid, b"", None, error, self.subscription, self.total_size
                )
            else:
                properties = (
                    MessageProperties.decode(area, extended=push.schema_id != 0) if area else None
                )
                decoded = Message(
                    self.queue_id,
                    self.guid,
                    payload,
                    properties,
                    None,
                    self.subscription,
                    self.total_size,
                )
            self._decoded = decoded
            self._push = None  # the compressed bytes are no longer needed
        return decoded

    def properties_alone(self, limit: int) -> MessageProperties | None:
        """The properties, without inflating the payload (what a tracing consumer reads on
        arrival): the area as it came, or in the old format (compressed with the payload) only
        its own bytes, at most ``limit`` of them. ProtocolError if they cannot be had."""
        decoded = self._decoded
        if decoded is not None:
            return decoded.properties
        push = self._push
        assert push is not None
        area = inflate_properties(push, limit)
        return MessageProperties.decode(area, extended=push.schema_id != 0) if area else None

    @property
    def payload(self) -> bytes:
        return self._decode().payload

    @property
    def properties(self) -> MessageProperties | None:
        return self._decode().properties

    @property
    def error(self) -> MessageDecodeError | None:
        return self._decode().error

    @property
    def inflated(self) -> bool:
        """Whether the data was inflated already (a read of payload, properties or error)."""
        return self._decoded is not None


@dataclass(frozen=True, slots=True)
class SessionStarted:
    broker_version: int
    protocol_version: int
    encoding: str  # control-message encoding both sides agreed on: "JSON" or "BER"
    heartbeat_interval_ms: int
    max_missed_heartbeats: int


@dataclass(frozen=True, slots=True)
class SessionStopped:
    """The session is over: stop() completed, negotiation failed or the connection was lost."""

    reason: str
    error: PybmqError | None = None


@dataclass(frozen=True, slots=True)
class OperationCompleted:
    """A user operation (open, configure, close, stop) finished; ``error`` is None on success."""

    op_id: int
    error: PybmqError | None = None


class AckReceived(NamedTuple):
    """A post was resolved. ``context`` is whatever the shell attached to the post."""

    ack: Ack
    context: object


class MessageReceived(NamedTuple):
    message: Message | CompressedMessage


@dataclass(frozen=True, slots=True)
class ConnectionLost:
    """The connection dropped (socket error, EOF or missed heartbeats); reconnecting follows.
    Also sent when a reconnect attempt connects but fails to negotiate."""

    reason: str


@dataclass(frozen=True, slots=True)
class Reconnected:
    """A new connection negotiated; queues are being reopened next."""

    info: SessionStarted


@dataclass(frozen=True, slots=True)
class QueueReopened:
    """One queue that was open before the loss is open again (``error`` None) or was lost."""

    queue_id: int
    uri: str
    error: PybmqError | None = None


@dataclass(frozen=True, slots=True)
class StateRestored:
    """Every queue was reopened (or given up); held and unacknowledged posts are being sent."""


@dataclass(frozen=True, slots=True)
class CallbackFailed:
    """A user callback (``on_ack``) raised; the error was logged and delivery went on."""

    callback: str
    error: Exception


@dataclass(frozen=True, slots=True)
class HostUnhealthy:
    """The session's host health monitor turned unhealthy; sensitive queues are suspending."""


@dataclass(frozen=True, slots=True)
class HostHealthRestored:
    """The host is healthy again and every sensitive queue has resumed (after QueueResumed)."""


@dataclass(frozen=True, slots=True)
class QueueSuspended:
    """A host-health-sensitive queue is suspended (``error`` None), or the broker refused or did
    not answer the request (QueueSuspendFailed in the C++ SDK); either way posts are refused."""

    queue_id: int
    uri: str
    error: PybmqError | None = None


@dataclass(frozen=True, slots=True)
class QueueResumed:
    """A suspended queue works again (``error`` None), or the broker refused or did not answer
    the request that resumes it (QueueResumeFailed); either way posts are accepted again."""

    queue_id: int
    uri: str
    error: PybmqError | None = None


@dataclass(frozen=True, slots=True)
class ChannelHighWatermark:
    """The socket's write buffer reached the session's high watermark (the C++ SDK's
    e_CHANNEL_HIGH_WATERMARK, upstream 656c24b99): data is piling up faster than the broker
    takes it; throttle posting. One event per crossing, each followed by a ChannelLowWatermark
    before the next."""

    buffered: int  # bytes waiting in the write buffer


@dataclass(frozen=True, slots=True)
class ChannelLowWatermark:
    """The write buffer drained to the low watermark after a high one (the C++ SDK's
    e_CHANNEL_LOW_WATERMARK: the channel is writable again and holds nothing back; pybmq never
    keeps posts outside the buffer while it is high): posting may go on."""

    buffered: int


@dataclass(frozen=True, slots=True)
class SlowConsumerHighWatermark:
    """The messages delivered to the session's queues and not yet taken by the application
    reached ``SessionOptions.slow_consumer_watermarks``' high mark (Java's
    InboundEventBufferWaterMark, compat's SlowConsumerHighWaterMark)."""

    undelivered: int


@dataclass(frozen=True, slots=True)
class SlowConsumerNormal:
    """The backlog fell back to the low mark after a SlowConsumerHighWatermark."""

    undelivered: int


WatermarkEvent = (
    ChannelHighWatermark | ChannelLowWatermark | SlowConsumerHighWatermark | SlowConsumerNormal
)

HealthEvent = HostUnhealthy | HostHealthRestored | QueueSuspended | QueueResumed

ClientEvent = (
    SessionStarted
    | SessionStopped
    | OperationCompleted
    | AckReceived
    | MessageReceived
    | ConnectionLost
    | Reconnected
    | QueueReopened
    | StateRestored
    | HostUnhealthy
    | HostHealthRestored
    | QueueSuspended
    | QueueResumed
)

# What a session's on_event receives: connection and reconnect news, host health, channel
# watermarks and the slow-consumer ones.
ResilienceEvent = (
    ConnectionLost
    | Reconnected
    | QueueReopened
    | StateRestored
    | CallbackFailed
    | HealthEvent
    | WatermarkEvent
)
ResilienceListener = Callable[[ResilienceEvent], object]
