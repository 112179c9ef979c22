"""Failover under load: a producer and a consumer on a replicated cluster while its primary is
SIGKILLed and restarted, and the figures that say whether the clients kept their promises.

``run_failover`` starts a consumer (confirming every ``confirm_every`` messages, with a
de-duplication window of ``dedup_window`` GUIDs when given), then a producer (the blocking API,
``post_async`` with an ACK callback, reconnect on, every member of the cluster in ``endpoints``
when it goes through the nodes), kills the primary ``kills`` times under load (each time: kill, wait for the new primary,
restart the dead node, wait for the cluster to settle, go on posting), then waits, bounded, for
every post's outcome and for the consumer to have everything. ``Figures`` holds what a user can
check: each post's outcome, what was delivered, how often, and with which GUID, and how many
redeliveries the consumer's window kept from the application.

Reconnect attempts to the dead node are counted from the client's log (the INFO line of
``pybmq.client.aio`` that names the endpoint a reconnect could not reach) while that node is down:
``DialCounter`` is the one place that reads it.
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from pybmq.client.aio_queue import ReceivedMessage
from pybmq.client.events import Ack, ConnectionLost, Reconnected
from pybmq.client.options import SessionOptions
from pybmq.client.sync import Queue, Session
from pybmq.errors import PybmqError
from pybmq.testing.cluster import RealCluster

EVENTUAL = "bmq.test.persistent.priority"
STRONG = "bmq.test.persistent.priority.sc"
_REFUSED = re.compile(r"cannot connect to (?P<url>tcp://\S+?):? ")
_BOUND = 120.0  # every wait of a run (outcomes, deliveries) ends by then


class DialCounter(logging.Handler):
    """Counts, per endpoint, the reconnect attempts that found nothing listening, with when."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.refused: dict[str, list[float]] = defaultdict(list)
        self._lock_ = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        match = _REFUSED.search(record.getMessage())
        if match:
            with self._lock_:
                self.refused[match["url"]].append(time.monotonic())

    def between(self, url: str, start: float, end: float) -> int:
        with self._lock_:
            return sum(start <= t <= end for t in self.refused[url])

    @contextmanager
    def attached(self) -> Iterator[DialCounter]:
        logger = logging.getLogger("pybmq.client.aio")
        level = logger.level
        logger.setLevel(logging.INFO)
        logger.addHandler(self)
        try:
            yield self
        finally:
            logger.removeHandler(self)
            logger.setLevel(level)


@dataclass
class Kill:
    """One failover: which node died, how long until a new primary was active, the longest
    time without an ACK around it, and when the dead node was back in a settled cluster."""

    node: int
    new_primary: int
    failover_s: float
    ack_gap_s: float = 0.0
    restarted_s: float = 0.0
    dials_to_dead: int = 0  # reconnect attempts of either client to the dead node


@dataclass
class Figures:
    posts: int = 0
    outcomes: dict[bytes, list[str]] = field(default_factory=dict)  # payload -> its outcomes
    guids: dict[bytes, bytes] = field(default_factory=dict)  # payload -> GUID given at post
    delivered: list[tuple[bytes, bytes]] = field(default_factory=list)  # (payload, GUID)
    kills: list[Kill] = field(default_factory=list)
    connection_losses: dict[str, int] = field(default_factory=dict)  # client -> count
    held_back: int = 0  # redeliveries the consumer's de-duplication window did not deliver

    @property
    def acked(self) -> set[bytes]:
        return {p for p, o in self.outcomes.items() if o == ["ack"]}

    @property
    def failed(self) -> set[bytes]:
        return {p for p, o in self.outcomes.items() if len(o) == 1 and o[0] != "ack"}

    @property
    def without_one_outcome(self) -> dict[bytes, list[str]]:
        missing = {p: [] for p in self.guids if p not in self.outcomes}
        return missing | {p: o for p, o in self.outcomes.items() if len(o) != 1}

    @property
    def lost(self) -> set[bytes]:
        """ACKed and never delivered."""
        return self.acked - {p for p, _ in self.delivered}

    @property
    def lies(self) -> set[bytes]:
        """Reported failed (NACK, local NACK, refused) and delivered all the same."""
        return self.failed & {p for p, _ in self.delivered}

    @property
    def strangers(self) -> set[bytes]:
        """Delivered and never posted (or with another GUID than the one posted)."""
        return {p for p, g in self.delivered if self.guids.get(p) != g}

    @property
    def duplicates(self) -> int:
        """Deliveries beyond the first of a message (same payload, same GUID)."""
        return sum(n - 1 for n in Counter(self.delivered).values() if n > 1)

    @property
    def ack_ratio(self) -> float:
        return len(self.acked) / self.posts if self.posts else 0.0

    def summary(self) -> str:
        kills = ", ".join(
            f"node {k.node} -> {k.new_primary} in {k.failover_s:.1f} s (no ACK for "
            f"{k.ack_gap_s:.1f} s, back in {k.restarted_s:.1f} s, {k.dials_to_dead} reconnect "
            f"attempts to it)"
            for k in self.kills
        )
        failed = Counter(o[0] for o in self.outcomes.values() if len(o) == 1 and o[0] != "ack")
        return (
            f"posts {self.posts}, ACKed {len(self.acked)} ({self.ack_ratio:.2%}), failed "
            f"{dict(failed)}, lost {len(self.lost)}, lies {len(self.lies)}, delivered "
            f"{len(self.delivered)}, duplicates {self.duplicates} (held back by the window "
            f"{self.held_back}), strangers "
            f"{len(self.strangers)}, connection losses {self.connection_losses}; kills: {kills}"
        )


class _Client:
    """A session on its own thread's calls, counting its connection losses."""

    def __init__(self, name: str, urls: tuple[str, ...]) -> None:
        self.name = name
        self.events: list[object] = []
        options = SessionOptions(reconnect=True, endpoints=urls[1:])
        self.session = Session(urls[0], options=options, on_event=self.events.append)

    @property
    def losses(self) -> int:
        return sum(isinstance(e, ConnectionLost) for e in list(self.events))

    @property
    def reconnects(self) -> int:
        return sum(isinstance(e, Reconnected) for e in list(self.events))


def _urls(cluster: RealCluster, via: str, first: int) -> tuple[str, ...]:
    """``via`` "proxy": the proxy alone; "nodes": node ``first`` then the other members."""
    if via == "proxy":
        return (cluster.proxy_url,)
    first_url = cluster.node(first).url
    return (first_url, *(u for u in cluster.urls if u != first_url))


def run_failover(
    cluster: RealCluster,
    *,
    domain: str,
    producer_via: str,
    consumer_via: str,
    kills: int = 1,
    min_posts: int = 2000,
    max_posts: int = 50_000,
    dedup_window: int = 0,
    confirm_every: int = 1,
) -> Figures:
    """The run described in the module's docstring. The client that goes through the nodes
    starts on the primary, so the first kill cuts its connection."""
    queue = f"bmq://{domain}/failover-{uuid.uuid4().hex[:8]}"
    primary = cluster.node_id(cluster.primary())
    figures = Figures()
    lock = threading.Lock()
    acks_at: list[float] = []  # when each ACK (SUCCESS) came
    stop_posting = threading.Event()
    counter = DialCounter()
    consumer = _Client("consumer", _urls(cluster, consumer_via, primary))
    producer = _Client("producer", _urls(cluster, producer_via, primary))

    def record(payload: bytes, outcome: str) -> None:
        with lock:
            figures.outcomes.setdefault(payload, []).append(outcome)
            if outcome == "ack":
                acks_at.append(time.monotonic())

    def consume(reader: Queue) -> None:
        held: list[ReceivedMessage] = []  # delivered, confirmed with the next batch
        while not stop_consuming.is_set():
            try:
                message = reader.get(timeout=0.2)
            except TimeoutError:
                if held:
                    reader.confirm_many(held)
                    held = []
                continue
            except PybmqError:
                time.sleep(0.05)  # a reconnect in progress
                continue
            with lock:
                figures.delivered.append((message.payload, message.guid))
            held.append(message)
            if len(held) >= confirm_every:
                reader.confirm_many(held)
                held = []

    def produce(writer: Queue) -> None:
        i = 0
        while i < max_posts and not (stop_posting.is_set() and i >= min_posts):
            payload = b"fo-%06d" % i

            def on_ack(ack: Ack, payload: bytes = payload) -> None:
                record(payload, "ack" if ack.ok else f"nack {ack.status.name}")

            try:
                guid = writer.post_async(payload, on_ack=on_ack)
            except PybmqError as exc:
                record(payload, f"refused {type(exc).__name__}")
                guid = b""
            with lock:
                figures.guids[payload] = guid
                figures.posts = i + 1
            if i % 20 == 19:
                time.sleep(0.01)  # at most about 2,000 posts/s, so the brokers keep up
            i += 1

    stop_consuming = threading.Event()
    with counter.attached(), consumer.session, producer.session:
        reader = consumer.session.open_queue(queue, read=True, dedup_window=dedup_window)
        writer = producer.session.open_queue(queue, write=True)
        threads = [
            threading.Thread(target=consume, args=(reader,), daemon=True),
            threading.Thread(target=produce, args=(writer,), daemon=True),
        ]
        for thread in threads:
            thread.start()
        for _ in range(kills):
            _wait_for(lambda: len(acks_at) >= 200 + len(figures.kills) * 500, "ACKs before a kill")
            figures.kills.append(_kill_primary(cluster, acks_at, lock, counter))
        stop_posting.set()
        threads[1].join(_BOUND)
        _wait_for(lambda: len(figures.outcomes) >= figures.posts, "an outcome for every post")
        _wait_for(lambda: not figures.lost, "the consumer to receive every ACKed post")
        time.sleep(1.0)  # late duplicates
        stop_consuming.set()
        threads[0].join(_BOUND)
        figures.connection_losses = {c.name: c.losses for c in (producer, consumer)}
        figures.held_back = consumer.session.stats().total.duplicates
    return figures


def _kill_primary(
    cluster: RealCluster, acks_at: list[float], lock: threading.Lock, counter: DialCounter
) -> Kill:
    victim = cluster.primary()
    node = cluster.node_id(victim)
    killed_at = time.monotonic()
    cluster.kill(victim)
    view = cluster.wait_ready()
    assert view.primaries[0] is not None
    kill = Kill(node, view.primaries[0], time.monotonic() - killed_at)
    cluster.start(victim)  # waits until it is back in a settled cluster
    back_at = time.monotonic()
    kill.restarted_s = back_at - killed_at
    kill.dials_to_dead = counter.between(victim.url, killed_at, back_at)
    _wait_for(lambda: acks_at[-1] > back_at, "an ACK once the dead node is back")
    with lock:
        around = [killed_at] + [t for t in acks_at if killed_at < t <= back_at] + [back_at]
    kill.ack_gap_s = max(b - a for a, b in itertools.pairwise(around))
    return kill


def _wait_for(condition: Callable[[], bool], what: str, bound: float = _BOUND) -> None:
    deadline = time.monotonic() + bound
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {bound:g} s")
        time.sleep(0.05)
