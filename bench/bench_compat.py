"""``pybmq.compat`` running the official SDK's benchmark programs unchanged (bench_official.py's
counterpart): tests/interop/compat_peer.py runs official_peer.py with pybmq.compat as its SDK.

Same work, same measurement, same broker (``pybmq sim`` in its own process) as bench_official, so
the two tables compare the drop-in with the official C++-core SDK program for program.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.common import Result

PEER = Path(__file__).resolve().parent.parent / "tests" / "interop" / "compat_peer.py"
QUEUE = "bmq://bmq.test.mem.priority/bench-compat"


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
        raise RuntimeError(f"compat {mode} failed: rc={done.returncode} {reports}\n{done.stderr[-2000:]}")
    return bench[0]


def run(quick: bool) -> list[Result]:
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
    note = f"{count} x 100 B, pybmq.compat via pybmq sim (own process)"
    return [
        Result("e2e compat post→ACK", posted["rate"], "msgs/s", note),
        Result("e2e compat consume→confirm", consumed["rate"], "msgs/s", note),
        Result("e2e compat ACK latency p50", latency["p50"] * 1e6, "µs", "one post in flight"),
        Result("e2e compat ACK latency p99", latency["p99"] * 1e6, "µs", "one post in flight"),
    ]
