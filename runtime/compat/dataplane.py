"""The data path of a compat ``Session``: posts and confirms from the user's threads to the I/O
loop, and ACKs, messages and session events from the loop to the callback thread.

Both directions are batched: a user thread appends a tuple to a deque and wakes the loop only if
no wake-up is pending; the loop hands everything one of its turns produced to the callback thread
in one go. Every post with an ``on_ack`` gives the engine the same context (``DataPlane._ack``)
and the user's callable waits in a GUID-keyed dict, so an in-flight post costs the garbage
collector nothing here. Nothing in this module refers to the ``Session`` itself, so the loop never
keeps a dropped session alive (see ``compat.lifetime``).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pybmq.client.events import Ack as RuntimeAck
from pybmq.client.events import AckStatus as RuntimeAckStatus
from pybmq.compat.callbacks import ACK, MESSAGE, CallbackThread, Item
from pybmq.compat.exceptions import Error
from pybmq.errors import PybmqError

if TYPE_CHECKING:
    from pybmq.client.aio_queue import AsyncQueue, ReceivedMessage
    from pybmq.compat.messages import Ack
    from pybmq.compat.queues import QueueRecord
    from pybmq.wire.properties import MessageProperties

log = logging.getLogger("pybmq.compat")

# What a user-thread operation is; the first element of its tuple.
POST, CONFIRM = range(2)


class DataPlane:
    """Posts and confirms in, callbacks out; owned by one compat ``Session``."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, callbacks: CallbackThread, high_water: int
    ) -> None:
        self._loop = loop
        self._callbacks = callbacks
        self._high_water = high_water
        self._lock = threading.Lock()  # user threads: the high-water check and _bytes_in
        self._bytes_in = 0  # payload bytes posted
        self._bytes_out = 0  # payload bytes handed to the engine (loop thread only)
        self._ops: collections.deque[tuple[Any, ...]] = collections.deque()
        self._ops_scheduled = False
        self._on_acks: dict[bytes, Callable[[Ack], object]] = {}  # loop thread: GUID → on_ack
        self._items: list[Item] = []  # loop thread: what this turn hands to the callback thread
        self._messages = 0  # how many of _items are messages

    # ------------------------------------------------------------------ user threads

    def post(
        self,
        queue: AsyncQueue,
        payload: bytes,
        properties: MessageProperties | None,
        on_ack: Callable[[Ack], object] | None,
    ) -> None:
        """Queue a post for the loop, or refuse it at once over the channel's high-water mark
        (the socket's buffer, or posts not yet handed to the I/O thread), as the C++ SDK does."""
        with self._lock:
            if not queue.session.writable or self._bytes_in - self._bytes_out > self._high_water:
                raise Error(f"Failed to post message to {queue.uri} queue: BW_LIMIT")
            self._bytes_in += len(payload)
        self._submit((POST, queue, payload, properties, on_ack))

    @property
    def unsent_bytes(self) -> int:
        """Payload bytes posted but not yet handed to the engine on the I/O thread."""
        return self._bytes_in - self._bytes_out

    def confirm(self, received: ReceivedMessage) -> None:
        self._submit((CONFIRM, received))

    def _submit(self, op: tuple[Any, ...]) -> None:
        """Lock-free: deque appends and pops are atomic, and the loop clears ``_ops_scheduled``
        BEFORE draining, so an op appended while the flag still reads True is drained too."""
        self._ops.append(op)
        if not self._ops_scheduled:
            self._ops_scheduled = True
            self._loop.call_soon_threadsafe(self._run_ops)

    # ------------------------------------------------------------------ the loop thread

    def _run_ops(self) -> None:
        self._ops_scheduled = False
        ops = self._ops
        on_acks = self._on_acks
        sink = self._ack
        while ops:
            op = ops.popleft()
            try:
                if op[0] == POST:
                    _, queue, payload, properties, on_ack = op
                    self._bytes_out += len(payload)
                    self._post(queue, payload, properties, on_ack, on_acks, sink)
                else:
                    self._confirm(op[1])
            except Exception:
                log.exception("a post or confirm failed on the I/O thread")

    def _post(
        self,
        queue: AsyncQueue,
        payload: bytes,
        properties: MessageProperties | None,
        on_ack: Callable[[Ack], object] | None,
        on_acks: dict[bytes, Callable[[Ack], object]],
        sink: Callable[[RuntimeAck], None],
    ) -> None:
        try:
            if on_ack is None:
                # As the official SDK: the broker is asked for an ACK only if on_ack was given.
                queue.post_nowait(payload, properties=properties, ack=False)
            else:
                on_acks[queue.post_nowait(payload, properties=properties, on_ack=sink)] = on_ack
        except PybmqError as exc:  # the queue closed or the session ended meanwhile
            if on_ack is not None:
                status = RuntimeAckStatus.CANCELED
                ack = RuntimeAck(b"", queue.uri, status, local=True, reason=str(exc))
                self.hand_over((ACK, on_ack, ack))

    @staticmethod
    def _confirm(received: ReceivedMessage) -> None:
        try:
            received.confirm_nowait()
        except PybmqError as exc:  # closed meanwhile: nothing left to confirm
            log.info("confirm of %s dropped: %s", received.guid.hex(), exc)

    def _ack(self, ack: RuntimeAck) -> None:
        """The engine's context for every post with an on_ack: route the ack to its callable."""
        on_ack = self._on_acks.pop(ack.guid, None)
        if on_ack is not None:
            self.hand_over((ACK, on_ack, ack))

    def message(self, queue: QueueRecord, received: ReceivedMessage, session: object) -> None:
        """A message for ``on_message`` (built on the callback thread, with a handle on
        ``session``)."""
        self._messages += 1
        self.hand_over((MESSAGE, queue, received, session))

    def hand_over(self, item: Item) -> None:
        """Queue an item for the callback thread; a turn's items leave together, in order."""
        items = self._items
        items.append(item)
        if len(items) == 1:
            self._loop.call_soon(self.flush)

    def flush(self) -> None:
        items, self._items = self._items, []
        messages, self._messages = self._messages, 0
        if items:
            self._callbacks.submit_items(items, messages)

    def release(self) -> None:
        """The session has stopped: drop what is left (nothing is called any more)."""
        self._ops.clear()
        self._on_acks.clear()
        self._items = []


__all__ = ["DataPlane"]
