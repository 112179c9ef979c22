"""The ACK hand-over of a compat session in isolation: a turn's consecutive ACKs travel as one
flat run, in order with everything else handed over in that turn, and the callback thread calls
each of them on its own."""

from __future__ import annotations

import asyncio
import threading
import types
import weakref
from typing import Any

from pybmq.client.events import Ack as RuntimeAck
from pybmq.client.events import AckStatus as RuntimeAckStatus
from pybmq.compat import dataplane
from pybmq.compat import session_events as ev
from pybmq.compat.callbacks import ACKS, EVENT, CallbackThread, Item
from pybmq.compat.dataplane import DataPlane
from pybmq.compat.values import AckStatus

URI = "bmq://bmq.test.mem.priority/q"


class Recording:
    """Stands in for the CallbackThread: keeps what one flush hands over."""

    def __init__(self) -> None:
        self.handed: list[list[Item]] = []

    def submit_items(self, items: list[Item], messages: int) -> None:
        self.handed.append(items)


def _ack(guid: bytes, status: RuntimeAckStatus = RuntimeAckStatus.SUCCESS) -> RuntimeAck:
    return RuntimeAck(guid, URI, status)


def test_a_turns_acks_go_as_runs_in_order_with_other_items() -> None:
    loop = asyncio.new_event_loop()
    try:
        recording = Recording()
        plane = DataPlane(loop, recording, 1 << 20)  # type: ignore[arg-type]
        calls = [lambda a: None for _ in range(4)]
        plane._on_acks.update({bytes([n]) * 16: calls[n] for n in range(4)})
        event = ev.HostUnhealthy(None)
        plane._ack(_ack(b"\0" * 16))
        plane._ack(_ack(b"\1" * 16, RuntimeAckStatus.LIMIT_MESSAGES))
        plane._ack(_ack(b"\x09" * 16))  # no on_ack waits for it: nothing handed over
        plane.hand_over((EVENT, event))
        plane._ack(_ack(b"\2" * 16))
        plane.flush()
        plane._ack(_ack(b"\3" * 16))  # a later turn: a new run
        plane.flush()
    finally:
        loop.close()
    status = RuntimeAckStatus
    assert recording.handed == [
        [
            (ACKS, [calls[0], b"\0" * 16, status.SUCCESS, URI,
                    calls[1], b"\1" * 16, status.LIMIT_MESSAGES, URI]),
            (EVENT, event),
            (ACKS, [calls[2], b"\2" * 16, status.SUCCESS, URI]),
        ],
        [(ACKS, [calls[3], b"\3" * 16, status.SUCCESS, URI])],
    ]  # fmt: skip
    assert plane._on_acks == {}


def test_a_run_calls_each_on_ack_on_its_own_and_releases_it() -> None:
    errors: list[BaseException] = []
    got: list[Any] = []
    called = threading.Event()

    class Callable:
        def __call__(self, ack: Any) -> None:
            got.append(ack)
            if len(got) == 1:
                raise KeyError("ack bug")
            called.set()

    first, second = Callable(), Callable()
    watch = [weakref.ref(first), weakref.ref(second)]
    run = [first, b"\1" * 16, RuntimeAckStatus.SUCCESS, URI,
           second, b"\2" * 16, RuntimeAckStatus.LIMIT_MESSAGES, URI]  # fmt: skip
    del first, second
    thread = CallbackThread(lambda event: None, (50, 2000))
    thread._report = errors.append
    thread.submit((ACKS, run))
    assert called.wait(10)
    thread.close()
    assert [type(e) for e in errors] == [KeyError]  # reported; the next one still ran
    assert [repr(a) for a in got] == [
        f"<Ack[{'01' * 16}] SUCCESS for {URI}>",
        f"<Ack LIMIT_MESSAGES for {URI}>",
    ]
    assert [a.status for a in got] == [AckStatus.SUCCESS, AckStatus.LIMIT_MESSAGES]
    assert got[1].guid is None
    del got[:], errors[:]  # (the exception refers to the callable that raised it)
    assert [w() for w in watch] == [None, None]  # released once called


def test_a_poster_lets_go_of_the_gil_while_posts_pile_up(monkeypatch: Any) -> None:
    """Once YIELD_AT entries wait for the I/O thread (which is not draining here: the loop
    does not run), every further post yields the GIL once, and only then."""
    sleeps: list[float] = []
    monkeypatch.setattr(dataplane.time, "sleep", sleeps.append)
    loop = asyncio.new_event_loop()
    try:
        queue = types.SimpleNamespace(
            uri=URI, session=types.SimpleNamespace(writable=True, held_bytes=0)
        )
        plane = DataPlane(loop, Recording(), 1 << 30)  # type: ignore[arg-type]
        posts = dataplane.YIELD_AT // 5
        for _ in range(posts - 1):
            plane.post(queue, b"x", None, None)  # type: ignore[arg-type]
        assert sleeps == []
        plane.post(queue, b"x", None, None)  # type: ignore[arg-type]
        plane.post(queue, b"x", None, None)  # type: ignore[arg-type]
        assert sleeps == [0, 0]
        plane.release()  # drained: no more yielding
        plane.post(queue, b"x", None, None)  # type: ignore[arg-type]
        assert sleeps == [0, 0]
    finally:
        loop.close()
