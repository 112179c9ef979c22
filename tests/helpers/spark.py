"""One local[2] SparkSession for the whole test run, set up so its Python workers use this venv.

Spark starts Python worker processes with ``PYSPARK_PYTHON`` (default: ``python3`` on PATH, which
lacks this venv's packages), and finds Java through ``JAVA_HOME`` or PATH.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any


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
