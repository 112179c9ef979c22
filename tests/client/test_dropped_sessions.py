"""Sessions the program drops without ``stop()`` are released by their finalizer: the
connection is closed, the threads end, and a ResourceWarning names where the session was made
(the blocking ``Session`` collected, or left at interpreter exit; the ``AsyncSession`` once its
loop is gone)."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from collections.abc import Iterator

import pytest
from pybmq.client.aio import AsyncSession
from pybmq.client.sync import Session
from pybmq.sim.server import ThreadedBrokerSimulator

pytestmark = pytest.mark.timeout(120)

URI = "bmq://bmq.test.mem.priority/dropped"


def _fds() -> int:
    return len(os.listdir(f"/proc/{os.getpid()}/fd"))


def _open_sessions(sim: ThreadedBrokerSimulator) -> int:
    return sim.call(lambda broker: sum(1 for s in broker.sessions if not s.closed))


def _wait_for(condition: object, bound: float = 30.0) -> bool:
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def resource_warnings() -> Iterator[list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        messages: list[str] = []
        yield messages
        messages += [str(w.message) for w in caught if w.category is ResourceWarning]


def _drop_one(url: str) -> None:
    session = Session(url)  # the line the warning names
    session.start()
    writer = session.open_queue(URI, write=True)
    assert writer.post(b"dropped").ok


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts open fds in /proc")
def test_fifty_dropped_blocking_sessions_leave_no_thread_fd_or_connection() -> None:
    with ThreadedBrokerSimulator() as sim, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        gc.collect()
        threads, fds = threading.active_count(), _fds()
        for _ in range(50):
            _drop_one(sim.url)
        gc.collect()
        # Each release ends on its session's own threads: waited for, on a loaded machine too.
        assert _wait_for(lambda: threading.active_count() - threads <= 3), "threads left"
        assert _wait_for(lambda: _fds() - fds <= 12), f"{_fds() - fds} more fds"
        assert _wait_for(lambda: _open_sessions(sim) == 0), "the broker still has connections"
        dropped = [str(w.message) for w in caught if w.category is ResourceWarning]
    assert len(dropped) == 50
    line = _drop_one.__code__.co_firstlineno + 1
    assert f"Session created at {__file__}:{line} was not stopped" in dropped[0]


def test_a_session_dropped_with_a_message_handler_running_is_released() -> None:
    with ThreadedBrokerSimulator() as sim:
        threads = threading.active_count()
        got = threading.Event()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            session = Session(sim.url)
            session.start()
            session.open_queue(URI, read=True, on_message=lambda message: got.set())
            with Session(sim.url) as producer:
                producer.open_queue(URI, write=True).post(b"to the handler")
            assert got.wait(10)
            del session
            gc.collect()
        assert _wait_for(lambda: threading.active_count() <= threads)
        assert _wait_for(lambda: _open_sessions(sim) == 0)


def test_a_session_dropped_on_its_own_callback_thread_does_not_hang() -> None:
    """The finalizer may run on the session's own threads (the last reference dropped by a
    callback): it must not wait for itself."""
    with ThreadedBrokerSimulator() as sim:
        threads = threading.active_count()
        holder: list[Session] = []
        released = threading.Event()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            session = Session(sim.url, on_event=None)
            session.start()
            holder.append(session)
            writer = session.open_queue(URI, write=True)
            del session

            def on_ack(_ack: object) -> None:
                holder.clear()  # the last reference goes, on the dispatcher thread
                gc.collect()
                released.set()

            writer.post_async(b"x", on_ack=on_ack)
            assert released.wait(10)
            del writer
            gc.collect()
        assert _wait_for(lambda: threading.active_count() <= threads)
        assert _wait_for(lambda: _open_sessions(sim) == 0)


EXIT_SCRIPT = textwrap.dedent("""
    import sys, warnings
    warnings.simplefilter("always", ResourceWarning)
    from pybmq.client.sync import Session
    session = Session(sys.argv[1])
    session.start()
    session.open_queue("bmq://bmq.test.mem.priority/dropped", write=True).post(b"at exit")
    print("posted", flush=True)
    # no stop(): the interpreter exits with the session running
    """)


def test_a_session_left_running_at_exit_is_released_and_the_process_ends() -> None:
    with ThreadedBrokerSimulator() as sim:
        done = subprocess.run(
            [sys.executable, "-c", EXIT_SCRIPT, sim.url],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert "posted" in done.stdout
        assert "Session created at <string>:5 was not stopped" in done.stderr
        assert "Traceback" not in done.stderr
        assert _wait_for(lambda: _open_sessions(sim) == 0)


def test_an_asyncio_session_left_started_warns_once_its_loop_is_gone() -> None:
    with ThreadedBrokerSimulator() as sim, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)

        async def forget() -> None:
            session = AsyncSession(sim.url)
            await session.start()
            await session.open_queue(URI, write=True)

        asyncio.run(forget())
        gc.collect()
        assert _wait_for(lambda: _open_sessions(sim) == 0)
        ours = [str(w.message) for w in caught if "AsyncSession created at" in str(w.message)]
    assert len(ours) == 1 and f"{__file__}:" in ours[0]


def test_a_stopped_session_warns_nothing(resource_warnings: list[str]) -> None:
    with ThreadedBrokerSimulator() as sim:
        with Session(sim.url) as session:
            session.open_queue(URI, write=True).post(b"fine")
        del session
        gc.collect()
    assert not [m for m in resource_warnings if "was not stopped" in m]
