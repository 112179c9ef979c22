"""The CLI fed what a hostile or careless producer sends: every input path (``--jsonl``,
``--file``, ``-``, ``--properties``, ``--format``) ends with exit status 2 naming the flag and
the record, never a traceback; a message ``--format`` cannot render is reported and the run goes
on (or stops, as asked); text output never carries a control character of a message's.

Each case runs ``pybmq`` as a subprocess against a simulator, as a user would."""

from __future__ import annotations

import base64
import itertools
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pybmq.sim.server import ThreadedBrokerSimulator

from tests.helpers.cli import run_pybmq_bytes

pytestmark = pytest.mark.timeout(180)

DOMAIN = "bmq://bmq.test.mem.priority"
_names = itertools.count()


@pytest.fixture(scope="module")
def broker() -> Iterator[str]:
    with ThreadedBrokerSimulator() as sim:
        yield sim.url


@pytest.fixture
def queue() -> str:
    return f"{DOMAIN}/hostile{next(_names)}"


def pybmq(
    broker: str, *argv: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``pybmq ARGV``, checked for the one thing no run may print: a traceback."""
    result = run_pybmq_bytes(broker, *argv, stdin=stdin)
    assert b"Traceback" not in result.stderr + result.stdout, result.stderr.decode()
    return result


def summary(result: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(result.stdout.decode().splitlines()[-1])
    return document


def post_jsonl(broker: str, queue: str, data: bytes) -> subprocess.CompletedProcess[bytes]:
    return pybmq(broker, "post", queue, "--jsonl", "-", "--json", stdin=data)


HOSTILE_RECORDS = {
    "lone surrogate in the payload": (b'{"payload": "\\ud800"}', "'payload' is not Unicode"),
    "nested 100,000 deep": (b"[" * 100_000, "nested too deep"),
    "nested inside the record": (
        b'{"payload": "x", "properties": ' + b"[" * 100_000 + b"}",
        "nested too deep",
    ),
    "lone surrogate in a property": (
        b'{"payload": "x", "properties": {"p": {"type": "string", "value": "\\ud800"}}}',
        "property 'p': not encodable as UTF-8",
    ),
    "a property type that is a list": (
        b'{"payload": "x", "properties": {"p": {"type": [], "value": 1}}}',
        "property 'p'",
    ),
    "an integer of 5000 digits": (
        b'{"payload": "x", "properties": {"p": {"type": "int64", "value": ' + b"9" * 5000 + b"}}}",
        "not a JSON object",
    ),
    "an int32 out of range": (
        b'{"payload": "x", "properties": {"p": {"type": "int32", "value": 1e400}}}',
        "property 'p'",
    ),
    "not UTF-8": (b'{"payload": "\xff\xfe"}', "not a JSON object"),
    "compression of the wrong type": (b'{"payload": "x", "compression": ["zlib"]}', "compression"),
    "payload_base64 not a string": (b'{"payload_base64": {"a": 1}}', "payload_base64"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_RECORDS))
def test_a_hostile_jsonl_record_is_refused_naming_the_flag_and_the_line(
    broker: str, queue: str, case: str
) -> None:
    record, why = HOSTILE_RECORDS[case]
    good = b'{"payload": "before"}\n'
    result = post_jsonl(broker, queue, good + record + b"\n" + good)
    assert result.returncode == 2, result.stderr
    document = summary(result)
    assert document["outcome"] == "bad input"
    assert "--jsonl stdin line 2" in document["reason"] and why in document["reason"]
    assert document["acked"] == 1  # the line before the bad one is posted


def test_a_line_over_the_limit_is_refused_as_soon_as_it_is_seen(broker: str, queue: str) -> None:
    lines = b"one\ntwo\n" + b"x" * 300_000 + b"\nfour\n"
    result = pybmq(broker, "post", queue, "-", "--max-line-size", "1000", "--json", stdin=lines)
    assert result.returncode == 2
    document = summary(result)
    assert document["reason"] == "stdin line 3: longer than --max-line-size 1000 bytes"
    assert document["acked"] == 2
    exact = pybmq(broker, "post", queue, "-", "--max-line-size", "3", stdin=b"abc\nabcd\n")
    assert exact.returncode == 2 and b"stdin line 2: longer than" in exact.stdout
    bad = pybmq(broker, "post", queue, "-", "--max-line-size", "0")
    assert bad.returncode == 2 and b"--max-line-size" in bad.stderr


def test_bad_files_are_refused_before_connecting_naming_the_flag(
    queue: str, tmp_path: Path
) -> None:
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    huge = tmp_path / "huge.bin"
    with huge.open("wb") as out:  # sparse: no disk used
        out.truncate((64 << 20) + 1)
    nowhere = "tcp://127.0.0.1:1"  # never reached: the files are checked first
    for path, why in ((empty, b"empty"), (huge, b"over the largest payload")):
        result = pybmq(nowhere, "post", queue, "--file", str(path))
        assert result.returncode == 2
        assert f"--file {path}".encode() in result.stderr and why in result.stderr
    twice = pybmq(nowhere, "post", queue, "--file", "-", "--file", "-")
    assert twice.returncode == 2 and b"--file -" in twice.stderr


def test_file_dash_posts_all_of_stdin_as_one_message(broker: str, queue: str) -> None:
    data = b"line 1\nline 2\x00\xff"
    posted = pybmq(broker, "post", queue, "--file", "-", stdin=data)
    assert posted.returncode == 0, posted.stdout
    out = pybmq(broker, "consume", queue, "--jsonl", "--base64", "--idle-timeout", "0.5")
    (record,) = [json.loads(line) for line in out.stdout.splitlines()]
    assert record["payload_base64"] == "bGluZSAxCmxpbmUgMgD/"


def test_bad_properties_name_the_flag(broker: str, queue: str) -> None:
    for text in (",,,=", "a:int32=99999999999999", "a:binary=zz", "a:nope=1"):
        result = pybmq(broker, "post", queue, "x", "--properties", text)
        assert result.returncode == 2, text
        assert result.stderr.startswith(b"pybmq post: --properties"), result.stderr


# The hostile templates: each refused when parsed, naming --format.
HOSTILE_TEMPLATES = [
    "{payload:{0}}",
    "{payload:{foo}}",
    "{payload:{size.nope}}",
    "{}",
    "{size:{n.real}}",
    "{size:c}",
    "{payload:>{size}{size}}",
    "{n.real}",
    "{payload[0]}",
    "{payload!r}",
    "{size:99999}",
    "{",
    "}",
    "{nope}",
]


@pytest.mark.parametrize("template", HOSTILE_TEMPLATES)
def test_a_hostile_template_is_refused_when_parsed(broker: str, template: str) -> None:
    result = pybmq(broker, "consume", f"{DOMAIN}/never", "--format", template)
    assert result.returncode == 2
    assert result.stderr.startswith(b"pybmq consume: --format: at character ")


def test_control_characters_of_a_message_never_reach_the_terminal(
    broker: str, queue: str, tmp_path: Path
) -> None:
    evil = b"one\x1b]0;owned\x07\nfake record\x1b[2J\r\x9b\xe2\x80\xae"
    (tmp_path / "evil.bin").write_bytes(evil)
    args = ("--idle-timeout", "0.5", "--no-confirm")
    assert pybmq(broker, "post", queue, "--file", str(tmp_path / "evil.bin")).returncode == 0
    for flags in (["--format", "{n} {payload}|{queue}"], ["--print"]):
        result = pybmq(broker, "consume", queue, *flags, *args, "--json")
        lines = result.stdout.splitlines()
        assert len(lines) == 1, lines  # one message, one line
        assert not set(lines[0]) & {*range(0x20), 0x7F}
        assert b"one\\x1b]0;owned\\x07\\x0afake record\\x1b[2J\\x0d" in lines[0]
        assert b"\\x9b\\u202e" in lines[0]  # C1 and a direction override, escaped
    raw = pybmq(broker, "consume", queue, "--format", "{payload}", "--raw", *args, "--json")
    assert raw.stdout == evil.decode("utf-8", "backslashreplace").encode() + b"\n"
    exact = pybmq(broker, "consume", queue, "--jsonl", "--base64", *args)
    assert base64.b64decode(json.loads(exact.stdout)["payload_base64"]) == evil


def test_a_message_too_big_for_the_line_is_reported_and_the_run_goes_on(
    broker: str, queue: str
) -> None:
    posted = pybmq(broker, "post", queue, "-", stdin=b"small\n" + b"B" * 5000 + b"\nlast\n")
    assert posted.returncode == 0
    args = ("--format", "{n} {payload}", "--max-line-size", "100", "--idle-timeout", "0.5")
    result = pybmq(broker, "consume", queue, *args, "--json", "--count", "3")
    assert result.returncode == 1
    assert result.stdout.splitlines() == [b"1 small", b"3 last"]
    report, last = result.stderr.decode().splitlines()
    assert report.startswith("pybmq consume: message 2 (GUID ")
    assert "not written: {payload} is over 100 characters (--max-line-size)" in report
    assert report.endswith("left unconfirmed")
    document = json.loads(last)
    assert (document["outcome"], document["exit_code"]) == ("incomplete", 1)
    assert (document["received"], document["confirmed"], document["unwritten"]) == (3, 2, 1)
    # The message stayed in the queue: the next run meets it again, and ends cleanly again;
    # with --on-render-error stop it ends there, exit 2, naming it.
    stopped = pybmq(broker, "consume", queue, *args, "--json", "--on-render-error", "stop")
    assert stopped.returncode == 2 and stopped.stdout == b""
    document = json.loads(stopped.stderr.decode().splitlines()[-1])
    assert document["outcome"] == "bad input" and "message 1 (GUID " in document["reason"]
    assert "--on-render-error stop" in document["reason"]
    cut = pybmq(broker, "consume", queue, "--format", "{payload:.10}", "--idle-timeout", "0.5")
    assert cut.returncode == 0 and cut.stdout.splitlines()[0] == b"BBBBBBBBBB"
