"""User callables in a compat Session: released once called or when the session stops, and an
exception in any of them prints its traceback to stderr (as the official SDK does) while delivery
of everything else goes on."""

from __future__ import annotations

import gc
import os
import threading
import time
import tracemalloc
import weakref
from typing import Any

import pybmq.compat as blazingmq
import pytest
from pybmq.compat import session_events

from bench.common import sim_process
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


# How many posts test_many_posts_keep_no_memory makes: the million by default (about half
# a minute); PYBMQ_COMPAT_POSTS sets another number (at least TRACED_ROUNDS + 2 rounds are made).
POSTS = int(os.environ.get("PYBMQ_COMPAT_POSTS", "1000000"))
ROUND = 2_000
# The last rounds run under tracemalloc, which slows Python several times over: tracing all of a
# million posts would take minutes. The rounds before them are bounded by the process's RSS.
TRACED_ROUNDS = 24
# The tables of posts in flight (GUID → on_ack here, GUID → pending post in the engine) are sized
# by the most posts in flight at once, at most ROUND here, not by how many were ever made: they
# may grow or shrink between rounds. Blocks may also grow up to a fixed number: the interpreter's
# attribute-name cache (4096 entries in CPython 3.11) keeps the name strings that reprlib builds
# when asyncio formats a future, and a deque keeps up to 16 free blocks. One object kept per
# post is one block per post (TRACED_ROUNDS rounds: 48k posts, eight times the bound).
TABLES_BOUND = 1024 * 1024  # bytes; one kept Ack or closure per post is ~100 B or more
BLOCKS_BOUND = 6_000
# Over the untraced rounds (about 950k posts) the resident set may grow by allocator slack and
# nothing per post: one kept 100 B closure per post would be about 95 MiB.
RSS_BOUND = 48 * 1024 * 1024


def _traced() -> tuple[int, int]:
    """Traced (bytes, blocks) of this process: the broker runs in another one."""
    snapshot = tracemalloc.take_snapshot()
    stats = snapshot.statistics("filename")
    return sum(s.size for s in stats), sum(s.count for s in stats)


def _rss() -> int:
    """Resident bytes of this process (Linux)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.timeout(max(240, POSTS // 2_000))
def test_many_posts_keep_no_memory() -> None:
    """A million posts, each with its own on_ack callable, and the messages they become, received
    and confirmed in on_message, in rounds of ROUND: every callback runs exactly once, the resident
    set does not grow with the posts, and over the last rounds the memory tracemalloc traces
    (bytes and allocated blocks) does not grow either."""
    uri = "bmq://bmq.test.mem.priority/compat-cb-many"
    payload = b"p" * 100
    acks = AckCounter()
    confirmed = AckCounter()

    def on_message(message: blazingmq.Message, handle: blazingmq.MessageHandle) -> None:
        handle.confirm()
        confirmed(message)  # type: ignore[arg-type]

    readings: list[tuple[int, int]] = []
    rounds = max(POSTS // ROUND, TRACED_ROUNDS + 2)
    warm = rounds - TRACED_ROUNDS - 1  # the round after which tracing starts
    rss: list[int] = []
    with (
        sim_process() as url,
        blazingmq.Session(lambda e: None, on_message, broker=url) as session,
    ):
        session.open_queue(uri, read=True, write=True)
        for n in range(rounds):
            for _ in range(ROUND):
                # A callable of its own per post, as programs pass closures: one kept is seen.
                session.post(uri, payload, on_ack=lambda ack, count=acks: count(ack))
            assert acks.wait((n + 1) * ROUND) and confirmed.wait((n + 1) * ROUND)
            assert (acks.count, confirmed.count) == ((n + 1) * ROUND,) * 2  # each exactly once
            # A request through the I/O loop and the broker: the confirms made in on_message
            # have left by the time it returns.
            session.configure_queue(uri, blazingmq.QueueOptions())
            if n in (0, warm - 1):  # after warm-up (caches, the engine's buffers), and at the end
                gc.collect()
                rss.append(_rss())
            if n == warm:  # trace from here on
                tracemalloc.start()
                continue
            if n > warm:
                gc.collect()
                readings.append(_traced())
        tracemalloc.stop()
    assert acks.count == confirmed.count == rounds * ROUND
    assert rss[-1] - rss[0] < RSS_BOUND, ((warm - 1) * ROUND, rss)
    # From the end of the first traced round (which allocates the steady-state structures).
    posts = (TRACED_ROUNDS - 1) * ROUND
    grown_bytes = max(r[0] for r in readings) - readings[0][0]
    grown_blocks = max(r[1] for r in readings) - readings[0][1]
    assert grown_bytes < TABLES_BOUND, (posts, readings)
    assert grown_blocks < BLOCKS_BOUND, (posts, readings)


def test_mixed_posts_each_reach_their_queue_in_order_with_one_outcome(bmq_broker_url: str) -> None:
    """Posts to two queues, with and without on_ack and properties, queued faster than the I/O
    thread takes them: the runs it batches keep each queue's order, every on_ack is called once
    with its own GUID, and confirms of both queues in one turn all reach the broker."""
    uris = [f"bmq://bmq.test.mem.priority/compat-mixed-{n}" for n in range(2)]
    acks: list[blazingmq.Ack] = []
    received: dict[str, list[bytes]] = {uri: [] for uri in uris}
    lock = threading.Lock()
    everything = threading.Event()
    count = 400

    def on_ack(ack: blazingmq.Ack) -> None:
        with lock:
            acks.append(ack)

    def on_message(message: blazingmq.Message, handle: blazingmq.MessageHandle) -> None:
        handle.confirm()
        with lock:
            received[message.queue_uri].append(message.data)
            if sum(map(len, received.values())) == count:
                everything.set()

    plan = []
    for i in range(count):
        uri = uris[(i // 7) % 2]  # runs of 7 to one queue, then the other
        properties = {"n": i} if i % 5 == 0 else None
        plan.append((uri, str(i).encode(), properties, on_ack if i % 3 else None))
    with blazingmq.Session(lambda e: None, on_message=on_message, broker=bmq_broker_url) as s:
        for uri in uris:
            s.open_queue(uri, read=True, write=True)
        for uri, payload, properties, callback in plan:
            s.post(uri, payload, properties=properties, on_ack=callback)
        assert everything.wait(60)
    # A reader after them gets nothing: every message was confirmed (else it comes again).
    again: list[bytes] = []
    with blazingmq.Session(
        lambda e: None, on_message=lambda m, h: again.append(m.data), broker=bmq_broker_url
    ) as later:
        for uri in uris:
            later.open_queue(uri, read=True)
        time.sleep(0.5)
    assert again == []
    for uri in uris:
        assert received[uri] == [p for u, p, _, _ in plan if u == uri]
    with_ack = sum(1 for *_, callback in plan if callback is not None)
    assert len(acks) == with_ack
    assert all(a.status is blazingmq.AckStatus.SUCCESS for a in acks)
    assert len({a.guid for a in acks}) == with_ack
