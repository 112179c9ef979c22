"""The asyncio shell's queue (``AsyncQueue``: post, get, iterate) and the messages it yields
(``ReceivedMessage``: payload, properties, confirm).

Every post goes through one of two primitives, ``_buffer`` (one message) and ``_buffer_many``
(a batch), and every delivery makes its messages with ``message_type``: what a layer wraps. The
tracing layer (``pybmq.client.aio_tracing.TracedQueue``, used by a session that traces) wraps
exactly these and ``confirm_many_nowait``, so the paths themselves exist once.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pybmq.client.events import (
    Ack,
    AckStatus,
    CompressedMessage,
    Message,
)
from pybmq.client.options import (
    QueueOptions,
    queue_options,
)
from pybmq.client.subscriptions import Subscription
from pybmq.errors import MessageDecodeError, ProtocolError, SessionStoppedError, UsageError
from pybmq.wire.properties import MessageProperties, PropertyValue

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from pybmq.client.aio import AsyncSession
    from pybmq.client.aio_driver import EngineDriver

__all__ = ["NO_PROPERTIES", "AckCallback", "AsyncQueue", "ReceivedMessage", "settle_ack"]

log = logging.getLogger("pybmq.client.aio")
AckCallback = Callable[[Ack], object]


def settle_ack(ack: Ack, context: object) -> Exception | None:
    """A post's outcome to what waits for it: its future (SessionStoppedError when the session
    ended before an ACK) or its ``on_ack`` callback. Returns what the callback raised (logged
    here), for the session to count and report."""
    if isinstance(context, asyncio.Future):
        if not context.done():
            if ack.local and ack.status is AckStatus.NOT_CONNECTED:
                context.set_exception(SessionStoppedError(f"post not acknowledged: {ack.reason}"))
            else:
                context.set_result(ack)
    elif context is not None:
        callback: AckCallback = context  # type: ignore[assignment]
        try:
            callback(ack)
        except Exception as exc:
            log.exception("on_ack callback raised for %s", ack.guid.hex())
            return exc
    return None


NO_PROPERTIES: Mapping[str, PropertyValue] = MessageProperties()


def _properties_error(message: Message | CompressedMessage) -> MessageDecodeError | None:
    """Why the properties of ``message`` (not None) do not parse, or None (parsing them once:
    the parsed form stays on the message)."""
    properties = message.properties
    assert properties is not None
    try:
        len(properties)
    except ProtocolError as exc:
        return MessageDecodeError(
            f"message {message.guid.hex()}: properties cannot be decoded: {exc.reason}",
            offset=exc.offset,
            path=exc.path,
        )
    return None


class _Done:
    """An awaitable that is already complete (what a blocking ``confirm()`` returns)."""

    def __await__(self) -> Generator[None, None, None]:
        return iter(())  # type: ignore[return-value]


_DONE = _Done()


class ReceivedMessage:
    """A PUSHed message handed to the application; ``confirm()`` tells the broker it is done."""

    __slots__ = ("_queue", "_received_at", "generation", "message")

    def __init__(
        self,
        queue: AsyncQueue,
        message: Message | CompressedMessage,
        generation: int,
        received_at: float = 0.0,
    ) -> None:
        self._queue = queue
        self.message = message
        self.generation = generation  # which connection brought it
        self._received_at = received_at  # loop time of its arrival (for the confirm latency)

    @property
    def payload(self) -> bytes:
        """The message's data as posted, decompressed on first access; empty for a poison message
        (``error`` then says why)."""
        return self.message.payload

    @property
    def properties(self) -> Mapping[str, PropertyValue]:
        """Name → value (a typed ``MessageProperties``; empty when the message has none, or
        when they do not decode: ``error`` then says why). Parsed on first access."""
        properties = self.message.properties
        if properties is None or _properties_error(self.message) is not None:
            return NO_PROPERTIES
        return properties

    @property
    def guid(self) -> bytes:
        """The 16-byte id the producer gave the message; the broker confirms by it."""
        return self.message.guid

    @property
    def error(self) -> MessageDecodeError | None:
        """Why the payload or the properties are unavailable (a poison message), or None;
        confirm it all the same. Properties are parsed here if they were not yet."""
        error = self.message.error
        if error is None and self.message.properties is not None:
            return _properties_error(self.message)
        return error

    @property
    def subscription(self) -> Subscription | None:
        """The subscription this message matched (one of the queue's ``QueueOptions``
        subscriptions, the very object); None when the queue has no subscriptions."""
        return self.message.subscription

    @property
    def total_size(self) -> int:
        """The application data's size as it came on the wire: properties and payload, as
        compressed when the message was (upstream's ``Message.totalSize``)."""
        return self.message.total_size

    @property
    def trace_context(self) -> Context | None:
        """The OpenTelemetry context of this message's ``receive`` span (a child of the
        producer's), to parent the application's own spans; None when not tracing."""
        return None

    @property
    def queue(self) -> AsyncQueue:
        """The queue that received the message."""
        return self._queue

    @property
    def confirmable(self) -> bool:
        """False once the connection that delivered it is lost: a confirm is then dropped (that
        broker session is gone and the broker redelivers the message). With the queue's
        de-duplication window, True again once the broker pushed it again on the current
        connection (the window held the repeat back; the confirm goes there)."""
        if self.generation == self._queue.generation:
            return True
        consumer = self._queue.driver.engine.consumer
        return consumer.sends_late_confirm(self.message.queue_id, self.message.guid)

    def confirm_nowait(self) -> None:
        """Buffer the CONFIRM; it leaves with the others of this loop turn."""
        driver = self._queue.driver
        latency = driver.now() - self._received_at
        driver.engine.confirm(self.message.queue_id, self.message.guid, self.generation, latency)
        driver.schedule_flush()

    def confirm(self) -> Awaitable[None]:
        """Confirm, waiting first if the socket's write buffer is over its high-water mark.

        On the session's loop this returns the coroutine to await (``await message.confirm()``).
        Called from blocking code (no running loop: the blocking ``Session``'s messages, a
        thread of the application), it confirms on the session's loop and returns once done;
        the awaitable it returns then is already complete, so nothing is left un-awaited."""
        loop = self._queue.driver.loop
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            return self._confirm()
        if not self._queue.driver.bound or loop.is_closed():
            raise SessionStoppedError("cannot confirm: the session is stopped")
        future = asyncio.run_coroutine_threadsafe(self._confirm(), loop)
        if running is not None:  # another loop: await it there
            return asyncio.wrap_future(future)
        future.result()
        return _DONE

    async def _confirm(self) -> None:
        self.confirm_nowait()
        await self._queue.driver.wait_room(0)  # the channel's high watermark only

    def __repr__(self) -> str:
        return f"<ReceivedMessage {self.guid.hex()} {len(self.payload)}B on {self._queue.uri}>"


class AsyncQueue:
    """A queue opened in an :class:`AsyncSession`. Post to it, iterate it, configure, close."""

    # What ``deliver`` and ``deliver_many`` make of each message (a layer may make more of it).
    message_type: type[ReceivedMessage] = ReceivedMessage

    def __init__(self, session: AsyncSession, queue_id: int, uri: str) -> None:
        self.session = session
        self.driver: EngineDriver = session.driver  # what it posts, confirms and waits through
        # The engine's session state, read per message by ``ReceivedMessage.confirmable``.
        self._lifecycle = self.driver.engine.lifecycle
        self.queue_id = queue_id
        self.uri = uri
        # A deque and explicit waiters rather than asyncio.Queue: this is the per-message path.
        self._messages: collections.deque[ReceivedMessage] = collections.deque()
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._closed = False
        self._counted = True  # its messages count towards the session's read pause

    @property
    def generation(self) -> int:
        """Which connection the session is on (a message of an earlier one is not confirmed)."""
        return self._lifecycle.generation

    @property
    def suspended(self) -> bool:
        """True while the host is unhealthy and this queue (``suspends_on_bad_host_health``) is
        suspended: posts raise QueueSuspendedError and a reader receives nothing new."""
        queue = self.driver.engine.queues.get(self.queue_id)
        return queue is not None and queue.suspended

    def post_nowait(
        self,
        payload: bytes,
        *,
        properties: Mapping[str, Any] | None = None,
        on_ack: AckCallback | None = None,
        ack: bool = True,
        compression: str | None = None,
    ) -> bytes:
        """Post without waiting; ``on_ack(ack)`` runs on the loop when the ACK (or NACK) comes.
        ``ack=False`` (no ``on_ack``) asks the broker for no ACK. ``compression``: ``"zlib"`` or
        ``"none"`` for this message (None: the session's ``compression_threshold`` decides).
        Returns the message GUID. Never waits: PostBufferFullError when the session holds
        ``max_buffered_bytes`` for the broker already (``await session.drain()`` waits for room)."""
        return self._buffer(payload, properties, on_ack, ack, compression)

    def post_many_nowait(
        self,
        payloads: Sequence[bytes],
        *,
        properties: Mapping[str, Any] | None = None,
        on_ack: AckCallback | None = None,
    ) -> list[bytes]:
        """``post_nowait`` for a batch sharing ``properties`` and ``on_ack``: the fast path (the
        checks, the properties and the GUID clock once per batch). All or nothing: a payload
        that would be refused raises before any is buffered. Returns the GUIDs in order."""
        return self._buffer_many(payloads, properties, on_ack)

    async def post(
        self,
        payload: bytes,
        *,
        properties: Mapping[str, Any] | None = None,
        compression: str | None = None,
    ) -> Ack:
        """Post and wait for the broker's ACK. A NACK (including the local TIMEOUT one) is
        returned, not raised; check ``ack.ok``. Raises SessionStoppedError if the session ends.
        Waits first for room (see ``AsyncSession.drain``: ChannelWriteTimeoutError or
        PostBufferFullError when none comes). ``compression``: as in ``post_nowait``."""
        await self.driver.wait_room(1)
        future: asyncio.Future[Ack] = self.driver.loop.create_future()
        self._buffer(payload, properties, future, True, compression)
        return await future

    def _buffer(
        self,
        payload: bytes,
        properties: Mapping[str, Any] | None,
        context: AckCallback | asyncio.Future[Ack] | None,
        ack: bool,
        compression: str | None,
    ) -> bytes:
        """One post buffered for this loop turn's PUT event; ``context`` (an ``on_ack`` or the
        future ``post`` awaits) comes back with its ACK. The GUID."""
        driver = self.driver
        guid = driver.engine.post(
            self.queue_id,
            payload,
            driver.now(),
            properties=properties,
            context=context,
            ack=ack,
            compression=compression,
        )
        driver.schedule_flush()
        return guid

    def _buffer_many(
        self,
        payloads: Sequence[bytes],
        properties: Mapping[str, Any] | None,
        on_ack: AckCallback | None,
    ) -> list[bytes]:
        """A batch buffered for this loop turn's PUT event (all or nothing). The GUIDs."""
        driver = self.driver
        guids = driver.engine.post_many(
            self.queue_id, payloads, driver.now(), properties=properties, context=on_ack
        )
        driver.schedule_flush()
        return guids

    async def configure(
        self,
        options: QueueOptions | None = None,
        *,
        suspended: bool = False,
        timeout: float | None = None,
        **option_values: Any,
    ) -> None:
        """Change flow control, priority or subscriptions of this (reader) queue;
        ``suspended=True`` asks the broker to deliver nothing until the next configure.
        ``timeout``: seconds for the answer (None: the session's ``configure_timeout``)."""
        options = queue_options(options, option_values)
        driver = self.driver
        with self.session.operation_span("configure", self.uri):
            await driver.operation(
                driver.engine.configure_queue(
                    self.queue_id, options, driver.now(), suspended=suspended, timeout=timeout
                )
            )

    async def close(self, *, timeout: float | None = None) -> None:
        """Detach from the queue (configure to nothing, then CloseQueue). Ends iteration.
        ``timeout``: seconds for each answer (None: the session's ``close_timeout``)."""
        driver = self.driver
        if self._closed:
            return
        log.debug("closing %s", self.uri)
        self._uncount()  # the application is done with it: its leftovers hold nothing back
        with self.session.operation_span("close", self.uri):
            await driver.operation(driver.engine.close_queue(self.queue_id, driver.now(), timeout))
        driver.queues.pop(self.queue_id, None)
        self.end()

    async def get(self) -> ReceivedMessage:
        """The next message; raises SessionStoppedError once the queue or session is closed
        (messages that arrived before that are still returned first)."""
        messages = self._messages
        while not messages:
            if self._closed:
                raise SessionStoppedError(f"queue {self.uri} is closed")
            waiter = self.driver.loop.create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except BaseException:  # cancelled, e.g. by a timeout around get()
                if waiter.done() and not waiter.cancelled():
                    self._wake_one()  # it was woken for a message it will not take: pass it on
                else:
                    waiter.cancel()
                    with contextlib.suppress(ValueError):
                        self._waiters.remove(waiter)
                raise
            # A waiter that got its result was already taken off the deque by whoever woke it.
        return self._take()

    def get_nowait(self) -> ReceivedMessage | None:
        """The next message if one is already here, else None."""
        return self._take() if self._messages else None

    def get_many_nowait(self, max_count: int) -> list[ReceivedMessage]:
        """Up to ``max_count`` of the messages already here, oldest first (maybe none): the
        batch form of ``get_nowait``, for a loop that confirms with ``confirm_many_nowait``."""
        messages = self._messages
        count = min(max_count, len(messages))
        if count <= 0:
            return []
        popleft = messages.popleft
        taken = [popleft() for _ in range(count)]
        if self._counted:
            self.driver.taken(count)
        return taken

    def confirm_many_nowait(self, messages: Iterable[ReceivedMessage]) -> None:
        """``confirm_nowait`` for many messages of this queue, checked once per connection that
        delivered them (the consuming fast path; the confirm latency is not sampled)."""
        if not isinstance(messages, (list, tuple)):
            messages = list(messages)
        for received in messages:
            if received.queue is not self:
                raise UsageError(f"{received!r} is not a message of {self!r}")
        engine = self.driver.engine
        generations = {received.generation for received in messages}
        if len(generations) == 1:  # the usual case: one connection delivered them all
            guids = [received.message.guid for received in messages]
            engine.confirm_many(self.queue_id, guids, generations.pop())
        else:
            for generation in generations:
                guids = [r.message.guid for r in messages if r.generation == generation]
                engine.confirm_many(self.queue_id, guids, generation)
        self.driver.schedule_flush()

    def _take(self) -> ReceivedMessage:
        if self._counted:
            self.driver.taken(1)
        return self._messages.popleft()

    def _uncount(self) -> None:
        """Stop counting this queue's messages towards the session's read pause."""
        if self._counted:
            self._counted = False
            if self._messages:
                self.driver.taken(len(self._messages))

    def __aiter__(self) -> AsyncQueue:
        return self

    async def __anext__(self) -> ReceivedMessage:
        try:
            return await self.get()
        except SessionStoppedError:
            raise StopAsyncIteration from None

    def deliver(
        self,
        message: Message | CompressedMessage,
        generation: int | None = None,
        received_at: float | None = None,
    ) -> None:
        """Queue a message of connection ``generation`` that arrived at loop time
        ``received_at`` (the engine's now when not given; the session's pump reads them once
        per batch of events). Called by the session (and by tests injecting a message)."""
        if generation is None or received_at is None:
            engine = self.driver.engine
            generation, received_at = engine.generation, engine.now
        self._messages.append(self.message_type(self, message, generation, received_at))
        if self._counted:
            self.driver.delivered(1)
        if self._waiters:
            self._wake_one()

    def deliver_many(
        self, messages: list[Message | CompressedMessage], generation: int, received_at: float
    ) -> None:
        """``deliver`` for a run of messages of one connection and loop turn (the session's)."""
        make = self.message_type
        self._messages.extend(
            [make(self, message, generation, received_at) for message in messages]
        )
        if self._counted:
            self.driver.delivered(len(messages))
        waiters = self._waiters
        for _ in messages:  # one getter woken per message, as ``deliver`` does
            if not waiters:
                break
            self._wake_one()

    def _wake_one(self) -> None:
        """Wake the first getter still waiting (skipping any that were cancelled)."""
        waiters = self._waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def end(self) -> None:
        """No more messages (closed, or the session ended): getters are woken to find out."""
        if not self._closed:
            self._closed = True
            self._uncount()
            while self._waiters:
                waiter = self._waiters.popleft()
                if not waiter.done():
                    waiter.set_result(None)

    def __repr__(self) -> str:
        return f"<AsyncQueue {self.queue_id} {self.uri}>"
