"""Options of the ``blazingmq`` Spark data source, parsed and checked once, on the driver.

Spark hands a data source its options as a case-insensitive mapping of strings. Everything is
validated here, before any task is scheduled, so a typo fails the query at once with a
:class:`~pybmq.errors.UsageError` naming the option instead of failing every task later. The
parsed dataclasses are small and picklable: they travel to the executors inside readers/writers.
No pyspark import here, so the rules are unit-testable without a JVM.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pybmq.client.options import MAX_DEDUP_WINDOW
from pybmq.errors import UsageError
from pybmq.uri import DEFAULT_BROKER, parse_broker_url, parse_queue_uri

__all__ = [
    "ACK_TIMEOUT_MS",
    "AUTH_FILE",
    "AUTH_MATERIAL",
    "AUTH_MECHANISM",
    "BROKER",
    "CLIENT_PREFIX",
    "CLIENT_SETTINGS",
    "COMPRESSION",
    "COMPRESSION_THRESHOLD",
    "CONFIRM",
    "CONNECT_TIMEOUT_MS",
    "CONSUMERS",
    "CONSUMER_IDLE_TIMEOUT_MS",
    "DEDUP_WINDOW",
    "DEDUP_WINDOW_AGE_MS",
    "IDLE_TIMEOUT_MS",
    "MAX_IN_FLIGHT",
    "MAX_MESSAGES",
    "MAX_MESSAGES_PER_BATCH",
    "MAX_PROPERTY_COLUMNS",
    "MAX_UNCONFIRMED",
    "NUM_PARTITIONS",
    "PROPERTY_COLUMNS",
    "PROPERTY_SCHEMA",
    "PUSH_FILTERS",
    "QUEUE",
    "READ_PROPERTY_TYPES",
    "TLS_CA",
    "TLS_CERT",
    "TLS_KEY",
    "TLS_SERVER_NAME",
    "ClientSetting",
    "ReadOptions",
    "Security",
    "StreamReadOptions",
    "Target",
    "WriteOptions",
    "check_broker_url",
    "check_queue_uri",
    "check_write_schema",
    "client_settings",
    "property_schema",
]

# Option names, lower-cased (Spark lower-cases keys before the data source sees them).
BROKER = "broker"
QUEUE = "queue"
COMPRESSION = "compression"
COMPRESSION_THRESHOLD = "compressionthreshold"
MAX_IN_FLIGHT = "maxinflight"
ACK_TIMEOUT_MS = "acktimeoutms"
PROPERTY_COLUMNS = "propertycolumns"
MAX_MESSAGES = "maxmessages"
IDLE_TIMEOUT_MS = "idletimeoutms"
CONFIRM = "confirm"
NUM_PARTITIONS = "numpartitions"
MAX_UNCONFIRMED = "maxunconfirmed"
MAX_MESSAGES_PER_BATCH = "maxmessagesperbatch"
CONNECT_TIMEOUT_MS = "connecttimeoutms"
AUTH_MECHANISM = "authmechanism"
AUTH_MATERIAL = "authmaterial"
AUTH_FILE = "authfile"  # a file each executor reads (BASIC: user:password), re-read at re-auth
TLS_CA = "tlsca"
TLS_CERT = "tlscert"
TLS_KEY = "tlskey"
TLS_SERVER_NAME = "tlsservername"
PROPERTY_SCHEMA = "propertyschema"  # read: properties as typed columns, "name type, ..."
PUSH_FILTERS = "pushfilters"
CONSUMERS = "consumers"  # stream read: "driver" (one consumer) or "executors" (one per partition)
CONSUMER_IDLE_TIMEOUT_MS = "consumeridletimeoutms"
# Readers: the consumer's de-duplication window (QueueOptions.dedup_window, dedup_window_age).
DEDUP_WINDOW = "dedupwindow"
DEDUP_WINDOW_AGE_MS = "dedupwindowagems"
_DEDUP = (DEDUP_WINDOW, DEDUP_WINDOW_AGE_MS)
_SECURITY = (AUTH_MECHANISM, AUTH_MATERIAL, AUTH_FILE, TLS_CA, TLS_CERT, TLS_KEY, TLS_SERVER_NAME)

_KNOWN = {
    BROKER,
    QUEUE,
    COMPRESSION,
    COMPRESSION_THRESHOLD,
    MAX_IN_FLIGHT,
    ACK_TIMEOUT_MS,
    PROPERTY_COLUMNS,
    MAX_MESSAGES,
    IDLE_TIMEOUT_MS,
    CONFIRM,
    NUM_PARTITIONS,
    MAX_UNCONFIRMED,
    MAX_MESSAGES_PER_BATCH,
    CONNECT_TIMEOUT_MS,
    PROPERTY_SCHEMA,
    PUSH_FILTERS,
    CONSUMERS,
    CONSUMER_IDLE_TIMEOUT_MS,
    *_DEDUP,
    *_SECURITY,
    "path",  # Spark adds it for load(path)/save(path); we do not use it
    "checkpointlocation",  # a streaming query option that reaches the sink too
}


def _int(options: Mapping[str, str], key: str, default: int, *, minimum: int) -> int:
    raw = options.get(key)
    if raw is None:
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise UsageError(f"option {key!r} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise UsageError(f"option {key!r} must be >= {minimum}, got {value}")
    return value


def _bool(options: Mapping[str, str], key: str, default: bool) -> bool:
    raw = options.get(key)
    if raw is None:
        return default
    text = str(raw).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise UsageError(f"option {key!r} must be true or false, got {raw!r}")


def _millis(options: Mapping[str, str], key: str) -> float:
    return _int(options, key, 0, minimum=1) / 1000


def _count(options: Mapping[str, str], key: str) -> int:
    return _int(options, key, 0, minimum=1)


def _flag(options: Mapping[str, str], key: str) -> bool:
    return _bool(options, key, False)


CLIENT_PREFIX = "client."


@dataclass(frozen=True)
class ClientSetting:
    """One ``client.*`` option: a :class:`pybmq.SessionOptions` field set from a Spark option.

    A new client setting (authentication, TLS, ...) is one row of :data:`CLIENT_SETTINGS` and
    one row of the table in docs/guide/spark.md (a test keeps the two equal)."""

    name: str  # as documented; Spark matches it case-insensitively
    field: str  # the SessionOptions field
    parse: Callable[[Mapping[str, str], str], Any]
    meaning: str


CLIENT_SETTINGS = (
    ClientSetting(
        "client.requestTimeoutMs", "request_timeout", _millis, "open/configure/close responses"
    ),
    ClientSetting("client.stopTimeoutMs", "stop_timeout", _millis, "bound on stopping a session"),
    ClientSetting(
        "client.maxPutEventBytes", "max_put_event_bytes", _count, "size at which a PUT event is cut"
    ),
    ClientSetting("client.reconnect", "reconnect", _flag, "reconnect on a lost connection"),
    ClientSetting(
        "client.maxBufferedPosts", "max_buffered_posts", _count, "posts held while disconnected"
    ),
)
_CLIENT_BY_KEY = {setting.name.lower(): setting for setting in CLIENT_SETTINGS}


def client_settings(options: Mapping[str, str]) -> tuple[tuple[str, Any], ...]:
    """The ``client.*`` options as (SessionOptions field, value) pairs, checked here."""
    keys = sorted(k.lower() for k in options if k.lower().startswith(CLIENT_PREFIX))
    unknown = [k for k in keys if k not in _CLIENT_BY_KEY]
    if unknown:
        known = ", ".join(setting.name for setting in CLIENT_SETTINGS)
        raise UsageError(f"unknown client option(s) {unknown}; known: {known}")
    lowered = {k.lower(): v for k, v in options.items()}
    return tuple(
        (_CLIENT_BY_KEY[key].field, _CLIENT_BY_KEY[key].parse(lowered, key)) for key in keys
    )


def check_broker_url(url: str) -> str:
    """``tcp://host:port`` or a clear UsageError naming the option."""
    try:
        parse_broker_url(url, default_port=None)
    except UsageError:
        raise UsageError(f"option 'broker' must look like tcp://host:port, got {url!r}") from None
    return url


def check_queue_uri(uri: str) -> str:
    """``bmq://domain/queue[?id=app]`` or a clear UsageError naming the option."""
    if parse_queue_uri(uri) is None:
        raise UsageError(f"option 'queue' must look like bmq://domain/queue, got {uri!r}")
    return uri


# Read property columns: their Spark SQL type → which property values fill them (else null).
READ_PROPERTY_TYPES = {
    "boolean": ("BOOL",),
    "bigint": ("CHAR", "SHORT", "INT32", "INT64"),
    "string": ("STRING",),
    "binary": ("BINARY",),
}
MAX_PROPERTY_COLUMNS = 64  # a message carries at most 64 properties (bmqp)
_BASE_COLUMNS = ("queue", "guid", "payload", "properties", "typed_properties")


def property_schema(options: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """``propertySchema`` ("price bigint, region string"): (column = property name, SQL type)."""
    columns: list[tuple[str, str]] = []
    for item in str(options.get(PROPERTY_SCHEMA, "")).split(","):
        if not item.strip():
            continue
        parts = item.split()
        if len(parts) != 2 or parts[1].lower() not in READ_PROPERTY_TYPES:
            raise UsageError(
                f"option 'propertySchema' takes 'name type' pairs with a type in "
                f"{sorted(READ_PROPERTY_TYPES)}, got {item.strip()!r}"
            )
        name = parts[0]
        if name in _BASE_COLUMNS or name in dict(columns):
            raise UsageError(f"option 'propertySchema' names column {name!r} twice")
        columns.append((name, parts[1].lower()))
    if len(columns) > MAX_PROPERTY_COLUMNS:
        raise UsageError(f"option 'propertySchema' has more than {MAX_PROPERTY_COLUMNS} columns")
    return tuple(columns)


@dataclass(frozen=True)
class Security:
    """Authentication and TLS of every executor's session. Paths are read on the executors
    (they must exist there); ``authMaterial`` travels in the plan, so prefer ``authFile``."""

    auth_mechanism: str | None = None
    auth_material: bytes | None = field(default=None, repr=False)
    auth_file: str | None = None
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_server_name: str | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> Security:
        values = {key: options.get(key) or None for key in _SECURITY}
        if (values[AUTH_MATERIAL] or values[AUTH_FILE]) and not values[AUTH_MECHANISM]:
            raise UsageError("options 'authMaterial'/'authFile' need 'authMechanism'")
        if values[AUTH_MATERIAL] and values[AUTH_FILE]:
            raise UsageError("give 'authMaterial' or 'authFile', not both")
        if bool(values[TLS_CERT]) != bool(values[TLS_KEY]):
            raise UsageError("options 'tlsCert' and 'tlsKey' go together")
        if values[TLS_CERT] and not values[TLS_CA]:
            raise UsageError("options 'tlsCert'/'tlsKey' need 'tlsCa'")
        material = values[AUTH_MATERIAL]
        return cls(
            auth_mechanism=values[AUTH_MECHANISM],
            auth_material=material.encode() if material else None,
            auth_file=values[AUTH_FILE],
            tls_ca=values[TLS_CA],
            tls_cert=values[TLS_CERT],
            tls_key=values[TLS_KEY],
            tls_server_name=values[TLS_SERVER_NAME],
        )

    def session_options(self) -> dict[str, Any]:
        """SessionOptions keywords, built on the executor (the provider is not pickled)."""
        from pathlib import Path

        from pybmq.client.options import Credential

        options: dict[str, Any] = {
            name: getattr(self, name)
            for name in ("tls_ca", "tls_cert", "tls_key", "tls_server_name")
            if getattr(self, name)
        }
        mechanism = self.auth_mechanism
        if mechanism is not None:
            material, path = self.auth_material or b"", self.auth_file

            def provider() -> Credential:
                data = Path(path).read_bytes().rstrip(b"\r\n") if path else material
                return Credential(mechanism, data)

            options["credential_provider"] = provider
        return options


@dataclass(frozen=True)
class Target:
    """Which broker and queue, how long to wait for the connection, the ``client.*`` settings,
    its security and, for a reader, its de-duplication window (``dedupWindow`` GUIDs for
    ``dedupWindowAgeMs``; 0: off)."""

    broker: str
    queue: str
    connect_timeout: float
    client: tuple[tuple[str, Any], ...] = ()
    security: Security = field(default_factory=Security)
    dedup_window: int = 0
    dedup_window_age: float = 300.0

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> Target:
        unknown = sorted(
            k
            for k in options
            if k.lower() not in _KNOWN and not k.lower().startswith(CLIENT_PREFIX)
        )
        if unknown:
            raise UsageError(f"unknown option(s) {unknown} for format 'blazingmq'")
        queue = options.get(QUEUE)
        if not queue:
            raise UsageError("option 'queue' is required (e.g. bmq://bmq.test.mem.priority/q)")
        broker = options.get(BROKER) or DEFAULT_BROKER
        timeout_ms = _int(options, CONNECT_TIMEOUT_MS, 10_000, minimum=1)
        window = _int(options, DEDUP_WINDOW, 0, minimum=0)
        if window > MAX_DEDUP_WINDOW:
            raise UsageError(f"option 'dedupWindow' must be <= {MAX_DEDUP_WINDOW}, got {window}")
        age_ms = _int(options, DEDUP_WINDOW_AGE_MS, 300_000, minimum=1)
        if age_ms >= 2**31 * 1000:
            raise UsageError(f"option 'dedupWindowAgeMs' must be < {2**31 * 1000}, got {age_ms}")
        return cls(
            check_broker_url(broker),
            check_queue_uri(queue),
            timeout_ms / 1000,
            client_settings(options),
            Security.parse(options),
            window,
            age_ms / 1000,
        )


@dataclass(frozen=True)
class WriteOptions:
    """How a write task posts: compression, in-flight window, ACK deadline, property columns."""

    target: Target
    compression_threshold: int  # 0 = never compress
    max_in_flight: int
    ack_timeout: float
    property_columns: tuple[str, ...]

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> WriteOptions:
        target = Target.parse(options)
        given = sorted(k for k in options if k.lower() in _DEDUP)
        if given:
            raise UsageError(f"option(s) {given} are for reading, not writing")
        compression = str(options.get(COMPRESSION, "none")).strip().lower()
        if compression not in ("none", "zlib"):
            raise UsageError(f"option 'compression' must be none or zlib, got {compression!r}")
        threshold = _int(options, COMPRESSION_THRESHOLD, 1024, minimum=1)
        columns = tuple(
            c.strip() for c in str(options.get(PROPERTY_COLUMNS, "")).split(",") if c.strip()
        )
        if len(set(columns)) != len(columns):
            raise UsageError(f"option 'propertyColumns' names a column twice: {columns}")
        return cls(
            target=target,
            compression_threshold=threshold if compression == "zlib" else 0,
            max_in_flight=_int(options, MAX_IN_FLIGHT, 1000, minimum=1),
            ack_timeout=_int(options, ACK_TIMEOUT_MS, 30_000, minimum=1) / 1000,
            property_columns=columns,
        )


@dataclass(frozen=True)
class ReadOptions:
    """How a batch read consumes: how many messages, when to stop, whether to confirm."""

    target: Target
    max_messages: int  # over all partitions
    idle_timeout: float
    confirm: bool
    num_partitions: int
    property_schema: tuple[tuple[str, str], ...] = ()
    push_filters: bool = False
    subscription: str = ""  # set by pushFilters: the broker's filter ("" = every message)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> ReadOptions:
        target = Target.parse(options)
        confirm = _bool(options, CONFIRM, False)
        partitions = _int(options, NUM_PARTITIONS, 1, minimum=1)
        if partitions > 1 and not confirm:
            # An unconfirmed message goes back to the queue when its reader closes, and the broker
            # then pushes it to a reader that is still open: several peeking readers see duplicates.
            raise UsageError("option 'numPartitions' > 1 needs 'confirm' = true")
        return cls(
            target=target,
            max_messages=_int(options, MAX_MESSAGES, 10_000, minimum=1),
            idle_timeout=_int(options, IDLE_TIMEOUT_MS, 1000, minimum=1) / 1000,
            confirm=confirm,
            num_partitions=partitions,
            property_schema=property_schema(options),
            push_filters=_bool(options, PUSH_FILTERS, False),
        )


@dataclass(frozen=True)
class StreamReadOptions:
    """How the driver-side stream consumer sizes its buffer and its micro-batches."""

    target: Target
    max_unconfirmed: int  # broker-side credit: the most messages buffered and not yet committed
    max_messages_per_batch: int  # 0 = everything buffered
    num_partitions: int
    idle_timeout: float = 1.0  # Trigger.AvailableNow: pushes quiet this long = all available
    property_schema: tuple[tuple[str, str], ...] = ()
    in_executors: bool = False  # consumers=executors: sticky consumers in the Python workers
    consumer_idle_timeout: float = 60.0  # an executor consumer unused this long is closed

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> StreamReadOptions:
        target = Target.parse(options)
        per_batch = _int(options, MAX_MESSAGES_PER_BATCH, 0, minimum=0)
        max_unconfirmed = _int(options, MAX_UNCONFIRMED, 10_000, minimum=1)
        return cls(
            target=target,
            max_unconfirmed=max_unconfirmed,
            max_messages_per_batch=per_batch,
            num_partitions=_int(options, NUM_PARTITIONS, 1, minimum=1),
            idle_timeout=_int(options, IDLE_TIMEOUT_MS, 1000, minimum=1) / 1000,
            property_schema=property_schema(options),
            in_executors=_consumers(options) == "executors",
            consumer_idle_timeout=_int(options, CONSUMER_IDLE_TIMEOUT_MS, 60_000, minimum=1) / 1000,
        )


def _consumers(options: Mapping[str, str]) -> str:
    where = str(options.get(CONSUMERS, "driver")).strip().lower()
    if where not in ("driver", "executors"):
        raise UsageError(f"option 'consumers' must be driver or executors, got {where!r}")
    return where


def check_write_schema(names: Sequence[str], property_columns: Sequence[str]) -> None:
    """Fail on the driver, before any task runs, when the DataFrame cannot be written."""
    if "payload" not in names:
        raise UsageError(f"writing to BlazingMQ needs a 'payload' column; columns are {names}")
    missing = [c for c in property_columns if c not in names]
    if missing:
        raise UsageError(f"propertyColumns {missing} are not columns of the DataFrame ({names})")
    if "payload" in property_columns:
        raise UsageError("'payload' cannot also be a property column")
