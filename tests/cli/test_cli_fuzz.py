"""A fuzz of the CLI's hostile inputs (hypothesis): JSON Lines streams, stdin lines and
``--format`` templates built from the pieces that broke it (lone surrogates, deep nesting,
nested fields, attribute access, huge widths, control characters), through the readers, the
template language and ``pybmq post``/``consume`` themselves. Whatever comes in, the only
outcomes are a message, a ``ContentError``/``UsageError`` naming where, or a ``RenderError`` for
one message: never another exception, never a line over its limit, never a raw control
character of a message's in text output."""

from __future__ import annotations

import asyncio
import io
import itertools
import json
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pybmq.cli import template
from pybmq.cli.content import ContentError, Outgoing, stdin_lines, stdin_messages
from pybmq.cli.main import main
from pybmq.cli.sinks import field_values, format_sink, print_sink
from pybmq.errors import UsageError
from pybmq.printable import escape_controls
from pybmq.sim.server import ThreadedBrokerSimulator

pytestmark = pytest.mark.timeout(600)

FUZZ = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# -------------------------------------------------------------------- JSON Lines and lines

HOSTILE_STRINGS = st.sampled_from(
    ["\ud800", "\udfff", "\udc80", "\x00", "\x1b[2J", "\n", "\u202e", "", "x" * 300, "é"]
)
JSON_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    HOSTILE_STRINGS,
    st.text(max_size=20),
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
PROPERTY_TYPES = st.sampled_from(
    ["bool", "char", "short", "int32", "int64", "string", "binary", "nope", 3, None, [], {}]
)
PROPERTIES = st.dictionaries(
    st.one_of(HOSTILE_STRINGS, st.text(max_size=10)),
    st.one_of(JSON_VALUES, st.fixed_dictionaries({"type": PROPERTY_TYPES, "value": JSON_VALUES})),
    max_size=3,
)
RECORDS = st.fixed_dictionaries(
    {},
    optional={
        "payload": st.one_of(HOSTILE_STRINGS, st.text(max_size=40), JSON_VALUES),
        "payload_base64": st.one_of(st.sampled_from(["eA==", "!!", "", "eA"]), JSON_VALUES),
        "properties": st.one_of(PROPERTIES, JSON_VALUES),
        "compression": st.one_of(st.sampled_from(["none", "zlib", "gzip"]), JSON_VALUES),
        "error": st.text(max_size=5),
    },
)


def _json_line(value: Any) -> bytes:
    return json.dumps(value).encode()


LINES = st.one_of(
    RECORDS.map(_json_line),
    JSON_VALUES.map(_json_line),
    st.integers(1, 200_000).map(lambda depth: b"[" * depth),
    st.integers(1, 5_000).map(lambda digits: b'{"payload": "x", "n": ' + b"9" * digits + b"}"),
    st.binary(max_size=60).map(lambda raw: raw.replace(b"\n", b"")),
)


async def _chunked(data: bytes, sizes: list[int]) -> AsyncIterator[bytes]:
    position = 0
    for size in itertools.cycle(sizes):
        if position >= len(data):
            return
        yield data[position : position + size]
        position += size


def _read_all(
    data: bytes, sizes: list[int], jsonl: bool, max_line: int
) -> tuple[list[Outgoing], ContentError | None]:
    async def run() -> tuple[list[Outgoing], ContentError | None]:
        got: list[Outgoing] = []
        try:
            async for batch in stdin_messages(jsonl, None, _chunked(data, sizes), max_line):
                got.extend(batch)
        except ContentError as exc:
            return got, exc
        return got, None

    return asyncio.run(run())


@FUZZ
@given(
    lines=st.lists(LINES, max_size=6),
    sizes=st.lists(st.integers(1, 70_000), min_size=1, max_size=4),
    max_line=st.integers(1, 300_000),
)
def test_jsonl_input_gives_messages_or_an_error_naming_the_line(
    lines: list[bytes], sizes: list[int], max_line: int
) -> None:
    messages, error = _read_all(b"\n".join(lines), sizes, True, max_line)
    for message in messages:
        assert isinstance(message.payload, bytes) and message.payload
        assert message.where.startswith("--jsonl stdin line ")
    if error is not None:
        assert str(error).startswith("--jsonl stdin line "), error


@FUZZ
@given(
    data=st.binary(max_size=3000).map(lambda raw: raw.replace(b"\x00", b"\n")),
    sizes=st.lists(st.integers(1, 500), min_size=1, max_size=4),
    max_line=st.integers(1, 400),
)
def test_stdin_lines_are_the_lines_of_the_input_up_to_the_first_too_long(
    data: bytes, sizes: list[int], max_line: int
) -> None:
    async def run() -> tuple[list[bytes], ContentError | None]:
        got: list[bytes] = []
        try:
            async for batch in stdin_lines(_chunked(data, sizes), max_line, "stdin"):
                got.extend(batch)
        except ContentError as exc:
            return got, exc
        return got, None

    got, error = asyncio.run(run())
    expected = data.split(b"\n")
    if expected and not expected[-1]:
        expected.pop()
    too_long = next((i for i, line in enumerate(expected) if len(line) > max_line), None)
    if too_long is None:
        assert error is None and got == expected
    else:
        assert got == expected[:too_long]
        assert (
            str(error) == f"stdin line {too_long + 1}: longer than --max-line-size {max_line} bytes"
        )


# -------------------------------------------------------------------- templates

TEMPLATE_PIECES = st.sampled_from(
    [
        *(f"{{{name}}}" for name in template.FIELDS),
        "{", "}", "{{", "}}", ":", ".", "[0]", "!r", "{0}", "{}", "\\n", "\\t", "\\\\", "\\",
        "{payload:", "{size:", "{n:", ">", "<", "^", "=", "*", ",", "_", "#", "0", "9", "99999",
        ".3", "c", "x", "d", "s", "{size.real}", "{payload[0]}", " ", "text", "é",
    ]
)  # fmt: skip
TEMPLATES = st.lists(TEMPLATE_PIECES, max_size=10).map("".join)


@dataclass
class FakeQueue:
    uri: str = "bmq://bmq.test.mem.priority/fuzz\x1b[2J"


@dataclass
class FakeMessage:
    """What the sinks read of a received message."""

    payload: bytes
    properties: dict[str, Any] = field(default_factory=dict)
    error: Exception | None = None
    guid: bytes = bytes(range(16))
    queue: FakeQueue = field(default_factory=FakeQueue)
    message: object = None


MESSAGES = st.builds(
    FakeMessage,
    payload=st.one_of(
        st.binary(min_size=1, max_size=200),
        st.sampled_from([b"\x1b]0;owned\x07\nfake\r", "\u202e\u2066".encode(), b"\xff" * 50]),
        st.integers(1, 3_000_000).map(lambda n: b"\x1b" * n),
    ),
    properties=st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), HOSTILE_STRINGS)),
    error=st.sampled_from([None, None, None, ValueError("inflated to more than the limit")]),
)


@FUZZ
@given(text=TEMPLATES, messages=st.lists(MESSAGES, max_size=3), limit=st.integers(1, 5000))
def test_a_template_is_refused_whole_or_renders_every_message_within_bounds(
    text: str, messages: list[FakeMessage], limit: int
) -> None:
    try:
        parsed = template.parse(text)
    except UsageError as exc:
        assert str(exc).startswith("--format: at character "), exc
        return
    literal = "".join(part for part in parsed.parts if isinstance(part, str))
    for raw in (False, True):
        out = io.StringIO()
        sinks = [format_sink(out, parsed, raw, limit), print_sink(out, raw, limit)]
        for number, message in enumerate(messages, 1):
            for sink in sinks:
                before = out.tell()
                try:
                    sink(message, number)  # type: ignore[arg-type]
                except template.RenderError:
                    assert out.tell() == before  # nothing of it was written
                    continue
                line = out.getvalue()[before:-1]
                assert len(line) <= limit
                if raw:
                    continue
                # Text output: no control character but the template's own newlines and tabs.
                if sink is sinks[0]:
                    for control in "\n\t":
                        assert line.count(control) == literal.count(control)
                        line = line.replace(control, "")
                assert escape_controls(line, keep_lines=False) == line


def test_text_fields_are_computed_only_as_far_as_a_line_can_show() -> None:
    message = FakeMessage(b"\x1b" * (64 << 20))
    values = field_values(message, 1)  # type: ignore[arg-type]
    assert len(values["payload"](10)) == 11 and len(values["payload_base64"](10)) <= 16
    parsed = template.parse("{payload:.3}|{payload}")
    with pytest.raises(template.LineTooLong):
        parsed.render(values, 1000, lambda text: escape_controls(text, keep_lines=False))


# -------------------------------------------------------------------- the commands themselves


@pytest.fixture(scope="module")
def broker() -> Iterator[str]:
    with ThreadedBrokerSimulator() as sim:
        yield sim.url


_queues = itertools.count()


def _main_with_stdin(argv: list[str], data: bytes, folder: Path) -> int:
    """``pybmq ARGV`` in this process, ``data`` on its stdin (a real file: it is read by fd)."""
    path = folder / f"stdin{next(_queues)}"
    path.write_bytes(data)
    saved = sys.stdin
    try:
        with path.open("r") as sys.stdin:
            return main(argv)
    finally:
        sys.stdin = saved


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(lines=st.lists(LINES, min_size=1, max_size=4), max_line=st.integers(1, 300_000))
def test_post_jsonl_ends_with_a_documented_status(
    broker: str,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    lines: list[bytes],
    max_line: int,
) -> None:
    uri = f"bmq://bmq.test.mem.priority/fuzz{next(_queues)}"
    argv = ["post", uri, "--jsonl", "-", "--json", "--broker", broker, "--max-line-size"]
    status = _main_with_stdin(
        [*argv, str(max_line)], b"\n".join(lines), tmp_path_factory.mktemp("in")
    )
    out = capsys.readouterr().out
    assert status in (0, 2), out
    document = json.loads(out.splitlines()[-1])
    assert document["exit_code"] == status
    if status == 2:
        assert document["reason"].startswith("--jsonl stdin line ")


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(text=TEMPLATES)
def test_consume_format_is_checked_before_connecting(
    capsys: pytest.CaptureFixture[str], text: str
) -> None:
    nowhere = "tcp://127.0.0.1:1"  # a valid template gets as far as connecting: refused, 3
    argv = ["consume", "bmq://bmq.test.mem.priority/q", "--broker", nowhere, "--format", text]
    status = main([*argv, "--connect-timeout", "2", "--json"])
    err = capsys.readouterr().err
    assert status in (2, 3)
    if status == 2:  # named by the template's parser, or by argparse (an empty one)
        assert "pybmq consume: --format: at character " in err or "argument --format" in err
