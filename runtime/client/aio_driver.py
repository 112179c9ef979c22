"""What drives a :class:`~pybmq.client.engine.ClientEngine` on an asyncio loop, for one
``AsyncSession`` and its queues: the time, the once-per-turn flush, the timer armed at the
engine's next deadline, a future per operation, the open queues, and the read pause that bounds
the messages the application has not taken yet.

``AsyncQueue`` and ``ReceivedMessage`` work through this object (``AsyncSession.driver``), never
through the session's internals; it is a public part, but not one applications need.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from pybmq.client.aio_link import Link
from pybmq.client.engine import ClientEngine
from pybmq.client.fsm import BACKLOG_TRANSITIONS, BacklogInput, BacklogState, SessionState, step
from pybmq.errors import (
    ChannelWriteTimeoutError,
    PostBufferFullError,
    PybmqError,
    SessionStoppedError,
)

if TYPE_CHECKING:
    from pybmq.client.aio_queue import AsyncQueue

log = logging.getLogger("pybmq.client.aio")
# While waiting for room, the budget is looked at again at least this often (seconds): the
# socket's buffer also empties without telling anyone until its low watermark.
ROOM_POLL = 0.05
# ``drain()`` sends what is buffered and gives the loop a turn once this many posts (or a PUT
# event's worth of bytes) wait: a loop posting small messages still reads its ACKs and notices
# a lost connection, and its posts still leave in events of hundreds.
YIELD_AT_POSTS = 256


class EngineDriver:
    """The engine, the loop and the link, plumbed together (see the module docstring).

    ``pump()`` is the owner's: it takes the engine's events out after every input."""

    def __init__(self, engine: ClientEngine, link: Link, pump: Callable[[], None]) -> None:
        self.engine = engine
        self.link = link
        self._pump = pump
        self.loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]  # see bind()
        self._flush_scheduled = False
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None
        self._ops: dict[int, asyncio.Future[None]] = {}
        # Queue handle → its AsyncQueue, while open.
        self.queues: dict[int, AsyncQueue] = {}
        # Flow control: messages handed to queues and not yet taken by the application; the
        # socket is not read while there are too many (see check_reading).
        self.undelivered = 0
        self.reading_paused = False
        self.stopping = False  # stop() began: nothing is held back any more
        # The slow-consumer marks: ``delivered`` compares with ``backlog_high`` and ``taken``
        # with ``backlog_low``, one comparison each; the one not in play is out of reach.
        self.backlog = BacklogState.NORMAL
        self._marks = engine.options.slow_consumer_watermarks
        self.backlog_low = -1
        self.backlog_high = self._marks[1]
        # Called with (high, undelivered) when the backlog crosses a mark (the session's).
        self.on_backlog: Callable[[bool, int], None] | None = None
        # Posts and drains waiting for room (the byte budget, the posts held while
        # reconnecting); each input that may have made room wakes them.
        self._room_waiters = 0
        self._room: asyncio.Event | None = None
        self.stop_reason: str | None = None  # why the session ended (session_ended)

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop this session runs on (known once it starts)."""
        self.loop = loop

    @property
    def bound(self) -> bool:
        return self.loop is not None

    def now(self) -> float:
        """The loop's time: the ``now`` of every engine input."""
        return self.loop.time()

    # ------------------------------------------------------------------ operations

    async def operation(self, op_id: int) -> None:
        """Wait for the engine's answer to operation ``op_id`` (raising its error)."""
        future: asyncio.Future[None] = self.loop.create_future()
        self._ops[op_id] = future
        self.schedule_flush()
        self._pump()
        await future

    def complete(self, op_id: int, error: PybmqError | None) -> None:
        future = self._ops.pop(op_id, None)
        if future is not None and not future.done():
            if error is None:
                future.set_result(None)
            else:
                future.set_exception(error)

    def session_ended(self, reason: str | None) -> None:
        """The session is over: the operations waited for fail, and so do posts and drains
        that wait for room, naming ``reason``."""
        self.stop_reason = reason
        for future in self._ops.values():
            if not future.done():
                future.set_exception(SessionStoppedError(f"session stopped: {reason}"))
        self._ops.clear()

    # ------------------------------------------------------------------ output and time

    def schedule_flush(self) -> None:
        """Flush at the end of this loop turn (everything buffered meanwhile leaves together)."""
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.loop.call_soon(self.flush)

    def flush(self) -> None:
        self._flush_scheduled = False
        data = self.engine.data_to_send()
        if data:
            self.link.write(data)
            # The engine counts it against the byte budget (the post path reads one number;
            # the buffer only drains until the next write or wait for room looks again).
            self.engine.output_buffered(self.link.buffered)
            if not self.reading_paused and self.write_full:
                self.check_reading()
        self._pump()

    def arm_timer(self) -> None:
        deadline = self.engine.next_deadline()
        if self.engine.state is SessionState.STOPPED:
            deadline = None
        if deadline == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = deadline
        if deadline is not None:
            self._timer = self.loop.call_at(deadline, self._on_timer)

    def cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = None
        self.engine.handle_timeout(self.now())
        self.flush()

    # ------------------------------------------------------------------ the byte budget

    async def wait_room(self, count: int, timeout: float | None = None) -> None:
        """Return once the channel is writable and ``count`` more posts fit the session's
        bounds (``count=0``: the channel only, what a confirm waits for).

        A PUT event's worth of unsent posts (or ``YIELD_AT_POSTS`` of them) is flushed first,
        and the loop then gets a turn, so a loop of ``post_nowait`` and ``drain()`` sends as it
        goes. Waiting flushes and yields
        until there is room, at most ``timeout`` seconds (None: ``channel_write_timeout`` at
        the channel's high watermark, ``buffer_wait_timeout`` for the budget), then raises
        ChannelWriteTimeoutError or PostBufferFullError."""
        engine = self.engine
        link = self.link
        flushed = (
            engine.unsent_bytes >= engine.options.max_put_event_bytes
            or engine.unsent_posts >= YIELD_AT_POSTS
        )
        if flushed:
            self.flush()
            await asyncio.sleep(0)  # the loop's turn: the socket writes, ACKs come in
        engine.output_buffered(link.buffered)
        if link.writable and (not count or engine.room(count) is None):
            self._check_running()
            return
        options = engine.options
        start = self.now()
        room_deadline = start + (options.buffer_wait_timeout if timeout is None else timeout)
        write_deadline: float | None = None
        self._room_waiters += 1
        try:
            while True:
                self._check_running()
                now = self.now()
                if not link.writable:
                    if write_deadline is None:
                        wait = options.channel_write_timeout if timeout is None else timeout
                        write_deadline = now + wait
                    if now >= write_deadline:
                        waited = write_deadline - start
                        raise ChannelWriteTimeoutError(
                            f"the channel stayed at its high watermark ({link.buffered} bytes "
                            f"not written) for {waited:g}s: the broker is not reading"
                        )
                    await self._wait_progress(link.wait_writable(), write_deadline - now)
                    continue
                write_deadline = None
                engine.output_buffered(link.buffered)
                problem = engine.room(count) if count else None
                if problem is None:
                    return
                if now >= room_deadline:
                    raise PostBufferFullError(
                        f"no room for a post within {room_deadline - start:g}s: {problem}"
                    )
                self.flush()  # what is unsent goes (its ACK clock starts)
                if self._room is None:
                    self._room = asyncio.Event()
                self._room.clear()
                await self._wait_progress(self._room.wait(), min(room_deadline - now, ROOM_POLL))
        finally:
            self._room_waiters -= 1

    @staticmethod
    async def _wait_progress(waiting: Awaitable[object], seconds: float) -> None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(waiting, max(seconds, 0.0))

    def _check_running(self) -> None:
        if self.engine.state is SessionState.STOPPED:
            raise SessionStoppedError(f"session stopped: {self.stop_reason}")

    def room_changed(self) -> None:
        """Something that can make room happened (an ACK, a reconnect, the end): the waiters
        look again."""
        if self._room_waiters and self._room is not None:
            self._room.set()

    # ------------------------------------------------------------------ flow control

    def _read_bound(self) -> int:
        bound = self.engine.options.max_undelivered_messages
        return bound or max(self.engine.credit.total_messages, 1)

    @property
    def write_full(self) -> bool:
        """The socket's write buffer is past twice its high watermark: the broker reads nothing
        of what we send, so we stop reading it too (resumed at the low watermark). Posts stop
        at the high watermark (drain); this bounds what answers and confirms could add."""
        link = self.link
        return link.buffered > 2 * link.high_water

    def check_reading(self) -> None:
        """Pause reading above the bound; resume once the backlog is down to half of it. The
        memory the client holds is then the bound, plus one read of the socket. Also paused
        while the write buffer is full (``write_full``)."""
        if not self.link.open:
            return
        bound = self._read_bound()
        if self.write_full:
            pause = True
        elif self.stopping or self.engine.awaiting_response:
            # Never hold back the answer to a request: the application may be waiting for it
            # (and stopping drops what is not taken anyway).
            pause = False
        elif self.reading_paused:
            pause = self.undelivered > bound // 2
        else:
            pause = self.undelivered > bound
        if pause == self.reading_paused:
            return
        self.reading_paused = pause
        self.link.pause_reading(pause)
        if pause:
            log.debug(
                "reading paused: %d messages not taken, %d bytes not written",
                self.undelivered,
                self.link.buffered,
            )
        # Not reading because the broker does not read us is not our silence: its heartbeats
        # still count as missed, so a broker stuck that way is given up in time.
        self.engine.pause_reading(pause and not self.write_full, self.now())
        self.arm_timer()

    def delivered(self, count: int) -> None:
        """``count`` messages were handed to a queue (the pump checks the bound after a turn)."""
        self.undelivered += count
        if self.undelivered >= self.backlog_high:
            self._backlog(BacklogInput.REACHED_HIGH)

    def taken(self, count: int) -> None:
        """The application took (or a closed queue dropped) ``count`` messages."""
        self.undelivered -= count
        if self.reading_paused:
            self.check_reading()
        if self.undelivered <= self.backlog_low:
            self._backlog(BacklogInput.DOWN_TO_LOW)

    def _backlog(self, event: BacklogInput) -> None:
        """The backlog crossed a slow-consumer mark: arm the other one and tell the session."""
        self.backlog = step("backlog", BACKLOG_TRANSITIONS, self.backlog, event)
        high = self.backlog is BacklogState.HIGH
        low_mark, high_mark = self._marks
        self.backlog_low = low_mark if high else -1
        self.backlog_high = sys.maxsize if high else high_mark
        log.debug("slow consumer: %s (%d messages not taken)", self.backlog.value, self.undelivered)
        if self.on_backlog is not None:
            self.on_backlog(high, self.undelivered)

    def reading_restarted(self) -> None:
        """A new connection is read from the start (then paused again if still behind)."""
        self.reading_paused = False
        self.check_reading()


__all__ = ["ROOM_POLL", "YIELD_AT_POSTS", "EngineDriver"]
