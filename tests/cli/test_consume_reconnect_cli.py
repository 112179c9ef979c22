"""``pybmq consume --reconnect`` as a subprocess over a real socket: it rides over a simulator
restart and over dropped connections, and every message ends up confirmed at the broker."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import pytest
from pybmq.sim.faults import FaultConfig, FaultInjector
from pybmq.sim.server import ThreadedBrokerSimulator

from tests.helpers.cli import run_pybmq as pybmq

pytestmark = pytest.mark.timeout(180)

QUEUE = "bmq://bmq.test.mem.priority/reconnecting"


def consumer(broker: str, *argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pybmq.cli", "consume", QUEUE, "--reconnect", "--json",
         "--timeout", "90", "--broker", broker, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def wait_for(sim: ThreadedBrokerSimulator, confirms: int, deadline: float = 60) -> None:
    end = time.monotonic() + deadline
    while sim.call(lambda broker: broker.stats.confirms) < confirms:
        assert time.monotonic() < end, f"fewer than {confirms} confirms after {deadline} s"
        time.sleep(0.05)


def finish(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=120)
    document: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    assert document["exit_code"] == process.returncode, err
    return document


def test_consume_rides_over_a_simulator_restart() -> None:
    with ThreadedBrokerSimulator() as sim:
        assert pybmq("post", QUEUE, "--count", "1000", broker=sim.url).returncode == 0
        process = consumer(sim.url, "--count", "2000")
        try:
            wait_for(sim, 1000)
            sim.restart()  # every connection dropped; queues and messages kept
            posted = pybmq("post", QUEUE, "--count", "1000", broker=sim.url)
            assert posted.returncode == 0, posted.stderr
            document = finish(process)
        finally:
            process.kill()
        assert sim.call(lambda broker: broker.stats.confirms) == 2000
        assert sim.call(lambda broker: broker.queue(QUEUE).pending_count()) == 0  # type: ignore[union-attr]
    assert process.returncode == 0
    assert document["outcome"] == "done"
    assert (document["received"], document["confirmed"], document["unconfirmed"]) == (
        2000,
        2000,
        0,
    )


def over_two_drops(*argv: str) -> tuple[dict[str, Any], dict[str, int]]:
    """3,000 messages consumed while the broker drops the connection after every 5 events it
    receives on it (the consumer's CONFIRMs), twice: what was delivered and not confirmed comes
    again. The consumer's summary, and the broker's drops, pushes, confirms and pending."""
    with ThreadedBrokerSimulator() as sim:
        posted = pybmq("post", QUEUE, "--count", "3000", broker=sim.url)
        assert posted.returncode == 0, posted.stderr
        injector = FaultInjector(FaultConfig(drop_after_events=5, max_drops=2))
        sim.call(lambda broker: setattr(broker, "hooks", injector))
        process = consumer(sim.url, "--idle-timeout", "5", "--max-unconfirmed", "100", *argv)
        try:
            document = finish(process)
        finally:
            process.kill()
        broker = {
            "dropped": injector.dropped,
            "pushes": sim.call(lambda broker: broker.stats.pushes),
            "confirms": sim.call(lambda broker: broker.stats.confirms),
            "pending": sim.call(lambda broker: broker.queue(QUEUE).pending_count()),  # type: ignore[union-attr]
        }
    assert process.returncode == 0, document
    return document, broker


def test_consume_rides_over_dropped_connections() -> None:
    document, broker = over_two_drops()
    assert broker["dropped"] == 2
    assert broker["pending"] == 0 and broker["confirms"] == 3000  # each confirmed once
    assert document["outcome"] == "done"
    assert document["received"] >= 3000  # redeliveries after each drop count as received


def test_consume_with_a_dedup_window_takes_each_message_once_over_dropped_connections() -> None:
    """As above, with --dedup-window: what the broker pushes again after each drop is confirmed
    (or its first confirm sent again) and not taken twice."""
    document, broker = over_two_drops("--dedup-window", "10000")
    assert broker["dropped"] == 2
    assert broker["pushes"] > 3000  # the broker did push some messages again
    assert broker["pending"] == 0  # every message confirmed at the broker
    assert (document["outcome"], document["received"]) == ("done", 3000)
