"""The engine benchmark still runs (tiny sizes; nothing here is timed or compared)."""

from __future__ import annotations

import pytest

from bench import bench_engine


@pytest.mark.timeout(120)
def test_bench_engine_runs_quick() -> None:
    results = bench_engine.run(quick=True)
    names = [r.name for r in results]
    assert "engine post→PUT bytes, post_many()" in names
    assert sum("(reference)" in n for n in names) == 3
    assert all(r.value > 0 for r in results)
