"""``make bench`` prints pybmq ÷ the official SDK when both end-to-end runs are in the table."""

from __future__ import annotations

from bench.__main__ import ratios
from bench.common import Result


def test_ratios_only_for_rates_measured_on_both_sides() -> None:
    results = [
        Result("e2e pybmq post→ACK", 90.0, "msgs/s"),
        Result("e2e official post→ACK", 30.0, "msgs/s"),
        Result("e2e pybmq consume→confirm", 50.0, "msgs/s"),  # no official figure: no ratio
    ]
    [ratio] = ratios(results)
    assert ratio.name == "e2e pybmq ÷ official SDK, post→ACK" and ratio.value == 3.0
    assert ratios([]) == []
