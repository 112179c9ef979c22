"""Host health for a compat ``Session``, as the official SDK's C++ core does it: on an unhealthy
host, queues opened with ``suspends_on_bad_host_health`` refuse posts and hold their messages back,
and readers ask the broker to stop delivering; when the host is healthy again they resume."""

from __future__ import annotations

import asyncio

from pybmq.compat import session_events as ev
from pybmq.compat.callbacks import CALL, EVENT, print_callback_error
from pybmq.compat.core import SessionCore
from pybmq.compat.queues import QueueRecord
from pybmq.errors import PybmqError


class HostHealth:
    """The monitor's news, and the suspension or resumption of the sensitive queues."""

    def __init__(self, core: SessionCore) -> None:
        self._core = core
        # One transition at a time, in the order the monitor gave them (asyncio's lock is
        # FIFO): HostUnhealthy and HostHealthRestored reach the callback alternating, however
        # fast the monitor toggles, as in the official SDK.
        self._turn = asyncio.Lock()

    def on_host_health(self, healthy: bool) -> None:
        """Called by the BasicHealthMonitor (on the thread that changed it)."""
        core = self._core
        if core.stopped or core.lost:
            return
        with core.lock:
            sensitive = [q for q in core.queues.values() if q.options.suspends_on_bad_host_health]
        if healthy:
            self.resume(sensitive)
        else:
            self.suspend(sensitive)

    def suspend(self, queues: list[QueueRecord], announce_host: bool = True) -> None:
        """Posts are refused and deliveries held at once; readers then ask the broker to stop
        delivering (a ConfigureStream without subscriptions, as the C++ core sends), and each
        queue gets QueueSuspended, or QueueSuspendFailed if the broker refuses."""
        for queue in queues:
            queue.suspended = queue.holding = True
        asyncio.run_coroutine_threadsafe(
            self._reconfigure(queues, suspend=True, announce_host=announce_host), self._core.loop
        )

    def resume(self, queues: list[QueueRecord], announce_host: bool = True) -> None:
        """Readers ask the broker for their subscriptions again; then QueueResumed (or
        QueueResumeFailed) for each queue, HostHealthRestored, then the messages held meanwhile."""
        for queue in queues:
            queue.suspended = False  # posts work again at once
        asyncio.run_coroutine_threadsafe(
            self._reconfigure(queues, suspend=False, announce_host=announce_host),
            self._core.loop,
        )

    async def _reconfigure(
        self, queues: list[QueueRecord], suspend: bool, announce_host: bool = False
    ) -> None:
        """On the loop: the broker side of a suspension or resumption, then its events (after
        the previous transition's: see ``_turn``)."""
        async with self._turn:
            await self._transition(queues, suspend, announce_host)

    async def _transition(
        self, queues: list[QueueRecord], suspend: bool, announce_host: bool
    ) -> None:
        core = self._core
        plane = core.plane
        if suspend and announce_host:
            plane.hand_over((EVENT, ev.HostUnhealthy(None)))
        for queue in queues:
            failure_text = None
            if queue.read and queue.inner is not None and not core.stopped:
                async with queue.busy:
                    core.set_request_timeout(core.timeouts.configure_queue_timeout)  # type: ignore[arg-type]
                    try:
                        await queue.inner.configure(queue.runtime_options(), suspended=suspend)
                    except PybmqError as exc:
                        failure_text = str(exc)
            event: ev.SessionEvent
            if suspend:
                event = ev.QueueSuspended(queue.uri)
                if failure_text is not None:
                    event = ev.QueueSuspendFailed(queue.uri, failure_text)
            else:
                event = ev.QueueResumed(queue.uri)
                if failure_text is not None:
                    event = ev.QueueResumeFailed(queue.uri, failure_text)
            plane.hand_over((EVENT, event))
        if not suspend:
            if announce_host:
                plane.hand_over((EVENT, ev.HostHealthRestored(None)))
            plane.hand_over((CALL, lambda: self._release(queues)))

    def _release(self, queues: list[QueueRecord]) -> None:
        """On the callback thread: deliver what suspended readers held back."""
        on_message = self._core.on_message
        for queue in queues:
            queue.holding = False
            held, queue.held = queue.held, []
            if on_message is None:  # a session without on_message holds no messages
                continue
            for message, handle in held:
                try:
                    on_message(message, handle)
                except Exception as exc:
                    print_callback_error(exc)


__all__ = ["HostHealth"]
