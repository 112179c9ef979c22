"""The data path of a compat ``Session``: posts and confirms from the user's threads to the I/O
loop, and ACKs, messages and session events from the loop to the callback thread.

Both directions are batched: a user thread appends an operation's fields to a flat deque and
wakes the loop only if no wake-up is pending; the loop hands everything one of its turns produced
to the callback thread in one go, each run of ACKs as one flat list. Every post with an ``on_ack``
gives the engine the same context (``DataPlane._ack``) and the user's callable waits in a
GUID-keyed dict, so neither a post waiting for the I/O thread, nor one in flight, nor its ACK
waiting for the callback thread is a container of this module's for the garbage collector to scan.
Nothing in this module refers to the ``Session`` itself, so the loop never keeps a dropped session
alive (see ``compat.lifetime``).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pybmq.client.events import Ack as RuntimeAck
from pybmq.client.events import AckStatus as RuntimeAckStatus
from pybmq.client.options import SessionOptions
from pybmq.compat.callbacks import ACK, ACKS, MESSAGE, CallbackThread, Item
from pybmq.compat.exceptions import Error
from pybmq.errors import PybmqError

if TYPE_CHECKING:
    from pybmq.client.aio_queue import AsyncQueue, ReceivedMessage
    from pybmq.compat.messages import Ack
    from pybmq.compat.queues import QueueRecord
    from pybmq.wire.properties import MessageProperties

log = logging.getLogger("pybmq.compat")

# What a user-thread operation is; the first of its entries in the deque.
POST, CONFIRM = range(2)
# A posting thread lets go of the GIL (``time.sleep(0)``, no waiting for the network) when this
# many deque entries (256 posts) wait for the I/O thread. Otherwise a program posting in a loop
# keeps the GIL for whole switch intervals (5 ms, thousands of posts) while the I/O thread, woken,
# waits for it: the posts pile up in flight, and the garbage collector scans them again and again
# (its full collections scan everything alive). Measured with bench/compat_threads.py (50,000
# posts, three rounds, interleaved): CPU per post 4.9 to 5.2 us instead of 5.8 to 6.1, of which
# the collector 0.5 to 0.7 us instead of 2.2 to 3.0; 256 posts measured as well as 512, and better
# than 128 or 2,048.
YIELD_AT = 5 * 256


def budget_for(high_water: int) -> int:
    """A compat session's byte budget (``SessionOptions.max_buffered_bytes``): pybmq's default,
    or twice the channel's high-water mark if that is more (posts are refused with BW_LIMIT a
    high-water mark before it, so the posts on their way to the I/O thread always fit)."""
    return max(2 * high_water, SessionOptions().max_buffered_bytes)


class DataPlane:
    """Posts and confirms in, callbacks out; owned by one compat ``Session``."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, callbacks: CallbackThread, high_water: int
    ) -> None:
        self._loop = loop
        self._callbacks = callbacks
        self._high_water = high_water
        # The session's max_buffered_bytes (see budget_for); set before the first post.
        self.budget = budget_for(high_water)
        self._lock = threading.Lock()  # user threads: the high-water check and _bytes_in
        self._bytes_in = 0  # payload bytes posted
        self._bytes_out = 0  # payload bytes handed to the engine (loop thread only)
        self._ops: collections.deque[Any] = collections.deque()  # flat: see _run_ops
        self._ops_scheduled = False
        # loop thread: GUID → on_ack (never None: a run of several posts has an on_ack each)
        self._on_acks: dict[bytes, Callable[[Ack], object] | None] = {}
        self._items: list[Item] = []  # loop thread: what this turn hands to the callback thread
        self._acks: list[Any] | None = None  # loop thread: the ACKS item _items ends with
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
        session = queue.session
        with self._lock:
            unsent = self._bytes_in - self._bytes_out
            # The official SDK's check (the socket, and posts not handed to the I/O thread yet),
            # and pybmq's byte budget (the session's ``max_buffered_bytes``, what it holds for
            # the broker: payloads kept until their ACK too), keeping a high-water mark's worth
            # of room for the posts already on their way to the I/O thread.
            if (
                not session.writable
                or unsent > self._high_water
                or session.held_bytes + unsent + self._high_water > self.budget
            ):
                raise Error(f"Failed to post message to {queue.uri} queue: BW_LIMIT")
            self._bytes_in += len(payload)
        # Flat: the fields go into the deque one by one (one atomic extend), so a post waiting
        # for the I/O thread is no container of its own for the garbage collector to scan.
        ops = self._ops
        ops.extend((POST, queue, payload, properties, on_ack))
        if not self._ops_scheduled:
            self._ops_scheduled = True
            self._loop.call_soon_threadsafe(self._run_ops)
        elif len(ops) >= YIELD_AT:
            time.sleep(0)

    @property
    def unsent_bytes(self) -> int:
        """Payload bytes posted but not yet handed to the engine on the I/O thread."""
        return self._bytes_in - self._bytes_out

    def confirm(self, queue: AsyncQueue | None, received: ReceivedMessage) -> None:
        """Lock-free, as ``post``: deque appends and pops are atomic, and the loop clears
        ``_ops_scheduled`` BEFORE draining, so an op appended while the flag still reads True is
        drained too."""
        self._ops.extend((CONFIRM, queue, received))
        if not self._ops_scheduled:
            self._ops_scheduled = True
            self._loop.call_soon_threadsafe(self._run_ops)

    # ------------------------------------------------------------------ the loop thread

    def _run_ops(self) -> None:
        """Everything queued since the last turn, in order: each run of posts to one queue with
        one set of properties and an ``on_ack`` goes to the engine in ONE ``post_many`` (the
        checks, the properties and the GUID clock once per run), and each run of confirms of
        one queue in one ``confirm_many``. A run the engine refuses is retried one by one, so
        every post still gets its own outcome. The deque is flat: a post is 5 entries
        (POST, queue, payload, properties, on_ack), a confirm 3 (CONFIRM, queue, received)."""
        self._ops_scheduled = False
        ops = self._ops
        popleft = ops.popleft
        # Each op was added by one atomic extend, so len() counts whole ops.
        flat: list[Any] = [popleft() for _ in range(len(ops))]
        end = len(flat)
        i = 0
        while i < end:
            queue = flat[i + 1]
            post = flat[i] == POST
            j = i + (5 if post else 3)
            try:
                if post:
                    properties = flat[i + 3]
                    if flat[i + 4] is not None:
                        while (
                            j < end
                            and flat[j] == POST
                            and flat[j + 1] is queue
                            and flat[j + 3] is properties
                            and flat[j + 4] is not None
                        ):
                            j += 5
                    self._posts(queue, properties, flat[i + 2 : j : 5], flat[i + 4 : j : 5])
                else:
                    while j < end and flat[j] == CONFIRM and flat[j + 1] is queue:
                        j += 3
                    self._confirms(queue, flat[i + 2 : j : 3])
            except Exception:
                log.exception("a post or confirm failed on the I/O thread")
            i = j

    def _posts(
        self,
        queue: AsyncQueue,
        properties: MessageProperties | None,
        payloads: list[bytes],
        on_acks: list[Callable[[Ack], object] | None],
    ) -> None:
        """Posts ``payloads`` to ``queue`` with ``properties``, each with its ``on_ack`` (all
        of them not None when there are more than one)."""
        self._bytes_out += sum(map(len, payloads))
        if len(payloads) > 1:
            try:
                guids = queue.post_many_nowait(payloads, properties=properties, on_ack=self._ack)
            except PybmqError:
                pass  # one of them is refused: each gets its own outcome below
            else:
                self._on_acks.update(zip(guids, on_acks))  # noqa: B905
                return
        for payload, on_ack in zip(payloads, on_acks):  # noqa: B905
            self._post(queue, payload, properties, on_ack)

    def _post(
        self,
        queue: AsyncQueue,
        payload: bytes,
        properties: MessageProperties | None,
        on_ack: Callable[[Ack], object] | None,
    ) -> None:
        try:
            if on_ack is None:
                # As the official SDK: the broker is asked for an ACK only if on_ack was given.
                queue.post_nowait(payload, properties=properties, ack=False)
            else:
                guid = queue.post_nowait(payload, properties=properties, on_ack=self._ack)
                self._on_acks[guid] = on_ack
        except PybmqError as exc:  # the queue closed or the session ended meanwhile
            if on_ack is not None:
                status = RuntimeAckStatus.CANCELED
                ack = RuntimeAck(b"", queue.uri, status, local=True, reason=str(exc))
                self.hand_over((ACK, on_ack, ack))

    @staticmethod
    def _confirms(queue: AsyncQueue | None, received: list[ReceivedMessage]) -> None:
        """Confirms of messages the user read from ``queue``: together, or else (the queue
        was closed or reopened meanwhile) each through the queue that delivered it."""
        if queue is not None:
            try:
                queue.confirm_many_nowait(received)
                return
            except PybmqError:
                pass
        for one in received:
            try:
                one.confirm_nowait()
            except PybmqError as exc:  # closed meanwhile: nothing left to confirm
                log.info("confirm of %s dropped: %s", one.guid.hex(), exc)

    def _ack(self, ack: RuntimeAck) -> None:
        """The engine's context for every post with an on_ack: route the ack to its callable.
        Consecutive ACKs of a turn go in ONE flat ``ACKS`` item (on_ack, guid, status, queue
        URI, then the next), so an ACK waiting for the callback thread is no object of its own
        for the garbage collector, and the callback thread takes a run of them in one go."""
        on_ack = self._on_acks.pop(ack.guid, None)
        if on_ack is None:
            return
        run = self._acks
        if run is None:
            run = self._acks = []
            self.hand_over((ACKS, run))
            self._acks = run  # hand_over closed the previous run, not this one
        run += (on_ack, ack.guid, ack.status, ack.queue_uri)

    def message(self, queue: QueueRecord, received: ReceivedMessage, session: object) -> None:
        """A message for ``on_message`` (built on the callback thread, with a handle on
        ``session``)."""
        self._messages += 1
        self.hand_over((MESSAGE, queue, received, session))

    def messages(
        self, queue: QueueRecord, received: list[ReceivedMessage], session: object
    ) -> None:
        """``message`` for each of ``received``, in order."""
        self._acks = None
        items = self._items
        if not items:
            self._loop.call_soon(self.flush)
        items += [(MESSAGE, queue, one, session) for one in received]
        self._messages += len(received)

    def hand_over(self, item: Item) -> None:
        """Queue an item for the callback thread; a turn's items leave together, in order."""
        self._acks = None  # an ACK after this item starts a new run, after it
        items = self._items
        items.append(item)
        if len(items) == 1:
            self._loop.call_soon(self.flush)

    def flush(self) -> None:
        self._acks = None  # handed over: never appended to again
        items, self._items = self._items, []
        messages, self._messages = self._messages, 0
        if items:
            self._callbacks.submit_items(items, messages)

    def release(self) -> None:
        """The session has stopped: drop what is left (nothing is called any more)."""
        self._ops.clear()
        self._on_acks.clear()
        self._items = []
        self._acks = None


__all__ = ["CONFIRM", "POST", "YIELD_AT", "DataPlane", "budget_for"]
