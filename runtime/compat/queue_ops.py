"""Opening, configuring and closing queues of a compat ``Session`` (each waits for the broker)."""

from __future__ import annotations

import asyncio
import dataclasses
import weakref
from typing import Any

from pybmq.client.options import QueueOptions as RuntimeQueueOptions
from pybmq.compat.checks import (
    DEFAULT_TIMEOUT,
    check_dedup,
    check_queue_options,
    check_reader_priority,
    failure,
    merged,
    seconds_or_none,
)
from pybmq.compat.core import SessionCore
from pybmq.compat.exceptions import BrokerTimeoutError, Error
from pybmq.compat.health import HostHealth
from pybmq.compat.lifetime import pump_messages
from pybmq.compat.queues import QueueRecord
from pybmq.compat.values import QueueOptions
from pybmq.errors import PybmqError
from pybmq.uri import parse_queue_uri

# How long close_queue waits for the callback thread when no timeout applies.
DEFAULT_CALLBACK_WAIT = 300.0


class QueueOperations:
    """``open_queue``, ``configure_queue``, ``get_queue_options`` and ``close_queue``.

    ``owner`` is the ``Session``, held weakly: a reader queue's pump hands its messages to
    ``on_message`` with a handle on it, and must not keep a dropped session alive."""

    def __init__(self, core: SessionCore, health: HostHealth, owner: weakref.ref[Any]) -> None:
        self._core = core
        self._health = health
        self._owner = owner

    def open_queue(
        self,
        queue_uri: str,
        read: bool = False,
        write: bool = False,
        options: QueueOptions = QueueOptions(),  # noqa: B008  # never mutated here
        timeout: float = DEFAULT_TIMEOUT,
        dedup: tuple[int, float] = (0, 300.0),
    ) -> None:
        """Open ``queue_uri`` for reading (messages go to ``on_message``) and/or writing;
        ``dedup``: (``dedup_window``, ``dedup_window_age``), pybmq's addition."""
        core = self._core
        if read and core.on_message is None:
            raise Error(
                f"Can't open queue {queue_uri} in read mode: no on_message "
                "callback was provided at Session construction"
            )
        self._check_health_option(options)
        seconds = seconds_or_none(timeout) or core.timeouts.open_queue_timeout
        check_queue_options(options)
        if read:
            check_reader_priority("open", str(queue_uri), options)
        check_dedup(*dedup)
        core.check_running()
        core.blocking_call_allowed("open_queue")
        uri = queue_uri.decode() if isinstance(queue_uri, bytes) else queue_uri
        if parse_queue_uri(uri) is None:
            raise Error(f"Failed to open {uri} queue: INVALID_URI: Invalid URI")
        if not (read or write):
            raise Error(
                f"Failed to open {uri} queue: INVALID_FLAGS: at least one of read or write must be set"
            )
        defaults = QueueOptions(
            QueueOptions.DEFAULT_MAX_UNCONFIRMED_MESSAGES,
            QueueOptions.DEFAULT_MAX_UNCONFIRMED_BYTES,
            QueueOptions.DEFAULT_CONSUMER_PRIORITY,
            QueueOptions.DEFAULT_SUSPENDS_ON_BAD_HOST_HEALTH,
        )
        queue = QueueRecord(uri, bool(read), bool(write), merged(defaults, options))
        queue.dedup_window, queue.dedup_window_age = dedup
        with core.lock:
            existing = core.queues.get(uri)
            if existing is not None and existing.invalid:
                raise Error(
                    f"Failed to open {uri} queue: NOT_SUPPORTED: an earlier open of this queue timed out"
                )
            if existing is not None:
                raise Error(f"Failed to open {uri} queue: ALREADY_OPENED: ALREADY_OPENED")
            core.queues[uri] = queue  # reserved: a concurrent open of the same URI fails
        try:
            runtime_options = queue.runtime_options()
            core.run(self._open(queue, runtime_options, seconds))  # type: ignore[arg-type]
        except BaseException as exc:
            error = exc
            if isinstance(exc, (PybmqError, ValueError)) and not isinstance(exc, Error):
                error = failure("open", uri, exc)
            if isinstance(error, BrokerTimeoutError):
                queue.invalid = True
            else:
                with core.lock:
                    core.queues.pop(uri, None)
            if error is exc:
                raise
            raise error from exc
        if queue.options.suspends_on_bad_host_health and core.monitor and not core.monitor.healthy:
            queue.suspended = queue.holding = True

    async def _open(self, queue: QueueRecord, options: RuntimeQueueOptions, seconds: float) -> None:
        core = self._core
        assert core.inner is not None
        core.set_request_timeout(seconds)
        inner = await core.inner.open_queue(
            queue.uri, read=queue.read, write=queue.write, ack=True, options=options
        )
        queue.inner = inner
        if queue.read:
            task = asyncio.get_running_loop().create_task(
                pump_messages(self._owner, core.plane, queue, inner)
            )
            core.keep(task)

    def _check_health_option(self, options: QueueOptions) -> None:
        if options.suspends_on_bad_host_health and self._core.monitor is None:
            raise Error(
                "Queues cannot use suspends_on_bad_host_health if host health"
                " monitoring was disabled when the Session was created"
            )

    def configure_queue(
        self, queue_uri: str, options: QueueOptions, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        """Change the options of an open queue; options left ``None`` keep their value."""
        core = self._core
        self._check_health_option(options)
        seconds = seconds_or_none(timeout) or core.timeouts.configure_queue_timeout
        check_queue_options(options)
        check_reader_priority("configure", str(queue_uri), options)
        core.check_running()
        core.blocking_call_allowed("configure_queue")
        queue = core.queue(queue_uri)
        core.refuse_invalid("configure", queue)
        wanted = merged(queue.options, options)
        if queue.read:
            candidate = dataclasses.replace(queue, options=wanted)
            try:
                runtime_options = candidate.runtime_options()
                core.run(self._configure(queue, runtime_options, seconds))  # type: ignore[arg-type]
            except (PybmqError, ValueError) as exc:
                if isinstance(exc, Error):
                    raise
                raise failure("configure", queue.uri, exc) from exc
        was = queue.options.suspends_on_bad_host_health
        queue.options = wanted
        if core.monitor is not None and not core.monitor.healthy:
            now = bool(wanted.suspends_on_bad_host_health)
            if now and not was:
                self._health.suspend([queue], announce_host=False)
            elif was and not now:
                self._health.resume([queue], announce_host=False)

    async def _configure(
        self, queue: QueueRecord, options: RuntimeQueueOptions, seconds: float
    ) -> None:
        assert queue.inner is not None
        async with queue.busy:
            self._core.set_request_timeout(seconds)
            await queue.inner.configure(options)

    def get_queue_options(self, queue_uri: str) -> QueueOptions:
        """The options of an open queue (a write-only queue reports no consumer settings)."""
        self._core.check_running()
        return self._core.queue(queue_uri).reported_options()

    def close_queue(self, queue_uri: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Close an open queue; its URI can then be opened again. As the official SDK promises,
        every ACK callback of the queue has run when it returns (the callback thread is waited
        for, within the timeout)."""
        core = self._core
        seconds = seconds_or_none(timeout) or core.timeouts.close_queue_timeout
        core.check_running()
        core.blocking_call_allowed("close_queue")
        queue = core.queue(queue_uri)
        core.refuse_invalid("close", queue)
        try:
            core.run(self._close(queue, seconds))  # type: ignore[arg-type]
        except PybmqError as exc:
            if isinstance(exc, Error):
                raise
            raise failure("close", queue.uri, exc) from exc
        finally:
            with core.lock:
                core.queues.pop(queue.uri, None)
            core.wait_for_callbacks(seconds or DEFAULT_CALLBACK_WAIT)

    async def _close(self, queue: QueueRecord, seconds: float) -> None:
        assert queue.inner is not None
        try:
            async with queue.busy:
                self._core.set_request_timeout(seconds)
                await queue.inner.close()
        finally:
            self._core.plane.flush()  # its ACKs (and local NACKs) go to the callback thread now


__all__ = ["DEFAULT_CALLBACK_WAIT", "QueueOperations"]
