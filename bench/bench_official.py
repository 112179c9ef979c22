"""The official SDK's ACK latency with one post in flight, through ``pybmq sim`` (its own process).

The official ``blazingmq`` SDK (C++ core) runs tests/interop/official_peer.py in another process.
Its post→ACK and consume→confirm rates are measured in bench_e2e, in rounds alternating with
pybmq's through the same simulator, which is where the pybmq ÷ official SDK ratios come from.
"""

from __future__ import annotations

import importlib.util

from bench.bench_e2e import OFFICIAL
from bench.common import Result, peer_run, sim_process

QUEUE = "bmq://bmq.test.mem.priority/bench-official-latency"


def run(quick: bool) -> list[Result]:
    if importlib.util.find_spec("blazingmq") is None:
        print("bench_official: the official SDK (pip install blazingmq) is not installed; skipped")
        return []
    samples = 50 if quick else 2_000
    with sim_process() as url:
        job = {"broker": url, "queue": QUEUE, "size": 100, "timeout": 300, "count": samples}
        latency = peer_run(OFFICIAL, "bench-latency", job, timeout=600)
    return [
        Result("e2e official ACK latency p50", latency["p50"] * 1e6, "µs", "one post in flight"),
        Result("e2e official ACK latency p99", latency["p99"] * 1e6, "µs", "one post in flight"),
    ]
