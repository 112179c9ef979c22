"""A real BlazingMQ broker (``bmqbrkr``) as a child process, for tests that must meet the real thing.

    with RealBroker("/opt/bmq/bin/bmqbrkr.tsk") as broker:   # or a launcher script taking CONFIG_DIR
        run_my_producer(broker=broker.url)                   # tcp://127.0.0.1:<ephemeral port>
        broker.kill(); broker.start()                        # a crash, then recovery from storage

The configuration is written by ``pybmq.testing.broker_config`` into a temporary folder (or the one
given) that also holds the broker's logs and storage. With ``tls=True`` (a broker built with TLS
support: ``$BMQ_BROKER_TLS_BIN``) a test CA and a certificate for localhost and 127.0.0.1 are
made in that folder and the broker listens for TLS on a second port:

    with RealBroker(broker_executable(tls=True), tls=True) as broker:
        SessionOptions(tls_ca=str(broker.tls_ca))  # for broker.tls_url; broker.url stays plain
 Starting waits, within a bound, until the
broker says it started and accepts connections; if it does not, ``BrokerStartError`` names its
console output and log folder.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import os
import random
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

from pybmq.errors import PybmqError, UsageError
from pybmq.testing.broker_config import BrokerSettings, TlsListener, write_config_dir
from pybmq.testing.certificates import TestCertificates

__all__ = [
    "BROKER_BIN_ENV",
    "BROKER_TLS_BIN_ENV",
    "LISTEN_FAILED",
    "PICK_FROM",
    "PORT_ATTEMPTS",
    "STARTED_LINE",
    "BrokerStartError",
    "RealBroker",
    "broker_executable",
    "free_port",
]

BROKER_BIN_ENV = "BMQ_BROKER_BIN"
# A broker built with TLS support (upstream pull request #1600), for the TLS mode.
BROKER_TLS_BIN_ENV = "BMQ_BROKER_TLS_BIN"
STARTED_LINE = b"STARTED bmqbrkr"
# What the broker logs when its port was taken meanwhile (another test's process, under
# pytest-xdist): a broker that picked its own port picks another one and starts again.
LISTEN_FAILED = b"TCP_LISTEN_FAILED"
PORT_ATTEMPTS = 3


class BrokerStartError(PybmqError):
    """The broker executable did not start, or did not listen, within the bound."""


def broker_executable(tls: bool = False) -> str | None:
    """The broker named by ``$BMQ_BROKER_BIN`` (``tls``: the TLS-capable one of
    ``$BMQ_BROKER_TLS_BIN``), or None when it is unset or empty."""
    return os.environ.get(BROKER_TLS_BIN_ENV if tls else BROKER_BIN_ENV) or None


# Brokers still running when the interpreter exits (an interrupted test run) are killed then, and
# their temporary folders removed: they run in their own session, so a Ctrl-C does not reach them.
_RUNNING: weakref.WeakSet[RealBroker] = weakref.WeakSet()


@atexit.register
def _kill_leftovers() -> None:
    for broker in list(_RUNNING):
        broker.close(kill=True)


# Where free_port picks: from here up to the kernel's ephemeral range, from which outgoing
# connections take their source ports (one could take a port picked there before its broker
# listens, or while it restarts on it); several processes pick at once under pytest-xdist.
PICK_FROM = 20000
_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def _ephemeral_start() -> int:
    try:
        return int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default (macOS starts at 49152)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now: a random one below the kernel's
    ephemeral range (no outgoing connection takes it), else the kernel's pick."""
    end = _ephemeral_start()
    picks = random.Random()
    for _ in range(100 if end > PICK_FROM else 0):
        port = picks.randrange(PICK_FROM, end)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        kernels: int = probe.getsockname()[1]
        return kernels


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
        tls: bool | TestCertificates | TlsListener = False,
        **settings: Any,
    ) -> None:
        """``settings``: fields of ``BrokerSettings`` (``basic_users``, ``allow_anonymous``,
        ``queue_messages``, ``queue_bytes``, ``heartbeat_interval_ms``, ...). ``tls``: True
        for a TLS listener with certificates made here, or the certificates to serve (an
        expired one, say), or the whole ``TlsListener``."""
        self.executable = str(executable)
        self._own_folder = folder is None
        self._own_port = port is None
        root = Path(tempfile.mkdtemp(prefix="pybmq-broker-")) if folder is None else Path(folder)
        if settings.get("basic_users") is None:
            settings.pop("basic_users", None)
        if tls is not False and not isinstance(tls, TlsListener):
            certificates = TestCertificates.make(root / "certs") if tls is True else tls
            assert isinstance(certificates, TestCertificates)
            tls = TlsListener(
                free_port(), certificates.ca, certificates.certificate, certificates.key
            )
        if isinstance(tls, TlsListener):
            settings["tls"] = tls
        self.settings = BrokerSettings(port=port or free_port(), folder=root, **settings)
        self.config_dir = write_config_dir(self.settings)
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.console = root / "console.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._console_offset = 0  # where this start's console output begins

    @property
    def url(self) -> str:
        """``tcp://127.0.0.1:<port>``, for clients."""
        return f"tcp://127.0.0.1:{self.settings.port}"

    @property
    def port(self) -> int:
        """The TCP port it listens on (the same across restarts)."""
        return self.settings.port

    @property
    def tls_port(self) -> int:
        """The TLS listener's port (UsageError without one)."""
        return self._tls().port

    @property
    def tls_url(self) -> str:
        """``tcp://127.0.0.1:<tls port>``, for clients with TLS options (``tls_ca``)."""
        return f"tcp://127.0.0.1:{self.tls_port}"

    @property
    def tls_ca(self) -> Path:
        """The PEM file of the CA that signed the broker's certificate (a client's ``tls_ca``)."""
        return self._tls().ca

    def _tls(self) -> TlsListener:
        if self.settings.tls is None:
            raise UsageError("this broker has no TLS listener (RealBroker(..., tls=True))")
        return self.settings.tls

    @property
    def folder(self) -> Path:
        """Its folder: configuration, logs and storage."""
        return self.settings.folder

    @property
    def pid(self) -> int | None:
        """The running process's id; None when it is not running."""
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    @property
    def running(self) -> bool:
        """True while the process runs."""
        return self._process is not None and self._process.poll() is None

    @property
    def exit_status(self) -> int | None:
        """The last run's exit status (negative: the signal that ended it); None while it runs
        or before its first start."""
        return None if self._process is None else self._process.poll()

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

    def start(self, *, wait: bool = True) -> RealBroker:
        """Run the broker and (with ``wait``) wait until it accepts connections on its port.
        ``wait=False`` only launches it (a cluster launches every node, then waits for each):
        ``wait_started()`` does the rest. Waiting, a port this object picked itself that
        another process took meanwhile is picked again (a few times); a port given to it is
        used or fails."""
        if not wait:
            return self._launch()
        for attempt in range(PORT_ATTEMPTS if self._own_port else 1):
            try:
                return self._launch().wait_started()
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
            out.seek(self._console_offset)
            return LISTEN_FAILED in out.read()

    def _launch(self) -> RealBroker:
        if self.running:
            return self
        self._console_offset = self.console.stat().st_size if self.console.exists() else 0
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
        return self

    def wait_started(self, timeout: float | None = None) -> RealBroker:
        """Wait, at most ``timeout`` (default ``start_timeout``) seconds, until the launched
        broker says it started and accepts connections; BrokerStartError (naming its console
        output and logs) if it exits or does not, and then it is killed."""
        process = self._process
        if process is None:
            raise self._failure("was not launched")
        bound = self.start_timeout if timeout is None else timeout
        deadline = time.monotonic() + bound
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise self._failure(f"exited with status {process.returncode} while starting")
            with self.console.open("rb") as out:
                out.seek(self._console_offset)
                started = STARTED_LINE in out.read()
            tls = self.settings.tls
            if started and _accepts(self.port) and (tls is None or _accepts(tls.port)):
                return self
            time.sleep(0.05)
        self.kill()
        raise self._failure(f"did not listen on 127.0.0.1:{self.port} within {bound:g} s")

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
