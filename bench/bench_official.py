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
from pathlib import Path

from bench.common import Result, run_peer_benchmark

PEER = Path(__file__).resolve().parent.parent / "tests" / "interop" / "official_peer.py"
QUEUE = "bmq://bmq.test.mem.priority/bench-official"


def run(quick: bool) -> list[Result]:
    if importlib.util.find_spec("blazingmq") is None:
        print("bench_official: the official SDK (pip install blazingmq) is not installed; skipped")
        return []
    runs = run_peer_benchmark(PEER, QUEUE, quick)
    posted, consumed, latency = runs["post"], runs["consume"], runs["latency"]
    count = 2_000 if quick else 50_000
    note = f"{count} x 100 B, official SDK 1.2.2 via pybmq sim (own process)"
    return [
        Result("e2e official post→ACK", posted["rate"], "msgs/s", note),
        Result("e2e official consume→confirm", consumed["rate"], "msgs/s", note),
        Result("e2e official ACK latency p50", latency["p50"] * 1e6, "µs", "one post in flight"),
        Result("e2e official ACK latency p99", latency["p99"] * 1e6, "µs", "one post in flight"),
        Result(
            "e2e official ACK latency p50 (flood)",
            posted["p50"] * 1e6,
            "µs",
            f"{count} posted at once",
        ),
        Result(
            "e2e official ACK latency p99 (flood)",
            posted["p99"] * 1e6,
            "µs",
            f"{count} posted at once",
        ),
    ]
