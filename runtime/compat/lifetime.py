"""How a compat Session's background work holds it: weakly, so that a Session the program drops
is collected (and stopped by its finalizer) even while its loop and connection are running."""

from __future__ import annotations

import weakref
from typing import Any, Protocol

from pybmq.client.aio import AsyncSession
from pybmq.client.aio_queue import AsyncQueue
from pybmq.client.dropped import weak_method
from pybmq.compat.dataplane import DataPlane
from pybmq.compat.queues import QueueRecord
from pybmq.errors import SessionStoppedError

# The most messages passed on in one step (the rest follow in the next ones of the same turn).
PUMP_BATCH = 1024


class Owner(Protocol):
    """What the loop calls on the Session while it is alive."""

    def _connection_ended(self, session: AsyncSession) -> None: ...


async def watch_connection(ref: weakref.ref[Owner], session: AsyncSession) -> None:
    """Wait for the connection to end, holding the Session only weakly meanwhile."""
    await session.wait_stopped()
    owner = ref()
    if owner is not None:
        owner._connection_ended(session)


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


__all__ = ["pump_messages", "watch_connection", "weak_method"]
