"""Timing helpers shared by the benchmark modules."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Result:
    name: str
    value: float
    unit: str
    note: str = ""


def best_rate(fn: Callable[[], int], repeat: int = 5) -> float:
    """Items per second of the fastest of ``repeat`` runs; ``fn`` returns how many items it did."""
    best = 0.0
    for _ in range(repeat):
        start = time.perf_counter()
        items = fn()
        elapsed = time.perf_counter() - start
        best = max(best, items / elapsed if elapsed > 0 else float("inf"))
    return best


def best_seconds(fn: Callable[[], object], repeat: int = 5) -> float:
    """Seconds taken by the fastest of ``repeat`` calls."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def print_table(results: list[Result]) -> None:
    width = max((len(r.name) for r in results), default=10)
    for r in results:
        note = f"  ({r.note})" if r.note else ""
        digits = 2 if r.unit == "x" else 1  # ratios: 1.05x is not 1.1x
        print(f"{r.name:<{width}}  {r.value:>14,.{digits}f} {r.unit}{note}")


@contextlib.contextmanager
def sim_process(pids: list[int] | None = None) -> Iterator[str]:
    """``pybmq sim`` in its own process, yielding its URL, so the client being measured does not
    share a process or an event loop with the broker (its pid is appended to ``pids``)."""
    sim = subprocess.Popen(
        [sys.executable, "-m", "pybmq.cli", "sim", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    if pids is not None:
        pids.append(sim.pid)
    try:
        assert sim.stdout is not None
        url = sim.stdout.readline().strip().rsplit(" ", 1)[-1]
        if not url.startswith("tcp://"):
            raise RuntimeError(f"pybmq sim did not start: {url!r}")
        yield url
    finally:
        sim.send_signal(signal.SIGTERM)
        try:
            sim.wait(20)
        except subprocess.TimeoutExpired:
            sim.kill()
            sim.wait(10)


def peer_run(peer: Path, mode: str, job: dict[str, Any], timeout: float = 600) -> dict[str, Any]:
    """Run one benchmark program of an official-SDK-API peer; return its ``bench`` report."""
    done = subprocess.run(
        [sys.executable, str(peer), mode],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    reports = [json.loads(line[2:]) for line in done.stdout.splitlines() if line.startswith("@@")]
    bench = [r for r in reports if r.get("event") == "bench"]
    if done.returncode != 0 or not bench or not bench[0].get("complete", False):
        raise RuntimeError(
            f"{peer.name} {mode} failed: rc={done.returncode} {reports}\n{done.stderr[-2000:]}"
        )
    report: dict[str, Any] = bench[0]
    return report
