"""The command line over TLS, to the simulator and the TLS-capable real broker: ``post`` then
``consume`` move every message in order, ``admin`` answers, ``tap`` records what passes inside
TLS (to the broker's TLS listener; TLS on the clients' side too), and the mistakes end with exit 3
and a message naming them: a TLS client on the plain port (within the handshake bound) and a CA
that did not sign the broker's certificate."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import trustme
from pybmq.testing.brokers import BrokerHandle
from pybmq.testing.certificates import TestCertificates

from tests.helpers.cli import Tap, run_pybmq, run_pybmq_bytes
from tests.helpers.tls import round_trip_count

pytestmark = [pytest.mark.timeout(180), pytest.mark.tls]


def queue_uri(tag: str) -> str:
    return f"bmq://bmq.test.mem.priority/cli-tls-{tag}-{uuid.uuid4().hex[:8]}"


def tls_flags(broker: BrokerHandle) -> list[str]:
    return ["--tls-ca", str(broker.tls_ca)]


def post_and_consume(url: str, uri: str, count: int, *flags: str) -> list[str]:
    """Post ``count`` numbered lines, consume them back as JSON Lines; the payloads read."""
    lines = b"".join(b"line %04d\n" % n for n in range(count))
    posted = run_pybmq_bytes(url, "post", uri, "-", "--json", *flags, stdin=lines)
    assert posted.returncode == 0, posted.stderr.decode()
    summary = json.loads(posted.stdout.decode().splitlines()[-1])
    assert (summary["posted"], summary["acked"], summary["unresolved"]) == (count, count, 0)
    consumed = run_pybmq_bytes(url, "consume", uri, "--count", str(count), "--jsonl", *flags)
    assert consumed.returncode == 0, consumed.stderr.decode()
    return [json.loads(line)["payload"] for line in consumed.stdout.decode().splitlines()]


def test_post_then_consume_over_tls(tls_broker: BrokerHandle) -> None:
    count = round_trip_count(100)
    assert tls_broker.tls_url is not None
    payloads = post_and_consume(tls_broker.tls_url, queue_uri("pc"), count, *tls_flags(tls_broker))
    assert payloads == [f"line {n:04d}" for n in range(count)]


def test_admin_over_tls(tls_broker: BrokerHandle) -> None:
    count = round_trip_count(20)  # commands over one connection, each answered
    assert tls_broker.tls_url is not None
    commands = b"HELP\n" * count
    done = run_pybmq_bytes(
        tls_broker.tls_url, "admin", "-", "--json", *tls_flags(tls_broker), stdin=commands
    )
    assert done.returncode == 0, done.stderr.decode()
    answers = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert len(answers) == count
    assert all("help" in answer["result"] for answer in answers)


def decoded(capture: Path) -> list[dict[str, Any]]:
    done = run_pybmq("decode", "--json", str(capture))
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def messages_of(nodes: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [m for n in nodes if n["type"] == kind for m in n["messages"]]


def test_tap_to_the_tls_listener_records_inside_tls(
    tls_broker: BrokerHandle, tmp_path: Path
) -> None:
    count = round_trip_count(50)
    capture = tmp_path / "tls.tap"
    assert tls_broker.tls_url is not None
    tap = Tap(tls_broker.tls_url, capture, *tls_flags(tls_broker))
    try:
        payloads = post_and_consume(tap.url, queue_uri("tap"), count)  # plain to the tap
    finally:
        printed = tap.stop()
    assert payloads == [f"line {n:04d}" for n in range(count)]
    assert tap.returncode == 0 and "2 connections" in printed, printed
    nodes = decoded(capture)
    assert len(messages_of(nodes, "PUT")) == count == len(messages_of(nodes, "PUSH"))
    assert not [n for n in nodes if "error" in n]


def test_tap_serving_tls_to_its_clients_too(tls_broker: BrokerHandle, tmp_path: Path) -> None:
    own = TestCertificates.make(tmp_path / "tap-certs")  # the tap's own certificate
    capture = tmp_path / "both.tap"
    assert tls_broker.tls_url is not None
    tap = Tap(
        tls_broker.tls_url,
        capture,
        *tls_flags(tls_broker),
        "--listen-tls-cert",
        str(own.certificate),
        "--listen-tls-key",
        str(own.key),
    )
    try:
        payloads = post_and_consume(tap.url, queue_uri("tap2"), 10, "--tls-ca", str(own.ca))
    finally:
        tap.stop()
    assert payloads == [f"line {n:04d}" for n in range(10)]
    assert len(messages_of(decoded(capture), "PUT")) == 10


def test_a_tls_client_on_the_plain_port_exits_3_naming_the_likely_mistake(
    tls_broker: BrokerHandle,
) -> None:
    began = time.monotonic()
    done = run_pybmq(
        "post", queue_uri("x"), "hi", "--broker", tls_broker.url, *tls_flags(tls_broker)
    )
    elapsed = time.monotonic() - began
    said = done.stdout + done.stderr  # the run's summary line says why it ended
    assert done.returncode == 3, said
    assert "is the broker listening for TLS?" in said
    assert "Traceback" not in said
    assert elapsed < 10  # the handshake bound (2 s) and the interpreter's start, not 10 s more


def test_a_ca_that_did_not_sign_the_certificate_exits_3(
    tls_broker: BrokerHandle, tmp_path: Path
) -> None:
    other = tmp_path / "other.pem"
    trustme.CA().cert_pem.write_to_path(str(other))
    assert tls_broker.tls_url is not None
    for command in (["consume", queue_uri("y"), "--count", "1"], ["admin", "HELP"]):
        done = run_pybmq(*command, "--broker", tls_broker.tls_url, "--tls-ca", str(other))
        said = done.stdout + done.stderr
        assert done.returncode == 3, (command, said)
        assert "not trusted" in said and "Traceback" not in said


def test_tap_refuses_half_a_listening_pair(tmp_path: Path) -> None:
    own = TestCertificates.make(tmp_path / "certs")
    done = run_pybmq(
        "tap",
        "--broker",
        "tcp://127.0.0.1:1",
        "--out",
        str(tmp_path / "x.tap"),
        "--listen-tls-cert",
        str(own.certificate),
    )
    assert done.returncode == 2
    assert "--listen-tls-cert and --listen-tls-key go together" in done.stderr
