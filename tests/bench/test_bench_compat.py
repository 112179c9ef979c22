"""The compat benchmark still runs (tiny sizes; nothing here is timed or compared)."""

from __future__ import annotations

import pytest

from bench import bench_compat


@pytest.mark.timeout(120)
def test_bench_compat_runs_quick() -> None:
    results = bench_compat.run(quick=True)
    assert [r.name for r in results][:2] == ["e2e compat post→ACK", "e2e compat consume→confirm"]
    assert all(r.value > 0 for r in results)
