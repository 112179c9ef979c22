"""One local[2] SparkSession for the whole test run, set up so its Python workers use this venv.

Spark starts Python worker processes with ``PYSPARK_PYTHON`` (default: ``python3`` on PATH, which
lacks this venv's packages), and finds Java through ``JAVA_HOME`` or PATH.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

DOMAIN = "bmq.test.mem.priority"


def spark_environment() -> None:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    if not os.environ.get("JAVA_HOME"):
        java = shutil.which("java")
        if java is None:
            raise RuntimeError(
                "the Spark tests need Java 17+: install openjdk-17-jre-headless or set JAVA_HOME "
                "(deselect them with -m 'not spark')"
            )
        os.environ["JAVA_HOME"] = str(Path(java).resolve().parent.parent)


def local_spark(tmp: Path) -> Iterator[Any]:
    spark_environment()
    from pybmq.spark import register
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("pybmq-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        # Python workers must connect back within this; a busy 2-core CI box can take longer
        # than the 15 s default to start one.
        .config("spark.python.authenticate.socketTimeout", "120s")
        .config("spark.sql.streaming.checkpointLocation", str(tmp / "checkpoints"))
        .config("spark.local.dir", str(tmp / "local"))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    try:
        yield spark
    finally:
        spark.stop()


def fresh_queue() -> str:
    return f"bmq://{DOMAIN}/spark-{uuid.uuid4().hex[:12]}"


def read_all(spark: Any, broker: str, queue: str, *, max_messages: int, confirm: bool) -> Any:
    return (
        spark.read.format("blazingmq")
        .option("broker", broker)
        .option("queue", queue)
        .option("maxMessages", str(max_messages))
        .option("idleTimeoutMs", "1500")
        .option("confirm", str(confirm).lower())
        .load()
    )


def start_query(make: Any) -> Any:
    """Start a streaming query, once more if Spark could not start its Python source runner:
    Spark gives a new Python worker a fixed 10 s to connect back, which an overloaded 2-core
    machine can miss. Any other failure is the test's."""
    for attempt in range(3):
        query = make()
        deadline = time.monotonic() + 20
        while query.status["message"] == "Initializing sources" and time.monotonic() < deadline:
            time.sleep(0.2)
        error = query.exception()
        if error is None or "Python worker failed to connect back" not in str(error):
            return query
        print(f"streaming query start {attempt + 1}: Spark's Python worker did not connect back")
        query.stop()
    raise AssertionError("Spark could not start the streaming source's Python worker")


def sink_payloads(path: Path, spark: Any) -> list[bytes]:
    """What the file sink has committed (Spark reads it through the sink's metadata log)."""
    if not (path / "_spark_metadata").is_dir():
        return []
    frame = spark.read.schema("guid string, payload binary").parquet(str(path))
    return [bytes(r.payload) for r in frame.select("payload").collect()]
