"""Streaming reads whose consumers live in the executors (``consumers=executors``).

The driver only numbers micro-batches: offsets are ``{"batch": n}`` and every trigger plans one
more batch, split into ``numPartitions`` partitions. Each partition task runs in a Spark Python
worker, which Spark reuses from task to task (``spark.python.worker.reuse``, on by default), and
finds there a *sticky consumer* kept in this module, keyed by (query run, partition); the first
task of a partition in a worker opens it. A task of batch ``b``:

1. confirms, for every consumer of its run in this worker, the messages of batches ``< b``:
   Spark plans batch ``b`` only after batch ``b - 1`` is in the sink and in the commit log, so
   those batches are committed;
2. takes up to its share of ``maxMessagesPerBatch`` from its consumer, for at most
   ``idleTimeoutMs``, remembers them under ``b``, and returns them as rows.

Only the session that received a message can confirm it, so nothing is confirmed before Spark
committed it (at-least-once). What breaks that chain only adds duplicates:

- a worker or executor dies: its sessions close, the broker hands their unconfirmed messages
  (the batch in flight, committed batches not yet confirmed, prefetched ones) to the other
  consumers; Spark re-runs a failed batch;
- a consumer is not used for ``consumerIdleTimeoutMs`` (its partitions went to other workers, the
  query stopped or was restarted: a restart is a new run with new consumers): it is closed and
  its unconfirmed messages go back to the queue;
- a slice is read again (a retried task, a stage re-run after lost shuffle output, whose tasks
  have attempt number 0 again, or a micro-batch used twice): in the worker that read it, the
  task returns the same rows again from memory; in another worker of the same executor, the rows
  that the first worker saved (:mod:`pybmq.spark.reruns`). Either way it takes nothing new, and
  the first worker confirms the slice once the batch is committed. A retry
  (``attemptNumber > 0``) that finds no rows of its slice fails instead (the first attempt may
  have run in another executor), and so the query; restarted from its checkpoint it starts a
  new run, and the old consumers expire without confirming anything. A stage re-run in another
  executor than the first read is not seen (see docs/guide/spark.md).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from pybmq.client.aio_queue import ReceivedMessage
from pybmq.client.sync import Queue, Session
from pybmq.errors import UsageError
from pybmq.spark.io import open_consumer, row_values
from pybmq.spark.options import StreamReadOptions
from pybmq.spark.reruns import SavedSlices, executor_directory
from pybmq.spark.rows import RowBuffer
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    SupportsTriggerAvailableNow,
)

__all__ = ["REAP_INTERVAL", "REGISTRY", "ExecutorStreamReader", "Slice"]

REAP_INTERVAL = 1.0  # how often a worker looks for consumers idle past their lease


@dataclass(frozen=True)
class Slice:
    """One partition of one micro-batch of one query run (the value of an InputPartition)."""

    run: str
    partition: int
    batch: int


class _Consumer:
    """One sticky consumer: a session, its queue, and the messages taken per batch."""

    def __init__(self, options: StreamReadOptions) -> None:
        # Credit = one task's share: a consumer never hoards messages that other partitions'
        # consumers (or, after a restart, the next run's) could take.
        credit = _share(options)
        self.session: Session
        self.queue: Queue
        self.session, self.queue = open_consumer(options.target, credit)
        self.held: dict[int, list[ReceivedMessage]] = {}  # taken, by batch, until confirmed
        self.rows: dict[int, pa.RecordBatch] = {}  # what those batches returned
        self.last_used = time.monotonic()
        self.busy = False

    def take(self, count: int, wait: float) -> list[ReceivedMessage]:
        """Up to ``count`` messages, in at most ``wait`` seconds (a trickle of messages does not
        keep a task, and so the batch, open)."""
        taken: list[ReceivedMessage] = []
        deadline = time.monotonic() + wait
        while len(taken) < count:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            got = self.queue.get_many(count - len(taken), remaining)
            if not got:
                break
            taken.extend(got)
        return taken

    def confirm(self, batches: list[int]) -> None:
        messages = [m for b in batches for m in self.held.pop(b)]
        if messages:
            self.queue.confirm_many(messages)

    def stop(self) -> None:
        self.session.stop()  # what it held goes back to the queue: redelivered, never lost


class _Registry:
    """This worker process's consumers, by (run, partition), and the thread that expires them.

    ``root`` is where the workers of this executor save the rows of the slices they read
    (:mod:`pybmq.spark.reruns`; by default Spark's files directory of the executor)."""

    def __init__(self, root: Path | None = None) -> None:
        self.lock = threading.Lock()
        self.consumers: dict[tuple[str, int], _Consumer] = {}
        self.leases: dict[tuple[str, int], float] = {}
        self.reaper: threading.Thread | None = None
        self.root = root
        self.saved: dict[str, SavedSlices] = {}

    def read(
        self, piece: Slice, options: StreamReadOptions, schema: pa.Schema, attempt: int = 0
    ) -> pa.RecordBatch:
        """The rows of one slice: taken from its consumer, or, when a worker of this executor
        read the slice already (a retried task, a re-run stage), the same rows again."""
        with self.lock:
            self._settle_below(piece.run, piece.batch)
            consumer, rows = self._start(piece, options, attempt)
        if rows is not None:
            return rows
        assert consumer is not None
        try:
            messages = consumer.take(_share(options), options.idle_timeout)
            buffer = RowBuffer(options.target.queue, options.property_schema)
            for message in messages:
                buffer.add(message.guid, *row_values(message))
            rows = buffer.to_batch(schema)
            # Saved before Spark gets the rows: a re-read elsewhere in the executor finds them.
            self._saved(piece.run).save(piece.partition, piece.batch, rows)
            consumer.held[piece.batch] = messages
            consumer.rows[piece.batch] = rows
        except BaseException:
            with self.lock:
                dropped = self._drop((piece.run, piece.partition))
            for stale in dropped:
                stale.stop()
            raise
        finally:
            self.release(consumer)
        return rows

    def _start(
        self, piece: Slice, options: StreamReadOptions, attempt: int
    ) -> tuple[_Consumer | None, pa.RecordBatch | None]:
        """The slice's consumer and, when the slice was read already, its rows."""
        key = (piece.run, piece.partition)
        consumer = self.consumers.get(key)
        if consumer is not None and piece.batch in consumer.rows:
            self.leases[key] = options.consumer_idle_timeout
            consumer.last_used = time.monotonic()
            return consumer, consumer.rows[piece.batch]
        saved = self._saved(piece.run).load(piece.partition, piece.batch)
        if saved is not None:
            return None, saved  # read by another worker of this executor, which confirms it
        if attempt:
            raise UsageError(
                "a micro-batch task of a stream with consumers=executors was retried, and no "
                "worker of this executor read it before; the first attempt's messages may wait "
                "unconfirmed in another executor, so the query stops here. Restart it from its "
                "checkpoint: nothing is lost (see docs/guide/spark.md)."
            )
        if consumer is None:
            consumer = self.consumers[key] = _Consumer(options)
        self.leases[key] = options.consumer_idle_timeout
        consumer.busy = True
        if self.reaper is None:
            self.reaper = threading.Thread(
                target=self._reap, name="pybmq-spark-reaper", daemon=True
            )
            self.reaper.start()
        return consumer, None

    def release(self, consumer: _Consumer) -> None:
        with self.lock:
            consumer.busy = False
            consumer.last_used = time.monotonic()

    def expire(self, now: float) -> int:
        """Stop the consumers unused for longer than their lease; how many were stopped."""
        with self.lock:
            idle = [
                key
                for key, consumer in self.consumers.items()
                if not consumer.busy and now - consumer.last_used > self.leases[key]
            ]
            stopped = [consumer for key in idle for consumer in self._drop(key)]
            runs = {run for run, _ in self.consumers}
            for run in [run for run in self.saved if run not in runs]:
                del self.saved[run]
        for consumer in stopped:
            consumer.stop()
        return len(stopped)

    def _saved(self, run: str) -> SavedSlices:
        saved = self.saved.get(run)
        if saved is None:
            root = executor_directory() if self.root is None else self.root
            saved = self.saved[run] = SavedSlices(root, run)
        return saved

    def _settle_below(self, run: str, batch: int) -> None:
        """Batch ``batch`` is planned, so the run's earlier batches are committed: each consumer
        of the run in this worker confirms what it holds of them, and their rows are dropped."""
        for (consumer_run, partition), consumer in self.consumers.items():
            done = [b for b in consumer.held if b < batch]
            if consumer_run != run or not done:
                continue
            consumer.confirm(done)
            for b in done:
                del consumer.rows[b]
                self._saved(run).discard(partition, b)

    def _drop(self, key: tuple[str, int]) -> list[_Consumer]:
        """Forget a consumer without confirming (its saved rows removed); the caller stops it."""
        consumer = self.consumers.pop(key, None)
        self.leases.pop(key, None)
        if consumer is None:
            return []
        for batch in consumer.held:
            self._saved(key[0]).discard(key[1], batch)
        consumer.held.clear()
        consumer.rows.clear()
        return [consumer]

    def _reap(self) -> None:
        while True:
            time.sleep(REAP_INTERVAL)
            self.expire(time.monotonic())


REGISTRY = _Registry()


def _share(options: StreamReadOptions) -> int:
    """How many messages one partition task takes: its part of ``maxMessagesPerBatch``, or
    of ``maxUnconfirmed`` when batches are not capped."""
    per_batch = options.max_messages_per_batch or options.max_unconfirmed
    return max(1, -(-per_batch // options.num_partitions))


def _attempt_number() -> int:
    """The running task's attempt number (0 outside a task). PySpark shows no stage attempt: a
    re-run stage's tasks are attempt 0 again."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return context.attemptNumber() if context is not None else 0


class ExecutorStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):  # type: ignore[misc]
    """The driver side: numbers batches and plans ``numPartitions`` partitions per batch."""

    def __init__(self, options: StreamReadOptions, arrow_schema: pa.Schema) -> None:
        self.options = options
        self.arrow_schema = arrow_schema
        self.run = uuid.uuid4().hex  # one per start of the query: a restart gets new consumers

    def initialOffset(self) -> dict[str, Any]:
        return {"batch": 0}

    def prepareForTriggerAvailableNow(self) -> None:
        raise UsageError(
            "Trigger.AvailableNow needs consumers=driver: with consumers=executors the driver "
            "cannot see what the executors' consumers have available"
        )

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadAllAvailable()  # the batch size is maxMessagesPerBatch, taken in the tasks

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        # A queue shows the driver no end offset: every trigger reads one more batch.
        return {"batch": int(start["batch"]) + 1}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        batch = int(end["batch"])
        return [
            InputPartition(Slice(self.run, p, batch)) for p in range(self.options.num_partitions)
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        piece: Slice = partition.value
        rows = REGISTRY.read(piece, self.options, self.arrow_schema, _attempt_number())
        if rows.num_rows:
            yield rows

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do here: the tasks of the next batch confirm this one in the executors."""
