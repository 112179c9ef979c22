"""Resilience over real loopback sockets: forced disconnects, missed heartbeats, held posts.

The simulator's fault injector drops connections; the clients reconnect, reopen their queues and
retransmit what was not acknowledged. Counts are printed (run with ``-s``) and recorded in
``RESULTS`` for the README figures.
"""

from __future__ import annotations

import asyncio
import collections
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace

import pytest
from pybmq.client.aio import AsyncSession, ResilienceEvent
from pybmq.client.aio_queue import ReceivedMessage
from pybmq.client.events import Ack, ConnectionLost, QueueReopened, Reconnected, StateRestored
from pybmq.client.options import SessionOptions
from pybmq.client.reconnect import ReconnectPolicy
from pybmq.errors import BrokerError, PostBufferFullError
from pybmq.sim.config import BrokerConfig
from pybmq.sim.faults import FaultConfig, FaultInjector
from pybmq.sim.server import BrokerSimulator

pytestmark = pytest.mark.timeout(120)

QUEUE = "bmq://bmq.test.mem.priority/resilience"
FAST_RECONNECT = ReconnectPolicy(initial_delay=0.01, max_delay=0.2, isolate_after=50)
OPTIONS = SessionOptions(
    reconnect=True,
    reconnect_policy=FAST_RECONNECT,
    max_buffered_posts=100_000,
    ack_timeout=60.0,
    request_timeout=10.0,
)


def kinds(events: list[ResilienceEvent]) -> list[str]:
    return [type(e).__name__ for e in events]


async def test_twenty_forced_disconnects_while_posting_and_consuming() -> None:
    total, window = 20_000, 1_000
    drops = 20
    faults = FaultConfig(seed=7)
    async with BrokerSimulator(faults=faults) as sim:
        injector = sim.broker.hooks
        assert isinstance(injector, FaultInjector)
        loop = asyncio.get_running_loop()
        producer_events: list[ResilienceEvent] = []
        consumer_events: list[ResilienceEvent] = []
        producer = AsyncSession(sim.url, options=OPTIONS, on_event=producer_events.append)
        consumer = AsyncSession(
            sim.url, options=replace(OPTIONS, session_id=2), on_event=consumer_events.append
        )
        started = time.monotonic()
        await producer.start()
        await consumer.start()
        writer = await producer.open_queue(QUEUE, write=True)
        reader = await consumer.open_queue(QUEUE, read=True, max_unconfirmed_messages=500)

        outcomes: dict[bytes, list[Ack]] = collections.defaultdict(list)
        progress = asyncio.Event()

        def on_ack(ack: Ack) -> None:
            outcomes[ack.guid].append(ack)
            progress.set()

        received: collections.Counter[bytes] = collections.Counter()
        posted: list[bytes] = []
        all_posted = asyncio.Event()

        async def consume() -> None:
            # Confirms lag 100 messages behind, so a consumer drop finds messages pushed and not
            # confirmed: those are redelivered (the at-least-once contract) and counted.
            lagging: collections.deque[ReceivedMessage] = collections.deque()
            while True:
                message = await reader.get()
                received[message.guid] += 1
                lagging.append(message)
                if len(lagging) > 100:
                    lagging.popleft().confirm_nowait()
                if all_posted.is_set() and len(outcomes) == total:
                    acked = {g for g, acks in outcomes.items() if acks[0].ok}
                    if acked <= received.keys():
                        return

        consumer_task = loop.create_task(consume())
        for i in range(total):
            while len(posted) - len(outcomes) >= window:
                progress.clear()
                await asyncio.wait_for(progress.wait(), 30)
            if i % (total // drops) == total // drops // 2:
                # Alternate: the producer's connection, then the consumer's, ...
                injector.arm_drop(client_session_id=1 + (i * drops // total) % 2)
            posted.append(writer.post_nowait(b"message %d" % i, on_ack=on_ack))
            if i % 100 == 99:
                await asyncio.sleep(0)  # let the loop flush: one PUT event per 100 posts
        all_posted.set()
        while len(outcomes) < total:
            progress.clear()
            await asyncio.wait_for(progress.wait(), 30)
        await asyncio.wait_for(consumer_task, 60)
        elapsed = time.monotonic() - started

        nacks = sum(1 for acks in outcomes.values() if not acks[0].ok)
        duplicates = sum(n - 1 for n in received.values())
        print(
            f"\n{total} posts, {injector.dropped} forced disconnects in {elapsed:.1f}s: "
            f"{total - nacks} ACKed, {nacks} NACKed, {len(received)} distinct delivered, "
            f"{duplicates} duplicate deliveries; producer reconnects {producer.reconnects}, "
            f"consumer reconnects {consumer.reconnects}; broker redelivered {sim.broker.stats.redelivered}"
        )
        assert injector.dropped == drops
        assert producer.reconnects >= drops // 2 and consumer.reconnects >= drops // 2
        assert set(outcomes) == set(posted) and len(posted) == total
        assert all(len(acks) == 1 for acks in outcomes.values()), "a post was reported twice"
        assert nacks == 0
        # Consumer drops found unconfirmed messages: redelivered, seen twice, and counted.
        assert 0 < duplicates <= sim.broker.stats.redelivered
        assert sim.broker.stats.pushes == total + sim.broker.stats.redelivered
        assert {g for g, acks in outcomes.items() if acks[0].ok} <= received.keys()
        queue = sim.broker.queue(QUEUE)
        assert queue is not None and queue.posted == total  # retransmits were de-duplicated
        for events in (producer_events, consumer_events):
            if events:
                assert kinds(events)[0] == "ConnectionLost"
                assert kinds(events)[-1] == "StateRestored"
        await producer.stop()
        await consumer.stop()


async def test_missed_heartbeats_lead_to_connection_lost_and_reconnect() -> None:
    config = BrokerConfig(heartbeat_interval_ms=50, max_missed_heartbeats=3)
    faults = FaultConfig(answer_heartbeats=False)
    async with BrokerSimulator(config, faults=faults) as sim:
        events: list[ResilienceEvent] = []
        times: list[float] = []
        restored = asyncio.Event()

        def on_event(event: ResilienceEvent) -> None:
            events.append(event)
            times.append(time.monotonic())
            if isinstance(event, StateRestored):
                restored.set()

        session = AsyncSession(sim.url, options=OPTIONS, on_event=on_event)
        await session.start()
        writer = await session.open_queue(QUEUE, write=True)
        last_traffic = time.monotonic()  # the broker's last answer (to the open)
        await asyncio.wait_for(restored.wait(), 10)
        # Silence is declared after heartbeat interval x max missed = 0.15 s, not before; the
        # upper bound is generous for a loaded machine.
        assert 0.15 <= times[0] - last_traffic < 3
        assert times[-1] - times[0] < 3  # reconnect (first backoff ~10 ms), reopen, restore
        assert kinds(events)[:4] == [
            "ConnectionLost",
            "Reconnected",
            "QueueReopened",
            "StateRestored",
        ]
        assert isinstance(events[0], ConnectionLost) and "missed heartbeats" in events[0].reason
        assert isinstance(events[1], Reconnected)
        assert isinstance(events[2], QueueReopened) and events[2].error is None
        ack = await asyncio.wait_for(writer.post(b"after the reconnect"), 10)
        assert ack.ok
        await session.stop()


async def test_posts_are_held_while_disconnected_and_overflow_is_a_typed_error() -> None:
    sim = BrokerSimulator()
    await sim.start()
    port = sim.port
    restored = asyncio.Event()
    lost = asyncio.Event()

    def on_event(event: ResilienceEvent) -> None:
        if isinstance(event, ConnectionLost):
            lost.set()
        elif isinstance(event, StateRestored):
            restored.set()

    options = replace(OPTIONS, max_buffered_posts=5)
    session = AsyncSession(sim.url, options=options, on_event=on_event)
    await session.start()
    writer = await session.open_queue(QUEUE, write=True)
    await sim.stop()  # the broker goes away: no connection to reconnect to for now
    await asyncio.wait_for(lost.wait(), 10)
    held = [asyncio.ensure_future(writer.post(b"held %d" % i)) for i in range(5)]
    await asyncio.sleep(0)
    with pytest.raises(PostBufferFullError, match="max_buffered_posts=5"):
        writer.post_nowait(b"one too many")
    await sim.start(port=port)  # the same port, the same queues
    await asyncio.wait_for(restored.wait(), 10)
    acks = await asyncio.wait_for(asyncio.gather(*held), 10)
    assert all(ack.ok for ack in acks)
    queue = sim.broker.queue(QUEUE)
    assert queue is not None and queue.posted == 5
    await session.stop()
    await sim.stop()


async def test_restart_keeps_queue_contents_and_consumer_gets_them_after_reconnect() -> None:
    async with BrokerSimulator() as sim:
        restored = asyncio.Event()
        consumer = AsyncSession(
            sim.url,
            options=replace(OPTIONS, session_id=3),
            on_event=lambda e: restored.set() if isinstance(e, StateRestored) else None,
        )
        async with AsyncSession(sim.url) as producer:
            writer = await producer.open_queue(QUEUE, write=True)
            for i in range(10):
                assert (await writer.post(b"kept %d" % i)).ok
        await consumer.start()
        reader = await consumer.open_queue(QUEUE, read=True, max_unconfirmed_messages=3)
        first = await asyncio.wait_for(reader.get(), 10)
        await sim.restart()
        await asyncio.wait_for(restored.wait(), 10)
        first.confirm_nowait()  # of the old connection: dropped, it is redelivered instead
        payloads = []
        while len(set(payloads)) < 10:
            message = await asyncio.wait_for(reader.get(), 10)
            payloads.append(message.payload)
            message.confirm_nowait()
        assert set(payloads) == {b"kept %d" % i for i in range(10)}
        await consumer.stop()
        assert sim.broker.stats.violations == []
        assert sim.broker.stats.improper == []  # no stale confirm crossed a reconnect


async def test_reconnect_moves_to_the_next_endpoint_when_the_first_is_gone() -> None:
    first, second = BrokerSimulator(), BrokerSimulator()
    await first.start()
    await second.start()
    restored = asyncio.Event()
    options = replace(OPTIONS, endpoints=(second.url,))
    session = AsyncSession(
        first.url,
        options=options,
        on_event=lambda e: restored.set() if isinstance(e, StateRestored) else None,
    )
    try:
        await session.start()
        writer = await session.open_queue(QUEUE, write=True)
        await first.stop()  # gone for good: the session must fail over to the second broker
        await asyncio.wait_for(restored.wait(), 10)
        assert (await asyncio.wait_for(writer.post(b"on the second broker"), 10)).ok
        queue = second.broker.queue(QUEUE)
        assert queue is not None and queue.posted == 1
    finally:
        await session.stop()
        await first.stop()
        await second.stop()


def _start_cli_sim(*flags: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "pybmq.cli", "sim", "--port", "0", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("pybmq sim listening on "), line
    return process, line.rsplit(" ", 1)[1].strip()


def _stop_cli_sim(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    return out


async def test_cli_fault_flags_drop_and_refuse() -> None:
    process, url = _start_cli_sim("--drop-after-events", "4", "--max-drops", "2", "--seed", "1")
    try:
        losses: list[ResilienceEvent] = []
        restored = asyncio.Event()

        def on_event(event: ResilienceEvent) -> None:
            if isinstance(event, ConnectionLost):
                losses.append(event)
            if isinstance(event, StateRestored) and len(losses) == 2:
                restored.set()

        session = AsyncSession(url, options=OPTIONS, on_event=on_event)
        await session.start()  # event 1
        writer = await session.open_queue(QUEUE, write=True)  # event 2
        acks = [await asyncio.wait_for(writer.post(b"m%d" % i), 10) for i in range(6)]
        await asyncio.wait_for(restored.wait(), 10)
        assert all(ack.ok for ack in acks) and len(losses) == 2
        await session.stop()
    finally:
        out = _stop_cli_sim(process)
    assert "pybmq sim stopped: 3 sessions" in out

    process, url = _start_cli_sim("--restart-every", "0.3")
    try:
        restored = asyncio.Event()
        session = AsyncSession(
            url,
            options=OPTIONS,
            on_event=lambda e: restored.set() if isinstance(e, StateRestored) else None,
        )
        await session.start()
        writer = await session.open_queue(QUEUE, write=True)
        await asyncio.wait_for(restored.wait(), 10)  # the simulator restarted under us
        assert (await asyncio.wait_for(writer.post(b"after a restart"), 10)).ok
        await session.stop()
    finally:
        _stop_cli_sim(process)

    process, url = _start_cli_sim("--refuse-negotiation")
    try:
        with pytest.raises(BrokerError, match="E_REFUSED"):
            await AsyncSession(url).start()
    finally:
        _stop_cli_sim(process)


def test_blocking_session_reconnects_and_reports_events_on_its_dispatcher() -> None:
    import threading

    from pybmq.client.sync import Session
    from pybmq.sim.server import ThreadedBrokerSimulator

    seen: list[str] = []
    restored = threading.Event()

    def on_event(event: ResilienceEvent) -> None:
        seen.append(type(event).__name__)
        if isinstance(event, StateRestored):
            restored.set()

    with (
        ThreadedBrokerSimulator() as sim,
        Session(sim.url, options=OPTIONS, on_event=on_event) as session,
    ):
        queue = session.open_queue(QUEUE, write=True)
        sim.restart()
        assert restored.wait(10)
        assert queue.post(b"after restart", timeout=10).ok
    assert seen == ["ConnectionLost", "Reconnected", "QueueReopened", "StateRestored"]
