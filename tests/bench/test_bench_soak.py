"""The soak benchmark still runs in its quick mode, with every kind of attacker (subscription,
admin and TLS included), and loses nothing (nothing here is timed or compared)."""

from __future__ import annotations

import pytest

from bench import bench_soak


@pytest.mark.timeout(180)
def test_bench_soak_runs_quick_and_loses_nothing() -> None:
    results = {r.name: r.value for r in bench_soak.run(quick=True)}
    assert results["soak: lost or stuck messages"] == 0
    assert results["soak: pair rate unattacked"] > 0
    assert results["soak: attacker connections"] > 0
