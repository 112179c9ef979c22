"""The ``consume --format`` template language: literal text and named fields, nothing more.

    {n} {guid} {size:>8} B: {payload:.80}\\n

A field is ``{name}`` or ``{name:spec}``, its name one of ``FIELDS``; ``{{`` and ``}}`` are
braces; ``\\n``, ``\\t`` and ``\\\\`` are a newline, a tab and a backslash. A text field's spec is
``[[fill]align][width][.precision]`` (the precision cuts the text to that many of its
characters); a number's is
``[[fill]align][sign][#][0][width][,|_][type]``, the type one of ``d x X o b``. There is no
attribute or index access, no conversion, no nested field and no spec that depends on the
value, so a template is checked whole when it is parsed (``parse``), and rendering a message
can fail in one way only: a line longer than its limit, found before it is built
(``Template.render``). Widths are at most ``MAX_WIDTH``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pybmq.errors import PybmqError, UsageError

__all__ = [
    "FIELDS",
    "MAX_WIDTH",
    "NUMBER_FIELDS",
    "LineTooLong",
    "RenderError",
    "Template",
    "parse",
]

FIELDS = {
    "payload": "the payload as text (bytes that are not UTF-8 as \\xNN)",
    "payload_base64": "the payload in base64",
    "size": "payload bytes",
    "guid": "the message GUID in hex",
    "queue": "the queue URI",
    "properties": "the properties as JSON (name: value)",
    "compression": "none or zlib, as it arrived",
    "n": "the message's number in this run, from 1",
}
NUMBER_FIELDS = frozenset({"size", "n"})
MAX_WIDTH = 4096
_MAX_PRECISION_DIGITS = 9

_ALIGN = r"(?:(?P<fill>[^{}])?(?P<align>[<>^=]))?"
_TEXT_SPEC = re.compile(_ALIGN + r"(?P<width>\d+)?(?:\.(?P<precision>\d+))?")
_NUMBER_SPEC = re.compile(
    _ALIGN + r"(?P<sign>[-+ ])?(?P<alt>#)?(?P<zero>0)?(?P<width>\d+)?(?P<group>[,_])?"
    r"(?P<type>[dxXob])?"
)
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\"}


class RenderError(PybmqError):
    """A message this template cannot write (its reason says why); the message, not the run,
    is at fault."""


class LineTooLong(RenderError):
    """The line a message would make is over the limit."""


@dataclass(frozen=True)
class _Field:
    name: str
    spec: str  # without the precision, which render() applies itself (before escaping)
    precision: int | None


def _template_error(position: int, why: str) -> UsageError:
    return UsageError(f"--format: at character {position + 1}: {why}")


def _field(text: str, position: int) -> _Field:
    """One ``{...}`` (``text`` without its braces) starting at ``position``."""
    name, _, spec = text.partition(":")
    if "{" in text:
        raise _template_error(position, "a field inside a field is not supported")
    if not name:
        raise _template_error(position, f"a field needs a name ({', '.join(FIELDS)})")
    if "!" in name:
        raise _template_error(position, f"{{{text}}}: conversions (!r, !s, !a) are not supported")
    if any(c in name for c in ".[]"):
        raise _template_error(position, f"{{{text}}}: attribute and index access are not supported")
    if name not in FIELDS:
        raise _template_error(position, f"unknown field {{{name}}} (fields: {', '.join(FIELDS)})")
    number = name in NUMBER_FIELDS
    match = (_NUMBER_SPEC if number else _TEXT_SPEC).fullmatch(spec)
    kind = "a number's" if number else "a text field's"
    if match is None or (not number and match["align"] == "="):
        form = "[[fill]align][sign][#][0][width][,|_][dxXob]" if number else (
            "[[fill]align][width][.precision]"
        )  # fmt: skip
        raise _template_error(position, f"{{{text}}}: {spec!r} is not {kind} spec ({form})")
    width = int(match["width"] or 0)
    if width > MAX_WIDTH:
        raise _template_error(position, f"{{{text}}}: width {width} is over {MAX_WIDTH}")
    precision = match.groupdict().get("precision")
    if precision is not None and len(precision) > _MAX_PRECISION_DIGITS:
        raise _template_error(position, f"{{{text}}}: precision {precision} is too large")
    try:  # combinations the grammar lets through but format() refuses, e.g. ',' with 'x'
        format(0 if number else "", spec)
    except ValueError as exc:
        raise _template_error(position, f"{{{text}}}: {exc}") from None
    if precision is None:
        return _Field(name, spec, None)
    return _Field(name, spec[: spec.rindex(".")], int(precision))


def parse(template: str) -> Template:
    """The template, checked whole; ``UsageError`` names the first problem and where it is."""
    parts: list[str | _Field] = []
    literal: list[str] = []
    i = 0
    while i < len(template):
        c = template[i]
        pair = template[i : i + 2]
        if pair in ("{{", "}}"):
            literal.append(c)
            i += 2
        elif c == "\\" and pair[1:] in _ESCAPES:
            literal.append(_ESCAPES[pair[1]])
            i += 2
        elif c == "}":
            raise _template_error(i, "a single '}' (write '}}' for a brace)")
        elif c == "{":
            end = template.find("}", i + 1)
            if end < 0:
                raise _template_error(i, "a '{' with no '}' (write '{{' for a brace)")
            if literal:
                parts.append("".join(literal))
                literal = []
            parts.append(_field(template[i + 1 : end], i))
            i = end + 1
        else:
            literal.append(c)
            i += 1
    if literal:
        parts.append("".join(literal))
    return Template(tuple(parts))


@dataclass(frozen=True)
class Template:
    """A parsed template: literal strings and fields, in order."""

    parts: tuple[str | _Field, ...]

    @property
    def fields(self) -> frozenset[str]:
        """The names of the fields it uses (only those need computing for a message)."""
        return frozenset(p.name for p in self.parts if isinstance(p, _Field))

    def render(
        self,
        values: Mapping[str, Callable[[int], str | int]],
        limit: int,
        escape: Callable[[str], str] | None = None,
    ) -> str:
        """The line for one message. ``values[name](cut)`` gives a field's value; a text may
        stop after ``cut + 1`` characters (no more can be shown, and the one more tells that
        the text is longer). A text's precision counts its own characters, then ``escape``
        makes it printable (an escape is never cut). ``LineTooLong`` when the line would be
        longer than ``limit`` characters, found before a longer one is built."""
        pieces: list[str] = []
        total = 0
        for part in self.parts:
            if isinstance(part, str):
                piece = part
            else:
                cut = limit if part.precision is None else min(part.precision, limit)
                value = values[part.name](cut)
                if isinstance(value, str):
                    if part.precision is not None:
                        value = value[: part.precision]
                    elif len(value) > limit:
                        raise LineTooLong(f"{{{part.name}}} is over {limit} characters")
                    if escape is not None:
                        value = escape(value)
                piece = format(value, part.spec)
            total += len(piece)
            if total > limit:
                raise LineTooLong(f"the line would be over {limit} characters")
            pieces.append(piece)
        return "".join(pieces)
