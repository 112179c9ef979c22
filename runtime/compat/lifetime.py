"""How a compat Session's background work holds it: weakly, so that a Session the program drops
is collected (and stopped by its finalizer) even while its loop and connection are running."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from pybmq.client.aio import AsyncSession
from pybmq.client.aio_queue import AsyncQueue
from pybmq.compat.dataplane import DataPlane
from pybmq.compat.queues import QueueRecord
from pybmq.errors import SessionStoppedError

# The most messages passed on in one step (the rest follow in the next ones of the same turn).
PUMP_BATCH = 1024


async def watch_connection(ended: Callable[[Any], None], session: AsyncSession) -> None:
    """Wait for the connection to end, then call ``ended(session)`` (a ``weak_method``: the
    Session is held only weakly meanwhile)."""
    await session.wait_stopped()
    ended(session)


async def pump_messages(
    ref: weakref.ref[Any], plane: DataPlane, queue: QueueRecord, inner: AsyncQueue
) -> None:
    """Pass the messages of a reader queue on, all that arrived together at once, holding the
    Session only weakly while waiting for more."""
    while True:
        try:
            received = await inner.get()
        except SessionStoppedError:  # the queue closed or the session ended
            return
        owner = ref()
        if owner is None:
            return
        plane.message(queue, received, owner)
        more = inner.get_many_nowait(PUMP_BATCH)
        while more:
            plane.messages(queue, more, owner)
            more = inner.get_many_nowait(PUMP_BATCH)
        del owner


__all__ = ["PUMP_BATCH", "pump_messages", "watch_connection"]
