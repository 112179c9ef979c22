"""``pybmq tool``: bmqtool's interactive commands over pybmq, as upstream's integration-test
apparatus drives it (a subprocess fed commands on stdin, its lines matched as they come), against
``pybmq sim`` on loopback, with and without TLS."""

from __future__ import annotations

import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pybmq._version import __version__
from pybmq.sim.config import BrokerConfig
from pybmq.sim.server import ThreadedBrokerSimulator
from pybmq.sim.tls import server_tls_context
from pybmq.testing.certificates import TestCertificates

pytestmark = pytest.mark.timeout(120)

PRIORITY = "bmq://bmq.test.mem.priority/tool"
FANOUT = "bmq://bmq.test.mem.fanout/tool"
LOG_FORMAT = '--logFormat="%c~@~%d~@~%t~@~%s~@~%F:%l~@~%m\\n"'  # as the apparatus passes it


class Tool:
    """``pybmq tool`` as a child: write a command, wait for a line matching a pattern."""

    def __init__(self, *options: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pybmq.cli", "tool", *options],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def send(self, command: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def expect(self, pattern: str, timeout: float = 15.0) -> re.Match[str]:
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                break
            self.seen.append(line)
            match = regex.search(line)
            if match:
                return match
        raise AssertionError(f"no line matching {pattern!r}; seen:\n" + "\n".join(self.seen))

    def command(self, command: str, pattern: str) -> re.Match[str]:
        self.send(command)
        return self.expect(pattern)

    def finish(self, timeout: float = 30.0) -> int:
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            return self.process.wait(timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def sim() -> Iterator[str]:
    with ThreadedBrokerSimulator(BrokerConfig()) as broker:
        yield broker.url


def started(url: str, *options: str) -> Tool:
    tool = Tool("-b", url, LOG_FORMAT, "--verbosity=INFO", "-d", *options)
    tool.command("start", r"session\.start.*\((-?\d+)\)")
    return tool


def test_produce_consume_list_confirm_as_the_apparatus_does(sim: str) -> None:
    producer, consumer = started(sim), started(sim)
    try:
        for tool, flags in ((producer, "write,ack"), (consumer, "read")):
            opened = tool.command(
                f'open uri="{PRIORITY}" flags="{flags}"',
                rf"<--.*openQueue.*uri = {re.escape(PRIORITY)}.*\((-?\d+)\)",
            )
            assert opened[1] == "0"
        producer.send(
            f'post uri="{PRIORITY}" payload=["hello world", "two"] messageProperties='
            '[{"name": "x", "value": "10", "type": "E_INT"}, {"name": "s", "value": "a b"}]'
        )
        assert producer.expect(r"<--.*post.*\((-?\d+)\)")[1] == "0"
        ack = producer.expect(rf"ACK #.* type = ACK.*queue = \[ uri = {re.escape(PRIORITY)} ")
        assert "status = SUCCESS" in ack[0]
        consumer.expect("PUSH #")
        consumer.send(f'list uri="{PRIORITY}"')
        assert consumer.expect(r"Unconfirmed message listing: (-?\d+) messages")[1] == "2"
        row = re.compile(
            r"\[([0-9a-fA-F]+)\] Queue: '\[ uri = (\S+) correlationId = \[ autoValue = (-?\d+) "
            r"\] \]' = '([^']*)'"
        )
        first = consumer.expect(row.pattern)
        assert (first[2], first[4]) == (PRIORITY, "hello world")
        assert 's (STRING) = "a b" x (INT32) = 10' in first.string
        second = consumer.expect(row.pattern)
        consumer.command(
            f'confirm uri="{PRIORITY}" guid="{first[1]}"', r"<--.*confirmMessage.*\((-?\d+)\)"
        )
        consumer.send("list")
        assert consumer.expect(r"Unconfirmed message listing: (-?\d+) messages")[1] == "1"
        assert consumer.expect(row.pattern)[1] == second[1]
        consumer.command(f'confirm uri="{PRIORITY}" guid="*"', r"confirmMessage.*\(0\)")
        consumer.command(f'confirm uri="{PRIORITY}" guid="*"', "No messages to confirm")
        closed = consumer.command(
            f'close uri="{PRIORITY}"', rf"<--.*closeQueue.*uri = {re.escape(PRIORITY)}.*\((-?\d+)\)"
        )
        assert closed[1] == "0"
        consumer.command("stop", r"<--.*stop\(\)")
        consumer.send("quit")
        assert consumer.finish() == 0
        assert any("sessionEventType = DISCONNECTED" in line for line in consumer.seen)
    finally:
        producer.finish()
        consumer.finish()


def test_fanout_apps_configure_and_async_commands(sim: str) -> None:
    tool = started(sim)
    try:
        tool.command(f'open uri="{FANOUT}" flags="write,ack" async=true', r"OPEN_QUEUE_RESULT")
        tool.expect(r"openQueueAsync.*\(0\)")
        tool.command(
            f'open uri="{FANOUT}?id=foo" flags="read" maxUnconfirmedMessages=5 '
            'subscriptions=[{"expression": "x > 5"}]',
            r"openQueueSync.*\(0\)",
        )
        tool.send(
            f'post uri="{FANOUT}" payload=["low"] messageProperties=[{{"name": "x", '
            '"value": "1", "type": "E_INT"}]'
        )
        tool.send(
            f'post uri="{FANOUT}" payload=["high"] messageProperties=[{{"name": "x", '
            '"value": "9", "type": "E_INT"}]'
        )
        tool.expect("PUSH #")
        tool.send(f'list uri="{FANOUT}?id=foo"')
        assert tool.expect(r"listing: (\d+) messages")[1] == "1"
        assert tool.expect(r"= '([^']*)'")[1] == "high"
        tool.command(
            f'configure uri="{FANOUT}?id=foo" subscriptions=[{{"expression": "x < 5"}}]',
            r"<--.*configureQueue.*\(0\)",
        )
        tool.expect("PUSH #")  # "low" is now for this subscription
        tool.command(f'close uri="{FANOUT}?id=foo" async=true', r"closeQueueAsync.*\(0\)")
        tool.command(f'list uri="{FANOUT}?id=foo"', f"unknown queue '{re.escape(FANOUT)}")
    finally:
        assert tool.finish() == 0


def test_refusals_and_bad_lines_are_reported_and_the_tool_goes_on(sim: str) -> None:
    tool = started(sim)
    try:
        tool.command("frob x=1", "ERROR.*Unknown command: frob")
        tool.command('open uri="bmq://bad" flags="read"', r"ERROR.*The uri \('bmq://bad'\)")
        tool.command(f'open uri="{PRIORITY}" flags="bogus"', "Invalid flag")
        tool.command(f'open uri="{PRIORITY}" flags="read" nope=1', "unknown field 'nope'")
        tool.command(f'post uri="{PRIORITY}" payload=["x"', "Unable to decode")
        tool.command(
            f'post uri="{PRIORITY}" payload=["x"]', f"unknown queue '{re.escape(PRIORITY)}'"
        )
        tool.command(f'open uri="{PRIORITY}?id=foo" flags="read"', r"openQueueSync.*\((-?\d+)\)")
        tool.command(f'open uri="{PRIORITY}" flags="write,ack"', r"openQueueSync.*\(0\)")
        again = tool.command(
            f'open uri="{PRIORITY}" flags="write,ack"', r"openQueueSync.*\((-?\d+)\)"
        )
        assert again[1] == "100" and "ALREADY_OPENED" in again[0]
        tool.command(f'confirm uri="{PRIORITY}" guid="zz"', "is not a valid GUID")
        tool.command("x" * 2_000_000, "at most")  # an overlong line is refused, not held
        tool.command(f'post uri="{PRIORITY}" payload=["still here"]', r"post.*\(0\)")
    finally:
        assert tool.finish() == 0
    assert not any("Traceback" in line for line in tool.seen)


def test_the_broker_is_told_pybmq_tool_on_pybmq_and_the_module_run() -> None:
    # bmqtool presents "bmqtool libbmq:<version>" and its executable's name; pybmq tool names
    # itself and pybmq in the same name:version form, and the module ``python -m`` ran, not the
    # "__main__.py" every ``-m`` program would share.
    with ThreadedBrokerSimulator(BrokerConfig()) as broker:
        tool = started(broker.url)
        try:
            [session] = broker.broker.sessions
            identity = session.client_identity
            assert identity is not None
            assert identity.user_agent == f"pybmq-tool pybmq:{__version__}"
            assert identity.process_name == "pybmq.cli"
            assert identity.pid == tool.process.pid
        finally:
            tool.send("stop")
            assert tool.finish() == 0


def test_start_without_a_broker_times_out_and_stop_is_clean(tmp_path: Path) -> None:
    tool = Tool("-b", "tcp://127.0.0.1:1", "--verbosity=info")
    try:
        result = tool.command("start", r"session\.start.*\((-?\d+)\)")
        assert "TIMEOUT (-2)" in result.string  # kept connecting for its 5 s, as bmqtool does
        tool.command(f'open uri="{PRIORITY}" flags="read"', r"NOT_CONNECTED \(-3\)")
    finally:
        assert tool.finish() == 0


def test_sigterm_stops_the_session_and_exits_143(sim: str) -> None:
    tool = started(sim)
    tool.send(f'open uri="{PRIORITY}" flags="read"')
    tool.expect(r"openQueueSync.*\(0\)")
    tool.process.send_signal(signal.SIGTERM)
    assert tool.process.wait(30) == 143
    tool.finish()


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--tlsVersions", "SSLv3"], "--tlsVersions"),
        (["--mode", "auto"], "--mode"),
        (["--verbosity", "loud"], "--verbosity"),
        (["--tlsAuthority", "/nonexistent/ca.pem"], "--tlsAuthority"),
        (["--timeout", "0"], "--timeout"),
    ],
)
def test_bad_options_are_named_with_exit_2(options: list[str], named: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pybmq.cli", "tool", *options],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert named in done.stderr
    assert "Traceback" not in done.stderr


@pytest.fixture
def tls_sim(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    certs = TestCertificates.make(tmp_path)
    with ThreadedBrokerSimulator(
        BrokerConfig(), tls=server_tls_context(str(certs.certificate), str(certs.key))
    ) as sim:
        yield sim.url, certs.ca


def test_tls_authority_and_versions(tls_sim: tuple[str, Path]) -> None:
    url, ca = tls_sim
    tool = started(url, "--tlsAuthority", str(ca), "--tlsVersions", "TLSv1.2,TLSv1.3")
    try:
        assert any(re.search(r"session\.start.*\(0\)", line) for line in tool.seen)
        tool.command(f'open uri="{PRIORITY}" flags="write,ack"', r"openQueueSync.*\(0\)")
        tool.send(f'post uri="{PRIORITY}" payload=["over tls"]')
        assert "status = SUCCESS" in tool.expect(r"ACK #0: .*")[0]
    finally:
        assert tool.finish() == 0
    untrusted = Tool("-b", url, "--verbosity=info")  # no --tlsAuthority: not a TLS client
    try:
        assert untrusted.command("start", r"session\.start.*\((-?\d+)\)")[1] != "0"
    finally:
        untrusted.finish()


def test_subscriptions_the_sdks_refuse_are_refused_before_any_request(sim: str) -> None:
    tool = started(sim)
    try:
        for expression in ("", " ", "x >", "x > 99999999999999999999"):
            tool.send(
                f'open uri="{PRIORITY}" flags="read" subscriptions=[{{"expression": "{expression}"}}]'
            )
            tool.expect("ERROR.*Invalid subscriptions")
        tool.command(
            f'open uri="{PRIORITY}" flags="read" subscriptions=[{{"expression": "x > 0"}}]',
            r"openQueueSync.*\(0\)",
        )
        tool.command(
            f'configure uri="{PRIORITY}" subscriptions=[{{"expression": "(("}}]',
            "ERROR.*Invalid subscriptions",
        )
    finally:
        assert tool.finish() == 0
    assert not any("openQueueSync" in line and "(0)" not in line for line in tool.seen)


def test_auto_mode_producer_and_consumer_write_bmqtools_log_lines(sim: str, tmp_path: Path) -> None:
    uri = "bmq://bmq.test.mem.fanout/auto"
    consumer_log, producer_log = tmp_path / "foo.log", tmp_path / "producer.log"
    consumer = Tool(
        "-b", sim, "--mode", "auto", "--queueflags", "read", "--queueuri", f"{uri}?id=foo",
        "-c", "--log", str(consumer_log), "--maxunconfirmed", "100:1000000",
    )  # fmt: skip
    try:
        consumer.expect("Session started")
        producer = subprocess.run(
            [sys.executable, "-m", "pybmq.cli", "tool", "-b", sim, "--mode", "auto",
             "--queueflags", "write,ack", "--queueuri", uri, "--eventscount", "30",
             "--postinterval", "1", "--messagepattern", "msg", "--log", str(producer_log),
             '--messageProperties=[{"name": "p1", "value": "s1", "type": "E_STRING"}]'],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert producer.returncode == 0, producer.stderr
        assert "All posted messages have been acknowledged" in producer.stdout
        assert re.search(r"produced \|.*\| \s*(\d+) \|", producer.stdout)
        consumer.expect(r"consumed \|.*\| \s*(\d+) \|")
        deadline = time.monotonic() + 15
        while consumer_log.read_text().count(" CONFIRM ") < 30 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        consumer.process.send_signal(signal.SIGTERM)
        assert consumer.process.wait(30) == 143
        consumer.finish()
    puts = re.findall(
        rf" PUT {re.escape(uri)}\|\[ autoValue = (\d+) \]\|(.+)\|msg\s*(\d+)",
        producer_log.read_text(),
    )
    acks = re.findall(rf" ACK {re.escape(uri)}\|\[ autoValue = (\d+) \]\|(.+)\|(-?\d+)\|",
                      producer_log.read_text())  # fmt: skip
    pushes = re.findall(
        rf" PUSH {re.escape(uri)}\?id=foo\|(.+)\|msg\s*(\d+)", consumer_log.read_text()
    )
    assert [int(n) for _, _, n in puts] == list(range(30))
    assert sorted(g for _, g, _ in acks) == sorted(g for _, g, _ in puts)
    assert {status for _, _, status in acks} == {"0"}
    assert [int(n) for _, n in pushes] == list(range(30))
    assert consumer_log.read_text().count(" CONFIRM ") == 30


@pytest.mark.tls
def test_a_round_trip_over_tls_to_the_simulator_and_the_real_broker(tls_broker: Any) -> None:
    """bmqtool's TLS options against both TLS listeners: the simulator's and the TLS-capable
    real broker's (TLS 1.3 only, as the broker serves it)."""
    uri = f"{PRIORITY}-tls"
    tool = started(tls_broker.tls_url, "--tlsAuthority", str(tls_broker.tls_ca))
    try:
        tool.command(f'open uri="{uri}" flags="read,write,ack"', r"openQueueSync.*\(0\)")
        tool.send(f'post uri="{uri}" payload=["over tls"]')
        assert "status = SUCCESS" in tool.expect(r"ACK #0: .*")[0]
        if not any("PUSH #0: " in line for line in tool.seen):  # the PUSH may come first
            tool.expect(r"PUSH #0: .*")
    finally:
        assert tool.finish() == 0
