"""Subscription expressions for the simulator: BlazingMQ's simple evaluator language.

The grammar follows the broker's (bmqeval): integer, string, ``true``/``false`` literals; property
names (``[A-Za-z][A-Za-z0-9_.]*``); ``exists(name)``; ``|| && ! ~ == != < <= > >= + - * / %`` and
parentheses, with the broker's precedence (``||`` lowest, then ``&&``, equality, ordering,
``+ -``, ``* / %``, unary ``! ~ -``). Evaluation is typed: comparing values of different types,
a missing property, arithmetic on non-integers or a division by zero makes the whole expression
false for that message, as in the broker.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from typing import Any

from pybmq.errors import UsageError
from pybmq.wire.expressions import ExpressionLimitError, ExpressionLimits, check_limits, tokens

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "MAX_LENGTH",
    "ExpressionError",
    "Node",
    "Props",
    "Value",
    "compile_expression",
]

Value = int | bool | str
Props = Mapping[str, object]
Node = Callable[[Props], Value]

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_LENGTH = 4096


class ExpressionError(UsageError):
    """A subscription expression that does not parse, or breaks the evaluator's limits (the
    broker refuses it); ``code`` names the reason as the broker's evaluator does."""

    def __init__(self, message: str, code: str = "e_SYNTAX") -> None:
        super().__init__(message)
        self.code = code


class _Undefined(Exception):
    """Evaluation hit a missing property or a type mismatch: the expression is false."""


def _tokens(text: str) -> list[tuple[str, str, int]]:
    try:
        return tokens(text)
    except ValueError as exc:
        raise ExpressionError(str(exc)) from None


def _property(name: str) -> Node:
    def get(props: Props) -> Value:
        if name not in props:
            raise _Undefined(name)
        value = props[name]
        if isinstance(value, (bool, int, str)):
            return value
        raise _Undefined(name)  # BINARY values are not comparable

    return get


def _comparison(op: Callable[[Any, Any], bool], left: Node, right: Node) -> Node:
    def compare(props: Props) -> Value:
        a, b = left(props), right(props)
        if type(a) is not type(b):
            raise _Undefined("type mismatch")
        return op(a, b)

    return compare


def _arithmetic(op: Callable[[int, int], int], left: Node, right: Node) -> Node:
    def compute(props: Props) -> Value:
        a, b = left(props), right(props)
        if type(a) is not int or type(b) is not int:
            raise _Undefined("arithmetic on a non-integer")
        try:
            return op(a, b)
        except ZeroDivisionError:
            raise _Undefined("division by zero") from None

    return compute


def _logical(is_and: bool, left: Node, right: Node) -> Node:
    def combine(props: Props) -> Value:
        a = left(props)
        if type(a) is not bool:
            raise _Undefined("logical operator on a non-boolean")
        if a is not is_and:  # short-circuit: false && ..., true || ...
            return a
        b = right(props)
        if type(b) is not bool:
            raise _Undefined("logical operator on a non-boolean")
        return b

    return combine


def _c_div(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b >= 0) else -quotient


def _c_mod(a: int, b: int) -> int:
    return a - b * _c_div(a, b)


# Binary operators by precedence level, lowest first (bmqeval's %left / %nonassoc lines).
_LEVELS: list[tuple[dict[str, Callable[[Node, Node], Node]], bool]] = [
    ({"||": lambda a, b: _logical(False, a, b)}, True),
    ({"&&": lambda a, b: _logical(True, a, b)}, True),
    (
        {
            "==": lambda a, b: _comparison(operator.eq, a, b),
            "!=": lambda a, b: _comparison(operator.ne, a, b),
        },
        False,
    ),
    (
        {
            "<": lambda a, b: _comparison(operator.lt, a, b),
            "<=": lambda a, b: _comparison(operator.le, a, b),
            ">": lambda a, b: _comparison(operator.gt, a, b),
            ">=": lambda a, b: _comparison(operator.ge, a, b),
        },
        False,
    ),
    (
        {
            "+": lambda a, b: _arithmetic(operator.add, a, b),
            "-": lambda a, b: _arithmetic(operator.sub, a, b),
        },
        True,
    ),
    (
        {
            "*": lambda a, b: _arithmetic(operator.mul, a, b),
            "/": lambda a, b: _arithmetic(_c_div, a, b),
            "%": lambda a, b: _arithmetic(_c_mod, a, b),
        },
        True,
    ),
]


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.i = 0

    def peek(self) -> tuple[str, str, int]:
        return self.tokens[self.i]

    def take(self) -> tuple[str, str, int]:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def fail(self, what: str) -> ExpressionError:
        kind, text, pos = self.peek()
        found = "the end" if kind == "end" else repr(text)
        return ExpressionError(f"{what}, found {found} at offset {pos}")

    def expression(self, level: int = 0) -> Node:
        if level == len(_LEVELS):
            return self.unary()
        ops, associative = _LEVELS[level]
        left = self.expression(level + 1)
        while self.peek()[0] == "op" and self.peek()[1] in ops:
            op = self.take()[1]
            left = ops[op](left, self.expression(level + 1))
            if not associative and self.peek()[0] == "op" and self.peek()[1] in ops:
                raise self.fail(f"'{op}' does not chain")
        return left

    def unary(self) -> Node:
        kind, text, _ = self.peek()
        if kind == "op" and text in ("!", "~"):
            self.take()
            inner = self.unary()

            def negate(props: Props) -> Value:
                value = inner(props)
                if type(value) is not bool:
                    raise _Undefined("'!' on a non-boolean")
                return not value

            return negate
        if kind == "op" and text == "-":
            self.take()
            inner = self.unary()
            return _arithmetic(operator.sub, lambda _props: 0, inner)
        return self.primary()

    def primary(self) -> Node:
        kind, text, _ = self.take()
        if kind == "num":
            value = int(text)
            if not INT64_MIN <= value <= INT64_MAX:
                self.i -= 1
                raise self.fail("integer overflow")
            return lambda _props: value
        if kind == "str":
            literal = re.sub(r"\\(.)", r"\1", text[1:-1])
            return lambda _props: literal
        if kind == "name":
            if text in ("true", "false"):
                flag = text == "true"
                return lambda _props: flag
            if text == "exists":
                if self.take()[1] != "(" or self.peek()[0] != "name":
                    self.i -= 1
                    raise self.fail("exists needs (property)")
                name = self.take()[1]
                if self.take()[1] != ")":
                    self.i -= 1
                    raise self.fail("expected ')'")
                return lambda props: name in props
            return _property(text)
        if kind == "op" and text == "(":
            inner = self.expression()
            if self.take()[1] != ")":
                self.i -= 1
                raise self.fail("expected ')'")
            return inner
        self.i -= 1
        raise self.fail("expected a value")


def compile_expression(
    text: str, limits: ExpressionLimits | None = None
) -> Callable[[Props], bool]:
    """A predicate over a message's properties; ExpressionError if ``text`` does not parse or
    breaks ``limits`` (None: only the grammar and MAX_LENGTH). The predicate never raises: an
    evaluation that fails in any way (even one nested too deeply for the interpreter) is false."""
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"expression longer than {MAX_LENGTH} characters")
    if limits is not None:
        try:
            check_limits(text, limits)
        except ExpressionLimitError as exc:
            raise ExpressionError(str(exc), code=exc.code) from None
    parser = _Parser(text)
    try:
        node = parser.expression()
    except RecursionError:
        raise ExpressionError(
            "expression is too complex (nested too deeply)", code="e_TOO_COMPLEX"
        ) from None
    if parser.peek()[0] != "end":
        raise parser.fail("unexpected token")

    def matches(props: Props) -> bool:
        try:
            return node(props) is True
        except (_Undefined, RecursionError):
            return False

    return matches
