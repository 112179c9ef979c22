"""The real-broker benchmark: its ratios, and (with ``$BMQ_BROKER_BIN``) that it still runs at tiny
sizes (nothing here is timed or compared)."""

from __future__ import annotations

import importlib.util

import pytest
from pybmq.testing.real_broker import BROKER_BIN_ENV

from bench import bench_real
from bench.common import Result


def test_ratios_compare_rates_and_cpu_measured_in_the_same_run() -> None:
    results = [
        Result("real native post→ACK", 90.0, "msgs/s"),
        Result("real official post→ACK", 30.0, "msgs/s"),
        Result("real native CPU per message", 6.0, "µs"),
        Result("real official CPU per message", 12.0, "µs"),
        Result("real compat consume→confirm", 50.0, "msgs/s"),  # no official figure: no ratio
    ]
    ratios = {r.name: r.value for r in bench_real.real_ratios(results)}
    assert ratios == {
        "real native ÷ official SDK, post→ACK": 3.0,
        "real native ÷ official SDK, CPU per message": 0.5,
    }


def test_without_a_broker_it_reports_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BROKER_BIN_ENV, raising=False)
    assert bench_real.run(quick=True) == []


@pytest.mark.timeout(300)
def test_bench_real_runs_quick(bmq_real_broker: object) -> None:
    # bmq_real_broker only skips without a broker; the benchmark starts its own.
    results = bench_real.run(quick=True)
    names = {r.name for r in results}
    clients = ["native"] + (["compat", "official"] if importlib.util.find_spec("blazingmq") else [])
    for client in clients:
        assert {f"real {client} post→ACK", f"real {client} CPU per message"} <= names
    assert all(r.value >= 0 for r in results)
