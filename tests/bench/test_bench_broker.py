"""The broker engine benchmark still runs (tiny sizes; nothing here is timed or compared)."""

from __future__ import annotations

import pytest

from bench import bench_broker


@pytest.mark.timeout(120)
def test_bench_broker_runs_quick() -> None:
    results = bench_broker.run(quick=True)
    names = [r.name for r in results]
    assert sum("(reference)" in n for n in names) == 1 and len(results) == 2
    assert all(r.value > 0 for r in results)
