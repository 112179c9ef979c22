"""Spark ↔ BlazingMQ throughput: batch write and batch read of 100-byte rows with 2 properties.

The ceiling is measured in the same run: the same per-task code (``post_all``, ``consume``) with
the same rows and the same simulator, without Spark. Spark's figure as a ratio to it is what the
data source's own overhead costs.

Runs a local[2] SparkSession and an in-process simulator (on its own thread, in this process,
which is otherwise idle while Spark works). Write = every row posted and ACKed; read = every
message pushed, turned into a row and confirmed. Spark's fixed costs (job scheduling, Python
worker start) are part of the figures, as they are for a user: ``register`` (timed on its own)
starts the first Python workers, the first write and read of the session start Spark's planning
processes and any further worker, a second write and read (fresh queue) reuse them all.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import Result

PAYLOAD_BYTES = 100
QUEUE = "bmq://bmq.test.mem.priority/bench-spark"


def _spark(tmp: Path) -> Any:
    """A local[2] session (the data source not registered yet: see ``run``)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("pybmq-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.local.dir", str(tmp))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run(quick: bool) -> list[Result]:
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return []  # no JVM here: nothing to measure
    from pybmq.sim.server import ThreadedBrokerSimulator
    from pybmq.spark import register
    from pyspark.sql import functions as F

    rows = 2_000 if quick else 100_000
    ceiling = _plain_client(rows)
    tmp = Path(tempfile.mkdtemp(prefix="pybmq-bench-spark-"))
    spark = _spark(tmp)
    try:
        with ThreadedBrokerSimulator() as sim:
            # 100-byte payloads (a 10-digit counter padded with 'x'), an INT64 and a STRING property.
            frame = (
                spark.range(rows, numPartitions=2)
                .select(
                    F.rpad(F.format_string("%010d", "id"), PAYLOAD_BYTES, "x").alias("payload"),
                    F.col("id").alias("n"),
                    F.lit("spark").alias("source"),
                )
                .cache()
            )
            frame.count()  # materialize outside the timing (no Python worker: JVM only)
            # register's worker check is the session's first Python job: it starts the Python
            # workers (timed on its own, after the JVM's first SQL job so as not to count that).
            start = time.perf_counter()
            register(spark)
            register_s = time.perf_counter() - start
            # Round 1 starts the data source's Python workers (first job of a session); round 2
            # reuses them (spark.python.worker.reuse), as every later job of a session does.
            cold = _write_then_read(spark, frame, sim.url, f"{QUEUE}-1", rows)
            warm = _write_then_read(spark, frame, sim.url, f"{QUEUE}-2", rows)
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    note = f"{rows:,} x {PAYLOAD_BYTES} B + 2 properties, local[2], simulator in-process"
    # What starting up costs: register, plus the first jobs' time beyond the reused ones'.
    startup = register_s + sum(rows / c - rows / w for c, w in zip(cold, warm, strict=True))
    return [
        Result("plain client write (post_all, ACKed)", ceiling[0], "msg/s", note),
        Result("plain client read (consume, confirmed)", ceiling[1], "msg/s", note),
        Result("spark register (checks the workers)", register_s, "s", note),
        Result("spark batch write, first job (ACKed)", cold[0], "rows/s", note),
        Result("spark batch read, first job (confirmed)", cold[1], "rows/s", note),
        Result("spark batch write, workers reused", warm[0], "rows/s", note),
        Result("spark batch read, workers reused", warm[1], "rows/s", note),
        Result("spark start-up (register + first jobs - reused)", startup, "s", note),
        Result("spark write (reused) / plain client", warm[0] / ceiling[0], "ratio", note),
        Result("spark read (reused) / plain client", warm[1] / ceiling[1], "ratio", note),
    ]


def _write_then_read(
    spark: Any, frame: Any, broker: str, queue: str, rows: int
) -> tuple[float, float]:
    """Rows/s of one batch write (every row ACKed) and one batch read (every row confirmed)."""
    start = time.perf_counter()
    frame.write.format("blazingmq").option("broker", broker).option("queue", queue).option(
        "maxInFlight", "2000"
    ).option("propertyColumns", "n,source").mode("append").save()
    write_s = time.perf_counter() - start
    start = time.perf_counter()
    read = (
        spark.read.format("blazingmq")
        .option("broker", broker)
        .option("queue", queue)
        .option("maxMessages", str(rows))
        .option("numPartitions", "2")
        .option("confirm", "true")
        .option("idleTimeoutMs", "2000")
        .load()
        .count()
    )
    read_s = time.perf_counter() - start
    if read != rows:
        raise RuntimeError(f"read {read} of {rows} rows back")
    return rows / write_s, rows / read_s


def _plain_client(rows: int) -> tuple[float, float]:
    """Messages/s of one task's write and read code without Spark: the ceiling."""
    from pybmq.sim.server import ThreadedBrokerSimulator
    from pybmq.spark.io import consume, post_all
    from pybmq.spark.options import ReadOptions, WriteOptions
    from pybmq.wire.properties import MessageProperties, PropertyType

    # Built as they are posted (a generator), as a plain client would.
    messages = (
        (
            f"{i:010d}".ljust(PAYLOAD_BYTES, "x").encode(),
            MessageProperties(
                {"n": (PropertyType.INT64, i), "source": (PropertyType.STRING, "spark")}
            ),
        )
        for i in range(rows)
    )
    with ThreadedBrokerSimulator() as sim:
        target = {"broker": sim.url, "queue": QUEUE}
        start = time.perf_counter()
        post_all(WriteOptions.parse({**target, "maxinflight": "2000"}), messages)
        write_s = time.perf_counter() - start
        read = ReadOptions.parse({**target, "confirm": "true", "idletimeoutms": "2000"})
        start = time.perf_counter()
        count = sum(len(buffer) for buffer in consume(read, rows))
        read_s = time.perf_counter() - start
    if count != rows:
        raise RuntimeError(f"read {count} of {rows} messages back")
    return rows / write_s, rows / read_s
