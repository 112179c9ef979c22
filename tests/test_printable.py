"""``pybmq.printable``: the one escaping of control characters, used by ``pybmq admin``, the
simulator's admin answers and ``pybmq consume``'s text output."""

from __future__ import annotations

import pybmq.cli.admin
import pybmq.cli.sinks
import pybmq.sim.admin
from hypothesis import given
from hypothesis import strategies as st
from pybmq.printable import escape_controls


def test_terminal_sequences_are_escaped_and_lines_kept_or_not() -> None:
    evil = "a\x1b]0;owned\x07b\nc\td\re\x9b\x7f"
    assert escape_controls(evil) == "a\\x1b]0;owned\\x07b\nc\td\\x0de\\x9b\\x7f"
    assert escape_controls(evil, keep_lines=False) == (
        "a\\x1b]0;owned\\x07b\\x0ac\\x09d\\x0de\\x9b\\x7f"
    )


def test_direction_overrides_and_lone_surrogates_are_escaped() -> None:
    assert escape_controls("x\u202ey\u2066z\u200f") == "x\\u202ey\\u2066z\\u200f"
    assert escape_controls("\ud800") == "\\ud800"
    assert escape_controls("é ü 日本 🙂") == "é ü 日本 🙂"  # text is left alone


@given(st.text())
def test_the_result_is_printable_utf8_on_one_line(text: str) -> None:
    escaped = escape_controls(text, keep_lines=False)
    escaped.encode("utf-8")  # never a lone surrogate
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in escaped)
    assert escape_controls(escaped, keep_lines=False) == escaped


def test_every_user_shares_the_one_function() -> None:
    assert pybmq.cli.admin.escape_controls is escape_controls
    assert pybmq.sim.admin.escape_controls is escape_controls
    assert pybmq.cli.sinks.escape_controls is escape_controls
