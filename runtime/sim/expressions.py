"""Subscription expressions for the simulator: BlazingMQ's simple evaluator language, evaluated.

The grammar is the broker's (bmqeval), read by the one parser in pybmq.wire.expressions, which
the client uses to refuse an expression that does not parse; this module builds the predicate
from what it reads. Evaluation is typed: comparing values of different types,
a missing property, arithmetic on non-integers or a division by zero makes the whole expression
false for that message, as in the broker.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from pybmq.errors import UsageError
from pybmq.wire.expressions import (
    ExpressionLimitError,
    ExpressionLimits,
    ExpressionSyntaxError,
    check_limits,
    parse,
)

__all__ = [
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

MAX_LENGTH = 4096


class ExpressionError(UsageError):
    """A subscription expression that does not parse, or breaks the evaluator's limits (the
    broker refuses it); ``code`` names the reason as the broker's evaluator does."""

    def __init__(self, message: str, code: str = "e_SYNTAX") -> None:
        super().__init__(message)
        self.code = code


class _Undefined(Exception):
    """Evaluation hit a missing property or a type mismatch: the expression is false."""


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


def _negate(inner: Node) -> Node:
    def negate(props: Props) -> Value:
        value = inner(props)
        if type(value) is not bool:
            raise _Undefined("'!' on a non-boolean")
        return not value

    return negate


_BINARY: dict[str, Callable[[Node, Node], Node]] = {
    "||": lambda a, b: _logical(False, a, b),
    "&&": lambda a, b: _logical(True, a, b),
    "==": lambda a, b: _comparison(operator.eq, a, b),
    "!=": lambda a, b: _comparison(operator.ne, a, b),
    "<": lambda a, b: _comparison(operator.lt, a, b),
    "<=": lambda a, b: _comparison(operator.le, a, b),
    ">": lambda a, b: _comparison(operator.gt, a, b),
    ">=": lambda a, b: _comparison(operator.ge, a, b),
    "+": lambda a, b: _arithmetic(operator.add, a, b),
    "-": lambda a, b: _arithmetic(operator.sub, a, b),
    "*": lambda a, b: _arithmetic(operator.mul, a, b),
    "/": lambda a, b: _arithmetic(_c_div, a, b),
    "%": lambda a, b: _arithmetic(_c_mod, a, b),
}


class _Evaluator:
    """Builds the predicate's nodes as the shared parser (pybmq.wire.expressions) reads."""

    def literal(self, value: int | str | bool) -> Node:
        return lambda _props: value

    def property(self, name: str) -> Node:
        return _property(name)

    def exists(self, name: str) -> Node:
        return lambda props: name in props

    def unary(self, op: str, inner: Node) -> Node:
        if op == "-":
            return _arithmetic(operator.sub, lambda _props: 0, inner)
        return _negate(inner)

    def binary(self, op: str, left: Node, right: Node) -> Node:
        return _BINARY[op](left, right)


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
    try:
        node = parse(text, _Evaluator())
    except ExpressionSyntaxError as exc:
        raise ExpressionError(str(exc)) from None
    except RecursionError:
        raise ExpressionError(
            "expression is too complex (nested too deeply)", code="e_TOO_COMPLEX"
        ) from None

    def matches(props: Props) -> bool:
        try:
            return node(props) is True
        except (_Undefined, RecursionError):
            return False

    return matches
