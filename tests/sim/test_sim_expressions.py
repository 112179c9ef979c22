"""Subscription expressions as the simulator evaluates them (the broker's simple evaluator)."""

from __future__ import annotations

import pytest
from pybmq.sim.expressions import ExpressionError, compile_expression

PROPS = {"x": 5, "y": -3, "name": "foo", "flag": True, "a.b": 7, "blob": b"\x00"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("x > 4", True),
        ("x > 5", False),
        ('x >= 5 && name == "foo"', True),
        ("x == 1 || y == -3", True),
        ("!flag", False),
        ("~(x < 0)", True),
        ("x + y * 2 == -1", True),  # * binds tighter than +
        ("(x + y) * 2 == 4", True),
        ("-x == -5", True),
        ("x / 2 == 2 && -7 / 2 == -3 && -7 % 2 == -1", True),  # C division
        ("a.b == 7", True),
        ("exists(name) && !exists(missing)", True),
        ("missing == 1", False),  # an unknown property makes it false
        ("!(missing == 1)", False),  # ... the whole expression, not just the comparison
        ('x == "5"', False),  # type mismatch
        ("blob == blob", False),  # binary values are not comparable
        ("x / 0 == 1", False),
        ('name == "fo\\"o"', False),
        ("true", True),
        ("x", False),  # not a boolean
    ],
)
def test_evaluation(text: str, expected: bool) -> None:
    assert compile_expression(text)(PROPS) is expected


@pytest.mark.parametrize(
    "text",
    [
        "x >",
        "x == 1 == 1",
        "x < 1 < 2",
        "(x",
        "x )",
        "exists x",
        "1 $ 2",
        "99999999999999999999 > x",
        "",
    ],
)
def test_syntax_errors(text: str) -> None:
    with pytest.raises(ExpressionError):
        compile_expression(text)
