"""BlazingMQ as a PySpark data source (``spark.read/readStream/write.format("blazingmq")``).

``register`` checks the workers and registers the source; ``datasource`` is what Spark calls;
``options`` reads its options, ``rows`` converts between Arrow rows and messages, ``filters``
turns pushed Spark filters into a subscription expression, ``io`` talks to the broker,
``executors`` keeps the stream's consumers in the executors (``consumers=executors``), ``reruns``
keeps the rows of each slice read for a re-read. Needs the ``spark`` extra (pyspark, pyarrow).
"""

try:
    from pybmq.spark.datasource import BlazingMQDataSource
    from pybmq.spark.register import check_workers, register
except ModuleNotFoundError as exc:
    missing = (exc.name or "").partition(".")[0]
    if missing not in ("pyspark", "pyarrow", "pandas"):
        raise
    raise ModuleNotFoundError(
        f"pybmq.spark needs the spark extra ({missing} is not installed): "
        "pip install 'pybmq[spark]'",
        name=exc.name,
    ) from exc

__all__ = ["BlazingMQDataSource", "check_workers", "register"]
