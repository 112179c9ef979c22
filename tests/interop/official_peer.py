"""A peer program driving the official ``blazingmq`` SDK, run in a subprocess by the interop tests.

Why a separate process: the official SDK is a C++ core behind a Python binding; a crash or hang
inside it (we have seen it segfault on a malformed broker response) must not take pytest down, and
its threads must not share a process with the simulator under test.

Usage: ``python official_peer.py MODE`` (produce, consume, bench-post, bench-latency, bench-consume)
with a JSON job on
stdin. Every line this program reports on stdout starts with ``@@`` followed by one JSON object.
Reports go through a private copy of stdout, and file descriptor 1 itself is pointed at stderr
before the SDK loads: the SDK's C++ threads write to stdout too, and a write of theirs without a
newline would otherwise glue onto one of our report lines.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

_REPORTS = os.fdopen(os.dup(1), "w", buffering=1)
sys.stdout.flush()
os.dup2(2, 1)

import blazingmq  # noqa: E402  (after the stdout redirection above, on purpose)

MARK = "@@"

PROPERTY_TYPES = {t.name: t for t in blazingmq.PropertyType}


def report(**fields: Any) -> None:
    _REPORTS.write(MARK + json.dumps(fields, sort_keys=True) + "\n")
    _REPORTS.flush()


def encode_value(kind: str, value: object) -> object:
    """JSON-safe form of a property value (bytes as hex)."""
    if isinstance(value, bytes):
        return value.hex()
    return value


def decode_value(kind: str, value: Any) -> object:
    if kind in ("BINARY", "CHAR"):
        return bytes.fromhex(value)
    return value


def session_kwargs(job: dict[str, Any]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"broker": job["broker"]}
    if job.get("compression") == "zlib":
        kwargs["message_compression_algorithm"] = blazingmq.CompressionAlgorithmType.ZLIB
    if job.get("request_timeout"):
        kwargs["timeout"] = float(job["request_timeout"])
    return kwargs


def on_session_event(event: object) -> None:
    report(event="session", what=type(event).__name__, text=str(event))


def produce(job: dict[str, Any]) -> int:
    """Open the queue for writing, post every message with an ACK callback, wait for all ACKs."""
    messages = job["messages"]
    done = threading.Event()
    acks: list[tuple[str, str]] = []
    lock = threading.Lock()

    def on_ack(ack: blazingmq.Ack) -> None:
        with lock:
            acks.append((ack.guid.hex() if ack.guid else "", ack.status.name))
            report(event="ack", guid=acks[-1][0], status=acks[-1][1])
            if len(acks) == len(messages):
                done.set()

    session = blazingmq.Session(on_session_event, **session_kwargs(job))
    try:
        session.open_queue(job["queue"], write=True)
        report(event="ready")
        for msg in messages:
            props = {
                name: decode_value(p["type"], p["value"])
                for name, p in msg.get("properties", {}).items()
            }
            overrides = {
                name: PROPERTY_TYPES[p["type"]] for name, p in msg.get("properties", {}).items()
            }
            session.post(
                job["queue"],
                bytes.fromhex(msg["payload"]),
                properties=props or None,
                property_type_overrides=overrides or None,
                on_ack=on_ack,
            )
        if messages and not done.wait(job.get("timeout", 20)):
            report(event="error", error=f"only {len(acks)} of {len(messages)} ACKs arrived")
        session.close_queue(job["queue"])
    finally:
        session.stop()
    report(event="done", acks=len(acks), success=sum(1 for _, s in acks if s == "SUCCESS"))
    return 0


def consume(job: dict[str, Any]) -> int:
    """Open the queue for reading, confirm every message, stop after ``count`` (or the timeout)."""
    count = int(job["count"])
    done = threading.Event()
    seen: list[str] = []
    lock = threading.Lock()

    def on_message(msg: blazingmq.Message, handle: blazingmq.MessageHandle) -> None:
        props = {
            name: {"type": msg.property_types[name].name, "value": encode_value("", value)}
            for name, value in msg.properties.items()
        }
        report(
            event="message",
            guid=msg.guid.hex(),
            queue=msg.queue_uri,
            payload=msg.data.hex(),
            properties=props,
        )
        if job.get("confirm", True):
            handle.confirm()
        with lock:
            seen.append(msg.guid.hex())
            if len(seen) >= count:
                done.set()

    options = blazingmq.QueueOptions(**job.get("queue_options", {}))
    session = blazingmq.Session(on_session_event, on_message=on_message, **session_kwargs(job))
    try:
        session.open_queue(job["queue"], read=True, options=options)
        report(event="ready")
        if count and not done.wait(job.get("timeout", 20)):
            report(event="error", error=f"only {len(seen)} of {count} messages arrived")
        time.sleep(job.get("linger", 0.0))
        session.close_queue(job["queue"])
    finally:
        session.stop()
    report(event="done", received=len(seen))
    return 0


def bench_post(job: dict[str, Any]) -> int:
    """Post ``count`` messages as fast as the SDK accepts them, each with an ACK callback.

    Reports the post->ACK rate (first post to last ACK) and the ACK latency percentiles.
    """
    count = int(job["count"])
    payload = b"x" * int(job.get("size", 100))
    sent_at = [0.0] * count
    latencies: list[float] = []
    done = threading.Event()
    lock = threading.Lock()
    failures = [0]

    def make_on_ack(index: int) -> Any:
        def on_ack(ack: blazingmq.Ack) -> None:
            now = time.perf_counter()
            with lock:
                latencies.append(now - sent_at[index])
                if ack.status is not blazingmq.AckStatus.SUCCESS:
                    failures[0] += 1
                if len(latencies) == count:
                    done.set()

        return on_ack

    session = blazingmq.Session(on_session_event, **session_kwargs(job))
    try:
        session.open_queue(job["queue"], write=True)
        start = time.perf_counter()
        for i in range(count):
            sent_at[i] = time.perf_counter()
            session.post(job["queue"], payload, on_ack=make_on_ack(i))
        finished = done.wait(job.get("timeout", 120))
        elapsed = time.perf_counter() - start
        session.close_queue(job["queue"])
    finally:
        session.stop()
    latencies.sort()
    report(
        event="bench",
        complete=finished,
        acks=len(latencies),
        failures=failures[0],
        seconds=elapsed,
        rate=len(latencies) / elapsed if elapsed else 0.0,
        p50=latencies[len(latencies) // 2] if latencies else None,
        p99=latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] if latencies else None,
    )
    return 0


def bench_latency(job: dict[str, Any]) -> int:
    """One post in flight at a time: the time from ``post`` to its ACK callback."""
    samples = int(job["count"])
    payload = b"x" * int(job.get("size", 100))
    acked = threading.Event()
    status: list[object] = []
    latencies: list[float] = []

    def on_ack(ack: blazingmq.Ack) -> None:
        status.append(ack.status)
        acked.set()

    session = blazingmq.Session(on_session_event, **session_kwargs(job))
    try:
        session.open_queue(job["queue"], write=True)
        for _ in range(samples):
            acked.clear()
            start = time.perf_counter()
            session.post(job["queue"], payload, on_ack=on_ack)
            if not acked.wait(job.get("timeout", 20)):
                break
            latencies.append(time.perf_counter() - start)
        session.close_queue(job["queue"])
    finally:
        session.stop()
    latencies.sort()
    report(
        event="bench",
        complete=len(latencies) == samples,
        failures=sum(1 for s in status if s is not blazingmq.AckStatus.SUCCESS),
        p50=latencies[len(latencies) // 2] if latencies else None,
        p99=latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] if latencies else None,
    )
    return 0


def bench_consume(job: dict[str, Any]) -> int:
    """Receive and confirm ``count`` messages; report the rate from first to last message."""
    count = int(job["count"])
    done = threading.Event()
    times: list[float] = []
    lock = threading.Lock()

    def on_message(msg: blazingmq.Message, handle: blazingmq.MessageHandle) -> None:
        handle.confirm()
        with lock:
            times.append(time.perf_counter())
            if len(times) == count:
                done.set()

    options = blazingmq.QueueOptions(**job.get("queue_options", {}))
    session = blazingmq.Session(on_session_event, on_message=on_message, **session_kwargs(job))
    try:
        session.open_queue(job["queue"], read=True, options=options)
        report(event="ready")
        finished = done.wait(job.get("timeout", 120))
        session.close_queue(job["queue"])
    finally:
        session.stop()
    elapsed = times[-1] - times[0] if len(times) > 1 else 0.0
    report(
        event="bench",
        complete=finished,
        received=len(times),
        seconds=elapsed,
        rate=(len(times) - 1) / elapsed if elapsed else 0.0,
    )
    return 0


MODES = {
    "produce": produce,
    "consume": consume,
    "bench-post": bench_post,
    "bench-latency": bench_latency,
    "bench-consume": bench_consume,
}


def main() -> int:
    job = json.loads(sys.stdin.read())
    try:
        return MODES[sys.argv[1]](job)
    except Exception as exc:  # report, then fail: the harness turns this into a test failure
        report(event="error", error=f"{type(exc).__name__}: {exc}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
