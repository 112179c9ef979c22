"""``pybmq.compat`` running the official SDK's benchmark programs unchanged (bench_official.py's
counterpart): tests/interop/compat_peer.py runs official_peer.py with pybmq.compat as its SDK.

Same work, same measurement, same broker (``pybmq sim`` in its own process) as bench_official, so
the two tables compare the drop-in with the official C++-core SDK program for program.
"""

from __future__ import annotations

from pathlib import Path

from bench.common import Result, run_peer_benchmark

PEER = Path(__file__).resolve().parent.parent / "tests" / "interop" / "compat_peer.py"
QUEUE = "bmq://bmq.test.mem.priority/bench-compat"


def run(quick: bool) -> list[Result]:
    runs = run_peer_benchmark(PEER, QUEUE, quick)
    posted, consumed, latency = runs["post"], runs["consume"], runs["latency"]
    count = 2_000 if quick else 50_000
    note = f"{count} x 100 B, pybmq.compat via pybmq sim (own process)"
    return [
        Result("e2e compat post→ACK", posted["rate"], "msgs/s", note),
        Result("e2e compat consume→confirm", consumed["rate"], "msgs/s", note),
        Result("e2e compat ACK latency p50", latency["p50"] * 1e6, "µs", "one post in flight"),
        Result("e2e compat ACK latency p99", latency["p99"] * 1e6, "µs", "one post in flight"),
    ]
