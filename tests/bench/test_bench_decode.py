from __future__ import annotations

from bench import bench_decode


def test_bench_decode_runs_quick() -> None:
    results = bench_decode.run(quick=True)
    captures = ("Java SDK dump", "traffic 100 B", "traffic 1 KiB", "mixed")
    kinds = ("decode text", "decode json", "read alone (reference)")
    assert [r.name for r in results] == [f"{k}, {c}" for c in captures for k in kinds]
    assert all(r.value > 0 for r in results)
