"""TLS for the suites: a broker with a TLS listener beside its plain one (the simulator, and the
TLS-capable real broker when ``$BMQ_BROKER_TLS_BIN`` names one), and how many messages a round
trip over it moves.

CI moves 1,000 messages through one representative surface (the asyncio client) and fewer through
each other one; ``make tls-round-trips`` (``PYBMQ_TLS_ROUND_TRIPS=1``) moves 1,000 through every
surface.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
from pybmq.client.aio_queue import AsyncQueue
from pybmq.client.events import Ack
from pybmq.testing.brokers import BrokerHandle, BrokerUnavailable, running_broker
from pybmq.testing.certificates import TestCertificates

ROUND_TRIPS_ENV = "PYBMQ_TLS_ROUND_TRIPS"
FULL_ROUND_TRIP = 1000


def round_trip_count(in_ci: int) -> int:
    """``in_ci`` messages, or 1,000 when the full round trips are asked for."""
    return FULL_ROUND_TRIP if os.environ.get(ROUND_TRIPS_ENV) else in_ci


@contextmanager
def running_tls_broker(
    kind: str, certificates: TestCertificates | None = None, **options: Any
) -> Iterator[BrokerHandle]:
    """A broker of ``kind`` with a plain and a TLS listener and a test CA (or ``certificates``);
    skips the test when the real one is asked for and ``$BMQ_BROKER_TLS_BIN`` names none."""
    tls: bool | TestCertificates = certificates or True
    try:
        with running_broker(kind, tls=tls, **options) as broker:  # type: ignore[arg-type]
            yield broker
    except BrokerUnavailable as exc:
        pytest.skip(str(exc))


async def post_in_order(
    queue: AsyncQueue, payloads: Sequence[bytes], timeout: float = 60
) -> list[Ack]:
    """Post each payload in turn without waiting for its ACK (so they leave in order), then
    wait for all the ACKs; returns them."""
    acks: list[Ack] = []
    all_acked = asyncio.Event()

    def on_ack(ack: Ack) -> None:
        acks.append(ack)
        if len(acks) == len(payloads):
            all_acked.set()

    for payload in payloads:
        queue.post_nowait(payload, on_ack=on_ack)
    await asyncio.wait_for(all_acked.wait(), timeout)
    return acks
