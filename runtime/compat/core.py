"""The part of a compat ``Session`` every other part reads: the I/O loop and its thread, the
pybmq ``AsyncSession`` behind it, the callback thread, the data plane, the queue table and the
session's end flags, with the plumbing they all use (running a coroutine on the loop, refusing
calls that must not block the callback thread or that come after the end, finding a queue).

The ``Session`` (``compat.session``) holds this part as ``core`` beside the host health part
(``compat.health``) and the queue operations part (``compat.queue_ops``); none inherits another.
Nothing here refers to the ``Session`` itself, so the loop never keeps a dropped one alive.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from pybmq.client.aio import AsyncSession
from pybmq.compat.callbacks import CALL, CallbackThread
from pybmq.compat.checks import STOPPED
from pybmq.compat.dataplane import DataPlane
from pybmq.compat.exceptions import Error
from pybmq.compat.messages import Message, MessageHandle
from pybmq.compat.queues import QueueRecord
from pybmq.compat.values import BasicHealthMonitor, Timeouts
from pybmq.loopthread import LoopThread

T = TypeVar("T")


class SessionCore:
    """The shared state of one compat ``Session`` and its loop plumbing (pybmq's part, not the
    official API: for diagnostics and tests)."""

    def __init__(
        self,
        timeouts: Timeouts,
        on_message: Callable[[Message, MessageHandle], None] | None,
        monitor: BasicHealthMonitor | None,
        callbacks: CallbackThread,
        high_water: int,
    ) -> None:
        self.timeouts = timeouts
        self.on_message = on_message
        self.monitor = monitor
        self.queues: dict[str, QueueRecord] = {}  # URI → queue; writers hold lock
        self.lock = threading.Lock()
        self.stopped = False
        self.lost = False  # the connection ended without stop()
        self.inner: AsyncSession | None = None
        self.tasks: set[asyncio.Task[None]] = set()  # strong references, as asyncio asks
        # The channel high-water mark the AsyncSession and the data plane enforce.
        self.high_water = high_water
        self.callbacks = callbacks
        self.io = LoopThread("pybmq-compat-io")
        self.loop = self.io.loop
        self.plane = DataPlane(self.loop, callbacks, high_water)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the I/O loop and wait for it (its own deadlines bound the wait)."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            raise Error("the session was stopped during the call") from None

    def keep(self, task: asyncio.Task[None]) -> None:
        """Hold a loop task until it is done (asyncio keeps only weak references)."""
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def blocking_call_allowed(self, what: str) -> None:
        if threading.current_thread() is self.callbacks.thread:
            raise Error(
                f"{what} cannot be called from a BlazingMQ callback: it waits for the broker, "
                "which needs the callback thread (the official SDK deadlocks here)"
            )

    def wait_for_callbacks(self, timeout: float) -> bool:
        """Wait until the callback thread has run everything handed to it so far (False if
        it takes longer than ``timeout``): what close_queue promises of the ACK callbacks."""
        if threading.current_thread() is self.callbacks.thread:
            return False  # refused before (blocking_call_allowed): never wait for itself
        done = threading.Event()
        self.callbacks.submit((CALL, done.set))
        return done.wait(timeout)

    def check_running(self) -> None:
        if self.stopped:
            raise Error(STOPPED)
        if self.lost:
            raise Error("the connection to the broker was lost and the session ended")

    def set_request_timeout(self, seconds: float) -> None:
        # Runs on the loop thread just before a request: the engine reads request_timeout when it
        # sends the request, so each call gets its own deadline.
        assert self.inner is not None
        self.inner.engine.update_options(request_timeout=seconds)

    def queue(self, queue_uri: str) -> QueueRecord:
        uri = queue_uri.decode() if isinstance(queue_uri, bytes) else queue_uri
        queue = self.queues.get(uri)  # one dict read is atomic; writers hold lock
        if queue is None or (queue.inner is None and not queue.invalid):
            raise Error("Queue not opened")
        return queue

    @staticmethod
    def refuse_invalid(operation: str, queue: QueueRecord) -> None:
        if queue.invalid:
            raise Error(
                f"Failed to {operation} {queue.uri} queue: INVALID_QUEUE: its open timed out"
            )

    def shutdown(self) -> None:
        """End the threads (what is queued for callbacks runs first) and drop the data plane."""
        self.stopped = True
        self.callbacks.close(self.timeouts.disconnect_timeout)  # type: ignore[arg-type]
        self.io.stop()
        self.plane.release()


__all__ = ["SessionCore"]
