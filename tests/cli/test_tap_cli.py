"""``pybmq tap`` between the official SDK and the simulator: traffic passes unchanged and the
recording decodes with directions, connections and times."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pybmq.sim.server import ThreadedBrokerSimulator

from tests.helpers.cli import Tap, run_pybmq
from tests.interop.official import run_official

pytest.importorskip("blazingmq", reason="the official SDK is the client under the tap")
pytestmark = [pytest.mark.timeout(120), pytest.mark.interop]

QUEUE = "bmq://bmq.test.mem.priority/tapped"


def test_official_producer_through_the_tap(tmp_path: Path) -> None:
    capture = tmp_path / "session.tap"
    with ThreadedBrokerSimulator() as sim:
        tap = Tap(sim.url, capture)
        try:
            url = tap.url
            sent = [{"payload": (b"tapped %d" % i).hex(), "properties": {}} for i in range(5)]
            job = {"broker": url, "queue": QUEUE, "timeout": 20, "messages": sent}
            produced = run_official("produce", job)
            assert produced.returncode == 0, produced.describe()
            assert {a["status"] for a in produced.of("ack")} == {"SUCCESS"}
            assert sim.call(lambda broker: broker.stats.puts) == 5
        finally:
            out = tap.stop()
    assert "1 connections" in out
    decoded = run_pybmq("decode", "--json", str(capture))
    assert decoded.returncode == 0, decoded.stderr
    nodes = [json.loads(line) for line in decoded.stdout.splitlines()]
    seen = {(n["type"], n["tap"]["direction"]) for n in nodes}
    assert {("CONTROL", "client->broker"), ("CONTROL", "broker->client")} <= seen
    assert {("PUT", "client->broker"), ("ACK", "broker->client")} <= seen
    puts = [m for n in nodes if n["type"] == "PUT" for m in n["messages"]]
    assert len(puts) == 5
    assert all(n["tap"]["connection"] == 1 and n["tap"]["time"] for n in nodes)
