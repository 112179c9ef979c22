"""``property_names``: the message properties a subscription expression refers to."""

from __future__ import annotations

from pybmq.wire.expressions import property_names


def test_names_in_order_of_first_use_without_literals_or_functions() -> None:
    text = 'price > 10 && region == "EU" || exists(vip) && price < 99 && flag == true'
    assert property_names(text) == ("price", "region", "vip", "flag")


def test_an_expression_that_does_not_tokenize_names_nothing() -> None:
    assert property_names("price > 10 @ x") == ()
    assert property_names("") == ()
