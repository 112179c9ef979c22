"""Real content in and out of ``pybmq post``/``consume``, as subprocesses against a ``pybmq sim``
subprocess: a payload argument, files, stdin lines and JSON Lines in; JSON Lines, ``--format``
lines and raw files out; and the ``consume --jsonl | post --jsonl -`` round trip, lossless."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import run_pybmq_bytes

pytestmark = pytest.mark.timeout(180)

DOMAIN = "bmq://bmq.test.mem.priority"


@pytest.fixture(scope="module")
def broker() -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "pybmq.cli", "sim", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    assert "listening on" in first, process.stderr.read() if process.stderr else ""
    yield first.split()[-1]
    process.terminate()
    process.communicate(timeout=30)


pybmq = run_pybmq_bytes


def records(output: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.decode().splitlines()]


def drain(broker: str, queue: str) -> list[dict[str, Any]]:
    result = pybmq(broker, "consume", queue, "--jsonl", "--idle-timeout", "0.5")
    assert result.returncode == 0, result.stderr
    assert b"Traceback" not in result.stderr
    return records(result.stdout)


def test_payload_argument_with_typed_properties(broker: str) -> None:
    queue = f"{DOMAIN}/arg"
    props = "n:int64=3,ok:bool=true,who=me,raw:binary=00ff,c:char=65,s:short=-2"
    posted = pybmq(broker, "post", queue, "hello wörld", "--count", "2", "--properties", props)
    assert posted.returncode == 0, posted.stderr
    got = drain(broker, queue)
    assert [r["payload"] for r in got] == ["hello wörld"] * 2
    properties = got[0]["properties"]
    assert properties["n"] == {"type": "int64", "value": 3}
    assert properties["ok"] == {"type": "bool", "value": True}
    assert properties["who"] == {"type": "string", "value": "me"}
    assert properties["raw"] == {"type": "binary", "value": base64.b64encode(b"\0\xff").decode()}
    assert properties["c"]["type"] == "char" and properties["s"]["type"] == "short"
    assert all(r["queue"] == queue and len(r["guid"]) == 32 for r in got)


def test_files_are_one_message_each_binary_safe(broker: str, tmp_path: Path) -> None:
    queue = f"{DOMAIN}/files"
    blobs = [bytes(range(256)) * 3, b"\r\n\x00end", "ünïcode".encode()]
    paths = []
    for i, blob in enumerate(blobs):
        path = tmp_path / f"m{i}.bin"
        path.write_bytes(blob)
        paths += ["--file", str(path)]
    posted = pybmq(broker, "post", queue, *paths, "--json")
    assert posted.returncode == 0, posted.stderr
    assert json.loads(posted.stdout)["posted"] == 3
    out = tmp_path / "out"
    consumed = pybmq(broker, "consume", queue, "--out-dir", str(out), "--idle-timeout", "0.5")
    assert consumed.returncode == 0, consumed.stderr
    written = sorted(out.iterdir())
    assert [p.read_bytes() for p in written] == blobs
    assert written[0].name.startswith("00000001-")
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    refused = pybmq(broker, "post", queue, "--file", str(empty))
    assert refused.returncode == 2 and b"empty" in refused.stderr


def test_stdin_lines(broker: str) -> None:
    queue = f"{DOMAIN}/lines"
    posted = pybmq(broker, "post", queue, "-", stdin=b"one\ntwo\n\nthree")
    assert posted.returncode == 0, posted.stderr
    assert b"posted 3," in posted.stdout
    assert [r["payload"] for r in drain(broker, queue)] == ["one", "two", "three"]


def test_jsonl_round_trip_is_lossless(broker: str) -> None:
    source, target = f"{DOMAIN}/rt-source", f"{DOMAIN}/rt-target"
    lines = [
        {"payload": "plain"},
        {"payload_base64": base64.b64encode(b"\xff\x00\xfe").decode()},
        {
            "payload": "typed",
            "properties": {
                "i": {"type": "int32", "value": -7},
                "l": {"type": "int64", "value": 2**40},
                "b": {"type": "bool", "value": False},
                "x": {"type": "binary", "value": base64.b64encode(b"\x01\x02").decode()},
                "t": {"type": "string", "value": "ü"},
            },
        },
        {"payload": "z" * 5000, "compression": "zlib"},
    ]
    stdin = "".join(json.dumps(line) + "\n" for line in lines).encode()
    seeded = pybmq(broker, "post", source, "--jsonl", "-", stdin=stdin)
    assert seeded.returncode == 0, seeded.stderr
    # consume --jsonl | post --jsonl - : two processes joined by a pipe, as a shell does it
    env = {**os.environ, "BMQ_BROKER_URI": broker}
    consume = subprocess.Popen(
        [sys.executable, "-m", "pybmq.cli", "consume", source, "--jsonl", "--idle-timeout", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    post = subprocess.run(
        [sys.executable, "-m", "pybmq.cli", "post", target, "--jsonl", "-", "--json"],
        stdin=consume.stdout,
        capture_output=True,
        timeout=120,
        env=env,
        check=False,
    )
    _, consume_err = consume.communicate(timeout=60)
    assert consume.returncode == 0 and post.returncode == 0, (consume_err, post.stderr)
    assert b"received 4, confirmed 4" in consume_err  # the summary went to stderr
    assert json.loads(post.stdout)["acked"] == 4
    moved = drain(broker, target)

    def content(record: dict[str, Any]) -> tuple[Any, ...]:
        payload = record.get("payload", "").encode() or base64.b64decode(record["payload_base64"])
        return payload, record.get("properties", {})

    assert [content(r) for r in moved] == [content(r) for r in lines]
    # Each record's compression is kept: the zlib one was posted, moved and delivered compressed.
    assert [r["compression"] for r in moved] == ["none", "none", "none", "zlib"]
    assert moved[1]["payload_base64"] == base64.b64encode(b"\xff\x00\xfe").decode()
    assert drain(broker, source) == []  # everything moved was confirmed at the source


def test_bad_jsonl_names_the_line_and_keeps_the_summary(broker: str) -> None:
    stdin = b'{"payload": "ok"}\n{"payload": 5}\n'
    result = pybmq(broker, "post", f"{DOMAIN}/bad", "--jsonl", "-", "--json", stdin=stdin)
    assert result.returncode == 2
    summary = json.loads(result.stdout)
    assert summary["outcome"] == "bad input" and "stdin line 2" in summary["reason"]
    assert summary["posted"] == 1 and summary["acked"] == 1
    assert b"Traceback" not in result.stderr


def test_format_template_and_print_json_keep_stdout_clean(broker: str) -> None:
    queue = f"{DOMAIN}/format"
    assert (
        pybmq(broker, "post", queue, "abc", "--count", "2", "--properties", "k=v").returncode == 0
    )
    template = "{n}\\t{size} {payload} {properties} {compression}"
    result = pybmq(
        broker, "consume", queue, "--format", template, "--idle-timeout", "0.5", "--json"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().splitlines() == [
        '1\t3 abc {"k": "v"} none',
        '2\t3 abc {"k": "v"} none',
    ]
    assert json.loads(result.stderr.decode().splitlines()[-1])["received"] == 2
    unknown = pybmq(broker, "consume", queue, "--format", "{nope}")
    assert unknown.returncode == 2 and b"{nope}" in unknown.stderr
    assert pybmq(broker, "post", queue, "p", "--count", "2").returncode == 0
    printed = pybmq(broker, "consume", queue, "--print", "--json", "--idle-timeout", "0.5")
    assert printed.stdout.decode().splitlines() == ["p ", "p "]
    assert json.loads(printed.stderr.decode().splitlines()[-1])["received"] == 2


def test_rate_is_a_dash_when_too_little_to_measure(broker: str) -> None:
    queue = f"{DOMAIN}/rate"
    assert pybmq(broker, "post", queue, "x", "--count", "5").returncode == 0
    text = pybmq(broker, "consume", queue, "--idle-timeout", "0.5")
    line = text.stdout.decode()
    assert "received 5" in line and "(— msgs/s)" in line and "0 msgs/s" not in line
    seconds = float(line.split(" in ")[1].split(" s ")[0])
    assert seconds >= 0.4  # the run's real interval, idle wait included
    assert pybmq(broker, "post", queue, "x").returncode == 0
    document = json.loads(pybmq(broker, "consume", queue, "--idle-timeout", "0.3", "--json").stdout)
    assert document["rate"] is None
