"""``pybmq tap`` and ``pybmq decode`` on real-broker traffic (skipped without ``$BMQ_BROKER_BIN``):
the official SDK (BER control messages) and pybmq (JSON) each post and consume through the tap;
the recording decodes whole, both directions, every event of the exchange."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pybmq.client.aio import AsyncSession
from pybmq.testing.real_broker import RealBroker

from tests.helpers.cli import Tap, run_pybmq
from tests.interop.official import run_official

pytest.importorskip("blazingmq", reason="the official SDK is one of the clients under the tap")
pytestmark = [pytest.mark.timeout(120), pytest.mark.interop]

QUEUE = "bmq://bmq.test.mem.priority/tapped-real"


async def _pybmq_round_trip(url: str, count: int) -> None:
    async with AsyncSession(url) as session:
        queue = await session.open_queue(QUEUE, read=True, write=True)
        acks = await asyncio.gather(
            *(queue.post(b"pybmq %d" % i, properties={"i": i}) for i in range(count))
        )
        assert all(ack.ok for ack in acks)
        for _ in range(count):
            message = await asyncio.wait_for(queue.get(), 10)
            await message.confirm()


def _official_round_trip(url: str, count: int) -> None:
    sent = [{"payload": (b"official %d" % i).hex(), "properties": {}} for i in range(count)]
    produced = run_official(
        "produce", {"broker": url, "queue": QUEUE, "timeout": 20, "messages": sent}
    )
    assert produced.returncode == 0, produced.describe()
    assert {a["status"] for a in produced.of("ack")} == {"SUCCESS"}
    consumed = run_official(
        "consume", {"broker": url, "queue": QUEUE, "timeout": 20, "count": count}
    )
    assert consumed.returncode == 0, consumed.describe()


def _decoded(capture: Path) -> list[dict[str, Any]]:
    done = run_pybmq("decode", "--json", str(capture))
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.parametrize("client", ["official", "pybmq"])
def test_real_broker_traffic_through_the_tap_decodes(
    bmq_real_broker: RealBroker, tmp_path: Path, client: str
) -> None:
    capture = tmp_path / f"{client}.tap"
    tap = Tap(bmq_real_broker.url, capture)
    try:
        if client == "official":
            _official_round_trip(tap.url, 5)
        else:
            asyncio.run(_pybmq_round_trip(tap.url, 5))
    finally:
        tap.stop()
    nodes = _decoded(capture)
    seen = {(n["type"], n["tap"]["direction"]) for n in nodes}
    assert {
        ("CONTROL", "client->broker"),
        ("CONTROL", "broker->client"),
        ("PUT", "client->broker"),
        ("ACK", "broker->client"),
        ("PUSH", "broker->client"),
        ("CONFIRM", "client->broker"),
    } <= seen, seen
    puts = [m for n in nodes if n["type"] == "PUT" for m in n["messages"]]
    pushes = [m for n in nodes if n["type"] == "PUSH" for m in n["messages"]]
    assert len(puts) == 5 and len(pushes) == 5
    assert not [n for n in nodes if "error" in n], "every event of the capture decodes"
