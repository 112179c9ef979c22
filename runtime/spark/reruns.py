"""Which Python worker served which slice of a micro-batch (``consumers=executors``).

Spark re-runs a stage whose shuffle output was lost (a fetch failure, a lost executor) as a new
stage attempt whose tasks have attempt number 0 again, and PySpark's ``TaskContext`` does not
show the stage attempt. A re-run of slice (run, partition, batch) can therefore land in another
Python worker than the one that read it first; that first worker still holds the first read's
messages under the same batch and, after the batch is committed, would confirm messages whose
rows the sink never got (the sink got the re-run's rows).

So every worker that reads a slice leaves a mark in a directory shared by the Python workers of
its executor: an empty file ``p<partition>.b<batch>.<worker token>`` in the run's directory,
under Spark's per-executor files directory (``SparkFiles``; Spark deletes it when the executor
stops). Before confirming a batch, a worker *settles* its mark: alone, it may confirm; with a
mark of another worker for the same slice, it must not (it stops that consumer, and what it
held goes back to the queue: duplicates, never a loss), whichever of the two the sink got.

Marks are removed once they are settled: a lone mark by its worker, the marks of a contested
slice by the last of its workers to settle (the others leave theirs as ``.done``). What stays:
the marks of workers that died before settling (their sessions closed with them), until the
executor stops. A re-run on another executor (another host) is not seen here.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DONE = ".done"


def executor_directory() -> Path:
    """Spark's files directory of this executor, shared by its Python workers and deleted by
    Spark when the executor stops (outside a Spark worker: the temp directory)."""
    from pyspark.core.files import SparkFiles

    if SparkFiles._is_running_on_worker and SparkFiles._root_directory:
        return Path(SparkFiles._root_directory)
    return Path(tempfile.gettempdir())


def new_token() -> str:
    """A name for one worker (a process id can be reused; the random part cannot)."""
    return f"{os.getpid()}x{uuid.uuid4().hex[:12]}"


class Marks:
    """The marks of one query run in one executor, as seen by one worker (``token``)."""

    def __init__(self, root: Path, run: str, token: str) -> None:
        self.directory = root / f"pybmq-spark-{run}"
        self.token = token

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.directory / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # released by the kernel if this process dies
            yield
        finally:
            os.close(fd)

    def served(self, partition: int, batch: int) -> None:
        """This worker reads slice (partition, batch): leave its mark (before taking messages)."""
        with self._locked():
            (self.directory / f"p{partition}.b{batch}.{self.token}").touch()

    def settle(self, partition: int, batch: int) -> bool:
        """This worker is done with the slice (about to confirm it, or dropping it). True when
        no other worker marked it: only then may this worker confirm its messages."""
        prefix = f"p{partition}.b{batch}."
        mine = f"{prefix}{self.token}"
        with self._locked():
            names = [n for n in os.listdir(self.directory) if n.startswith(prefix)]
            others = [n for n in names if n not in (mine, mine + DONE)]
            if others and not all(n.endswith(DONE) for n in others):
                # Another worker has still to settle this slice: it must see this mark.
                for name in (n for n in names if n == mine):
                    os.replace(self.directory / name, self.directory / (mine + DONE))
            else:
                for name in names:  # alone, or the last of the slice's workers to settle
                    (self.directory / name).unlink(missing_ok=True)
        return not others
