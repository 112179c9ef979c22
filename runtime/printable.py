"""Printable text, both ways: text from a peer made safe to print on a terminal (the one place
that escapes control characters: ``pybmq admin``'s answers, the simulator's admin answers,
``pybmq consume``'s text output), and text we send where the protocol asks for printable ASCII
(``printable_ascii``: the negotiation's identity fields).

A producer's payload or a broker's answer may carry bytes that drive the terminal printing them:
ESC sequences that set the title, clear the screen or move the cursor, BEL, a carriage return
that overwrites a line, a newline that fakes a record, or Unicode direction overrides that show
text in another order than it is stored; and a lone surrogate (a string decoded from bytes that
were not UTF-8) cannot be written to a UTF-8 stream at all. Each is written as a visible escape
instead: ``\\xNN`` below U+0100, ``\\uNNNN`` above.
"""

from __future__ import annotations

import re

__all__ = ["escape_controls", "is_printable_ascii", "printable_ascii"]

# C0 (but newline and tab, escaped only with keep_lines=False), DEL, C1, the Unicode direction
# marks, embeddings, overrides and isolates, and surrogates.
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_KEEP_LINES = re.compile(f"[{_CONTROLS}]")
_ONE_LINE = re.compile(f"[\n\t{_CONTROLS}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str, *, keep_lines: bool = True) -> str:
    """``text`` with its control characters written as ``\\xNN`` (``\\uNNNN``). Newlines and
    tabs stay unless ``keep_lines`` is False: then the text is sure to print as one line."""
    return (_KEEP_LINES if keep_lines else _ONE_LINE).sub(_escape, text)


# What upstream's negotiation asks of every string field (bmqp_ctrlmsg.xsd's ClientIdentity since
# a495f02b1, "in preparation for enforcing it"): printable ASCII, space to tilde.
_NOT_PRINTABLE_ASCII = re.compile("[^\x20-\x7e]")


def is_printable_ascii(text: str) -> bool:
    """True when every character of ``text`` is printable ASCII (space to tilde)."""
    return _NOT_PRINTABLE_ASCII.search(text) is None


def printable_ascii(text: str, limit: int) -> str:
    """``text`` as printable ASCII of at most ``limit`` characters: each other character
    (control, non-ASCII, surrogate) becomes ``?``, as the broker shows them in its logs."""
    return _NOT_PRINTABLE_ASCII.sub("?", text[:limit])
