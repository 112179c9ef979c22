"""Typed ``--properties`` as ``post`` parses them."""

from __future__ import annotations

import pytest
from pybmq.client.loadgen import parse_properties
from pybmq.errors import UsageError
from pybmq.generated.wire_codec import PropertyType


def test_typed_and_inferred_properties() -> None:
    properties = parse_properties("n:int64=3,ok:bool=true,c:char=-2,raw:binary=00ff,s=x,i=7,f=1.5")
    assert [(n, t, v) for n, t, v in properties.typed_items()] == [
        ("n", PropertyType.INT64, 3),
        ("ok", PropertyType.BOOL, True),
        ("c", PropertyType.CHAR, -2),
        ("raw", PropertyType.BINARY, b"\x00\xff"),
        ("s", PropertyType.STRING, "x"),
        ("i", PropertyType.INT32, 7),
        ("f", PropertyType.STRING, "1.5"),
    ]


@pytest.mark.parametrize(
    "text, message",
    [
        ("a=1,a=2", "given twice"),
        ("x:float=1.5", "unknown type"),
        ("c:char=300", "CHAR"),
        ("novalue", r"name\[:type\]=value"),
        ("b:bool=2", "is not a bool"),
    ],
)
def test_bad_properties_are_usage_errors(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_properties(text)
