"""The post and consume loops of the CLI: counts that stay consistent wherever a run is cut.

Every count is updated in the same synchronous step as the action it counts (a post buffered,
a message written out and confirmed), never across an ``await``; so a cancellation (Ctrl-C,
SIGTERM, ``--timeout``), which can only land on an ``await``, never leaves ``confirmed`` above
``received`` nor ``posted`` out of step with the ACKs. ``rate`` is measured over the interval
the messages actually flowed in, and is None (printed "—") when that is too short to mean
anything.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pybmq.cli.content import ContentError
from pybmq.cli.template import RenderError
from pybmq.errors import InvalidTransitionError, SessionStoppedError, UsageError

if TYPE_CHECKING:
    from pybmq.cli.content import Outgoing
    from pybmq.cli.sinks import Sink
    from pybmq.client.aio_queue import AsyncQueue, ReceivedMessage
    from pybmq.client.events import Ack
    from pybmq.client.loadgen import Stats

__all__ = [
    "CONSUME_CHUNK",
    "MIN_RATE_SECONDS",
    "ConsumeCounts",
    "consume",
    "post",
    "rate",
    "rate_text",
    "record_ack",
]

# Below this many seconds between the first and the last message, or with fewer than two
# messages, a rate is noise: it is reported as None ("— msgs/s").
MIN_RATE_SECONDS = 0.001
CONSUME_CHUNK = 128


def rate(count: int, seconds: float) -> float | None:
    """Messages per second over ``seconds``; None when there is too little to measure."""
    if count < 2 or seconds < MIN_RATE_SECONDS:
        return None
    return count / seconds


def rate_text(value: float | None) -> str:
    return "— msgs/s" if value is None else f"{value:,.0f} msgs/s"


@dataclass
class ConsumeCounts:
    """What a consume run did, consistent at every ``await``."""

    received: int = 0  # messages taken and handed to the output
    confirmed: int = 0  # CONFIRMs buffered for them (only those the connection still owns)
    unwritten: int = 0  # of those received, the ones the output could not write (unconfirmed)
    first: float | None = None  # clock of the first message
    last: float | None = None  # clock of the last one

    @property
    def unconfirmed(self) -> int:
        return self.received - self.confirmed

    @property
    def rate(self) -> float | None:
        if self.first is None or self.last is None:
            return None
        return rate(self.received, self.last - self.first)


async def consume(
    queue: AsyncQueue,
    count: int | None,
    counts: ConsumeCounts,
    *,
    confirm: bool = True,
    idle_timeout: float | None = None,
    sinks: Sequence[Sink] = (),
    progress: Callable[[int], object] | None = None,
    unwritten: Callable[[ReceivedMessage, int, RenderError], object] | None = None,
) -> None:
    """Take messages until ``count`` (None: until idle for ``idle_timeout``, or the queue
    closes); each is written to every sink before it is confirmed (at least once: a message
    is never confirmed unless it was written). A message a sink cannot write (``RenderError``)
    is counted, left unconfirmed and handed to ``unwritten``, which may raise ``ContentError``
    to end the run (after the CONFIRMs of the messages written before it)."""
    clock = time.perf_counter
    while count is None or counts.received < count:
        want = CONSUME_CHUNK if count is None else min(CONSUME_CHUNK, count - counts.received)
        batch = queue.get_many_nowait(want)
        if not batch:
            try:
                batch = [await asyncio.wait_for(queue.get(), idle_timeout)]
            except (asyncio.TimeoutError, TimeoutError):
                break
            except SessionStoppedError:
                if counts.received == 0 and count:
                    raise
                break
        # From here to the next await: write, confirm and count as one step.
        written = []
        stop: ContentError | None = None
        for message in batch:
            number = counts.received + 1
            try:
                for sink in sinks:
                    sink(message, number)
            except RenderError as exc:
                counts.received += 1
                counts.unwritten += 1
                try:
                    if unwritten is not None:
                        unwritten(message, number, exc)
                except ContentError as ended:  # the rest of the batch is left to a later run
                    stop = ended
                    break
                continue
            counts.received += 1  # after the sinks: a failed write is not counted
            written.append(message)
        if confirm:
            counts.confirmed += sum(message.confirmable for message in written)
            queue.confirm_many_nowait(written)
        now = clock()
        counts.first = now if counts.first is None else counts.first
        counts.last = now
        if progress is not None:
            progress(len(batch))
        if confirm:
            await queue.session.drain()
            if stop is None:
                await asyncio.sleep(0)  # let the CONFIRMs leave while the next batch is taken
        if stop is not None:
            raise stop


async def post(
    queue: AsyncQueue,
    batches: AsyncIterator[list[Outgoing]],
    stats: Stats,
    *,
    window: int,
    progress: Callable[[int], object] | None = None,
) -> None:
    """Post every message of ``batches``, at most ``window`` unacknowledged; returns once each
    has its ACK or NACK. ``stats`` (loadgen's, as the generated-payload path fills it) counts
    each post when it is buffered and each verdict when it comes."""
    clock = time.perf_counter
    room = asyncio.Event()
    settled = asyncio.Event()
    in_flight = 0
    start = clock()

    def on_ack(ack: Ack, sent: float) -> None:
        nonlocal in_flight
        in_flight -= 1
        record_ack(stats, ack)
        now = clock()
        stats.seconds = now - start
        stats.latencies.append(now - sent)
        if in_flight <= window // 2:
            room.set()
        if in_flight == 0:
            settled.set()

    async def settle() -> None:
        while in_flight:
            settled.clear()
            await settled.wait()
        stats.seconds = clock() - start

    try:
        async for batch in batches:
            for message in batch:
                while in_flight >= window:
                    room.clear()
                    await room.wait()
                await queue.session.drain()  # room for it (the session's byte budget)
                sent = clock()
                try:
                    queue.post_nowait(
                        message.payload,
                        properties=message.properties,
                        on_ack=lambda ack, sent=sent: on_ack(ack, sent),  # type: ignore[misc]
                        compression=message.compression,
                    )
                except InvalidTransitionError:
                    raise
                except UsageError as exc:  # too big for the protocol: the record is at fault
                    raise ContentError(f"{message.where or 'a message'}: {exc}") from None
                in_flight += 1
                stats.posted += 1
            if progress is not None:
                progress(len(batch))
    except ContentError:  # bad input ends the reading, not the posts made: wait for their ACKs
        await settle()
        raise
    await settle()


def record_ack(stats: Stats, ack: Ack) -> None:
    """One verdict into ``stats``, as ``loadgen.post_messages`` counts them."""
    if ack.ok:
        stats.count += 1
        return
    status: Any = ack.status.value
    stats.failed += 1
    stats.failures[status] = stats.failures.get(status, 0) + 1
    if ack.local:
        stats.local_failures += 1
    else:
        stats.broker_nacks[status] = stats.broker_nacks.get(status, 0) + 1
