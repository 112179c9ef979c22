"""``Session``: the official SDK's blocking, callback-driven session, on pybmq's asyncio client.

Threads, as in the official SDK: the caller's threads make the calls; the I/O runs on a background
thread (an asyncio loop running :class:`pybmq.client.aio.AsyncSession`); every user callback — session
events, ``on_message`` and ``on_ack`` — runs on ONE other thread, in the order things happened.
``post`` and ``confirm`` never wait for the network (they are checked on the caller's thread, then
handed to the loop), so they may be called from callbacks. ``open_queue``, ``configure_queue``,
``close_queue`` and ``stop`` wait for the broker; where the official SDK deadlocks when they are
called from a callback, this one raises :class:`~pybmq.compat.exceptions.Error`.

Queues are named by their URI, as in the official API; the core's queue table maps each URI to
the pybmq queue behind it and the options the user asked for.

The ``Session`` holds parts, one job each, none inheriting another: the shared state and loop
plumbing (``core.SessionCore``, public as ``Session.core``: pybmq's addition, for diagnostics),
host health (``health.HostHealth``), queue operations (``queue_ops.QueueOperations``); here are
connecting, posting, confirming and stopping. Posts, confirms and callbacks cross threads in
``dataplane`` and ``callbacks``; ``checks`` holds defaults, argument checks and error wording,
``lifetime`` the weak references the loop holds the session by.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import ssl
import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from pybmq.client.aio import AsyncSession
from pybmq.client.dropped import weak_method
from pybmq.client.events import ConnectionLost as RuntimeConnectionLost
from pybmq.client.events import QueueReopened as RuntimeQueueReopened
from pybmq.client.events import Reconnected as RuntimeReconnected
from pybmq.client.events import StateRestored as RuntimeStateRestored
from pybmq.client.options import SessionOptions as RuntimeSessionOptions
from pybmq.client.tls import client_tls_context
from pybmq.compat import session_events as ev
from pybmq.compat.callbacks import EVENT, CallbackThread
from pybmq.compat.checks import (
    CONTROL_RESERVE,
    DEFAULT_CHANNEL_HIGH_WATERMARK,
    DEFAULT_EVENT_QUEUE_WATERMARKS,
    DEFAULT_SECONDS,
    DEFAULT_TIMEOUT,
    check_int_option,
    check_positive_option,
    seconds_or_none,
)
from pybmq.compat.core import SessionCore
from pybmq.compat.credentials import AuthnCredentialProvider, credential_provider
from pybmq.compat.exceptions import BrokerTimeoutError, Error
from pybmq.compat.health import HostHealth
from pybmq.compat.lifetime import watch_connection
from pybmq.compat.messages import (
    Ack,
    Message,
    MessageHandle,
    PropertyTypeDict,
    PropertyValueDict,
    received_of,
    to_wire_properties,
)
from pybmq.compat.queue_ops import QueueOperations
from pybmq.compat.values import (
    TIMEOUT_FIELDS,
    BasicHealthMonitor,
    CompressionAlgorithmType,
    QueueOptions,
    SessionOptions,
    Timeouts,
)
from pybmq.errors import (
    BrokerError,
    PybmqError,
    RequestTimeoutError,
    TlsHandshakeError,
    UsageError,
)
from pybmq.generated.wire_codec import PUT_MAX_PAYLOAD_SIZE_SOFT
from pybmq.uri import DEFAULT_BROKER, parse_broker_url
from pybmq.wire.properties import MessageProperties

# PutHeader::k_MAX_PAYLOAD_SIZE_SOFT: the payload and its properties as sent; over it the C++
# core refuses the message at the call (PAYLOAD_TOO_BIG). Only a message above _LARGE can be near.
_MAX_APP_DATA = PUT_MAX_PAYLOAD_SIZE_SOFT
_LARGE = 1024 * 1024


def _app_data_size(payload: bytes, properties: MessageProperties | None) -> int:
    return len(payload) + (len(properties.encode()) if properties else 0)


log = logging.getLogger("pybmq.compat")

OnSessionEvent = Callable[[ev.SessionEvent], None]
OnMessage = Callable[[Message, MessageHandle], None]
OnAck = Callable[[Ack], None]


_live_sessions: weakref.WeakSet[Session] = weakref.WeakSet()


@atexit.register
def _stop_live_sessions() -> None:
    """Like the official SDK: a session still running at exit is stopped (Disconnect sent)."""
    for session in list(_live_sessions):
        with contextlib.suppress(Exception):
            session.stop()


class Session:
    """A connection to a BlazingMQ broker with the official ``blazingmq.Session`` API.

    The constructor connects (retrying until the connect timeout, like the C++ SDK) and raises
    ``BrokerTimeoutError`` if it cannot. See the module docstring for the threading rules and the
    guide's compat page (docs/guide/compat.md) for what each option means here.
    """

    def __init__(
        self,
        on_session_event: OnSessionEvent,
        on_message: OnMessage | None = None,
        broker: str = DEFAULT_BROKER,
        message_compression_algorithm: CompressionAlgorithmType = CompressionAlgorithmType.NONE,
        timeout: Timeouts | float = DEFAULT_TIMEOUT,
        host_health_monitor: BasicHealthMonitor | None = None,
        authn_credential_provider: AuthnCredentialProvider | None = None,
        num_processing_threads: int | None = None,
        blob_buffer_size: int | None = None,
        channel_high_watermark: int | None = None,
        event_queue_watermarks: tuple[int, int] | None = None,
        stats_dump_interval: float | None = None,
        *,
        tracer_provider: Any = None,
        tls_ca: str | None = None,
        tls_server_name: str | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        """``authn_credential_provider``: the official SDK's next argument (its pull request
        #61; see ``pybmq.compat.credentials``), called for every (re-)authentication.

        pybmq's additions, keyword-only: ``tracer_provider`` (an OpenTelemetry
        TracerProvider, the ``otel`` extra) traces the session as
        ``pybmq.SessionOptions(tracer_provider=...)`` does: spans per post, delivered message
        and confirm, W3C trace context in the ``traceparent`` property, and spans for start,
        stop, queue operations and reconnects. ``tls_ca`` (a CA's PEM file) or ``tls`` (an
        ``ssl.SSLContext``) connect with TLS, the broker's certificate checked against
        ``tls_server_name`` (default: the broker URL's host); a failed handshake raises
        ``Error`` at once, naming why, instead of retrying until the connect timeout."""
        if host_health_monitor is not None and not isinstance(
            host_health_monitor, BasicHealthMonitor
        ):
            raise TypeError(
                "host_health_monitor must be None or an instance of blazingmq.BasicHealthMonitor"
            )
        if not isinstance(timeout, Timeouts):
            timeout = Timeouts(None, None, timeout, timeout, timeout)
        seconds = {a: seconds_or_none(getattr(timeout, a)) for a in TIMEOUT_FIELDS}
        if stats_dump_interval is not None and not 0.0 <= stats_dump_interval < 2**63:
            raise ValueError(f"stats_dump_interval must be nonnegative, was {stats_dump_interval}")
        if on_session_event is None:
            raise TypeError("Argument 'on_session_event' must not be None")
        if message_compression_algorithm is None:
            raise TypeError("Argument 'message_compression_algorithm' must not be None")
        if not isinstance(message_compression_algorithm, CompressionAlgorithmType):
            raise TypeError(f"{message_compression_algorithm!r} is not a CompressionAlgorithmType")
        for name, value in (
            ("num_processing_threads", num_processing_threads),
            ("blob_buffer_size", blob_buffer_size),
            ("channel_high_watermark", channel_high_watermark),
        ):
            check_int_option(name, value)
            check_positive_option(name, value)
        watermarks = DEFAULT_EVENT_QUEUE_WATERMARKS
        if event_queue_watermarks is not None:
            low, high = event_queue_watermarks
            check_int_option("event_queue_watermarks", low)
            check_int_option("event_queue_watermarks", high)
            if not low < high:  # the C++ core aborts the process here
                raise ValueError(
                    f"event_queue_watermarks must be (low, high) with low < high, was {(low, high)}"
                )
            watermarks = (low, high)
        provider = credential_provider(authn_credential_provider)
        # The official SDK lets the environment choose the broker.
        broker = os.environ.get("BMQ_BROKER_URI", broker)
        if isinstance(broker, bytes):
            broker = broker.decode()
        timeouts = Timeouts(
            **{a: seconds[a] or getattr(DEFAULT_SECONDS, a) for a in TIMEOUT_FIELDS}
        )
        self._connected = False
        self._outage = False  # between a ConnectionLost and its StateRestored
        high_water = channel_high_watermark or DEFAULT_CHANNEL_HIGH_WATERMARK
        # pybmq's addition to the official API: the parts behind this session (see above).
        self.core = core = SessionCore(
            timeouts,
            on_message,
            host_health_monitor,
            CallbackThread(on_session_event, watermarks),
            max(high_water - CONTROL_RESERVE, 64 * 1024),
        )
        self._health = HostHealth(core)
        self._queue_ops = QueueOperations(core, self._health, weakref.ref(self))
        try:
            parse_broker_url(broker)
        except UsageError:
            core.shutdown()
            raise Error("Failed to start session: INVALID_ARGUMENT") from None
        try:
            options = RuntimeSessionOptions(
                request_timeout=timeouts.open_queue_timeout,  # type: ignore[arg-type]
                stop_timeout=timeouts.disconnect_timeout,  # type: ignore[arg-type]
                compression_threshold=(
                    1024 if message_compression_algorithm is CompressionAlgorithmType.ZLIB else 0
                ),
                # Like the official SDK: reconnect on its own and reopen the open queues.
                reconnect=True,
                # The official Python SDK's recorded behaviour (tests/compat parity): a timed-out
                # open leaves the channel up and the session usable.
                close_channel_on_timeout=False,
                stats_dump_interval=stats_dump_interval or 0.0,
                tracer_provider=tracer_provider,
                max_buffered_bytes=core.plane.budget,
                credential_provider=provider,
                tls=tls,
                tls_ca=tls_ca,
                tls_server_name=tls_server_name,
            )
            client_tls_context(options)  # a TLS file that cannot be read: now, not retried
        except UsageError as exc:
            core.shutdown()
            raise Error(f"Failed to start session: {exc}") from None
        try:
            core.inner = core.run(self._connect(broker, options, core.high_water))
        except BaseException:
            core.shutdown()
            raise
        self._connected = True
        _live_sessions.add(self)
        core.callbacks.submit_event(ev.Connected(None))
        if host_health_monitor is not None:
            host_health_monitor.subscribe(self._on_host_health)
            if not host_health_monitor.healthy:
                core.callbacks.submit_event(ev.HostUnhealthy(None))

    @classmethod
    def with_options(
        cls,
        on_session_event: OnSessionEvent,
        on_message: OnMessage | None = None,
        broker: str = DEFAULT_BROKER,
        session_options: SessionOptions = SessionOptions(),  # noqa: B008  # immutable in practice, as upstream
        **additions: Any,
    ) -> Session:
        """A session configured by a :class:`SessionOptions` (options left ``None`` = defaults);
        ``additions``: pybmq's keyword-only arguments of the constructor (``tls_ca``, ...)."""
        o = session_options
        return cls(
            on_session_event,
            on_message,
            broker,
            o.message_compression_algorithm or CompressionAlgorithmType.NONE,
            DEFAULT_TIMEOUT if o.timeouts is None else o.timeouts,
            o.host_health_monitor,
            o.authn_credential_provider,
            o.num_processing_threads,
            o.blob_buffer_size,
            o.channel_high_watermark,
            o.event_queue_watermarks,
            o.stats_dump_interval,
            **additions,
        )

    # ------------------------------------------------------------------ queues

    def open_queue(
        self,
        queue_uri: str,
        read: bool = False,
        write: bool = False,
        options: QueueOptions = QueueOptions(),  # noqa: B008  # never mutated here
        timeout: float = DEFAULT_TIMEOUT,
        *,
        dedup_window: int = 0,
        dedup_window_age: float = 300.0,
    ) -> None:
        """Open ``queue_uri`` for reading (messages go to ``on_message``) and/or writing.

        ``dedup_window`` and ``dedup_window_age`` (pybmq's addition, not in the official SDK; a
        reader's): remember the GUIDs of the latest ``dedup_window`` messages delivered, for up
        to ``dedup_window_age`` seconds, and do not hand one to ``on_message`` again (a cluster
        failover can redeliver a message with the same GUID); 0: off, as upstream. See
        ``pybmq.QueueOptions.dedup_window``."""
        self._queue_ops.open_queue(
            queue_uri, read, write, options, timeout, (dedup_window, dedup_window_age)
        )

    def configure_queue(
        self, queue_uri: str, options: QueueOptions, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        """Change the options of an open queue; options left ``None`` keep their value."""
        self._queue_ops.configure_queue(queue_uri, options, timeout)

    def get_queue_options(self, queue_uri: str) -> QueueOptions:
        """The options of an open queue (a write-only queue reports no consumer settings)."""
        return self._queue_ops.get_queue_options(queue_uri)

    def close_queue(self, queue_uri: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Close an open queue; its URI can then be opened again."""
        self._queue_ops.close_queue(queue_uri, timeout)

    def _on_host_health(self, healthy: bool) -> None:
        """The monitor's news (it holds the session through this, as it always did)."""
        self._health.on_host_health(healthy)

    # ------------------------------------------------------------------ connecting

    async def _connect(
        self, broker: str, options: RuntimeSessionOptions, high_water: int
    ) -> AsyncSession:
        """Connect and negotiate, retrying a refused connection until the connect timeout."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.core.timeouts.connect_timeout  # type: ignore[operator]
        delay = 0.05
        while True:
            remaining = deadline - loop.time()
            session = AsyncSession(
                broker,
                options=options,
                connect_timeout=max(remaining, 0.001),
                write_high_water=high_water,
                on_event=weak_method(self._on_resilience_event),
            )
            try:
                await self._start_once(session, max(remaining, 0.001))
            except (asyncio.TimeoutError, RequestTimeoutError):
                with contextlib.suppress(Exception):
                    await session.stop()
                raise BrokerTimeoutError("Failed to start session: TIMEOUT") from None
            except BrokerError as exc:
                raise Error(f"Failed to start session: {exc.category.removeprefix('E_')}") from exc
            except TlsHandshakeError as exc:
                # pybmq's TLS: a refused certificate or a port that speaks no TLS does not
                # change by trying again; say so now.
                raise Error(f"Failed to start session: {exc}") from exc
            except PybmqError as exc:
                # Refused or dropped connection: the C++ SDK keeps trying until its deadline.
                left = deadline - loop.time()
                if left <= 0.001:
                    raise BrokerTimeoutError("Failed to start session: TIMEOUT") from exc
                await asyncio.sleep(min(delay, left))
                delay = min(delay * 2, 1.0)
                continue
            self.core.tasks.add(
                loop.create_task(watch_connection(weak_method(self._connection_ended), session))
            )
            return session

    @staticmethod
    async def _start_once(session: AsyncSession, timeout: float) -> None:
        await asyncio.wait_for(session.start(), timeout)

    def _on_resilience_event(self, event: object) -> None:
        """On the loop: the engine's reconnect events as the official SDK's session events, in
        its order (ConnectionLost, Reconnected, QueueReopened per queue, StateRestored)."""
        compat_event: ev.SessionEvent
        if isinstance(event, RuntimeConnectionLost):
            if self._outage:  # a failed attempt during the same outage: not a new loss
                return
            self._outage = True
            compat_event = ev.ConnectionLost(None)
        elif isinstance(event, RuntimeReconnected):
            compat_event = ev.Reconnected(None)
        elif isinstance(event, RuntimeQueueReopened):
            if event.error is None:
                compat_event = ev.QueueReopened(event.uri)
            else:
                compat_event = ev.QueueReopenFailed(event.uri, str(event.error))
        elif isinstance(event, RuntimeStateRestored):
            self._outage = False
            compat_event = ev.StateRestored(None)
        else:
            return
        self.core.plane.hand_over((EVENT, compat_event))

    def _connection_ended(self, session: AsyncSession) -> None:
        """On the loop: report a connection that ends without stop() as ConnectionLost."""
        core = self.core
        if not core.stopped:
            core.lost = True
            if self._outage:  # ConnectionLost was already reported
                return
            log.warning("connection to the broker lost: %s", session.stop_reason)
            core.plane.hand_over((EVENT, ev.ConnectionLost(None)))

    async def _hand_over_now(self) -> None:
        self.core.plane.flush()

    # ------------------------------------------------------------------ messages

    def post(
        self,
        queue_uri: str,
        message: bytes,
        properties: PropertyValueDict | None = None,
        property_type_overrides: PropertyTypeDict | None = None,
        on_ack: OnAck | None = None,
    ) -> None:
        """Post ``message`` to an open writer queue without waiting; ``on_ack`` gets the Ack."""
        wire_properties = None
        if properties or property_type_overrides:
            wire_properties = to_wire_properties(properties, property_type_overrides)
        if type(message) is not bytes:
            raise TypeError(
                f"Argument 'payload' has incorrect type (expected bytes, got {type(message).__name__})"
            )
        core = self.core
        if core.stopped or core.lost:
            core.check_running()
        # The common case in one dict read; anything else (bytes, not open) the full lookup.
        queue = core.queues.get(queue_uri) if type(queue_uri) is str else None
        if queue is None or queue.inner is None:
            queue = core.queue(queue_uri)
        if queue.invalid:
            raise Error("Failed to construct message: QUEUE_INVALID")
        if not queue.write:
            raise Error("Failed to construct message: QUEUE_READONLY")
        if queue.suspended:
            raise Error("Failed to construct message: QUEUE_SUSPENDED")
        if not message:
            raise Error("Failed to construct message: PAYLOAD_EMPTY")
        if len(message) > _LARGE and _app_data_size(message, wire_properties) > _MAX_APP_DATA:
            raise Error("Failed to construct message: PAYLOAD_TOO_BIG")
        inner = queue.inner
        assert inner is not None
        core.plane.post(inner, message, wire_properties, on_ack)

    def confirm(self, message: Message) -> None:
        """Confirm a received message (``MessageHandle.confirm`` does the same)."""
        queue_uri = message.queue_uri
        core = self.core
        if core.stopped or core.lost:
            core.check_running()
        queue = core.queues.get(queue_uri) if type(queue_uri) is str else None
        if queue is None or queue.inner is None:
            queue = core.queue(queue_uri)
        core.plane.confirm(queue.inner, received_of(message))

    # ------------------------------------------------------------------ stop

    def stop(self) -> None:
        """Close the connection (Disconnect) and end the session's threads. Idempotent; the
        ``Disconnected`` event is delivered before this returns."""
        core = self.core
        if core.stopped:
            return
        core.blocking_call_allowed("stop")
        core.stopped = True
        _live_sessions.discard(self)
        inner = core.inner
        try:
            if inner is not None:
                with contextlib.suppress(PybmqError):
                    core.run(inner.stop())
                core.run(self._hand_over_now())  # callbacks of the last loop turn go first
        finally:
            if self._connected:
                core.callbacks.submit_event(ev.Disconnected(None))
            core.shutdown()

    def __del__(self) -> None:
        """Like the official SDK: a session collected while running is stopped (its
        Disconnected event delivered), then a UserWarning says stop() was not called."""
        core = getattr(self, "core", None)
        if core is None or core.stopped:  # stopped, or the constructor failed early
            return
        own_threads = (core.io.thread, core.callbacks.thread)
        if threading.current_thread() in own_threads:
            # Collected on one of its own threads, which stop() waits for: stop from another.
            threading.Thread(target=self.stop, name="pybmq-compat-finalizer", daemon=True).start()
        else:
            with contextlib.suppress(Exception):
                self.stop()
        warnings.warn(
            f"stop() not invoked before destruction of Session<{id(self):#x}> object",
            UserWarning,
            stacklevel=2,
        )

    def __enter__(self) -> Session:
        return self

    def __exit__(self, exc_type: Any, exc_value: Any, exc_traceback: Any) -> None:
        self.stop()


__all__ = ["DEFAULT_TIMEOUT", "OnAck", "OnMessage", "OnSessionEvent", "Session"]
