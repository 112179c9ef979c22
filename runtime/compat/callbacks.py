"""The one thread that runs a compat session's user callbacks, in order, and reports the
slow-consumer watermarks of their backlog as the official SDK does."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable

from pybmq.compat import session_events as ev
from pybmq.loopthread import CallbackDispatcher


def print_callback_error(exc: BaseException) -> None:
    """As the official SDK does: a user callback's exception prints its traceback to stderr
    (looked up at call time, so redirections apply) and dispatch goes on."""
    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)


class CallbackThread(CallbackDispatcher):
    """Runs user callbacks one at a time, in submission order, and watches the message backlog."""

    def __init__(self, on_event: Callable[[ev.SessionEvent], None], watermarks: tuple[int, int]):
        self._emit = on_event
        self._low, self._high = watermarks
        self._backlog = 0
        self._slow = False
        super().__init__("pybmq-compat-callbacks", print_callback_error)

    def submit_event(self, event: ev.SessionEvent) -> None:
        self.submit(lambda: self._emit(event))

    def submit_batch(self, batch: list[tuple[Callable[[], object], bool]]) -> None:
        """Queue (job, is_message) pairs with one wake-up; messages count towards the backlog."""
        with self._ready:
            for job, is_message in batch:
                self._jobs.append(job)
                if is_message:
                    self._backlog += 1
                    if self._backlog >= self._high and not self._slow:
                        self._slow = True
                        event: ev.SessionEvent = ev.SlowConsumerHighWaterMark(None)
                        self._jobs.append(lambda e=event: self._emit(e))  # type: ignore[misc]
            self._ready.notify_all()

    def _message_done(self) -> None:
        with self._ready:
            self._backlog -= 1
            if self._slow and self._backlog <= self._low:
                self._slow = False
                event: ev.SessionEvent = ev.SlowConsumerNormal(None)
                self._jobs.appendleft(lambda: self._emit(event))
