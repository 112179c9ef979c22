"""Host health for the native sessions, against ``pybmq sim`` over loopback sockets: a monitor
turning unhealthy suspends the sensitive queues on the broker (nothing is delivered, posts are
refused), turning healthy resumes them, with the events for success and failure."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

import pytest
from pybmq.client.aio import AsyncSession, ResilienceEvent
from pybmq.client.events import HostHealthRestored, HostUnhealthy, QueueResumed, QueueSuspended
from pybmq.client.health import HostHealthMonitor, ManualHostHealthMonitor
from pybmq.client.options import QueueOptions, SessionOptions
from pybmq.client.sync import Session
from pybmq.compat import BasicHealthMonitor
from pybmq.errors import QueueSuspendedError, RequestTimeoutError, UsageError
from pybmq.sim.config import BrokerHooks
from pybmq.sim.server import BrokerSimulator, ThreadedBrokerSimulator
from pybmq.sim.session import ClientSession

pytestmark = pytest.mark.timeout(60)

URI = "bmq://bmq.test.mem.priority/health"
OTHER = "bmq://bmq.test.mem.priority/health-other"
SENSITIVE = QueueOptions(suspends_on_bad_host_health=True)


class Events:
    def __init__(self) -> None:
        self.items: list[ResilienceEvent] = []
        self._changed = asyncio.Event()

    def __call__(self, event: ResilienceEvent) -> None:
        self.items.append(event)
        self._changed.set()

    async def wait_for(self, kind: type, count: int = 1) -> list[ResilienceEvent]:
        async def enough() -> None:
            while sum(isinstance(e, kind) for e in self.items) < count:
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(enough(), 10)
        return [e for e in self.items if isinstance(e, kind)]


@pytest.fixture
async def sim() -> AsyncIterator[BrokerSimulator]:
    async with BrokerSimulator() as simulator:
        yield simulator


@pytest.mark.parametrize("monitor_type", [ManualHostHealthMonitor, BasicHealthMonitor])
async def test_unhealthy_suspends_on_the_broker_and_healthy_resumes(
    sim: BrokerSimulator, monitor_type: type[ManualHostHealthMonitor]
) -> None:
    """Also with compat's BasicHealthMonitor: one monitor serves compat and native sessions."""
    monitor = monitor_type()
    events = Events()
    async with (
        AsyncSession(sim.url) as producer,
        AsyncSession(sim.url, host_health_monitor=monitor, on_event=events) as session,
    ):
        source = await producer.open_queue(URI, write=True)
        reader = await session.open_queue(URI, read=True, options=SENSITIVE)
        writer = await session.open_queue(OTHER, write=True, options=SENSITIVE)
        plain = await session.open_queue(OTHER.replace("other", "plain"), write=True)
        monitor.set_unhealthy()
        suspended = await events.wait_for(QueueSuspended, 2)
        assert isinstance(events.items[0], HostUnhealthy)
        assert {e.uri for e in suspended} == {URI, OTHER}  # type: ignore[union-attr]
        assert all(e.error is None for e in suspended)  # type: ignore[union-attr]
        assert reader.suspended and writer.suspended and not plain.suspended
        with pytest.raises(QueueSuspendedError):
            writer.post_nowait(b"refused")
        assert (await plain.post(b"a queue that is not sensitive")).ok
        assert (await source.post(b"held by the broker")).ok
        await asyncio.sleep(0.2)
        assert reader.get_nowait() is None  # the broker delivers nothing to a suspended reader
        assert sim.broker.store.queues[URI].pending_count() == 1
        # A configure while suspended is kept, and sent on resume.
        await reader.configure(suspends_on_bad_host_health=True, max_unconfirmed_messages=5)
        assert reader.get_nowait() is None
        monitor.set_healthy()
        resumed = await events.wait_for(QueueResumed, 2)
        await events.wait_for(HostHealthRestored)
        assert all(e.error is None for e in resumed)  # type: ignore[union-attr]
        assert isinstance(events.items[-1], HostHealthRestored)
        message = await asyncio.wait_for(reader.get(), 10)
        assert message.payload == b"held by the broker"
        assert (await writer.post(b"accepted again")).ok
        stream = sim.broker.store.queues[URI].streams
        [consumer_record] = [c for s in stream.values() for c in s.consumers]
        assert consumer_record.max_messages == 5  # the configure made while suspended


async def test_opened_while_unhealthy_starts_suspended(sim: BrokerSimulator) -> None:
    monitor = ManualHostHealthMonitor()
    monitor.set_unhealthy()
    events = Events()
    async with (
        AsyncSession(sim.url) as producer,
        AsyncSession(sim.url, host_health_monitor=monitor, on_event=events) as session,
    ):
        assert isinstance(events.items[0], HostUnhealthy)
        source = await producer.open_queue(URI, write=True)
        assert (await source.post(b"waits")).ok
        reader = await session.open_queue(URI, read=True, options=SENSITIVE)
        assert reader.suspended
        await asyncio.sleep(0.2)
        assert reader.get_nowait() is None
        monitor.set_healthy()
        await events.wait_for(HostHealthRestored)
        assert (await asyncio.wait_for(reader.get(), 10)).payload == b"waits"


class SilentWhenAsked(BrokerHooks):
    silent = False

    def outgoing(self, session: ClientSession, data: bytes) -> bytes:
        return b"" if self.silent else data


async def test_an_unanswered_suspend_or_resume_gives_the_event_with_its_error() -> None:
    hooks = SilentWhenAsked()
    monitor = ManualHostHealthMonitor()
    events = Events()
    options = SessionOptions(request_timeout=0.5)
    async with (
        BrokerSimulator(hooks=hooks) as sim,
        AsyncSession(sim.url, options=options, host_health_monitor=monitor, on_event=events) as s,
    ):
        reader = await s.open_queue(URI, read=True, options=SENSITIVE)
        hooks.silent = True
        monitor.set_unhealthy()
        [suspended] = await events.wait_for(QueueSuspended)
        assert isinstance(suspended.error, RequestTimeoutError)  # type: ignore[union-attr]
        assert reader.suspended  # posts stay refused
        monitor.set_healthy()
        [resumed] = await events.wait_for(QueueResumed)
        assert isinstance(resumed.error, RequestTimeoutError)  # type: ignore[union-attr]
        await events.wait_for(HostHealthRestored)
        assert not reader.suspended
        hooks.silent = False


async def test_sensitive_queue_needs_a_monitor(sim: BrokerSimulator) -> None:
    async with AsyncSession(sim.url) as session:
        with pytest.raises(UsageError, match="host_health_monitor"):
            await session.open_queue(URI, read=True, options=SENSITIVE)


def test_blocking_session_and_a_monitor_changed_from_another_thread() -> None:
    monitor = ManualHostHealthMonitor()
    seen: list[ResilienceEvent] = []
    restored = threading.Event()

    def on_event(event: ResilienceEvent) -> None:
        seen.append(event)
        if isinstance(event, HostHealthRestored):
            restored.set()

    with (
        ThreadedBrokerSimulator() as sim,
        Session(sim.url, host_health_monitor=monitor, on_event=on_event) as session,
    ):
        queue = session.open_queue(URI, read=True, options=SENSITIVE)
        assert not queue.suspended
        threading.Thread(target=monitor.set_unhealthy).start()
        threading.Thread(target=lambda: (restored.wait(0.3), monitor.set_healthy())).start()
        assert restored.wait(10)
    kinds = [type(e).__name__ for e in seen]
    assert kinds == ["HostUnhealthy", "QueueSuspended", "QueueResumed", "HostHealthRestored"]


def test_monitor_listeners_are_told_of_changes_only_and_held_weakly() -> None:
    monitor = ManualHostHealthMonitor()
    heard: list[bool] = []
    unsubscribe = monitor.subscribe(heard.append)
    monitor.set_healthy()  # no change
    monitor.set_unhealthy()
    monitor.set_unhealthy()
    monitor.set_healthy()
    assert heard == [False, True]
    unsubscribe()
    monitor.set_unhealthy()
    assert heard == [False, True]

    class Listener:
        def __init__(self) -> None:
            self.heard: list[bool] = []

        def on_change(self, healthy: bool) -> None:
            self.heard.append(healthy)

    listener = Listener()
    monitor.subscribe(listener.on_change)
    monitor.set_healthy()
    assert listener.heard == [True]
    del listener
    monitor.set_unhealthy()  # the dead listener is dropped, not called
    assert monitor._listeners == {}  # one unsubscribed, one dropped once its owner was gone
    assert isinstance(monitor, HostHealthMonitor) and "healthy=False" in repr(monitor)
