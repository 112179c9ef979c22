"""``pybmq sim``'s bounds as flags: a connection over ``--max-connections`` is closed at once."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import time


def test_a_connection_over_the_cap_is_closed() -> None:
    sim = subprocess.Popen(
        [sys.executable, "-m", "pybmq.cli", "sim", "--port", "0", "--max-connections", "1",
         "--tls-handshake-timeout-ms", "500"],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert sim.stdout is not None
        url = sim.stdout.readline().split()[-1]
        host, port = url.removeprefix("tcp://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as first:
            time.sleep(0.2)  # the simulator counts it
            with socket.create_connection((host, int(port)), timeout=10) as second:
                second.settimeout(10)
                assert second.recv(1) == b""  # closed by the simulator, no answer
            first.settimeout(0.3)
            with contextlib.suppress(TimeoutError):  # still open: nothing to read yet
                assert first.recv(1) != b""
    finally:
        sim.send_signal(signal.SIGTERM)
        sim.wait(20)
