"""pybmq's client and the official SDK on the two ends of one queue in ``pybmq sim``.

Official producer → pybmq consumer, and pybmq producer → official consumer: payloads, every
property type (checked by value and by type), zlib compression, counts, and every ACK SUCCESS.
The official SDK runs in a subprocess; pybmq runs in this process on asyncio.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pybmq.client.aio import AsyncSession
from pybmq.client.options import SessionOptions
from pybmq.sim.server import ThreadedBrokerSimulator
from pybmq.wire.properties import MessageProperties

from tests.interop.official import run_official, start_official
from tests.interop.test_official_sim import ALL_TYPES, job, messages

pytestmark = pytest.mark.timeout(120)


def official_form(props: Any) -> dict[str, dict[str, Any]]:
    """pybmq's typed properties in the official peer's report form: {name: {type, value}}."""
    out: dict[str, dict[str, Any]] = {}
    for name, ptype, value in props.typed_items():
        kind = ptype.name
        if kind == "CHAR":
            value = bytes([value]).hex() if isinstance(value, int) else bytes(value).hex()
        elif kind == "BINARY":
            value = bytes(value).hex()
        out[name] = {"type": kind, "value": value}
    return out


def pybmq_properties(spec: dict[str, dict[str, Any]]) -> MessageProperties:
    """The official peer's {name: {type, value}} as pybmq MessageProperties, type for type."""
    props = MessageProperties()
    for name, item in spec.items():
        kind, value = item["type"], item["value"]
        if kind == "BOOL":
            props.set_bool(name, value)
        elif kind == "CHAR":
            props.set_char(name, bytes.fromhex(value)[0])
        elif kind == "SHORT":
            props.set_short(name, value)
        elif kind == "INT32":
            props.set_int32(name, value)
        elif kind == "INT64":
            props.set_int64(name, value)
        elif kind == "STRING":
            props.set_string(name, value)
        else:
            props.set_binary(name, bytes.fromhex(value))
    return props


async def pybmq_consume(url: str, queue: str, count: int) -> list[tuple[bytes, dict[str, Any]]]:
    received = []
    async with AsyncSession(url) as session:
        reader = await session.open_queue(queue, read=True)
        for _ in range(count):
            message = await asyncio.wait_for(reader.get(), 20)
            received.append(
                (message.payload, official_form(message.properties) if message.properties else {})
            )
            await message.confirm()
        await reader.close()
    return received


@pytest.mark.parametrize("compression", ["none", "zlib"])
def test_official_producer_to_pybmq_consumer(
    bmq_sim: ThreadedBrokerSimulator, compression: str
) -> None:
    queue = f"bmq://bmq.test.mem.priority/official-to-pybmq-{compression}"
    sent = messages(10, size=3000 if compression == "zlib" else 100) + messages(2, properties=False)
    produced = run_official("produce", job(bmq_sim, queue, messages=sent, compression=compression))
    assert produced.returncode == 0, produced.describe()
    assert [a["status"] for a in produced.of("ack")] == ["SUCCESS"] * len(sent), produced.describe()

    received = asyncio.run(pybmq_consume(bmq_sim.url, queue, len(sent)))
    by_payload = {payload.hex(): props for payload, props in received}
    assert len(by_payload) == len(sent)
    for original in sent:
        assert by_payload[original["payload"]] == original["properties"]
    assert bmq_sim.call(lambda b: (b.stats.confirms, b.stats.violations, b.stats.improper)) == (
        len(sent),
        [],
        [],
    )
    compressed = bmq_sim.call(lambda b: b.stats.compressed_puts)
    assert compressed == (10 if compression == "zlib" else 0)


async def pybmq_produce(
    url: str, queue: str, sent: list[dict[str, Any]], options: SessionOptions
) -> list[Any]:
    async with AsyncSession(url, options=options) as session:
        writer = await session.open_queue(queue, write=True)
        acks = await asyncio.gather(
            *(
                writer.post(
                    bytes.fromhex(m["payload"]), properties=pybmq_properties(m["properties"])
                )
                for m in sent
            )
        )
        await writer.close()
    return list(acks)


@pytest.mark.parametrize("compression", ["none", "zlib"])
def test_pybmq_producer_to_official_consumer(
    bmq_sim: ThreadedBrokerSimulator, compression: str
) -> None:
    queue = f"bmq://bmq.test.mem.priority/pybmq-to-official-{compression}"
    sent = messages(10, size=3000 if compression == "zlib" else 100) + messages(2, properties=False)
    consumer = start_official("consume", job(bmq_sim, queue, count=len(sent)))
    consumer.wait_for("ready")
    options = SessionOptions(compression_threshold=1024 if compression == "zlib" else 0)
    acks = asyncio.run(pybmq_produce(bmq_sim.url, queue, sent, options))
    assert len(acks) == len(sent) and all(ack.ok for ack in acks), acks
    consumed = consumer.finish()
    assert consumed.returncode == 0, consumed.describe()
    by_payload = {m["payload"]: m["properties"] for m in consumed.of("message")}
    assert len(by_payload) == len(sent)
    for original in sent:
        assert by_payload[original["payload"]] == original["properties"]
    assert bmq_sim.call(lambda b: list(b.stats.violations)) == []
    # The compressed path was really taken (only the 3000-byte payloads pass the threshold).
    compressed = bmq_sim.call(lambda b: b.stats.compressed_puts)
    assert compressed == (10 if compression == "zlib" else 0)


def test_every_official_property_type_is_covered() -> None:
    assert {p["type"] for p in ALL_TYPES.values()} == {
        "BOOL",
        "CHAR",
        "SHORT",
        "INT32",
        "INT64",
        "STRING",
        "BINARY",
    }


def test_official_and_pybmq_consumers_share_a_queue(bmq_sim: ThreadedBrokerSimulator) -> None:
    """Two consumers of equal priority, one per SDK: round-robin, each message once, all confirmed."""
    queue = "bmq://bmq.test.mem.priority/shared"
    sent = messages(20)
    official = start_official("consume", job(bmq_sim, queue, count=10))
    official.wait_for("ready")

    async def pybmq_side() -> list[bytes]:
        async with AsyncSession(bmq_sim.url) as session:
            reader = await session.open_queue(queue, read=True)
            await pybmq_produce(bmq_sim.url, queue, sent, SessionOptions())
            payloads = []
            for _ in range(10):
                message = await asyncio.wait_for(reader.get(), 20)
                payloads.append(message.payload.hex())
                await message.confirm()
            await reader.close()
        return payloads

    mine = asyncio.run(pybmq_side())
    theirs = [m["payload"] for m in official.finish().of("message")]
    assert sorted(mine + theirs) == sorted(m["payload"] for m in sent)
    assert len(mine) == len(theirs) == 10
    assert bmq_sim.call(lambda b: (b.stats.confirms, b.stats.violations, b.stats.improper)) == (
        20,
        [],
        [],
    )
