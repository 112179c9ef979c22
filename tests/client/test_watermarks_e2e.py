"""Channel watermarks over a loopback socket: a broker that stops reading makes the client's write
buffer reach the high watermark (ChannelHighWatermark, drain() waits); once it reads again the
buffer drains to the low watermark (ChannelLowWatermark). As upstream's e_CHANNEL_HIGH_WATERMARK
and e_CHANNEL_LOW_WATERMARK (656c24b99): one event per crossing, high then low, again on every
stall, and the low one once what piled up has left (posting is fine again)."""

from __future__ import annotations

import asyncio

import pytest
from pybmq.client.aio import AsyncSession, ResilienceEvent
from pybmq.client.events import ChannelHighWatermark, ChannelLowWatermark
from pybmq.errors import UsageError
from pybmq.sim.server import BrokerSimulator

pytestmark = pytest.mark.timeout(60)

URI = "bmq://bmq.test.mem.priority/watermarks"
HIGH, LOW = 256 * 1024, 64 * 1024
CHUNK = b"x" * (256 * 1024)


async def test_high_then_low_watermark_when_the_broker_stalls_and_recovers() -> None:
    events: list[ResilienceEvent] = []
    changed = asyncio.Event()

    def on_event(event: ResilienceEvent) -> None:
        events.append(event)
        changed.set()

    async def until(kind: type) -> ResilienceEvent:
        while not any(isinstance(e, kind) for e in events):
            changed.clear()
            await changed.wait()
        return next(e for e in events if isinstance(e, kind))

    async with (
        BrokerSimulator() as sim,
        AsyncSession(
            sim.url, on_event=on_event, write_high_water=HIGH, write_low_water=LOW
        ) as session,
    ):
        writer = await session.open_queue(URI, write=True)
        [broker_side] = sim._transports.values()
        broker_side.pause_reading()  # a stalled broker: the kernel buffers fill, then ours
        posted = 0
        while session.writable and posted < 400:  # bounded: at most 100 MiB
            writer.post_nowait(CHUNK)
            posted += 1
            await asyncio.sleep(0)
        high = await asyncio.wait_for(until(ChannelHighWatermark), 10)
        assert high.buffered >= HIGH  # type: ignore[union-attr]
        assert not session.writable and session.high_watermarks == 1
        waiter = asyncio.ensure_future(session.drain())
        await asyncio.sleep(0.05)
        assert not waiter.done()  # drain() stays the way to wait
        broker_side.resume_reading()
        low = await asyncio.wait_for(until(ChannelLowWatermark), 20)
        assert low.buffered <= LOW  # type: ignore[union-attr]
        await asyncio.wait_for(waiter, 10)
        assert session.writable
        kinds = [type(e) for e in events]
        assert kinds.index(ChannelHighWatermark) < kinds.index(ChannelLowWatermark)


async def test_each_crossing_of_either_mark_is_one_event_in_turn() -> None:
    events: list[ResilienceEvent] = []
    async with (
        BrokerSimulator() as sim,
        AsyncSession(
            sim.url, on_event=events.append, write_high_water=HIGH, write_low_water=LOW
        ) as session,
    ):
        writer = await session.open_queue(URI, write=True)
        [broker_side] = sim._transports.values()
        for stall in (1, 2):
            broker_side.pause_reading()
            posted = 0
            while session.writable and posted < 400:
                writer.post_nowait(CHUNK)
                posted += 1
                await asyncio.sleep(0)
            assert not session.writable, "the stalled broker let the buffer reach the high mark"
            broker_side.resume_reading()
            await asyncio.wait_for(session.drain(), 20)
            assert session.writable and session.high_watermarks == stall
        kinds = [
            type(e) for e in events if isinstance(e, (ChannelHighWatermark, ChannelLowWatermark))
        ]
    assert kinds == [ChannelHighWatermark, ChannelLowWatermark] * 2


def test_watermarks_are_checked() -> None:
    with pytest.raises(UsageError, match="watermarks"):
        AsyncSession("tcp://127.0.0.1:1", write_high_water=100, write_low_water=200)
    with pytest.raises(UsageError, match="watermarks"):
        AsyncSession("tcp://127.0.0.1:1", write_low_water=-1)
