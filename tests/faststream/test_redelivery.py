"""Nothing is lost when a consumer dies: a service killed (SIGKILL) with messages in hand, and
one stopped while its handler still runs, leave their unconfirmed messages to the next consumer
(simulator and real broker)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("faststream")

from pybmq.faststream import BlazingMQBroker

from tests.faststream.service import ORDERS
from tests.helpers.paths import REPO_ROOT

pytestmark = pytest.mark.timeout(120)
COUNT = 200


def handled(log: Path) -> list[int]:
    if not log.exists():
        return []
    return [int(line) for line in log.read_text(encoding="utf-8").split()]


async def test_a_killed_consumer_leaves_its_unconfirmed_messages_to_the_next(
    any_broker: str, tmp_path: Path
) -> None:
    log = tmp_path / "first.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.faststream.consumer_process", any_broker, ORDERS, str(log)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        ready = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), 60)
        assert ready.strip() == "ready"
        producer = BlazingMQBroker(any_broker, reconnect=False)
        async with producer:
            for n in range(COUNT):
                await producer.publish({"n": n}, ORDERS)
        deadline = asyncio.get_running_loop().time() + 30
        while len(handled(log)) < 20:
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.01)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    first = handled(log)
    assert 20 <= len(first) < COUNT

    second: list[int] = []
    consumer = BlazingMQBroker(any_broker, reconnect=False)

    @consumer.subscriber(ORDERS)
    async def handle(body: dict[str, int]) -> None:
        second.append(body["n"])

    async with consumer:
        await consumer.start()
        deadline = asyncio.get_running_loop().time() + 30
        while set(first) | set(second) != set(range(COUNT)):
            assert asyncio.get_running_loop().time() < deadline, "messages lost"
            await asyncio.sleep(0.02)
    # At least once: what the first consumer handled but had not confirmed comes again.
    assert len(second) == len(set(second))
    assert len(set(second) & set(first)) < 4 + 4  # at most its workers' messages in hand


async def test_a_consumer_stopped_mid_handler_gives_the_message_back(any_broker: str) -> None:
    first = BlazingMQBroker(any_broker, reconnect=False, graceful_timeout=0.2)
    entered = asyncio.Event()

    @first.subscriber(ORDERS)
    async def stuck(body: str) -> None:
        entered.set()
        await asyncio.sleep(3600)

    async with first:
        await first.start()
        await first.publish("order", ORDERS)
        await asyncio.wait_for(entered.wait(), 20)
    second = BlazingMQBroker(any_broker, reconnect=False)
    got: asyncio.Queue[str] = asyncio.Queue()

    @second.subscriber(ORDERS)
    async def fine(body: str) -> None:
        await got.put(body)

    async with second:
        await second.start()
        assert await asyncio.wait_for(got.get(), 20) == "order"
