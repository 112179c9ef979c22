"""Register the data source after checking that Spark's Python workers can import pybmq.

Every method of a Python data source runs in a Spark Python worker, started with
``PYSPARK_PYTHON`` (Spark's default: ``python3`` on the PATH). A script run with a virtualenv's
interpreter without activating the venv gets workers on the system Python, and the first query
then fails deep inside Spark with ``No module named ...``. One tiny job at registration asks a
worker to import the data source's task code, so that mistake is reported at once, naming the fix.
"""

from __future__ import annotations

import importlib
import operator
import os
import sys
from typing import Any

from pybmq.errors import UsageError

__all__ = ["PROBE_MODULES", "check_workers", "register"]

# What a task runs: the queue work with the client, the row conversion with pyarrow.
PROBE_MODULES = ["pybmq.spark.io", "pybmq.spark.rows"]


def _worker_python(spark: Any) -> str:
    python = getattr(spark.sparkContext, "pythonExec", None)
    return str(python or os.environ.get("PYSPARK_PYTHON") or "python3")


def check_workers(spark: Any) -> str:
    """Where a Spark Python worker finds pybmq, or :class:`UsageError` naming PYSPARK_PYTHON.

    The job maps with library functions only (``importlib.import_module``, ``attrgetter``), so
    nothing of pybmq is pickled into it: the worker's own import is what is tested.
    """
    context = spark.sparkContext
    try:
        found: list[str] = (
            context.parallelize(PROBE_MODULES, 1)
            .map(importlib.import_module)
            .map(operator.attrgetter("__file__"))
            .collect()
        )
    except Exception as exc:  # Spark wraps the worker's failure in a JVM error
        first = next((line for line in str(exc).splitlines() if "Error" in line), str(exc))
        raise UsageError(
            f"Spark's Python workers run {_worker_python(spark)!r}, which cannot import pybmq "
            f"({first.strip()[:300]}). Set PYSPARK_PYTHON to the interpreter that has pybmq "
            f"installed (this driver runs {sys.executable!r}) before creating the SparkSession, "
            "or activate its virtualenv."
        ) from None
    return found[0]


def register(spark: Any, *, check: bool = True) -> None:
    """``spark.dataSource.register(BlazingMQDataSource)``, after :func:`check_workers` (skip it
    with ``check=False``, e.g. on Spark Connect, which has no SparkContext)."""
    if check:
        check_workers(spark)
    from pybmq.spark.datasource import BlazingMQDataSource

    spark.dataSource.register(BlazingMQDataSource)
