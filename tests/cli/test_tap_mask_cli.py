"""``pybmq tap --mask-payloads``: post and consume (as subprocesses) through the tap to the
simulator; the clients see every payload unchanged, the capture holds none of them, and
``pybmq decode`` still shows every message with its size and properties."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pybmq.sim.server import ThreadedBrokerSimulator

from tests.helpers.cli import Tap
from tests.helpers.cli import run_pybmq as pybmq

pytestmark = pytest.mark.timeout(120)

QUEUE = "bmq://bmq.test.mem.priority/masked"
PAYLOAD_TEXT = b"pybmq-0123456789"  # how `pybmq post` payloads start


def test_masked_capture_of_post_and_consume(tmp_path: Path) -> None:
    capture = tmp_path / "masked.tap"
    with ThreadedBrokerSimulator() as sim:
        tap = Tap(sim.url, capture, "--mask-payloads")
        try:
            posted = pybmq("post", QUEUE, "--broker", tap.url, "--count", "20", "--size", "300",
                           "--properties", "who=me", "--json")  # fmt: skip
            assert posted.returncode == 0, posted.stderr
            assert json.loads(posted.stdout)["acked"] == 20
            consumed = pybmq("consume", QUEUE, "--broker", tap.url, "--count", "20", "--print",
                             "--idle-timeout", "10")  # fmt: skip
            assert consumed.returncode == 0, consumed.stderr
            lines = [line for line in consumed.stdout.splitlines() if "pybmq-0123" in line]
            assert len(lines) == 20 and all("'who': 'me'" in line for line in lines)
        finally:
            out = tap.stop()
    assert "2 connections" in out
    assert PAYLOAD_TEXT not in capture.read_bytes()
    decoded = pybmq("decode", "--json", str(capture))
    assert decoded.returncode == 0, decoded.stderr
    nodes = [json.loads(line) for line in decoded.stdout.splitlines()]
    for kind in ("PUT", "PUSH"):
        messages = [m for n in nodes if n["type"] == kind for m in n["messages"]]
        assert len(messages) == 20, kind
        for message in messages:
            assert message["payload"]["size"] == 300
            assert message["payload"]["hex"] == "58" * 64  # X, shown up to --payload-bytes
            assert message["properties"]["properties"] == [
                {"name": "who", "type": "STRING", "value": "me"}
            ]
