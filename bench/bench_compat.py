"""``pybmq.compat`` against the official SDK and native pybmq, through ONE simulator, alternating.

tests/interop/compat_peer.py runs the official SDK's benchmark programs (official_peer.py)
unchanged with pybmq.compat as their SDK; the same programs run on the official SDK (C++ core),
and native pybmq runs bench_e2e's post/consume. All three use the same ``pybmq sim`` process, in
alternating rounds so that a busy moment on a shared machine hits each of them; each figure is the
best of its client's rounds (as in bench_e2e: a round slowed by the machine says nothing about the
client), and the ratios compare those bests, all measured in this one run.
"""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path
from typing import Any

from bench.bench_e2e import _rates as native_rates
from bench.common import Result, peer_run, sim_process

PEERS = Path(__file__).resolve().parent.parent / "tests" / "interop"
COMPAT, OFFICIAL = PEERS / "compat_peer.py", PEERS / "official_peer.py"
QUEUE = "bmq://bmq.test.mem.priority/bench-compat"
ROUNDS = 5


def _peer_rates(peer: Path, job: dict[str, Any]) -> tuple[float, float]:
    posted = peer_run(peer, "bench-post", job, timeout=600)
    consumed = peer_run(peer, "bench-consume", job, timeout=600)
    return posted["rate"], consumed["rate"]


def run(quick: bool) -> list[Result]:
    count = 2_000 if quick else 50_000
    rounds = 1 if quick else ROUNDS
    official = importlib.util.find_spec("blazingmq") is not None
    rates: dict[str, list[tuple[float, float]]] = {"compat": [], "official": [], "native": []}
    with sim_process() as url:
        job = {"broker": url, "size": 100, "timeout": 300, "count": count}
        for n in range(rounds):
            rates["compat"].append(_peer_rates(COMPAT, {**job, "queue": f"{QUEUE}-c{n}"}))
            if official:
                rates["official"].append(_peer_rates(OFFICIAL, {**job, "queue": f"{QUEUE}-o{n}"}))
            posted, consumed = asyncio.run(native_rates(url, count))
            rates["native"].append((posted.rate, consumed.rate))
        latency = peer_run(
            COMPAT, "bench-latency", {**job, "queue": f"{QUEUE}-l", "count": 50 if quick else 2_000}
        )
    post = {k: max(r[0] for r in v) for k, v in rates.items() if v}
    consume = {k: max(r[1] for r in v) for k, v in rates.items() if v}
    note = f"{count} x 100 B via one pybmq sim, best of {rounds} alternating rounds"
    results = [
        Result("e2e compat post→ACK", post["compat"], "msgs/s", note),
        Result("e2e compat consume→confirm", consume["compat"], "msgs/s", note),
        Result("e2e compat ACK latency p50", latency["p50"] * 1e6, "µs", "one post in flight"),
        Result("e2e compat ACK latency p99", latency["p99"] * 1e6, "µs", "one post in flight"),
    ]
    for other in ("official", "native"):
        if other not in post:
            print(f"bench_compat: {other} not measured (is the official SDK installed?)")
            continue
        reference = (
            f"{other}, best of the same rounds: post→ACK {post[other]:,.0f} msgs/s, "
            f"consume→confirm {consume[other]:,.0f} msgs/s"
        )
        results += [
            Result(f"compat/{other} post→ACK", post["compat"] / post[other], "x", reference),
            Result(
                f"compat/{other} consume→confirm",
                consume["compat"] / consume[other],
                "x",
                reference,
            ),
        ]
    return results
