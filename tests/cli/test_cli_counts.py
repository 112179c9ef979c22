"""The figures of a post/consume run stay consistent wherever the run is cut: a property test
cancels the CLI's loops at random points, and the issue's probe (``consume --timeout`` mid-stream)
runs as a subprocess."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pybmq.cli import flow
from pybmq.cli.content import Outgoing
from pybmq.client.aio import AsyncSession
from pybmq.client.loadgen import Stats, post_messages
from pybmq.sim.faults import FaultConfig
from pybmq.sim.server import ThreadedBrokerSimulator

from tests.helpers.cli import run_pybmq as pybmq

pytestmark = pytest.mark.timeout(300)

DOMAIN = "bmq://bmq.test.mem.priority"
_queues = itertools.count()


@pytest.fixture(scope="module")
def sim() -> Iterator[ThreadedBrokerSimulator]:
    with ThreadedBrokerSimulator() as broker:
        yield broker


async def _cut(work: asyncio.Task[None], after: float) -> None:
    done, _ = await asyncio.wait({work}, timeout=after)
    if not done:
        work.cancel()
    await asyncio.gather(work, return_exceptions=True)


async def _consume_cut(
    url: str, queue_uri: str, after: float, count: int
) -> tuple[flow.ConsumeCounts, list[bytes], list[bytes]]:
    """Consume, cut after ``after`` s; then a second session takes what is left."""
    counts = flow.ConsumeCounts()
    written: list[bytes] = []
    async with AsyncSession(url) as session:
        queue = await session.open_queue(queue_uri, read=True, max_unconfirmed_messages=100)
        sink = lambda message, n: written.append(message.payload)  # noqa: E731
        work = asyncio.ensure_future(flow.consume(queue, count, counts, sinks=[sink]))
        await _cut(work, after)
    rest: list[bytes] = []
    async with AsyncSession(url) as session:
        queue = await session.open_queue(queue_uri, read=True)
        left = flow.ConsumeCounts()
        sink = lambda message, n: rest.append(message.payload)  # noqa: E731
        await flow.consume(queue, None, left, idle_timeout=0.3, sinks=[sink])
    return counts, written, rest


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(after=st.floats(0.0, 0.05), count=st.integers(1000, 4000))
def test_consume_counts_hold_wherever_the_run_is_cut(
    sim: ThreadedBrokerSimulator, after: float, count: int
) -> None:
    uri = f"{DOMAIN}/cut{next(_queues)}"

    async def scenario() -> tuple[flow.ConsumeCounts, list[bytes], list[bytes]]:
        async with AsyncSession(sim.url) as session:
            queue = await session.open_queue(uri, write=True)
            payloads = [f"m{i}".encode() for i in range(count)]
            for payload in payloads:
                queue.post_nowait(payload)
            await queue.post(b"last")
        return await _consume_cut(sim.url, uri, after, count + 1)

    counts, written, rest = asyncio.run(scenario())
    assert counts.received == len(written)
    assert 0 <= counts.confirmed <= counts.received
    assert counts.unconfirmed == counts.received - counts.confirmed
    # what was confirmed is gone; everything else comes again (at least once, never lost)
    confirmed = written[: counts.confirmed]
    assert not set(confirmed) & set(rest)
    assert set(confirmed) | set(rest) == {f"m{i}".encode() for i in range(count)} | {b"last"}


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(after=st.floats(0.0, 0.1), count=st.integers(1, 3000), window=st.integers(1, 500))
def test_post_counts_hold_wherever_the_run_is_cut(after: float, count: int, window: int) -> None:
    with ThreadedBrokerSimulator(faults=FaultConfig(ack_delay_ms=5, nack_share=0.1)) as sim:
        uri = f"{DOMAIN}/postcut"

        async def scenario() -> tuple[Stats, Stats]:
            content, generated = Stats(), Stats()
            async with AsyncSession(sim.url) as session:
                queue = await session.open_queue(uri, write=True)

                async def batches():  # type: ignore[no-untyped-def]
                    for i in range(0, count, 100):
                        yield [Outgoing(b"x")] * min(100, count - i)

                await _cut(
                    asyncio.ensure_future(flow.post(queue, batches(), content, window=window)),
                    after,
                )
                await _cut(
                    asyncio.ensure_future(
                        post_messages(queue, count, b"y", window=window, stats=generated)
                    ),
                    after,
                )
            return content, generated

        for stats in asyncio.run(scenario()):
            nacked = sum(stats.broker_nacks.values())
            assert 0 <= stats.posted <= count
            assert stats.unresolved >= 0
            assert stats.posted == stats.count + nacked + stats.unresolved


def test_consume_cut_by_timeout_mid_stream_as_a_subprocess() -> None:
    """The issue's probe: `consume --timeout 0.5` on a long queue, run several times."""
    with ThreadedBrokerSimulator() as sim:
        queue = f"{DOMAIN}/probe"
        posted = pybmq("post", queue, "--count", "60000", "--size", "10", broker=sim.url)
        assert posted.returncode == 0, posted.stderr
        for _ in range(3):
            result = pybmq("consume", queue, "--timeout", "0.5", "--json", broker=sim.url)
            document = json.loads(result.stdout.strip().splitlines()[-1])
            assert result.returncode == 4
            assert 0 <= document["confirmed"] <= document["received"]
            assert document["unconfirmed"] == document["received"] - document["confirmed"]
