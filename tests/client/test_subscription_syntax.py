"""A subscription expression that does not parse is refused by the client before it is sent, as
the official SDKs refuse it (upstream's integration suite, test_incorrect_expressions): a broker
would take some of them and the reader would silently get nothing."""

from __future__ import annotations

import pytest
from pybmq.client.options import QueueOptions
from pybmq.client.subscriptions import Subscription
from pybmq.errors import UsageError
from pybmq.wire.expressions import ExpressionSyntaxError

# The expressions upstream's suite expects the SDK to refuse.
REFUSED = [" ", "()", "((true)", "x > ", "x x", "&&", " && 1 > 0", "() && 1 > 0", "true && (>>)"]


@pytest.mark.parametrize("expression", REFUSED)
def test_an_expression_that_does_not_parse_is_refused(expression: str) -> None:
    with pytest.raises(ExpressionSyntaxError) as refused:
        Subscription(expression)
    assert isinstance(refused.value, UsageError)
    with pytest.raises(ExpressionSyntaxError):
        QueueOptions(subscriptions=(expression,))


@pytest.mark.parametrize(
    "expression", ["", "x >= 0", 'exists(y) && s == "a b"', "-x < 3 || !(flag)", "(a + 1) % 2 == 0"]
)
def test_expressions_that_parse_are_taken(expression: str) -> None:
    assert Subscription(expression).expression == expression
