"""The official SDK's value types: enums, Timeouts, QueueOptions, SessionOptions, health monitor.

Same constructor signatures, attribute names, equality and ``repr`` as ``blazingmq`` 1.2.2, so code
that builds, compares or prints them behaves the same; ``SessionOptions`` also takes the
``authn_credential_provider`` of the official SDK's next release (its pull request #61), in that
pull request's place among the arguments.
"""

from __future__ import annotations

import enum

from pybmq.client.health import ManualHostHealthMonitor
from pybmq.client.options import QueueOptions as _RuntimeQueueOptions
from pybmq.compat.credentials import AuthnCredentialProvider

__all__ = [
    "QUEUE_OPTION_FIELDS",
    "TIMEOUT_FIELDS",
    "AckStatus",
    "BasicHealthMonitor",
    "CompressionAlgorithmType",
    "PropertyType",
    "QueueOptions",
    "SessionOptions",
    "Timeouts",
]


class _OpaqueEnum(enum.Enum):
    """Members whose values mean nothing (only identity counts); repr ``<Class.NAME>``."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__}.{self.name}>"


class AckStatus(_OpaqueEnum):
    """Outcome of a post; anything but SUCCESS is a failure."""

    SUCCESS = object()
    UNKNOWN = object()
    TIMEOUT = object()
    NOT_CONNECTED = object()
    CANCELED = object()
    NOT_SUPPORTED = object()
    REFUSED = object()
    INVALID_ARGUMENT = object()
    NOT_READY = object()
    LIMIT_BYTES = object()
    LIMIT_MESSAGES = object()
    STORAGE_FAILURE = object()
    UNRECOGNIZED = object()


class CompressionAlgorithmType(_OpaqueEnum):
    """How a session compresses the payloads it posts (ZLIB: payloads of 1 KiB or more)."""

    NONE = object()
    ZLIB = object()


class PropertyType(_OpaqueEnum):
    """Wire types of message property values."""

    BOOL = object()
    CHAR = object()
    SHORT = object()
    INT32 = object()
    INT64 = object()
    STRING = object()
    BINARY = object()


def _value_repr(obj: object, attrs: tuple[str, ...]) -> str:
    shown = ", ".join(f"{a}={getattr(obj, a)!r}" for a in attrs if getattr(obj, a) is not None)
    return f"{type(obj).__name__}({shown})"


class _ValueType:
    """Equality and repr over ``_ATTRS``; ``None`` means "not set" and is left out of the repr."""

    _ATTRS: tuple[str, ...] = ()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, type(self)):
            return False
        return all(getattr(self, a) == getattr(other, a) for a in self._ATTRS)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __repr__(self) -> str:
        return _value_repr(self, self._ATTRS)


# The attributes of each value type, in constructor order (for code that walks them).
TIMEOUT_FIELDS = (
    "connect_timeout",
    "disconnect_timeout",
    "open_queue_timeout",
    "configure_queue_timeout",
    "close_queue_timeout",
)
QUEUE_OPTION_FIELDS = (
    "max_unconfirmed_messages",
    "max_unconfirmed_bytes",
    "consumer_priority",
    "suspends_on_bad_host_health",
)


class Timeouts(_ValueType):
    """Seconds to wait for each kind of request; ``None`` = the default."""

    _ATTRS = TIMEOUT_FIELDS

    def __init__(
        self,
        connect_timeout: float | None = None,
        disconnect_timeout: float | None = None,
        open_queue_timeout: float | None = None,
        configure_queue_timeout: float | None = None,
        close_queue_timeout: float | None = None,
    ) -> None:
        self.connect_timeout = connect_timeout
        self.disconnect_timeout = disconnect_timeout
        self.open_queue_timeout = open_queue_timeout
        self.configure_queue_timeout = configure_queue_timeout
        self.close_queue_timeout = close_queue_timeout


_DEFAULTS = _RuntimeQueueOptions()


class QueueOptions(_ValueType):
    """Consumer settings of a queue; ``None`` = default (open) or unchanged (configure)."""

    _ATTRS = QUEUE_OPTION_FIELDS
    DEFAULT_MAX_UNCONFIRMED_MESSAGES = _DEFAULTS.max_unconfirmed_messages
    DEFAULT_MAX_UNCONFIRMED_BYTES = _DEFAULTS.max_unconfirmed_bytes
    DEFAULT_CONSUMER_PRIORITY = _DEFAULTS.consumer_priority
    DEFAULT_SUSPENDS_ON_BAD_HOST_HEALTH = False

    def __init__(
        self,
        max_unconfirmed_messages: int | None = None,
        max_unconfirmed_bytes: int | None = None,
        consumer_priority: int | None = None,
        suspends_on_bad_host_health: bool | None = None,
    ) -> None:
        self.max_unconfirmed_messages = max_unconfirmed_messages
        self.max_unconfirmed_bytes = max_unconfirmed_bytes
        self.consumer_priority = consumer_priority
        self.suspends_on_bad_host_health = suspends_on_bad_host_health


class BasicHealthMonitor(ManualHostHealthMonitor):
    """Tells the sessions it was given to whether the host is healthy (tests flip it by hand).

    The native client's manual monitor under the official SDK's name: one monitor may serve
    several sessions, compat and native (``AsyncSession(host_health_monitor=...)``) alike."""

    def __repr__(self) -> str:
        return "BasicHealthMonitor()"


class SessionOptions(_ValueType):
    """Every ``Session`` setting in one object, for ``Session.with_options``; ``None`` = default."""

    _ATTRS = (
        "message_compression_algorithm",
        "timeouts",
        "host_health_monitor",
        "authn_credential_provider",
        "num_processing_threads",
        "blob_buffer_size",
        "channel_high_watermark",
        "event_queue_watermarks",
        "stats_dump_interval",
    )

    def __init__(
        self,
        message_compression_algorithm: CompressionAlgorithmType | None = None,
        timeouts: Timeouts | None = None,
        host_health_monitor: BasicHealthMonitor | None = None,
        authn_credential_provider: AuthnCredentialProvider | None = None,
        num_processing_threads: int | None = None,
        blob_buffer_size: int | None = None,
        channel_high_watermark: int | None = None,
        event_queue_watermarks: tuple[int, int] | None = None,
        stats_dump_interval: float | None = None,
    ) -> None:
        self.message_compression_algorithm = message_compression_algorithm
        self.timeouts = timeouts
        self.host_health_monitor = host_health_monitor
        self.authn_credential_provider = authn_credential_provider
        self.num_processing_threads = num_processing_threads
        self.blob_buffer_size = blob_buffer_size
        self.channel_high_watermark = channel_high_watermark
        self.event_queue_watermarks = event_queue_watermarks
        self.stats_dump_interval = stats_dump_interval
