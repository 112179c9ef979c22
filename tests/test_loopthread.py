"""``LoopThread.run``: its own wait's timeout and a coroutine's own TimeoutError stay apart."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from pybmq.errors import RequestTimeoutError
from pybmq.loopthread import LoopThread


@pytest.fixture
def io() -> Iterator[LoopThread]:
    thread = LoopThread("test-io")
    yield thread
    thread.stop()


def test_a_coroutines_own_timeout_error_comes_out_as_it_is(io: LoopThread) -> None:
    async def refused() -> None:
        raise RequestTimeoutError("no response to openQueue")

    with pytest.raises(RequestTimeoutError, match="openQueue"):
        io.run(refused(), timeout=5)


def test_the_wait_times_out_and_cancels(io: LoopThread) -> None:
    cancelled = []

    async def slow() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    with pytest.raises(TimeoutError, match=r"no result within 0\.2s"):
        io.run(slow(), timeout=0.2)
    for _ in range(50):
        if cancelled:
            break
        io.run(asyncio.sleep(0.01))
    assert cancelled


def test_a_result_comes_back(io: LoopThread) -> None:
    async def value() -> int:
        return 7

    assert io.run(value(), timeout=5) == 7
