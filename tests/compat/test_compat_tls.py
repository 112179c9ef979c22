"""``pybmq.compat`` over TLS (pybmq's keyword-only ``tls_ca=``; the official Python SDK has no TLS
option): a round trip through the TLS listener of the simulator and of the TLS-capable real
broker, ``with_options`` passing it on, and a handshake failure raised at once as ``Error``
naming why instead of being retried until the connect timeout."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pybmq.compat as blazingmq
import pytest
import trustme
from pybmq.testing.brokers import BrokerHandle

from tests.helpers.tls import round_trip_count

pytestmark = [pytest.mark.timeout(120), pytest.mark.tls]


def test_round_trip_over_tls(tls_broker: BrokerHandle) -> None:
    count = round_trip_count(100)
    uri = f"bmq://bmq.test.mem.priority/compat-tls-{uuid.uuid4().hex[:8]}"
    received: list[bytes] = []
    acks: list[Any] = []
    done = threading.Condition()

    def on_message(message: Any, handle: Any) -> None:
        handle.confirm()
        with done:
            received.append(message.data)
            done.notify_all()

    def on_ack(ack: Any) -> None:
        with done:
            acks.append(ack.status)
            done.notify_all()

    with blazingmq.Session(
        lambda e: None,
        on_message=on_message,
        broker=tls_broker.tls_url,
        tls_ca=str(tls_broker.tls_ca),
    ) as session:
        session.open_queue(uri, read=True, write=True)
        for n in range(count):
            session.post(uri, b"c%04d" % n, on_ack=on_ack)
        with done:
            assert done.wait_for(lambda: len(received) == count == len(acks), 60)
    assert received == [b"c%04d" % n for n in range(count)]
    assert set(acks) == {blazingmq.AckStatus.SUCCESS}


def test_with_options_passes_the_tls_options_on(tls_broker: BrokerHandle) -> None:
    with blazingmq.Session.with_options(
        lambda e: None,
        broker=tls_broker.tls_url,
        session_options=blazingmq.SessionOptions(),
        tls_ca=str(tls_broker.tls_ca),
    ) as session:
        session.open_queue("bmq://bmq.test.mem.priority/compat-tls-options", write=True)


def test_a_refused_certificate_is_an_error_at_once(
    tls_broker: BrokerHandle, tmp_path: Path
) -> None:
    other = tmp_path / "other.pem"
    trustme.CA().cert_pem.write_to_path(str(other))
    began = time.monotonic()
    with pytest.raises(
        blazingmq.Error, match=r"Failed to start session: TLS handshake .* not trusted"
    ):
        blazingmq.Session(lambda e: None, broker=tls_broker.tls_url, tls_ca=str(other))
    assert time.monotonic() - began < 30  # not the 60 s connect timeout


def test_a_tls_file_that_cannot_be_read_is_an_error_at_once(tmp_path: Path) -> None:
    with pytest.raises(blazingmq.Error, match="cannot load TLS files"):
        blazingmq.Session(lambda e: None, tls_ca=str(tmp_path / "missing.pem"))
