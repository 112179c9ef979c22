"""BlazingMQ as a PySpark data source (``spark.read/readStream/write.format("blazingmq")``).

``datasource`` is what Spark calls; ``options`` reads its options, ``rows`` converts between Arrow
rows and messages, ``io`` talks to the broker. Needs the ``spark`` extra (pyspark, pyarrow).
"""

from pybmq.spark.datasource import BlazingMQDataSource

__all__ = ["BlazingMQDataSource"]
