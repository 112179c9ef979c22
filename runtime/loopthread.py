"""Threads for code without an event loop: an asyncio loop on a thread of its own
(``LoopThread``), and one thread that runs callbacks in order (``JobDispatcher``, and
``CallbackDispatcher`` for jobs that are plain callables).

The blocking client (``pybmq.client.sync``), the drop-in (``pybmq.compat``) and the threaded
simulator (``pybmq.sim.server``) all run their asyncio code this way, so they share one tested
implementation of starting, calling into, and stopping such a thread.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any, Generic, TypeVar

__all__ = ["CallbackDispatcher", "J", "JobDispatcher", "LoopThread", "T"]

T = TypeVar("T")
J = TypeVar("J")

log = logging.getLogger("pybmq")


class LoopThread:
    """An asyncio event loop running forever on a daemon thread, started by the constructor."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._close_when_stopped = False
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()
        if self._close_when_stopped:  # abandon(): nobody else will close it
            self.loop.close()

    def in_thread(self) -> bool:
        """Whether the caller runs on the loop's thread (where blocking on it would deadlock)."""
        return threading.current_thread() is self.thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop; its result comes in the returned future."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result; ``TimeoutError`` (and the coroutine
        cancelled) when it takes longer than ``timeout`` seconds. A ``TimeoutError`` the
        coroutine raises itself (a ``RequestTimeoutError``) comes out as it is."""
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            # The same class as TimeoutError on 3.11+: the coroutine's own error, or our wait.
            if future.done() and not future.cancelled():
                error = future.exception()
                if error is not None:
                    raise error from None
                return future.result()
            future.cancel()
            raise TimeoutError(f"no result within {timeout}s") from None

    def abandon(
        self, last: Callable[[], Awaitable[object]] | None = None, timeout: float = 2.0
    ) -> None:
        """End the loop from any thread, its own included (a finalizer may run there): run
        ``last()`` on it, cancel every task left, stop, and close the loop on its own thread;
        from another thread, wait up to ``timeout`` for the thread to end."""
        if self.loop.is_closed():
            return
        self._close_when_stopped = True

        async def last_turns() -> None:
            try:
                if last is not None:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(last(), timeout)
                tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
                for task in tasks:
                    task.cancel()
                if tasks:
                    await asyncio.wait(tasks, timeout=timeout)
            finally:
                asyncio.get_running_loop().stop()

        try:
            self.loop.call_soon_threadsafe(lambda: self.loop.create_task(last_turns()))
        except RuntimeError:  # closed meanwhile
            return
        if not self.in_thread():
            self.thread.join(timeout + 1)

    def call_soon(self, callback: Callable[..., object], *args: object) -> None:
        """Run ``callback(*args)`` on the loop thread soon (safe from any thread)."""
        self.loop.call_soon_threadsafe(callback, *args)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop, wait up to ``timeout`` for the thread, and close the loop once it has
        stopped. From the loop's own thread it only asks the loop to stop."""
        if self.loop.is_closed():
            return
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
        if not self.in_thread():
            self.thread.join(timeout)
        if not self.loop.is_running() and not self.thread.is_alive():
            self.loop.close()


class JobDispatcher(Generic[J]):
    """One thread that runs submitted jobs one at a time, in submission order; what running a
    job means is ``_dispatch`` (a subclass's). A job that raises is reported (``report``, by
    default a log record with its traceback) and the next job runs. ``close`` runs what is
    already queued, then ends the thread.
    """

    def __init__(self, name: str, report: Callable[[BaseException], None] | None = None) -> None:
        self._jobs: collections.deque[J | None] = collections.deque()
        self._ready = threading.Condition()
        self._report = report or (lambda exc: log.error("callback raised", exc_info=exc))
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def submit(self, job: J) -> None:
        with self._ready:
            self._jobs.append(job)
            self._ready.notify_all()

    def submit_many(self, jobs: Iterable[J]) -> None:
        """Queue several jobs with one wake-up of the thread."""
        with self._ready:
            self._jobs.extend(jobs)
            self._ready.notify_all()

    def _dispatch(self, job: J) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._jobs:
                    self._ready.wait()
                jobs, self._jobs = self._jobs, collections.deque()
            # Pop each job so none is still referenced (with what it holds) while idle.
            while jobs:
                job = jobs.popleft()
                if job is None:
                    return
                try:
                    self._dispatch(job)
                except Exception as exc:  # a user callback raised: report it, keep dispatching
                    self._report(exc)
                del job

    def close(self, timeout: float = 10.0) -> None:
        """Run what is queued, then end the thread (waiting for it unless called from it)."""
        with self._ready:
            self._jobs.append(None)
            self._ready.notify_all()
        if threading.current_thread() is not self.thread:
            self.thread.join(timeout)


class CallbackDispatcher(JobDispatcher[Callable[[], object]]):
    """A ``JobDispatcher`` whose jobs are callables taking no argument."""

    def _dispatch(self, job: Callable[[], object]) -> None:
        job()
