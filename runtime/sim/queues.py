"""The simulator's in-memory queues: storage, consumer flow control, routing, redelivery.

Sans-I/O and connection-agnostic: a ``Consumer`` names its owner only as an opaque object, and
``deliver()`` returns (consumer, message) pairs for the broker engine to turn into PUSH events.
Semantics follow BlazingMQ's documented behaviour:

- only the consumers with the highest priority receive messages; among them, round-robin;
- a consumer receives while it has fewer unconfirmed messages than its maxUnconfirmedMessages and
  fewer unconfirmed bytes than its maxUnconfirmedBytes (a consumer with either limit 0 is paused);
- a fan-out queue keeps one copy of every message per appId, each delivered independently;
- a broadcast queue stores nothing: a message goes to the current highest-priority consumers that
  have room, or nowhere (at most once), and its confirms are not tracked;
- when a consumer goes away, its unconfirmed messages return to the front of their stream, in the
  order they were delivered, and go to the next consumer.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from pybmq.generated.wire_codec import DEFAULT_APP_ID, AckStatus
from pybmq.sim.routing import FANOUT_APP_IDS, RoutingMode
from pybmq.sim.stored import (
    APP_OVERHEAD,
    GUID_OVERHEAD,
    MAX_INFLATED_PROPERTIES,
    MESSAGE_OVERHEAD,
    MemoryBudget,
    StoredMessage,
)

__all__ = [
    "APP_OVERHEAD",
    "GUID_OVERHEAD",
    "LIMIT_BYTES",
    "LIMIT_MESSAGES",
    "MAX_INFLATED_PROPERTIES",
    "MESSAGE_OVERHEAD",
    "SUCCESS",
    "AppStream",
    "Backlog",
    "Consumer",
    "MemoryBudget",
    "QueueStore",
    "Run",
    "SimQueue",
    "StoredMessage",
]


@dataclass(eq=False, slots=True)
class Consumer:
    """One reader handle's subscription to one stream of a queue."""

    owner: object
    queue_id: int
    sub_queue_id: int  # the id carried in PUSH options for this consumer
    priority: int = 0
    max_messages: int = 0
    max_bytes: int = 0
    unconfirmed: dict[bytes, StoredMessage] = field(default_factory=dict)
    unconfirmed_bytes: int = 0
    matches: Callable[[Mapping[str, object]], bool] | None = None  # subscription expression
    blocked: bool = False  # its connection cannot take more now (backpressure)

    def wants(self, message: StoredMessage) -> bool:
        return self.matches is None or self.matches(message.property_values())

    @property
    def active(self) -> bool:
        return self.max_messages > 0 and self.max_bytes > 0

    def has_room(self) -> bool:
        return (
            self.active
            and not self.blocked
            and len(self.unconfirmed) < self.max_messages
            and self.unconfirmed_bytes < self.max_bytes
        )

    def take(self, message: StoredMessage, track: bool) -> None:
        if track:
            self.unconfirmed[message.guid] = message
            self.unconfirmed_bytes += message.size

    def confirm(self, guid: bytes) -> StoredMessage | None:
        """The confirmed message, or None if ``guid`` was not unconfirmed here."""
        message = self.unconfirmed.pop(guid, None)
        if message is not None:
            self.unconfirmed_bytes -= message.size
        return message


SUCCESS = int(AckStatus.SUCCESS)
LIMIT_MESSAGES = int(AckStatus.LIMIT_MESSAGES)
LIMIT_BYTES = int(AckStatus.LIMIT_BYTES)
_NO_LIMIT = float("inf")

# What delivery hands out: a consumer and the messages it takes, in order.
Run = tuple["Consumer", list[StoredMessage]]


class Backlog:
    """The messages of a stream waiting for a consumer, in order: a deque's operations plus
    removal of any message in O(1), so filtered delivery can take a message from the middle.
    While ``track`` is set, ``appended`` collects what was appended since the stream last looked
    (the messages its subscriptions have not examined yet)."""

    __slots__ = ("_items", "appended", "epoch", "track")

    def __init__(self, messages: Iterable[StoredMessage] = ()) -> None:
        self._items: OrderedDict[StoredMessage, None] = OrderedDict.fromkeys(messages)
        self.appended: list[StoredMessage] = []
        self.track = False
        self.epoch = 0  # changes when messages go in anywhere but at the end

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def __iter__(self) -> Iterator[StoredMessage]:
        return iter(self._items)

    def __contains__(self, message: object) -> bool:
        return message in self._items

    def append(self, message: StoredMessage) -> None:
        self._items[message] = None
        if self.track:
            self.appended.append(message)

    def popleft(self) -> StoredMessage:
        return self._items.popitem(last=False)[0]

    def extendleft(self, messages: Iterable[StoredMessage]) -> None:
        """Put ``messages`` at the front, each before the previous one (as deque.extendleft)."""
        for message in messages:
            self._items[message] = None
            self._items.move_to_end(message, last=False)
        self.epoch += 1

    def remove(self, message: StoredMessage) -> None:
        del self._items[message]

    def clear(self) -> None:
        self._items.clear()
        self.appended.clear()
        self.epoch += 1


@dataclass(eq=False)
class AppStream:
    """The messages of one appId of a queue (the only one for priority and broadcast queues)."""

    app_id: str
    stores: bool
    pending: Backlog = field(default_factory=Backlog)
    consumers: list[Consumer] = field(default_factory=list)
    _next: int = 0  # round-robin position among the highest-priority consumers
    _top: list[Consumer] | None = None  # cached top_consumers(); None after any change
    # Filtered delivery's index: each examined waiting message under the set of consumers it
    # may go to (its best matching subscriptions; () for none), in order. Valid while the
    # consumers and the backlog's epoch stay as they were when it was built (``_index_key``).
    _waiting: dict[tuple[Consumer, ...], OrderedDict[StoredMessage, None]] = field(
        default_factory=dict
    )
    _generation: int = 0
    _index_key: tuple[int, int] | None = None

    def attach(self, consumer: Consumer) -> None:
        self.consumers.append(consumer)
        self._top = None
        self._generation += 1

    def changed(self) -> None:
        """A consumer's priority, limits or expression changed: recompute who is on top."""
        self._top = None
        self._generation += 1

    def top_consumers(self) -> list[Consumer]:
        top = self._top
        if top is None:
            active = [c for c in self.consumers if c.active]
            best = max((c.priority for c in active), default=0)
            top = self._top = [c for c in active if c.priority == best]
        return top

    def deliver(self) -> list[Run]:
        """Hand pending messages to consumers with room, round-robin among the best: runs of
        (consumer, messages), in delivery order."""
        if not self.pending:
            return []
        if any(c.matches is not None for c in self.consumers):
            return self._deliver_filtered()
        if self.pending.track:  # no expression any more: no index to keep
            self.pending.track = False
            self.pending.appended.clear()
            self._waiting.clear()
            self._index_key = None
        top = self.top_consumers()
        if not top:
            return []
        pending = self.pending
        if len(top) == 1:  # the common case: one consumer takes what fits, in one run
            only = top[0]
            if only.blocked:
                return []
            unconfirmed = only.unconfirmed
            held = only.unconfirmed_bytes
            room = only.max_messages - len(unconfirmed)
            max_bytes = only.max_bytes
            taken: list[StoredMessage] = []
            popleft = pending.popleft
            append = taken.append
            while pending and room > 0 and held < max_bytes:
                message = popleft()
                unconfirmed[message.guid] = message
                held += message.size
                append(message)
                room -= 1
            only.unconfirmed_bytes = held
            return [(only, taken)] if taken else []
        out: list[Run] = []
        while pending:
            for step in range(len(top)):
                candidate = top[(self._next + step) % len(top)]
                if candidate.has_room():
                    self._next = (self._next + step + 1) % len(top)
                    message = pending.popleft()
                    candidate.take(message, track=True)
                    out.append((candidate, [message]))
                    break
            else:
                break  # every top consumer is full
        return out

    def _deliver_filtered(self) -> list[Run]:
        """With subscription expressions: each message goes to the highest-priority subscriptions
        whose expression it matches (round-robin); a message nobody matches, or whose best
        subscriptions are all full, waits in place while later messages may pass it.

        Each message is examined once (until the consumers change): it waits in the index under
        the consumers it may go to, so a delivery costs the new messages and the groups that have
        room, never a rescan of the backlog."""
        backlog = self.pending
        key = (self._generation, backlog.epoch)
        waiting = self._waiting
        if self._index_key != key:
            waiting.clear()
            fresh: list[StoredMessage] = list(backlog)
            backlog.appended.clear()
            backlog.track = True
            self._index_key = key
        else:
            fresh = backlog.appended
            backlog.appended = []
        if fresh:
            active = [c for c in self.consumers if c.active]
            for message in fresh:
                if message not in backlog:
                    continue  # delivered or purged since it was appended
                matching = [c for c in active if c.wants(message)]
                best = max((c.priority for c in matching), default=0)
                group = tuple(c for c in matching if c.priority == best)
                found = waiting.get(group)
                if found is None:
                    found = waiting[group] = OrderedDict()
                found[message] = None
        out: list[Run] = []
        for group, messages in list(waiting.items()):
            if not group:
                continue  # nobody wants them until the consumers change
            while messages:
                message = next(iter(messages))
                if message not in backlog:
                    del messages[message]  # delivered or purged meanwhile
                    continue
                chosen = None
                for step in range(len(group)):
                    candidate = group[(self._next + step) % len(group)]
                    if candidate.has_room():
                        self._next = (self._next + step + 1) % len(group)
                        chosen = candidate
                        break
                if chosen is None:
                    break
                del messages[message]
                backlog.remove(message)
                chosen.take(message, track=True)
                out.append((chosen, [message]))
            if not messages:
                del waiting[group]
        return out

    def broadcast(self) -> list[Run]:
        """A broadcast stream: each pending message goes to the highest-priority consumers that
        have room now, or nowhere (at most once); nothing stays pending."""
        out: list[Run] = []
        pending = self.pending
        while pending:
            message = pending.popleft()
            matching = [c for c in self.consumers if c.active and c.wants(message)]
            best = max((c.priority for c in matching), default=0)
            for consumer in (c for c in matching if c.priority == best):
                if consumer.has_room():
                    consumer.take(message, track=False)
                    out.append((consumer, [message]))
        return out

    def detach(self, consumer: Consumer) -> None:
        """Remove ``consumer``; its unconfirmed messages go back to the front, in order."""
        self.consumers.remove(consumer)
        self._top = None
        self._generation += 1
        returned = list(consumer.unconfirmed.values())
        consumer.unconfirmed.clear()
        consumer.unconfirmed_bytes = 0
        if self.stores:
            self.pending.extendleft(reversed(returned))


@dataclass(eq=False)
class SimQueue:
    uri: str
    mode: RoutingMode
    streams: dict[str, AppStream]
    posted: int = 0
    duplicates: int = 0
    # What the quota counts: messages stored and not confirmed yet (once per app), and bytes.
    held_messages: int = 0
    held_bytes: int = 0
    handles: int = 0  # open handles on it, over all sessions
    # GUID → when it leaves the de-duplication window (insertion order = time order), like a
    # broker's deduplicationTimeMs: a retransmitted GUID inside the window is ACKed, not stored.
    # An OrderedDict: forgetting the oldest is O(1) (a dict scans the holes its deletions leave).
    _seen: dict[bytes, float] = field(default_factory=OrderedDict)
    # No GUID in ``_seen`` leaves its window before this (a lower bound: the window is scanned
    # for expired GUIDs only once the clock reaches it, not on every message).
    _first_expiry: float = float("inf")
    stores: bool = True  # False for a broadcast queue: it keeps nothing
    # Consumers of appIds the domain does not list: a broker lets them open (it raises an alarm)
    # and delivers them nothing, so they stay out of ``streams`` (which messages are copied to).
    unlisted: dict[str, AppStream] = field(default_factory=dict)
    # The simulator's budget for all queues (shared by every queue of one broker).
    budget: MemoryBudget = field(default_factory=MemoryBudget)

    def __post_init__(self) -> None:
        self.stores = self.mode is not RoutingMode.BROADCAST

    @classmethod
    def create(cls, uri: str, mode: RoutingMode, budget: MemoryBudget | None = None) -> SimQueue:
        app_ids = FANOUT_APP_IDS if mode is RoutingMode.FANOUT else (DEFAULT_APP_ID,)
        stores = mode is not RoutingMode.BROADCAST
        streams = {app: AppStream(app, stores) for app in app_ids}
        return cls(uri, mode, streams, budget=budget or MemoryBudget())

    def _cost(self, message: StoredMessage) -> int:
        """What ``message`` costs the memory budget while this queue holds it."""
        return message.size + MESSAGE_OVERHEAD + APP_OVERHEAD * len(self.streams)

    def store(
        self,
        message: StoredMessage,
        now: float = 0.0,
        dedup_window: float = 300.0,
        dedup_max: int = 100_000,
    ) -> None:
        """``admit()`` without a quota."""
        self.admit(message, now, dedup_window, dedup_max, _NO_LIMIT, _NO_LIMIT)

    def admit(
        self,
        message: StoredMessage,
        now: float,
        dedup_window: float,
        dedup_max: int,
        max_messages: float,
        max_bytes: float,
    ) -> int:
        """The ACK status of ``message``: the quota limit the queue is already over (nothing is
        stored), or SUCCESS, and it is kept for delivery (``deliver()`` hands it out, once per
        batch).

        The quota counts messages stored and not confirmed, once per appId. A GUID seen within
        ``dedup_window`` seconds before ``now`` is acknowledged but not stored; the window
        remembers at most ``dedup_max`` GUIDs (the oldest are forgotten first). A broadcast
        queue has no quota and keeps a message only until the next ``deliver()``."""
        streams = self.streams
        if self.stores:
            copies = len(streams)
            # As a broker: refused once the queue already holds more than its limit (it checks
            # before adding, so the message that crosses the limit is still taken).
            if self.held_messages > max_messages:
                return LIMIT_MESSAGES
            if self.held_bytes > max_bytes or self.budget.spent:
                return LIMIT_BYTES
        seen = self._seen
        guid = message.guid
        if self._first_expiry <= now:
            self._forget_expired(now)
        expiry = seen.get(guid)
        if expiry is not None and expiry > now:
            self.duplicates += 1
            return SUCCESS
        budget = self.budget
        if len(seen) >= dedup_max:
            del seen[next(iter(seen))]
            budget.used -= GUID_OVERHEAD
        if not seen:
            self._first_expiry = now + dedup_window
        seen[guid] = now + dedup_window
        budget.used += GUID_OVERHEAD
        self.posted += 1
        if self.stores:
            # As a broker: a message counts once against the quota, however many apps hold it.
            message.holders = copies
            self.held_messages += 1
            self.held_bytes += message.size
            budget.used += self._cost(message)
            for stream in streams.values():
                stream.pending.append(message)
        else:
            streams[DEFAULT_APP_ID].pending.append(message)
        return SUCCESS

    def _forget_expired(self, now: float) -> None:
        """Forget GUIDs whose window is over (oldest first), so memory stays bounded."""
        seen = self._seen
        while seen:
            oldest = next(iter(seen))
            expiry = seen[oldest]
            if expiry > now:
                self._first_expiry = expiry
                return
            del seen[oldest]
            self.budget.used -= GUID_OVERHEAD
        self._first_expiry = float("inf")

    def post(
        self,
        message: StoredMessage,
        now: float = 0.0,
        dedup_window: float = 300.0,
        dedup_max: int = 100_000,
    ) -> list[tuple[Consumer, StoredMessage]]:
        """``store()`` then ``deliver()``, as (consumer, message) pairs."""
        self.store(message, now, dedup_window, dedup_max)
        return [(consumer, m) for consumer, messages in self.deliver() for m in messages]

    def deliver(self) -> list[Run]:
        """What can be delivered now, as runs of (consumer, messages)."""
        if not self.stores:
            return self.streams[DEFAULT_APP_ID].broadcast()
        out: list[Run] = []
        for stream in self.streams.values():
            if stream.pending:
                out += stream.deliver()
        return out

    def release(self, messages: Iterable[StoredMessage]) -> None:
        """One app is done with ``messages`` (confirmed or purged): each stops counting against
        the quota once no app holds it any more."""
        for message in messages:
            message.holders -= 1
            if not message.holders:
                self.held_messages -= 1
                self.held_bytes -= message.size
                self.budget.used -= self._cost(message)

    def stream(self, app_id: str) -> AppStream:
        """The stream of ``app_id``: a listed one, or an (always empty) unlisted one."""
        listed = self.streams.get(app_id)
        if listed is not None:
            return listed
        unlisted = self.unlisted.get(app_id)
        if unlisted is None:
            unlisted = self.unlisted[app_id] = AppStream(app_id, self.stores)
        return unlisted

    @property
    def remembered(self) -> int:
        """GUIDs in its de-duplication window."""
        return len(self._seen)

    def pending_count(self, app_id: str = DEFAULT_APP_ID) -> int:
        return len(self.streams[app_id].pending)

    def unused(self, now: float) -> bool:
        """Nothing refers to it: no handle, no message, no GUID still in its window."""
        if self.handles or self.held_messages:
            return False
        if any(s.pending or s.consumers for s in self.streams.values()):
            return False
        if any(s.consumers for s in self.unlisted.values()):
            return False
        return not self._seen or next(reversed(self._seen.values())) <= now


class QueueStore:
    """Every queue the simulator has seen, created on first open, all on one memory budget."""

    def __init__(self, budget: MemoryBudget | None = None) -> None:
        self.queues: dict[str, SimQueue] = {}
        self.budget = budget or MemoryBudget()

    def free_if_unused(self, queue: SimQueue, now: float) -> None:
        """Forget ``queue`` once nothing refers to it (it is created again on the next open),
        so a client opening and closing thousands of queues leaves nothing behind."""
        if self.queues.get(queue.uri) is queue and queue.unused(now):
            del self.queues[queue.uri]
            self.budget.used -= GUID_OVERHEAD * queue.remembered

    def get_or_create(self, uri: str, mode: RoutingMode) -> SimQueue:
        queue = self.queues.get(uri)
        if queue is None:
            queue = self.queues[uri] = SimQueue.create(uri, mode, self.budget)
        return queue
