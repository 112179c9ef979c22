"""The ``blazingmq`` Spark data source end to end: local[2] Spark against the broker simulator."""

from __future__ import annotations

import json
import socket
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.spark import fresh_queue, read_all, sink_payloads, start_query

pytestmark = pytest.mark.spark


def test_batch_write_then_read_back(spark: Any, bmq_broker_url: str, bmq_sim: Any) -> None:
    from pyspark.sql import functions as F

    queue = fresh_queue()
    count = 10_000
    rows = (
        spark.range(count)
        .repartition(2)
        .select(
            F.format_string("message-%05d", "id").alias("payload"),
            F.create_map(
                F.lit("source"), F.lit("spark"), F.lit("n"), F.col("id").cast("string")
            ).alias("properties"),
            F.col("id").cast("int").alias("seq"),
            (F.col("id") * 1_000_000_007).alias("big"),
            (F.col("id") % 2 == 0).alias("even"),
            (F.col("id") % 100).cast("tinyint").alias("small"),
            (F.col("id") % 30_000).cast("smallint").alias("short"),
            F.unhex(F.format_string("%08x", "id")).alias("raw"),
        )
    )
    (
        rows.write.format("blazingmq")
        .option("broker", bmq_broker_url)
        .option("queue", queue)
        .option("propertyColumns", "seq,big,even,small,short,raw")
        .option("maxInFlight", "500")
        .mode("append")
        .save()
    )
    stats = bmq_sim.call(lambda broker: broker.stats)
    assert (stats.puts, stats.acks, stats.nacks) == (count, count, 0)  # each row ACKed once

    read = read_all(spark, bmq_broker_url, queue, max_messages=2 * count, confirm=True).collect()
    assert len(read) == count
    assert len({r.guid for r in read}) == count
    by_payload = {bytes(r.payload).decode(): r for r in read}
    assert sorted(by_payload) == [f"message-{i:05d}" for i in range(count)]
    for i in (0, 1, 4242, count - 1):
        row = by_payload[f"message-{i:05d}"]
        assert row.queue == queue
        typed = row.typed_properties
        assert typed["seq"]["type"] == "INT32" and typed["seq"]["int32"] == i
        assert typed["big"]["type"] == "INT64" and typed["big"]["int64"] == i * 1_000_000_007
        assert typed["even"]["type"] == "BOOL" and typed["even"]["bool"] is (i % 2 == 0)
        assert typed["small"]["type"] == "CHAR" and typed["small"]["char"] == i % 100
        assert typed["short"]["type"] == "SHORT" and typed["short"]["short"] == i % 30_000
        assert typed["raw"]["type"] == "BINARY" and bytes(typed["raw"]["binary"]) == i.to_bytes(
            4, "big"
        )
        assert (typed["source"]["type"], typed["source"]["string"]) == ("STRING", "spark")
        assert row.properties["n"] == str(i)
        assert row.properties["even"] == ("true" if i % 2 == 0 else "false")
        assert row.properties["raw"] == i.to_bytes(4, "big").hex()
    # Everything was confirmed: the queue is empty now.
    assert read_all(spark, bmq_broker_url, queue, max_messages=10, confirm=False).count() == 0


def test_unconfirmed_read_leaves_messages_queued(spark: Any, bmq_broker_url: str) -> None:
    queue = fresh_queue()
    spark.createDataFrame([(f"m{i}",) for i in range(50)], "payload string").write.format(
        "blazingmq"
    ).option("broker", bmq_broker_url).option("queue", queue).mode("append").save()
    peek = read_all(spark, bmq_broker_url, queue, max_messages=20, confirm=False).collect()
    assert len(peek) == 20
    again = read_all(spark, bmq_broker_url, queue, max_messages=100, confirm=True).collect()
    assert sorted(bytes(r.payload) for r in again) == sorted(f"m{i}".encode() for i in range(50))


def test_stream_survives_stop_and_restart(
    spark: Any, bmq_broker_url: str, bmq_sim: Any, tmp_path: Path
) -> None:
    queue = fresh_queue()
    total = 3000
    per_batch = 200
    spark.createDataFrame([(f"s{i:05d}",) for i in range(total)], "payload string").write.format(
        "blazingmq"
    ).option("broker", bmq_broker_url).option("queue", queue).mode("append").save()

    sink = tmp_path / "sink"
    checkpoint = tmp_path / "checkpoint"

    def start() -> Any:
        return (
            spark.readStream.format("blazingmq")
            .option("broker", bmq_broker_url)
            .option("queue", queue)
            .option("maxMessagesPerBatch", str(per_batch))
            .load()
            .select("guid", "payload")
            .writeStream.format("parquet")
            .option("path", str(sink))
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="200 milliseconds")
            .start()
        )

    query = start_query(start)
    deadline = time.monotonic() + 120
    while len(sink_payloads(sink, spark)) < total // 3:
        assert time.monotonic() < deadline, "the stream made no progress"
        assert query.exception() is None, query.exception()
        time.sleep(0.5)
    query.stop()  # mid-stream: more than half of the queue is still unread
    seen_before_restart = len(sink_payloads(sink, spark))
    assert seen_before_restart < total

    query = start_query(start)
    while len(set(sink_payloads(sink, spark))) < total:
        assert time.monotonic() < deadline, "messages were lost across the restart"
        assert query.exception() is None, query.exception()
        time.sleep(0.5)
    # Every message is in the sink; the stream confirms each committed batch at the next trigger.
    while bmq_sim.call(lambda broker: broker.stats.confirms) < total:
        assert time.monotonic() < deadline, "committed batches were not confirmed"
        time.sleep(0.2)
    query.stop()
    assert read_all(spark, bmq_broker_url, queue, max_messages=10, confirm=False).count() == 0

    payloads = sink_payloads(sink, spark)
    counts = Counter(payloads)
    assert set(counts) == {f"s{i:05d}".encode() for i in range(total)}
    duplicates = sum(n - 1 for n in counts.values())
    # At-least-once: only messages of batches not yet committed when the query stopped (at most
    # two micro-batches: the running one and the one whose confirm had not gone out) come again.
    assert duplicates <= 2 * per_batch, duplicates
    redelivered = bmq_sim.call(lambda broker: broker.stats.redelivered)
    print(f"stream restart: {total} messages, {duplicates} duplicates, {redelivered} redelivered")


def test_stream_read_available_now(
    spark: Any, bmq_broker_url: str, bmq_sim: Any, tmp_path: Path
) -> None:
    queue = fresh_queue()
    total = 700
    spark.createDataFrame([(f"a{i}",) for i in range(total)], "payload string").write.format(
        "blazingmq"
    ).option("broker", bmq_broker_url).option("queue", queue).mode("append").save()
    confirms_before = bmq_sim.call(lambda broker: broker.stats.confirms)
    sink = tmp_path / "sink"
    query = start_query(
        lambda: spark.readStream.format("blazingmq")
        .option("broker", bmq_broker_url)
        .option("queue", queue)
        .option("maxMessagesPerBatch", "300")
        .option("idleTimeoutMs", "1500")
        .load()
        .select("payload")
        .writeStream.format("parquet")
        .option("path", str(sink))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(180), "Trigger.AvailableNow did not end"
    assert query.exception() is None, query.exception()
    payloads = sorted(sink_payloads(sink, spark))
    assert payloads == sorted(f"a{i}".encode() for i in range(total))
    # Every batch was committed, so every message was confirmed: the queue is empty.
    assert bmq_sim.call(lambda broker: broker.stats.confirms) - confirms_before == total
    assert read_all(spark, bmq_broker_url, queue, max_messages=10, confirm=False).count() == 0
    # Per-batch progress: rows per batch, and the source's latest offset (what it had buffered).
    sources = [p["sources"][0] for p in query.recentProgress if p["sources"]]
    assert sum(int(source["numInputRows"]) for source in sources) == total
    latest = [json.loads(source["latestOffset"]) for source in sources if source["latestOffset"]]
    assert latest and all(offset["seq"] <= total for offset in latest)
    print("available-now progress:", [(s["numInputRows"], s["latestOffset"]) for s in sources])


def test_stream_write(spark: Any, bmq_broker_url: str, tmp_path: Path) -> None:
    queue = fresh_queue()
    source = tmp_path / "source"
    spark.createDataFrame(
        [(i, f"w{i}") for i in range(500)], "id long, payload string"
    ).write.parquet(str(source))
    query = start_query(
        lambda: spark.readStream.schema("id long, payload string")
        .parquet(str(source))
        .writeStream.format("blazingmq")
        .option("broker", bmq_broker_url)
        .option("queue", queue)
        .option("propertyColumns", "id")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    rows = read_all(spark, bmq_broker_url, queue, max_messages=1000, confirm=True).collect()
    assert sorted(bytes(r.payload) for r in rows) == sorted(f"w{i}".encode() for i in range(500))
    assert all(r.typed_properties["id"]["int64"] == int(bytes(r.payload)[1:]) for r in rows)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, "UsageError: option 'queue' is required"),
        ({"queue": "http://not/a/queue"}, "UsageError: option 'queue' must look like bmq://"),
        ({"queue": "bmq://d/q", "broker": "localhost:1"}, "option 'broker' must look like tcp://"),
        ({"queue": "bmq://d/q", "maxMesages": "3"}, "unknown option(s) ['maxmesages']"),
    ],
)
def test_bad_read_options_fail_fast(spark: Any, options: dict[str, str], expected: str) -> None:
    started = time.monotonic()
    with pytest.raises(Exception, match=None) as info:
        spark.read.format("blazingmq").options(**options).load().collect()
    assert expected in str(info.value)
    assert time.monotonic() - started < 30


def test_unreachable_broker_fails_fast(spark: Any) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        broker = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
    for action in (
        lambda: spark.read.format("blazingmq")
        .option("broker", broker)
        .option("queue", fresh_queue())
        .load()
        .collect(),
        lambda: spark.createDataFrame([("x",)], "payload string")
        .write.format("blazingmq")
        .option("broker", broker)
        .option("queue", fresh_queue())
        .mode("append")
        .save(),
    ):
        with pytest.raises(Exception) as info:
            action()
        assert "SessionStoppedError: cannot connect to " + broker in str(info.value)


def test_write_needs_payload_column(spark: Any, bmq_broker_url: str) -> None:
    with pytest.raises(Exception) as info:
        spark.createDataFrame([(1,)], "n int").write.format("blazingmq").option(
            "broker", bmq_broker_url
        ).option("queue", fresh_queue()).mode("append").save()
    assert "UsageError: writing to BlazingMQ needs a 'payload' column" in str(info.value)
