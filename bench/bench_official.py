"""The official SDK's side of the end-to-end benchmark (pybmq's side is bench_e2e.py).

The official ``blazingmq`` SDK (C++ core) posts 100-byte messages as fast as it accepts them, each
with an ``on_ack`` callback, through ``pybmq sim``; then a consumer receives and confirms them.
Reported: post→ACK rate (first post to last ACK), consume→confirm rate (first to last message),
and the ACK latency with one post in flight (as bench_e2e measures pybmq) and under the flood.

The simulator runs as its own process (``pybmq sim``), each official-SDK program in another, so
the broker does not share a process with the client being measured.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.common import Result

PEER = Path(__file__).resolve().parent.parent / "tests" / "interop" / "official_peer.py"
QUEUE = "bmq://bmq.test.mem.priority/bench-official"


def _peer(mode: str, job: dict[str, Any], timeout: float) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(PEER), mode],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    reports = [json.loads(line[2:]) for line in done.stdout.splitlines() if line.startswith("@@")]
    bench = [r for r in reports if r.get("event") == "bench"]
    if done.returncode != 0 or not bench or not bench[0].get("complete", False):
        raise RuntimeError(f"official {mode} failed: rc={done.returncode} {reports}\n{done.stderr[-2000:]}")
    return bench[0]


def run(quick: bool) -> list[Result]:
    if importlib.util.find_spec("blazingmq") is None:
        print("bench_official: the official SDK (pip install blazingmq) is not installed; skipped")
        return []
    count = 2_000 if quick else 50_000
    samples = 50 if quick else 2_000
    sim = subprocess.Popen(
        [sys.executable, "-m", "pybmq.cli", "sim", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert sim.stdout is not None
        url = sim.stdout.readline().strip().rsplit(" ", 1)[-1]
        if not url.startswith("tcp://"):
            raise RuntimeError(f"pybmq sim did not start: {url!r}")
        job = {"broker": url, "queue": QUEUE, "size": 100, "timeout": 300}
        posted = _peer("bench-post", {**job, "count": count}, timeout=600)
        consumed = _peer("bench-consume", {**job, "count": count}, timeout=600)
        latency = _peer("bench-latency", {**job, "queue": QUEUE + "-latency", "count": samples}, timeout=600)
    finally:
        sim.send_signal(signal.SIGTERM)
        try:
            sim.wait(20)
        except subprocess.TimeoutExpired:
            sim.kill()
            sim.wait(10)
    note = f"{count} x 100 B, official SDK 1.2.2 via pybmq sim (own process)"
    return [
        Result("e2e official post→ACK", posted["rate"], "msgs/s", note),
        Result("e2e official consume→confirm", consumed["rate"], "msgs/s", note),
        Result("e2e official ACK latency p50", latency["p50"] * 1e6, "µs", "one post in flight"),
        Result("e2e official ACK latency p99", latency["p99"] * 1e6, "µs", "one post in flight"),
        Result("e2e official ACK latency p50 (flood)", posted["p50"] * 1e6, "µs", f"{count} posted at once"),
        Result("e2e official ACK latency p99 (flood)", posted["p99"] * 1e6, "µs", f"{count} posted at once"),
    ]
