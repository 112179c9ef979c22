"""The interop harness's official-SDK programs, run on ``pybmq.compat`` instead (compat_peer.py),
against ``pybmq sim`` and against the real official SDK on the other end of the queue.

Checked like the official-only tests: every payload, every property with its wire type (all seven
types), zlib compression, counts, every ACK SUCCESS and no protocol violation at the broker.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from pybmq.sim.server import ThreadedBrokerSimulator

from tests.interop.official import OfficialPeer, PeerResult, run_official, start_official
from tests.interop.test_official_sim import check_received, job, messages

pytestmark = pytest.mark.timeout(180)
COMPAT_PEER = Path(__file__).with_name("compat_peer.py")


def start_compat(mode: str, job: dict[str, Any]) -> OfficialPeer:
    """Like ``official.start_official``, with pybmq.compat as the peer's SDK."""
    process = subprocess.Popen(
        [sys.executable, str(COMPAT_PEER), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None
    process.stdin.write(json.dumps(job))
    process.stdin.close()
    peer = OfficialPeer(f"compat {mode}", process)
    threading.Thread(target=peer._pump_stdout, daemon=True).start()
    threading.Thread(target=peer._pump_stderr, daemon=True).start()
    return peer


def run_compat(mode: str, job: dict[str, Any]) -> PeerResult:
    return start_compat(mode, job).finish(120)


STARTERS = {"official": start_official, "compat": start_compat}


@pytest.mark.parametrize(
    ("producer", "consumer"), [("compat", "compat"), ("official", "compat"), ("compat", "official")]
)
@pytest.mark.parametrize("compression", ["none", "zlib"])
def test_transfer(
    bmq_sim: ThreadedBrokerSimulator, producer: str, consumer: str, compression: str
) -> None:
    queue = f"bmq://bmq.test.mem.priority/compat-peer-{producer}-{consumer}-{compression}"
    sent = messages(10) + messages(3, size=5000) + messages(2, size=40, properties=False)
    receiving = STARTERS[consumer]("consume", job(bmq_sim, queue, count=len(sent)))
    receiving.wait_for("ready")
    produced = STARTERS[producer](
        "produce", job(bmq_sim, queue, messages=sent, compression=compression)
    ).finish(120)
    assert produced.returncode == 0, produced.describe()
    acks = produced.of("ack")
    assert len(acks) == len(sent) and {a["status"] for a in acks} == {
        "SUCCESS"
    }, produced.describe()
    consumed = receiving.finish(120)
    assert consumed.returncode == 0, consumed.describe()
    check_received(consumed.of("message"), sent)
    assert {m["guid"] for m in consumed.of("message")} == {a["guid"] for a in acks}
    assert bmq_sim.call(lambda b: list(b.stats.violations)) == []


def test_compat_consumer_of_a_fanout_app(bmq_sim: ThreadedBrokerSimulator) -> None:
    queue = "bmq://bmq.test.mem.fanout/compat-peer-fanout"
    consumers = [
        start_compat("consume", job(bmq_sim, f"{queue}?id={app}", count=4))
        for app in ("foo", "bar")
    ]
    for consumer in consumers:
        consumer.wait_for("ready")
    produced = run_official("produce", job(bmq_sim, queue, messages=messages(4)))
    assert {a["status"] for a in produced.of("ack")} == {"SUCCESS"}, produced.describe()
    for consumer in consumers:
        result = consumer.finish(120)
        assert result.returncode == 0, result.describe()
        check_received(result.of("message"), messages(4))
    assert bmq_sim.call(lambda b: list(b.stats.violations)) == []
