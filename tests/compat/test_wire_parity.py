"""What compat puts on the wire, compared with the official SDK running the same program through
the same recording relay to one simulator: a PUT asks for an ACK only when ``on_ack`` was given."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pybmq.generated.wire_codec import EventType
from pybmq.uri import parse_broker_url
from pybmq.wire.put import iter_put

from tests.helpers.wire_tap import WireTap

pytestmark = pytest.mark.timeout(120)
TIMEOUT = 90

PROGRAM = textwrap.dedent("""
    import sys
    import threading

    import blazingmq

    acked = threading.Event()
    uri = "bmq://bmq.test.mem.priority/compat-wire-ack"
    with blazingmq.Session(lambda e: None, broker=sys.argv[1]) as session:
        session.open_queue(uri, write=True)
        session.post(uri, b"without on_ack")
        session.post(uri, b"with on_ack", on_ack=lambda ack: acked.set())
        session.post(uri, b"without on_ack again", properties={"p": 1})
        assert acked.wait(30)
    print(blazingmq.__name__)
    """)


def _ack_flags(tap: WireTap) -> dict[bytes, bool]:
    flags: dict[bytes, bool] = {}
    for event in tap.events():
        if event.header.type == EventType.PUT:
            for put in iter_put(event):
                flags[put.payload] = put.ack_requested
    return flags


@pytest.mark.parametrize("sdk", ["official", "compat"])
def test_put_asks_for_an_ack_only_with_on_ack(
    sdk: str, tmp_path: Path, bmq_broker_url: str
) -> None:
    if (
        sdk == "official"
        and subprocess.run(
            [sys.executable, "-c", "import blazingmq._ext"], capture_output=True, timeout=TIMEOUT
        ).returncode
    ):
        pytest.skip("the official blazingmq package is not installed here")
    program = tmp_path / "post_program.py"
    program.write_text(PROGRAM)
    runner = ["-m", "pybmq.compat", "--force"] if sdk == "compat" else []
    env = {k: v for k, v in os.environ.items() if k != "BMQ_BROKER_URI"}
    with WireTap(*parse_broker_url(bmq_broker_url)) as tap:
        done = subprocess.run(
            [sys.executable, *runner, str(program), tap.url],
            capture_output=True, text=True, timeout=TIMEOUT, env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        flags = _ack_flags(tap)
    assert done.stdout.split() == ["pybmq.compat" if sdk == "compat" else "blazingmq"]
    assert flags == {
        b"without on_ack": False,
        b"with on_ack": True,
        b"without on_ack again": False,
    }
