"""``pybmq tap`` against peers that try to make it hold or write without bound: events whose
header claims 512 MiB, in both directions on several connections (passed through, never held
whole); events over --snaplen (recorded cut, and decoded as such); more clients than
--max-connections; a flood of tiny events against --max-capture-size, with and without
--rotate; and a stop (SIGINT, SIGTERM) with connections open, which closes them without a
traceback."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pybmq.generated.wire_codec import EventType
from pybmq.wire.capture import iter_records
from pybmq.wire.control import HEARTBEAT_REQ_EVENT
from pybmq.wire.framing import MAX_EVENT_SIZE, event_header_bytes

from tests.helpers.cli import Tap
from tests.helpers.cli import run_pybmq as pybmq
from tests.helpers.rawpeers import RawBroker, connect

pytestmark = pytest.mark.timeout(300)

MIB = 1 << 20


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident set (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def huge_event(claimed: int, sent: int) -> Iterator[bytes]:
    """A PUT event header claiming ``claimed`` bytes, then ``sent - 8`` bytes of its body."""
    yield event_header_bytes(EventType.PUT, claimed)
    chunk = bytes(MIB)
    left = sent - 8
    while left > 0:
        yield chunk[: min(left, MIB)]
        left -= MIB


def wait_for(condition: object, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc for the RSS")
def test_events_claiming_512_mib_pass_through_without_being_held(tmp_path: Path) -> None:
    sent = 40 * MIB  # per direction per connection: 240 MiB in all, none of it held
    attack = lambda: huge_event(MAX_EVENT_SIZE, sent)  # noqa: E731
    broker = RawBroker(attack)
    tap = Tap(broker.url, tmp_path / "attack.tap")
    try:
        before = peak_rss_mib(tap.pid)
        clients = [connect(tap.url, attack) for _ in range(3)]
        wait_for(lambda: len(broker.peers) == 3)
        wait_for(lambda: all(c.received >= sent for c in clients))
        wait_for(lambda: all(p.received >= sent for p in broker.peers))
        growth = peak_rss_mib(tap.pid) - before
        assert growth < 64, f"the tap grew by {growth:.0f} MiB passing 240 MiB"
    finally:
        out = tap.stop()
        broker.close()
    assert tap.returncode == 0 and "Traceback" not in tap.stderr + out, tap.stderr
    assert "3 connections" in out
    assert [r.event for r in iter_records([(tmp_path / "attack.tap").read_bytes()])] == []


def test_an_event_over_the_snaplen_is_recorded_cut_and_decoded_so(tmp_path: Path) -> None:
    capture = tmp_path / "cut.tap"
    broker = RawBroker()
    tap = Tap(broker.url, capture, "--snaplen", "4096")
    try:
        client = connect(tap.url, lambda: [HEARTBEAT_REQ_EVENT, *huge_event(3 * MIB, 3 * MIB)])
        wait_for(lambda: broker.peers and broker.peers[0].received == 3 * MIB + 8)
        client.close()
    finally:
        out = tap.stop()
        broker.close()
    assert tap.returncode == 0 and "(1 cut at --snaplen)" in out, out
    heartbeat, cut = iter_records([capture.read_bytes()])
    assert heartbeat.event == HEARTBEAT_REQ_EVENT and not heartbeat.truncated
    assert (len(cut.event), cut.length, cut.truncated) == (4096, 3 * MIB, True)
    decoded = pybmq("decode", "--json", str(capture))
    assert decoded.returncode == 0, decoded.stderr
    node = json.loads(decoded.stdout.splitlines()[1])
    assert node["type"] == "PUT" and node["event_header"]["length"] == 3 * MIB
    assert node["tap"]["recorded"] == 4096 and node["tap"]["length"] == 3 * MIB
    assert node["body"] == f"cut by the tap: 4096 of {3 * MIB} bytes recorded"
    text = pybmq("decode", str(capture))
    assert f"[Body] 4088 bytes (not dissected): cut by the tap: 4096 of {3 * MIB}" in text.stdout


def test_clients_over_the_cap_are_closed_on_arrival(tmp_path: Path) -> None:
    broker = RawBroker()
    tap = Tap(broker.url, tmp_path / "cap.tap", "--max-connections", "2")
    try:
        kept = [connect(tap.url) for _ in range(2)]
        wait_for(lambda: len(broker.peers) == 2)
        extra = connect(tap.url)
        extra.threads[0].join(30)  # its reader ends: the tap closed it
        assert not extra.threads[0].is_alive()
        for client in [*kept, extra]:
            client.close()
    finally:
        out = tap.stop()
        broker.close()
    assert "2 connections, 1 refused (--max-connections)" in out
    assert len(broker.peers) == 2


def flood(count: int) -> Iterator[bytes]:
    yield HEARTBEAT_REQ_EVENT * count


@pytest.mark.parametrize("rotate", [0, 2])
def test_a_flood_of_tiny_events_is_held_to_the_capture_size(rotate: int, tmp_path: Path) -> None:
    capture = tmp_path / "flood.tap"
    limit = 1 << 16
    broker = RawBroker()
    tap = Tap(broker.url, capture, "--max-capture-size", str(limit), "--snaplen", "64",
              "--rotate", str(rotate))  # fmt: skip
    count = 20_000  # 160 kB of 8-byte events: 17 bytes of record each, 340 kB of capture
    try:
        client = connect(tap.url, lambda: flood(count))
        wait_for(lambda: broker.peers and broker.peers[0].received == 8 * count)
        client.close()
    finally:
        out = tap.stop()
        broker.close()
    assert tap.returncode == 0, tap.stderr
    files = sorted(tmp_path.glob("flood.tap*"))
    assert all(path.stat().st_size <= limit for path in files)
    recorded = sum(len(list(iter_records([path.read_bytes()]))) for path in files)
    if rotate:
        assert [p.name for p in files] == ["flood.tap", "flood.tap.1", "flood.tap.2"]
        assert "rotations (--rotate 2)" in out
        assert recorded < count  # the oldest files went
    else:
        assert files == [capture]
        not_recorded = count - recorded
        assert f"{not_recorded} not recorded (--max-capture-size {limit})" in out
        assert "recording stops" in tap.stderr
    assert "Traceback" not in tap.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_with_connections_open_closes_them_quietly(
    sig: signal.Signals, tmp_path: Path
) -> None:
    broker = RawBroker(lambda: [HEARTBEAT_REQ_EVENT])
    tap = Tap(broker.url, tmp_path / "stop.tap")
    clients = [connect(tap.url, lambda: [HEARTBEAT_REQ_EVENT]) for _ in range(3)]
    try:  # every event through both ways (the tap records an event as it forwards it)
        wait_for(lambda: all(c.received == 8 for c in clients))
        wait_for(lambda: len(broker.peers) == 3 and all(p.received == 8 for p in broker.peers))
    finally:
        out = tap.stop(sig)
        broker.close()
    for client in clients:
        client.threads[0].join(30)  # the tap closed every client
        assert not client.threads[0].is_alive()
        client.close()
    assert tap.returncode == 0
    assert tap.stderr == "", tap.stderr
    assert "3 connections, 3 events client->broker, 3 broker->client" in out


def test_a_capture_size_that_cannot_hold_one_event_is_refused(tmp_path: Path) -> None:
    result = pybmq("tap", "--broker", "tcp://127.0.0.1:1", "--out", str(tmp_path / "x.tap"),
                   "--snaplen", "1048576", "--max-capture-size", "65536")  # fmt: skip
    assert result.returncode == 2
    assert "--max-capture-size 65536 must hold an event of --snaplen 1048576" in result.stderr
    assert not (tmp_path / "x.tap").exists()
