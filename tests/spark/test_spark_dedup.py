"""The Spark source's ``dedupWindow``: the streaming reader (``consumers=driver``) driven as Spark
drives it, against the simulator, without a JVM. Its consumer holds the messages of a planned
micro-batch until Spark commits it; a broker restart in between makes the broker redeliver them
(same GUIDs). Without the window they come back as rows of the next batch (the sink gets them
twice); with it they do not, and the commit's confirms reach the broker on the new connection."""

from __future__ import annotations

import pytest
from pybmq.client.sync import Session
from pybmq.errors import UsageError
from pybmq.sim.server import ThreadedBrokerSimulator
from pybmq.spark.datasource import READ_SCHEMA, BlazingMQStreamReader, _arrow_schema
from pybmq.spark.options import ReadOptions, StreamReadOptions, Target, WriteOptions
from pyspark.sql.streaming.datasource import ReadAllAvailable

from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.timeout(60)
Q = "bmq://bmq.test.mem.priority/spark-dedup"
COUNT = 30


def _rows(reader: BlazingMQStreamReader, start: int, end: int) -> list[bytes]:
    rows: list[bytes] = []
    for partition in reader.partitions({"seq": start}, {"seq": end}):
        for batch in reader.read(partition):
            rows += [row["guid"] for row in batch.to_pylist()]
    return rows


@pytest.mark.parametrize("window", ["0", "1000"], ids=["off", "on"])
def test_stream_rows_once_through_a_broker_restart(window: str) -> None:
    with ThreadedBrokerSimulator() as sim:
        with Session(sim.url) as producer:
            writer = producer.open_queue(Q, write=True)
            for i in range(COUNT):
                assert writer.post(b"m%d" % i, timeout=10).ok
        options = StreamReadOptions.parse(
            {"broker": sim.url, "queue": Q, "dedupwindow": window, "idletimeoutms": "200"}
        )
        reader = BlazingMQStreamReader(options, _arrow_schema(READ_SCHEMA))
        try:
            consumer = reader._started()
            assert consumer.settle(0.2) == COUNT
            end = reader.latestOffset({"seq": 0}, ReadAllAvailable())["seq"]
            first = _rows(reader, 0, end)
            assert len(set(first)) == COUNT
            sim.restart()  # batch 0 is planned, not committed: its messages come again
            session = consumer.session
            if window != "0":
                wait_until(lambda: session.stats().total.duplicates == COUNT, "repeats held back")
                consumer.settle(0.2)
                after = reader.latestOffset({"seq": end}, ReadAllAvailable())["seq"]
                assert after == end  # no second batch: every row once
            else:
                wait_until(lambda: consumer.settle(0.2) == COUNT, "redeliveries")
                after = reader.latestOffset({"seq": end}, ReadAllAvailable())["seq"]
                assert sorted(_rows(reader, end, after)) == sorted(first)  # twice in the sink
            # Batch 0 committed (and batch 1, when there is one): the window sends batch 0's
            # confirms on the new connection; without it they are void and batch 1's count.
            reader.commit({"seq": after})
            wait_until(lambda: sim.call(lambda b: b.stats.confirms) == COUNT, "confirms")
        finally:
            reader.stop()
        assert sim.call(lambda b: list(b.stats.improper)) == []


def test_dedup_options_parse_and_bounds() -> None:
    base = {"broker": "tcp://localhost:1", "queue": Q}
    target = ReadOptions.parse({**base, "dedupwindow": "500", "dedupwindowagems": "2500"}).target
    assert (target.dedup_window, target.dedup_window_age) == (500, 2.5)
    assert Target.parse(base).dedup_window == 0
    for bad in ({"dedupwindow": "-1"}, {"dedupwindow": "10000001"}, {"dedupwindowagems": "0"}):
        with pytest.raises(UsageError, match=r"(?i)dedupwindow"):
            ReadOptions.parse({**base, **bad})
    with pytest.raises(UsageError, match="for reading"):
        WriteOptions.parse({**base, "dedupwindow": "10"})
