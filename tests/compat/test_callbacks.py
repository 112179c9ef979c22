"""User callables in a compat Session: released once called or when the session stops, and an
exception in any of them prints its traceback to stderr (as the official SDK does) while delivery
of everything else goes on."""

from __future__ import annotations

import gc
import os
import threading
import tracemalloc
import weakref
from typing import Any

import pybmq.compat as blazingmq
import pytest
from pybmq.compat import session_events

from tests.helpers.compat_scenarios import Recorder

pytestmark = pytest.mark.timeout(120)


class AckCounter:
    """A callable on_ack that counts, so tests can hold it weakly and wait for a number."""

    def __init__(self) -> None:
        self.count = 0
        self.changed = threading.Condition()

    def __call__(self, ack: blazingmq.Ack) -> None:
        with self.changed:
            self.count += 1
            self.changed.notify_all()

    def wait(self, n: int, timeout: float = 60.0) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self.count >= n, timeout)


def test_exceptions_in_every_callback_print_and_delivery_goes_on(
    bmq_broker_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = "bmq://bmq.test.mem.priority/compat-cb-raise"
    recorder = Recorder()

    def on_event(event: Any) -> None:
        recorder.on_event(event)
        if isinstance(event, session_events.Connected):
            raise RuntimeError("event bug")

    def on_message(message: blazingmq.Message, handle: blazingmq.MessageHandle) -> None:
        recorder.on_message(message, handle)
        handle.confirm()
        if message.data == b"1":
            raise ValueError("message bug")

    def bad_ack(ack: blazingmq.Ack) -> None:
        raise KeyError("ack bug")

    good = AckCounter()
    with blazingmq.Session(on_event, on_message, broker=bmq_broker_url) as session:
        session.open_queue(uri, read=True, write=True)
        session.post(uri, b"0", on_ack=good)
        session.post(uri, b"1", on_ack=bad_ack)
        session.post(uri, b"2", on_ack=5)  # type: ignore[arg-type]  # upstream accepts it here
        session.post(uri, b"3", on_ack=good)
        assert good.wait(2)
        assert recorder.wait_count("message", 4)
    err = capsys.readouterr().err
    for line in (
        "RuntimeError: event bug",
        "ValueError: message bug",
        "KeyError: 'ack bug'",
        "TypeError: 'int' object is not callable",  # the official SDK's error, at ACK time
    ):
        assert line in err
    assert err.count("Traceback (most recent call last):") == 4
    assert recorder.items[-1] == "<Disconnected>"


def test_on_ack_is_released_once_called(bmq_broker_url: str) -> None:
    uri = "bmq://bmq.test.mem.priority/compat-cb-release"
    with blazingmq.Session(lambda e: None, broker=bmq_broker_url) as session:
        session.open_queue(uri, write=True)
        counter = AckCounter()
        ref = weakref.ref(counter)
        session.post(uri, b"x", on_ack=counter)
        assert counter.wait(1)
        del counter
        gc.collect()
        assert ref() is None


def test_on_ack_is_released_when_the_session_stops(bmq_broker_url: str) -> None:
    uri = "bmq://bmq.test.mem.priority/compat-cb-stop"
    session = blazingmq.Session(lambda e: None, broker=bmq_broker_url)
    session.open_queue(uri, write=True)
    counter = AckCounter()
    ref = weakref.ref(counter)
    for _ in range(100):
        session.post(uri, b"x", on_ack=counter)
    session.stop()  # acked or cancelled: every post is resolved, then nothing is kept
    assert counter.count == 100
    del counter
    gc.collect()
    assert ref() is None


ROUND = 4_000
ROUNDS = 4
FRAMES = 12  # deep enough to see that an allocation in the wire codecs was made for the sim
MAX_GROWTH_PER_POST = 16  # bytes; a kept closure or Ack would be several hundred


def _client_side_bytes() -> int:
    """Traced bytes outside the simulator, which shares the process and stores every message."""
    snapshot = tracemalloc.take_snapshot().filter_traces(
        [tracemalloc.Filter(False, f"*{os.sep}sim{os.sep}*", all_frames=True)]
    )
    return sum(stat.size for stat in snapshot.statistics("filename"))


def test_many_posts_with_on_ack_keep_no_memory(bmq_broker_url: str) -> None:
    """A million posts are too slow for a shared test machine; 16k in rounds, with the traced
    memory after each round, shows the same thing: the growth per post stays near zero."""
    uri = "bmq://bmq.test.mem.priority/compat-cb-many"
    payload = b"p" * 100
    counter = AckCounter()
    with blazingmq.Session(lambda e: None, broker=bmq_broker_url) as session:
        session.open_queue(uri, write=True)

        def one_round(done: int) -> None:
            for _ in range(ROUND):
                while True:
                    try:
                        session.post(uri, payload, on_ack=counter)
                        break
                    except blazingmq.Error:  # BW_LIMIT on a slow machine: wait for ACKs
                        counter.wait(counter.count + 1, 1.0)
            assert counter.wait(done + ROUND)

        one_round(0)  # warm-up: caches, the engine's buffers
        tracemalloc.start(FRAMES)
        try:
            gc.collect()
            baseline = _client_side_bytes()
            for n in range(1, ROUNDS):
                one_round(n * ROUND)
            gc.collect()
            grown = _client_side_bytes() - baseline
        finally:
            tracemalloc.stop()
    assert grown < MAX_GROWTH_PER_POST * ROUND * (ROUNDS - 1), grown
