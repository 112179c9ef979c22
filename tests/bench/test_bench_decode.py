from __future__ import annotations

from bench import bench_decode


def test_bench_decode_runs_quick() -> None:
    results = bench_decode.run(quick=True)
    assert [r.name for r in results] == ["decode text", "decode json", "framing alone (reference)"]
    assert all(r.value > 0 for r in results)
