"""The ``consume --format`` language (``pybmq.cli.template``): what it accepts, what it refuses
when parsed (naming where), and the bound on what one message renders to."""

from __future__ import annotations

import pytest
from pybmq.cli import template
from pybmq.errors import UsageError


def values(**given: object) -> dict[str, object]:
    fields = {"payload": "hello", "size": 5, "n": 7, "guid": "ab" * 16, "queue": "bmq://d/q"}
    fields.update(given)
    return {name: (lambda cut, value=value: value) for name, value in fields.items()}


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("{n} {guid:.4} {size:>4} B: {payload}", "7 abab    5 B: hello"),
        ("{{n}} {n:05d} {size:x} {size:#b} {n:+}", "{n} 00007 5 0b101 +7"),
        ("{payload:*^9}|{payload:.2}|{payload:<7.3}|", "**hello**|he|hel    |"),
        ("a\\tb\\nc\\\\n\\x", "a\tb\nc\\n\\x"),
        ("{size:,}", "5"),
        ("", ""),
    ],
)
def test_fields_specs_and_escapes(text: str, line: str) -> None:
    assert template.parse(text).render(values(), 1000) == line  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "at", "why"),
    [
        ("{payload:{0}}", 1, "a field inside a field"),
        ("ab {payload:>{size}{size}}", 4, "a field inside a field"),
        ("{size:{n.real}}", 1, "a field inside a field"),
        ("{}", 1, "a field needs a name"),
        ("x{n.real}", 2, "attribute and index access are not supported"),
        ("{payload[0]}", 1, "attribute and index access are not supported"),
        ("{payload!r}", 1, "conversions"),
        ("{size:c}", 1, "is not a number's spec"),
        ("{payload:d}", 1, "is not a text field's spec"),
        ("{payload:=9}", 1, "is not a text field's spec"),
        ("{size:.3}", 1, "is not a number's spec"),
        ("{size:4097}", 1, "width 4097 is over 4096"),
        ("{payload:.9999999999}", 1, "precision 9999999999 is too large"),
        ("{size:,x}", 1, "Cannot specify ','"),
        ("{nope}", 1, "unknown field {nope} (fields: payload, payload_base64, size"),
        ("ok }", 4, "a single '}'"),
        ("ok {payload", 4, "a '{' with no '}'"),
    ],
)
def test_what_is_refused_is_refused_when_parsed(text: str, at: int, why: str) -> None:
    with pytest.raises(UsageError) as refused:
        template.parse(text)
    assert str(refused.value).startswith(f"--format: at character {at}: ")
    assert why in str(refused.value)


def test_a_line_over_the_limit_is_refused_before_it_is_built() -> None:
    parsed = template.parse("{n} {payload}")
    assert parsed.render(values(payload="x" * 8), 10) == "7 xxxxxxxx"  # type: ignore[arg-type]
    with pytest.raises(template.LineTooLong, match="over 10 characters"):
        parsed.render(values(payload="x" * 9), 10)  # type: ignore[arg-type]
    asked: list[int] = []

    def payload(cut: int) -> str:
        asked.append(cut)
        return "y" * (cut + 1)  # as the sinks give it: at most one more than can be shown

    with pytest.raises(template.LineTooLong):
        parsed.render({**values(), "payload": payload}, 100)  # type: ignore[dict-item]
    assert asked == [100]
    cut = template.parse("{payload:.3}{payload:>4096}")
    with pytest.raises(template.LineTooLong):
        cut.render(values(), 4000)  # type: ignore[arg-type]


def test_a_precision_counts_the_messages_characters_and_never_cuts_an_escape() -> None:
    parsed = template.parse("{payload:.3}|")
    escape = lambda text: text.replace("\x1b", "\\x1b")  # noqa: E731
    assert parsed.render(values(payload="\x1b\x1bab"), 100, escape) == "\\x1b\\x1ba|"  # type: ignore[arg-type]


def test_only_the_fields_used_are_computed() -> None:
    assert template.parse("{n} {n:x} {guid}").fields == {"n", "guid"}
