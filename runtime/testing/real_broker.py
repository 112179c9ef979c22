"""A real BlazingMQ broker (``bmqbrkr``) as a child process, for tests that must meet the real thing.

    with RealBroker("/opt/bmq/bin/bmqbrkr.tsk") as broker:   # or a launcher script taking CONFIG_DIR
        run_my_producer(broker=broker.url)                   # tcp://127.0.0.1:<ephemeral port>
        broker.kill(); broker.start()                        # a crash, then recovery from storage

The configuration is written by ``pybmq.testing.broker_config`` into a temporary folder (or the one
given) that also holds the broker's logs and storage. Starting waits, within a bound, until the
broker says it started and accepts connections; if it does not, ``BrokerStartError`` names its
console output and log folder.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import weakref
from pathlib import Path
from types import TracebackType
from typing import Any

from pybmq.errors import PybmqError
from pybmq.testing.broker_config import BrokerSettings, write_config_dir

__all__ = [
    "BROKER_BIN_ENV",
    "LISTEN_FAILED",
    "PORT_ATTEMPTS",
    "STARTED_LINE",
    "BrokerStartError",
    "RealBroker",
    "broker_executable",
    "free_port",
]

BROKER_BIN_ENV = "BMQ_BROKER_BIN"
STARTED_LINE = b"STARTED bmqbrkr"
# What the broker logs when its port was taken meanwhile (another test's process, under
# pytest-xdist): a broker that picked its own port picks another one and starts again.
LISTEN_FAILED = b"TCP_LISTEN_FAILED"
PORT_ATTEMPTS = 3


class BrokerStartError(PybmqError):
    """The broker executable did not start, or did not listen, within the bound."""


def broker_executable() -> str | None:
    """The broker named by ``$BMQ_BROKER_BIN``, or None when it is unset or empty."""
    return os.environ.get(BROKER_BIN_ENV) or None


# Brokers still running when the interpreter exits (an interrupted test run) are killed then, and
# their temporary folders removed: they run in their own session, so a Ctrl-C does not reach them.
_RUNNING: weakref.WeakSet[RealBroker] = weakref.WeakSet()


@atexit.register
def _kill_leftovers() -> None:
    for broker in list(_RUNNING):
        broker.close(kill=True)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _accepts(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


class RealBroker:
    """One broker process on 127.0.0.1; ``start``/``stop``/``kill`` may repeat (same port, same
    storage), so a test can crash it and bring it back."""

    def __init__(
        self,
        executable: str | os.PathLike[str],
        folder: str | os.PathLike[str] | None = None,
        *,
        port: int | None = None,
        start_timeout: float = 60.0,
        stop_timeout: float = 15.0,
        **settings: Any,
    ) -> None:
        """``settings``: fields of ``BrokerSettings`` (``basic_users``, ``allow_anonymous``,
        ``queue_messages``, ``queue_bytes``, ``heartbeat_interval_ms``, ...)."""
        self.executable = str(executable)
        self._own_folder = folder is None
        self._own_port = port is None
        root = Path(tempfile.mkdtemp(prefix="pybmq-broker-")) if folder is None else Path(folder)
        if settings.get("basic_users") is None:
            settings.pop("basic_users", None)
        self.settings = BrokerSettings(port=port or free_port(), folder=root, **settings)
        self.config_dir = write_config_dir(self.settings)
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.console = root / "console.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._offset = 0  # where the console output of the latest start begins

    @property
    def url(self) -> str:
        return f"tcp://127.0.0.1:{self.settings.port}"

    @property
    def port(self) -> int:
        return self.settings.port

    @property
    def folder(self) -> Path:
        return self.settings.folder

    @property
    def pid(self) -> int | None:
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def log_files(self) -> list[Path]:
        """The broker's own log files (newest last); the console output is ``console``."""
        return sorted(self.settings.logs.glob("logs.*[0-9]"), key=lambda p: p.stat().st_mtime)

    def _failure(self, why: str) -> BrokerStartError:
        tail = (
            self.console.read_bytes()[-2000:].decode(errors="replace")
            if self.console.exists()
            else ""
        )
        return BrokerStartError(
            f"broker {self.executable} {why}; console output: {self.console}, logs: "
            f"{self.settings.logs}\n{tail}"
        )

    def start(self) -> RealBroker:
        """Run the broker and wait until it accepts connections on its port. A port this object
        picked itself that another process took meanwhile is picked again (a few times); a port
        given to it is used or fails."""
        for attempt in range(PORT_ATTEMPTS if self._own_port else 1):
            try:
                return self._start_once()
            except BrokerStartError:
                if attempt + 1 == PORT_ATTEMPTS or not self._port_was_taken():
                    raise
                self.settings = dataclasses.replace(self.settings, port=free_port())
                self.config_dir = write_config_dir(self.settings)
        raise AssertionError("unreachable")  # pragma: no cover

    def _port_was_taken(self) -> bool:
        """Whether the last start failed because its port was taken (what it logged)."""
        if not self._own_port or not self.console.exists():
            return False
        with self.console.open("rb") as out:
            out.seek(self._offset)
            return LISTEN_FAILED in out.read()

    def _start_once(self) -> RealBroker:
        if self.running:
            return self
        offset = self._offset = self.console.stat().st_size if self.console.exists() else 0
        with self.console.open("ab") as out:
            try:
                self._process = subprocess.Popen(
                    [self.executable, str(self.config_dir)],
                    cwd=self.folder,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # a Ctrl-C of the test run is ours to forward
                )
            except OSError as exc:
                raise self._failure(f"could not be run ({exc})") from exc
        _RUNNING.add(self)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise self._failure(f"exited with status {self._process.returncode} while starting")
            with self.console.open("rb") as out:
                out.seek(offset)
                started = STARTED_LINE in out.read()
            if started and _accepts(self.port):
                return self
            time.sleep(0.05)
        self.kill()
        raise self._failure(
            f"did not listen on 127.0.0.1:{self.port} within {self.start_timeout} s"
        )

    def _signal(self, signum: int, timeout: float) -> bool:
        """Send ``signum`` and wait up to ``timeout`` for the exit; True if it exited."""
        process = self._process
        if process is None or process.poll() is not None:
            return True
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signum)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def stop(self) -> None:
        """A clean shutdown (SIGTERM); SIGKILL if it takes longer than ``stop_timeout``."""
        if not self._signal(signal.SIGTERM, self.stop_timeout):
            self.kill()

    def kill(self) -> None:
        """What a crash looks like: SIGKILL, no shutdown (file-backed queues survive it)."""
        self._signal(signal.SIGKILL, self.stop_timeout)

    def restart(self) -> RealBroker:
        """Stop cleanly and start again on the same port with the same storage."""
        self.stop()
        return self.start()

    def close(self, *, kill: bool = False) -> None:
        """Stop the broker (``kill``: SIGKILL, no shutdown) and remove the folder if this
        object made it."""
        if kill:
            self.kill()
        else:
            self.stop()
        if self._own_folder:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> RealBroker:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
