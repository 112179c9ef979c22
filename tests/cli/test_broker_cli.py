"""``pybmq broker``: a real broker for the command line. Refusals name the flag (exit 2); a broker
that does not start, or exits by itself, ends the command with exit 3 and its console output;
with the real broker (``$BMQ_BROKER_BIN``), the printed URL takes ``post`` and ``consume``, and
Ctrl-C or SIGTERM stops it and removes its temporary folder, or keeps the one --dir named."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from pybmq.testing.brokers import NO_BROKER_REASON
from pybmq.testing.real_broker import BROKER_BIN_ENV, broker_executable

from tests.helpers.cli import run_pybmq

pytestmark = pytest.mark.timeout(180)

QUEUE = "bmq://bmq.test.mem.priority/from-the-broker-command"
# A stand-in for bmqbrkr: listens on the configured port, says it started, then exits.
FAKE_BROKER = """#!{python}
import json, pathlib, socket, sys, time
config = json.loads((pathlib.Path(sys.argv[1]) / "bmqbrkrcfg.json").read_text())
port = config["appConfig"]["networkInterfaces"]["tcpInterface"]["port"]
server = socket.create_server(("127.0.0.1", port))
print("STARTED bmqbrkr [pid: 1]", flush=True)
time.sleep({lifetime})
print("fake broker: gone", flush=True)
sys.exit(7)
"""


def env_without_broker() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != BROKER_BIN_ENV}


def broker_command(*argv: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pybmq.cli", "broker", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env if env is not None else os.environ.copy(),
    )


def fake_broker(tmp_path: Path, lifetime: float) -> Path:
    path = tmp_path / "fake-bmqbrkr"
    path.write_text(FAKE_BROKER.format(python=sys.executable, lifetime=lifetime))
    path.chmod(0o755)
    return path


def test_no_broker_executable_names_the_flag() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pybmq.cli", "broker"],
        capture_output=True,
        text=True,
        env=env_without_broker(),
        timeout=60,
    )
    assert result.returncode == 2
    assert f"--bin: no broker executable given, and ${BROKER_BIN_ENV} is not set" in result.stderr


def test_a_bin_that_cannot_run_and_a_busy_port_name_their_flags(tmp_path: Path) -> None:
    not_executable = tmp_path / "bmqbrkr"
    not_executable.write_text("")
    result = run_pybmq("broker", "--bin", str(not_executable))
    assert (
        result.returncode == 2 and "--bin" in result.stderr and "not an executable" in result.stderr
    )
    with socket.create_server(("127.0.0.1", 0)) as busy:
        taken = str(busy.getsockname()[1])
        result = run_pybmq("broker", "--bin", str(fake_broker(tmp_path, 60)), "--port", taken)
    assert result.returncode == 2 and f"--port {taken}: cannot listen there" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_broker_that_exits_by_itself_ends_the_command_with_its_output(tmp_path: Path) -> None:
    fake_broker(tmp_path, 1)
    relative = os.path.relpath(tmp_path / "fake-bmqbrkr")  # it runs in a folder of its own
    process = broker_command("--bin", relative, "--port", "0")
    out, err = process.communicate(timeout=60)
    assert process.returncode == 3, err
    assert re.match(r"pybmq broker listening on tcp://127\.0\.0\.1:\d+\n", out)
    assert "the broker exited by itself" in err and "fake broker: gone" in err
    never = tmp_path / "never-starts"
    never.write_text(f"#!{sys.executable}\nimport sys\nprint('no config for me')\nsys.exit(1)\n")
    never.chmod(0o755)
    result = run_pybmq("broker", "--bin", str(never), "--port", "0")
    assert result.returncode == 3 and "exited with status 1 while starting" in result.stderr
    assert "no config for me" in result.stderr and "Traceback" not in result.stderr


@contextmanager
def running(*argv: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    process = broker_command(*argv)
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        match = re.match(r"pybmq broker listening on (tcp://\S+)", first)
        assert match, first + (process.stderr.read() if process.stderr else "")
        yield process, match.group(1)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=60)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_the_real_broker_serves_the_cli_until_stopped(sig: signal.Signals, tmp_path: Path) -> None:
    if broker_executable() is None:
        pytest.skip(NO_BROKER_REASON)
    keep = sig == signal.SIGTERM  # one run keeps its folder (--dir), the other does not
    with running("--port", "0", *(["--dir", str(tmp_path)] if keep else [])) as (process, url):
        assert process.stdout is not None
        folder = Path(re.findall(r"logs and storage in (\S+)", process.stdout.readline())[0])
        assert (folder / "config" / "bmqbrkrcfg.json").exists()
        posted = run_pybmq("post", QUEUE, "hello", "--broker", url)
        assert posted.returncode == 0, posted.stdout + posted.stderr
        consumed = run_pybmq("consume", QUEUE, "--print", "--count", "1", "--broker", url)
        assert consumed.returncode == 0 and consumed.stdout.startswith("hello")
        process.send_signal(sig)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert f"stopping ({sig.name})" in out and "Traceback" not in err
    assert folder.exists() == keep


@pytest.mark.cluster
def test_a_cluster_for_the_command_line(tmp_path: Path) -> None:
    """``--cluster 3``: the proxy's URL first, then each node's; a message goes through the
    proxy and comes back from a node; Ctrl-C stops every broker."""
    if broker_executable() is None:
        pytest.skip(NO_BROKER_REASON)
    queue = "bmq://bmq.test.persistent.priority/from-the-cluster-command"
    with running("--port", "0", "--cluster", "3", "--dir", str(tmp_path)) as (process, url):
        assert process.stdout is not None
        nodes = [process.stdout.readline() for _ in range(3)]
        node_urls = [re.findall(r"cluster node (tcp://\S+)", line)[0] for line in nodes]
        assert len(set(node_urls)) == 3 and url not in node_urls
        posted = run_pybmq("post", queue, "through the proxy", "--broker", url)
        assert posted.returncode == 0, posted.stdout + posted.stderr
        consumed = run_pybmq("consume", queue, "--print", "--count", "1", "--broker", node_urls[0])
        assert consumed.returncode == 0 and consumed.stdout.startswith("through the proxy")
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert "Traceback" not in err
    leftovers = subprocess.run(
        ["pgrep", "-f", str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert not leftovers.stdout.strip(), "brokers still running after Ctrl-C"
