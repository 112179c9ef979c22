"""Spark ↔ BlazingMQ throughput: batch write and batch read of 100-byte rows through the simulator.

Runs a local[2] SparkSession and an in-process simulator (on its own thread, in this process,
which is otherwise idle while Spark works). Write = every row posted and ACKed; read = every
message pushed, turned into a row and confirmed. Spark's fixed costs (job scheduling, Python
worker start) are part of the figure, as they are for a user.
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


def _spark(tmp: Path) -> Any:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pybmq.spark import register
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("pybmq-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.local.dir", str(tmp))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def run(quick: bool) -> list[Result]:
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return []  # no JVM here: nothing to measure
    from pybmq.sim.server import ThreadedBrokerSimulator
    from pyspark.sql import functions as F

    rows = 2_000 if quick else 100_000
    tmp = Path(tempfile.mkdtemp(prefix="pybmq-bench-spark-"))
    spark = _spark(tmp)
    try:
        with ThreadedBrokerSimulator() as sim:
            queue = "bmq://bmq.test.mem.priority/bench-spark"
            # 100-byte payloads: a 10-digit counter padded with 'x'.
            frame = (
                spark.range(rows, numPartitions=2)
                .select(F.rpad(F.format_string("%010d", "id"), PAYLOAD_BYTES, "x").alias("payload"))
                .cache()
            )
            frame.count()  # materialize outside the timing
            start = time.perf_counter()
            frame.write.format("blazingmq").option("broker", sim.url).option("queue", queue).option(
                "maxInFlight", "2000"
            ).mode("append").save()
            write_s = time.perf_counter() - start

            start = time.perf_counter()
            read = (
                spark.read.format("blazingmq")
                .option("broker", sim.url)
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
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    note = f"{rows:,} x {PAYLOAD_BYTES} B, local[2], simulator in-process"
    return [
        Result("spark batch write (ACKed)", rows / write_s, "rows/s", note),
        Result("spark batch read (confirmed)", rows / read_s, "rows/s", note),
    ]
