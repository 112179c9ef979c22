"""The Spark data source over TLS to the simulator and the TLS-capable real broker: messages a
pybmq client posted through the TLS listener are read back by the source (``tlsCa``) in full and
confirmed, and written by the sink the same way; a CA that did not sign the broker's certificate
fails the read with the handshake's reason."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import trustme
from pybmq.client.aio import AsyncSession
from pybmq.client.options import SessionOptions
from pybmq.testing.brokers import BrokerHandle

from tests.helpers.spark import fresh_queue
from tests.helpers.tls import post_in_order, round_trip_count

pytestmark = [pytest.mark.spark, pytest.mark.tls, pytest.mark.timeout(300)]


async def post_over_tls(broker: BrokerHandle, queue: str, count: int) -> None:
    assert broker.tls_url is not None
    options = SessionOptions(tls_ca=str(broker.tls_ca))
    async with AsyncSession(broker.tls_url, options=options) as session:
        writer = await session.open_queue(queue, write=True)
        acks = await post_in_order(writer, [b"spark %04d" % n for n in range(count)])
    assert all(ack.ok for ack in acks)


def read_over_tls(spark: Any, broker: BrokerHandle, queue: str, ca: str, count: int) -> Any:
    return (
        spark.read.format("blazingmq")
        .option("broker", broker.tls_url)
        .option("tlsCa", ca)
        .option("queue", queue)
        .option("maxMessages", str(count))
        .option("idleTimeoutMs", "3000")
        .option("confirm", "true")
        .load()
    )


def test_the_source_reads_over_tls(spark: Any, tls_broker: BrokerHandle) -> None:
    count = round_trip_count(200)
    queue = fresh_queue()
    asyncio.run(post_over_tls(tls_broker, queue, count))
    rows = read_over_tls(spark, tls_broker, queue, str(tls_broker.tls_ca), count).collect()
    payloads = sorted(bytes(row["payload"]).decode() for row in rows)
    assert payloads == [f"spark {n:04d}" for n in range(count)]
    again = read_over_tls(spark, tls_broker, queue, str(tls_broker.tls_ca), 10)
    assert again.count() == 0  # every message was confirmed


def test_the_sink_writes_over_tls(spark: Any, tls_broker: BrokerHandle) -> None:
    queue = fresh_queue()
    count = round_trip_count(30)
    frame = spark.createDataFrame([(f"w{i}",) for i in range(count)], "payload string")
    (
        frame.write.format("blazingmq")
        .option("broker", tls_broker.tls_url)
        .option("tlsCa", str(tls_broker.tls_ca))
        .option("queue", queue)
        .mode("append")
        .save()
    )
    rows = read_over_tls(spark, tls_broker, queue, str(tls_broker.tls_ca), count).collect()
    assert sorted(bytes(r["payload"]).decode() for r in rows) == sorted(
        f"w{i}" for i in range(count)
    )


def test_a_ca_that_did_not_sign_the_certificate(
    spark: Any, tls_broker: BrokerHandle, tmp_path: Path
) -> None:
    other = tmp_path / "other.pem"
    trustme.CA().cert_pem.write_to_path(str(other))
    with pytest.raises(Exception, match="not trusted"):
        read_over_tls(spark, tls_broker, fresh_queue(), str(other), 1).collect()
