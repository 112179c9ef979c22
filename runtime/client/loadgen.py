"""Post N messages / consume N messages as fast as the session allows, with a bounded window.

Shared by ``pybmq post``, ``pybmq consume``, ``make demo`` and the end-to-end benchmark, so the
figures they print come from the same code.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pybmq.client.aio_queue import AsyncQueue, ReceivedMessage
from pybmq.client.events import Ack
from pybmq.client.options import BATCHES_PER_BUDGET
from pybmq.errors import EncodeError, SessionStoppedError, UsageError
from pybmq.generated.wire_codec import PropertyType
from pybmq.wire.properties import MessageProperties

__all__ = [
    "CONSUME_CHUNK",
    "POST_CHUNK",
    "Progress",
    "Stats",
    "consume_messages",
    "make_payload",
    "parse_properties",
    "post_messages",
    "progress_columns",
]

Progress = Callable[[int], object]  # called with how many more items are done


@dataclass
class Stats:
    """Filled in as the run goes, so an interrupted run can still say what got through."""

    count: int = 0  # ACKed posts / received messages
    failed: int = 0  # NACKed posts, local ones (timeout, session stopped) included
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    failures: dict[str, int] = field(default_factory=dict)
    posted: int = 0
    local_failures: int = 0  # NACKs made by pybmq, not the broker: the outcome is unknown
    broker_nacks: dict[str, int] = field(default_factory=dict)  # NACKs the broker sent, by status
    confirmed: int = 0  # CONFIRMs sent on the connection that delivered the message

    @property
    def rate(self) -> float:
        return self.count / self.seconds if self.seconds > 0 else 0.0

    @property
    def unresolved(self) -> int:
        """Posts without a broker verdict (no ACK nor broker NACK)."""
        return self.posted - self.count - (self.failed - self.local_failures)

    def latency_ms(self) -> dict[str, float] | None:
        """p50/p99/max of the recorded latencies, in milliseconds."""
        if not self.latencies:
            return None
        ordered = sorted(self.latencies)
        last = len(ordered) - 1
        return {
            "p50": ordered[last // 2] * 1000,
            "p99": ordered[(last * 99) // 100] * 1000,
            "max": ordered[last] * 1000,
        }


_PROPERTY_TYPES = {
    "bool": PropertyType.BOOL,
    "char": PropertyType.CHAR,
    "short": PropertyType.SHORT,
    "int32": PropertyType.INT32,
    "int64": PropertyType.INT64,
    "string": PropertyType.STRING,
    "binary": PropertyType.BINARY,
}
_BOOLS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def _property_value(name: str, kind: str | None, text: str) -> tuple[PropertyType, Any] | Any:
    if kind is None:  # untyped: an integer becomes INT32/INT64, anything else a STRING
        try:
            return int(text)
        except ValueError:
            return text
    ptype = _PROPERTY_TYPES.get(kind)
    if ptype is None:
        raise UsageError(f"property {name!r}: unknown type {kind!r} ({', '.join(_PROPERTY_TYPES)})")
    try:
        if ptype is PropertyType.BOOL:
            return ptype, _BOOLS[text.lower()]
        if ptype is PropertyType.BINARY:
            return ptype, bytes.fromhex(text)
        if ptype is PropertyType.STRING:
            return ptype, text
        return ptype, int(text, 0)
    except (KeyError, ValueError):
        raise UsageError(f"property {name!r}: {text!r} is not a {kind}") from None


def parse_properties(text: str | None) -> MessageProperties:
    """``k=v,n:int64=3,ok:bool=true,raw:binary=00ff`` → typed properties. Untyped integers
    become INT32/INT64, other untyped values STRING; a name given twice is an error."""
    properties = MessageProperties()
    if not text:
        return properties
    for item in text.split(","):
        key, sep, value = item.partition("=")
        name, _, kind = key.strip().partition(":")
        if not sep or not name:
            raise UsageError(f"property {item!r} is not name[:type]=value")
        if name in properties:
            raise UsageError(f"property {name!r} is given twice")
        typed = _property_value(name, kind or None, value)
        try:
            if isinstance(typed, tuple):
                properties.set(name, typed[1], typed[0])
            else:
                properties.set(name, typed)
        except EncodeError as exc:
            raise UsageError(str(exc)) from None
    return properties


def progress_columns(label: str) -> list[Any]:
    """rich progress columns: label, bar, done/total, msgs/s, elapsed, ETA (``post``,
    ``consume`` and the demo draw the same bar)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        ProgressColumn,
        Task,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class RateColumn(ProgressColumn):
        def render(self, task: Task) -> Text:
            return Text(f"{task.speed:>9,.0f} msgs/s" if task.speed else "      - msgs/s")

    return [
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    ]


def make_payload(size: int) -> bytes:
    if size <= 0:
        raise UsageError("--size must be at least 1 byte (empty payloads are not allowed)")
    pattern = b"pybmq-0123456789abcdefghijklmnopqrstuvwxyz-"
    return (pattern * (size // len(pattern) + 1))[:size]


def _timed(callback: Callable[[Ack, float], None], sent: float) -> Callable[[Ack], None]:
    return lambda ack: callback(ack, sent)


# post_messages hands the engine this many posts at a time (then lets the socket drain).
POST_CHUNK = 512
# Messages taken and confirmed per call, at most: a fraction of the default credit (1000
# messages), so that CONFIRMs flow back while the rest of a credit's worth is being taken.
CONSUME_CHUNK = 128


async def post_messages(
    queue: AsyncQueue,
    count: int,
    payload: bytes,
    *,
    properties: Mapping[str, Any] | None = None,
    window: int = 20_000,
    progress: Progress | None = None,
    measure_latency: bool = False,
    stats: Stats | None = None,
) -> Stats:
    """Post ``count`` messages keeping at most ``window`` unacknowledged; returns when all are
    acknowledged (or NACKed). ``stats``, when given, is updated as ACKs come."""
    if count < 0:
        raise UsageError("count must be >= 0")
    if window < 1:
        raise UsageError("window must be >= 1 (at least one post in flight)")
    stats = stats if stats is not None else Stats()
    loop = asyncio.get_running_loop()
    room = asyncio.Event()
    done = asyncio.Event()
    in_flight = 0
    acked = 0
    pending_progress = 0
    clock = time.perf_counter

    def on_ack(ack: Ack, sent: float = 0.0) -> None:
        nonlocal in_flight, acked, pending_progress
        in_flight -= 1
        acked += 1
        if ack.ok:
            stats.count += 1
        else:
            stats.failed += 1
            stats.failures[ack.status.value] = stats.failures.get(ack.status.value, 0) + 1
            if ack.local:
                stats.local_failures += 1
            else:
                nacks = stats.broker_nacks
                nacks[ack.status.value] = nacks.get(ack.status.value, 0) + 1
        now = clock()
        stats.seconds = now - start
        if measure_latency:
            stats.latencies.append(now - sent)
        pending_progress += 1
        if progress is not None and pending_progress >= 1000:
            progress(pending_progress)
            pending_progress = 0
        if in_flight <= window // 2:
            room.set()
        if acked == count:
            done.set()

    start = clock()
    session = queue.session
    posted = 0
    # A chunk is admitted whole while the session is under its byte budget: keep each well
    # under it, so the budget bounds what is held.
    budget = session.engine.options.max_buffered_bytes
    chunk_by_bytes = max(1, budget // (BATCHES_PER_BUDGET * max(len(payload), 1)))
    while posted < count:
        if in_flight >= window:
            room.clear()
            await room.wait()
        # The batch fast path; a slice's posts leave together, so they share one send time.
        n = min(POST_CHUNK, window - in_flight, count - posted, chunk_by_bytes)
        callback = _timed(on_ack, clock()) if measure_latency else on_ack
        queue.post_many_nowait([payload] * n, properties=properties, on_ack=callback)
        in_flight += n
        posted += n
        stats.posted += n
        await session.drain()
        await asyncio.sleep(0)
    if count:
        await done.wait()
    stats.seconds = clock() - start
    if progress is not None and pending_progress:
        progress(pending_progress)
    del loop
    return stats


async def consume_messages(
    queue: AsyncQueue,
    count: int | None,
    *,
    confirm: bool = True,
    progress: Progress | None = None,
    idle_timeout: float | None = None,
    on_message: Callable[[ReceivedMessage], object] | None = None,
    stats: Stats | None = None,
) -> Stats:
    """Take ``count`` messages (None: until the queue closes or ``idle_timeout`` passes with
    nothing new), confirming each unless ``confirm`` is False. Waits with a timeout only when
    the queue is empty, and the rate counts from the first to the last message (no idle time)."""
    stats = stats if stats is not None else Stats()
    start: float | None = None
    pending_progress = 0
    clock = time.perf_counter
    while count is None or stats.count < count:
        # Everything already here at once (the fast path: one confirm call per batch).
        batch = queue.get_many_nowait(
            CONSUME_CHUNK if count is None else min(CONSUME_CHUNK, count - stats.count)
        )
        if not batch:
            try:
                if idle_timeout is None:
                    batch = [await queue.get()]
                else:
                    batch = [await asyncio.wait_for(queue.get(), idle_timeout)]
            except (asyncio.TimeoutError, TimeoutError):
                break
            except SessionStoppedError:
                if stats.count == 0 and count:
                    raise
                break
        now = clock()
        if start is None:
            start = now
        # Counted before any await, so a run cancelled at any point never shows more confirmed
        # than received.
        stats.count += len(batch)
        stats.seconds = now - start
        if on_message is not None:
            for message in batch:
                on_message(message)
        if confirm:
            stats.confirmed += sum(message.confirmable for message in batch)
            queue.confirm_many_nowait(batch)
            await queue.session.drain()
            # Let this chunk's CONFIRMs leave now (they go on the next loop turn): the broker
            # pushes more against the freed credit while the rest is taken, so it and this
            # consumer work at the same time instead of in turns of a whole credit's worth.
            await asyncio.sleep(0)
        pending_progress += len(batch)
        if progress is not None and pending_progress >= 1000:
            progress(pending_progress)
            pending_progress = 0
    if progress is not None and pending_progress:
        progress(pending_progress)
    return stats
