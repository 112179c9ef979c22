"""What drives a :class:`~pybmq.client.engine.ClientEngine` on an asyncio loop, for one
``AsyncSession`` and its queues: the time, the once-per-turn flush, the timer armed at the
engine's next deadline, a future per operation, the open queues, and the read pause that bounds
the messages the application has not taken yet.

``AsyncQueue`` and ``ReceivedMessage`` work through this object (``AsyncSession.driver``), never
through the session's internals; it is a public part, but not one applications need.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from pybmq.client.aio_link import Link
from pybmq.client.engine import ClientEngine
from pybmq.client.fsm import BACKLOG_TRANSITIONS, BacklogInput, BacklogState, SessionState, step
from pybmq.errors import PybmqError, SessionStoppedError

if TYPE_CHECKING:
    from pybmq.client.aio_queue import AsyncQueue

log = logging.getLogger("pybmq.client.aio")


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

    def fail_operations(self, reason: str | None) -> None:
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


__all__ = ["EngineDriver"]
