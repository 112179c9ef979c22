"""The engine's collector (proton's): the events every part of the engine reports, in order,
until the shell takes them, and the ids of user operations that complete as events."""

from __future__ import annotations

import collections

from pybmq.client.events import ClientEvent, OperationCompleted
from pybmq.errors import PybmqError

__all__ = ["Collector"]


class Collector:
    """Events for the shell, in the order the parts reported them."""

    def __init__(self) -> None:
        self.events: collections.deque[ClientEvent] = collections.deque()
        self._next_op = 1

    def emit(self, event: ClientEvent) -> None:
        self.events.append(event)

    def new_op(self) -> int:
        """An id for a user operation; ``complete`` reports its end."""
        op_id = self._next_op
        self._next_op += 1
        return op_id

    def complete(self, op_id: int, error: PybmqError | None = None) -> None:
        self.events.append(OperationCompleted(op_id, error))

    def take(self) -> list[ClientEvent]:
        events = list(self.events)
        self.events.clear()
        return events
