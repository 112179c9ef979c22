"""A compat Session the program drops is stopped when collected, as in the official SDK: its
Disconnected event is delivered and a UserWarning says stop() was not called. The loop and the
callback thread hold it only weakly, so dropping the last reference (or a cycle) is enough."""

from __future__ import annotations

import gc
import threading
import warnings
import weakref
from typing import Any

import pybmq.compat as blazingmq
import pytest

from tests.helpers.compat_scenarios import Recorder

pytestmark = pytest.mark.timeout(60)
WARNING = "stop() not invoked before destruction of Session"


def _collect_and_warnings(drop: Any) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        drop()
        gc.collect()
    return [w for w in caught if WARNING in str(w.message)]


def _threads() -> set[str]:
    return {t.name for t in threading.enumerate() if t.name.startswith("pybmq-compat")}


def test_dropped_session_is_stopped_and_warns(bmq_broker_url: str) -> None:
    recorder = Recorder()
    uri = "bmq://bmq.test.mem.priority/compat-lifetime"
    holder = {"s": blazingmq.Session(recorder.on_event, recorder.on_message, broker=bmq_broker_url)}
    holder["s"].open_queue(uri, read=True, write=True)
    holder["s"].post(uri, b"x", on_ack=recorder.on_ack)
    assert recorder.wait_count("message", 1)
    recorder.messages.clear()  # a kept MessageHandle keeps its session, as upstream
    ref = weakref.ref(holder["s"])
    caught = _collect_and_warnings(holder.clear)
    assert ref() is None
    assert len(caught) == 1 and caught[0].category is UserWarning
    assert recorder.wait_count("<Disconnected>", 1)
    assert recorder.items.count("<Disconnected>") == 1


def test_session_in_a_reference_cycle_is_collected(bmq_broker_url: str) -> None:
    recorder = Recorder()

    class Owner:
        session: blazingmq.Session

    owner = Owner()
    owner.session = blazingmq.Session(recorder.on_event, broker=bmq_broker_url)
    owner.session.cycle = owner  # type: ignore[attr-defined]
    ref = weakref.ref(owner.session)
    del owner
    caught = _collect_and_warnings(lambda: None)
    assert ref() is None
    assert len(caught) == 1
    assert recorder.wait_count("<Disconnected>", 1)


def test_rebinding_the_name_stops_the_first_session(bmq_broker_url: str) -> None:
    first, second = Recorder(), Recorder()
    session = blazingmq.Session(first.on_event, broker=bmq_broker_url)
    ref = weakref.ref(session)

    def rebind() -> None:
        nonlocal session
        session = blazingmq.Session(second.on_event, broker=bmq_broker_url)

    caught = _collect_and_warnings(rebind)
    assert ref() is None and len(caught) == 1
    assert first.wait_count("<Disconnected>", 1)
    assert second.items == ["<Connected>"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        session.stop()
        del session
        gc.collect()
    assert not [w for w in caught if WARNING in str(w.message)]


def test_stopped_session_warns_nothing_and_leaves_no_threads(bmq_broker_url: str) -> None:
    before = _threads()
    session = blazingmq.Session(lambda e: None, broker=bmq_broker_url)
    session.stop()
    caught = _collect_and_warnings(lambda: None)
    del session
    assert not caught
    assert _threads() <= before


def test_session_held_by_the_owner_of_its_on_message_is_collected(bmq_broker_url: str) -> None:
    """An application object that holds its session and passes its own method as on_message: the
    running callback thread must not keep that object (and so the session) alive."""
    recorder = Recorder()
    uri = "bmq://bmq.test.mem.priority/compat-lifetime-owner"

    class App:
        def __init__(self) -> None:
            self.session = blazingmq.Session(
                recorder.on_event, on_message=self.on_message, broker=bmq_broker_url
            )

        def on_message(self, message: blazingmq.Message, handle: blazingmq.MessageHandle) -> None:
            handle.confirm()
            recorder.on_message(message, handle)

    holder = {"app": App()}
    holder["app"].session.open_queue(uri, read=True, write=True)
    holder["app"].session.post(uri, b"x")
    assert recorder.wait_count("message", 1)
    recorder.messages.clear()  # a kept MessageHandle keeps its session, as upstream
    ref = weakref.ref(holder["app"].session)
    caught = _collect_and_warnings(holder.clear)
    assert ref() is None
    assert len(caught) == 1
    assert recorder.wait_count("<Disconnected>", 1)
