"""Through the real broker (``$BMQ_BROKER_BIN``; skipped without it): native pybmq, pybmq.compat
and the official SDK, in alternating rounds through ONE broker, reported as ratios and as each
client's own CPU time per message.

On 2 cores the broker is the busiest process, so wall-clock rates there partly measure the broker:
the ratios (same broker, same run) and the CPU per message are the figures that say something about
the clients. Native pybmq runs in this process (its CPU: this process's, during its rounds); compat
and the official SDK run the official benchmark programs (tests/interop/official_peer.py) in their
own processes (their CPU: the child's). Each client's CPU is less that of a run of ``BASELINE``
messages, which takes out process start, session set-up and the queue opens.
"""

from __future__ import annotations

import asyncio
import importlib.util
import resource
import time
from pathlib import Path
from typing import Any

from pybmq.testing.real_broker import RealBroker, broker_executable

from bench.bench_e2e import _rates as native_rates
from bench.common import Result, peer_run

PEERS = Path(__file__).resolve().parent.parent / "tests" / "interop"
PROGRAMS = {"compat": PEERS / "compat_peer.py", "official": PEERS / "official_peer.py"}
ROUNDS = 3
BASELINE = 10  # messages of the peers' set-up run, whose CPU is subtracted


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _peer_round(
    program: Path, url: str, count: int, n: int, name: str
) -> tuple[float, float, float]:
    """(post rate, consume rate, CPU seconds) of one peer round."""
    job: dict[str, Any] = {"broker": url, "size": 100, "timeout": 300, "count": count}
    job["queue"] = f"bmq://bmq.test.mem.priority/bench-real-{name}-{n}"
    before = _children_cpu()
    posted = peer_run(program, "bench-post", job, timeout=600)
    consumed = peer_run(program, "bench-consume", job, timeout=600)
    return float(posted["rate"]), float(consumed["rate"]), _children_cpu() - before


def _native_round(url: str, count: int, n: int) -> tuple[float, float, float]:
    before = time.process_time()
    posted, consumed = asyncio.run(
        native_rates(url, count, f"bmq://bmq.test.mem.priority/bench-real-native-{n}")
    )
    return posted.rate, consumed.rate, time.process_time() - before


def _round(client: str, url: str, count: int, n: int) -> tuple[float, float, float]:
    if client == "native":
        return _native_round(url, count, n)
    return _peer_round(PROGRAMS[client], url, count, n, client)


def run(quick: bool) -> list[Result]:
    executable = broker_executable()
    if executable is None:
        print("bench_real: set BMQ_BROKER_BIN to a broker build to measure through it; skipped")
        return []
    count = 2_000 if quick else 20_000
    rounds = 1 if quick else ROUNDS
    clients = ["native"]
    if importlib.util.find_spec("blazingmq") is not None:
        clients += ["compat", "official"]
    best: dict[str, list[float]] = {c: [0.0, 0.0, float("inf")] for c in clients}
    with RealBroker(executable) as broker:
        # The smaller of two set-up runs: the first in this process also pays one-time imports.
        setup = {c: min(_round(c, broker.url, BASELINE, k)[2] for k in (-1, -2)) for c in clients}
        for n in range(rounds):
            for client in clients:
                post, consume, cpu = _round(client, broker.url, count, n)
                # CPU per message (one post and one consume), set-up taken out.
                cpu = max(0.0, cpu - setup[client]) / (2 * (count - BASELINE))
                mine = best[client]
                mine[0], mine[1], mine[2] = (
                    max(mine[0], post),
                    max(mine[1], consume),
                    min(mine[2], cpu),
                )
    note = f"{count} x 100 B via the real broker, best of {rounds} alternating rounds"
    results = []
    for client, (post, consume, cpu) in best.items():
        results += [
            Result(f"real {client} post→ACK", post, "msgs/s", note),
            Result(f"real {client} consume→confirm", consume, "msgs/s", note),
            Result(f"real {client} CPU per message", 1e6 * cpu, "µs", "post + consume, the client's own CPU"),
        ]  # fmt: skip
    return results + real_ratios(results)


def real_ratios(results: list[Result]) -> list[Result]:
    """native and compat ÷ the official SDK: rates (higher is better) and CPU per message
    (lower is better), when both were measured in this run."""
    by_name = {r.name: r.value for r in results}
    out = []
    for client in ("native", "compat"):
        for what in ("post→ACK", "consume→confirm", "CPU per message"):
            ours, theirs = by_name.get(f"real {client} {what}"), by_name.get(
                f"real official {what}"
            )
            if ours and theirs:
                out.append(Result(f"real {client} ÷ official SDK, {what}", ours / theirs, "x", "same broker, same run"))  # fmt: skip
    return out
