"""The blocking shell: :class:`Session` runs an :class:`~pybmq.client.aio.AsyncSession` on its own thread.

For scripts and Spark executors that have no event loop. Every call hands a coroutine to the loop
thread and waits for it; user callbacks (ACKs, messages) run on ONE dispatcher thread, in order, so
they never block the I/O loop and never run concurrently with each other.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping
from functools import partial
from types import TracebackType
from typing import Any, TypeVar

from pybmq.client.aio import AsyncSession, ResilienceEvent
from pybmq.client.aio_queue import AsyncQueue, ReceivedMessage
from pybmq.client.dropped import creation_site, warn_dropped
from pybmq.client.events import Ack
from pybmq.client.health import HostHealthMonitor
from pybmq.client.options import (
    BATCHES_PER_BUDGET,
    QueueOptions,
    SessionOptions,
    checked_timeout,
)
from pybmq.client.stats import SessionStats
from pybmq.errors import SessionStoppedError, UsageError
from pybmq.loopthread import CallbackDispatcher, LoopThread

__all__ = ["ON_MESSAGE_WINDOW", "Queue", "Session", "T", "slices"]

log = logging.getLogger("pybmq.client.sync")

T = TypeVar("T")
# Messages of one queue handed to its on_message handler and not handled yet, at most.
ON_MESSAGE_WINDOW = 1000


def _call_then(
    handler: Callable[[ReceivedMessage], object], message: ReceivedMessage, then: Callable[[], None]
) -> None:
    try:
        handler(message)
    finally:
        then()


def slices(batch: list[bytes], most: int, options: SessionOptions) -> Iterator[list[bytes]]:
    """``batch`` in slices of at most ``most`` posts, never more than a reconnecting session
    holds (``max_buffered_posts``) nor more than a quarter of the byte budget (one payload at
    least): a slice is admitted whole while the session is under its budget."""
    most = min(most, options.max_buffered_posts)
    room = max(options.max_buffered_bytes // BATCHES_PER_BUDGET, 1)
    start, end = 0, len(batch)
    while start < end:
        stop, size = start, 0
        while stop < end and stop - start < most and (stop == start or size < room):
            size += len(batch[stop])
            stop += 1
        yield batch[start:stop]
        start = stop


class Queue:
    """A queue of a blocking :class:`Session`."""

    # post_many hands the I/O thread this many posts at a time (between slices, the socket drains).
    POST_SLICE = 1024

    def __init__(self, session: Session, inner: AsyncQueue) -> None:
        self._session = session
        self._inner = inner
        self.uri = inner.uri

    @property
    def suspended(self) -> bool:
        """True while the host is unhealthy and this queue is suspended (see AsyncQueue)."""
        return self._inner.suspended

    def post(
        self,
        payload: bytes,
        *,
        properties: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        compression: str | None = None,
    ) -> Ack:
        """Post and block until the ACK (or a NACK) arrives. ``compression``: ``"zlib"`` or
        ``"none"`` for this message (None: the session's ``compression_threshold``)."""
        inner = self._inner
        return self._call_traced(
            lambda: inner.post(payload, properties=properties, compression=compression), timeout
        )

    def post_async(
        self,
        payload: bytes,
        *,
        properties: Mapping[str, Any] | None = None,
        on_ack: Callable[[Ack], object] | None = None,
        compression: str | None = None,
    ) -> bytes:
        """Post without waiting for the ACK; ``on_ack`` runs on the dispatcher thread. Returns
        the GUID once the message is buffered (validation errors raise here). ``compression``:
        as in ``post``."""
        callback = self._ack_callback(on_ack)
        inner = self._inner

        async def post() -> bytes:
            await inner.driver.wait_room(1)
            return inner.post_nowait(
                payload, properties=properties, on_ack=callback, compression=compression
            )

        return self._call_traced(post)

    def _call_traced(
        self, make: Callable[[], Coroutine[Any, Any, T]], timeout: float | None = None
    ) -> T:
        """``Session.call`` of the coroutine ``make()`` returns, run on the I/O thread in the
        caller's trace context (its span parents the post's; nothing when not tracing)."""
        tracing = self._inner.session.tracing
        parent = tracing.current()

        async def run() -> T:
            with tracing.attached(parent):
                return await make()

        return self._session.call(run(), timeout)

    def post_many(
        self,
        payloads: Iterable[bytes],
        *,
        properties: Mapping[str, Any] | None = None,
        on_ack: Callable[[Ack], object] | None = None,
    ) -> list[bytes]:
        """Post a batch in ONE hand-off to the I/O thread (the way to go fast from a thread, e.g.
        a Spark partition); ``on_ack`` runs on the dispatcher thread once per message. Returns
        the GUIDs; the batch leaves in as few PUT events as its size allows. Each slice of
        ``POST_SLICE`` messages is buffered all or nothing (the engine's ``post_many``)."""
        callback = self._ack_callback(on_ack)
        inner = self._inner
        batch = list(payloads)

        async def post() -> list[bytes]:
            guids: list[bytes] = []
            options = inner.driver.engine.options
            for chunk in slices(batch, self.POST_SLICE, options):
                # Room for the slice (the socket takes what is written so far meanwhile).
                await inner.driver.wait_room(len(chunk))
                guids += inner.post_many_nowait(chunk, properties=properties, on_ack=callback)
            return guids

        return self._session.call(post())

    def _ack_callback(self, on_ack: Callable[[Ack], object] | None) -> Callable[[Ack], None] | None:
        """``on_ack`` moved to the dispatcher thread (None stays None)."""
        if on_ack is None:
            return None
        dispatcher = self._session.dispatcher
        user_callback = on_ack

        def callback(ack: Ack) -> None:
            dispatcher.submit(lambda: user_callback(ack))

        return callback

    def get(self, timeout: float | None = None) -> ReceivedMessage:
        """The next message (blocks); TimeoutError after ``timeout`` seconds."""
        return self._session.call(self._inner.get(), timeout)

    def confirm(self, message: ReceivedMessage) -> None:
        """Tell the broker the message is processed (it will not be redelivered); the same as
        ``message.confirm()``, which also blocks until done here."""
        message.confirm()

    # More batch calls: one hop to the I/O thread for many messages. Per-message calls cost a
    # thread handoff each, which dominates when a caller (a Spark task) moves thousands.

    def post_batch(
        self,
        messages: Iterable[tuple[bytes, Mapping[str, Any] | None]],
        *,
        on_ack: Callable[[Ack], object] | None = None,
    ) -> list[bytes]:
        """Like ``post_many``, with each message's own properties: (payload, properties) pairs."""
        callback = self._ack_callback(on_ack)
        inner = self._inner
        batch = list(messages)

        async def post() -> list[bytes]:
            guids = []
            for payload, props in batch:
                await inner.driver.wait_room(1)
                guids.append(inner.post_nowait(payload, properties=props, on_ack=callback))
            return guids

        return self._session.call(post())

    def get_many(self, max_count: int, timeout: float | None = None) -> list[ReceivedMessage]:
        """Wait up to ``timeout`` for a message, then also take every message already received,
        up to ``max_count`` in all. An empty list means the wait timed out."""
        inner = self._inner

        async def take() -> list[ReceivedMessage]:
            try:
                first = await asyncio.wait_for(inner.get(), timeout)
            except (asyncio.TimeoutError, TimeoutError):
                return []
            out = [first]
            while len(out) < max_count:
                message = inner.get_nowait()
                if message is None:
                    break
                out.append(message)
            return out

        return self._session.call(take())

    def confirm_many(self, messages: Iterable[ReceivedMessage]) -> None:
        """Confirm all of ``messages`` (they leave in as few CONFIRM events as fit)."""
        batch = list(messages)
        inner = self._inner

        async def confirm() -> None:
            inner.confirm_many_nowait(batch)
            await inner.driver.wait_room(0)  # the channel's high watermark only

        self._session.call(confirm())

    def configure(self, options: QueueOptions | None = None, **option_values: Any) -> None:
        """Change the queue's options (flow control, priority, subscriptions), given whole or
        as fields; blocks until the broker answers."""
        self._session.call(self._inner.configure(options, **option_values))

    def close(self, *, timeout: float | None = None) -> None:
        """Stop consuming, then close the queue on the broker; blocks until it answers (at most
        ``timeout`` seconds per answer; None: ``SessionOptions.close_timeout``)."""
        self._session.call(self._inner.close(timeout=timeout))

    def __iter__(self) -> Iterator[ReceivedMessage]:
        while True:
            try:
                yield self.get()
            except SessionStoppedError:
                return

    def __repr__(self) -> str:
        return f"<Queue {self.uri}>"


class _Parts:
    """What a started Session runs on, for its finalizer (which must not hold the Session)."""

    __slots__ = ("dispatcher", "inner", "io")

    def __init__(self) -> None:
        self.io: LoopThread | None = None
        self.dispatcher: CallbackDispatcher | None = None
        self.inner: AsyncSession | None = None


def _release_dropped(parts: _Parts, site: str) -> None:
    """A started Session collected (or left at exit) without ``stop()``: close its connection
    without a goodbye, end its loop and its callback thread, and say where it was made."""
    warn_dropped("Session", site)
    inner, io, dispatcher = parts.inner, parts.io, parts.dispatcher
    if io is not None:

        async def release() -> None:
            if inner is not None:
                inner.release()
            await asyncio.sleep(0)  # the transport's close runs on the next turn

        io.abandon(release)
    if dispatcher is not None:
        dispatcher.close(timeout=2.0)


class Session:
    """A BlazingMQ session for code without asyncio. ``with Session(broker) as s:`` starts and
    stops it; its I/O runs on a background thread."""

    def __init__(
        self,
        broker: str | None = None,
        *,
        options: SessionOptions | None = None,
        timeout: float = 60.0,
        on_event: Callable[[ResilienceEvent], object] | None = None,
        host_health_monitor: HostHealthMonitor | None = None,
        write_high_water: int = 4 * 1024 * 1024,
        write_low_water: int | None = None,
    ) -> None:
        self._host_health_monitor = host_health_monitor
        self._watermarks = (write_high_water, write_low_water)
        # None: options.broker_uri ($BMQ_BROKER_URI when set, else localhost:30114).
        self.broker = broker or (options or SessionOptions()).broker_uri
        self._options = options
        # Every ResilienceEvent (reconnects, host health, watermarks), run on the dispatcher thread.
        self._on_event = on_event
        self._timeout = timeout
        # Threads (and the loop's file descriptors) start with start(), not here: a Session that
        # is made and never started holds nothing.
        self._io: LoopThread | None = None
        self._dispatcher_thread: CallbackDispatcher | None = None
        self._inner: AsyncSession | None = None
        self._closed = False
        # Dropped without stop(): its finalizer closes the connection, ends the threads and
        # warns (ResourceWarning) naming where it was made; it holds the parts, not the Session.
        self._created_at = creation_site()
        self._parts = _Parts()
        self._finalizer: weakref.finalize[..., Any] | None = None

    @property
    def async_session(self) -> AsyncSession | None:
        """The asyncio session this one runs on its I/O thread (None until started)."""
        return self._inner

    @property
    def dispatcher(self) -> CallbackDispatcher:
        """The one thread user callbacks (ACKs, messages, events) run on, in order."""
        if self._dispatcher_thread is None:
            raise UsageError("session is not started")
        return self._dispatcher_thread

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the session's I/O thread and wait for its result (at most
        ``timeout`` seconds): what every blocking call of the session and its queues does."""
        io = self._io
        if self._closed or io is None:
            coro.close()
            raise SessionStoppedError("session is closed" if self._closed else "not started")
        if io.in_thread():
            coro.close()
            raise UsageError("blocking Session calls cannot be made from its own I/O thread")
        return io.run(coro, timeout)

    def start(self, *, timeout: float | None = None) -> None:
        """Start the I/O thread, connect and negotiate (``with Session(...)`` calls it); raises
        on refusal or an unreachable broker. ``timeout``: seconds for the whole start (None:
        the session's ``timeout``); past it the session is stopped and RequestTimeoutError
        raised."""
        timeout = checked_timeout(timeout)
        if self._io is None and not self._closed:
            self._io = LoopThread("pybmq-io")
            self._dispatcher_thread = CallbackDispatcher(
                "pybmq-dispatch", lambda exc: log.error("callback raised", exc_info=exc)
            )
            self._parts.io, self._parts.dispatcher = self._io, self._dispatcher_thread
            self._finalizer = weakref.finalize(
                self, _release_dropped, self._parts, self._created_at
            )

        parts = self._parts

        async def start() -> AsyncSession:
            on_event = self._on_event
            dispatch = self.dispatcher.submit
            session = parts.inner = AsyncSession(
                self.broker,
                options=self._options,
                on_event=None if on_event is None else (lambda e: dispatch(lambda: on_event(e))),
                host_health_monitor=self._host_health_monitor,
                write_high_water=self._watermarks[0],
                write_low_water=self._watermarks[1],
            )
            await session.start(timeout=timeout)
            return session

        try:
            # The loop's own bound (start's timeout) fires first; this one is a backstop.
            self._inner = self.call(start(), self._timeout if timeout is None else timeout + 5)
        except BaseException:
            self.stop()
            raise

    def stats(self) -> SessionStats:
        """A typed snapshot of the session's statistics (see ``AsyncSession.stats``)."""
        inner = self._inner
        if inner is None:
            raise UsageError("session is not started")

        async def take() -> SessionStats:
            return inner.stats()

        return self.call(take(), self._timeout)

    def stop(self, *, linger: float | None = None) -> None:
        """Stop the session and its threads. Idempotent. ``linger``: see ``AsyncSession.stop``
        (LingerTimeoutError once stopped if some posts were still not acknowledged)."""
        if self._closed:
            return
        try:
            if self._inner is not None:
                wait = self._timeout + (linger or 0.0)
                self.call(self._inner.stop(linger=linger), wait)
        finally:
            self._inner = None
            self._closed = True
            if self._finalizer is not None:
                self._finalizer.detach()
            if self._io is not None:
                self._io.stop()
            if self._dispatcher_thread is not None:
                self._dispatcher_thread.close()

    def open_queue(
        self,
        uri: str,
        *,
        read: bool = False,
        write: bool = False,
        ack: bool = True,
        options: QueueOptions | None = None,
        on_message: Callable[[ReceivedMessage], object] | None = None,
        **option_values: Any,
    ) -> Queue:
        """Open ``uri``. With ``on_message``, each message is passed to it on the dispatcher
        thread (confirm it with ``queue.confirm(message)``); otherwise use ``get``/iteration."""
        if self._closed:
            raise SessionStoppedError("session is stopped")
        if self._inner is None:
            raise UsageError("session is not started")
        inner_session = self._inner
        opened = self.call(
            inner_session.open_queue(
                uri, read=read, write=write, ack=ack, options=options, **option_values
            ),
            self._timeout,
        )
        if on_message is not None:
            dispatcher = self.dispatcher
            handler = on_message

            async def pump() -> None:
                # At most ON_MESSAGE_WINDOW messages wait for the handler on the dispatcher;
                # the rest stay in the queue, where they hold the socket's reading back.
                loop = asyncio.get_running_loop()
                window = asyncio.Semaphore(ON_MESSAGE_WINDOW)

                def handled() -> None:
                    with contextlib.suppress(RuntimeError):  # the loop is gone: stopped
                        loop.call_soon_threadsafe(window.release)

                async for message in opened:
                    await window.acquire()
                    dispatcher.submit(partial(_call_then, handler, message, handled))

            assert self._io is not None  # started: call above ran on it
            self._io.submit(pump())
        return Queue(self, opened)

    def __enter__(self) -> Session:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
