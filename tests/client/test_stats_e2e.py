"""Session statistics against ``pybmq sim`` over loopback sockets: per-queue and total counts,
ACK and confirm latencies, closed queues kept in the totals, the periodic dump to the log and
the OpenTelemetry bridge (read with the SDK's in-memory reader)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator

import pytest
from pybmq.client.aio import AsyncSession
from pybmq.client.options import SessionOptions
from pybmq.client.stats import LATENCY_WINDOW, LatencySummary, LatencyWindow
from pybmq.client.sync import Session
from pybmq.errors import UsageError
from pybmq.sim.config import BrokerConfig
from pybmq.sim.server import BrokerSimulator, ThreadedBrokerSimulator

pytestmark = pytest.mark.timeout(60)

URI = "bmq://bmq.test.mem.priority/stats"
OTHER = "bmq://bmq.test.mem.priority/stats-other"


@pytest.fixture
async def sim() -> AsyncIterator[BrokerSimulator]:
    async with BrokerSimulator() as simulator:
        yield simulator


async def test_counts_and_latencies_per_queue_and_in_total(sim: BrokerSimulator) -> None:
    async with AsyncSession(sim.url) as session:
        queue = await session.open_queue(URI, read=True, write=True)
        other = await session.open_queue(OTHER, write=True)
        acks = await asyncio.gather(*(queue.post(b"%03d" % i) for i in range(30)))
        assert all(a.ok for a in acks)
        assert (await other.post(b"12345")).ok
        for _ in range(30):
            message = await asyncio.wait_for(queue.get(), 10)
            await asyncio.sleep(0.001)  # a measurable confirm latency
            await message.confirm()
        stats = session.stats()
        mine = stats.queues[URI]
        assert (mine.posted, mine.posted_bytes, mine.acks, mine.nacks) == (30, 90, 30, 0)
        assert (mine.received, mine.received_bytes, mine.confirmed) == (30, 90, 30)
        assert mine.ack_latency.count == 30
        assert mine.confirm_latency.count == 30
        assert mine.confirm_latency.p50 is not None and mine.confirm_latency.p50 >= 0.001
        assert mine.ack_latency.max is not None and 0 <= mine.ack_latency.max < 10
        assert stats.queues[OTHER].posted_bytes == 5
        assert (stats.total.posted, stats.total.acks) == (31, 31)
        await other.close()
        after = session.stats()
        assert OTHER not in after.queues
        assert after.total.posted == 31  # a closed queue stays in the totals
        assert "ACK latency p50" in after.format()


async def test_a_nack_is_counted_as_such() -> None:
    async with (
        BrokerSimulator(BrokerConfig(queue_limit_messages=1)) as sim,
        AsyncSession(sim.url) as session,
    ):
        queue = await session.open_queue(URI, write=True)
        # The second post crosses the limit of 1 and is still taken (as by a broker).
        first, second, third = [await queue.post(b"x") for _ in range(3)]
        assert first.ok and second.ok and not third.ok
        stats = session.stats().queues[URI]
        assert (stats.acks, stats.nacks) == (2, 1)


async def test_periodic_dump_to_the_log(
    sim: BrokerSimulator, caplog: pytest.LogCaptureFixture
) -> None:
    options = SessionOptions(stats_dump_interval=0.05)
    with caplog.at_level(logging.INFO, logger="pybmq.stats"):
        async with AsyncSession(sim.url, options=options) as session:
            queue = await session.open_queue(URI, write=True)
            assert (await queue.post(b"dumped")).ok
            await asyncio.sleep(0.3)
    dumps = [r.getMessage() for r in caplog.records if r.name == "pybmq.stats"]
    assert len(dumps) >= 2
    # A dump while the queue was open names it (the last one may come after stop closed it).
    assert any(f"{URI}: out 1 msgs / 6 B, ACK 1" in dump for dump in dumps), dumps
    with pytest.raises(UsageError):
        SessionOptions(stats_dump_interval=-1)


def test_compat_honours_stats_dump_interval(caplog: pytest.LogCaptureFixture) -> None:
    import pybmq.compat as blazingmq

    with (
        caplog.at_level(logging.INFO, logger="pybmq.stats"),
        ThreadedBrokerSimulator() as sim,
    ):
        session = blazingmq.Session(lambda e: None, broker=sim.url, stats_dump_interval=0.05)
        try:
            session.open_queue(URI, write=True)
            session.post(URI, b"via compat")
            for _ in range(100):  # bounded: at most 5 s
                if any("out 1 msgs" in r.getMessage() for r in caplog.records):
                    break
                time.sleep(0.05)
        finally:
            session.stop()
    assert any(r.name == "pybmq.stats" and "out 1 msgs" in r.getMessage() for r in caplog.records)


def test_blocking_session_stats() -> None:
    with ThreadedBrokerSimulator() as sim, Session(sim.url) as session:
        queue = session.open_queue(URI, write=True)
        queue.post(b"abc")
        stats = session.stats()
        assert stats.queues[URI].posted_bytes == 3 and stats.total.acks == 1


def test_latency_window_is_bounded_and_weighted() -> None:
    window = LatencyWindow()
    for i in range(LATENCY_WINDOW + 100):
        window.add(float(i))
    assert len(window.samples) == LATENCY_WINDOW  # the oldest went first
    assert window.samples[0][0] == 100.0
    weighted = LatencyWindow()
    weighted.add(1.0, 98)
    weighted.add(5.0, 1)
    weighted.add(9.0, 1)
    summary = LatencySummary.of([weighted])
    assert (summary.count, summary.p50, summary.p90, summary.p99, summary.max) == (
        100,
        1.0,
        1.0,
        5.0,
        9.0,
    )
    assert str(LatencySummary.of([])) == "-"


async def test_opentelemetry_bridge(sim: BrokerSimulator) -> None:
    pytest.importorskip("opentelemetry.sdk.metrics")
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from pybmq.client.otel import instrument

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    async with AsyncSession(sim.url) as session:
        queue = await session.open_queue(URI, write=True)
        for i in range(3):
            assert (await queue.post(b"m%d" % i)).ok
        instrument(session, provider)
        data = reader.get_metrics_data()
    points: dict[tuple[str, tuple[tuple[str, object], ...]], float] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            assert scope.scope.name == "pybmq"
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    points[(metric.name, tuple(sorted(point.attributes.items())))] = point.value
    assert points[("pybmq.messages.posted", (("queue", URI),))] == 3
    assert points[("pybmq.bytes.posted", (("queue", "*"),))] == 6
    assert points[("pybmq.acks", (("queue", URI),))] == 3
    p50 = points[("pybmq.ack.latency", (("quantile", "p50"), ("queue", URI)))]
    assert 0 <= p50 < 10
    provider.shutdown()
