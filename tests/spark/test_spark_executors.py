"""Streaming reads with ``consumers=executors`` on local[2] Spark against the simulator: one
consumer per partition in Spark's Python workers, a query restarted from its checkpoint, and
the workers holding consumer sessions killed mid-stream. Each test ends with every message in
the sink and confirmed (nothing lost) and counts the duplicates."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.spark import fresh_queue, read_all, sink_payloads, start_query

TOTAL = 2000
PER_BATCH = 200
PARTITIONS = 2


def _stats(sim: Any) -> tuple[int, int]:
    return sim.call(lambda broker: (broker.stats.confirms, broker.stats.redelivered))


def _posted(sim: Any, count: int, **extra: str) -> Any:
    """A fresh queue with ``count`` messages, and stream options of 10 per batch, 1 partition."""
    from pybmq.spark.io import post_all
    from pybmq.spark.options import StreamReadOptions, WriteOptions

    target = {"broker": sim.url, "queue": fresh_queue()}
    post_all(WriteOptions.parse(target), ((b"m%d" % i, None) for i in range(count)))
    return StreamReadOptions.parse(
        {**target, "maxmessagesperbatch": "10", "idletimeoutms": "300", **extra}
    )


def test_a_worker_confirms_only_batches_before_the_one_it_reads(
    bmq_sim: Any, tmp_path: Path
) -> None:
    """The executor-side rule without Spark: batch b's task confirms batches < b of its run;
    an expired consumer hands what it held back to the queue."""
    from pybmq.spark.executors import Slice, _Registry

    options = _posted(bmq_sim, 30)
    registry = _Registry(tmp_path)
    assert len(registry.read(Slice("r1", 0, 1), options, SCHEMA)) == 10
    time.sleep(0.3)
    assert _stats(bmq_sim) == (0, 0)  # batch 1 is not known to be committed yet
    assert len(registry.read(Slice("r1", 0, 2), options, SCHEMA)) == 10  # so batch 1 was
    _wait(lambda: _stats(bmq_sim)[0] == 10, time.monotonic() + 10, "batch 1 not confirmed")
    assert _saved(tmp_path) == ["p0.b2.arrow"]  # batch 1's rows dropped once confirmed
    assert len(registry.read(Slice("r2", 0, 1), options, SCHEMA)) == 10  # another run
    assert _stats(bmq_sim)[0] == 10
    assert registry.expire(time.monotonic() + 120) == 2  # both idle consumers stop
    _wait(lambda: _stats(bmq_sim)[1] >= 20, time.monotonic() + 10, "held messages not released")
    assert _stats(bmq_sim)[0] == 10
    assert _saved(tmp_path) == []


def _saved(root: Path) -> list[str]:
    return sorted(p.name for p in root.glob("pybmq-spark-*/p*"))


def _schema() -> Any:
    from pybmq.spark.datasource import _arrow_schema, read_schema

    return _arrow_schema(read_schema())


SCHEMA = _schema()


def test_a_slice_read_again_in_its_worker_replays_the_same_rows(
    bmq_sim: Any, tmp_path: Path
) -> None:
    """A re-run stage (attempt 0 again) or a retried task in the worker that read the slice:
    the same rows, nothing new taken, confirmed once when the next batch is read."""
    from pybmq.spark.executors import Slice, _Registry

    options = _posted(bmq_sim, 30)
    registry = _Registry(tmp_path)
    first = registry.read(Slice("r", 0, 1), options, SCHEMA)
    again = registry.read(Slice("r", 0, 1), options, SCHEMA)  # a re-run stage: attempt 0
    retried = registry.read(Slice("r", 0, 1), options, SCHEMA, attempt=1)
    assert len(first) == 10 and again.to_pylist() == retried.to_pylist() == first.to_pylist()
    second = registry.read(Slice("r", 0, 2), options, SCHEMA)
    assert not set(second.column("guid").to_pylist()) & set(first.column("guid").to_pylist())
    _wait(lambda: _stats(bmq_sim)[0] == 10, time.monotonic() + 10, "batch 1 not confirmed")
    registry.expire(time.monotonic() + 120)
    assert _saved(tmp_path) == []


def test_a_re_run_task_returns_the_same_rows(
    bmq_sim: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What Spark gets from the reader: a re-run of a slice in the same worker yields the very
    same Arrow rows (payloads, GUIDs, properties), then the next batch yields new ones."""
    from pybmq.spark import executors
    from pyspark.sql.datasource import InputPartition

    options = _posted(bmq_sim, 20)
    monkeypatch.setattr(executors, "REGISTRY", executors._Registry(tmp_path))
    reader = executors.ExecutorStreamReader(options, SCHEMA)

    def rows(batch: int) -> list[dict[str, Any]]:
        piece = InputPartition(executors.Slice(reader.run, 0, batch))
        return [row for part in reader.read(piece) for row in part.to_pylist()]

    first = rows(1)
    assert len(first) == 10 and rows(1) == first
    second = rows(2)
    assert len(second) == 10 and not {r["guid"] for r in second} & {r["guid"] for r in first}
    executors.REGISTRY.expire(time.monotonic() + 120)


def test_a_slice_read_again_in_another_worker_replays_the_saved_rows(
    bmq_sim: Any, tmp_path: Path
) -> None:
    """A re-read lands in another Python worker of the executor (a re-run stage, a retry, a
    micro-batch used twice): it returns the rows the first worker saved and takes nothing;
    the first worker confirms them once the batch is committed. Nothing lost, no duplicate."""
    from pybmq.spark.executors import Slice, _Registry

    options = _posted(bmq_sim, 40)
    w1, w2 = _Registry(tmp_path), _Registry(tmp_path)
    first = w1.read(Slice("r", 0, 1), options, SCHEMA)
    assert _saved(tmp_path) == ["p0.b1.arrow"]
    again = w2.read(Slice("r", 0, 1), options, SCHEMA)  # a re-run stage: attempt 0
    retried = w2.read(Slice("r", 0, 1), options, SCHEMA, attempt=1)
    assert len(first) == 10 and again.to_pylist() == retried.to_pylist() == first.to_pylist()
    assert w2.consumers == {}  # took nothing, opened nothing
    w1.read(Slice("r", 1, 2), options, SCHEMA)  # batch 1 committed: w1 confirms it
    _wait(lambda: _stats(bmq_sim)[0] == 10, time.monotonic() + 10, "batch 1 not confirmed")
    assert _saved(tmp_path) == ["p1.b2.arrow"]
    w1.expire(time.monotonic() + 120)
    _wait(lambda: _stats(bmq_sim)[1] >= 10, time.monotonic() + 10, "held messages not released")
    assert _stats(bmq_sim)[0] == 10  # only the committed batch was confirmed
    assert _saved(tmp_path) == []


def test_a_retry_in_another_executor_refuses_to_read(bmq_sim: Any, tmp_path: Path) -> None:
    """A retried task that finds no rows of its slice in its executor fails: the first
    attempt may have read in another executor, which would confirm those messages."""
    from pybmq.errors import UsageError
    from pybmq.spark.executors import Slice, _Registry

    options = _posted(bmq_sim, 10)
    first, other = _Registry(tmp_path / "one"), _Registry(tmp_path / "other")
    assert len(first.read(Slice("r", 0, 1), options, SCHEMA)) == 10
    with pytest.raises(UsageError, match="was retried"):
        other.read(Slice("r", 0, 1), options, SCHEMA, attempt=1)
    assert other.consumers == {} and other.leases == {}  # refused before opening a consumer
    first.expire(time.monotonic() + 120)


def test_saved_slices_round_trip(tmp_path: Path) -> None:
    import pyarrow as pa
    from pybmq.spark.reruns import SavedSlices

    saved = SavedSlices(tmp_path, "run")
    assert saved.load(0, 1) is None
    rows = pa.record_batch({"payload": pa.array([b"a", b"b"])})
    saved.save(0, 1, rows)
    saved.save(0, 2, rows.slice(0, 0))  # an empty slice is kept too: its re-read is empty
    loaded = saved.load(0, 1)
    assert loaded is not None and loaded.equals(rows)
    assert saved.load(0, 2) is not None and saved.load(0, 2).num_rows == 0  # type: ignore[union-attr]
    saved.discard(0, 1)
    saved.discard(0, 1)  # already gone: fine
    assert saved.load(0, 1) is None
    assert sorted(p.name for p in saved.directory.iterdir()) == ["p0.b2.arrow"]


def _write(spark: Any, broker: str, queue: str) -> None:
    rows = [(f"x{i:05d}",) for i in range(TOTAL)]
    spark.createDataFrame(rows, "payload string").write.format("blazingmq").option(
        "broker", broker
    ).option("queue", queue).mode("append").save()


def _stream(spark: Any, broker: str, queue: str, tmp: Path) -> Any:
    return (
        spark.readStream.format("blazingmq")
        .option("broker", broker)
        .option("queue", queue)
        .option("consumers", "executors")
        .option("numPartitions", str(PARTITIONS))
        .option("maxMessagesPerBatch", str(PER_BATCH))
        .option("idleTimeoutMs", "300")
        .option("consumerIdleTimeoutMs", "3000")
        .load()
        .select("payload")
        .writeStream.format("parquet")
        .option("path", str(tmp / "sink"))
        .option("checkpointLocation", str(tmp / "checkpoint"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )


def _wait(condition: Any, deadline: float, what: str, query: Any = None) -> None:
    while not condition():
        assert time.monotonic() < deadline, what
        if query is not None:
            assert query.exception() is None, query.exception()
        time.sleep(0.3)


def _drain(spark: Any, sim: Any, queue: str, sink: Path, query: Any, deadline: float) -> None:
    """Every message in the sink and confirmed: then the queue is empty (checked after stop)."""
    _wait(lambda: len(set(sink_payloads(sink, spark))) >= TOTAL, deadline, "messages lost", query)
    # The last batches are confirmed by the next batches' tasks (or, in a worker that gets no
    # more tasks, go back to the queue after consumerIdleTimeoutMs and come again).
    _wait(lambda: sim.call(lambda b: b.stats.confirms) >= TOTAL, deadline, "not confirmed", query)
    query.stop()


def _check_sink(spark: Any, sink: Path) -> int:
    counts = Counter(sink_payloads(sink, spark))
    assert set(counts) == {f"x{i:05d}".encode() for i in range(TOTAL)}  # none lost
    return sum(n - 1 for n in counts.values())


@pytest.mark.spark
def test_consumers_in_executors_survive_a_query_restart(
    spark: Any, bmq_broker_url: str, bmq_sim: Any, tmp_path: Path
) -> None:
    queue = fresh_queue()
    _write(spark, bmq_broker_url, queue)
    sessions_before = bmq_sim.call(lambda b: b.stats.sessions)
    deadline = time.monotonic() + 240
    query = start_query(lambda: _stream(spark, bmq_broker_url, queue, tmp_path))
    sink = tmp_path / "sink"
    _wait(lambda: len(sink_payloads(sink, spark)) >= TOTAL // 3, deadline, "no progress", query)
    # The driver probes once; each partition's consumer is a session of its own, in a worker.
    assert bmq_sim.call(lambda b: b.stats.sessions) - sessions_before >= 1 + PARTITIONS
    query.stop()  # the old run's consumers hold their batches until they expire: redelivered
    assert len(set(sink_payloads(sink, spark))) < TOTAL

    query = start_query(lambda: _stream(spark, bmq_broker_url, queue, tmp_path))
    _drain(spark, bmq_sim, queue, sink, query, deadline)
    duplicates = _check_sink(spark, sink)
    redelivered = bmq_sim.call(lambda b: b.stats.redelivered)
    print(f"executors, restart: {duplicates} duplicates, {redelivered} redelivered")
    # At-least-once: a message is in the sink twice only if the broker delivered it twice (its
    # consumer closed before confirming it: the run stopped or the consumer expired).
    assert duplicates <= redelivered, (duplicates, redelivered)
    assert read_all(spark, bmq_broker_url, queue, max_messages=10, confirm=False).count() == 0


def _consumer_processes(broker_port: int) -> list[int]:
    """Processes of this test's Spark (children of its Python worker daemon) with a TCP
    connection to the broker: the workers that hold consumer sessions."""
    wanted = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[2].rsplit(":", 1)[1], 16) == broker_port:
                wanted.add(fields[9])  # the socket's inode
    daemons = {
        pid
        for pid in os.listdir("/proc")
        if pid.isdigit() and b"pyspark.daemon" in _read(f"/proc/{pid}/cmdline")
    }
    found = []
    for pid in daemons:
        parent = _read(f"/proc/{pid}/stat").rsplit(b")", 1)[-1].split()[1].decode()
        if parent not in daemons:
            continue  # the daemon itself
        try:
            links = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        except OSError:
            continue
        if any(link.startswith("socket:[") and link[8:-1] in wanted for link in links):
            found.append(int(pid))
    return found


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError:
        return b""


@pytest.mark.spark
@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="finds workers through /proc")
def test_consumers_in_executors_survive_killed_workers(
    spark: Any, bmq_broker_url: str, bmq_sim: Any, tmp_path: Path
) -> None:
    queue = fresh_queue()
    _write(spark, bmq_broker_url, queue)
    port = int(bmq_broker_url.rsplit(":", 1)[1])
    deadline = time.monotonic() + 240
    query = start_query(lambda: _stream(spark, bmq_broker_url, queue, tmp_path))
    sink = tmp_path / "sink"
    _wait(lambda: len(sink_payloads(sink, spark)) >= TOTAL // 4, deadline, "no progress", query)
    victims = _consumer_processes(port)
    assert victims, "no Spark Python worker holds a consumer session"
    for pid in victims:  # executor loss / worker restart: the sessions die without a word
        os.kill(pid, signal.SIGKILL)
    print(f"killed {len(victims)} Python workers holding consumers")
    # A worker killed during a task fails the batch (local mode: the query); restarting from
    # the checkpoint re-runs it with new consumers. An idle one is just replaced by Spark.
    for _ in range(3):
        try:
            _wait(lambda: len(set(sink_payloads(sink, spark))) >= TOTAL, deadline, "lost", query)
            break
        except AssertionError:
            if query.exception() is None:
                raise
            print("query failed after the kill; restarting from its checkpoint")
            query.stop()
            query = start_query(lambda: _stream(spark, bmq_broker_url, queue, tmp_path))
    _drain(spark, bmq_sim, queue, sink, query, deadline)
    duplicates = _check_sink(spark, sink)
    redelivered = bmq_sim.call(lambda b: b.stats.redelivered)
    print(f"executors, killed workers: {duplicates} duplicates, {redelivered} redelivered")
    assert duplicates <= redelivered, (duplicates, redelivered)
    assert read_all(spark, bmq_broker_url, queue, max_messages=10, confirm=False).count() == 0


@pytest.mark.spark
def test_a_micro_batch_read_twice_on_spark_loses_nothing(
    spark: Any, bmq_broker_url: str, bmq_sim: Any, tmp_path: Path
) -> None:
    """A foreachBatch that uses its micro-batch twice makes Spark read the batch's slice twice,
    attempt 0 both times, as a stage re-run after lost shuffle output does, in whichever of the
    two Python workers is idle. The second read returns the same rows (from the reading
    worker's memory, or the rows it saved for the other worker), every message reaches the sink
    and is confirmed, and a message comes twice only if the broker delivered it twice."""
    queue = fresh_queue()
    _write(spark, bmq_broker_url, queue)
    reads: list[tuple[list[bytes], list[bytes]]] = []
    firsts: list[list[bytes]] = []
    seen: set[bytes] = set()

    def each(frame: Any, batch_id: int) -> None:
        first = sorted(bytes(r.payload) for r in frame.collect())
        second = sorted(bytes(r.payload) for r in frame.collect())
        seen.update(first + second)
        firsts.append(first)
        reads.append((first, second))

    def make() -> Any:
        return (
            spark.readStream.format("blazingmq")
            .option("broker", bmq_broker_url)
            .option("queue", queue)
            .option("consumers", "executors")
            .option("numPartitions", "1")
            .option("maxMessagesPerBatch", str(PER_BATCH))
            .option("idleTimeoutMs", "300")
            .option("consumerIdleTimeoutMs", "3000")
            .load()
            .select("payload")
            .writeStream.foreachBatch(each)
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(processingTime="200 milliseconds")
            .start()
        )

    deadline = time.monotonic() + 240
    query = start_query(make)
    _wait(lambda: len(seen) >= TOTAL, deadline, "messages lost", query)
    _wait(lambda: _stats(bmq_sim)[0] >= TOTAL, deadline, "not confirmed", query)
    query.stop()
    assert seen == {f"x{i:05d}".encode() for i in range(TOTAL)}
    assert all(a == b for a, b in reads)  # the second read: the same rows
    assert any(a for a, _ in reads)  # some batch with messages was read twice
    duplicates = sum(len(a) for a in firsts) - TOTAL
    redelivered = _stats(bmq_sim)[1]
    print(f"read twice: {len(reads)} batches, {duplicates} duplicates, {redelivered} redelivered")
    assert duplicates <= redelivered  # only what an expired consumer handed back comes again
    assert read_all(spark, bmq_broker_url, queue, max_messages=10, confirm=False).count() == 0


@pytest.mark.spark
def test_available_now_is_refused(spark: Any, bmq_broker_url: str, tmp_path: Path) -> None:
    query = start_query(
        lambda: spark.readStream.format("blazingmq")
        .option("broker", bmq_broker_url)
        .option("queue", fresh_queue())
        .option("consumers", "executors")
        .load()
        .writeStream.format("parquet")
        .option("path", str(tmp_path / "sink"))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(Exception) as info:  # Spark wraps the source's error
        query.awaitTermination(120)
    assert "UsageError: Trigger.AvailableNow needs consumers=driver" in str(info.value)


def test_consumers_option() -> None:
    from pybmq.errors import UsageError
    from pybmq.spark.options import StreamReadOptions

    base = {"queue": "bmq://d/q"}
    assert not StreamReadOptions.parse(base).in_executors
    options = StreamReadOptions.parse({**base, "consumers": "Executors"})
    assert options.in_executors and options.consumer_idle_timeout == 60.0
    with pytest.raises(UsageError, match="must be driver or executors"):
        StreamReadOptions.parse({**base, "consumers": "workers"})


def test_the_attempt_number_comes_from_the_task_context() -> None:
    from pybmq.spark.executors import _attempt_number
    from pyspark import TaskContext

    assert _attempt_number() == 0  # outside a task
    context = TaskContext._getOrCreate()  # what a Python worker sets up for each task
    try:
        context._attemptNumber = 2
        assert _attempt_number() == 2
    finally:
        TaskContext._setTaskContext(None)
