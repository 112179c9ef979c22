"""``pybmq admin`` as a subprocess against the simulator over real sockets: text and JSON
answers, a purge the broker really did, and an exit code for each way it can fail."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from pybmq.sim.auth import AuthConfig
from pybmq.sim.config import BrokerConfig
from pybmq.sim.server import ThreadedBrokerSimulator
from pybmq.sim.tls import server_tls_context

from tests.helpers.cli import run_pybmq as pybmq

pytestmark = pytest.mark.timeout(120)

DOMAIN = "bmq.test.mem.priority"
QUEUE = f"bmq://{DOMAIN}/admin"


@pytest.fixture
def sim() -> Iterator[ThreadedBrokerSimulator]:
    with ThreadedBrokerSimulator() as broker:
        yield broker


def test_stat_infos_list_and_purge(sim: ThreadedBrokerSimulator) -> None:
    posted = pybmq("post", QUEUE, "--count", "7", "--broker", sim.url)
    assert posted.returncode == 0, posted.stderr
    stats = pybmq("admin", "STAT", "SHOW", "--broker", sim.url)
    assert stats.returncode == 0, stats.stderr
    assert [QUEUE, "__default", "7"] in [line.split()[:3] for line in stats.stdout.splitlines()]
    infos = pybmq("admin", "--json", "DOMAINS", "DOMAIN", DOMAIN, "INFOS", "--broker", sim.url)
    document = json.loads(infos.stdout)
    assert document["command"] == f"ENCODING JSON_COMPACT DOMAINS DOMAIN {DOMAIN} INFOS"
    assert document["result"]["domainInfo"]["queueUris"] == [QUEUE]
    listed = pybmq("admin", "--json", "DOMAINS", "DOMAIN", DOMAIN, "QUEUE", "admin", "LIST",
                   "0", "unlimited", "--broker", sim.url)  # fmt: skip
    contents = json.loads(listed.stdout)["result"]["queueContents"]
    assert contents["totalQueueMessages"] == 7 and len(contents["messages"]) == 7
    purged = pybmq("admin", "DOMAINS", "DOMAIN", DOMAIN, "QUEUE", "admin", "PURGE", "*",
                   "--broker", sim.url)  # fmt: skip
    assert purged.returncode == 0, purged.stderr
    assert purged.stdout.strip() == f"Purged 7 message(s) (700 bytes) from {QUEUE}, appId __default"
    assert sim.call(lambda broker: broker.queue(QUEUE).pending_count()) == 0  # type: ignore[union-attr]


def test_help_text_and_error_results(sim: ThreadedBrokerSimulator) -> None:
    helped = pybmq("admin", "help", "--broker", sim.url)
    assert helped.returncode == 0 and "STAT SHOW" in helped.stdout
    unknown = pybmq("admin", "BROKERCONFIG", "DUMP", "--broker", sim.url)
    assert unknown.returncode == 1 and unknown.stdout.startswith("Error: not supported")
    unknown = pybmq("admin", "--json", "BROKERCONFIG", "DUMP", "--broker", sim.url)
    assert unknown.returncode == 1
    assert "not supported" in json.loads(unknown.stdout)["result"]["error"]["message"]
    # Words outside the command grammar: a line of text, as a broker answers (tests/differential).
    undecodable = pybmq("admin", "NO", "SUCH", "--broker", sim.url)
    assert undecodable.returncode == 1 and undecodable.stdout.startswith("Unable to decode")
    undecodable = pybmq("admin", "--json", "NO", "SUCH", "--broker", sim.url)
    assert undecodable.returncode == 1
    assert json.loads(undecodable.stdout)["text"].startswith("Unable to decode command")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_connection_failures_have_exit_codes() -> None:
    refused = pybmq("admin", "HELP", "--broker", f"tcp://127.0.0.1:{free_port()}")
    assert refused.returncode == 3 and "cannot connect" in refused.stderr
    with socket.socket() as silent:  # accepts (the backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"tcp://127.0.0.1:{silent.getsockname()[1]}"
        timed_out = pybmq("admin", "HELP", "--broker", url, "--timeout", "1")
    assert timed_out.returncode == 4 and "--timeout 1 s" in timed_out.stderr
    assert pybmq("admin", "HELP", "--timeout", "0").returncode == 2


def test_a_peer_that_is_not_a_broker() -> None:
    with socket.socket() as http:
        http.bind(("127.0.0.1", 0))
        http.listen()

        def answer() -> None:
            connection, _ = http.accept()
            with connection:
                connection.recv(4096)
                connection.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

        thread = threading.Thread(target=answer, daemon=True)
        thread.start()
        result = pybmq("admin", "HELP", "--broker", f"tcp://127.0.0.1:{http.getsockname()[1]}")
        thread.join(timeout=10)
    assert result.returncode == 3 and "not a BlazingMQ broker" in result.stderr


def test_commands_from_stdin_over_one_connection_with_heartbeats_between() -> None:
    # A peer silent for 10 intervals (1 s) is dropped: room for a slow start on a loaded
    # machine, and well within the wait between the commands below.
    config = BrokerConfig(heartbeat_interval_ms=100, max_missed_heartbeats=10)
    with ThreadedBrokerSimulator(config) as sim:
        process = subprocess.Popen(
            [sys.executable, "-m", "pybmq.cli", "admin", "-", "--json", "--broker", sim.url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write("HELP\n# a comment\n\n")
        process.stdin.flush()
        first = json.loads(process.stdout.readline())
        time.sleep(2.0)  # 20 heartbeat intervals: the broker drops a peer silent for 10
        out, err = process.communicate("STAT SHOW\nNO SUCH\n", timeout=60)
        sessions = sim.call(lambda broker: broker.stats.sessions)
    documents = [first, *(json.loads(line) for line in out.splitlines())]
    assert [d["command"] for d in documents] == [
        "ENCODING JSON_COMPACT HELP",
        "ENCODING JSON_COMPACT STAT SHOW",
        "ENCODING JSON_COMPACT NO SUCH",
    ]
    assert "help" in documents[0]["result"] and "stats" in documents[1]["result"]
    assert process.returncode == 1, err  # the last answer is an error Result
    assert sessions == 1  # one connection for all three


def test_over_tls_with_basic_authentication(tmp_path: Path) -> None:
    ca = trustme.CA()
    server = ca.issue_cert("localhost", "127.0.0.1")
    ca_pem, cert, key = tmp_path / "ca.pem", tmp_path / "cert.pem", tmp_path / "key.pem"
    ca.cert_pem.write_to_path(str(ca_pem))
    server.cert_chain_pems[0].write_to_path(str(cert))
    server.private_key_pem.write_to_path(str(key))
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.write_text("ops:secret\n")
    bad.write_text("ops:guess\n")
    config = BrokerConfig(auth=AuthConfig(basic={"ops": "secret"}, anonymous=False))
    with ThreadedBrokerSimulator(config, tls=server_tls_context(str(cert), str(key))) as sim:
        common = ["--broker", sim.url, "--tls-ca", str(ca_pem), "--auth", "BASIC"]
        answered = pybmq("admin", "CLUSTERS", "LIST", *common, "--auth-file", str(good))
        refused = pybmq("admin", "HELP", *common, "--auth-file", str(bad))
        plain = pybmq("admin", "HELP", "--broker", sim.url, "--timeout", "5")
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout.strip() == "pybmq-sim (local)"
    assert refused.returncode == 3 and "authentication refused" in refused.stderr
    assert "guess" not in refused.stderr + refused.stdout
    assert plain.returncode == 3 and "requires authentication or TLS" in plain.stderr


def test_a_long_session_authenticates_again_before_its_credential_expires(
    tmp_path: Path,
) -> None:
    """The broker grants a 5.5 s lifetime (and closes a connection whose credential expired):
    ``pybmq admin -`` authenticates again every 0.5 s (min(90 %, lifetime - 5 s)), so a
    command sent after 6.5 s is still answered, over the same connection."""
    good = tmp_path / "good"
    good.write_text("ops:secret\n")
    auth = AuthConfig(basic={"ops": "secret"}, anonymous=False, lifetime_ms=5500)
    with ThreadedBrokerSimulator(BrokerConfig(auth=auth)) as sim:
        process = subprocess.Popen(
            [sys.executable, "-m", "pybmq.cli", "admin", "-", "--broker", sim.url,
             "--auth", "BASIC", "--auth-file", str(good)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write("CLUSTERS LIST\n")
        process.stdin.flush()
        first = process.stdout.readline().strip()
        time.sleep(6.5)  # past the first lifetime
        out, err = process.communicate("CLUSTERS LIST\n", timeout=60)
        sessions = sim.call(lambda broker: broker.stats.sessions)
    assert first == "pybmq-sim (local)"
    assert process.returncode == 0, err
    assert out.strip() == "pybmq-sim (local)"
    assert sessions == 1


def test_the_brokers_failure_texts_are_failures() -> None:
    """What the real broker prints in text mode for an unknown command and a failed one (seen
    against it), and what it prints for a success."""
    from pybmq.cli.admin_tables import is_error_text

    assert is_error_text(
        'Unable to decode command (rc: -1, error: \'Invalid command. Send "HELP" for list of '
        "commands. Invalid command word: NO')\n"
    )
    assert is_error_text("Domain 'bmq.no.such' doesn't exist\n")
    assert is_error_text("Error: not supported\n")
    assert not is_error_text('    {\n        "brokerInstanceName": "pybmq-test",\n')
    assert not is_error_text("This process responds to the following CMD subcommands:\n")
