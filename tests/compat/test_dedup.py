"""pybmq's ``dedup_window`` keyword on the compat ``open_queue`` (not in the official SDK): a
broker restart while the application holds unconfirmed messages makes the broker redeliver them
(same GUIDs); with the window ``on_message`` sees each once, and the handles' confirms of the
first deliveries reach the broker on the new connection."""

from __future__ import annotations

import threading
import time

import pybmq.compat as blazingmq
import pytest
from pybmq.sim.server import ThreadedBrokerSimulator

from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.timeout(60)
QUEUE = "bmq://bmq.test.mem.priority/compat-dedup"
COUNT = 10


@pytest.mark.parametrize("window", [0, 100], ids=["off", "on"])
def test_redelivered_messages_reach_on_message_once_with_a_window(window: int) -> None:
    held: list[tuple[blazingmq.Message, blazingmq.MessageHandle]] = []
    restored = threading.Event()

    def on_event(event: blazingmq.session_events.SessionEvent) -> None:
        if isinstance(event, blazingmq.session_events.StateRestored):
            restored.set()

    with ThreadedBrokerSimulator() as sim:
        producer = blazingmq.Session(lambda e: None, broker=sim.url)
        consumer = blazingmq.Session(
            on_event, on_message=lambda m, h: held.append((m, h)), broker=sim.url
        )
        try:
            producer.open_queue(QUEUE, write=True)
            for i in range(COUNT):
                producer.post(QUEUE, b"m%d" % i)
            consumer.open_queue(QUEUE, read=True, dedup_window=window)
            wait_until(lambda: len(held) == COUNT, "first deliveries")
            sim.restart()  # unconfirmed: the broker redelivers them after the reconnect
            assert restored.wait(10)
            if window:
                stats = consumer.core.inner.stats
                wait_until(lambda: stats().total.duplicates == COUNT, "repeats held back")
                time.sleep(0.2)
                assert len(held) == COUNT
            else:
                wait_until(lambda: len(held) == 2 * COUNT, "redeliveries")
                assert {m.guid for m, _ in held[COUNT:]} == {m.guid for m, _ in held[:COUNT]}
            for _message, handle in list(held):
                handle.confirm()  # of the first connection: on the new one with the window
            wait_until(lambda: sim.call(lambda b: b.stats.confirms) == COUNT, "confirms")
        finally:
            consumer.stop()
            producer.stop()
        assert sim.call(lambda b: b.stats.confirms) == COUNT
        assert sim.call(lambda b: list(b.stats.improper)) == []


@pytest.mark.parametrize(
    ("keywords", "error"),
    [
        ({"dedup_window": -1}, ValueError),
        ({"dedup_window": 100, "dedup_window_age": 0}, ValueError),
        ({"dedup_window": "10"}, TypeError),
    ],
)
def test_bad_dedup_keywords_are_refused_before_the_broker(
    keywords: dict[str, object], error: type[Exception]
) -> None:
    with ThreadedBrokerSimulator() as sim:
        session = blazingmq.Session(lambda e: None, on_message=lambda m, h: None, broker=sim.url)
        try:
            with pytest.raises(error, match="dedup_window"):
                session.open_queue(QUEUE, read=True, **keywords)
            session.open_queue(QUEUE, read=True)  # the URI was not taken by the refused open
        finally:
            session.stop()
