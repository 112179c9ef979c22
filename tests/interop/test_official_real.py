"""The official SDK, pybmq and pybmq.compat as peers through the real broker (skipped without
``$BMQ_BROKER_BIN``): the same transfers the simulator-side interop tests make, minus what only
the simulator can tell (its statistics). Every property type, zlib, fan-out apps, 500 messages."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pybmq.client.options import SessionOptions
from pybmq.testing.real_broker import RealBroker

from tests.interop.official import run_official, start_official
from tests.interop.test_compat_peer import STARTERS
from tests.interop.test_official_pybmq import pybmq_consume, pybmq_produce
from tests.interop.test_official_sim import check_received, job, messages

pytestmark = pytest.mark.timeout(180)


def _by_payload(received: list[tuple[bytes, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    return {payload.hex(): props for payload, props in received}


@pytest.mark.parametrize("compression", ["none", "zlib"])
def test_official_producer_to_pybmq_consumer(bmq_real_broker: RealBroker, compression: str) -> None:
    queue = f"bmq://bmq.test.mem.priority/official-to-pybmq-{compression}"
    sent = messages(500, size=3000 if compression == "zlib" else 100)
    produced = run_official(
        "produce", job(bmq_real_broker, queue, messages=sent, compression=compression)
    )
    assert produced.returncode == 0, produced.describe()
    assert [a["status"] for a in produced.of("ack")] == ["SUCCESS"] * len(sent)
    received = asyncio.run(pybmq_consume(bmq_real_broker.url, queue, len(sent)))
    by_payload = _by_payload(received)
    assert len(by_payload) == len(sent)
    for original in sent:
        assert by_payload[original["payload"]] == original["properties"]


def test_pybmq_producer_to_official_consumer(bmq_real_broker: RealBroker) -> None:
    queue = "bmq://bmq.test.mem.priority/pybmq-to-official"
    sent = messages(200) + messages(2, properties=False)
    consumer = start_official("consume", job(bmq_real_broker, queue, count=len(sent)))
    consumer.wait_for("ready")
    acks = asyncio.run(pybmq_produce(bmq_real_broker.url, queue, sent, SessionOptions()))
    assert len(acks) == len(sent) and all(ack.ok for ack in acks), acks
    consumed = consumer.finish()
    assert consumed.returncode == 0, consumed.describe()
    check_received(consumed.of("message"), sent)


@pytest.mark.parametrize(("producer", "consumer"), [("official", "compat"), ("compat", "official")])
def test_compat_and_official_transfer(
    bmq_real_broker: RealBroker, producer: str, consumer: str
) -> None:
    queue = f"bmq://bmq.test.mem.priority/real-{producer}-to-{consumer}"
    sent = messages(50)
    receiving = STARTERS[consumer]("consume", job(bmq_real_broker, queue, count=len(sent)))
    receiving.wait_for("ready")
    produced = STARTERS[producer]("produce", job(bmq_real_broker, queue, messages=sent)).finish(120)
    assert produced.returncode == 0, produced.describe()
    assert {a["status"] for a in produced.of("ack")} == {"SUCCESS"}
    consumed = receiving.finish()
    assert consumed.returncode == 0, consumed.describe()
    check_received(consumed.of("message"), sent)


def test_official_fanout_each_app_gets_every_message(bmq_real_broker: RealBroker) -> None:
    queue = "bmq://bmq.test.mem.fanout/real-interop"
    consumers = {
        app: start_official("consume", job(bmq_real_broker, f"{queue}?id={app}", count=6))
        for app in ("foo", "bar")
    }
    for peer in consumers.values():
        peer.wait_for("ready")
    sent = messages(6)
    produced = run_official("produce", job(bmq_real_broker, queue, messages=sent))
    assert produced.returncode == 0, produced.describe()
    for peer in consumers.values():
        consumed = peer.finish()
        assert consumed.returncode == 0, consumed.describe()
        check_received(consumed.of("message"), sent)
