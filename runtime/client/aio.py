"""The asyncio shell around :class:`~pybmq.client.engine.ClientEngine`: a socket, a timer, futures.

Everything protocol-related lives in the engine; this module only moves bytes, keeps the timer
armed at ``engine.next_deadline()`` and turns engine events into future results, callbacks and
per-queue message streams. Output is flushed once per loop turn, so every post and confirm made in
one turn leaves in one PUT and one CONFIRM event.

It holds its parts (``aio_link``: the socket; ``aio_driver``: the loop plumbing; ``aio_reconnect``;
``aio_tracing``) and is still about 590 lines, on purpose: what is left is the public session API
(start, linger and stop, open, stats) and the one place that turns each engine event into what
the application sees; splitting that would spread one event's handling over two files.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

from pybmq.client.aio_driver import EngineDriver
from pybmq.client.aio_link import Connection, Link
from pybmq.client.aio_queue import AsyncQueue, ReceivedMessage, settle_ack
from pybmq.client.aio_reconnect import Reconnector
from pybmq.client.dropped import creation_site, release_dropped_link, weak_method
from pybmq.client.engine import ClientEngine
from pybmq.client.events import (
    AckReceived,
    CallbackFailed,
    ChannelHighWatermark,
    ChannelLowWatermark,
    CompressedMessage,
    ConnectionLost,
    Message,
    MessageReceived,
    OperationCompleted,
    QueueReopened,
    Reconnected,
    ResilienceEvent,
    ResilienceListener,
    SessionStarted,
    SessionStopped,
    SlowConsumerHighWatermark,
    SlowConsumerNormal,
)
from pybmq.client.fsm import SessionState
from pybmq.client.health import HostHealthMonitor
from pybmq.client.options import (
    QueueOptions,
    SessionOptions,
    checked_timeout,
    queue_options,
)
from pybmq.client.stats import SessionStats
from pybmq.client.tls import client_tls_context, connect_error
from pybmq.client.untraced import NO_TRACING, NoTracing
from pybmq.errors import (
    LingerTimeoutError,
    ProtocolError,
    PybmqError,
    RequestTimeoutError,
    SessionStoppedError,
    UsageError,
)
from pybmq.uri import parse_broker_url

if TYPE_CHECKING:
    from pybmq.client.tracing import Tracing

log = logging.getLogger("pybmq.client.aio")
stats_log = logging.getLogger("pybmq.stats")


class AsyncSession:
    """A BlazingMQ session on the running asyncio loop.

    ``async with AsyncSession("tcp://localhost:30114") as session:`` connects and negotiates on
    entry and stops (closing queues, Disconnect) on exit. Without a broker it uses
    ``options.broker_uri`` (``$BMQ_BROKER_URI`` when set, as the official SDKs do).

    It holds parts, one job each: the engine, the ``Link`` (the socket), the ``EngineDriver``
    (loop plumbing, operations, open queues, read pause; ``driver``) and the ``Reconnector``.
    This class turns engine events into futures, queue deliveries and ``on_event`` calls.
    """

    def __init__(
        self,
        broker: str | None = None,
        *,
        options: SessionOptions | None = None,
        connect_timeout: float = 10.0,
        write_high_water: int = 4 * 1024 * 1024,
        write_low_water: int | None = None,
        on_event: ResilienceListener | None = None,
        rng: random.Random | None = None,
        host_health_monitor: HostHealthMonitor | None = None,
    ) -> None:
        engine = ClientEngine(options)
        self._engine = engine
        # Queues opened with suspends_on_bad_host_health follow it (HostUnhealthy, QueueSuspended,
        # QueueResumed, HostHealthRestored go to on_event).
        self.host_health_monitor = host_health_monitor
        self._unsubscribe_health: Callable[[], None] | None = None
        self._stats_task: asyncio.Task[None] | None = None
        engine_options = engine.options
        tls = client_tls_context(engine_options)
        broker = broker or engine_options.broker_uri  # None: $BMQ_BROKER_URI or the default
        self.broker = broker
        self._host, self._port = parse_broker_url(broker)
        # The channel watermarks: past ``write_high_water`` buffered bytes, posting waits in
        # drain() and on_event gets ChannelHighWatermark; once the buffer is down to
        # ``write_low_water`` (default: a quarter of the high mark), ChannelLowWatermark.
        if write_low_water is None:
            write_low_water = write_high_water // 4
        # The socket's callbacks hold the session weakly: its connection alone does not keep
        # it alive, so a session dropped unstopped is released (see pybmq.client.dropped).
        self._link = Link(
            on_data=weak_method(self._on_data),
            on_lost=weak_method(self._on_connection_lost),
            on_watermark=weak_method(self._on_watermark),
            tls=tls,
            tls_server_name=engine_options.tls_server_name,
            connect_timeout=connect_timeout,
            high_water=write_high_water,
            low_water=write_low_water,
            tls_handshake_timeout=engine_options.tls_handshake_timeout,
        )
        # What AsyncQueue and ReceivedMessage work through: see pybmq.client.aio_driver.
        self.driver = EngineDriver(engine, self._link, self._pump)
        self.driver.on_backlog = self._on_backlog
        # The session's spans (or NO_TRACING), and the queues it opens: traced ones wrap the
        # post and receive paths (pybmq.client.aio_tracing; imported, with OpenTelemetry, only
        # when the options trace).
        self.tracing: Tracing | NoTracing = NO_TRACING
        self._queue_type: type[AsyncQueue] = AsyncQueue
        if engine_options.traced:
            from pybmq.client.aio_tracing import TracedQueue
            from pybmq.client.tracing import Tracing as SessionTracing

            self.tracing = SessionTracing(engine_options, self._host, self._port)
            self._queue_type = TracedQueue
        endpoints = tuple(dict.fromkeys((broker, *engine_options.endpoints)))
        self._reconnector = Reconnector(
            endpoints,
            engine_options.reconnect_policy,
            rng or random.Random(),
            engine=engine,
            link=self._link,
            now=self.driver.now,
            connected=self._reconnected,
        )
        # Called on the loop with every ResilienceEvent: reconnects, host health, watermarks.
        self.on_event = on_event
        self.connection_losses = 0
        self.reconnects = 0
        self.callback_errors = 0  # user callbacks that raised (each also logged and reported)
        self.high_watermarks = 0  # how many times the high watermark was reached
        self._started: asyncio.Future[SessionStarted] | None = None
        self._stopped = asyncio.Event()
        self._acked = asyncio.Event()  # an ACK arrived (what stop's linger waits on)
        self.stop_reason: str | None = None
        self.info: SessionStarted | None = None
        # Collected without stop() (once its loop is gone, which holds it while open): the
        # connection is closed and a ResourceWarning names where it was made.
        self._created_at = creation_site()
        self._finalizer: weakref.finalize[..., Any] | None = None

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> AsyncSession:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    @property
    def engine(self) -> ClientEngine:
        """The sans-I/O engine this shell drives (read it; drive it through the session)."""
        return self._engine

    @property
    def state(self) -> SessionState:
        """Where the session is in its life (the engine's state: started, reconnecting, stopped...)."""
        return self._engine.state

    def operation_span(
        self, name: str, uri: str | None = None
    ) -> contextlib.AbstractContextManager[Any]:
        """A span around a session or queue operation when tracing, else nothing."""
        return self.tracing.operation(name, uri)

    async def start(self, *, timeout: float | None = None) -> SessionStarted:
        """Connect and negotiate; raises on refusal, timeout or an unreachable broker.
        ``timeout``: seconds for the whole start, connecting included (None: the socket's
        ``connect_timeout``, then the session's ``start_timeout`` for the negotiation);
        past it, the session is stopped and RequestTimeoutError raised."""
        timeout = checked_timeout(timeout)
        with self.operation_span("start"):
            if timeout is None:
                return await self._start()
            try:
                return await asyncio.wait_for(self._start(), timeout)
            except asyncio.TimeoutError:
                if self.driver.bound and self._engine.state is not SessionState.STOPPED:
                    self._engine.connection_lost(self.driver.now(), None)
                    self._pump()
                self._close_transport()
                raise RequestTimeoutError(
                    f"start: no session with {self.broker} within {timeout:g}s"
                ) from None

    async def _start(self) -> SessionStarted:
        driver = self.driver
        loop = asyncio.get_running_loop()
        driver.bind(loop)
        self._engine.start(driver.now())
        interval = self._engine.options.stats_dump_interval
        if interval and self._stats_task is None:
            self._stats_task = loop.create_task(self._dump_stats(interval))
        monitor = self.host_health_monitor
        if monitor is not None and self._unsubscribe_health is None:
            self._unsubscribe_health = monitor.subscribe(self._on_host_health)
            if not monitor.healthy:
                self._engine.set_host_health(False, driver.now())
        self._started = loop.create_future()
        if self._finalizer is None or not self._finalizer.alive:
            self._finalizer = weakref.finalize(
                self, release_dropped_link, self._link, "AsyncSession", self._created_at
            )
        log.debug("connecting to %s", self.broker)
        link = self._link
        try:
            connection = await link.connect(self._host, self._port)
        except (OSError, asyncio.TimeoutError) as exc:
            self._engine.connection_lost(driver.now(), exc)
            self._pump()
            if self._started.done():
                # The engine's stop failed this future; the error raised below replaces it.
                self._started.exception()
            raise connect_error(
                self.broker, exc, link.tls is not None, link.connect_timeout
            ) from exc
        self._use(connection)
        log.debug("connected to %s; negotiating", self.broker)
        self._engine.connection_made(driver.now())
        driver.flush()
        # The engine's negotiation deadline ends this wait with an error if the broker is silent.
        self.info = await self._started
        log.debug("negotiated with %s: %s", self.broker, self.info)
        return self.info

    async def stop(self, *, linger: float | None = None) -> None:
        """Close queues, Disconnect, close the socket; pending operations fail. Idempotent.

        ``linger`` (None: ``options.linger``, 0 by default) first waits up to that many seconds
        for the ACKs of posts already made (Java's ``linger()``); if some are still missing
        then, the stop goes on, they resolve as not acknowledged, and LingerTimeoutError (with
        ``pending``) is raised once the session is stopped."""
        driver = self.driver
        if not driver.bound or self._engine.state is SessionState.STOPPED:
            self._close_transport()
            return
        if linger is None:
            linger = self._engine.options.linger
        with self.operation_span("stop"):
            pending = await self._linger(checked_timeout(linger or None, "linger") or 0.0)
            if self._engine.stopped:  # it may have ended while lingering
                self._close_transport()
            else:
                await self._stop()
        if pending:
            raise LingerTimeoutError(
                f"{pending} posts not acknowledged within the {linger:g}s linger", pending=pending
            )

    async def _linger(self, linger: float) -> int:
        """Wait up to ``linger`` seconds for every outstanding post's ACK; how many are left."""
        engine = self._engine
        if linger <= 0:
            return 0
        self.driver.flush()  # posts of this turn leave now
        deadline = self.driver.now() + linger
        while engine.unacked_count + engine.buffered_count and self.driver.now() < deadline:
            if engine.state is SessionState.STOPPED:
                break
            self._acked.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._acked.wait(), deadline - self.driver.now())
        return engine.unacked_count + engine.buffered_count

    async def _stop(self) -> None:
        driver = self.driver
        self._reconnector.cancel()
        log.debug("stopping the session with %s", self.broker)
        # What is not taken yet is dropped: read again, or the broker's answer never comes.
        driver.stopping = True
        driver.check_reading()
        op_id = self._engine.stop(driver.now())
        await driver.operation(op_id)
        await self._stopped.wait()

    async def wait_stopped(self) -> None:
        """Return once the session has ended (stopped, or its connection lost for good)."""
        await self._stopped.wait()

    def stats(self) -> SessionStats:
        """A typed snapshot: per open queue and session totals (messages and bytes in and out,
        ACKs, NACKs, confirms, ACK and confirm latency percentiles)."""
        return self._engine.stats()

    async def _dump_stats(self, interval: float) -> None:
        """Log the stats every ``interval`` seconds (SessionOptions.stats_dump_interval)."""
        while True:
            await asyncio.sleep(interval)
            stats_log.info("%s", self.stats().format())

    @property
    def transport(self) -> asyncio.Transport | None:
        """The connection in use (None between connections): for diagnostics, and for tests
        that play a misbehaving peer on it."""
        return self._link.transport

    @property
    def held_bytes(self) -> int:
        """Bytes the session holds for its broker: posts not sent yet, the socket's write
        buffer, and payloads kept for retransmission until their ACK (what
        ``SessionOptions.max_buffered_bytes`` bounds)."""
        return self._engine.held_bytes + self._link.buffered

    @property
    def write_high_water(self) -> int:
        """Buffered bytes past which the socket is not ``writable`` (the high watermark)."""
        return self._link.high_water

    @property
    def writable(self) -> bool:
        """False while the socket's write buffer is over its high-water mark."""
        return self._link.writable

    async def drain(self, timeout: float | None = None) -> None:
        """Backpressure: return once a post can be made, the socket's write buffer under its
        high-water mark and what the session holds for the broker under ``max_buffered_bytes``
        (and, while reconnecting, fewer than ``max_buffered_posts`` posts). A PUT event's
        worth of posts made since the last turn is sent first and the loop gets a turn, so
        ``post_nowait(...); await drain()`` in a loop sends as it goes. Waits at most
        ``timeout`` seconds (None: ``channel_write_timeout``, 5 s, at the high watermark;
        ``buffer_wait_timeout``, 60 s, for the budget), then raises ChannelWriteTimeoutError
        (as the official SDK's post does) or PostBufferFullError."""
        await self.driver.wait_room(1, timeout)

    async def open_queue(
        self,
        uri: str,
        *,
        read: bool = False,
        write: bool = False,
        ack: bool = True,
        options: QueueOptions | None = None,
        timeout: float | None = None,
        **option_values: Any,
    ) -> AsyncQueue:
        """Open (and configure) ``uri``; ``bmq://domain/queue?id=app`` opens as fanout app ``app``.

        Consumer settings come as ``options=QueueOptions(...)`` or as its fields directly
        (``max_unconfirmed_messages=``, ``max_unconfirmed_bytes=``, ``consumer_priority=``,
        ``subscriptions=``). ``timeout``: seconds for each answer (None: the session's
        ``open_timeout``)."""
        options = queue_options(options, option_values)
        if options.suspends_on_bad_host_health and self.host_health_monitor is None:
            raise UsageError("suspends_on_bad_host_health needs a session host_health_monitor")
        driver = self.driver
        with self.operation_span("open", uri):
            op_id, queue_id = self._engine.open_queue(
                uri, driver.now(), read=read, write=write, ack=ack, options=options, timeout=timeout
            )
            queue = self._queue_type(self, queue_id, uri)
            driver.queues[queue_id] = queue
            log.debug("opening %s (read=%s, write=%s)", uri, read, write)
            try:
                await driver.operation(op_id)
            except BaseException:
                driver.queues.pop(queue_id, None)
                raise
        log.debug("opened %s as queue %d", uri, queue_id)
        return queue

    def _use(self, connection: Connection) -> None:
        self._link.use(connection)
        self.driver.reading_restarted()

    # ------------------------------------------------------------------ flow control

    @property
    def reading_paused(self) -> bool:
        """True while the socket is not read because the application is behind."""
        return self.driver.reading_paused

    @property
    def undelivered(self) -> int:
        """Messages handed to queues and not yet taken by the application."""
        return self.driver.undelivered

    # ------------------------------------------------------------------ the link's news

    def _on_data(self, data: bytes) -> None:
        # On a ProtocolError the engine has already stopped the session and queued SessionStopped.
        with contextlib.suppress(ProtocolError):
            self._engine.receive_data(data, self.driver.now())
        self.driver.flush()

    def _on_connection_lost(self, exc: Exception | None) -> None:
        self._engine.connection_lost(self.driver.now(), exc)
        self._pump()

    def _on_watermark(self, high: bool) -> None:
        buffered = self._link.buffered
        self._engine.write_blocked(high, self.driver.now())
        if not high:
            self.driver.check_reading()
        if high:
            self.high_watermarks += 1
            log.debug("write buffer at its high watermark (%d bytes)", buffered)
            self._notify(ChannelHighWatermark(buffered))
        else:
            self._notify(ChannelLowWatermark(buffered))

    def _on_backlog(self, high: bool, undelivered: int) -> None:
        self._notify(
            SlowConsumerHighWatermark(undelivered) if high else SlowConsumerNormal(undelivered)
        )

    def _on_host_health(self, healthy: bool) -> None:
        """From the monitor, on whichever thread changed it."""
        loop = self.driver.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._apply_host_health, healthy)

    def _apply_host_health(self, healthy: bool) -> None:
        if self._engine.state is not SessionState.STOPPED:
            self._engine.set_host_health(healthy, self.driver.now())
            self.driver.flush()

    # ------------------------------------------------------------------ engine events

    def _pump(self) -> None:
        """Deliver engine events, then re-arm the timer and drop the socket once stopped."""
        engine = self._engine
        driver = self.driver
        generation, now = engine.generation, engine.now  # the same for every event of this turn
        # Messages go to their queue a run at a time (consecutive messages of one queue), each
        # run before whatever event follows it.
        run: list[Message | CompressedMessage] = []
        run_queue: int | None = None
        for event in engine.next_events():
            if isinstance(event, MessageReceived):
                message = event.message
                if message.queue_id != run_queue:
                    if run:
                        self._deliver_run(run_queue, run, generation, now)
                        run = []
                    run_queue = message.queue_id
                run.append(message)
                continue
            if run:
                self._deliver_run(run_queue, run, generation, now)
                run = []
                run_queue = None
            if isinstance(event, AckReceived):
                self._on_ack(event)
                self._acked.set()
            elif isinstance(event, OperationCompleted):
                driver.complete(event.op_id, event.error)
            elif isinstance(event, SessionStarted):
                if self._started is not None and not self._started.done():
                    self._started.set_result(event)
            elif isinstance(event, SessionStopped):
                self._on_stopped(event)
            else:
                self._on_resilience_event(event)
        if run:
            self._deliver_run(run_queue, run, generation, now)
        if driver.undelivered > 0:
            driver.check_reading()
        driver.room_changed()
        driver.arm_timer()

    def _deliver_run(
        self,
        queue_id: int | None,
        messages: list[Message | CompressedMessage],
        generation: int,
        now: float,
    ) -> None:
        queue = self.driver.queues.get(queue_id) if queue_id is not None else None
        if queue is not None:
            queue.deliver_many(messages, generation, now)

    def _on_resilience_event(self, event: ResilienceEvent) -> None:
        if isinstance(event, ConnectionLost):
            self.connection_losses += 1
            if self._engine.state is SessionState.RECONNECTING:
                endpoint = self._reconnector.endpoint
                log.warning("connection to %s lost: %s; reconnecting", endpoint, event.reason)
                self._reconnector.connection_lost()
                self.tracing.connection_lost()
        elif isinstance(event, Reconnected):
            self.reconnects += 1
            self.info = event.info
            self._reconnector.reconnected()
            self.tracing.reconnected(self._reconnector.endpoint)
        elif isinstance(event, QueueReopened) and event.error is not None:
            queue = self.driver.queues.pop(event.queue_id, None)
            if queue is not None:
                queue.end()
        self._notify(event)

    def _notify(self, event: ResilienceEvent) -> None:
        if self.on_event is not None:
            try:
                self.on_event(event)
            except Exception:  # a listener must not break the session
                log.exception("on_event listener raised")

    def _reconnected(self, connection: Connection) -> None:
        """A reconnect attempt connected: use it; the engine negotiates and reopens."""
        self._use(connection)
        self._engine.connection_made(self.driver.now())
        self.driver.flush()

    def _on_ack(self, event: AckReceived) -> None:
        error = settle_ack(event.ack, event.context)
        if error is not None:  # the other outcomes of this batch must still be delivered
            self.callback_errors += 1
            self._notify(CallbackFailed("on_ack", error))

    def _on_stopped(self, event: SessionStopped) -> None:
        log.debug("session with %s stopped: %s", self.broker, event.reason)
        self.tracing.reconnected(self._reconnector.endpoint, event.reason)  # never came back
        self.stop_reason = event.reason
        error = event.error or SessionStoppedError(f"session stopped: {event.reason}")
        if self._started is not None and not self._started.done():
            self._started.set_exception(error)
        driver = self.driver
        driver.session_ended(event.reason)
        for queue in driver.queues.values():
            queue.end()
        driver.queues.clear()
        self._link.set_writable()
        self._stopped.set()
        self._close_transport()

    def release(self) -> None:
        """Close the connection at once, without telling the broker, and cancel the timers: for
        a session that is being dropped (a finalizer). Prefer ``stop()``; the session is of no
        use afterwards."""
        self._close_transport()
        self._link.abort()

    def _close_transport(self) -> None:
        if self._finalizer is not None:
            self._finalizer.detach()
        self._reconnector.cancel()
        if self._stats_task is not None:
            self._stats_task.cancel()
            self._stats_task = None
        if self._unsubscribe_health is not None:
            self._unsubscribe_health()
            self._unsubscribe_health = None
        self.driver.cancel_timer()
        self._link.close()


__all__ = [
    "AsyncQueue",
    "AsyncSession",
    "PybmqError",
    "ReceivedMessage",
    "ResilienceEvent",
    "ResilienceListener",
    "UsageError",
]
