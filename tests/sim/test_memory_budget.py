"""The simulator's memory budget for all queues together (``BrokerConfig.memory_limit_bytes``,
``pybmq sim --max-memory``): past it, PUTs are NACKed LIMIT_BYTES as a broker with full storage
does, no client is dropped, and confirms make room again."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time

import pytest
from pybmq.client.aio import AsyncSession
from pybmq.client.events import Ack, AckStatus
from pybmq.sim.config import BrokerConfig
from pybmq.sim.queues import GUID_OVERHEAD, MemoryBudget, SimQueue, StoredMessage
from pybmq.sim.routing import RoutingMode
from pybmq.sim.server import BrokerSimulator

pytestmark = pytest.mark.timeout(180)

MIB = 1 << 20


def test_every_stored_message_and_remembered_guid_is_charged_and_given_back() -> None:
    budget = MemoryBudget(10 * MIB)
    fanout = SimQueue.create("bmq://bmq.test.mem.fanout/q", RoutingMode.FANOUT, budget)
    message = StoredMessage(os.urandom(16), b"", b"x" * 1000, False, 0, 1)
    fanout.store(message, now=0.0, dedup_window=1.0)
    charged = budget.used
    assert charged > 1000 + GUID_OVERHEAD  # the bytes, the record, three apps, the GUID
    fanout.release([message, message])
    assert budget.used == charged  # one app still holds it
    fanout.release([message])
    assert budget.used == GUID_OVERHEAD  # only the GUID, until its window ends
    fanout.store(StoredMessage(os.urandom(16), b"", b"y", False, 0, 1), now=5.0, dedup_window=1.0)
    assert fanout.remembered == 1  # the first GUID's window is over: forgotten and given back


async def test_posts_past_the_budget_are_nacked_and_confirms_make_room() -> None:
    config = BrokerConfig(memory_limit_bytes=6 * MIB)
    payload = b"m" * MIB
    async with BrokerSimulator(config) as sim, AsyncSession(sim.url) as session:
        writers = [
            await session.open_queue(f"bmq://bmq.test.mem.priority/budget-{i}", write=True)
            for i in range(4)
        ]
        acks = [await writers[i % 4].post(payload) for i in range(12)]
        statuses = [a.status for a in acks]
        assert statuses[:6] == [AckStatus.SUCCESS] * 6
        assert AckStatus.LIMIT_BYTES in statuses[6:]
        assert session.connection_losses == 0
        # A reader confirms what one queue holds: posts are taken again.
        async with AsyncSession(sim.url) as consumer:
            reader = await consumer.open_queue("bmq://bmq.test.mem.priority/budget-0", read=True)
            while True:
                try:
                    message = await asyncio.wait_for(reader.get(), 1)
                except asyncio.TimeoutError:
                    break
                await message.confirm()
        ack = await writers[1].post(payload)
        assert ack.ok, ack


def _high_water_mark(pid: int) -> int:
    """The process's peak resident set (VmHWM), in bytes."""
    with open(f"/proc/{pid}/status") as status:
        match = re.search(r"VmHWM:\s+(\d+) kB", status.read())
    assert match is not None
    return int(match.group(1)) * 1024


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc")
async def test_one_mib_messages_into_45_queues_of_a_default_sim() -> None:
    """The measurement that brought the budget: a default ``pybmq sim`` took 4,046 MiB in 31
    queues, then MemoryError and a dropped client."""
    process = subprocess.Popen(
        [sys.executable, "-m", "pybmq.cli", "sim", "--port", "0", "-q"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        url = re.search(r"tcp://\S+", line)
        assert url is not None, line
        payload = os.urandom(MIB)
        async with AsyncSession(url.group(0)) as session:
            writers = [
                await session.open_queue(f"bmq://bmq.test.mem.priority/hog-{i}", write=True)
                for i in range(45)
            ]
            nacks: list[Ack] = []
            acked = 0
            deadline = time.monotonic() + 120
            posted = 0
            while len(nacks) < 200 and time.monotonic() < deadline:
                futures = [writers[(posted + i) % 45].post(payload) for i in range(16)]
                posted += len(futures)
                for ack in await asyncio.gather(*futures):
                    if ack.ok:
                        acked += 1
                    else:
                        nacks.append(ack)
            assert session.connection_losses == 0
            assert len(nacks) >= 200, f"no refusal after {posted} posts"
            assert {n.status for n in nacks} == {AckStatus.LIMIT_BYTES}
            assert 700 <= acked <= 1100  # about the budget's worth (1 GiB) was taken
            assert (await writers[0].post(b"small")).status is AckStatus.LIMIT_BYTES
        peak = _high_water_mark(process.pid)
        assert peak < 2 << 30, f"the simulator peaked at {peak >> 20} MiB"
    finally:
        process.terminate()
        process.wait(30)


@pytest.mark.parametrize(
    ("value", "accepted"),
    [("1GiB", 1 << 30), ("512MiB", 512 << 20), ("2097152", 2 << 20)],
)
def test_max_memory_takes_sizes(value: str, accepted: int) -> None:
    from pybmq.cli.validate import byte_size

    assert byte_size(1 << 20)(value) == accepted


@pytest.mark.parametrize("value", ["10", "1 GB", "-5MiB", "lots", "9" * 30 + "GiB"])
def test_a_bad_max_memory_is_a_usage_error(value: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pybmq.cli", "sim", "--port", "0", "--max-memory", value],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--max-memory" in done.stderr and "Traceback" not in done.stderr
