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

from pybmq.client.aio_queue import AsyncQueue
from pybmq.client.events import Ack
from pybmq.errors import UsageError

Progress = Callable[[int], object]  # called with how many more items are done


@dataclass
class Stats:
    count: int = 0
    failed: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    failures: dict[str, int] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.count / self.seconds if self.seconds > 0 else 0.0


def parse_properties(text: str | None) -> dict[str, Any]:
    """``k=v,k2=7`` → {"k": "v", "k2": 7}: integers become int32/int64 properties, the rest strings."""
    if not text:
        return {}
    properties: dict[str, Any] = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"property {item!r} is not key=value")
        try:
            properties[key.strip()] = int(value)
        except ValueError:
            properties[key.strip()] = value
    return properties


def make_payload(size: int) -> bytes:
    if size <= 0:
        raise UsageError("--size must be at least 1 byte (empty payloads are not allowed)")
    pattern = b"pybmq-0123456789abcdefghijklmnopqrstuvwxyz-"
    return (pattern * (size // len(pattern) + 1))[:size]


def _timed(callback: Callable[[Ack, float], None], sent: float) -> Callable[[Ack], None]:
    return lambda ack: callback(ack, sent)


async def post_messages(
    queue: AsyncQueue,
    count: int,
    payload: bytes,
    *,
    properties: Mapping[str, Any] | None = None,
    window: int = 20_000,
    progress: Progress | None = None,
    measure_latency: bool = False,
) -> Stats:
    """Post ``count`` messages keeping at most ``window`` unacknowledged; returns when all are
    acknowledged (or NACKed)."""
    if count < 0:
        raise UsageError("count must be >= 0")
    stats = Stats()
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
        if measure_latency:
            stats.latencies.append(clock() - sent)
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
    for i in range(count):
        if in_flight >= window:
            room.clear()
            await room.wait()
        if measure_latency:
            queue.post_nowait(payload, properties=properties, on_ack=_timed(on_ack, clock()))
        else:
            queue.post_nowait(payload, properties=properties, on_ack=on_ack)
        in_flight += 1
        if i % 512 == 511:
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
) -> Stats:
    """Take ``count`` messages (None: until the queue closes or ``idle_timeout`` passes with
    nothing new), confirming each unless ``confirm`` is False."""
    stats = Stats()
    start: float | None = None
    pending_progress = 0
    while count is None or stats.count < count:
        try:
            if idle_timeout is None:
                message = await queue.get()
            else:
                message = await asyncio.wait_for(queue.get(), idle_timeout)
        except (asyncio.TimeoutError, TimeoutError):
            break
        except Exception:
            if stats.count == 0 and count:
                raise
            break
        if start is None:
            start = time.perf_counter()
        if confirm:
            message.confirm_nowait()
            if stats.count % 1024 == 1023:
                await queue.session.drain()
        stats.count += 1
        pending_progress += 1
        if progress is not None and pending_progress >= 1000:
            progress(pending_progress)
            pending_progress = 0
    if start is not None:
        stats.seconds = time.perf_counter() - start
    if progress is not None and pending_progress:
        progress(pending_progress)
    return stats
