"""The rows of each slice that a Python worker of this executor read, kept until its messages are
confirmed (``consumers=executors``).

Spark re-runs a stage whose shuffle output was lost (a fetch failure, a lost executor) as a new
stage attempt whose tasks have attempt number 0 again (PySpark's ``TaskContext`` shows no stage
attempt), and a micro-batch that a query uses twice (a ``foreachBatch`` without ``persist``)
reads each slice twice. Such a re-read of slice (run, partition, batch) can land in another
Python worker than the one that read it, and that first worker holds the first read's messages
under the same batch: reading anew would hand the sink other rows, while the first worker, once
the batch is committed, confirms messages whose rows the sink may never have got.

So the worker that reads a slice saves its rows, an Arrow IPC file in a directory of the run
under Spark's files directory of the executor (``SparkFiles``, shared by the executor's Python
workers and deleted by Spark when the executor stops), before returning them; a re-read in
another worker of the executor returns those rows and takes nothing. The file is removed when
its worker confirms the slice (the batch is committed: no re-read follows) or closes that
consumer. A re-read in another executor cannot see it.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path

import pyarrow as pa

__all__ = ["SavedSlices", "executor_directory"]


def executor_directory() -> Path:
    """Spark's files directory of this executor, shared by its Python workers and deleted by
    Spark when the executor stops (outside a Spark worker: the temp directory)."""
    from pyspark.core.files import SparkFiles

    if SparkFiles._is_running_on_worker and SparkFiles._root_directory:
        return Path(SparkFiles._root_directory)
    return Path(tempfile.gettempdir())


class SavedSlices:
    """The saved rows of one query run's slices in one executor."""

    def __init__(self, root: Path, run: str) -> None:
        self.directory = root / f"pybmq-spark-{run}"

    def path(self, partition: int, batch: int) -> Path:
        return self.directory / f"p{partition}.b{batch}.arrow"

    def save(self, partition: int, batch: int, rows: pa.RecordBatch) -> None:
        """Keep the rows of a slice just read (written aside, then renamed: a re-read sees the
        whole file or none)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.path(partition, batch)
        aside = path.with_name(f"{path.name}.{uuid.uuid4().hex}")
        with pa.OSFile(str(aside), "wb") as sink, pa.ipc.new_file(sink, rows.schema) as writer:
            writer.write_batch(rows)
        os.replace(aside, path)

    def load(self, partition: int, batch: int) -> pa.RecordBatch | None:
        """The rows another worker of this executor read for the slice, if it did."""
        try:
            data = self.path(partition, batch).read_bytes()
        except FileNotFoundError:
            return None
        return pa.ipc.open_file(pa.py_buffer(data)).get_batch(0)

    def discard(self, partition: int, batch: int) -> None:
        self.path(partition, batch).unlink(missing_ok=True)
