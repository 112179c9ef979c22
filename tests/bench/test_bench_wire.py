"""The wire benchmarks still run (tiny sizes; nothing here is timed or compared)."""

from __future__ import annotations

from bench import bench_wire


def test_bench_wire_runs_quick() -> None:
    results = bench_wire.run(quick=True)
    names = [r.name for r in results]
    assert any("PUT encode" in n for n in names) and any("[construct]" in n for n in names)
    assert all(r.value > 0 for r in results)
