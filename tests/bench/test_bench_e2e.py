"""The end-to-end benchmark still runs (tiny sizes, one round; nothing here is timed or compared)."""

from __future__ import annotations

import importlib.util

import pytest

from bench import bench_e2e
from bench.__main__ import ratios


@pytest.mark.timeout(300)
def test_bench_e2e_runs_quick_with_both_clients_through_one_simulator() -> None:
    results = bench_e2e.run(quick=True)
    by_name = {r.name: r.value for r in results}
    assert by_name["e2e pybmq post→ACK"] > 0 and by_name["e2e pybmq consume→confirm"] > 0
    assert "e2e sim CPU ÷ wall during the pybmq rounds" in by_name  # 10 ms ticks: may be 0 here
    if importlib.util.find_spec("blazingmq") is not None:
        assert by_name["e2e official post→ACK"] > 0
        assert len(ratios(results)) == 2
