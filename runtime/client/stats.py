"""Session statistics (the C++ SDK's per-session and per-queue stats, dumped every
``statsDumpInterval``): what the engine counts on the data path and the typed snapshot
``session.stats()`` returns.

Counting is kept off the per-message path where it can be: posts are counted per packed run at
flush time, ACK latencies per run of ACKs of one flush (the posts of one flush share their send
time). Latency percentiles cover the latest ``LATENCY_WINDOW`` samples of a queue, so memory stays
bounded however long the session runs. Counters of a closed queue go into the session totals.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = [
    "LATENCY_WINDOW",
    "LatencySummary",
    "LatencyWindow",
    "QueueCounters",
    "QueueStats",
    "SessionStats",
    "snapshot",
]

LATENCY_WINDOW = 4096  # latency samples (each with a weight: messages it stands for) per queue


class LatencyWindow:
    """The latest samples of one latency, as (seconds, how many messages it stands for).

    Kept in two flat arrays used as a ring: once full, adding a sample allocates nothing (a
    long-running session's memory stays flat, not one float and one tuple per sample)."""

    __slots__ = ("_next", "_seconds", "_size", "_weights")

    def __init__(self, size: int = LATENCY_WINDOW) -> None:
        self._seconds = array("d")
        self._weights = array("q")
        self._size = size
        self._next = 0  # where the next sample goes once the ring is full

    def add(self, seconds: float, weight: int = 1) -> None:
        if len(self._seconds) < self._size:
            self._seconds.append(seconds)
            self._weights.append(weight)
            return
        i = self._next
        self._seconds[i] = seconds
        self._weights[i] = weight
        self._next = (i + 1) % self._size

    @property
    def samples(self) -> list[tuple[float, int]]:
        """The samples, oldest first (a copy: safe to take from another thread)."""
        seconds, weights, i = self._seconds[:], self._weights[:], self._next
        pairs = list(zip(seconds, weights, strict=False))
        return pairs[i:] + pairs[:i]

    def extend(self, samples: Iterable[tuple[float, int]]) -> None:
        for seconds, weight in samples:
            self.add(seconds, weight)


@dataclass(frozen=True)
class LatencySummary:
    """Percentiles (seconds) of a latency over its window; all None when nothing was measured."""

    count: int = 0  # messages the samples stand for
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    max: float | None = None

    @classmethod
    def of(cls, windows: Iterable[LatencyWindow]) -> LatencySummary:
        # ``samples`` copies each array in one step under the GIL: a snapshot taken from another
        # thread (an OpenTelemetry reader) at worst pairs one sample with its neighbour's weight.
        samples = sorted(s for window in windows for s in window.samples)
        total = sum(weight for _value, weight in samples)
        if not total:
            return cls()
        cuts: list[float] = []
        wanted = [0.50, 0.90, 0.99]
        running = 0
        for value, weight in samples:
            running += weight
            while wanted and running >= wanted[0] * total:
                cuts.append(value)
                wanted.pop(0)
        while wanted:  # rounding: the rest are the largest sample
            cuts.append(samples[-1][0])
            wanted.pop(0)
        return cls(total, cuts[0], cuts[1], cuts[2], samples[-1][0])

    def __str__(self) -> str:
        if not self.count:
            return "-"
        assert self.p50 is not None and self.p99 is not None and self.max is not None
        return (
            f"p50 {self.p50 * 1e3:.2f} ms, p99 {self.p99 * 1e3:.2f} ms, "
            f"max {self.max * 1e3:.2f} ms (n={self.count})"
        )


class QueueCounters:
    """What the engine counts for one queue (mutable, owned by the engine)."""

    __slots__ = (
        "ack_latency",
        "acks",
        "confirm_latency",
        "confirmed",
        "duplicates",
        "nacks",
        "posted",
        "posted_bytes",
        "received",
        "received_bytes",
    )

    def __init__(self) -> None:
        self.posted = 0  # messages that left in PUT events
        self.posted_bytes = 0  # their payload bytes (before compression)
        self.acks = 0  # successful broker ACKs
        self.nacks = 0  # broker NACKs (local outcomes such as timeouts are not counted)
        self.received = 0  # PUSHed messages delivered
        self.received_bytes = 0  # their payload bytes (as received)
        self.confirmed = 0
        # PUSHed messages not delivered because the queue's de-duplication window had them.
        self.duplicates = 0
        self.ack_latency = LatencyWindow()  # post flushed → ACK received
        self.confirm_latency = LatencyWindow()  # message received → confirm() called

    def add_into(self, other: QueueCounters) -> None:
        """Fold these counts into ``other`` (a closed queue's counts into the session's)."""
        for name in (
            "posted",
            "posted_bytes",
            "acks",
            "nacks",
            "received",
            "received_bytes",
            "duplicates",
        ):
            setattr(other, name, getattr(other, name) + getattr(self, name))
        other.confirmed += self.confirmed
        other.ack_latency.extend(self.ack_latency.samples)
        other.confirm_latency.extend(self.confirm_latency.samples)


@dataclass(frozen=True)
class QueueStats:
    """A snapshot of one queue's counters (or, with ``uri`` ``"*"``, the session's totals)."""

    uri: str
    posted: int = 0
    posted_bytes: int = 0
    acks: int = 0
    nacks: int = 0
    received: int = 0
    received_bytes: int = 0
    confirmed: int = 0
    duplicates: int = 0  # not delivered: already delivered (the de-duplication window)
    ack_latency: LatencySummary = field(default_factory=LatencySummary)
    confirm_latency: LatencySummary = field(default_factory=LatencySummary)

    @classmethod
    def of(cls, uri: str, counters: Iterable[QueueCounters]) -> QueueStats:
        parts = list(counters)
        return cls(
            uri,
            posted=sum(c.posted for c in parts),
            posted_bytes=sum(c.posted_bytes for c in parts),
            acks=sum(c.acks for c in parts),
            nacks=sum(c.nacks for c in parts),
            received=sum(c.received for c in parts),
            received_bytes=sum(c.received_bytes for c in parts),
            confirmed=sum(c.confirmed for c in parts),
            duplicates=sum(c.duplicates for c in parts),
            ack_latency=LatencySummary.of(c.ack_latency for c in parts),
            confirm_latency=LatencySummary.of(c.confirm_latency for c in parts),
        )

    def line(self) -> str:
        duplicates = f", duplicates {self.duplicates}" if self.duplicates else ""
        return (
            f"{self.uri}: out {self.posted} msgs / {self.posted_bytes} B, "
            f"ACK {self.acks}, NACK {self.nacks}, in {self.received} msgs / "
            f"{self.received_bytes} B, confirmed {self.confirmed}{duplicates}; "
            f"ACK latency {self.ack_latency}; confirm latency {self.confirm_latency}"
        )


@dataclass(frozen=True)
class SessionStats:
    """``session.stats()``: every open queue (by URI) and the session's totals (closed queues
    included), taken at ``taken_at`` (``time.time()``)."""

    queues: Mapping[str, QueueStats]
    total: QueueStats
    taken_at: float

    def format(self) -> str:
        """Several lines, as the periodic dump logs them."""
        lines = [f"session stats: {self.total.line()}"]
        lines.extend(f"  {stats.line()}" for stats in self.queues.values())
        return "\n".join(lines)


def snapshot(queues: Mapping[str, QueueCounters], closed: QueueCounters) -> SessionStats:
    """The typed snapshot of the engine's counters (``queues``: open queues by URI)."""
    per_queue = {uri: QueueStats.of(uri, (c,)) for uri, c in queues.items()}
    total = QueueStats.of("*", [*queues.values(), closed])
    return SessionStats(per_queue, total, time.time())
