"""Timing helpers shared by the benchmark modules."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


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
        print(f"{r.name:<{width}}  {r.value:>14,.1f} {r.unit}{note}")
