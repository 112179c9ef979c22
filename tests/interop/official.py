"""Run the official ``blazingmq`` SDK as a peer in a subprocess, bounded in time.

``start_official(mode, job)`` launches ``official_peer.py`` (next to this file) with the JSON job on
stdin and collects its ``@@{json}`` report lines as they arrive, so a test can wait for the peer
to be ``ready`` (queue open) before starting the other side. Every wait is bounded; on timeout the
peer is killed and the failure message carries everything it reported and its stderr tail.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PEER = Path(__file__).with_name("official_peer.py")
MARK = "@@"


@dataclass
class PeerResult:
    mode: str
    returncode: int | None
    reports: list[dict[str, Any]]
    stderr: str

    def of(self, event: str) -> list[dict[str, Any]]:
        return [r for r in self.reports if r.get("event") == event]

    def describe(self) -> str:
        tail = "\n".join(self.stderr.splitlines()[-15:])
        return f"official {self.mode}: rc={self.returncode} reports={self.reports!r}\nstderr tail:\n{tail}"


@dataclass
class OfficialPeer:
    """A running official-SDK peer process."""

    mode: str
    process: subprocess.Popen[str]
    _lines: queue.Queue[dict[str, Any] | None] = field(default_factory=queue.Queue)
    reports: list[dict[str, Any]] = field(default_factory=list)
    _stderr: list[str] = field(default_factory=list)

    def _pump_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith(MARK):
                self._lines.put(json.loads(line[len(MARK) :]))
        self._lines.put(None)

    def _pump_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self._stderr.append(line)

    def wait_for(self, event: str, timeout: float = 30.0) -> dict[str, Any]:
        """Block until the peer reports ``event``; fail (killing it) if it doesn't in time."""
        for seen in self.reports:
            if seen.get("event") == event:
                return seen
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                item = self._lines.get(timeout=max(remaining, 0.0))
            except queue.Empty:
                self.kill()
                raise AssertionError(
                    f"no {event!r} within {timeout}s\n{self.result().describe()}"
                ) from None
            if item is None:
                self._lines.put(None)
                raise AssertionError(f"peer ended before {event!r}\n{self.result().describe()}")
            self.reports.append(item)
            if item.get("event") == event:
                return item
            if item.get("event") == "error":
                raise AssertionError(f"peer failed\n{self.result().describe()}")

    def finish(self, timeout: float = 60.0) -> PeerResult:
        """Wait for the peer to exit (killing it after ``timeout``) and return what it reported."""
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"official {self.mode} did not exit within {timeout}s\n{self.result().describe()}"
            ) from None
        self._drain()
        return self.result()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self._drain()

    def _drain(self) -> None:
        while True:
            try:
                item = self._lines.get(timeout=2.0)
            except queue.Empty:
                return
            if item is None:
                self._lines.put(None)
                return
            self.reports.append(item)

    def result(self) -> PeerResult:
        return PeerResult(self.mode, self.process.poll(), list(self.reports), "".join(self._stderr))


def start_official(mode: str, job: dict[str, Any]) -> OfficialPeer:
    process = subprocess.Popen(
        [sys.executable, str(PEER), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None
    process.stdin.write(json.dumps(job))
    process.stdin.close()
    peer = OfficialPeer(mode, process)
    threading.Thread(target=peer._pump_stdout, daemon=True).start()
    threading.Thread(target=peer._pump_stderr, daemon=True).start()
    return peer


def run_official(mode: str, job: dict[str, Any], timeout: float = 60.0) -> PeerResult:
    """Run a peer to completion; the result's ``reports`` hold every ``@@`` line it printed."""
    return start_official(mode, job).finish(timeout)
