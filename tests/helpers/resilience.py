"""A session's resilience events as a test waits for them: every event kept in order, and the
moments a connection was lost and the session restored."""

from __future__ import annotations

import asyncio
from typing import TypeVar

from pybmq.client.events import ConnectionLost, StateRestored

T = TypeVar("T")


class ResilienceWatch:
    """Pass as ``on_event``; ``events`` in order, ``lost`` and ``restored`` set as they come."""

    def __init__(self) -> None:
        self.events: list[object] = []
        self.lost = asyncio.Event()
        self.restored = asyncio.Event()

    def __call__(self, event: object) -> None:
        self.events.append(event)
        if isinstance(event, ConnectionLost):
            self.lost.set()
        elif isinstance(event, StateRestored):
            self.restored.set()

    def of(self, kind: type[T]) -> list[T]:
        """The events of one kind, in order."""
        return [event for event in self.events if isinstance(event, kind)]
