"""``Session``: the official SDK's blocking, callback-driven session, on pybmq's asyncio client.

Threads, as in the official SDK: the caller's threads make the calls; the I/O runs on a background
thread (an asyncio loop running :class:`pybmq.client.aio.AsyncSession`); every user callback — session
events, ``on_message`` and ``on_ack`` — runs on ONE other thread, in the order things happened.
``post`` and ``confirm`` never wait for the network (they are checked on the caller's thread, then
handed to the loop), so they may be called from callbacks. ``open_queue``, ``configure_queue``,
``close_queue`` and ``stop`` wait for the broker; where the official SDK deadlocks when they are
called from a callback, this one raises :class:`~pybmq.compat.exceptions.Error`.

Queues are named by their URI, as in the official API; the table ``_queues`` maps each URI to the
pybmq queue behind it and the options the user asked for.

Why one module of ~800 lines: it is one class, the official ``Session`` surface, whose methods
share one lock, one loop thread and one callback thread; what does not need that state lives in
``checks`` (defaults, argument checks, error wording), ``callbacks``, ``queues`` and ``lifetime``
(the weak references the loop holds the session by).
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import concurrent.futures
import contextlib
import dataclasses
import logging
import os
import threading
import warnings
import weakref
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from pybmq.client.aio import AsyncSession
from pybmq.client.aio_queue import ReceivedMessage
from pybmq.client.events import Ack as RuntimeAck
from pybmq.client.events import AckStatus as RuntimeAckStatus
from pybmq.client.events import ConnectionLost as RuntimeConnectionLost
from pybmq.client.events import QueueReopened as RuntimeQueueReopened
from pybmq.client.events import Reconnected as RuntimeReconnected
from pybmq.client.events import StateRestored as RuntimeStateRestored
from pybmq.client.options import QueueOptions as RuntimeQueueOptions
from pybmq.client.options import SessionOptions as RuntimeSessionOptions
from pybmq.compat import session_events as ev
from pybmq.compat.callbacks import CallbackThread, print_callback_error
from pybmq.compat.checks import (
    ACK_STATUS,
    CONTROL_RESERVE,
    DEFAULT_CHANNEL_HIGH_WATERMARK,
    DEFAULT_EVENT_QUEUE_WATERMARKS,
    DEFAULT_SECONDS,
    DEFAULT_TIMEOUT,
    STOPPED,
    check_int_option,
    check_positive_option,
    check_queue_options,
    check_reader_priority,
    failure,
    merged,
    seconds_or_none,
)
from pybmq.compat.exceptions import BrokerTimeoutError, Error
from pybmq.compat.lifetime import pump_messages, watch_connection, weak_method
from pybmq.compat.messages import (
    Ack,
    Message,
    MessageHandle,
    PropertyTypeDict,
    PropertyValueDict,
    from_wire_properties,
    to_wire_properties,
)
from pybmq.compat.queues import QueueRecord
from pybmq.compat.values import (
    AckStatus,
    BasicHealthMonitor,
    CompressionAlgorithmType,
    QueueOptions,
    SessionOptions,
    Timeouts,
)
from pybmq.errors import BrokerError, PybmqError, RequestTimeoutError, UsageError
from pybmq.loopthread import LoopThread
from pybmq.uri import DEFAULT_BROKER, parse_broker_url, parse_queue_uri

log = logging.getLogger("pybmq.compat")
T = TypeVar("T")

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
    README section "Drop-in for the official SDK" for what each option means here.
    """

    def __init__(
        self,
        on_session_event: OnSessionEvent,
        on_message: OnMessage | None = None,
        broker: str = DEFAULT_BROKER,
        message_compression_algorithm: CompressionAlgorithmType = CompressionAlgorithmType.NONE,
        timeout: Timeouts | float = DEFAULT_TIMEOUT,
        host_health_monitor: BasicHealthMonitor | None = None,
        num_processing_threads: int | None = None,
        blob_buffer_size: int | None = None,
        channel_high_watermark: int | None = None,
        event_queue_watermarks: tuple[int, int] | None = None,
        stats_dump_interval: float | None = None,
    ) -> None:
        if host_health_monitor is not None and not isinstance(
            host_health_monitor, BasicHealthMonitor
        ):
            raise TypeError(
                "host_health_monitor must be None or an instance of blazingmq.BasicHealthMonitor"
            )
        if not isinstance(timeout, Timeouts):
            timeout = Timeouts(None, None, timeout, timeout, timeout)
        seconds = {a: seconds_or_none(getattr(timeout, a)) for a in Timeouts._ATTRS}
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
        # The official SDK lets the environment choose the broker.
        broker = os.environ.get("BMQ_BROKER_URI", broker)
        if isinstance(broker, bytes):
            broker = broker.decode()
        self._timeouts = Timeouts(
            **{a: seconds[a] or getattr(DEFAULT_SECONDS, a) for a in Timeouts._ATTRS}
        )
        self._on_message = on_message
        self._monitor = host_health_monitor
        self._queues: dict[str, QueueRecord] = {}
        self._lock = threading.Lock()
        self._stopped = False
        self._connected = False
        self._lost = False
        self._outage = False  # between a ConnectionLost and its StateRestored
        self._inner: AsyncSession | None = None
        self._ops: collections.deque[Callable[[], None]] = collections.deque()
        self._ops_scheduled = False
        self._tasks: set[asyncio.Task[None]] = set()  # strong references, as asyncio asks
        self._batch: list[tuple[Callable[[], object], bool]] = []  # loop thread only
        self._callbacks = CallbackThread(on_session_event, watermarks)
        self._io = LoopThread("pybmq-compat-io")
        self._loop = self._io.loop
        try:
            parse_broker_url(broker)
        except UsageError:
            self._shutdown()
            raise Error("Failed to start session: INVALID_ARGUMENT") from None
        high_water = channel_high_watermark or DEFAULT_CHANNEL_HIGH_WATERMARK
        self._high_water = max(high_water - CONTROL_RESERVE, 64 * 1024)
        self._bytes_in = self._bytes_out = 0  # payload bytes posted / handed to the I/O thread
        options = RuntimeSessionOptions(
            request_timeout=self._timeouts.open_queue_timeout,  # type: ignore[arg-type]
            stop_timeout=self._timeouts.disconnect_timeout,  # type: ignore[arg-type]
            compression_threshold=(
                1024 if message_compression_algorithm is CompressionAlgorithmType.ZLIB else 0
            ),
            # Like the official SDK: reconnect on its own and reopen the open queues.
            reconnect=True,
        )
        try:
            self._inner = self._run(self._connect(broker, options, self._high_water))
        except BaseException:
            self._shutdown()
            raise
        self._connected = True
        _live_sessions.add(self)
        self._callbacks.submit_event(ev.Connected(None))
        if host_health_monitor is not None:
            host_health_monitor._subscribe(self)
            if not host_health_monitor.healthy:
                self._callbacks.submit_event(ev.HostUnhealthy(None))

    @classmethod
    def with_options(
        cls,
        on_session_event: OnSessionEvent,
        on_message: OnMessage | None = None,
        broker: str = DEFAULT_BROKER,
        session_options: SessionOptions = SessionOptions(),  # noqa: B008  # immutable in practice, as upstream
    ) -> Session:
        """A session configured by a :class:`SessionOptions` (options left ``None`` = defaults)."""
        o = session_options
        return cls(
            on_session_event,
            on_message,
            broker,
            o.message_compression_algorithm or CompressionAlgorithmType.NONE,
            DEFAULT_TIMEOUT if o.timeouts is None else o.timeouts,
            o.host_health_monitor,
            o.num_processing_threads,
            o.blob_buffer_size,
            o.channel_high_watermark,
            o.event_queue_watermarks,
            o.stats_dump_interval,
        )

    # ------------------------------------------------------------------ loop plumbing

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the I/O loop and wait for it (its own deadlines bound the wait)."""
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            raise Error("the session was stopped during the call") from None

    def _blocking_call_allowed(self, what: str) -> None:
        if threading.current_thread() is self._callbacks.thread:
            raise Error(
                f"{what} cannot be called from a BlazingMQ callback: it waits for the broker, "
                "which needs the callback thread (the official SDK deadlocks here)"
            )

    def _check_running(self) -> None:
        if self._stopped:
            raise Error(STOPPED)
        if self._lost:
            raise Error("the connection to the broker was lost and the session ended")

    async def _connect(
        self, broker: str, options: RuntimeSessionOptions, high_water: int
    ) -> AsyncSession:
        """Connect and negotiate, retrying a refused connection until the connect timeout."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeouts.connect_timeout  # type: ignore[operator]
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
            except PybmqError as exc:
                # Refused or dropped connection: the C++ SDK keeps trying until its deadline.
                left = deadline - loop.time()
                if left <= 0.001:
                    raise BrokerTimeoutError("Failed to start session: TIMEOUT") from exc
                await asyncio.sleep(min(delay, left))
                delay = min(delay * 2, 1.0)
                continue
            self._tasks.add(loop.create_task(watch_connection(weakref.ref(self), session)))
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
        self._from_loop(lambda: self._callbacks._emit(compat_event))

    def _connection_ended(self, session: AsyncSession) -> None:
        """On the loop: report a connection that ends without stop() as ConnectionLost."""
        if not self._stopped:
            self._lost = True
            if self._outage:  # ConnectionLost was already reported
                return
            log.warning("connection to the broker lost: %s", session.stop_reason)
            lost: ev.SessionEvent = ev.ConnectionLost(None)
            self._from_loop(lambda: self._callbacks._emit(lost))

    def _from_loop(self, job: Callable[[], object], is_message: bool = False) -> None:
        """On the loop thread: queue a callback; everything queued in one loop turn reaches the
        callback thread in one hand-over (one lock, one wake-up), in order."""
        self._batch.append((job, is_message))
        if len(self._batch) == 1:
            self._loop.call_soon(self._hand_over)

    def _hand_over(self) -> None:
        batch, self._batch = self._batch, []
        if batch:
            self._callbacks.submit_batch(batch)

    async def _hand_over_now(self) -> None:
        self._hand_over()

    def _submit_op(self, op: Callable[[], None]) -> None:
        """Queue a non-blocking operation (post, confirm) for the loop; one wake-up per batch.

        Lock-free: deque appends and pops are atomic, and the loop clears ``_ops_scheduled``
        BEFORE draining, so an op appended while the flag still reads True is drained too."""
        self._ops.append(op)
        if not self._ops_scheduled:
            self._ops_scheduled = True
            self._loop.call_soon_threadsafe(self._run_ops)

    def _run_ops(self) -> None:
        self._ops_scheduled = False
        ops = self._ops
        while ops:
            op = ops.popleft()
            try:
                op()
            except Exception:
                log.exception("a post or confirm failed on the I/O thread")

    def _set_request_timeout(self, seconds: float) -> None:
        # Runs on the loop thread just before a request: the engine reads request_timeout when it
        # sends the request, so each call gets its own deadline.
        assert self._inner is not None
        engine = self._inner._engine
        engine.options = dataclasses.replace(engine.options, request_timeout=seconds)

    # ------------------------------------------------------------------ queues

    def open_queue(
        self,
        queue_uri: str,
        read: bool = False,
        write: bool = False,
        options: QueueOptions = QueueOptions(),  # noqa: B008  # never mutated here
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        """Open ``queue_uri`` for reading (messages go to ``on_message``) and/or writing."""
        if read and self._on_message is None:
            raise Error(
                f"Can't open queue {queue_uri} in read mode: no on_message "
                "callback was provided at Session construction"
            )
        if options.suspends_on_bad_host_health and self._monitor is None:
            raise Error(
                "Queues cannot use suspends_on_bad_host_health if host health"
                " monitoring was disabled when the Session was created"
            )
        seconds = seconds_or_none(timeout) or self._timeouts.open_queue_timeout
        check_queue_options(options)
        if read:
            check_reader_priority("open", str(queue_uri), options)
        self._check_running()
        self._blocking_call_allowed("open_queue")
        uri = queue_uri.decode() if isinstance(queue_uri, bytes) else queue_uri
        if parse_queue_uri(uri) is None:
            raise Error(f"Failed to open {uri} queue: INVALID_URI: Invalid URI")
        if not (read or write):
            raise Error(
                f"Failed to open {uri} queue: INVALID_FLAGS: at least one of read or write must be set"
            )
        defaults = QueueOptions(
            QueueOptions.DEFAULT_MAX_UNCONFIRMED_MESSAGES,
            QueueOptions.DEFAULT_MAX_UNCONFIRMED_BYTES,
            QueueOptions.DEFAULT_CONSUMER_PRIORITY,
            QueueOptions.DEFAULT_SUSPENDS_ON_BAD_HOST_HEALTH,
        )
        queue = QueueRecord(uri, bool(read), bool(write), merged(defaults, options))
        with self._lock:
            existing = self._queues.get(uri)
            if existing is not None and existing.invalid:
                raise Error(
                    f"Failed to open {uri} queue: NOT_SUPPORTED: an earlier open of this queue timed out"
                )
            if existing is not None:
                raise Error(f"Failed to open {uri} queue: ALREADY_OPENED: ALREADY_OPENED")
            self._queues[uri] = queue  # reserved: a concurrent open of the same URI fails
        try:
            runtime_options = queue.runtime_options()
            self._run(self._open(queue, runtime_options, seconds))  # type: ignore[arg-type]
        except BaseException as exc:
            error = exc
            if isinstance(exc, (PybmqError, ValueError)) and not isinstance(exc, Error):
                error = failure("open", uri, exc)
            if isinstance(error, BrokerTimeoutError):
                queue.invalid = True
            else:
                with self._lock:
                    self._queues.pop(uri, None)
            if error is exc:
                raise
            raise error from exc
        if (
            queue.options.suspends_on_bad_host_health
            and self._monitor
            and not self._monitor.healthy
        ):
            queue.suspended = queue.holding = True

    async def _open(self, queue: QueueRecord, options: RuntimeQueueOptions, seconds: float) -> None:
        assert self._inner is not None
        self._set_request_timeout(seconds)
        inner = await self._inner.open_queue(
            queue.uri, read=queue.read, write=queue.write, ack=True, options=options
        )
        queue.inner = inner
        if queue.read:
            task = asyncio.get_running_loop().create_task(
                pump_messages(weakref.ref(self), queue, inner)
            )
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _received(self, queue: QueueRecord, received: ReceivedMessage) -> None:
        """On the loop: hand one message of a reader queue to the callback thread. A poison
        message (data or properties that cannot be decoded; the official SDK's Message has no
        way to carry the error) is delivered too, with no properties (and empty data when the
        data failed), after an ``Error`` session event saying why: the application can confirm
        it, so it does not come back, and the session goes on."""
        error: PybmqError | None = received.error
        try:
            delivery = self._delivery(queue, received)
        except PybmqError as exc:  # a properties area that does not decode
            error = exc
            delivery = self._delivery(queue, received, undecodable=True)
        if error is not None:
            log.error(
                "message %s on %s cannot be decoded: %s", received.guid.hex(), queue.uri, error
            )
            problem: ev.SessionEvent = ev.Error(f"undecodable message on {queue.uri}: {error}")
            self._from_loop(lambda p=problem: self._callbacks._emit(p))  # type: ignore[misc]
        self._from_loop(delivery, True)

    def _delivery(
        self, queue: QueueRecord, received: ReceivedMessage, undecodable: bool = False
    ) -> Callable[[], None]:
        properties, types = (
            ({}, {}) if undecodable else from_wire_properties(received.message.properties)
        )
        message = Message._make(
            received.payload, received.guid, queue.uri, properties, types, received.confirm_nowait
        )
        handle = MessageHandle._make(message, self)
        on_message = self._on_message
        assert on_message is not None
        callbacks = self._callbacks

        def deliver() -> None:
            try:
                if queue.holding:
                    queue.held.append((message, handle))  # given out when the queue resumes
                else:
                    on_message(message, handle)
            finally:
                callbacks._message_done()

        return deliver

    def configure_queue(
        self, queue_uri: str, options: QueueOptions, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        """Change the options of an open queue; options left ``None`` keep their value."""
        if options.suspends_on_bad_host_health and self._monitor is None:
            raise Error(
                "Queues cannot use suspends_on_bad_host_health if host health"
                " monitoring was disabled when the Session was created"
            )
        seconds = seconds_or_none(timeout) or self._timeouts.configure_queue_timeout
        check_queue_options(options)
        check_reader_priority("configure", str(queue_uri), options)
        self._check_running()
        self._blocking_call_allowed("configure_queue")
        queue = self._queue(queue_uri)
        self._refuse_invalid("configure", queue)
        wanted = merged(queue.options, options)
        if queue.read:
            candidate = dataclasses.replace(queue, options=wanted)
            try:
                runtime_options = candidate.runtime_options()
                self._run(self._configure(queue, runtime_options, seconds))  # type: ignore[arg-type]
            except (PybmqError, ValueError) as exc:
                if isinstance(exc, Error):
                    raise
                raise failure("configure", queue.uri, exc) from exc
        was = queue.options.suspends_on_bad_host_health
        queue.options = wanted
        if self._monitor is not None and not self._monitor.healthy:
            now = bool(wanted.suspends_on_bad_host_health)
            if now and not was:
                self._suspend([queue])
            elif was and not now:
                self._resume([queue], announce_host=False)

    async def _configure(
        self, queue: QueueRecord, options: RuntimeQueueOptions, seconds: float
    ) -> None:
        assert queue.inner is not None
        async with queue.busy:
            self._set_request_timeout(seconds)
            await queue.inner.configure(options)

    def get_queue_options(self, queue_uri: str) -> QueueOptions:
        """The options of an open queue (a write-only queue reports no consumer settings)."""
        self._check_running()
        return self._queue(queue_uri).reported_options()

    def close_queue(self, queue_uri: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Close an open queue; its URI can then be opened again."""
        seconds = seconds_or_none(timeout) or self._timeouts.close_queue_timeout
        self._check_running()
        self._blocking_call_allowed("close_queue")
        queue = self._queue(queue_uri)
        self._refuse_invalid("close", queue)
        try:
            self._run(self._close(queue, seconds))  # type: ignore[arg-type]
        except PybmqError as exc:
            if isinstance(exc, Error):
                raise
            raise failure("close", queue.uri, exc) from exc
        finally:
            with self._lock:
                self._queues.pop(queue.uri, None)

    async def _close(self, queue: QueueRecord, seconds: float) -> None:
        assert queue.inner is not None
        async with queue.busy:
            self._set_request_timeout(seconds)
            await queue.inner.close()

    def _queue(self, queue_uri: str) -> QueueRecord:
        uri = queue_uri.decode() if isinstance(queue_uri, bytes) else queue_uri
        queue = self._queues.get(uri)  # one dict read is atomic; writers hold _lock
        if queue is None or (queue.inner is None and not queue.invalid):
            raise Error("Queue not opened")
        return queue

    @staticmethod
    def _refuse_invalid(operation: str, queue: QueueRecord) -> None:
        if queue.invalid:
            raise Error(
                f"Failed to {operation} {queue.uri} queue: INVALID_QUEUE: its open timed out"
            )

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
        self._check_running()
        queue = self._queue(queue_uri)
        if queue.invalid:
            raise Error("Failed to construct message: QUEUE_INVALID")
        if not queue.write:
            raise Error("Failed to construct message: QUEUE_READONLY")
        if queue.suspended:
            raise Error("Failed to construct message: QUEUE_SUSPENDED")
        if not message:
            raise Error("Failed to construct message: PAYLOAD_EMPTY")
        inner = queue.inner
        assert inner is not None
        size = len(message)
        with self._lock:
            # Over the channel's high-water mark (the socket's buffer, or posts not yet handed to
            # the I/O thread): refused at once, as the C++ SDK does, never buffered without bound.
            if not inner.session.writable or self._bytes_in - self._bytes_out > self._high_water:
                raise Error(f"Failed to post message to {queue.uri} queue: BW_LIMIT")
            self._bytes_in += size
        callback = None if on_ack is None else self._ack_callback(on_ack)

        def op() -> None:
            self._bytes_out += size  # the I/O thread is the only writer of _bytes_out
            try:
                # As the official SDK: the broker is asked for an ACK only if on_ack was given.
                inner.post_nowait(
                    message, properties=wire_properties, on_ack=callback, ack=callback is not None
                )
            except PybmqError as exc:  # the queue closed or the session ended meanwhile
                if callback is not None:
                    callback(
                        RuntimeAck(
                            b"", queue.uri, RuntimeAckStatus.CANCELED, local=True, reason=str(exc)
                        )
                    )

        self._submit_op(op)

    def _ack_callback(self, on_ack: OnAck) -> Callable[[RuntimeAck], None]:
        submit = self._from_loop

        def deliver(ack: RuntimeAck) -> None:
            status = ACK_STATUS.get(ack.status, AckStatus.UNRECOGNIZED)
            # As in the official SDK, only a successful Ack names its message's GUID.
            guid = ack.guid if status is AckStatus.SUCCESS else None
            converted = Ack._make(guid, status, status.name, ack.queue_uri)
            submit(lambda: on_ack(converted))

        return deliver

    def confirm(self, message: Message) -> None:
        """Confirm a received message (``MessageHandle.confirm`` does the same)."""
        queue_uri = message.queue_uri
        self._check_running()
        self._queue(queue_uri)
        confirm: Callable[[], None] = message._confirm  # type: ignore[attr-defined]

        def op() -> None:
            try:
                confirm()
            except PybmqError as exc:  # closed meanwhile: nothing left to confirm
                log.info("confirm of %r dropped: %s", message, exc)

        self._submit_op(op)

    # ------------------------------------------------------------------ host health

    def _on_host_health(self, healthy: bool) -> None:
        """Called by the BasicHealthMonitor (on the thread that changed it)."""
        if self._stopped or self._lost:
            return
        with self._lock:
            sensitive = [q for q in self._queues.values() if q.options.suspends_on_bad_host_health]
        if healthy:
            self._resume(sensitive)
        else:
            self._callbacks.submit_event(ev.HostUnhealthy(None))
            self._suspend(sensitive)

    def _suspend(self, queues: list[QueueRecord]) -> None:
        """Posts are refused and deliveries held at once; readers then ask the broker to stop
        delivering (a ConfigureStream without subscriptions, as the C++ core sends), and each
        queue gets QueueSuspended, or QueueSuspendFailed if the broker refuses."""
        for queue in queues:
            queue.suspended = queue.holding = True
        asyncio.run_coroutine_threadsafe(self._reconfigure(queues, suspend=True), self._loop)

    def _resume(self, queues: list[QueueRecord], announce_host: bool = True) -> None:
        """Readers ask the broker for their subscriptions again; then QueueResumed (or
        QueueResumeFailed) for each queue, HostHealthRestored, then the messages held meanwhile."""
        for queue in queues:
            queue.suspended = False  # posts work again at once
        asyncio.run_coroutine_threadsafe(
            self._reconfigure(queues, suspend=False, announce_host=announce_host), self._loop
        )

    async def _reconfigure(
        self, queues: list[QueueRecord], suspend: bool, announce_host: bool = False
    ) -> None:
        """On the loop: the broker side of a suspension or resumption, then its events."""
        for queue in queues:
            failure_text = None
            if queue.read and queue.inner is not None and not self._stopped:
                async with queue.busy:
                    self._set_request_timeout(self._timeouts.configure_queue_timeout)  # type: ignore[arg-type]
                    try:
                        await queue.inner.configure(queue.runtime_options(), suspended=suspend)
                    except PybmqError as exc:
                        failure_text = str(exc)
            event: ev.SessionEvent
            if suspend:
                event = ev.QueueSuspended(queue.uri)
                if failure_text is not None:
                    event = ev.QueueSuspendFailed(queue.uri, failure_text)
            else:
                event = ev.QueueResumed(queue.uri)
                if failure_text is not None:
                    event = ev.QueueResumeFailed(queue.uri, failure_text)
            self._from_loop(lambda e=event: self._callbacks._emit(e))  # type: ignore[misc]
        if not suspend:
            if announce_host:
                restored: ev.SessionEvent = ev.HostHealthRestored(None)
                self._from_loop(lambda: self._callbacks._emit(restored))
            self._from_loop(lambda: self._release(queues))

    def _release(self, queues: list[QueueRecord]) -> None:
        """On the callback thread: deliver what suspended readers held back."""
        assert self._on_message is not None
        for queue in queues:
            queue.holding = False
            held, queue.held = queue.held, []
            for message, handle in held:
                try:
                    self._on_message(message, handle)
                except Exception as exc:
                    print_callback_error(exc)

    # ------------------------------------------------------------------ stop

    def stop(self) -> None:
        """Close the connection (Disconnect) and end the session's threads. Idempotent; the
        ``Disconnected`` event is delivered before this returns."""
        if self._stopped:
            return
        self._blocking_call_allowed("stop")
        self._stopped = True
        _live_sessions.discard(self)
        inner = self._inner
        try:
            if inner is not None:
                with contextlib.suppress(PybmqError):
                    self._run(inner.stop())
                self._run(self._hand_over_now())  # callbacks of the last loop turn go first
        finally:
            if self._connected:
                self._callbacks.submit_event(ev.Disconnected(None))
            self._shutdown()

    def _shutdown(self) -> None:
        self._stopped = True
        self._callbacks.close(self._timeouts.disconnect_timeout)  # type: ignore[arg-type]
        self._io.stop()

    def __del__(self) -> None:
        """Like the official SDK: a session collected while running is stopped (its
        Disconnected event delivered), then a UserWarning says stop() was not called."""
        if getattr(self, "_stopped", True):  # stopped, or the constructor failed early
            return
        own_threads = (self._io.thread, self._callbacks.thread)
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


__all__ = ["DEFAULT_TIMEOUT", "Session"]
