"""What a compat session keeps per open queue: the options the user asked for, and its host
health suspension state."""

from __future__ import annotations

import asyncio
import dataclasses

from pybmq.client.aio_queue import AsyncQueue
from pybmq.client.options import QueueOptions as RuntimeQueueOptions
from pybmq.compat.checks import WRITER_ONLY_OPTIONS
from pybmq.compat.messages import (
    Message,
    MessageHandle,
)
from pybmq.compat.values import (
    QUEUE_OPTION_FIELDS,
    QueueOptions,
)

__all__ = ["QueueRecord"]


@dataclasses.dataclass
class QueueRecord:
    """One open queue as the user sees it: the options asked for and the suspension state."""

    uri: str
    read: bool
    write: bool
    options: QueueOptions
    inner: AsyncQueue | None = None
    suspended: bool = False  # posts refused (host unhealthy and the queue is sensitive)
    holding: bool = False  # received messages kept back until the queue resumes
    held: list[tuple[Message, MessageHandle]] = dataclasses.field(default_factory=list)
    # Its open timed out. As in the official SDK the URI stays taken and unusable in this
    # session (the engine closes the queue on the broker if the open succeeds late).
    invalid: bool = False
    # One request at a time per queue (the engine's rule): user configure/close and host-health
    # suspension or resumption wait for each other, in the order they were asked for.
    busy: asyncio.Lock = dataclasses.field(default_factory=asyncio.Lock)
    # pybmq's addition (``open_queue``'s keywords): the reader's de-duplication window.
    dedup_window: int = 0
    dedup_window_age: float = 300.0

    def reported_options(self) -> QueueOptions:
        if self.read:
            return QueueOptions(**{a: getattr(self.options, a) for a in QUEUE_OPTION_FIELDS})
        return QueueOptions(*WRITER_ONLY_OPTIONS, self.options.suspends_on_bad_host_health)

    def runtime_options(self) -> RuntimeQueueOptions:
        o = self.options
        return RuntimeQueueOptions(
            max_unconfirmed_messages=o.max_unconfirmed_messages,  # type: ignore[arg-type]
            max_unconfirmed_bytes=o.max_unconfirmed_bytes,  # type: ignore[arg-type]
            consumer_priority=o.consumer_priority,  # type: ignore[arg-type]
            dedup_window=self.dedup_window,
            dedup_window_age=self.dedup_window_age,
        )
