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


def test_a_worker_confirms_only_batches_before_the_one_it_reads(bmq_sim: Any) -> None:
    """The executor-side rule without Spark: batch b's task confirms batches < b of its run;
    an expired consumer hands what it held back to the queue."""
    from pybmq.spark.executors import Slice, _Registry
    from pybmq.spark.io import post_all
    from pybmq.spark.options import StreamReadOptions, WriteOptions

    queue = fresh_queue()
    target = {"broker": bmq_sim.url, "queue": queue}
    post_all(WriteOptions.parse(target), ((b"m%d" % i, None) for i in range(30)))
    options = StreamReadOptions.parse(
        {**target, "maxmessagesperbatch": "10", "idletimeoutms": "300"}
    )
    registry = _Registry()

    def run_task(run: str, batch: int) -> list[Any]:
        consumer = registry.acquire(Slice(run, 0, batch), options, lease=60.0)
        try:
            consumer.held[batch] = consumer.take(10, options.idle_timeout)
            return consumer.held[batch]
        finally:
            registry.release(consumer)

    assert len(run_task("r1", 1)) == 10
    time.sleep(0.3)
    assert _stats(bmq_sim) == (0, 0)  # batch 1 is not known to be committed yet
    assert len(run_task("r1", 2)) == 10  # planning batch 2 means batch 1 was committed
    _wait(lambda: _stats(bmq_sim)[0] == 10, time.monotonic() + 10, "batch 1 not confirmed")
    assert len(run_task("r2", 1)) == 10  # another run: its own consumer, r1's batch 2 untouched
    assert _stats(bmq_sim)[0] == 10
    assert registry.expire(time.monotonic() + 120) == 2  # both idle consumers stop
    _wait(lambda: _stats(bmq_sim)[1] >= 20, time.monotonic() + 10, "held messages not released")
    assert _stats(bmq_sim)[0] == 10


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


def test_a_retried_task_refuses_to_read() -> None:
    from pybmq.errors import UsageError
    from pybmq.spark.executors import _check_first_attempt
    from pyspark import TaskContext

    context = TaskContext._getOrCreate()  # what a Python worker sets up for each task
    try:
        context._attemptNumber = 0
        _check_first_attempt()
        context._attemptNumber = 1
        with pytest.raises(UsageError, match="was retried"):
            _check_first_attempt()
    finally:
        TaskContext._setTaskContext(None)
