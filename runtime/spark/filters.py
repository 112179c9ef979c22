"""Spark filters → a BlazingMQ subscription expression (``pushFilters``), no pyspark import.

A batch read with ``pushFilters=true`` hands the broker, as its subscription expression, the
filters on property columns (``propertySchema``) that the broker's expression language says the
same thing about; the broker then pushes only matching messages, and the others stay in the
queue. Everything else goes back to Spark, which evaluates it on the rows as usual.

What translates, and why it means the same on both sides (Spark drops a row whose filter is
null; the broker skips a message whose expression hits a missing property or a type mismatch):

- ``=``, ``<=>`` (with a value), ``<``, ``<=``, ``>``, ``>=`` on a ``bigint`` column with an
  integer: the column holds any integer property (CHAR, SHORT, INT32, INT64), which the broker
  also compares as integers; a missing or non-integer property is null in Spark and a
  non-match on the broker.
- ``=`` on a ``string`` column with plain printable ASCII text, on a ``boolean`` column with a
  bool; ``IN`` (at most :data:`MAX_IN_VALUES` values) as ``==`` joined by ``||``.
- ``NOT`` of a filter that translates (``!``: both sides drop a row whose property is missing).

Not pushed: ``IS NULL``/``IS NOT NULL`` (a property of another type is null in Spark but exists
for the broker), ordering of strings, string functions, ``binary`` columns, property names the
expression grammar cannot spell, and whatever would take the expression past the broker's
limits (``pybmq.wire.expressions.BROKER_LIMITS``: 128 characters, 10 operators, 10 property
references — over them the broker ignores the subscription and delivers nothing).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from pybmq.wire.expressions import BROKER_LIMITS, ExpressionLimitError, check_limits

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "MAX_EXPRESSION_LENGTH",
    "MAX_IN_VALUES",
    "split_filters",
    "translate",
]

MAX_EXPRESSION_LENGTH = BROKER_LIMITS.max_length  # the rest of the filters stay in Spark
MAX_IN_VALUES = 64
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.]*\Z")  # a property name the expression grammar reads
_PLAIN_TEXT = re.compile(r"[ !#-\[\]-~]*\Z")  # printable ASCII without '"' and '\'
_ORDERING = {
    "GreaterThan": ">",
    "GreaterThanOrEqual": ">=",
    "LessThan": "<",
    "LessThanOrEqual": "<=",
}


def _literal(sql_type: str, value: Any) -> str | None:
    """``value`` as an expression literal of a column of ``sql_type``, or None."""
    if sql_type == "bigint" and type(value) is int and INT64_MIN <= value <= INT64_MAX:
        return str(value)
    if sql_type == "boolean" and type(value) is bool:
        return "true" if value else "false"
    if sql_type == "string" and type(value) is str and _PLAIN_TEXT.match(value):
        return f'"{value}"'
    return None


def _column(filter_: Any, columns: Mapping[str, str]) -> tuple[str, str] | None:
    path = getattr(filter_, "attribute", None)
    if not isinstance(path, tuple) or len(path) != 1:
        return None  # a nested field: never a property column
    name = path[0]
    sql_type = columns.get(name)
    if sql_type is None or not _NAME.match(name):
        return None
    return name, sql_type


def translate(filter_: Any, columns: Mapping[str, str]) -> str | None:
    """One Spark filter as an expression term, or None if it must stay in Spark."""
    kind = type(filter_).__name__
    if kind == "Not":
        inner = translate(filter_.child, columns)
        return None if inner is None else f"!({inner})"
    column = _column(filter_, columns)
    if column is None:
        return None
    name, sql_type = column
    if kind in ("EqualTo", "EqualNullSafe"):
        literal = _literal(sql_type, filter_.value)
        return None if literal is None else f"{name} == {literal}"
    if kind in _ORDERING and sql_type == "bigint":
        literal = _literal(sql_type, filter_.value)
        return None if literal is None else f"{name} {_ORDERING[kind]} {literal}"
    if kind == "In" and 0 < len(filter_.value) <= MAX_IN_VALUES:
        literals = [_literal(sql_type, value) for value in filter_.value]
        if any(literal is None for literal in literals):
            return None
        return "(" + " || ".join(f"{name} == {literal}" for literal in literals) + ")"
    return None


def split_filters(filters: Iterable[Any], columns: Mapping[str, str]) -> tuple[str, list[Any]]:
    """The subscription expression for the filters that translate (AND-ed; "" = none) and the
    filters Spark keeps, as the same objects (Spark wants them back by reference). Filters are
    pushed in order while the expression stays within the broker's limits."""
    terms: list[str] = []
    kept: list[Any] = []
    for filter_ in filters:
        term = translate(filter_, columns)
        if term is not None:
            candidate = " && ".join([*terms, f"({term})"])
            try:
                check_limits(candidate)
            except ExpressionLimitError:
                term = None
        if term is None:
            kept.append(filter_)
            continue
        terms.append(f"({term})")
    return " && ".join(terms), kept
