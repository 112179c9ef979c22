"""Where a ``pybmq.compat`` message's CPU time goes: per thread and in the garbage collector.

``python -m bench.compat_threads [post|consume] [count] [rounds]`` runs the shape of the official
benchmark programs (tests/interop/official_peer.py: ``post`` with its own ``on_ack`` closure per
message, first post to last ACK; ``on_message`` confirming each message, first to last) in THIS
process against a ``pybmq sim`` of its own, and prints for each round the rate, each thread's CPU
time per message (``pthread_getcpuclockid``: the caller's thread, ``pybmq-compat-io`` and
``pybmq-compat-callbacks``), their sum, and the time spent in garbage collections (``gc.callbacks``,
per generation; a collection runs on whichever thread allocated, so it is inside those figures).
The CPU figures move with the machine's load less than rates do, but they do move: compare runs
made at the same time. Not part of ``make bench`` (nothing here is a ratio to a reference).
"""

from __future__ import annotations

import functools
import gc
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pybmq.compat as blazingmq

from bench.common import sim_process

PAYLOAD = b"x" * 100


class GcClock:
    """Wall time inside garbage collections, per generation (the GIL is held throughout)."""

    def __init__(self) -> None:
        self.seconds = [0.0, 0.0, 0.0]
        self.count = [0, 0, 0]
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.seconds[info["generation"]] += time.perf_counter() - self._start
            self.count[info["generation"]] += 1

    def reset(self) -> None:
        self.seconds, self.count = [0.0, 0.0, 0.0], [0, 0, 0]


def thread_clocks() -> dict[str, float]:
    """CPU seconds of every live thread of this process, by name."""
    clocks = {}
    for thread in threading.enumerate():
        if thread.ident is not None:
            try:
                clock = time.pthread_getcpuclockid(thread.ident)
                clocks[thread.name] = time.clock_gettime(clock)
            except OSError:  # it ended meanwhile
                continue
    return clocks


def post_round(url: str, queue: str, count: int, measure: Callable[[], None]) -> float:
    """official_peer.bench_post's loop; ``measure`` is called at the start and at the end."""
    sent_at = [0.0] * count
    latencies: list[float] = []
    done = threading.Event()
    lock = threading.Lock()

    def make_on_ack(index: int) -> Callable[[blazingmq.Ack], None]:
        def on_ack(ack: blazingmq.Ack) -> None:
            now = time.perf_counter()
            with lock:
                latencies.append(now - sent_at[index])
                if len(latencies) == count:
                    done.set()

        return on_ack

    session = blazingmq.Session(lambda event: None, broker=url)
    try:
        session.open_queue(queue, write=True)
        measure()
        start = time.perf_counter()
        for i in range(count):
            sent_at[i] = time.perf_counter()
            session.post(queue, PAYLOAD, on_ack=make_on_ack(i))
        if not done.wait(120):
            raise RuntimeError(f"only {len(latencies)} of {count} ACKs")
        elapsed = time.perf_counter() - start
        measure()
        session.close_queue(queue)
    finally:
        session.stop()
    return count / elapsed


def consume_round(url: str, queue: str, count: int, measure: Callable[[], None]) -> float:
    """official_peer.bench_consume's loop, after filling ``queue`` (posts without on_ack)."""
    filler = blazingmq.Session(lambda event: None, broker=url)
    try:
        filler.open_queue(queue, write=True)
        for _ in range(count):
            filler.post(queue, PAYLOAD)
        filler.close_queue(queue)
    finally:
        filler.stop()
    times: list[float] = []
    done = threading.Event()
    lock = threading.Lock()

    def on_message(message: blazingmq.Message, handle: blazingmq.MessageHandle) -> None:
        handle.confirm()
        with lock:
            times.append(time.perf_counter())
            if len(times) == count:
                done.set()

    session = blazingmq.Session(lambda event: None, on_message=on_message, broker=url)
    try:
        measure()
        session.open_queue(queue, read=True)
        if not done.wait(120):
            raise RuntimeError(f"only {len(times)} of {count} messages")
        measure()
        session.close_queue(queue)
    finally:
        session.stop()
    return (count - 1) / (times[-1] - times[0])


def _mark(clock: GcClock, marks: list[dict[str, float]]) -> None:
    """The start (GC clock reset) or the end of a measured stretch."""
    if not marks:
        clock.reset()
    marks.append(thread_clocks())


def main(argv: list[str]) -> int:
    mode = argv[0] if argv else "post"
    count = int(argv[1]) if len(argv) > 1 else 50_000
    rounds = int(argv[2]) if len(argv) > 2 else 3
    run_round = {"post": post_round, "consume": consume_round}[mode]
    clock = GcClock()
    gc.callbacks.append(clock)
    try:
        with sim_process() as url:
            for n in range(rounds):
                marks: list[dict[str, float]] = []
                queue = f"bmq://bmq.test.mem.priority/compat-threads-{mode}-{n}"
                rate = run_round(url, queue, count, functools.partial(_mark, clock, marks))
                before, after = marks
                per = {
                    name: (after[name] - before.get(name, 0.0)) / count * 1e6
                    for name in after
                    if name in before or name.startswith("pybmq-compat")
                }
                gc_us = [s / count * 1e6 for s in clock.seconds]
                threads = "  ".join(f"{name} {us:.2f}" for name, us in per.items())
                print(
                    f"{mode} round {n}: {rate:,.0f} msgs/s; CPU µs/msg: {threads}"
                    f"  (sum {sum(per.values()):.2f}); of which GC {sum(gc_us):.2f}"
                    f" (gen0/1/2 {gc_us[0]:.2f}/{gc_us[1]:.2f}/{gc_us[2]:.2f},"
                    f" {sum(clock.count)} collections)"
                )
    finally:
        gc.callbacks.remove(clock)
    with open("/proc/loadavg") as loadavg:
        print("load average:", " ".join(loadavg.read().split()[:3]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
