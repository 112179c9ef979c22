"""Waiting, bounded, for something another thread or process does (a broker counting confirms,
a session reconnecting): polls ``condition`` and fails the test, naming what did not happen."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(condition: Callable[[], bool], what: str, bound: float = 10.0) -> None:
    deadline = time.monotonic() + bound
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {bound} s")
        time.sleep(0.01)
