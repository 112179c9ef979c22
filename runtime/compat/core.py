"""The state a compat ``Session`` shares across its jobs, and the plumbing they all use: running a
coroutine on the I/O loop, refusing calls that must not block the callback thread or that come
after the end, finding a queue by its URI.

The ``Session`` is a chain of layers, each a job (as the client engine is): ``SessionCore`` →
``HostHealthLayer`` (``compat.health``) → ``QueueLayer`` (``compat.queue_ops``) → ``Session``
(``compat.session``: connecting, posting, stopping).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from pybmq.client.aio import AsyncSession
from pybmq.compat.callbacks import CallbackThread
from pybmq.compat.checks import STOPPED
from pybmq.compat.dataplane import DataPlane
from pybmq.compat.exceptions import Error
from pybmq.compat.messages import Message, MessageHandle
from pybmq.compat.queues import QueueRecord
from pybmq.compat.values import BasicHealthMonitor, Timeouts

T = TypeVar("T")


class SessionCore:
    """What every layer of the compat ``Session`` reads; the constructor sets it."""

    _timeouts: Timeouts
    _on_message: Callable[[Message, MessageHandle], None] | None
    _monitor: BasicHealthMonitor | None
    _queues: dict[str, QueueRecord]  # URI → queue; writers hold _lock
    _lock: threading.Lock
    _stopped: bool
    _lost: bool
    _inner: AsyncSession | None
    _tasks: set[asyncio.Task[None]]  # strong references, as asyncio asks
    _callbacks: CallbackThread
    _loop: asyncio.AbstractEventLoop
    _plane: DataPlane

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

    def _set_request_timeout(self, seconds: float) -> None:
        # Runs on the loop thread just before a request: the engine reads request_timeout when it
        # sends the request, so each call gets its own deadline.
        assert self._inner is not None
        engine = self._inner._engine
        engine.update_options(request_timeout=seconds)

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


__all__ = ["SessionCore"]
