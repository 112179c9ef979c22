"""The FastStream chain benchmark still runs (tiny sizes; nothing here is timed or compared)."""

from __future__ import annotations

import pytest

pytest.importorskip("faststream")

from bench import bench_faststream


@pytest.mark.timeout(120)
def test_bench_faststream_runs_quick() -> None:
    results = bench_faststream.run(quick=True)
    assert [r.unit for r in results] == ["msg/s", "msg/s", "x", "msg/s"]
    assert all(r.value > 0 for r in results)
