"""Subscription expressions on the wire: their grammar (one parser, for the client and the
simulator) and how big one may be (the broker's evaluator limits, checked on tokens).

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
from typing import Generic, Protocol, TypeVar

from pybmq.errors import UsageError

__all__ = [
    "BROKER_LIMITS",
    "INT64_MAX",
    "INT64_MIN",
    "LEVELS",
    "Builder",
    "ExpressionLimitError",
    "ExpressionLimits",
    "ExpressionSyntaxError",
    "check_limits",
    "check_syntax",
    "complexity",
    "parse",
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


# ---------------------------------------------------------------------------- the grammar
#
# bmqeval's: integer, string, ``true``/``false`` literals; property names; ``exists(name)``;
# ``|| && ! ~ == != < <= > >= + - * / %`` and parentheses, ``||`` lowest, then ``&&``, equality,
# ordering, ``+ -``, ``* / %``, unary ``! ~ -``. Equality and ordering do not chain.

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# Binary operators by precedence level, lowest first, and whether the level chains.
LEVELS: tuple[tuple[frozenset[str], bool], ...] = (
    (frozenset({"||"}), True),
    (frozenset({"&&"}), True),
    (frozenset({"==", "!="}), False),
    (frozenset({"<", "<=", ">", ">="}), False),
    (frozenset({"+", "-"}), True),
    (frozenset({"*", "/", "%"}), True),
)

N = TypeVar("N")


class ExpressionSyntaxError(UsageError):
    """An expression that does not parse (bmqeval's ``e_SYNTAX``): the official SDKs refuse it
    before sending it, and so does pybmq."""

    code = "e_SYNTAX"


class Builder(Protocol[N]):
    """What :func:`parse` makes of each construct (the simulator: evaluation nodes)."""

    def literal(self, value: int | str | bool) -> N: ...
    def property(self, name: str) -> N: ...
    def exists(self, name: str) -> N: ...
    def unary(self, op: str, inner: N) -> N: ...
    def binary(self, op: str, left: N, right: N) -> N: ...


class _Parser(Generic[N]):
    def __init__(self, text: str, builder: Builder[N]) -> None:
        try:
            self.tokens = tokens(text)
        except ValueError as exc:
            raise ExpressionSyntaxError(str(exc)) from None
        self.i = 0
        self.build = builder

    def peek(self) -> tuple[str, str, int]:
        return self.tokens[self.i]

    def take(self) -> tuple[str, str, int]:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def fail(self, what: str) -> ExpressionSyntaxError:
        kind, text, pos = self.peek()
        found = "the end" if kind == "end" else repr(text)
        return ExpressionSyntaxError(f"{what}, found {found} at offset {pos}")

    def expression(self, level: int = 0) -> N:
        if level == len(LEVELS):
            return self.unary()
        ops, chains = LEVELS[level]
        left = self.expression(level + 1)
        while self.peek()[0] == "op" and self.peek()[1] in ops:
            op = self.take()[1]
            left = self.build.binary(op, left, self.expression(level + 1))
            if not chains and self.peek()[0] == "op" and self.peek()[1] in ops:
                raise self.fail(f"'{op}' does not chain")
        return left

    def unary(self) -> N:
        kind, text, _ = self.peek()
        if kind == "op" and text in ("!", "~", "-"):
            self.take()
            return self.build.unary(text, self.unary())
        return self.primary()

    def primary(self) -> N:
        kind, text, _ = self.take()
        if kind == "num":
            value = int(text)
            if not INT64_MIN <= value <= INT64_MAX:
                self.i -= 1
                raise self.fail("integer overflow")
            return self.build.literal(value)
        if kind == "str":
            return self.build.literal(re.sub(r"\\(.)", r"\1", text[1:-1]))
        if kind == "name":
            if text in _LITERAL_NAMES:
                return self.build.literal(text == "true")
            if text == "exists":
                if self.take()[1] != "(" or self.peek()[0] != "name":
                    self.i -= 1
                    raise self.fail("exists needs (property)")
                name = self.take()[1]
                if self.take()[1] != ")":
                    self.i -= 1
                    raise self.fail("expected ')'")
                return self.build.exists(name)
            return self.build.property(text)
        if kind == "op" and text == "(":
            inner = self.expression()
            if self.take()[1] != ")":
                self.i -= 1
                raise self.fail("expected ')'")
            return inner
        self.i -= 1
        raise self.fail("expected a value")


def parse(text: str, builder: Builder[N]) -> N:
    """``text`` made by ``builder``; ExpressionSyntaxError where it does not parse (RecursionError
    when it nests deeper than the interpreter allows: the caller says how that is refused)."""
    parser = _Parser(text, builder)
    node = parser.expression()
    if parser.peek()[0] != "end":
        raise parser.fail("unexpected token")
    return node


class _Nothing:
    """A builder that makes nothing: :func:`check_syntax` only wants the grammar checked."""

    def literal(self, value: int | str | bool) -> None:
        return None

    def property(self, name: str) -> None:
        return None

    def exists(self, name: str) -> None:
        return None

    def unary(self, op: str, inner: None) -> None:
        return None

    def binary(self, op: str, left: None, right: None) -> None:
        return None


def check_syntax(text: str) -> None:
    """Raise ExpressionSyntaxError if ``text`` does not parse (as bmqeval's compiler would)."""
    try:
        parse(text, _Nothing())
    except RecursionError:
        raise ExpressionLimitError(
            "e_TOO_COMPLEX", "subscription expression is too complex (nested too deeply)"
        ) from None
