"""Running ``pybmq`` as a subprocess, as the CLI tests do: one command to completion, or a tap or
a simulator left running until the test stops it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def run_pybmq(
    *argv: str, broker: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``pybmq ARGV`` to completion (``broker`` through ``$BMQ_BROKER_URI``), output as text."""
    env = {**os.environ, **({"BMQ_BROKER_URI": broker} if broker else {})}
    return subprocess.run(
        [sys.executable, "-m", "pybmq.cli", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


def run_pybmq_bytes(
    broker: str, *argv: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``pybmq ARGV`` to completion against ``broker`` (``$BMQ_BROKER_URI``), ``stdin`` fed in,
    output as bytes (for content that need not be text)."""
    return subprocess.run(
        [sys.executable, "-m", "pybmq.cli", *argv],
        input=stdin,
        capture_output=True,
        timeout=120,
        env={**os.environ, "BMQ_BROKER_URI": broker},
        check=False,
    )


def signal_mid_run(
    command: str, queue: str, broker: str, sig: signal.Signals, settle: float
) -> subprocess.CompletedProcess[str]:
    """``pybmq COMMAND QUEUE --json`` (a post that would run for ever), sent ``sig`` once the
    queue is open and ``settle`` seconds have passed; its exit as a completed process."""
    extra = ["--count", "10000000", "--window", "1000"] if command == "post" else []
    argv = [sys.executable, "-m", "pybmq.cli", command, queue, "--json", "-vv", *extra]
    process = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "BMQ_BROKER_URI": broker},
    )
    assert process.stderr is not None
    deadline = time.monotonic() + 60
    for line in process.stderr:  # the client's DEBUG log says when the queue is open
        if "opened " + queue in line or time.monotonic() > deadline:
            break
    time.sleep(settle)
    process.send_signal(sig)
    out, err = process.communicate(timeout=60)
    return subprocess.CompletedProcess(argv, process.returncode, out, err)


@contextmanager
def running_sim(*argv: str) -> Iterator[str]:
    """``pybmq sim --port 0 ARGV`` as a user starts it, for the block; yields the line it prints
    once it listens (``sim_url`` reads its URL), and terminates it after."""
    process = subprocess.Popen(
        [sys.executable, "-m", "pybmq.cli", "sim", "--port", "0", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert "listening on" in line, line
        yield line
    finally:
        process.terminate()
        process.communicate(timeout=30)


def sim_url(line: str) -> str:
    """The first ``tcp://host:port`` of a line ``pybmq sim`` printed."""
    found = re.search(r"tcp://[0-9.]+:\d+", line)
    assert found, line
    return found.group()


class Tap:
    """``pybmq tap`` to ``broker`` recording into ``capture``, listening on a free port."""

    def __init__(self, broker: str, capture: Path, *extra: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pybmq.cli", "tap", "--listen", "127.0.0.1:0",
             "--broker", broker, "--out", str(capture), *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        first = self.process.stdout.readline()
        if "listening on" not in first:
            self.process.kill()
            raise AssertionError(self.process.communicate(timeout=30)[1])
        self.url = first.split()[4]

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self, sig: signal.Signals = signal.SIGINT) -> str:
        """``sig`` (Ctrl-C's by default); returns what the tap printed (its closing counts) and
        keeps its exit status and stderr (``returncode``, ``stderr``)."""
        self.process.send_signal(sig)
        out, self.stderr = self.process.communicate(timeout=60)
        self.returncode = self.process.returncode
        return out
