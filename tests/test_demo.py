"""``python -m pybmq.demo``: a clean error for a bad --count, and a run that ends in agreement."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(120)


def demo(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pybmq.demo", *argv],
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )


def test_negative_count_is_a_usage_error_not_a_traceback() -> None:
    result = demo("--count", "-5")
    assert result.returncode == 2
    assert "--count must be >= 1" in result.stderr and "Traceback" not in result.stderr


def test_small_run_agrees() -> None:
    result = demo("--count", "2000")
    assert result.returncode == 0, result.stderr
    assert "all messages acknowledged, delivered and confirmed" in result.stdout
