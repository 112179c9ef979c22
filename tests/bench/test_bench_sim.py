"""The simulator benchmark still runs (tiny sizes; nothing here is timed or compared)."""

from __future__ import annotations

import pytest

from bench import bench_sim


@pytest.mark.timeout(120)
def test_bench_sim_runs_quick() -> None:
    results = bench_sim.run(quick=True)
    assert all(r.name.startswith("sim routed") for r in results) and len(results) == 2
    assert all(r.value > 0 for r in results)
