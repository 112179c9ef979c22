"""The official SDK's contract for ``close_queue``: when it returns, every ACK callback of
that queue has run (its own integration tests post with ``on_ack`` and then rely on
``close_queue`` to "ensure all acks delivered"). Checked 50 times in a row per broker, as
each race lost about one run in five before."""

from __future__ import annotations

import queue
import threading
import uuid
import weakref

import pybmq.compat as blazingmq
import pytest

pytestmark = pytest.mark.timeout(300)

RUNS = 50


def _log_event(event: object) -> None:
    """Session events are not what these tests look at."""


def _unique_queue() -> str:
    return f"bmq://bmq.test.mem.priority/close-acks-{uuid.uuid4().hex[:12]}"


def _no_flow_control() -> blazingmq.QueueOptions:
    return blazingmq.QueueOptions(
        max_unconfirmed_messages=0, max_unconfirmed_bytes=0, consumer_priority=0
    )


def test_close_queue_returns_after_every_ack_callback_ran(bmq_broker_url: str) -> None:
    with blazingmq.Session(_log_event, broker=bmq_broker_url) as session:
        for _ in range(RUNS):
            uri = _unique_queue()
            session.open_queue(uri, read=False, write=True, options=_no_flow_control())
            release = threading.Event()
            seen: queue.Queue[object] = queue.Queue()

            def on_ack(
                ack: object,
                release: threading.Event = release,
                seen: queue.Queue[object] = seen,
            ) -> None:
                release.wait()  # the callback thread is slow to run it
                seen.put(ack)

            callback = weakref.ref(on_ack)
            session.post(uri, b"hello", on_ack=on_ack)
            session.post(uri, b"hello", on_ack=on_ack)
            del on_ack
            kept_while_pending = callback() is not None
            release.set()
            session.close_queue(uri)
            assert seen.qsize() == 2  # both callbacks have run
            assert kept_while_pending  # the session kept the callback while its ACK was due
            assert callback() is None  # and let go of it once called


def test_close_queue_after_a_non_callable_on_ack_reports_it(
    bmq_broker_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with blazingmq.Session(_log_event, broker=bmq_broker_url) as session:
        for _ in range(RUNS):
            uri = _unique_queue()
            session.open_queue(uri, read=False, write=True, options=_no_flow_control())
            session.post(uri, b"hello", on_ack=object())  # type: ignore[arg-type]
            session.close_queue(uri)
            err = capsys.readouterr().err
            assert "Traceback" in err and "TypeError" in err and "not callable" in err
