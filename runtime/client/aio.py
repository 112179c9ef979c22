"""The asyncio shell around :class:`~pybmq.client.engine.ClientEngine`: a socket, a timer, futures.

Everything protocol-related lives in the engine; this module only moves bytes, keeps the timer
armed at ``engine.next_deadline()`` and turns engine events into future results, callbacks and
per-queue message streams. Output is flushed once per loop turn, so every post and confirm made in
one turn leaves in one PUT and one CONFIRM event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable
from types import TracebackType
from typing import Any

from pybmq.client.aio_queue import AckCallback, AsyncQueue, ReceivedMessage
from pybmq.client.engine import ClientEngine
from pybmq.client.events import (
    AckReceived,
    AckStatus,
    CallbackFailed,
    ChannelHighWatermark,
    ChannelLowWatermark,
    CompressedMessage,
    ConnectionLost,
    HealthEvent,
    Message,
    MessageReceived,
    OperationCompleted,
    QueueReopened,
    Reconnected,
    SessionStarted,
    SessionStopped,
    StateRestored,
    WatermarkEvent,
)
from pybmq.client.fsm import SessionState
from pybmq.client.health import HostHealthMonitor
from pybmq.client.options import (
    QueueOptions,
    SessionOptions,
    queue_options,
)
from pybmq.client.reconnect import EndpointSelector
from pybmq.client.stats import SessionStats
from pybmq.client.tls import client_tls_context, connect_failure
from pybmq.errors import ProtocolError, PybmqError, SessionStoppedError, UsageError
from pybmq.uri import parse_broker_url

log = logging.getLogger("pybmq.client.aio")
stats_log = logging.getLogger("pybmq.stats")

# What on_event receives: connection and reconnect news, host health, channel watermarks.
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


class _Protocol(asyncio.Protocol):
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    def data_received(self, data: bytes) -> None:
        if self.session._protocol is self:  # a dropped connection's late bytes are ignored
            self.session._on_data(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.session._protocol is self:
            self.session._on_connection_lost(exc)

    def pause_writing(self) -> None:
        self.session._writable.clear()
        self.session._on_watermark(high=True)

    def resume_writing(self) -> None:
        self.session._writable.set()
        self.session._on_watermark(high=False)


class AsyncSession:
    """A BlazingMQ session on the running asyncio loop.

    ``async with AsyncSession("tcp://localhost:30114") as session:`` connects and negotiates on
    entry and stops (closing queues, Disconnect) on exit. Without a broker it uses
    ``options.broker_uri`` (``$BMQ_BROKER_URI`` when set, as the official SDKs do).
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
        self._engine = ClientEngine(options)
        # Queues opened with suspends_on_bad_host_health follow it (HostUnhealthy, QueueSuspended,
        # QueueResumed, HostHealthRestored go to on_event).
        self.host_health_monitor = host_health_monitor
        self._unsubscribe_health: Callable[[], None] | None = None
        self._stats_task: asyncio.Task[None] | None = None
        engine_options = self._engine.options
        self._tls = client_tls_context(engine_options)
        self._tls_server_name = engine_options.tls_server_name
        broker = broker or engine_options.broker_uri  # None: $BMQ_BROKER_URI or the default
        self.broker = broker
        self._host, self._port = parse_broker_url(broker)
        endpoints = tuple(dict.fromkeys((broker, *engine_options.endpoints)))
        self._selector = EndpointSelector(
            endpoints, engine_options.reconnect_policy, rng or random.Random()
        )
        self._endpoint = broker  # the endpoint of the current (or last) connection
        self._reconnect_task: asyncio.Task[None] | None = None
        self._protocol: _Protocol | None = None
        # Called on the loop with every ResilienceEvent: reconnects, host health, watermarks.
        self.on_event = on_event
        self.connection_losses = 0
        self.reconnects = 0
        self.callback_errors = 0  # user callbacks that raised (each also logged and reported)
        self._connect_timeout = connect_timeout
        # The channel watermarks: past ``write_high_water`` buffered bytes, posting waits in
        # drain() and on_event gets ChannelHighWatermark; once the buffer is down to
        # ``write_low_water`` (default: a quarter of the high mark), ChannelLowWatermark.
        if write_low_water is None:
            write_low_water = write_high_water // 4
        if not 0 <= write_low_water <= write_high_water:
            raise UsageError("watermarks need 0 <= write_low_water <= write_high_water")
        self._high_water = write_high_water
        self._low_water = write_low_water
        self.high_watermarks = 0  # how many times the high watermark was reached
        self._transport: asyncio.Transport | None = None
        self._loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]
        self._writable = asyncio.Event()
        self._writable.set()
        self._flush_scheduled = False
        # Flow control: messages handed to queues and not yet taken by the application; the
        # socket is not read while there are too many (see _check_reading).
        self.undelivered = 0
        self._reading_paused = False
        self._stopping = False
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None
        self._ops: dict[int, asyncio.Future[None]] = {}
        self._queues: dict[int, AsyncQueue] = {}
        self._started: asyncio.Future[SessionStarted] | None = None
        self._stopped = asyncio.Event()
        self.stop_reason: str | None = None
        self.info: SessionStarted | None = None

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
    def state(self) -> SessionState:
        return self._engine.state

    async def start(self) -> SessionStarted:
        """Connect and negotiate; raises on refusal, timeout or an unreachable broker."""
        self._loop = asyncio.get_running_loop()
        self._engine.start(self._loop_time())
        interval = self._engine.options.stats_dump_interval
        if interval and self._stats_task is None:
            self._stats_task = self._loop.create_task(self._dump_stats(interval))
        monitor = self.host_health_monitor
        if monitor is not None and self._unsubscribe_health is None:
            self._unsubscribe_health = monitor.subscribe(self._on_host_health)
            if not monitor.healthy:
                self._engine.set_host_health(False, self._loop_time())
        self._started = self._loop.create_future()
        log.debug("connecting to %s", self.broker)
        try:
            transport, protocol = await self._connect(self._host, self._port)
        except (OSError, asyncio.TimeoutError) as exc:
            self._engine.connection_lost(self._loop_time(), exc)
            self._pump()
            if self._started.done():
                # The engine's stop failed this future; the error raised below replaces it.
                self._started.exception()
            raise SessionStoppedError(
                connect_failure(self.broker, exc, self._tls is not None, self._connect_timeout)
            ) from exc
        assert isinstance(transport, asyncio.Transport)
        self._use_transport(protocol, transport)
        log.debug("connected to %s; negotiating", self.broker)
        self._engine.connection_made(self._loop_time())
        self._flush()
        # The engine's negotiation deadline ends this wait with an error if the broker is silent.
        self.info = await self._started
        log.debug("negotiated with %s: %s", self.broker, self.info)
        return self.info

    async def stop(self) -> None:
        """Close queues, Disconnect, close the socket; pending operations fail. Idempotent."""
        if self._loop is None or self._engine.state is SessionState.STOPPED:
            self._close_transport()
            return
        self._cancel_reconnect()
        log.debug("stopping the session with %s", self.broker)
        # What is not taken yet is dropped: read again, or the broker's answer never comes.
        self._stopping = True
        self._check_reading()
        op_id = self._engine.stop(self._loop_time())
        await self._operation(op_id)
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
    def writable(self) -> bool:
        """False while the socket's write buffer is over its high-water mark."""
        return self._writable.is_set()

    async def drain(self) -> None:
        """Return once the socket's write buffer is under its high-water mark (backpressure)."""
        if not self._writable.is_set():
            await self._writable.wait()
        if self._engine.state is SessionState.STOPPED:
            raise SessionStoppedError(f"session stopped: {self.stop_reason}")

    async def open_queue(
        self,
        uri: str,
        *,
        read: bool = False,
        write: bool = False,
        ack: bool = True,
        options: QueueOptions | None = None,
        **option_values: Any,
    ) -> AsyncQueue:
        """Open (and configure) ``uri``; ``bmq://domain/queue?id=app`` opens as fanout app ``app``.

        Consumer settings come as ``options=QueueOptions(...)`` or as its fields directly
        (``max_unconfirmed_messages=``, ``max_unconfirmed_bytes=``, ``consumer_priority=``,
        ``subscriptions=``)."""
        options = queue_options(options, option_values)
        if options.suspends_on_bad_host_health and self.host_health_monitor is None:
            raise UsageError("suspends_on_bad_host_health needs a session host_health_monitor")
        op_id, queue_id = self._engine.open_queue(
            uri, self._loop_time(), read=read, write=write, ack=ack, options=options
        )
        queue = AsyncQueue(self, queue_id, uri)
        self._queues[queue_id] = queue
        log.debug("opening %s (read=%s, write=%s)", uri, read, write)
        try:
            await self._operation(op_id)
        except BaseException:
            self._queues.pop(queue_id, None)
            raise
        log.debug("opened %s as queue %d", uri, queue_id)
        return queue

    async def _connect(self, host: str, port: int) -> tuple[asyncio.BaseTransport, _Protocol]:
        """TCP (and the TLS handshake, checking the server name), bounded by connect_timeout."""
        tls: dict[str, Any] = {}
        if self._tls is not None:
            tls = {"ssl": self._tls, "server_hostname": self._tls_server_name or host}
        return await asyncio.wait_for(
            self._loop.create_connection(lambda: _Protocol(self), host, port, **tls),
            self._connect_timeout,
        )

    def _use_transport(self, protocol: _Protocol, transport: asyncio.Transport) -> None:
        self._protocol = protocol
        self._transport = transport
        transport.set_write_buffer_limits(high=self._high_water, low=self._low_water)
        self._reading_paused = False
        self._check_reading()

    # ------------------------------------------------------------------ flow control

    @property
    def reading_paused(self) -> bool:
        """True while the socket is not read because the application is behind."""
        return self._reading_paused

    def _read_bound(self) -> int:
        bound = self._engine.options.max_undelivered_messages
        return bound or max(self._engine.credit.total_messages, 1)

    def _check_reading(self) -> None:
        """Pause reading above the bound; resume once the backlog is down to half of it. The
        memory the client holds is then the bound, plus one read of the socket."""
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        bound = self._read_bound()
        if self._stopping or self._engine.awaiting_response:
            # Never hold back the answer to a request: the application may be waiting for it
            # (and stopping drops what is not taken anyway).
            pause = False
        elif self._reading_paused:
            pause = self.undelivered > bound // 2
        else:
            pause = self.undelivered > bound
        if pause == self._reading_paused:
            return
        self._reading_paused = pause
        if pause:
            transport.pause_reading()
            log.debug("%d messages not taken by the application: reading paused", self.undelivered)
        else:
            transport.resume_reading()
        self._engine.pause_reading(pause, self._loop_time())
        self._arm_timer()

    def _taken(self, count: int) -> None:
        """The application took (or a closed queue dropped) ``count`` messages."""
        self.undelivered -= count
        if self._reading_paused:
            self._check_reading()

    # ------------------------------------------------------------------ engine plumbing

    def _loop_time(self) -> float:
        return self._loop.time()

    async def _operation(self, op_id: int) -> None:
        future: asyncio.Future[None] = self._loop.create_future()
        self._ops[op_id] = future
        self._schedule_flush()
        self._pump()
        await future

    def _schedule_flush(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        data = self._engine.data_to_send()
        if data and self._transport is not None and not self._transport.is_closing():
            self._transport.write(data)
        self._pump()

    def _on_data(self, data: bytes) -> None:
        # On a ProtocolError the engine has already stopped the session and queued SessionStopped.
        with contextlib.suppress(ProtocolError):
            self._engine.receive_data(data, self._loop_time())
        self._flush()

    def _on_connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        self._engine.connection_lost(self._loop_time(), exc)
        self._pump()

    def _on_watermark(self, high: bool) -> None:
        transport = self._transport
        buffered = transport.get_write_buffer_size() if transport is not None else 0
        if high:
            self.high_watermarks += 1
            log.debug("write buffer at its high watermark (%d bytes)", buffered)
            self._notify(ChannelHighWatermark(buffered))
        else:
            self._notify(ChannelLowWatermark(buffered))

    def _on_host_health(self, healthy: bool) -> None:
        """From the monitor, on whichever thread changed it."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._apply_host_health, healthy)

    def _apply_host_health(self, healthy: bool) -> None:
        if self._engine.state is not SessionState.STOPPED:
            self._engine.set_host_health(healthy, self._loop_time())
            self._flush()

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = None
        self._engine.handle_timeout(self._loop_time())
        self._flush()

    def _pump(self) -> None:
        """Deliver engine events, then re-arm the timer and drop the socket once stopped."""
        engine = self._engine
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
            elif isinstance(event, OperationCompleted):
                future = self._ops.pop(event.op_id, None)
                if future is not None and not future.done():
                    if event.error is None:
                        future.set_result(None)
                    else:
                        future.set_exception(event.error)
            elif isinstance(event, SessionStarted):
                if self._started is not None and not self._started.done():
                    self._started.set_result(event)
            elif isinstance(event, SessionStopped):
                self._on_stopped(event)
            else:
                self._on_resilience_event(event)
        if run:
            self._deliver_run(run_queue, run, generation, now)
        if self.undelivered > 0:
            self._check_reading()
        self._arm_timer()

    def _deliver_run(
        self,
        queue_id: int | None,
        messages: list[Message | CompressedMessage],
        generation: int,
        now: float,
    ) -> None:
        queue = self._queues.get(queue_id) if queue_id is not None else None
        if queue is not None:
            queue._deliver_many(messages, generation, now)

    # ------------------------------------------------------------------ reconnecting

    def _on_resilience_event(self, event: ResilienceEvent) -> None:
        if isinstance(event, ConnectionLost):
            self.connection_losses += 1
            if self._engine.state is SessionState.RECONNECTING:
                log.warning("connection to %s lost: %s; reconnecting", self._endpoint, event.reason)
                self._selector.record_failure(self._endpoint, self._loop_time())
                self._drop_transport()
                if self._reconnect_task is None or self._reconnect_task.done():
                    self._reconnect_task = self._loop.create_task(self._reconnect())
        elif isinstance(event, Reconnected):
            self.reconnects += 1
            self.info = event.info
            self._selector.record_success(self._endpoint)
        elif isinstance(event, QueueReopened) and event.error is not None:
            queue = self._queues.pop(event.queue_id, None)
            if queue is not None:
                queue._end()
        self._notify(event)

    def _notify(self, event: ResilienceEvent) -> None:
        if self.on_event is not None:
            try:
                self.on_event(event)
            except Exception:  # a listener must not break the session
                log.exception("on_event listener raised")

    def _drop_transport(self) -> None:
        self._protocol = None
        transport, self._transport = self._transport, None
        if transport is not None:
            transport.abort()
        self._writable.set()

    def _cancel_reconnect(self) -> None:
        if self._reconnect_task is not None and not self._reconnect_task.done():
            self._reconnect_task.cancel()
        self._reconnect_task = None

    async def _reconnect(self) -> None:
        """Try endpoints (backoff, jitter, isolation from the selector) until one connects; the
        engine then negotiates and reopens. A failed negotiation comes back as ConnectionLost."""
        while self._engine.state is SessionState.RECONNECTING:
            endpoint, delay = self._selector.next_attempt(self._loop_time())
            await asyncio.sleep(delay)
            if self._engine.state is not SessionState.RECONNECTING:
                return
            host, port = parse_broker_url(endpoint)
            self._endpoint = endpoint
            try:
                transport, protocol = await self._connect(host, port)
            except (OSError, asyncio.TimeoutError) as exc:
                log.info(
                    "reconnect failed: %s",
                    connect_failure(endpoint, exc, self._tls is not None, self._connect_timeout),
                )
                self._selector.record_failure(endpoint, self._loop_time())
                continue
            if self._engine.state is not SessionState.RECONNECTING:
                transport.close()
                return
            assert isinstance(transport, asyncio.Transport)
            self._use_transport(protocol, transport)
            self._engine.connection_made(self._loop_time())
            self._flush()
            return

    def _on_ack(self, event: AckReceived) -> None:
        context = event.context
        ack = event.ack
        if isinstance(context, asyncio.Future):
            if context.done():
                return
            if ack.local and ack.status is AckStatus.NOT_CONNECTED:
                context.set_exception(SessionStoppedError(f"post not acknowledged: {ack.reason}"))
            else:
                context.set_result(ack)
        elif context is not None:
            callback: AckCallback = context  # type: ignore[assignment]
            try:
                callback(ack)
            except Exception as exc:  # the other outcomes of this batch must still be delivered
                log.exception("on_ack callback raised for %s", ack.guid.hex())
                self.callback_errors += 1
                self._notify(CallbackFailed("on_ack", exc))

    def _on_stopped(self, event: SessionStopped) -> None:
        log.debug("session with %s stopped: %s", self.broker, event.reason)
        self.stop_reason = event.reason
        error = event.error or SessionStoppedError(f"session stopped: {event.reason}")
        if self._started is not None and not self._started.done():
            self._started.set_exception(error)
        for future in self._ops.values():
            if not future.done():
                future.set_exception(SessionStoppedError(f"session stopped: {event.reason}"))
        self._ops.clear()
        for queue in self._queues.values():
            queue._end()
        self._queues.clear()
        self._writable.set()
        self._stopped.set()
        self._close_transport()

    def _close_transport(self) -> None:
        self._cancel_reconnect()
        if self._stats_task is not None:
            self._stats_task.cancel()
            self._stats_task = None
        if self._unsubscribe_health is not None:
            self._unsubscribe_health()
            self._unsubscribe_health = None
        self._protocol = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._transport is not None:
            with contextlib.suppress(Exception):
                self._transport.close()
            self._transport = None

    def _arm_timer(self) -> None:
        deadline = self._engine.next_deadline()
        if self._engine.state is SessionState.STOPPED:
            deadline = None
        if deadline == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = deadline
        if deadline is not None:
            self._timer = self._loop.call_at(deadline, self._on_timer)


__all__ = ["AsyncQueue", "AsyncSession", "PybmqError", "ReceivedMessage", "UsageError"]
