"""The compat benchmark still runs (tiny sizes; nothing here is timed or compared)."""

from __future__ import annotations

import importlib.util

import pytest

from bench import bench_compat


@pytest.mark.timeout(180)
def test_bench_compat_runs_quick() -> None:
    results = bench_compat.run(quick=True)
    names = [r.name for r in results]
    assert names[:2] == ["e2e compat post→ACK", "e2e compat consume→confirm"]
    assert all(r.value > 0 for r in results)
    # The ratios to the references measured through the same simulator in the same run.
    references = ["native", "native-1by1"]
    if importlib.util.find_spec("blazingmq"):
        references.append("official")
    for other in references:
        assert f"compat/{other} post→ACK" in names
        assert f"compat/{other} consume→confirm" in names
