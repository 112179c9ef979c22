"""How big a subscription expression may be: the broker's evaluator limits, checked on tokens.

A broker compiles every subscription expression it is given and refuses one that is too long
or uses too many operators or properties (bmqeval's ``e_TOO_LONG`` / ``e_TOO_COMPLEX``); a
refused expression is never applied, so its consumer silently receives nothing. The client checks
the same limits before it sends one (the user learns at ``open_queue``/``configure``) and the
simulator checks them where the broker does. Counting follows the broker's parser: every binary
and unary operator counts, and so does every property reference (``exists(p)`` counts once as an
operator and once as a property); literals and parentheses do not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pybmq.errors import UsageError

__all__ = [
    "BROKER_LIMITS",
    "ExpressionLimitError",
    "ExpressionLimits",
    "check_limits",
    "complexity",
    "property_names",
    "tokens",
]

# One token of the expression language: a number, a string literal, a name, or an operator.
_TOKEN = re.compile(
    r"\s*(?:(?P<num>-?[0-9]+)|(?P<str>\"(?:[^\\\"]|\\.)*\")|(?P<name>[A-Za-z][A-Za-z0-9_.]*)"
    r"|(?P<op>\|\||&&|==|!=|<=|>=|[()<>+\-*/%!~]))"
)
_LITERAL_NAMES = ("true", "false")


@dataclass(frozen=True)
class ExpressionLimits:
    """The most one expression may have: characters, operators, property references."""

    max_length: int = 128
    max_operators: int = 10
    max_properties: int = 10

    def __post_init__(self) -> None:
        for name in ("max_length", "max_operators", "max_properties"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise UsageError(f"ExpressionLimits.{name} must be an int of at least 1")


# What the broker's evaluator allows (bmqeval::SimpleEvaluator's k_MAX_* constants).
BROKER_LIMITS = ExpressionLimits()


class ExpressionLimitError(UsageError):
    """An expression over the broker's limits: ``code`` is ``e_TOO_LONG`` or ``e_TOO_COMPLEX``,
    as the broker names the refusal."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def tokens(text: str) -> list[tuple[str, str, int]]:
    """(kind, text, offset) for each token of ``text`` then ("end", "", len); ValueError names
    the first character that starts no token."""
    out: list[tuple[str, str, int]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise ValueError(f"unexpected character {text[pos:].lstrip()[:1]!r} at offset {pos}")
        kind = match.lastgroup or ""
        out.append((kind, match.group(kind), match.start(kind)))
        pos = match.end()
    out.append(("end", "", len(text)))
    return out


def complexity(text: str) -> tuple[int, int]:
    """(operators, property references) of ``text``, counted as the broker's parser counts."""
    operators = properties = 0
    previous: list[str] = []
    try:
        found = tokens(text)
    except ValueError:
        return (0, 0)  # a syntax error: the parser reports it
    for kind, value, _ in found:
        if kind == "op" and value not in "()":
            operators += 1
        elif kind == "name" and value not in _LITERAL_NAMES:
            if value == "exists":
                operators += 1
            else:
                properties += 1
                if previous[-2:] != ["exists", "("]:
                    operators += 1  # a property reference is a node of its own
        previous.append(value)
    return operators, properties


def property_names(text: str) -> tuple[str, ...]:
    """The message properties ``text`` refers to, each once, in order of first use (what a
    document of the subscription lists); empty for an expression that does not tokenize."""
    try:
        found = tokens(text)
    except ValueError:
        return ()
    names = (
        value
        for kind, value, _ in found
        if kind == "name" and value not in _LITERAL_NAMES and value != "exists"
    )
    return tuple(dict.fromkeys(names))


def check_limits(text: str, limits: ExpressionLimits = BROKER_LIMITS) -> None:
    """Raise ExpressionLimitError if ``text`` is longer or more complex than ``limits``."""
    if len(text) > limits.max_length:
        raise ExpressionLimitError(
            "e_TOO_LONG",
            f"subscription expression is too long ({len(text)} characters, "
            f"at most {limits.max_length})",
        )
    operators, properties = complexity(text)
    if operators > limits.max_operators:
        raise ExpressionLimitError(
            "e_TOO_COMPLEX",
            f"subscription expression is too complex ({operators} operators, "
            f"at most {limits.max_operators})",
        )
    if properties > limits.max_properties:
        raise ExpressionLimitError(
            "e_TOO_COMPLEX",
            f"subscription expression is too complex ({properties} properties, "
            f"at most {limits.max_properties})",
        )
