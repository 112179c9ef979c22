"""Filter pushdown: which Spark filters become the subscription expression (no JVM), and an
end-to-end read on local Spark where the broker filters and the rest stays queued."""

from __future__ import annotations

from typing import Any

import pytest
from pybmq.errors import UsageError
from pybmq.sim.expressions import compile_expression
from pybmq.spark.filters import MAX_EXPRESSION_LENGTH, MAX_IN_VALUES, split_filters, translate
from pybmq.spark.options import ReadOptions, property_schema
from pybmq.wire.expressions import check_limits
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    Not,
    StringStartsWith,
)

from tests.helpers.spark import fresh_queue

COLUMNS = {"n": "bigint", "region": "string", "ok": "boolean", "raw": "binary"}


def test_filters_the_expression_language_can_say_go_to_the_broker() -> None:
    pushed = [
        GreaterThanOrEqual(("n",), 10),
        LessThan(("n",), 20),
        EqualTo(("region",), "emea"),
        EqualNullSafe(("ok",), True),
        In(("n",), (11, 13)),
        Not(EqualTo(("n",), 12)),
    ]
    kept = [
        IsNotNull(("n",)),  # a property of another type is null in Spark but exists for the broker
        IsNull(("region",)),
        GreaterThan(("region",), "a"),  # no ordering of strings
        StringStartsWith(("region",), "e"),
        EqualTo(("raw",), b"\x00"),  # binary properties are not comparable
        EqualTo(("other",), 1),  # not a property column
        EqualTo(("region",), 'say "hi"'),  # not plain text
        EqualNullSafe(("n",), None),
        In(("n",), tuple(range(MAX_IN_VALUES + 1))),
        Not(IsNull(("n",))),
    ]
    expected_terms = [
        "n >= 10",
        "n < 20",
        'region == "emea"',
        "ok == true",
        "(n == 11 || n == 13)",
        "!(n == 12)",
    ]
    assert [translate(f, COLUMNS) for f in pushed] == expected_terms
    assert [translate(f, COLUMNS) for f in kept] == [None] * len(kept)
    # Pushed in order while the broker's limits allow (10 operators: a property reference
    # counts as one); the rest stays in Spark, by reference and in order.
    expression, rest = split_filters([*pushed, *kept], COLUMNS)
    assert expression == '(n >= 10) && (n < 20) && (region == "emea")'
    assert all(a is b for a, b in zip(rest, [*pushed[3:], *kept], strict=True))
    check_limits(expression)
    matches = compile_expression(expression)  # the simulator's evaluator, as the broker's
    assert matches({"n": 11, "region": "emea", "ok": True})
    assert not matches({"n": 21, "region": "emea", "ok": True})
    assert not matches({"n": 11, "region": "apac", "ok": True})
    assert not matches({"n": 11, "ok": True})  # missing property: no match, null in Spark
    alone, rest = split_filters([pushed[4], pushed[5]], COLUMNS)
    assert (alone, rest) == ("((n == 11 || n == 13)) && (!(n == 12))", [])
    assert compile_expression(alone)({"n": 13}) and not compile_expression(alone)({"n": 12})


def test_the_expression_stays_under_its_bound() -> None:
    filters = [Not(EqualTo(("n",), i)) for i in range(1000)]
    expression, rest = split_filters(filters, COLUMNS)
    assert 0 < len(expression) <= MAX_EXPRESSION_LENGTH
    check_limits(expression)  # within every limit of the broker, not only the length
    assert rest and rest[-1] is filters[-1]  # the rest stays in Spark
    compile_expression(expression)


def test_property_schema_option() -> None:
    assert property_schema({"propertyschema": "n bigint, Region STRING"}) == (
        ("n", "bigint"),
        ("Region", "string"),
    )
    with pytest.raises(UsageError, match="'name type' pairs"):
        property_schema({"propertyschema": "n double"})
    with pytest.raises(UsageError, match="names column 'guid' twice"):
        property_schema({"propertyschema": "guid string"})
    with pytest.raises(UsageError, match="more than 64 columns"):
        property_schema({"propertyschema": ",".join(f"p{i} bigint" for i in range(65))})
    options = ReadOptions.parse({"queue": "bmq://d/q", "pushfilters": "true"})
    assert options.push_filters and options.subscription == ""


@pytest.mark.spark
def test_pushed_filters_leave_the_other_messages_queued(spark: Any, bmq_broker_url: str) -> None:
    from pyspark.sql import functions as F

    queue = fresh_queue()
    (
        spark.range(200)
        .select(
            F.format_string("f%d", "id").alias("payload"),
            F.col("id").alias("n"),
            F.when(F.col("id") % 2 == 0, "emea").otherwise("apac").alias("region"),
        )
        .write.format("blazingmq")
        .option("broker", bmq_broker_url)
        .option("queue", queue)
        .option("propertyColumns", "n,region")
        .mode("append")
        .save()
    )

    def read(**options: str) -> Any:
        return (
            spark.read.format("blazingmq")
            .option("broker", bmq_broker_url)
            .option("queue", queue)
            .option("propertySchema", "n bigint, region string")
            .option("idleTimeoutMs", "1500")
            .option("confirm", "true")
            .options(**options)
            .load()
        )

    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    try:
        frame = read(pushFilters="true").where(
            (F.col("n") >= 150) & (F.col("region") == "emea") & (F.col("n") % 10 == 2)
        )
        rows = frame.select("n", "region").collect()
    finally:
        spark.conf.unset("spark.sql.python.filterPushdown.enabled")
    # n >= 150 and region == "emea" went to the broker; n % 10 stayed in Spark.
    assert sorted(r.n for r in rows) == [152, 162, 172, 182, 192]
    assert {r.region for r in rows} == {"emea"}
    # The broker pushed only its 25 matches, which were confirmed; the other 175 are queued.
    rest = read(maxMessages="1000").select("n").collect()
    assert sorted(r.n for r in rest) == sorted(set(range(200)) - {n for n in range(150, 200, 2)})
