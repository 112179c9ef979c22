"""``pybmq.spark``: BlazingMQ queues as a PySpark (>= 4.2) Python data source named ``blazingmq``.

    spark.dataSource.register(BlazingMQDataSource)
    df.write.format("blazingmq").option("queue", "bmq://domain/q").mode("append").save()
    spark.read.format("blazingmq").option("queue", "bmq://domain/q").load()
    spark.readStream.format("blazingmq")...   /   df.writeStream.format("blazingmq")...

Where code runs matters. ``DataSource.reader/writer/streamReader/streamWriter`` run in Python
worker processes next to the driver: options are checked and the broker is probed there, so bad
options fail the query at once. Writers and batch readers are pickled to the executors, where each
task opens its own :class:`pybmq.Session` (see :mod:`pybmq.spark.io`). The stream reader keeps
its one consumer next to the driver (:class:`BlazingMQStreamReader`), or, with
``consumers=executors``, one sticky consumer per partition in the executors
(:mod:`pybmq.spark.executors`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pybmq.errors import SessionStoppedError, UsageError
from pybmq.spark.filters import split_filters
from pybmq.spark.options import (
    ReadOptions,
    StreamReadOptions,
    WriteOptions,
    check_write_schema,
    property_schema,
)
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    Filter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from pybmq.client.aio_queue import ReceivedMessage
    from pybmq.client.sync import Queue, Session

# The client, pyarrow and the task-side modules are imported where they are used: Spark starts
# a Python process per planning step (create the source, plan a write, commit it, ...), and
# several of them need none of it (see the Spark measurements in CHANGELOG.md).

__all__ = [
    "READ_SCHEMA",
    "BlazingMQBatchReader",
    "BlazingMQBatchWriter",
    "BlazingMQCommitMessage",
    "BlazingMQDataSource",
    "BlazingMQFilteringReader",
    "BlazingMQStreamReader",
    "BlazingMQStreamWriter",
    "read_schema",
]

log = logging.getLogger("pybmq.spark")


_TYPED_VALUE = StructType(
    [
        StructField("type", StringType()),
        StructField("bool", BooleanType()),
        StructField("char", ByteType()),
        StructField("short", ShortType()),
        StructField("int32", IntegerType()),
        StructField("int64", LongType()),
        StructField("string", StringType()),
        StructField("binary", BinaryType()),
    ]
)
READ_SCHEMA = StructType(
    [
        StructField("queue", StringType(), False),
        StructField("guid", StringType(), False),
        StructField("payload", BinaryType(), False),
        StructField("properties", MapType(StringType(), StringType(), False), False),
        StructField("typed_properties", MapType(StringType(), _TYPED_VALUE, False), False),
        # No "redelivered" column: a PUSH to a client carries no redelivery flag (see docs/guide/spark.md).
    ]
)
"""The rows of a read: one per message. ``typed_properties`` keeps each property's BlazingMQ
type, with the value in the struct field of that type; ``properties`` is the same as text."""


_PROPERTY_COLUMN_TYPES = {
    "boolean": BooleanType(),
    "bigint": LongType(),
    "string": StringType(),
    "binary": BinaryType(),
}


def read_schema(property_schema: tuple[tuple[str, str], ...] = ()) -> StructType:
    """:data:`READ_SCHEMA`, then one nullable column per ``propertySchema`` entry."""
    fields = [StructField(n, _PROPERTY_COLUMN_TYPES[t], True) for n, t in property_schema]
    return StructType([*READ_SCHEMA.fields, *fields])


def _arrow_schema(
    schema: StructType, property_schema: tuple[tuple[str, str], ...] = ()
) -> pa.Schema:
    """The Arrow schema Spark expects back from a reader (it compares it exactly)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    expected = read_schema(property_schema)
    if [(f.name, f.dataType) for f in schema.fields] != [
        (f.name, f.dataType) for f in expected.fields
    ]:
        raise UsageError(
            f"format 'blazingmq' reads with its own schema ({expected.simpleString()}; add "
            f"property columns with 'propertySchema'); a user-specified schema "
            f"{schema.simpleString()} is not supported"
        )
    return to_arrow_schema(schema, timezone="UTC")


class BlazingMQDataSource(DataSource):
    """Batch and streaming reads and writes of one BlazingMQ queue (option ``queue``)."""

    @classmethod
    def name(cls) -> str:
        """The format name Spark knows the source by: ``blazingmq``."""
        return "blazingmq"

    def schema(self) -> StructType:
        """The read schema: one row per message, plus a column per ``propertySchema`` entry."""
        return read_schema(property_schema(self.options))

    def reader(self, schema: StructType) -> BlazingMQBatchReader:
        """A batch reader (``spark.read``); checks the queue can be opened for reading first."""
        from pybmq.spark.io import probe

        options = ReadOptions.parse(self.options)
        arrow_schema = _arrow_schema(schema, options.property_schema)
        probe(options.target, read=True)
        if options.push_filters:
            return BlazingMQFilteringReader(options, arrow_schema)
        return BlazingMQBatchReader(options, arrow_schema)

    def writer(self, schema: StructType, overwrite: bool) -> BlazingMQBatchWriter:
        """A batch writer (``df.write``): one message per row, ACKed before the task commits."""
        return BlazingMQBatchWriter(self._write_options(schema, overwrite))

    def streamWriter(self, schema: StructType, overwrite: bool) -> BlazingMQStreamWriter:
        """A streaming writer (``writeStream``): each micro-batch's rows, ACKed per batch."""
        return BlazingMQStreamWriter(self._write_options(schema, overwrite))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """A streaming reader (``readStream``), in the driver or, with ``consumers=executors``,
        in the executors."""
        from pybmq.spark.executors import ExecutorStreamReader
        from pybmq.spark.io import probe

        options = StreamReadOptions.parse(self.options)
        arrow_schema = _arrow_schema(schema, options.property_schema)
        probe(options.target, read=True)
        if options.in_executors:
            return ExecutorStreamReader(options, arrow_schema)
        return BlazingMQStreamReader(options, arrow_schema)

    def _write_options(self, schema: StructType, overwrite: bool) -> WriteOptions:
        from pybmq.spark.io import probe

        options = WriteOptions.parse(self.options)
        if overwrite:
            raise UsageError("a BlazingMQ queue cannot be overwritten: write with mode('append')")
        check_write_schema(schema.names, options.property_columns)
        probe(options.target, read=False)
        return options


# ---------------------------------------------------------------------------------------- write


@dataclass
class BlazingMQCommitMessage(WriterCommitMessage):  # type: ignore[misc]
    """What one write task reports to the driver: every post it made was ACKed."""

    posted: int
    acked: int
    seconds: float


def _write_partition(options: WriteOptions, batches: Iterator[pa.RecordBatch]) -> Any:
    from pybmq.spark.io import post_all
    from pybmq.spark.rows import messages_from_batch

    def messages() -> Iterator[Any]:
        for batch in batches:
            yield from messages_from_batch(batch, options.property_columns)

    result = post_all(options, messages())
    return BlazingMQCommitMessage(result.posted, result.acked, result.seconds)


def _totals(messages: list[Any]) -> tuple[int, int]:
    done = [m for m in messages if isinstance(m, BlazingMQCommitMessage)]
    return sum(m.posted for m in done), sum(m.acked for m in done)


class BlazingMQBatchWriter(DataSourceArrowWriter):  # type: ignore[misc]
    """Posts each partition from its own session and commits only once all its ACKs are in.

    BlazingMQ has no transactions: messages ACKed by tasks that succeeded stay in the queue
    when the job aborts, and a retried task posts its partition again (at-least-once).
    """

    def __init__(self, options: WriteOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> Any:
        return _write_partition(self.options, iterator)

    def commit(self, messages: list[Any]) -> None:
        posted, acked = _totals(messages)
        log.info("wrote %d messages to %s, %d ACKed", posted, self.options.target.queue, acked)

    def abort(self, messages: list[Any]) -> None:
        posted, acked = _totals(messages)
        log.warning(
            "write to %s aborted; %d of %d posts of successful tasks were ACKed and stay queued",
            self.options.target.queue,
            acked,
            posted,
        )


class BlazingMQStreamWriter(DataSourceStreamArrowWriter):  # type: ignore[misc]
    """Each micro-batch is written like a batch write: a task commits after all its ACKs."""

    def __init__(self, options: WriteOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> Any:
        return _write_partition(self.options, iterator)

    def commit(self, messages: list[Any], batchId: int) -> None:
        posted, acked = _totals(messages)
        log.info(
            "batch %d: %d/%d posts to %s ACKed", batchId, acked, posted, self.options.target.queue
        )

    def abort(self, messages: list[Any], batchId: int) -> None:
        posted, acked = _totals(messages)
        log.warning(
            "batch %d aborted after %d/%d ACKed posts; Spark retries it", batchId, acked, posted
        )


# ----------------------------------------------------------------------------------- batch read


class BlazingMQBatchReader(DataSourceReader):  # type: ignore[misc]
    """Each partition opens its own consumer and takes its share of ``maxMessages``."""

    def __init__(self, options: ReadOptions, arrow_schema: pa.Schema) -> None:
        self.options = options
        self.arrow_schema = arrow_schema

    def partitions(self) -> list[InputPartition]:
        count = self.options.num_partitions
        total = self.options.max_messages
        shares = [total // count + (1 if i < total % count else 0) for i in range(count)]
        return [InputPartition(share) for share in shares if share > 0]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from pybmq.spark.io import consume

        for buffer in consume(self.options, int(partition.value)):
            yield buffer.to_batch(self.arrow_schema)


class BlazingMQFilteringReader(BlazingMQBatchReader):
    """A batch read with ``pushFilters=true``: the filters a subscription expression can say
    (see :mod:`pybmq.spark.filters`) go to the broker; Spark evaluates the rest.

    A separate class because Spark refuses a reader that implements ``pushFilters`` unless
    ``spark.sql.python.filterPushdown.enabled`` is true, and plain reads must not need that."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        expression, kept = split_filters(filters, dict(self.options.property_schema))
        if expression:
            log.info("subscription for %s: %s", self.options.target.queue, expression)
            self.options = replace(self.options, subscription=expression)
        return kept


# ---------------------------------------------------------------------------------- stream read


def _seq(offset: dict[str, Any]) -> int:
    return int(offset["seq"])


class _Consumer:
    """The stream's one consumer session, in the driver-side process that plans micro-batches.

    A thread moves pushed messages into ``arrived``; ``latestOffset`` numbers them (a message's
    counter is its offset); ``commit`` confirms the numbered ones below the committed offset.
    """

    def __init__(self, options: StreamReadOptions) -> None:
        from pybmq.spark.io import open_consumer

        self.options = options
        self.lock = threading.Lock()
        self.arrived: deque[ReceivedMessage] = deque()
        self.numbered: deque[tuple[int, ReceivedMessage]] = deque()
        self.next_seq: int | None = None  # unknown until Spark tells us where the stream stands
        # Trigger.AvailableNow: how many messages had arrived when the query started, and the
        # offset that makes (fixed at the first latestOffset, once the stream's start is known).
        self.available_now: int | None = None
        self.target_seq: int | None = None
        self.failure: BaseException | None = None
        self.stopping = False
        self.session: Session
        self.queue: Queue
        self.session, self.queue = open_consumer(options.target, options.max_unconfirmed)
        self.thread = threading.Thread(target=self._pump, name="pybmq-spark-stream", daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        try:
            while True:
                try:
                    batch = self.queue.get_many(4096)  # one hop per burst, not per message
                except SessionStoppedError:
                    break
                with self.lock:
                    self.arrived.extend(batch)
            if not self.stopping:
                self.failure = SessionStoppedError(
                    f"the stream's session to {self.options.target.broker} stopped"
                )
        except BaseException as exc:  # surfaced by the next latestOffset
            self.failure = exc

    def check(self) -> None:
        if self.failure is not None:
            raise self.failure

    def settle(self, idle_timeout: float) -> int:
        """Wait until nothing arrived for ``idle_timeout`` (the broker stops pushing once the
        credit, ``maxUnconfirmed``, is used up, so this ends) and return how many are buffered."""
        seen = -1
        while True:
            self.check()
            with self.lock:
                count = len(self.arrived)
            if count == seen:
                return count
            seen = count
            time.sleep(idle_timeout)

    def stop(self) -> None:
        self.stopping = True
        self.session.stop()  # unconfirmed messages go back to the queue: at-least-once
        self.thread.join(timeout=10)


class BlazingMQStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):  # type: ignore[misc]
    """Micro-batches of one queue; a batch's messages are confirmed once Spark commits it.

    ``Trigger.AvailableNow`` reads what the broker had pushed by the time pushes go quiet for
    ``idleTimeoutMs`` after the query starts (at most ``maxUnconfirmed``); later messages stay
    unconfirmed and go back to the queue when the query ends.

    Offsets are counters ``{"seq": n}``: the n-th message handed to this stream. The consumer
    session lives in the process where Spark calls ``latestOffset``/``partitions``/``commit``
    (one long-lived Python process per streaming source, next to the driver), because only the
    session that received a message can confirm it. ``partitions`` therefore carries the rows
    themselves to the executors, and ``read`` only unpacks them.

    After a restart, Spark may re-run the last planned but uncommitted batch. Its messages were
    never confirmed, so the broker has redelivered them to the new session; that batch is
    re-run empty and the redelivered messages flow into the next batches. Nothing is lost; a
    sink that had already stored the re-run batch sees those messages again (at-least-once).
    """

    def __init__(self, options: StreamReadOptions, arrow_schema: pa.Schema) -> None:
        self.options = options
        self.arrow_schema = arrow_schema
        self._consumer: _Consumer | None = None

    def __getstate__(self) -> dict[str, Any]:
        # This object is also pickled to executors for read(): never the session.
        return {"options": self.options, "arrow_schema": self.arrow_schema, "_consumer": None}

    def _started(self) -> _Consumer:
        if self._consumer is None:
            self._consumer = _Consumer(self.options)
        self._consumer.check()
        return self._consumer

    def initialOffset(self) -> dict[str, Any]:
        return {"seq": 0}

    def getDefaultReadLimit(self) -> ReadLimit:
        per_batch = self.options.max_messages_per_batch
        return ReadMaxRows(per_batch) if per_batch > 0 else ReadAllAvailable()

    def reportLatestOffset(self) -> dict[str, Any] | None:
        """The offset the stream would reach with every buffered message: shown per batch as
        ``latestOffset`` in the query's progress, next to its ``endOffset`` (the backlog)."""
        consumer = self._consumer
        if consumer is None:
            return None
        with consumer.lock:
            if consumer.next_seq is None:
                return None
            return {"seq": consumer.next_seq + len(consumer.arrived)}

    def prepareForTriggerAvailableNow(self) -> None:
        consumer = self._started()
        consumer.available_now = consumer.settle(self.options.idle_timeout)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        consumer = self._started()
        first = _seq(start)
        # Spark plans the batch after ``start`` only once every batch before it is in the sink
        # and the commit log, so those messages are done whether or not ``commit`` came yet.
        self._confirm_below(consumer, first)
        with consumer.lock:
            if consumer.next_seq is None or consumer.next_seq < first:
                consumer.next_seq = first
            if consumer.available_now is not None and consumer.target_seq is None:
                consumer.target_seq = consumer.next_seq + consumer.available_now
            end = consumer.target_seq
            if isinstance(limit, ReadMaxRows):
                cap = first + max(int(limit.max_rows), 1)
                end = cap if end is None else min(end, cap)
            while consumer.arrived and (end is None or consumer.next_seq < end):
                consumer.numbered.append((consumer.next_seq, consumer.arrived.popleft()))
                consumer.next_seq += 1
            return {"seq": consumer.next_seq if end is None else min(end, consumer.next_seq)}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        from pybmq.spark.io import row_values
        from pybmq.spark.rows import RowBuffer

        consumer = self._started()
        first, last = _seq(start), _seq(end)
        with consumer.lock:
            if consumer.next_seq is None or consumer.next_seq < last:
                # A batch planned before a restart: its messages are being redelivered and get
                # new counters after it (see the class docstring).
                consumer.next_seq = last
            batch = [m for seq, m in consumer.numbered if first <= seq < last]
        count = max(1, min(self.options.num_partitions, len(batch)))
        queue, columns = self.options.target.queue, self.options.property_schema
        buffers = [RowBuffer(queue, columns) for _ in range(count)]
        for i, message in enumerate(batch):
            buffers[i * count // max(len(batch), 1)].add(message.guid, *row_values(message))
        return [InputPartition(buffer) for buffer in buffers]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        buffer = partition.value  # a RowBuffer
        if len(buffer):
            yield buffer.to_batch(self.arrow_schema)

    def commit(self, end: dict[str, Any]) -> None:
        self._confirm_below(self._started(), _seq(end))

    @staticmethod
    def _confirm_below(consumer: _Consumer, last: int) -> None:
        done = []
        with consumer.lock:
            while consumer.numbered and consumer.numbered[0][0] < last:
                done.append(consumer.numbered.popleft()[1])
        if done:
            consumer.queue.confirm_many(done)

    def stop(self) -> None:
        if self._consumer is not None:
            self._consumer.stop()
            self._consumer = None
